"""What `plan calibrate` does (the typer command in cli/calibrate.py only parses and prints).

    calibrate(runtime, model, budget_s)  detect the device -> run the protocol within the budget -> store the
                                         records -> fit with the shipped constants as priors -> write the
                                         profile the planner's lookup picks up
    show()                               what is calibrated, when, residuals and versions (and broken files)
    export(path)                         the records in the columns of measured_benchmarks_train.csv
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from calibration import store
from calibration.errors import CalibrationError


# --------------------------------------------------------------------------- progress bar
class ProgressBar:
    """A one-line stderr bar for protocol.execute's ``on_progress(done, total, label)``.

    On a terminal it redraws in place; otherwise (CI logs, pipes) it prints one line per finished config."""

    def __init__(self, budget_s: float | None, stream: TextIO | None = None, width: int = 24):
        self.stream = stream or sys.stderr
        self.budget_s, self.width = budget_s, width
        self.t0 = time.perf_counter()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def __call__(self, done: int, total: int, label: str) -> None:
        if label == "start":  # the budget counts from here (model loading and device detection excluded)
            self.t0 = time.perf_counter()
        elapsed = time.perf_counter() - self.t0
        frac = done / total if total else 1.0
        fill = round(frac * self.width)
        budget = f"/{self.budget_s:.0f}" if self.budget_s else ""
        line = f"[{'#' * fill}{'.' * (self.width - fill)}] {done:>2}/{total} {elapsed:5.1f}{budget} s  {label}"
        if self.tty:
            self.stream.write("\r\033[K" + line + ("\n" if done >= total and label.startswith("done") else ""))
        elif label != "start":
            self.stream.write(line + "\n")
        self.stream.flush()


# --------------------------------------------------------------------------- model argument
def resolve_model_arg(runtime: str, model: str) -> Path:
    """A local path (MLX folder, .gguf) as is; an HF repo id (``org/name``) is downloaded with huggingface_hub
    (MLX: config, tokenizer and safetensors; GGUF repos need a local file or ``org/name/file.gguf``)."""
    p = Path(os.path.expanduser(model))
    if p.exists():
        return p
    parts = model.split("/")
    if len(parts) < 2 or model.startswith((".", "/", "~")):
        raise CalibrationError(f"--model {model}: no such file or folder (give an MLX folder, a .gguf file or an "
                               "HF repo id such as mlx-community/Qwen3-8B-4bit)")
    try:
        from huggingface_hub import hf_hub_download, snapshot_download
    except ImportError:
        raise CalibrationError(f"--model {model}: not a local path and huggingface_hub is not installed "
                               "(pip install 'mac-llm-planner[calibration]')") from None
    repo = "/".join(parts[:2])
    try:
        if runtime == "llama.cpp":
            if len(parts) < 3 or not model.endswith(".gguf"):
                raise CalibrationError(f"--model {model}: for llama.cpp give a local .gguf or "
                                       "<org>/<repo>/<file>.gguf")
            return Path(hf_hub_download(repo, "/".join(parts[2:])))
        return Path(snapshot_download(repo, allow_patterns=["*.json", "*.safetensors", "tokenizer*", "*.model",
                                                            "*.tiktoken", "*.txt"]))
    except CalibrationError:
        raise
    except Exception as e:  # noqa: BLE001  (hub errors: offline, 404, gated, ...)
        raise CalibrationError(f"--model {model}: download from the Hugging Face Hub failed "
                               f"({type(e).__name__}: {str(e).splitlines()[0][:160]})") from None


# --------------------------------------------------------------------------- calibrate
@dataclass
class CalibrationResult:
    chip: Any
    chip_path: Path | None
    chip_written: bool
    device: dict[str, Any]
    runtime: str
    runtime_version: str
    records: list[Any]               # this run's RunRecords
    fitted_records: list[Any]        # all stored records of this runtime version (what the fit used)
    done: int
    skipped: int
    elapsed_s: float
    fit: Any                         # calibration.user_fit.UserFit
    profile: Any
    profile_path: Path
    records_path: Path
    warnings: list[str] = field(default_factory=list)
    host: Any = None                 # calibration.server_host.HostToken with --server
    phases: Any = None               # calibration.server_host.PhaseFactors with --server


def calibrate(runtime: str, model: str, budget_s: float | None = 60, *, quick: bool = False,
              trials: int = 3, replace: bool = False, remeasure: bool = False,
              device: dict[str, Any] | None = None, on_progress=None, root: Path | None = None,
              server: bool = False, **runner_options: Any) -> CalibrationResult:
    """Run, store, fit and write one calibration; see the module docstring. ``server``: also measure
    llama-server's host work per sampled token (calibration/server_host.py), which `plan serve` adds."""
    from calibration.protocol import BenchPlan
    from calibration.run import RUNTIMES, run_plan
    from calibration.user_fit import build_profile, fit_user
    from planner import profiles

    if runtime not in RUNTIMES:
        raise CalibrationError(f"--runtime {runtime}: use one of {', '.join(RUNTIMES)}")
    if budget_s is not None and budget_s <= 0:
        raise CalibrationError(f"--budget {budget_s:g}: give a positive number of seconds, e.g. --budget 60")
    if server and (runtime != "llama.cpp" or not shutil.which("llama-server")):
        raise CalibrationError("--server times llama-server: give --runtime llama.cpp with llama-server on PATH "
                               "(scripts/bootstrap.sh full builds it)")
    path = resolve_model_arg(runtime, model)
    if device is None:
        from calibration.hardware import detect

        device = detect().model_dump()
    chip, chip_path, written = store.device_chip(device, root, remeasure=remeasure)
    plan = BenchPlan.quick(trials=trials) if quick else BenchPlan.default(trials=trials)
    t0 = time.perf_counter()
    rep = run_plan(runtime, path, plan, budget_s=budget_s, on_progress=on_progress, device=device,
                   **runner_options)
    elapsed = time.perf_counter() - t0
    if not rep.records:
        raise CalibrationError(f"{path}: the run produced no measurement")
    version = rep.records[-1].runtime_version
    rec_path = store.save_records(chip.id, runtime, rep.records, root, replace=replace)
    fitted = store.load_records(chip.id, runtime, root, runtime_version=version)
    uf = fit_user(fitted, chip, runtime)
    if not uf.converged:
        raise CalibrationError(f"fit of {len(fitted)} {runtime} records did not converge ({uf.message}); "
                               "nothing written, the shipped constants stay in use")
    warnings = _far_from_shipped(uf)
    host = phases = None
    if server:
        host, phases = _server_work(uf, chip, path, device, runner_options)
    prof = build_profile(uf, fitted)
    if host is not None:
        pv = prof.provenance
        prof = prof.model_copy(update={"provenance": pv.model_copy(update={
            "notes": f"{pv.notes}; {host.describe()}; {phases.describe()} (calibration/server_host.py)"})})
    prof_path = store.write_profile(prof, root)
    profiles.clear_cache()
    if rep.skipped:
        warnings.append(f"{len(rep.skipped)} longer configurations skipped to stay within --budget "
                        f"{budget_s:g} s; a longer budget adds them")
    return CalibrationResult(chip=chip, chip_path=chip_path, chip_written=written, device=device, runtime=runtime,
                             runtime_version=version, records=rep.records, fitted_records=fitted,
                             done=len(rep.done), skipped=len(rep.skipped), elapsed_s=elapsed, fit=uf,
                             profile=prof, profile_path=prof_path, records_path=rec_path, warnings=warnings,
                             host=host, phases=phases)


