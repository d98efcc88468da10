"""Wall time of `plan --model llama-3.3-70b --ram 64` (or, with --question models, the catalog listing
`plan models --ram 64 --chip "M4 Max"`) next to llmfit answering the same question, in one run.

Both commands run in fresh subprocesses, interleaved (plan, llmfit, plan, llmfit, ...) so they share the machine's
load; the script prints each median and the ratio plan / llmfit (<= 1.0: plan is no slower), and, interleaved
with them, the floor: the interpreter importing pydantic and nothing else. Not a test: timings are never asserted.

llmfit (https://pypi.org/project/llmfit/, a Rust binary) goes in a throw-away venv, never the project's:
    python -m venv /tmp/llmfit-venv && /tmp/llmfit-venv/bin/pip install llmfit
    python benchmarks/cli_startup.py --llmfit /tmp/llmfit-venv/bin/llmfit
Its questions: `llmfit --memory 64G --ram 64G info meta-llama/Llama-3.3-70B-Instruct` (one model, a 64 GB machine)
and `llmfit --memory 64G --ram 64G fit` (its whole catalog ranked for a 64 GB machine).

plan runs as a user's install does: bytecode cached (a private PYTHONPYCACHEPREFIX, warmed by the first run), an
empty user profile dir, and the profile index cache in a private dir (built by the warm-up run).
Usage: python benchmarks/cli_startup.py [-n 15] [--question plan|models] [--llmfit PATH] [--importtime]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = {  # question -> (plan's arguments, llmfit's arguments)
    "plan": (["--model", "llama-3.3-70b", "--ram", "64"],
             ["--memory", "64G", "--ram", "64G", "info", "meta-llama/Llama-3.3-70B-Instruct"]),
    "models": (["models", "--ram", "64", "--chip", "M4 Max"], ["--memory", "64G", "--ram", "64G", "fit"]),
}
ARGS, LLMFIT_ARGS = QUESTIONS["plan"]
CODE = "from cli.main import run; run()"  # what the installed `plan` script runs (pyproject [project.scripts])
# The floor under plan's time: the interpreter plus the pydantic names the core's models are built from. plan
# cannot start faster than this while its models are pydantic models.
FLOOR = "from pydantic import BaseModel, Field, computed_field, field_validator, model_validator"


def _env() -> dict:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    tmp = Path(tempfile.mkdtemp(prefix="plan-bench-"))
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    env["MAC_LLM_PLANNER_USER_PROFILES"] = str(tmp / "profiles")
    env["MAC_LLM_PLANNER_CACHE"] = str(tmp / "cache")
    env["PYTHONPATH"] = str(ROOT)
    return env


def _time(cmd: list[str], env: dict) -> float:
    t = time.perf_counter()
    r = subprocess.run(cmd, check=False, cwd=ROOT, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({r.returncode}): {r.stderr.strip()[-500:]}")
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


def _summary(name: str, times: list[float]) -> str:
    return f"{name}: median {statistics.median(times):.3f} s (min {min(times):.3f}, max {max(times):.3f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=15)
    ap.add_argument("--llmfit", default=shutil.which("llmfit"), help="llmfit binary (default: on PATH)")
    ap.add_argument("--importtime", action="store_true")
    ap.add_argument("--question", choices=sorted(QUESTIONS), default="plan")
    a = ap.parse_args()
    global ARGS, LLMFIT_ARGS
    ARGS, LLMFIT_ARGS = QUESTIONS[a.question]
    env = _env()
    plan_cmd = [sys.executable, "-c", CODE, *ARGS]
    floor_cmd = [sys.executable, "-c", FLOOR]
    llmfit_cmd = [a.llmfit, *LLMFIT_ARGS] if a.llmfit else None
    _time(plan_cmd, env)  # warm-up: bytecode, profile index cache, OS page cache
    if llmfit_cmd:
        _time(llmfit_cmd, env)
    _time(floor_cmd, env)
    plan_t: list[float] = []
    llmfit_t: list[float] = []
    floor_t: list[float] = []
    for _ in range(a.n):
        plan_t.append(_time(plan_cmd, env))
        if llmfit_cmd:
            llmfit_t.append(_time(llmfit_cmd, env))
        floor_t.append(_time(floor_cmd, env))
    print(f"{a.n} interleaved runs each")
    print(_summary(f"plan {' '.join(ARGS)}", plan_t))
    if llmfit_cmd:
        print(_summary(f"llmfit {' '.join(LLMFIT_ARGS)}", llmfit_t))
    print(_summary("floor: python -c 'from pydantic import BaseModel, ...'", floor_t))
    print(f"ratio plan / floor = {statistics.median(plan_t) / statistics.median(floor_t):.2f}")
    if llmfit_cmd:
        ratio = statistics.median(plan_t) / statistics.median(llmfit_t)
        print(f"ratio plan / llmfit = {ratio:.2f} ({'plan no slower' if ratio <= 1 else 'plan slower'}); "
              f"floor / llmfit = {statistics.median(floor_t) / statistics.median(llmfit_t):.2f}")
    else:
        print("llmfit not found: python -m venv /tmp/llmfit-venv && /tmp/llmfit-venv/bin/pip install llmfit, "
              "then --llmfit /tmp/llmfit-venv/bin/llmfit")
    if a.importtime:
        importtime(env)


if __name__ == "__main__":
    main()
