"""Protocol, records and the two runners on tiny models. Plumbing and invariants only: never timings."""

from __future__ import annotations

import csv
import math
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from calibration.errors import CalibrationError
from calibration.protocol import BenchPlan, RunConfig, execute, median, random_prompts
from calibration.records import (
    MEASURED_CSV_COLUMNS,
    RunRecord,
    append_jsonl,
    read_jsonl,
    to_measured_csv_rows,
)
from calibration.run import run_calibration, run_plan

ROOT = Path(__file__).resolve().parents[2]

# 6 configs, seconds on a 2-core CPU: p32; g4 @ d0, d32; batch 1/2/4 of p16 g4.
TEST_PLAN = BenchPlan.build(prompt_lengths=(32,), depths=(0, 32), batches=(1, 2, 4), gen_tokens=4,
                       batch_prompt_tokens=16, trials=2)
# prefill: 1 record, decode: 1 record, batch: 2 records each
EXPECTED = {("prefill", "prefill", 1), ("decode", "decode", 1), ("decode", "decode", 1),
            ("batch", "prefill", 1), ("batch", "decode", 1), ("batch", "prefill", 2), ("batch", "decode", 2),
            ("batch", "prefill", 4), ("batch", "decode", 4)}


def fake_record(**kw) -> RunRecord:  # type: ignore[no-untyped-def]
    base = dict(  # noqa: C408
                runtime="llama.cpp", runtime_version="llama.cpp abc (build 1)", backend="cpu", tool="llama-bench",
                device={"chip": "Apple M3 Max", "chip_id": "m3-max-40gpu", "gpu_cores": 40, "ram_bytes": 64 * 2**30},
                model_path="/m/tiny-Q4_K_M.gguf", model_id="tiny", quant="Q4_K_M", weights_bytes=2_300_000,
                n_params=3_672_320, n_layers=4, hidden=256, n_heads=4, n_kv_heads=2, head_dim=64, vocab=1024,
                ffn=768, kind="prefill", phase="prefill", prompt_tokens=128, gen_tokens=0, context_depth=0,
                batch=1, flash_attn=True, value_tok_s=1000.0, trials=3, trial_values=[990.0, 1000.0, 1010.0],
                timestamp="2026-11-20T10:00:00Z")
    base.update(kw)
    return RunRecord(**base)


def check_records(records: list[RunRecord], runtime: str, plan: BenchPlan = TEST_PLAN) -> None:
    assert {(r.kind, r.phase, r.batch) for r in records} == EXPECTED
    assert len(records) == 1 + 2 + 2 * 3
    for r in records:
        assert r.runtime == runtime
        assert math.isfinite(r.value_tok_s) and r.value_tok_s > 0
        assert r.trials == plan.trials == len(r.trial_values)
        assert all(math.isfinite(v) and v > 0 for v in r.trial_values)
        assert r.value_tok_s == median(r.trial_values)
        assert r.weights_bytes > 0 and r.n_params == 3_672_320 and r.n_layers == 4
        assert r.backend in ("cpu", "metal") and r.runtime_version
    depths = sorted(r.context_depth for r in records if r.kind == "decode")
    assert depths == [0, 32]
    for r in records:
        if r.kind == "batch":
            assert (r.prompt_tokens, r.gen_tokens) == (16, 4)
            assert r.context_depth == (16 if r.phase == "decode" else 0)
    rows = to_measured_csv_rows(records)
    assert {row["metric"] for row in rows} == {"pp_tps", "tg_tps", "batched_pp_tps", "batched_tg_tps"}


# ---------------------------------------------------------------------------------------------
# protocol
# ---------------------------------------------------------------------------------------------


def test_default_plan_covers_the_sweep_cheapest_first() -> None:
    plan = BenchPlan.default()
    labels = [c.label for c in plan]
    for p in (64, 128, 256, 512, 1024):
        assert f"prefill p{p}" in labels
    for d in (0, 256, 1024):
        assert f"decode g32 @ d{d}" in labels
    for b in (1, 2, 4, 8):
        assert f"batch {b} p128 g32" in labels
    costs = [c.cost for c in plan]
    assert costs == sorted(costs)
    assert labels[0] == "prefill p64"
    assert len(BenchPlan.default(max_context=300)) < len(plan)


def test_run_config_validation() -> None:
    with pytest.raises(CalibrationError):
        RunConfig("prefill", prompt_tokens=0)
    with pytest.raises(CalibrationError):
        RunConfig("decode", gen_tokens=8, batch=2)
    with pytest.raises(CalibrationError):
        BenchPlan((RunConfig("prefill", prompt_tokens=8),), trials=0)


