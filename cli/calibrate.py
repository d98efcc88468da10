"""`plan calibrate`: measure this machine with short real runs of mlx-lm or llama.cpp and fit the speed model.

plan calibrate --runtime llama.cpp --model ~/models/qwen3-8b-Q4_K_M.gguf [--budget 60] [--threads N]
plan calibrate --runtime mlx-lm --model ~/models/Qwen3-8B-4bit        # an MLX folder or an HF repo id
plan calibrate --finetune                                              # mlx_lm.lora peak memory (plan finetune)
plan calibrate --show                                                  # what is calibrated, when, residuals
plan calibrate --export runs.csv                                       # records as measured_benchmarks_train.csv

Everything heavy (mlx, llama_cpp, scipy, the calibration package) is imported inside the command, so
`plan --model ...` does not pay for it. The work is done by calibration/cli.py.
"""

from __future__ import annotations

import typer

from planner.errors import InputError


def calibrate_cmd(
    runtime: str | None = typer.Option(None, "--runtime", "-r", help="mlx-lm or llama.cpp"),
    model: str | None = typer.Option(None, "--model", "-m",
                                        help="MLX folder or HF repo id (mlx-lm); .gguf file (llama.cpp)"),
    budget: float | None = typer.Option(None, "--budget",
                                        help="Seconds of measurement (model loading excluded); default 60, "
                                             "300 with --finetune"),
    show: bool = typer.Option(False, "--show", help="List the calibrations of this machine and exit"),
    export: str | None = typer.Option(None, "--export", help="Write the stored records to this CSV and exit"),
    quick: bool = typer.Option(False, "--quick", help="A seconds-long protocol (smoke test; less accurate)"),
    trials: int = typer.Option(3, "--trials", help="Timed trials per configuration (median kept)"),
    replace: bool = typer.Option(False, "--replace", help="Drop earlier records of this chip and runtime"),
    remeasure: bool = typer.Option(False, "--remeasure",
                                   help="Non-Apple device: re-measure bandwidth/GEMM and rewrite its chip profile"),
    finetune: bool = typer.Option(False, "--finetune",
                                  help="Measure mlx_lm.lora peak memory on tiny models and refit `plan finetune`"),
    mode: str | None = typer.Option(None, "--llama-mode",
                                       help="llama.cpp: cli (llama-bench on PATH) or python (llama-cpp-python)"),
    threads: int | None = typer.Option(None, "--threads",
                                       help="llama.cpp -t: CPU threads (default: the physical cores); give the "
                                            "-t your server runs with"),
    server: bool = typer.Option(False, "--server", help="llama.cpp: also time llama-server's host work per "
                                "sampled token (sampling, streaming; about 30 s), which `plan serve` adds"),
):
    """Calibrate the speed model on this machine with short real runs (about a minute)."""
    from calibration.errors import CalibrationError  # lazy: keeps `plan` startup light

    try:
        from calibration import cli as cal

        if show:
            typer.echo(cal.show())
            return
        if export:
            from pathlib import Path

            n = cal.export(Path(export), runtime=_runtime(runtime) if runtime else None)
            typer.echo(f"wrote {n} rows to {export} (columns of measured_benchmarks_train.csv)")
            return
        if finetune:
            typer.echo(_finetune(300 if budget is None else budget))
            return
        if not runtime or not model:
            raise InputError("plan calibrate needs --runtime (mlx-lm or llama.cpp) and --model "
                             "(or --show / --export FILE)")
        if trials < 1:
            raise InputError(f"--trials {trials}: give 1 or more")
        if threads is not None and (threads < 1 or threads > 512 or _runtime(runtime) != "llama.cpp"):
            raise InputError(f"--threads {threads}: give 1 to 512, for --runtime llama.cpp")
        opts = {k: v for k, v in (("mode", mode), ("threads", threads)) if v}
        seconds = 60 if budget is None else budget
        bar = cal.ProgressBar(seconds)
        res = cal.calibrate(_runtime(runtime), model, seconds, quick=quick, trials=trials, replace=replace,
                            remeasure=remeasure, on_progress=bar, server=server, **opts)
        typer.echo(cal.render_result(res))
    except CalibrationError as e:
        raise InputError(f"calibrate: {e}") from None


def _runtime(name: str) -> str:
    key = name.strip().lower().replace("_", "-")
    key = {"mlx": "mlx-lm", "mlxlm": "mlx-lm", "llamacpp": "llama.cpp", "llama-cpp": "llama.cpp",
           "llama": "llama.cpp"}.get(key, key)
    if key not in ("mlx-lm", "llama.cpp"):
        raise InputError(f"--runtime {name}: plan calibrate measures mlx-lm or llama.cpp")
    return key


def _finetune(budget: float) -> str:
    from calibration import finetune_fit

    r = finetune_fit.calibrate(budget, on_run=lambda i, n: typer.echo(f"  run {i}/{n} done", err=True))
    worst = max(abs(e) for e in r["errors"])
    coef = ", ".join(f"{k} {v:g}" for k, v in r["coefficients"].items())
    return (f"fine-tuning calibration: {len(r['rows'])} mlx_lm.lora runs, worst peak-memory error {worst:.1%} after "
            f"the fit\n  {coef}\n  written to {r['path']} (plan finetune uses it from now on)")
