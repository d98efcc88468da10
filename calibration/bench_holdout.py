"""Held-out accuracy of the user calibration on THIS machine: ``python -m calibration.bench_holdout``.

For each runtime it measures a fixed set of configurations with the real runtime, fits the user calibration
(calibration.user_fit: the shipped fit code, shipped priors) on the short ones only, and predicts the held-out
ones through planner.throughput (the path `plan predict` uses):

    fitted on   prefill p64 / p128 / p256 / p512, decode g32 @ d0 / d256 / d512, batch 1 and 2 (p128 g32);
                the depth point (d512, p512) lets the fit tell the KV stream and attention apart from the weights
    held out    a longer prompt (prefill p1024), a deeper context (decode g32 @ d1024), bigger batches (4, 8)

Models: llama.cpp uses the "bench" size (~150 M params, Q4_K_M ~100 MB, decode dominated by memory traffic);
mlx-lm uses the "tiny" float32 model, because MLX's CPU backend is too slow at the bench size on a 2-vCPU VM.
The whole thing repeats ``--repeats`` times (fresh measurements each time) and reports medians: a shared
2-vCPU machine has 5-15% run-to-run noise (more when other jobs run), so single figures mean little.

Each repeat measures the device's bandwidth and GEMM peaks next to its runs and prints the load average.
``--json FILE`` keeps the measurements; ``--replay FILE`` refits them with the current model instead of measuring.

It also prints the error of the uncalibrated shipped constants on the same held-out points (the Apple-GPU
constants applied to the measured CPU bandwidth/GEMM peaks) for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from calibration.protocol import BenchPlan, RunConfig

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODELS = REPO_ROOT / ".cache" / "bench-models"

TRAIN = (
    RunConfig("prefill", prompt_tokens=64), RunConfig("prefill", prompt_tokens=128),
    RunConfig("prefill", prompt_tokens=256), RunConfig("prefill", prompt_tokens=512),
    RunConfig("decode", gen_tokens=32, depth=0), RunConfig("decode", gen_tokens=32, depth=256),
    RunConfig("decode", gen_tokens=32, depth=512),
    RunConfig("batch", prompt_tokens=128, gen_tokens=32, batch=1),
    RunConfig("batch", prompt_tokens=128, gen_tokens=32, batch=2),
)
HELD_OUT = (
    RunConfig("prefill", prompt_tokens=1024),                      # a longer prompt
    RunConfig("decode", gen_tokens=32, depth=1024),                # a deeper context
    RunConfig("batch", prompt_tokens=128, gen_tokens=32, batch=4),  # bigger batches
    RunConfig("batch", prompt_tokens=128, gen_tokens=32, batch=8),
)


def _is_held_out(rec) -> bool:
    if rec.kind == "prefill":
        return rec.prompt_tokens >= 1024
    if rec.kind == "decode":
        return rec.context_depth >= 1024
    return rec.batch >= 4


def build_models(root: Path, runtimes: list[str]) -> dict[str, Path]:
    from calibration.tinymodels import build_all

    out = {}
    if "llama.cpp" in runtimes:
        out["llama.cpp"] = build_all(root, "bench", mlx=False, gguf=True, q4k=True)["Q4_K_M"]
    if "mlx-lm" in runtimes:
        out["mlx-lm"] = build_all(root, "tiny", mlx=True, gguf=False)["mlx-f32"]
    return out


def one_repeat(runtime: str, model: Path, chip, device: dict, trials: int) -> dict:
    from calibration.run import run_plan

    plan = BenchPlan(TRAIN + HELD_OUT, trials=trials)
    t0 = time.perf_counter()
    rep = run_plan(runtime, model, plan, budget_s=None, device=device)
    out = evaluate(runtime, rep.records, chip)
    out.update(model=str(model), wall_s=time.perf_counter() - t0)
    return out


def evaluate(runtime: str, records, chip) -> dict:
    """Fit the short runs of ``records`` and predict the held-out ones (also used by ``--replay``)."""
    from calibration.user_fit import ape_rows, fit_user, shipped_constants

    train = [r for r in records if not _is_held_out(r)]
    held = [r for r in records if _is_held_out(r)]
    uf = fit_user(train, chip, runtime)
    return {"runtime": runtime, "converged": uf.converged, "in_sample": uf.residuals,
            "constants": {k: v for k, v in uf.constants.model_dump().items() if isinstance(v, float)},
            "held_out": ape_rows(held, chip, uf.constants),
            "shipped": ape_rows(held, chip, shipped_constants(chip, runtime).constants),
            "version": records[-1].runtime_version, "chip": chip.model_dump(mode="json"),
            "records": [r.model_dump(mode="json") for r in records]}


def replay(path: Path) -> list[dict]:
    """Refit the measurements saved by ``--json`` with the current model: model changes judged on the same runs,
    whatever the machine's load is now."""
    from calibration.records import RunRecord
    from planner.schema import Chip

    saved = json.loads(path.read_text())["results"]
    out = []
    for r in saved:
        res = evaluate(r["runtime"], [RunRecord.model_validate(x) for x in r["records"]],
                       Chip.model_validate(r["chip"]))
        res.update({k: r[k] for k in ("model", "wall_s", "load_before", "load_after") if k in r})
        out.append(res)
    return out


