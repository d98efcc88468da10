"""Entry point for a calibration run: resolve the model, detect the device, run the plan in budget.

    from calibration.run import run_calibration
    records = run_calibration("llama.cpp", "tiny-Q4_K_M.gguf", budget_s=30,
                              on_progress=lambda done, total, label: print(done, total, label))
    append_jsonl("calibration/runs/m3-max-40gpu__llama.cpp.jsonl", records)
"""

from __future__ import annotations

import os
from typing import Any, Literal

from calibration.errors import CalibrationError
from calibration.protocol import (
    DEFAULT_SEED,
    DEFAULT_TRIALS,
    DEFAULT_WARMUP,
    BenchPlan,
    ExecutionReport,
    ProgressCallback,
    execute,
)
from calibration.records import RunRecord
from calibration.runners import ModelInfo, inspect_model

RuntimeId = Literal["mlx-lm", "llama.cpp"]
RUNTIMES: tuple[str, ...] = ("mlx-lm", "llama.cpp")


def make_runner(runtime: str, info: ModelInfo, *, trials: int = DEFAULT_TRIALS, warmup: int = DEFAULT_WARMUP,
                seed: int = DEFAULT_SEED, device: dict[str, Any] | None = None, **options: Any) -> Any:
    """The runner for ``runtime`` ("mlx-lm" | "llama.cpp"); ``options`` go to its constructor
    (e.g. ``mode="python"``, ``threads=4`` for llama.cpp; ``prefill_step_size`` for mlx-lm)."""
    if runtime == "mlx-lm":
        from calibration.runners.mlx_lm import MlxLmRunner

        return MlxLmRunner(info, trials=trials, warmup=warmup, seed=seed, device=device, **options)
    if runtime == "llama.cpp":
        from calibration.runners.llama_cpp import LlamaCppRunner

        return LlamaCppRunner(info, trials=trials, warmup=warmup, seed=seed, device=device, **options)
    raise CalibrationError(f"unknown runtime {runtime!r}; use one of {RUNTIMES}")


def run_plan(
    runtime: str,
    model_path: str | os.PathLike[str],
    plan: BenchPlan,
    *,
    budget_s: float | None = 60,
    on_progress: ProgressCallback | None = None,
    device: dict[str, Any] | None = None,
    **runner_options: Any,
) -> ExecutionReport:
    """Like :func:`run_calibration` with an explicit plan (configs beyond the model's context dropped); returns the full :class:`ExecutionReport`
    (records + configs done/skipped + elapsed seconds)."""
    info = inspect_model(model_path)
    expected = "mlx" if runtime == "mlx-lm" else "gguf"
    if runtime in RUNTIMES and info.format != expected:
        want = "an MLX folder" if expected == "mlx" else "a .gguf file"
        raise CalibrationError(f"{model_path}: {runtime} needs {want}, got a {info.format} model")
    if device is None:
        from calibration.hardware import detect

        device = detect().model_dump()
    fitting = tuple(c for c in plan.configs if c.max_context <= info.ctx)
    if not fitting:
        raise CalibrationError(f"{model_path}: no planned configuration fits its context of {info.ctx} tokens")
    plan = BenchPlan(fitting, trials=plan.trials, warmup=plan.warmup, seed=plan.seed)
    runner = make_runner(runtime, info, trials=plan.trials, warmup=plan.warmup, seed=plan.seed, device=device,
                         **runner_options)
    with runner:
        return execute(plan, runner.measure, budget_s=budget_s, on_progress=on_progress)


def run_calibration(
    runtime: str,
    model_path: str | os.PathLike[str],
    budget_s: float | None = 60,
    on_progress: ProgressCallback | None = None,
    trials: int = DEFAULT_TRIALS,
    seed: int = DEFAULT_SEED,
    *,
    plan: BenchPlan | None = None,
    device: dict[str, Any] | None = None,
    **runner_options: Any,
) -> list[RunRecord]:
    """Measure ``model_path`` (MLX folder or .gguf) with ``runtime`` within ``budget_s`` seconds.

    Runs :meth:`BenchPlan.default` (cheapest configs first; those beyond the model's context are dropped)
    until the budget is spent; model loading is not counted. ``device`` defaults to
    :func:`calibration.hardware.detect` (which measures bandwidth on Linux, ~1 s). Raises
    CalibrationError with the runtime's message on failure.
    """
    plan = plan or BenchPlan.default(trials=trials, seed=seed)
    return run_plan(runtime, model_path, plan, budget_s=budget_s, on_progress=on_progress, device=device,
                    **runner_options).records
