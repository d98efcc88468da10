"""Benchmark: simulate one hour of traffic at 1 request/s (plan serve's core), median of 5 runs.

python benchmarks/serve_sim.py  ->  prints the median wall time per simulated hour for each server.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from planner.serve import StepModel, simulate  # noqa: E402
from planner.serve_plan import draw_lengths, make_requests, poisson_arrivals, setup  # noqa: E402
from planner.workload import parse_length  # noqa: E402


def main() -> None:
    for runtime, slots in (("llama.cpp", 8), ("mlx-lm", 8)):
        s = setup("M4 Max", 40, 128, "qwen3-30b-a3b", None, runtime)
        rng = np.random.default_rng(0)
        arrival = poisson_arrivals(1.0, 3600.0, rng)
        prompt = draw_lengths(parse_length("p50=1000,p90=3000", "--prompt"), len(arrival), rng)
        gen = draw_lengths(parse_length("p50=200,p90=500", "--gen"), len(arrival), rng)
        rq, _ = make_requests(arrival, prompt, gen, 0.0, 16384)
        sched = s.scheduler(slots)
        times = []
        for _ in range(5):
            steps = StepModel(s.rf, 16384)   # tables built inside the timed region
            t0 = time.perf_counter()
            tr = simulate(rq.arrival, rq.prompt, rq.gen, rq.cached, sched, steps)
            times.append(time.perf_counter() - t0)
        ttft = np.percentile(tr.first - rq.arrival, [50, 95])
        print(f"{runtime:9s} {slots} slots, {len(arrival)} requests in 1 h at 1/s: median {statistics.median(times):.3f} s "
              f"per simulated hour (TTFT p50 {ttft[0]:.2f} s, p95 {ttft[1]:.2f} s, busy {tr.busy_integral / tr.makespan:.1f} slots)")


if __name__ == "__main__":
    main()
