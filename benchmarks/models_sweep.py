"""Benchmark `plan models` (planner.models.what_runs): the catalog sweep on one Mac, median of several runs.

    python benchmarks/models_sweep.py [--runs 7] [--min-models 100]

Each run is a fresh process (the CLI's case: profiles loaded, memory models built from scratch), timed three ways:
the sweep alone (profiles already loaded), import + profiles + sweep, and the whole `plan models` command.
A catalog smaller than --min-models is padded with renamed copies of its models (a temporary user profile
folder), so the figure holds for a 100+ model catalog. Prints medians; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = [["--ram", "64", "--chip", "M4 Max"], ["--ram", "64", "--chip", "M4 Max", "--task", "chat"],
         ["--ram", "16"], ["--ram", "128", "--chip", "M4 Max", "--min-tok-s", "30", "--context", "32768"]]

PROBE = r"""
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from planner import profiles
from planner.models import Query, resolve_chip_for_ram, what_runs
args = json.loads(sys.argv[1])
chip = resolve_chip_for_ram(args["chip"], args["ram"]) if args.get("chip") else None
profiles.all_models(); profiles.all_quants(); profiles.all_runtimes(); profiles.ggml_types()
t1, c1 = time.perf_counter(), time.process_time()
r = what_runs(Query(ram_gb=args["ram"], chip=chip, task=args.get("task"), min_tok_s=args.get("min_tok_s"),
                    context=args.get("context", 8192)))
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({"sweep": t2 - t1, "total": t2 - t0, "sweep_cpu": c2 - c1, "total_cpu": c2 - c0,
                  "rows": len(r.rows) + len(r.embedding_rows),
                  "models": len(profiles.all_models())}))
"""


def _pad_catalog(min_models: int, folder: Path) -> int:
    """Renamed copies of the built-in models in a user profile folder until the catalog has min_models."""
    src = sorted((ROOT / "profiles" / "models").glob("*.yaml"))
    n, k = len(src), 0
    (folder / "models").mkdir(parents=True)
    while n + k < min_models:
        p = src[k % len(src)]
        new_id = f"{p.stem}-copy{k // len(src) + 1}"
        lines = [f"id: {new_id}" if ln.startswith("id:") else "aliases: []" if ln.startswith("aliases:") else
                 "hf_repo: null" if ln.startswith("hf_repo:") else ln for ln in p.read_text().splitlines()]
        (folder / "models" / f"{new_id}.yaml").write_text("\n".join(lines) + "\n")
        k += 1
    return n + k


def _args(case: list[str]) -> dict:
    d = dict(zip(case[::2], case[1::2]))
    out = {"ram": float(d["--ram"]), "chip": d.get("--chip"), "task": d.get("--task")}
    if "--min-tok-s" in d:
        out["min_tok_s"] = float(d["--min-tok-s"])
    if "--context" in d:
        out["context"] = int(d["--context"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--min-models", type=int, default=100)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MAC_LLM_PLANNER_USER_PROFILES": tmp, "PYTHONPATH": str(ROOT)}
        n = _pad_catalog(a.min_models, Path(tmp))
        print(f"catalog: {n} models; {a.runs} runs per case, each a fresh process; medians [s]")
        print("wall = elapsed, cpu = this process's CPU time (the machine is shared: wall includes waiting)")
        print(f"{'case':58s} {'sweep wall/cpu':>15s} {'+import wall/cpu':>17s} {'plan models wall/cpu':>21s} rows")
        for case in CASES:
            m: dict[str, list[float]] = {k: [] for k in ("sweep", "sweep_cpu", "total", "total_cpu", "cli", "cli_cpu")}
            for _ in range(a.runs):
                out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(_args(case))], env=env, cwd=ROOT,
                                     capture_output=True, text=True, check=True)
                d = json.loads(out.stdout)
                for k in ("sweep", "sweep_cpu", "total", "total_cpu"):
                    m[k].append(d[k])
                t, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run([sys.executable, "-c", "from cli.main import run; run()", "models", *case], env=env,
                               cwd=ROOT, capture_output=True, check=True)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                m["cli"].append(time.perf_counter() - t)
                m["cli_cpu"].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            md = {k: statistics.median(v) for k, v in m.items()}
            print(f"{' '.join(case):58s} {md['sweep']:7.3f}/{md['sweep_cpu']:.3f} {md['total']:9.3f}/{md['total_cpu']:.3f}"
                  f" {md['cli']:13.3f}/{md['cli_cpu']:.3f} {d['rows']}")

if __name__ == "__main__":
    main()
