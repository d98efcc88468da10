"""Benchmark: `plan serve` against the real llama-server on this machine (calibration/serve_check.py).

python benchmarks/serve_vs_llama_server.py [--requests 40] [--rounds 3] [--budget 45] [--seed 0] [--work DIR]

Builds a 29 M-parameter random-weight Llama GGUF, calibrates the planner with `plan calibrate` into a private
user-profile folder, starts llama-server -np 4, and at three request rates (0.3, 0.6 and 0.85 of the calibrated
saturation rate) replays a seeded Poisson trace with an async streaming client and runs `plan serve --trace` on
the same trace. It does so in ``--rounds``, the rates taking turns, each round with fresh traces and prompt ids and
(unless ``--once``) a fresh ``plan calibrate --replace`` first; TTFT percentiles pool the requests of all rounds.
A fixed llama-batched-bench run (the speed probe) before and after calibrating and before and after each load
tells how much the machine's speed moved; ``--max-drift`` leaves out a round whose probes moved more, and
``--scale-by-probe`` multiplies the prediction's step times by it. Prints measured vs predicted TTFT p50/p95 and generated tokens/s, the speed factors, the simulated
prompt and decode phases against the server's own timings, and the load average: the machine should be quiet, the
client, the server and anything else share its cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BIN = ROOT / ".cache" / "llama-build" / "bin"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=40, help="requests per rate")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, each with a fresh trace per rate (the rates take turns)")
    ap.add_argument("--max-drift", type=float, default=None,
                    help="leave out a round of a load whose probes before and after it moved more than this "
                         "(default: every round is pooled)")
    ap.add_argument("--budget", type=float, default=45, help="plan calibrate --budget [s]")
    ap.add_argument("--once", action="store_true",
                    help="calibrate once for all rounds (default: a fresh plan calibrate --replace before each)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale-by-probe", action="store_true",
                    help="predict each rate for the speed the probes read (step times x probe / calibration probe)")
    ap.add_argument("--work", type=Path, default=None, help="folder for the model and the calibration")
    a = ap.parse_args()
    if BIN.is_dir():
        os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
        os.environ.setdefault("LLAMA_CPP_LIB_PATH", str(BIN))
    work = a.work or Path(tempfile.mkdtemp(prefix="serve-vs-llama-server-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["MAC_LLM_PLANNER_USER_PROFILES"] = str(work / "user")   # never the user's own calibration

    from calibration import serve_check as sc

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    model = sc.build_model(work)
    log(f"model {model.name} built in {time.perf_counter() - t0:.0f} s; calibrating for {a.budget:g} s")
    chip, ram, cal_probe, cal_moved = sc.calibrate_probed(model, a.budget)
    mu, rows = sc.compare(model, chip, ram, a.requests, a.seed, log=log, calibration_probe=cal_probe,
                          scale_by_probe=a.scale_by_probe, rounds=a.rounds, max_drift=a.max_drift,
                          recalibrate=None if a.once else lambda: sc.calibrate_probed(model, a.budget, replace=True),
                          calibration_moved=cal_moved)
    print(f"plan serve vs llama-server -np {sc.SLOTS} (slots of {sc.SLOT_CONTEXT} tokens), {model.name} on {chip}; "
          f"prompt {sc.length_spec(sc.PROMPTS)}, answer {sc.length_spec(sc.GENS)} tokens; "
          f"calibrated saturation {mu:.2f} requests/s; seed {a.seed}")
    print(sc.render(rows))
    print(f"speed probe (llama-batched-bench) while calibrating: {cal_probe:.3f} s, moved {cal_moved:.0%} between "
          f"the probes before and after it")
    print(f"load average after the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{time.perf_counter() - t0:.0f} s in all")


if __name__ == "__main__":
    main()
