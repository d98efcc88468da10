"""Accuracy of the cluster model on public Mac-cluster measurements: ``python -m calibration.cluster_report``.

Reads calibration/data/cluster_measurements.csv (source_group "clusters"; ``device`` is a --macs spec and
``runtime`` is ``engine|mode|link|transport``), predicts each row with planner.cluster.plan_cluster (one-Mac rows as
a one-node pipeline) and prints per-row predictions, then MAPE / median / P90 APE of decode and prefill/TTFT, and
the measured vs predicted cluster/one-Mac ratio where a row has its one-Mac baseline from the same source.
Rows are skipped (with the reason) when the model, the hardware or the prompt length is unknown.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

from planner.cluster import plan_cluster
from planner.cluster.spec import parse_macs
from planner.errors import PlannerError

DATA = Path(__file__).resolve().parent / "data" / "cluster_measurements.csv"
METRIC = {"tg_tps": "decode", "pp_tps": "prefill", "ttft_s": "ttft"}


def load(path: Path = DATA) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return [r for r in csv.DictReader(f) if r["source_group"] == "clusters"]


def predict(r: dict) -> float:
    """The model's value for one row (same metric and unit)."""
    engine, mode, link, trans = r["runtime"].split("|")
    if r["reliability"] == "unreliable":
        raise PlannerError("reliability unreliable")
    if METRIC.get(r["metric"]) is None:
        raise PlannerError(f"metric {r['metric']} not modelled")
    if r["metric"] != "tg_tps" and not r["prompt_tokens"]:
        raise PlannerError("prompt length not given")
    nodes = parse_macs(r["device"])
    prompt = int(r["prompt_tokens"] or 128)
    gen = int(r["gen_tokens"] or 128)
    p = plan_cluster(r["model"], nodes, link, engine, "pipeline" if mode == "single" else mode,
                     quant=r["quant"] or None, context=max(4096, prompt + gen + 1), prompt=prompt, gen=gen,
                     macos="26", rdma=trans == "rdma", scaling=False)
    s = p.speed
    return {"tg_tps": s.decode_tok_s_per_user, "pp_tps": s.prefill_tok_s, "ttft_s": s.ttft_s}[r["metric"]]


def _stats(a: list[float]) -> str:
    if not a:
        return "n=0"
    x = np.asarray(a)
    return f"n={len(x)}  MAPE {x.mean():5.1f}%  median {np.median(x):5.1f}%  P90 {np.percentile(x, 90):5.1f}%"


def main(argv: list[str] | None = None) -> int:
    rows = load()
    lines = [f"{len(rows)} cluster rows in {DATA.name}", "",
             (f"{'row':4s} {'engine|mode|link|transport':28s} {'Macs':58s} {'model':15s} {'metric':7s} "
             f"{'measured':>9s} {'model':>9s} {'APE%':>6s}")]
    apes: dict[str, list[float]] = {"decode": [], "prefill": [], "ttft": []}
    pred: dict[str, float] = {}
    skipped = []
    for r in rows:
        try:
            v = predict(r)
        except (PlannerError, ValueError) as e:
            skipped.append(f"  {r['row_id']}: {str(e).split(' (e.g.')[0][:110]}")
            continue
        meas = float(r["value"])
        ape = abs(v / meas - 1) * 100
        pred[r["row_id"]] = v
        if r["reliability"] != "low":
            apes[METRIC[r["metric"]]].append(ape)
        lines.append(f"{r['row_id']:4s} {r['runtime']:28s} {r['device'][:58]:58s} {r['model'][:15]:15s} "
                     f"{r['metric']:7s} {meas:9.2f} {v:9.2f} {ape:6.0f}" + ("  (low)" if r["reliability"] == "low" else ""))
    lines += ["", "error (rows with reliability medium/high; 'low' rows are shown but not scored):"]
    for k, a in apes.items():
        lines.append(f"  {k:8s} {_stats(a)}")
    # scaling shape: cluster / one-Mac, measured vs predicted, same source and model
    by_src: dict[tuple[str, str], dict] = {}
    for r in rows:
        if r["row_id"] in pred and r["metric"] == "tg_tps":
            by_src.setdefault((r["source"], r["model"]), {})[r["row_id"]] = r
    lines += ["", "cluster vs one Mac (decode), measured ratio -> predicted ratio:"]
    for rs in by_src.values():
        base = [r for r in rs.values() if r["runtime"].split("|")[1] == "single"]
        for r in rs.values():
            if r in base or not base:
                continue
            b = max(base, key=lambda x: float(x["value"]))
            lines.append(f"  {r['row_id']:4s} {r['runtime']:28s} vs {b['row_id']}: measured "
                         f"{float(r['value']) / float(b['value']):.2f}x, model {pred[r['row_id']] / pred[b['row_id']]:.2f}x")
    lines += ["", "skipped:", *skipped]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
