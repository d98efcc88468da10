"""Web form load and rerun times in the real headless browser (Debian chromium via Playwright).

Not a test (never assert timings). Starts `streamlit run app/streamlit_app.py`, then measures, from navigation or
from the input change:
  cold   first page load after the server started: verdict visible, full render (script idle, charts drawn)
  warm   reloads of the same page (Streamlit's caches warm): verdict visible, full render
  change one input changed (concurrent users, alternating): new verdict visible, full render
and prints the medians. Usage: python benchmarks/app_load.py [-n 5] [--screenshots DIR]
Targets (quiet machine): warm verdict < 2 s, change verdict < 1 s, full render < 5 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app" / "streamlit_app.py"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
IDLE = ("() => document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state')"
        " === 'notRunning'")
VERDICT = ".st-key-answer [data-testid=stAlert]"


def start_server() -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--server.fileWatcherType", "none"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("streamlit did not start")


def full_render(page) -> None:
    """Script idle, no element still a loading placeholder (Streamlit loads the code, metric and chart
    components lazily and shows a skeleton meanwhile) and every chart drawn (an SVG in each Plotly node)."""
    page.wait_for_function(IDLE, timeout=120_000)
    page.wait_for_function("() => !document.querySelector('[data-testid=stSkeleton]') && "
                           "[...document.querySelectorAll('.js-plotly-plot')].every(n => n.querySelector('.main-svg'))",
                           timeout=120_000)


def load(page, url: str) -> tuple[float, float]:
    t0 = time.perf_counter()
    page.goto(url)
    page.locator(VERDICT).first.wait_for(state="visible", timeout=120_000)
    t1 = time.perf_counter()
    full_render(page)
    return t1 - t0, time.perf_counter() - t0


def change(page, users: int) -> tuple[float, float]:
    before = page.locator(VERDICT).first.inner_text()
    box = page.get_by_test_id("stSidebar").get_by_role("spinbutton", name="Concurrent users")
    box.fill(str(users))
    t0 = time.perf_counter()
    box.press("Enter")
    page.wait_for_function("(b) => { const a = document.querySelector('.st-key-answer [data-testid=stAlert]');"
                           " return a && a.innerText !== b; }", arg=before, timeout=120_000)
    t1 = time.perf_counter()
    full_render(page)
    return t1 - t0, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--screenshots", type=Path, help="save the landing page at desktop and phone width here")
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    proc, url = start_server()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            cold = load(page, url)
            warm = [load(page, url) for _ in range(a.n)]
            ch = [change(page, 2 if i % 2 == 0 else 1) for i in range(a.n)]
            if a.screenshots:
                a.screenshots.mkdir(parents=True, exist_ok=True)
                for name, vp in (("desktop", {"width": 1400, "height": 1000}), ("phone", {"width": 390, "height": 844})):
                    page.set_viewport_size(vp)
                    load(page, url)
                    page.screenshot(path=str(a.screenshots / f"landing-{name}.png"))
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)

    def med(xs, i):
        return statistics.median(x[i] for x in xs)

    print(f"{'':8}{'verdict [s]':>12}{'full render [s]':>17}")
    print(f"{'cold':8}{cold[0]:12.2f}{cold[1]:17.2f}")
    print(f"{'warm':8}{med(warm, 0):12.2f}{med(warm, 1):17.2f}   (median of {a.n})")
    print(f"{'change':8}{med(ch, 0):12.2f}{med(ch, 1):17.2f}   (median of {a.n})")


if __name__ == "__main__":
    main()