def _med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def summarize(results: list[dict]) -> str:
    from planner.format import table

    lines = []
    rows = []
    for rt in dict.fromkeys(r["runtime"] for r in results):
        rs = [r for r in results if r["runtime"] == rt]
        for phase in ("decode", "prefill"):
            per_rep = [_med([x["ape"] for x in r["held_out"] if x["phase"] == phase]) for r in rs]
            allv = [x["ape"] for r in rs for x in r["held_out"] if x["phase"] == phase]
            ship = [x["ape"] for r in rs for x in r["shipped"] if x["phase"] == phase]
            ins = [r["in_sample"].get(f"{phase}_mape", float("nan")) for r in rs]
            rows.append([rt, phase, str(len(allv)), f"{_med(allv):.1f}%",
                         f"{min(per_rep):.1f}–{max(per_rep):.1f}%", f"{max(allv):.1f}%",
                         f"{_med(ins):.1f}%", f"{_med(ship):.1f}%"])
    lines.append(table(rows, ["runtime", "phase", "n", "held-out median APE", "per-repeat medians", "worst",
                              "in-sample MAPE", "uncalibrated (shipped)"], "llrrrrrr"))
    lines.append("")
    lines.append("held-out points (median over repeats of measured and predicted tok/s, and APE):")
    prow = []
    for rt in dict.fromkeys(r["runtime"] for r in results):
        rs = [r for r in results if r["runtime"] == rt]
        for i, x in enumerate(rs[0]["held_out"]):
            meas = [r["held_out"][i]["measured"] for r in rs]
            pred = [r["held_out"][i]["predicted"] for r in rs]
            ape = [r["held_out"][i]["ape"] for r in rs]
            cv = statistics.pstdev(meas) / statistics.mean(meas) * 100 if len(meas) > 1 else 0.0
            prow.append([rt, x["label"], f"{_med(meas):.1f}", f"±{cv:.0f}%", f"{_med(pred):.1f}",
                         f"{_med(ape):.1f}%"])
    lines.append(table(prow, ["runtime", "held-out config", "measured", "CV", "predicted", "APE"], "llrrrr"))
    return "\n".join(lines)


def _device_chip():
    """(chip, device dict) with bandwidth and GEMM peaks measured now (calibration.hardware.detect)."""
    from calibration import store
    from calibration.hardware import detect

    device = detect().model_dump()
    if device.get("os") == "macos":
        chip, _, _ = store.device_chip(device)
    else:
        with tempfile.TemporaryDirectory() as tmp:  # the bench does not touch the user's config dir
            chip, _, _ = store.ensure_custom_chip(device, Path(tmp))
    return chip, device


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calibration.bench_holdout", description=__doc__.splitlines()[0])
    ap.add_argument("--runtimes", default="llama.cpp,mlx-lm")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--models", type=Path, default=DEFAULT_MODELS, help="where the bench models are built/cached")
    ap.add_argument("--json", type=Path, help="also write every result (and the measurements) as JSON")
    ap.add_argument("--replay", type=Path, help="refit the measurements of a --json file instead of measuring")
    a = ap.parse_args(argv)
    runtimes = [r.strip() for r in a.runtimes.split(",") if r.strip()]
    if a.replay:
        print(summarize(replay(a.replay)))
        return 0

    t0 = time.perf_counter()
    models = build_models(a.models, runtimes)
    print(f"models ready in {time.perf_counter() - t0:.0f} s: " + ", ".join(f"{k}: {v}" for k, v in models.items()),
          flush=True)
    results = []
    for i in range(a.repeats):
        # the fitted efficiencies are ratios to the bandwidth / GEMM peaks, so the peaks are measured next to the
        # runs they divide (a shared machine's load changes between repeats)
        load_before = os.getloadavg()[0]
        chip, device = _device_chip()
        print(f"repeat {i + 1}/{a.repeats}: load average {os.getloadavg()[0]:.2f}, device {chip.id}: "
              f"{device.get('chip')}, {device.get('cpu_cores_physical')} cores, bandwidth "
              f"{chip.memory_bandwidth_gb_s:g} GB/s, peak {chip.gpu_fp16_tflops * 1000:.1f} GFLOP/s", flush=True)
        for rt in runtimes:
            r = one_repeat(rt, models[rt], chip, device, a.trials)
            r["load_before"], r["load_after"] = load_before, os.getloadavg()[0]
            results.append(r)
            held = ", ".join(f"{x['label']} {x['ape']:.0f}%" for x in r["held_out"])
            print(f"repeat {i + 1}/{a.repeats} {rt} ({r['version']}): {r['wall_s']:.0f} s, fit converged "
                  f"{r['converged']}, in-sample {r['in_sample'].get('mape', float('nan')):.1f}%; held-out {held}; "
                  f"load average {r['load_after']:.2f}", flush=True)
    print()
    print(summarize(results))
    if a.json:
        a.json.write_text(json.dumps({"results": results}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