def test_execute_stops_when_budget_spent_and_reports_progress() -> None:
    plan = BenchPlan.build(prompt_lengths=(10, 20, 40, 80), depths=(), batches=(), trials=1)
    now = [0.0]
    seen: list[str] = []
    progress: list[tuple[int, int, str]] = []

    def measure(cfg: RunConfig) -> list[RunRecord]:
        now[0] += cfg.prompt_tokens / 10  # 1, 2, 4, 8 "seconds"
        seen.append(cfg.label)
        return [fake_record(prompt_tokens=cfg.prompt_tokens)]

    rep = execute(plan, measure, budget_s=5.0, on_progress=lambda *a: progress.append(a), clock=lambda: now[0])
    assert seen == ["prefill p10", "prefill p20"]  # p40 would need ~4 more s (3 + 4 > 5)
    assert [c.label for c in rep.skipped] == ["prefill p40", "prefill p80"]
    assert len(rep.records) == 2 and rep.elapsed_s == 3.0
    assert progress[0] == (0, 4, "start")
    assert progress[-1][:2] == (4, 4) and "skipped" in progress[-1][2]
    # no budget: everything runs; a zero budget still runs the first config
    assert len(execute(plan, measure, budget_s=None).records) == 4
    assert len(execute(plan, measure, budget_s=0.0).records) == 1


def test_random_prompts_are_seeded_and_skip_special_ids() -> None:
    a = random_prompts(1024, 2, 64, seed=0)
    assert a == random_prompts(1024, 2, 64, seed=0) and a != random_prompts(1024, 2, 64, seed=1)
    assert len(a) == 2 and all(len(p) == 64 and min(p) >= 3 and max(p) < 1024 for p in a)
    with pytest.raises(CalibrationError):
        median([1.0, float("nan")])


# ---------------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------------


def test_jsonl_round_trip_and_atomic_append(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "m3__llama.cpp.jsonl"
    a = [fake_record(), fake_record(kind="decode", phase="decode", prompt_tokens=0, gen_tokens=32,
                                    context_depth=256, value_tok_s=90.0, trial_values=[90.0])]
    append_jsonl(path, a[:1])
    append_jsonl(path, a[1:])
    assert read_jsonl(path) == a
    # no temp files left behind; the writers' lock file (records.py: .<name>.lock) stays, empty
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, f".{path.name}.lock"])
    assert read_jsonl(tmp_path / "missing.jsonl") == []


def test_corrupt_jsonl_raises_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    append_jsonl(path, [fake_record()])
    with path.open("a") as f:
        f.write('{"runtime": "llama.cpp", "value_tok_s": \n')
    with pytest.raises(CalibrationError, match=r"runs\.jsonl:2: not a valid calibration record"):
        read_jsonl(path)
    with pytest.raises(CalibrationError, match=":2:"):
        append_jsonl(path, [fake_record()])  # never extends a corrupt file
    path.write_text(fake_record().model_dump_json().replace('"value_tok_s":1000.0', '"value_tok_s":-1') + "\n")
    with pytest.raises(CalibrationError, match="value_tok_s"):
        read_jsonl(path)


def test_record_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        fake_record(value_tok_s=float("inf"))
    with pytest.raises(ValueError):
        fake_record(trial_values=[])
    with pytest.raises(ValueError):
        fake_record(tool="vllm")
    with pytest.raises(ValidationError):
        fake_record().value_tok_s = 3.0  # type: ignore[misc]  # frozen


def test_csv_export_has_exactly_the_training_columns() -> None:
    with (ROOT / "calibration" / "data" / "measured_benchmarks_train.csv").open(newline="") as f:
        header = next(csv.reader(f))
    assert tuple(header) == MEASURED_CSV_COLUMNS
    recs = [fake_record(),
            fake_record(kind="decode", phase="decode", prompt_tokens=0, gen_tokens=32, context_depth=1024),
            fake_record(kind="batch", phase="prefill", batch=4, tool="llama-batched-bench"),
            fake_record(kind="batch", phase="decode", batch=4, gen_tokens=32, context_depth=128,
                        tool="llama-batched-bench", peak_memory_bytes=3_000_000_000)]
    rows = to_measured_csv_rows(recs, start_row_id=9001, include_peak_memory=True)
    assert all(list(r) == list(MEASURED_CSV_COLUMNS) for r in rows)
    assert [r["metric"] for r in rows] == ["pp_tps", "tg_tps", "batched_pp_tps", "batched_tg_tps", "peak_mem_GB"]
    assert [r["row_id"] for r in rows] == ["9001", "9002", "9003", "9004", "9005"]
    first = rows[0]
    assert first["source_group"] == "plan calibrate"
    assert (first["chip"], first["gpu_cores"], first["ram_GB"]) == ("M3 Max", "40", "64")
    assert first["date"] == "2026-11-20" and first["flash_attn"] == "on" and first["unit"] == "tok/s"
    assert float(rows[1]["value"]) == 1000.0 and rows[1]["context_depth"] == "1024"
    assert rows[3]["unit"].startswith("tok/s (aggregate") and rows[4]["value"] == "3"


# ---------------------------------------------------------------------------------------------
# runners
# ---------------------------------------------------------------------------------------------


