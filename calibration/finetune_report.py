"""Compare `plan finetune`'s peak memory with the public mlx_lm.lora logs in calibration/data/finetune_peak_mem.csv.

    python -m calibration.finetune_report

Deterministic (no timings, no network). Each public row prints ``Peak mem`` = ``mx.get_peak_memory() / 1e9``
(mlx_lm/tuner/trainer.py ``train``): the MLX buffers only. The planner's total adds the process's runtime overhead
(profiles/runtimes/mlx-lm.yaml ``runtime_overhead_mib``), which that counter never sees, so the like-for-like figure
is ``FinetuneMemory.mlx_peak`` (total less that overhead).

A log rarely states the length of its longest batch, the one that sets the peak (iterate_batches pads each batch
to 1 + a multiple of 32 of its longest example, at most --max-seq-length). Each row is therefore predicted at both
ends of what its log allows: ``lo`` = the mean trained tokens per example padded (the longest batch is at least
that long), ``hi`` = the most the log allows (the cap, or what the first iteration's tokens bound). Rows whose
bracket is narrow (hi/lo <= 3) enter the error figures; the others are checked for lying inside their bracket.

Where a log states the trainable parameter count and it differs from the planner's (other LoRA keys or rank), the
difference is charged at 16 bytes per parameter (float32 value, gradient, two Adam moments; planner/finetune.py).
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass
from pathlib import Path

from planner import profiles
from planner.finetune import FinetuneRequest, peak_memory

CSV = Path(__file__).resolve().parent / "data" / "finetune_peak_mem.csv"
GB = 1e9  # mlx_lm prints Peak mem in GB = 1e9 bytes (trainer.py: mx.get_peak_memory() / 1e9)


@dataclass(frozen=True)
class Setting:
    """What a row's log and command state, mapped to planner inputs (each value's origin in ``why``)."""

    model: str
    quant: str
    layers: int
    rank: int
    batch: int
    checkpoint: bool
    lo: int  # padded length of the longest batch: the least the log allows [tokens]
    hi: int  # the most the log allows [tokens]
    why: str
    fine_tune_type: str = "lora"
    outside: str = ""  # why the activation model does not cover this row (left out of the error figures)


# row_id -> setting. Lengths are padded as iterate_batches does: 1 + 32·ceil(n/32), capped at --max-seq-length.
SETTINGS: dict[int, Setting] = {
    30001: Setting("llama-3-8b", "4bit", 16, 8, 2, False, 97, 193,
                   "iter 1 trained 192 tokens in 2 rows: longest >= 96 -> 97, <= 191 -> 193; mlx-lm default 16 "
                   "layers; 4-bit base (--load_in_4bit)"),
    30002: Setting("qwen3-4b", "4bit", 16, 8, 4, True, 33, 2048,
                   "lengths not stated (short NL->PromQL pairs): bracket from one padded block to the 2,048 cap"),
    30003: Setting("apertus-8b", "bf16", 4, 8, 1, False, 97, 256,
                   "1,784 tokens over 20 single-row iterations: mean 89 -> 97; cap --max-seq-length 256"),
    30004: Setting("llama-3-8b", "bf16", 32, 8, 1, False, 641, 8096,
                   "iters 21-30 trained 6,299 tokens in 10 single-row steps: mean 630 -> 641; cap 8,096"),
    30006: Setting("qwen3-8b", "bf16", 16, 8, 1, True, 193, 1761,
                   "iters 1-10 trained 1,764 tokens in 10 single-row steps: mean 176 -> 193; the longest <= 1,755 "
                   "(the other 9 hold >= 1 each) -> 1,761; full fine-tune of the default 16 layers", "full"),
    30007: Setting("llama-3-8b", "bf16", 1, 8, 4, False, 289, 2048,
                   "10,402 tokens over 10 steps of 4 rows (mlx_lm's default batch then): mean 260 -> 289; cap 2,048 "
                   "(default); 16-bit weights implied by the 17.5 GB peak", "dora"),
    30008: Setting("qwen3.5-4b", "4bit", 4, 8, 1, True, 512, 512,
                   "the records are longer than 512 (the 1,024 run needed 3x the memory), so every batch is cut to "
                   "the 512 cap",
                   outside="qwen3_5 Gated DeltaNet layers: their chunked recurrence has no term in the activation "
                           "model, and the issue reports buffers accumulating across steps"),
    30009: Setting("mistral-7b", "4bit", 16, 8, 2, False, 129, 2048,
                   "1,973 tokens over 10 steps of 2 rows: mean 99 -> 129; cap 2,048 (default); NeuralBeagle14-7B "
                   "is a Mistral-7B merge"),
    30011: Setting("qwen3-0.6b", "bf16", 16, 8, 1, False, 33, 1024,
                   "example lengths not stated: from one padded block to the 1,024 context (iterate_batches caps there)"),
    30012: Setting("qwen3-0.6b", "bf16", 28, 8, 1, False, 33, 4096,
                   "example lengths not stated: from one padded block to the 4,096 context; 'full LoRA' read as all "
                   "28 layers"),
}


# Rows the report cannot predict, and why.
SKIPPED: dict[int, str] = {
    30005: "batch size not stated in the run shown",
    30010: "no planner profile for TeleChat3 (profiles/models/)",
}


@dataclass(frozen=True)
class Row:
    row_id: int
    measured: float  # [GB]
    at_cap: float    # planner default (every batch at --max-seq-length), total with runtime overhead [GB]
    lo: float        # mlx_peak at the shortest length the log allows [GB]
    hi: float        # mlx_peak at the longest [GB]
    narrow: bool
    fine_tune_type: str = "lora"
    outside: str = ""

    @property
    def inside(self) -> bool:
        return self.lo <= self.measured <= self.hi


def _gb(x: float) -> float:
    return x / GB


def predict(row: dict[str, str]) -> Row | None:
    rid = int(row["row_id"])
    s = SETTINGS.get(rid)
    if s is None:
        return None
    model = profiles.load_model(s.model)
    fmt = profiles.load_quant(s.quant, "mlx")
    first = str(row["seq_len"]).split()[0] if row["seq_len"] else ""
    cap = int(first) if first.isdigit() else s.hi  # not stated: the most the log allows
    tp = (row.get("trainable_params_M") or "").strip()
    stated = tp if tp.replace(".", "", 1).isdigit() else ""  # "not stated" and blanks: the planner's own count

    def mem(seq: int) -> tuple[float, float]:
        req = FinetuneRequest(model=s.model, quant=s.quant, rank=s.rank, layers=s.layers, batch=s.batch,
                              seq_len=max(seq, 2), grad_checkpoint=s.checkpoint,
                              fine_tune_type=s.fine_tune_type)  # type: ignore[arg-type]
        m = peak_memory(model, fmt, req, s.layers, fine_tune_type=s.fine_tune_type, checkpoint=s.checkpoint,
                        batch=s.batch, seq=seq)
        extra = 16 * (float(stated) * 1e6 - m.trainable_params) if stated and s.fine_tune_type != "full" else 0.0
        return m.total + extra, m.mlx_peak + extra

    return Row(rid, float(row["peak_mem_GB"]), _gb(mem(cap)[0]), _gb(mem(s.lo)[1]), _gb(mem(s.hi)[1]),
               s.hi / s.lo <= 3, s.fine_tune_type, s.outside)


def rows(path: Path = CSV) -> list[Row]:
    with path.open(newline="") as f:
        out = [predict(r) for r in csv.DictReader(f)]
    return [r for r in out if r is not None]


def mape(errs: list[float]) -> float:
    return 100 * sum(abs(e) for e in errs) / len(errs) if errs else float("nan")


def summary(rs: list[Row]) -> dict[str, float]:
    """MAPE [%] over the narrow-bracket rows the model covers: the planner's default (full-length batches, total) and
    the like-for-like mlx_peak at each end of the bracket; the largest |error| of the latter; how many covered rows lie
    inside their bracket, and the error at the nearer end of the bracket of those that do not."""
    cov = [r for r in rs if not r.outside]
    n = [r for r in cov if r.narrow]
    return {"rows": len(rs), "narrow": len(n),
            "mape_default": mape([r.at_cap / r.measured - 1 for r in n]),
            "mape_lo": mape([r.lo / r.measured - 1 for r in n]),
            "mape_hi": mape([r.hi / r.measured - 1 for r in n]),
            "max_abs_pct": 100 * max((abs(x / r.measured - 1) for r in n for x in (r.lo, r.hi)), default=0.0),
            "inside": sum(r.inside for r in cov), "covered": len(cov),
            "mape_bracket": mape([0.0 if r.inside else near(r) / r.measured - 1 for r in cov]),
            "max_abs_pct_outside_bracket": 100 * max((abs(near(r) / r.measured - 1) for r in cov if not r.inside),
                                                     default=0.0)}


def near(r: Row) -> float:
    """The end of a row's bracket nearer its measured peak [GB]."""
    return min((r.lo, r.hi), key=lambda x: abs(x - r.measured))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0]) if argv else CSV
    try:
        rs = rows(path)
    except (OSError, ValueError, KeyError) as e:  # a missing file, a column or a value that is no number
        what = f"no column {e}" if isinstance(e, KeyError) else (e.strerror or str(e) if isinstance(e, OSError) else e)
        print(f"finetune_report: {path}: {what}; give a CSV with the columns of {CSV.name} (calibration/data)",
              file=sys.stderr)
        return 2
    print(f"{'row':>6} {'type':>5} {'measured':>9} {'default':>9} {'lo':>8} {'hi':>8}  inside  narrow  nearer-end "
          "error   (GB = 1e9 bytes)")
    for r in rs:
        print(f"{r.row_id:>6} {r.fine_tune_type:>5} {r.measured:>9.3f} {r.at_cap:>9.3f} {r.lo:>8.3f} {r.hi:>8.3f}  "
              f"{'yes' if r.inside else 'no':>6}  {'yes' if r.narrow else 'no':>6}  "
              + (f"{'in':>10}" if r.inside else f"{100 * (near(r) / r.measured - 1):>+8.1f} %")
              + (f"   outside the model: {r.outside}" if r.outside else ""))
    for rid, why in SKIPPED.items():
        print(f"{rid:>6} not predicted: {why}")
    s = summary(rs)
    print(f"narrow covered rows {s['narrow']} of {s['rows']}: MAPE default {s['mape_default']:.1f} %, like-for-like "
          f"at lo {s['mape_lo']:.1f} % / at hi {s['mape_hi']:.1f} %, largest |error| {s['max_abs_pct']:.1f} %; "
          f"{s['inside']}/{s['covered']} covered rows inside their bracket, the others within "
          f"{s['max_abs_pct_outside_bracket']:.1f} % of its nearer end; bracket MAPE over the {s['covered']} covered rows "
          f"(0 inside, else the nearer end's error) {s['mape_bracket']:.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
