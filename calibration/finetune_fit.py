"""Fit planner.finetune's activation coefficients to real mlx_lm.lora runs (peak memory).

    python -m calibration.finetune_fit [RUNS.jsonl]     (default: calibration/runs/fixtures/finetune_cpu.jsonl)

The runs file holds one JSON line per run of calibration.finetune_runs (model shape, configuration, the weights'
active memory after load and mx.get_peak_memory()). The structure is the one in planner/finetune.py's docstring;
only the coefficient of each term is fitted (non-negative least squares):

    no checkpointing   peak - weights - 16 x LoRA params = T·L·(a_hq·(h+q+2kv) + a_f·ffn)·act + a_s·B·heads·S²·act
                                                          + a_v·T·V·act + a_frozen·T·(N-L)·h·act
    checkpointing      the same fixed part + T·L·h·act + a_frozen term
                       + max(a_v·T·V·act, T·(c_hq·(h+q+2kv) + c_f·ffn)·act + c_s·B·heads·S²·act)

(T = batch x (seq-1) tokens, L trained blocks of N, act = activation bytes.) Prints the coefficients and each
run's error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

DEFAULT = Path(__file__).resolve().parent / "runs" / "fixtures" / "finetune_cpu.jsonl"


def _dims(r: dict) -> dict:
    hd = r["hidden"] // r["heads"]
    act = 4 if r.get("dtype", "float32") == "float32" else 2
    T = r["batch"] * (r["seq"] - 1)
    return dict(h=r["hidden"], q=r["heads"] * hd, kv=r["kv_heads"] * hd, f=r["ffn"], V=r["vocab"], nh=r["heads"],
                B=r["batch"], S=r["seq"] - 1, T=T, L=r["layers"], N=r["n_layers"], r=r["rank"], act=act)


def lora_params(d: dict) -> int:
    """r x (in + out) of the 7 Llama linears per trained block (q, k, v, o, gate, up, down)."""
    h, q, kv, f = d["h"], d["q"], d["kv"], d["f"]
    return d["r"] * ((h + q) + 2 * (h + kv) + (q + h) + 2 * (h + f) + (f + h)) * d["L"]


def _fixed(r: dict, d: dict) -> float:
    # float32 adapters, gradients and two Adam moments: 16 bytes per LoRA parameter
    return r["weights_bytes"] + 16 * lora_params(d)


def _x_plain(d: dict) -> list[float]:
    a, T = d["act"], d["T"]
    return [T * d["L"] * (d["h"] + d["q"] + 2 * d["kv"]) * a, T * d["L"] * d["f"] * a,
            d["B"] * d["nh"] * d["S"] ** 2 * a, T * d["V"] * a, T * (d["N"] - d["L"]) * d["h"] * a]


def _x_stage2(d: dict) -> list[float]:
    a, T = d["act"], d["T"]
    return [T * (d["h"] + d["q"] + 2 * d["kv"]) * a, T * d["f"] * a, d["B"] * d["nh"] * d["S"] ** 2 * a]


def fit(rows: list[dict]) -> dict[str, float]:
    lora = [r for r in rows if r["fine_tune_type"] == "lora"]
    plain = [r for r in lora if not r["grad_checkpoint"]]
    A = np.array([_x_plain(_dims(r)) for r in plain])
    y = np.array([r["peak_bytes"] - _fixed(r, _dims(r)) for r in plain])
    c, _ = nnls(A, y)
    k = dict(a_hq=c[0], a_f=c[1], a_s=c[2], a_v=c[3], a_frozen=c[4])
    ck = [r for r in lora if r["grad_checkpoint"]]
    use = ck
    c2 = np.zeros(3)
    for _ in range(4):  # fit stage 2 on the runs whose peak it sets (the others peak at the logits)
        if not use:
            break
        A = np.array([_x_stage2(_dims(r)) for r in use])
        y = np.array([r["peak_bytes"] - _ck_base(r, k) for r in use])
        c2, _ = nnls(A, y)
        use = [r for r in ck if np.dot(_x_stage2(_dims(r)), c2) > _logits(r, k)]
    k.update(c_hq=c2[0], c_f=c2[1], c_s=c2[2])
    return {n: round(float(v), 2) for n, v in k.items()}


def _logits(r: dict, k: dict) -> float:
    d = _dims(r)
    return k["a_v"] * d["T"] * d["V"] * d["act"]


def _ck_base(r: dict, k: dict) -> float:
    d = _dims(r)
    return _fixed(r, d) + d["T"] * d["L"] * d["h"] * d["act"] + k["a_frozen"] * d["T"] * (d["N"] - d["L"]) * d["h"] * d["act"]


def load(path: str | Path = DEFAULT) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    rows = load(argv[0] if argv else DEFAULT)
    k = fit(rows)
    print(json.dumps(k))
    return 0


if __name__ == "__main__":
    sys.exit(main())


# --------------------------------------------------------------------------- plan calibrate --finetune
# Two tiny shapes and nine runs that separate every term: width (h+q+2kv, ffn), S² (attention), vocab, frozen
# blocks below the trained ones, and checkpointing (three runs where the rebuilt block sets the peak).
SHAPES = {"a": dict(hidden=128, layers=4, heads=4, kv_heads=2, ffn=384, vocab=512),
          "b": dict(hidden=192, layers=6, heads=6, kv_heads=2, ffn=640, vocab=1024)}
PLAN = [("a", dict(batch=2, seq=128, layers=4)), ("a", dict(batch=2, seq=256, layers=4)),
        ("a", dict(batch=4, seq=64, layers=2)), ("a", dict(batch=2, seq=128, layers=4, grad_checkpoint=True)),
        ("a", dict(batch=4, seq=256, layers=4, grad_checkpoint=True)), ("b", dict(batch=2, seq=128, layers=3)),
        ("b", dict(batch=3, seq=96, layers=6)), ("b", dict(batch=2, seq=192, layers=6, grad_checkpoint=True)),
        ("b", dict(batch=1, seq=256, layers=6))]


def calibrate(budget_s: float = 300, root: Path | None = None, on_run=None) -> dict:
    """Measure this machine with real mlx_lm.lora runs on tiny models, refit the coefficients, and write the user
    profile ``<user dir>/calibration/finetune__mlx-lm.yaml`` (the runs go to ``finetune__mlx-lm.jsonl``)."""
    import datetime
    import tempfile
    import time

    import yaml

    from calibration import store
    from calibration.errors import CalibrationError
    from calibration.finetune_runs import RunConfig, run
    from calibration.records import atomic_write_text
    from calibration.tinymodels import build_hf_llama, build_mlx_model
    from planner import profiles

    folder = store.calibration_dir(root)
    rows: list[dict] = []
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="plan-ft-") as tmp:
        models = {k: build_mlx_model(build_hf_llama(Path(tmp) / f"{k}-hf", ctx=4096, **s), Path(tmp) / f"{k}-mlx")
                  for k, s in SHAPES.items()}
        for name, cfg in PLAN:
            if rows and time.monotonic() - start > budget_s:
                break
            r = run(models[name], RunConfig(**cfg))
            s = SHAPES[name]
            rows.append(dict(hidden=s["hidden"], n_layers=s["layers"], heads=s["heads"], kv_heads=s["kv_heads"],
                             ffn=s["ffn"], vocab=s["vocab"], dtype="float32", q_bits=None, fine_tune_type="lora",
                             batch=r["batch"], seq=r["seq"], rank=r["rank"], layers=r["layers"],
                             grad_checkpoint=r["grad_checkpoint"], weights_bytes=r["weights_bytes"],
                             peak_bytes=r["peak_bytes"], tokens_per_s=r["tokens_per_s"], runner="plan calibrate"))
            if on_run:
                on_run(len(rows), len(PLAN))
    if len(rows) < len(PLAN):
        raise CalibrationError(f"only {len(rows)} of {len(PLAN)} fine-tuning runs fit in --budget {budget_s:g} s; "
                               "give a larger --budget (each run takes a few seconds)")
    k = fit(rows)
    errs = [predict(r, k) / r["peak_bytes"] - 1 for r in rows]
    shipped = profiles.load_finetune(include_user=False)
    doc = {"id": "mlx-lm", **k, "train_efficiency": shipped.train_efficiency,
           "provenance": {"method": "user calibration (plan calibrate --finetune)",
                          "fitted_on": datetime.date.today().isoformat(), "rows": len(rows),
                          "data": str(folder / "finetune__mlx-lm.jsonl"),
                          "residuals": {"peak_max_abs_pct": round(100 * max(abs(e) for e in errs), 1)},
                          "notes": "train_efficiency kept from the shipped profile"}}
    atomic_write_text(folder / "finetune__mlx-lm.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    path = atomic_write_text(folder / "finetune__mlx-lm.yaml", yaml.safe_dump(doc, sort_keys=False))
    profiles.clear_cache()
    return {"path": str(path), "coefficients": k, "errors": errs, "rows": rows}


def predict(r: dict, k: dict) -> float:
    """Peak bytes of one run under coefficients ``k`` (the fitted structure above)."""
    d = _dims(r)
    if not r["grad_checkpoint"]:
        return _fixed(r, d) + sum(k[n] * x for n, x in zip(("a_hq", "a_f", "a_s", "a_v", "a_frozen"), _x_plain(d)))
    stage2 = sum(k[n] * x for n, x in zip(("c_hq", "c_f", "c_s"), _x_stage2(d)))
    return _ck_base(r, k) + max(_logits(r, k), stage2)
