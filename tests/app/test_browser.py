"""End to end in a real headless browser: Streamlit server + Debian chromium driven by Playwright.

Fills the form for Llama-3.3-70B on a 64 GB Mac and checks the page against planner.plan.plan() for the same
input (= `plan --model llama-3.3-70b --ram 64 --json`), that every chart rendered, and that the JSON download is
byte-identical. Saves artifacts/app.png. Installs nothing: chromium comes from scripts/bootstrap.sh.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.requires_browser

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app" / "streamlit_app.py"
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 60_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    pytest.importorskip("streamlit")
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (scripts/bootstrap.sh full installs it)")
    port = _free_port()
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false",
         "--client.toolbarMode", "minimal"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:  # poll the health endpoint until the server answers
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            pytest.fail(f"streamlit did not start on {url}:\n{out[-2000:]}")
        time.sleep(0.2)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def page(server):
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        pg = ctx.new_page()
        pg.set_default_timeout(TIMEOUT_MS)
        pg.goto(server)
        yield pg
        browser.close()


def _pick(page, label: str, option: str) -> None:
    """Choose an option in a Streamlit selectbox (a baseweb combobox): type to search, click the match."""
    box = page.get_by_test_id("stSelectbox").filter(has=page.get_by_text(label, exact=True))
    box.locator("input").click()
    box.locator("input").fill(option)
    page.get_by_role("option", name=option, exact=True).click()


def _wait_idle(page) -> None:
    """Streamlit reruns asynchronously; wait until the app root reports its script is not running."""
    page.wait_for_function(
        "() => document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state')"
        " === 'notRunning'")


def test_default_page_renders_every_chart(page):
    """The landing page (a chip is chosen, so speed charts too when the core has speed) renders without errors."""
    from playwright.sync_api import expect

    from planner.plan import FitOption

    expect.set_options(timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("stAlert").first).to_contain_text("fits")
    _wait_idle(page)
    n = 4 if "speed" in FitOption.model_fields else 2
    expect(page.locator(".js-plotly-plot")).to_have_count(n)
    assert page.get_by_test_id("stException").count() == 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 5200})
    _wait_idle(page)
    page.screenshot(path=str(ARTIFACTS / "app-default.png"), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 1000})


def test_70b_on_64gb_in_a_real_browser(page, tmp_path):
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    from app import charts
    from planner.format import fmt_bytes, fmt_gb, verdict_text
    from planner.plan import PlanRequest, plan
    from planner.workload import custom_workload

    # the form's default workload is the chat preset; its typical prompt/answer lengths feed the plan's speed inputs
    point = custom_workload("chat", users=1, context=8192).at()
    speed_in = ({"prompt_tokens": point.prompt_tokens, "gen_tokens": point.gen_tokens}
                if "prompt_tokens" in PlanRequest.model_fields else {})
    # = plan --model llama-3.3-70b --ram 64 [--prompt P --gen G] --json
    expected = plan(PlanRequest(model="llama-3.3-70b", ram_gb=64, **speed_in))

    # the default page rendered first
    expect(page.locator(".js-plotly-plot").first).to_be_visible()

    alert = page.get_by_test_id("stAlert").first
    _wait_idle(page)
    _pick(page, "Model (type to search)", "Llama 3.3 70B Instruct · 70.6 B")
    expect(alert).to_contain_text("Llama 3.3 70B Instruct on")
    _wait_idle(page)
    page.get_by_test_id("stSidebar").get_by_text("RAM only", exact=True).click()
    expect(alert).to_contain_text("on a 64 GB Mac")  # RAM-only mode starts at 64 GB; pick it explicitly anyway
    _wait_idle(page)
    _pick(page, "Unified memory (RAM)", "64 GB")
    expect(alert).to_contain_text("Llama 3.3 70B Instruct on a 64 GB Mac: fits comfortably.")
    _wait_idle(page)

    # verdict and numbers: the same formatted strings as the core's plan
    text = alert.inner_text()
    assert verdict_text("fits") in text
    assert fmt_bytes(expected.wired.effective_bytes) in text
    rows = page.get_by_test_id("stTable").first.locator("tbody tr")
    expect(rows).to_have_count(len(expected.options))
    for i, o in enumerate(expected.options):
        cells = [c.strip() for c in rows.nth(i).locator("td").all_inner_texts()]
        assert o.runtime in cells and o.quant in cells
        for s in (fmt_bytes(o.weights.total_bytes), fmt_gb(o.weights.total_bytes), fmt_bytes(o.memory.kv_cache),
                  fmt_bytes(o.memory.total)):
            assert s in cells, (o.quant, s, cells)
        assert any(verdict_text(o.fit.verdict) in c for c in cells)
    metrics = " ".join(page.get_by_test_id("stMetricValue").all_inner_texts())
    assert fmt_bytes(expected.wired.effective_bytes) in metrics
    assert fmt_bytes(expected.wired.left_for_macos_bytes) in metrics

    # every chart rendered: one Plotly DOM node per figure, each with drawn SVG content
    n_charts = len(charts.chart_sections(expected))
    expect(page.locator(".js-plotly-plot")).to_have_count(n_charts)
    expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible()
    for i in range(n_charts):
        assert page.locator(".js-plotly-plot").nth(i).locator(".main-svg").count() >= 1
    mem_chart = page.locator(".js-plotly-plot").first
    expect(mem_chart).to_contain_text(f"GPU limit {fmt_bytes(expected.wired.effective_bytes)}")
    assert page.get_by_test_id("stException").count() == 0

    # the JSON download is exactly the CLI's --json document
    with page.expect_download() as dl:
        page.get_by_test_id("stDownloadButton").locator("button").click()
    target = tmp_path / "plan.json"
    dl.value.save_as(target)
    assert target.read_text() == expected.model_dump_json(indent=2)

    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 3900})
    page.get_by_role("heading", name="Will this LLM run on this Mac?").scroll_into_view_if_needed()
    _wait_idle(page)
    page.screenshot(path=str(ARTIFACTS / "app.png"), full_page=True)
    assert (ARTIFACTS / "app.png").stat().st_size > 10_000


def test_unknown_model_shows_a_message_not_a_traceback(page):
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    _wait_idle(page)
    page.get_by_test_id("stSidebar").get_by_text("Hugging Face id or local path", exact=True).click()
    box = page.get_by_test_id("stTextInput").locator("input")
    box.fill("acme/NoSuchModel-13B-Instruct")
    box.press("Enter")
    expect(page.get_by_test_id("stAlert").first).to_contain_text("NoSuchModel-13B-Instruct")
    assert page.get_by_test_id("stException").count() == 0


_PARETO_POINTS = """() => {
  const gd = document.querySelector('.js-plotly-plot');
  const i = gd._fullData.findIndex(t => t.name === 'Pareto front');
  const trace = gd.querySelectorAll('.scatterlayer .trace')[i];
  return [...trace.querySelectorAll('path.point')].map(p => {
    const s = getComputedStyle(p); return [s.fill, parseFloat(s.opacity), p.getBBox().width]; });
}"""
_DOT_XS = """() => document.querySelector('.js-plotly-plot')._fullData
  .filter(t => ['meets the targets', 'misses a target', 'over budget'].includes(t.name)).flatMap(t => [...t.x])"""


def _set_number(page, label: str, value: str) -> None:
    box = page.get_by_label(label)
    box.fill(value)
    box.press("Enter")
    _wait_idle(page)


def test_which_mac_to_buy(page):
    """Pre-purchase sizing in the browser: the budget binds the labelled picks and is drawn; the Pareto front is
    drawn with visible filled markers; Macs at one price are spread apart; out-of-reach targets still give the chart,
    the table and a message naming the target that binds."""
    import re

    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    _wait_idle(page)
    side = page.get_by_test_id("stSidebar")
    side.get_by_text("Catalog", exact=True).click()
    _wait_idle(page)
    _pick(page, "Model (type to search)", "Qwen3 30B-A3B · 30.5 B")
    _wait_idle(page)
    side.get_by_text("Which Mac should I buy?", exact=True).click()
    expect(page.get_by_role("heading", name="Which Mac should I buy?")).to_be_visible()
    _wait_idle(page)
    _set_number(page, "Budget [USD] (0 = no limit)", "1500")
    main = page.get_by_test_id("stMain")
    expect(main).to_contain_text("Budget: $1,500")
    expect(main).to_contain_text("Cheapest that meets the targets within $1,500")
    expect(main).to_contain_text("Fastest within $1,500 (highest tok/s per user)")
    for line in re.findall(r"(?:Cheapest|Best value|Fastest)[^\n]*", main.inner_text()):
        assert all(int(p.replace(",", "")) <= 1500 for p in re.findall(r"\$([\d,]+)", line)), line
    plot = page.locator(".js-plotly-plot").first
    expect(plot).to_contain_text("Pareto front")
    expect(plot).to_contain_text("over budget")
    expect(plot).to_contain_text("budget $1,500")
    points = page.evaluate(_PARETO_POINTS)
    assert points and all(fill == "rgb(21, 101, 192)" and op > 0.5 and w > 5 for fill, op, w in points), points
    xs = page.evaluate(_DOT_XS)
    assert len(xs) == len(set(xs)) > 10
    expect(page.get_by_test_id("stDataFrame")).to_have_count(1)
    page.set_viewport_size({"width": 1400, "height": 2400})
    _wait_idle(page)
    page.screenshot(path=str(ARTIFACTS / "app-buy.png"), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 1000})

    # no Mac can answer a 30B in 50 ms: best effort, with the chart, the table and the binding target
    _set_number(page, "Budget [USD] (0 = no limit)", "0")
    side.get_by_text("Speed targets").click()
    _set_number(page, "Longest wait for the first token [s] (0 = none)", "0.05")
    expect(main).to_contain_text("No Mac meets every target")
    expect(main).to_contain_text("time to first token")
    expect(main).to_contain_text("What would change the answer")
    expect(page.locator(".js-plotly-plot").first).to_contain_text("Pareto front")
    expect(page.get_by_test_id("stDataFrame")).to_have_count(1)
    assert page.get_by_test_id("stException").count() == 0
