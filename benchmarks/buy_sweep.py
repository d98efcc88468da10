"""Speed of the full `plan buy` sweep: every Mac × runtime × quant × KV × slots.

Usage: python benchmarks/buy_sweep.py [--runs 7]
Sweeps every configuration of profiles/macs (every chip bin × RAM option sold; discontinued ones left out as by
default). Prints configurations evaluated, the cold (first call: profile loading, memory models) and warm wall times
(median of --runs), and configurations per second.
"""

from __future__ import annotations

import argparse
import statistics
import time

from planner.buy import buy
from planner.workload import custom_workload

SCENARIOS = [
    ("llama-3.3-70b, chat preset (default)", ["llama-3.3-70b"], {"base": "chat"}),
    ("llama-3.3-70b, chat, + discontinued Macs", ["llama-3.3-70b"], {"base": "chat", "discontinued": True}),
    ("llama-3.3-70b, chat, 4 users × 8K", ["llama-3.3-70b"], {"base": "chat", "users": 4, "context": 8192, "min_tok_s": 5, "max_ttft": 120}),
    ("llama-3.1-8b, agent 16K, 1 user", ["llama-3.1-8b"], {"base": "agent", "prompt": "16384", "context": 20480}),
    ("qwen3-30b-a3b, batch, 16 users", ["qwen3-30b-a3b"], {"base": "batch", "users": 16}),
    ("deepseek-v3, chat", ["deepseek-v3"], {"base": "chat", "min_tok_s": 5, "max_ttft": 120}),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    print(f"{'scenario':38} {'configs':>8} {'cold s':>8} {'warm s':>8} {'configs/s':>10}")
    for label, models, kw in SCENARIOS:
        base = kw.pop("base")
        old = kw.pop("discontinued", False)
        wl = custom_workload(base, **kw)
        t0 = time.perf_counter()
        r = buy(models, wl, include_discontinued=old)
        cold = time.perf_counter() - t0
        times = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            r = buy(models, wl, include_discontinued=old)
            times.append(time.perf_counter() - t0)
        warm = statistics.median(times)
        print(f"{label:38} {r.evaluated:8,} {cold:8.3f} {warm:8.3f} {r.evaluated / warm:10,.0f}")


if __name__ == "__main__":
    main()