def _far_from_shipped(uf) -> list[str]:
    """A note for each fitted constant more than 4× from its shipped value (one with none shipped is skipped)."""
    from calibration.user_fit import value

    out = []
    for p in uf.free:
        if not p.startswith("q_") and getattr(uf.prior, p) is None:   # no shipped value: nothing to be far from
            continue
        ratio = value(uf.constants, p) / value(uf.prior, p)
        if not 0.25 <= ratio <= 4:
            out.append(f"{p} is ×{ratio:.2g} the shipped value: if the machine was busy (other jobs, "
                       "thermal throttling), re-run on an idle machine with --replace")
    return out


def _server_work(uf, chip, path: Path, device: dict[str, Any], runner_options: dict[str, Any]):
    """--server: llama-server's host work per sampled token, then its phases against `plan serve`'s simulation
    with the fitted steps and that host work, both put into ``uf.constants``. -> (HostToken, PhaseFactors)"""
    from calibration import server_host
    from calibration.runners import inspect_model
    from calibration.runners.llama_cpp import _threads_from_device

    threads = runner_options.get("threads") or _threads_from_device(device)
    flash, vocab = runner_options.get("flash_attn", True), inspect_model(path).vocab
    host = server_host.measure(path, threads, flash, vocab=vocab)
    uf.constants = uf.constants.model_copy(update={"t_token_host_s": host.seconds})
    phases = server_host.measure_phases(path, threads, flash, vocab, _serve_roofline(uf.constants, chip, path))
    uf.constants = uf.constants.model_copy(update={"server_prefill_factor": phases.prefill,
                                                   "server_decode_factor": phases.decode})
    return host, phases


