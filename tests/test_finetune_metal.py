"""planner.finetune on Metal: what mlx_lm.lora's 'Peak mem' counts, the likely range, and the public-log report."""

from __future__ import annotations

import math

from calibration import finetune_report as rep
from planner import finetune as ft
from planner import profiles
from planner.units import MiB


def _req(**kw):
    base = dict(model="llama-3.1-8b", ram_gb=64, quant="4bit", seq_len=2048, batch=4, rank=8, layers=16)
    return ft.FinetuneRequest(**{**base, **kw})


def test_mlx_peak_leaves_out_the_runtime_overhead():
    # mlx_lm/tuner/trainer.py prints mx.get_peak_memory() (MLX buffers); the 256 MiB runtime overhead of
    # profiles/runtimes/mlx-lm.yaml is the process's, not a buffer: 256 x 1,048,576 = 268,435,456 bytes less.
    mem = ft.plan_finetune(_req()).chosen.memory
    assert mem.runtime == 256 * MiB == 268_435_456
    assert mem.mlx_peak == mem.total - 268_435_456


def test_likely_range_is_the_validation_band():
    # band_pct 11 (profiles/finetune/mlx-lm.yaml): a 1,000,000,000-byte peak is likely 890,000,000 to 1,110,000,000
    assert profiles.load_finetune(include_user=False).band_pct == 11.0
    assert ft.likely_range(1_000_000_000) == (890_000_000, 1_110_000_000)
    p = ft.plan_finetune(_req())
    assert (p.peak_low, p.peak_high) == ft.likely_range(p.chosen.memory.total)
    assert p.peak_low < p.chosen.memory.total < p.peak_high


def test_high_end_above_the_gpu_limit_is_said():
    # 8B 4-bit, batch 4 x 2,048 on 64 GB: total 46.9 GiB fits under the 49.9 GiB limit, x 1.11 = 52.1 GiB does not
    p = ft.plan_finetune(_req())
    assert p.chosen.fit.verdict in ("fits", "tight")
    assert p.peak_high > p.wired.effective_bytes
    assert any("high end of the likely peak" in n for n in p.notes)


def test_report_brackets_are_iterate_batches_padding():
    # iterate_batches: 1 + 32 x ceil(longest / 32), capped at --max-seq-length.
    # 30001: 192 tokens in 2 rows -> longest >= 96 -> 97, <= 191 -> 193
    s = rep.SETTINGS[30001]
    assert (s.lo, s.hi) == (1 + 32 * math.ceil(96 / 32), 1 + 32 * math.ceil(191 / 32)) == (97, 193)
    # 30003: 1,784 tokens / 20 rows = 89.2 -> 97; cap 256.  30004: 6,299 / 10 = 629.9 -> 641
    assert rep.SETTINGS[30003].lo == 1 + 32 * math.ceil(1784 / 20 / 32) == 97
    assert rep.SETTINGS[30004].lo == 1 + 32 * math.ceil(6299 / 10 / 32) == 641


def test_report_mape_by_hand():
    assert math.isclose(rep.mape([0.1, -0.2]), 15.0)  # (10 + 20) / 2


def test_stated_trainable_params_are_charged_16_bytes_each():
    # 30004 states 335.544 M trainable; the planner's rank-8 count for 32 Llama-3-8B blocks is 20,971,520
    # (81,920 per rank per block, tests/test_finetune.py): (335,544,000 - 20,971,520) x 16 = 5,033,159,680 bytes
    # more than the planner's own peak at the same length.
    row = dict(row_id="30004", peak_mem_GB="45.742", seq_len="8096 (cap)", trainable_params_M="335.544")
    r = rep.predict(row)
    plain = rep.predict({**row, "trainable_params_M": ""})
    assert r is not None and plain is not None
    assert math.isclose((r.lo - plain.lo) * 1e9, 5_033_159_680, rel_tol=1e-9)


def test_public_rows_lie_in_their_bracket_or_within_the_band():
    # Validation rule: every public row the model covers is inside its length bracket, or within band_pct of the
    # nearer end; the rows it does not cover say why.
    band = profiles.load_finetune(include_user=False).band_pct / 100
    for r in rep.rows():
        if r.outside:
            assert len(r.outside) > 20
            continue
        assert r.inside or abs(rep.near(r) / r.measured - 1) <= band, r


def test_full_finetune_counts_the_trained_weights_once():
    # mlx_lm/lora.py train_model: full fine-tuning unfreezes the loaded blocks (l.unfreeze()), no copy. Llama-3.1-8B,
    # 16 of 32 blocks: 16 x (linears 218,103,808 + 2 norms x 4,096) = 16 x 218,112,000 = 3,489,792,000 bf16 params:
    # gradients 6,979,584,000 bytes, Adam m and v 13,959,168,000, and no second copy of the weights.
    p = ft.plan_finetune(_req(fine_tune_type="full", quant="bf16"))
    m = p.chosen.memory
    assert m.trainable_params == 3_489_792_000
    assert m.adapters == 0
    assert m.gradients == 6_979_584_000 and m.optimizer == 13_959_168_000
    assert m.total == m.weights + m.gradients + m.optimizer + m.activations + m.transient + m.runtime


def test_bracket_mape_by_hand():
    # inside its bracket a row counts 0; outside, the error of the nearer end: (0 + |5.5/5 - 1|) / 2 = 5 %
    a = rep.Row(1, measured=10.0, at_cap=20.0, lo=9.0, hi=12.0, narrow=True)
    b = rep.Row(2, measured=5.0, at_cap=20.0, lo=5.5, hi=9.0, narrow=False)
    assert a.inside and not b.inside and rep.near(b) == 5.5
    assert math.isclose(rep.summary([a, b])["mape_bracket"], 5.0)


def test_compiling_the_step_does_not_lower_the_peak():
    # mlx-lm compiles its training step (tuner/trainer.py: @partial(mx.compile, ...)); the CPU fit ran with
    # MLX_DISABLE_COMPILE=1. Measured pairs (same model and batch, calibration/runs/fixtures/finetune_cpu_compile.jsonl):
    # compiling fuses elementwise kernels but keeps at least as much for the backward, so the fitted coefficients are
    # not an over-count for a compiled (Metal) step.
    import json
    from pathlib import Path

    path = Path(rep.__file__).parent / "runs" / "fixtures" / "finetune_cpu_compile.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    by_seq: dict[int, dict[bool, int]] = {}
    for r in rows:
        by_seq.setdefault(r["seq"], {})["DISABLE" not in r["runner"]] = r["peak_bytes"]
    assert set(by_seq) == {128, 256}
    for pair in by_seq.values():
        assert pair[True] >= pair[False]


def test_every_public_row_is_predicted_or_says_why():
    import csv

    with rep.CSV.open(newline="") as f:
        ids = {int(r["row_id"]) for r in csv.DictReader(f)}
    assert ids == set(rep.SETTINGS) | set(rep.SKIPPED)
    assert not set(rep.SETTINGS) & set(rep.SKIPPED)


def test_report_bad_file_is_one_line_and_exit_2(tmp_path, capsys):
    # a missing file, a missing column and a row id that is no number: one line naming the file, no traceback
    bad = tmp_path / "bad.csv"
    bad.write_text("row_id,peak_mem_GB\nabc,1\n", encoding="utf-8")
    nocol = tmp_path / "nocol.csv"
    nocol.write_text("peak_mem_GB\n1\n", encoding="utf-8")
    for path in (tmp_path / "missing.csv", bad, nocol):
        assert rep.main([str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"finetune_report: {path}: ") and "\n" not in err and "finetune_peak_mem.csv" in err