def test_run_calibration_rejects_wrong_inputs(tmp_path: Path, tiny_gguf: dict[str, Path], linux_device: dict) -> None:
    with pytest.raises(CalibrationError, match="expected a .gguf file or an MLX model folder"):
        run_calibration("llama.cpp", tmp_path / "nope.gguf", device=linux_device)
    with pytest.raises(CalibrationError, match="needs an MLX folder"):
        run_calibration("mlx-lm", tiny_gguf["F32"], device=linux_device)
    with pytest.raises(CalibrationError, match="unknown runtime"):
        run_calibration("vllm", tiny_gguf["F32"], device=linux_device)
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    # what is wrong, in the words of `plan --model` (sources.ggufmeta); gguf's reader said "When changing to a
    # larger dtype, its size must be a divisor of the total size in bytes of the last axis of the array"
    short = tmp_path / "short.gguf"
    short.write_bytes(b"GGUF\n")
    for p in (bad, short):
        with pytest.raises(CalibrationError, match=r"is not a valid GGUF \(.+\): re-download it"):
            run_calibration("llama.cpp", p, device=linux_device)


@pytest.mark.requires_mlx
def test_mlx_runner_records(tiny_mlx: dict[str, Path], linux_device: dict) -> None:
    rep = run_plan("mlx-lm", tiny_mlx["mlx-f32"], TEST_PLAN, budget_s=None, device=linux_device)
    check_records(rep.records, "mlx-lm")
    assert {r.tool for r in rep.records} == {"mlx_lm.stream_generate", "mlx_lm.batch_generate"}
    assert all(r.peak_memory_bytes and r.peak_memory_bytes > 0 for r in rep.records)
    assert all(r.quant == "mlx-f32" and r.device == linux_device for r in rep.records)


@pytest.mark.requires_mlx
def test_mlx_runner_quantized_and_budget(tiny_mlx: dict[str, Path], linux_device: dict) -> None:
    progress: list[tuple[int, int, str]] = []
    recs = run_calibration("mlx-lm", tiny_mlx["mlx-4bit-g64"], budget_s=0.0, trials=1, device=linux_device,
                           on_progress=lambda *a: progress.append(a))
    assert len(recs) == 1 and recs[0].quant == "mlx-4bit-g64"  # only the cheapest config fits a 0 s budget
    assert progress[-1][0] == progress[-1][1] == len(BenchPlan.default())


@pytest.mark.requires_llama_cpp
def test_llama_cpp_cli_runner_records(tiny_q4km: Path, linux_device: dict) -> None:
    if not (shutil.which("llama-bench") and shutil.which("llama-batched-bench")):
        pytest.skip("llama-bench / llama-batched-bench not on PATH")
    rep = run_plan("llama.cpp", tiny_q4km, TEST_PLAN, budget_s=None, device=linux_device, mode="cli", threads=2)
    check_records(rep.records, "llama.cpp")
    assert {r.tool for r in rep.records} == {"llama-bench", "llama-batched-bench"}
    assert all(r.quant == "Q4_K_M" and r.flash_attn and r.threads == 2 for r in rep.records)
    assert rep.records[0].runtime_version.startswith("llama.cpp ")


@pytest.mark.requires_llama_cpp
def test_llama_cpp_python_runner_records(tiny_gguf: dict[str, Path], linux_device: dict) -> None:
    pytest.importorskip("llama_cpp")
    rep = run_plan("llama.cpp", tiny_gguf["Q8_0"], TEST_PLAN, budget_s=None, device=linux_device,
                   mode="python", threads=2)
    check_records(rep.records, "llama.cpp")
    assert {r.tool for r in rep.records} == {"llama-cpp-python"}
    assert rep.records[0].runtime_version.startswith("llama-cpp-python ")


@pytest.mark.requires_llama_cpp
def test_llama_cpp_budget_and_error_message(tmp_path: Path, tiny_gguf: dict[str, Path], linux_device: dict) -> None:
    if not (shutil.which("llama-bench") and shutil.which("llama-batched-bench")):
        pytest.importorskip("llama_cpp")  # the runner falls back to the bindings
    recs = run_calibration("llama.cpp", tiny_gguf["F32"], budget_s=0.0, trials=1, device=linux_device)
    assert len(recs) == 1 and recs[0].phase == "prefill"
    if shutil.which("llama-bench"):
        # a GGUF header that parses but whose tensor data is cut off: llama-bench must fail loudly
        broken = tmp_path / "truncated.gguf"
        broken.write_bytes(tiny_gguf["F32"].read_bytes()[:200_000])
        from calibration.runners import ModelInfo, inspect_model
        from calibration.runners.llama_cpp import LlamaCppRunner

        info = inspect_model(tiny_gguf["F32"])
        fake = ModelInfo(**{**info.__dict__, "path": str(broken)})
        with pytest.raises(CalibrationError, match="llama-bench exited"):
            LlamaCppRunner(fake, mode="cli", trials=1).measure(RunConfig("prefill", prompt_tokens=8))