def _serve_roofline(constants, chip, path: Path):
    """The roofline `plan serve` steps llama-server's model ``path`` with on ``chip``, with ``constants`` (the
    fitted steps and the host work, about to be written)."""
    import dataclasses

    from planner.serve_plan import setup
    from sources import resolve_model

    rf = setup(chip.id, None, float(max(chip.ram_options_gb)), resolve_model(str(path), quant=None), None,
               "llama.cpp").rf
    return dataclasses.replace(rf, k=constants)


def _fmt(v: float) -> str:
    return f"{v:.3g}" if abs(v) >= 1e-3 else f"{v:.2e}"


def render_result(r: CalibrationResult) -> str:
    from calibration.user_fit import value
    from planner.format import table

    dev = r.device
    lines = []
    if r.chip.id.startswith(store.CUSTOM_PREFIX):
        lines.append(f"device: {r.chip.id} = {dev.get('cpu_model') or dev.get('chip')}, "
                     f"{dev.get('cpu_cores_physical')} cores, measured copy bandwidth "
                     f"{r.chip.memory_bandwidth_gb_s:g} GB/s, fp32 GEMM {r.chip.gpu_fp16_tflops * 1000:.1f} GFLOP/s"
                     + (f" (chip profile written: {r.chip_path})" if r.chip_written else f" ({r.chip_path})"))
    else:
        lines.append(f"device: {r.chip.id} ({r.chip.label})")
    version = r.runtime_version if r.runtime_version.startswith(r.runtime) else f"{r.runtime} {r.runtime_version}"
    lines.append(f"runs: {r.done} configurations, {len(r.records)} measurements in {r.elapsed_s:.1f} s with "
                 f"{version}" + (f"; {r.skipped} skipped (budget)" if r.skipped else ""))
    uf = r.fit
    res = uf.residuals
    lines.append(f"fit: converged (status {uf.status}, {uf.nfev} evaluations) on {uf.n_records} records; "
                 f"residual {res.get('mape', float('nan')):.1f}%"
                 + (f" (decode {res['decode_mape']:.1f}%" if "decode_mape" in res else " (")
                 + (f", prefill {res['prefill_mape']:.1f}%)" if "prefill_mape" in res else ")"))
    rows = [[p, _fmt(value(uf.prior, p)), _fmt(value(uf.constants, p)),
             f"×{value(uf.constants, p) / value(uf.prior, p):.2f}"] for p in uf.free]
    lines.append(table(rows, ["constant", "shipped", "calibrated", "ratio"], "lrrr"))
    if r.host is not None:
        lines.append(f"server: {r.host.describe()}; `plan serve` adds it to every sampled token")
    if r.phases is not None:
        lines.append(f"server: {r.phases.describe()}; `plan serve` scales its prompt and decode steps by them")
    lines.append(f"wrote {r.profile_path}")
    lines.append(f"  and {r.records_path}")
    for w in r.warnings:
        lines.append(f"note: {w}")
    lines.append(f"`plan --chip {r.chip.id} ...` and `plan predict --chip {r.chip.id} --runtime {r.runtime} ...` "
                 "now use it")
    return "\n".join(lines)


# --------------------------------------------------------------------------- show / export
def show(root: Path | None = None) -> str:
    from planner.format import table

    items = store.list_calibrations(root)
    folder = store.calibration_dir(root)
    if not items:
        return f"no calibration yet in {folder}; run `plan calibrate --runtime llama.cpp --model <file.gguf>`"
    rows, bad = [], []
    for it in items:
        if not it.ok:
            bad.append(f"ignored: {it.error} (plan uses the shipped constants)")
            continue
        p = it.profile
        pv = p.provenance
        res = pv.residuals
        version = pv.data.split(";")[0].removeprefix(f"{p.runtime} ").strip()
        rows.append([p.scope, p.runtime, version, pv.fitted_on.isoformat() if pv.fitted_on else "?",
                     str(pv.rows), str(it.records),
                     *(f"{res[k]:.1f}%" if k in res else "–" for k in ("mape", "decode_mape", "prefill_mape")),
                     f"{p.constants.eta_bw:.3g}", f"{p.constants.eta_c:.3g}"])
    out = [f"calibrations in {folder}:"]
    if rows:
        out.append(table(rows, ["chip", "runtime", "runtime version", "date", "fitted", "stored", "residual",
                                "decode", "prefill", "eta_bw", "eta_c"], "llllrrrrrrr"))
    out += bad
    return "\n".join(out)


def export(path: Path, runtime: str | None = None, root: Path | None = None) -> int:
    recs = store.all_records(root, runtime)
    if not recs:
        raise CalibrationError(f"no calibration records in {store.calibration_dir(root)}"
                               + (f" for {runtime}" if runtime else "") + "; run `plan calibrate` first")
    text = store.export_csv(recs, path)
    return text.count("\n") - 1
