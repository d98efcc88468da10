"""Median wall time of `plan --model llama-3.3-70b --ram 64` in fresh subprocesses (target < 0.5 s on 2 cores).

Not a test (never assert timings). Usage: python benchmarks/cli_startup.py [-n 15] [--importtime]
--importtime prints the 15 slowest imports of one run (python -X importtime) to see what to make lazy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--model", "llama-3.3-70b", "--ram", "64"]
CODE = "import sys; from cli.main import main; sys.exit(main(sys.argv[1:]))"


def _env() -> dict:
    env = dict(os.environ)
    env["MAC_LLM_PLANNER_USER_PROFILES"] = tempfile.mkdtemp(prefix="plan-bench-")
    env["PYTHONPATH"] = str(ROOT)
    return env


def run_once(env: dict) -> float:
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", CODE, *ARGS], check=False, cwd=ROOT, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"plan failed ({r.returncode}): {r.stderr.strip()[-500:]}")
    return dt


def importtime(env: dict, top: int = 15) -> None:
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", CODE, *ARGS], check=False, cwd=ROOT, env=env,
                       capture_output=True, text=True)
    rows = []
    for line in r.stderr.splitlines():  # "import time: self [us] | cumulative | imported package"
        if line.startswith("import time:") and "|" in line:
            parts = line.split("|")
            try:
                rows.append((int(parts[1].strip()), parts[2].rstrip()))
            except (ValueError, IndexError):
                continue
    for cum, name in sorted(rows, reverse=True)[:top]:
        print(f"{cum / 1e6:7.3f} s  {name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("-n", type=int, default=15)
    ap.add_argument("--importtime", action="store_true")
    a = ap.parse_args()
    env = _env()
    run_once(env)  # warm the OS page cache and .pyc files
    times = [run_once(env) for _ in range(a.n)]
    med = statistics.median(times)
    print(f"plan {' '.join(ARGS)}: median {med:.3f} s over {a.n} runs "
          f"(min {min(times):.3f}, max {max(times):.3f}); target < 0.5 s -> {'OK' if med < 0.5 else 'SLOW'}")
    if a.importtime:
        importtime(env)


if __name__ == "__main__":
    main()
