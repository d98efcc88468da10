"""One calibration measurement (:class:`RunRecord`), its JSONL store and its CSV export.

- ``append_jsonl(path, records)`` holds an exclusive lock (``fcntl.flock`` on ``.<name>.lock`` next to it) around
  read-validate-append, and rewrites the whole file through a temp file + ``os.replace``: concurrent writers lose
  nothing and a crash or a full disk never leaves a half-written line (the old file stays until the new one is
  safely written). ``write_jsonl(path, records)`` replaces the content the same way.
- ``read_jsonl(path)`` raises :class:`CalibrationError` naming the file and line on corrupt input.
- ``to_measured_csv_rows(records)`` gives rows with exactly the columns of
  ``measured_benchmarks_train.csv`` (:data:`MEASURED_CSV_COLUMNS`) so local runs can be fitted with
  the public data.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import math
import os
import stat
import tempfile
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from calibration.errors import CalibrationError

__all__ = [
    "MEASURED_CSV_COLUMNS",
    "CalibrationError",
    "RunRecord",
    "append_jsonl",
    "locked",
    "read_jsonl",
    "to_measured_csv_rows",
    "utc_now",
    "write_jsonl",
]

SCHEMA_VERSION = 1
MAX_JSONL_BYTES = 32 * 2**20   # a record is ~1 KB; a calibration run writes a few dozen

Runtime = Literal["mlx-lm", "llama.cpp"]
Backend = Literal["metal", "cpu"]
Phase = Literal["prefill", "decode"]
Kind = Literal["prefill", "decode", "batch"]
Tool = Literal[
    "llama-bench",
    "llama-batched-bench",
    "llama-cpp-python",
    "mlx_lm.stream_generate",
    "mlx_lm.batch_generate",
]

#: Columns of calibration/data/measured_benchmarks_train.csv, in order.
MEASURED_CSV_COLUMNS: tuple[str, ...] = (
    "row_id", "source", "source_type", "source_group", "date", "chip", "gpu_cores", "ram_GB", "device",
    "runtime", "runtime_version", "model", "params_B", "active_params_B", "quant", "prompt_tokens",
    "gen_tokens", "context_depth", "batch", "flash_attn", "metric", "value", "unit", "notes", "reliability",
)


def utc_now() -> str:
    """ISO-8601 UTC timestamp with seconds, e.g. ``2026-11-20T10:31:05Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class RunRecord(BaseModel):
    """ONE measurement: a phase (prefill or decode) of one configuration, median over ``trials``.

    Units are SI: bytes, tokens/s. ``value_tok_s`` is aggregate over the batch (per-sequence speed is
    ``value_tok_s / batch``). For prefill, ``prompt_tokens`` tokens are processed per sequence on top of
    ``context_depth`` cached tokens; for decode, ``gen_tokens`` tokens are generated per sequence
    starting at ``context_depth`` cached tokens (llama-bench ``tgN @ dD``). A batch-sweep config
    (``kind="batch"``) yields two records with the same prompt_tokens/gen_tokens: prefill at depth 0 and
    decode at depth = prompt_tokens (the llama-batched-bench S_PP / S_TG convention of the training CSV).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = SCHEMA_VERSION
    runtime: Runtime
    runtime_version: str
    backend: Backend
    tool: Tool
    device: dict[str, Any] = Field(default_factory=dict, description="calibration.hardware.detect() dump")
    # model
    model_path: str
    model_id: str | None = None
    quant: str = Field(description="our quant id: Q4_K_M, F32, mlx-4bit-g64, mlx-f32 ...")
    weights_bytes: int = Field(gt=0, description="sum of tensor bytes as loaded (safetensors/GGUF)")
    n_params: int = Field(gt=0)
    n_layers: int = Field(gt=0)
    hidden: int = Field(gt=0)
    n_heads: int = Field(gt=0)
    n_kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    vocab: int = Field(gt=0)
    ffn: int = Field(gt=0)
    # configuration
    kind: Kind = Field(description="protocol config kind: prefill, decode (one sequence) or batch sweep")
    phase: Phase
    prompt_tokens: int = Field(ge=0)
    gen_tokens: int = Field(ge=0)
    context_depth: int = Field(ge=0)
    batch: int = Field(ge=1)
    flash_attn: bool | None = None
    threads: int | None = None
    # result
    value_tok_s: float = Field(gt=0)
    trials: int = Field(ge=1)
    trial_values: list[float]
    peak_memory_bytes: int | None = Field(default=None, ge=0)
    seed: int = 0
    timestamp: str = Field(default_factory=utc_now)
    notes: str = ""

    @field_validator("value_tok_s")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("value_tok_s must be finite")
        return v

    @field_validator("trial_values")
    @classmethod
    def _finite_trials(cls, v: list[float]) -> list[float]:
        if not v or not all(math.isfinite(x) and x > 0 for x in v):
            raise ValueError("trial_values must be a non-empty list of positive finite numbers")
        return v

    @property
    def label(self) -> str:
        """Short human label, e.g. ``prefill p512``, ``decode g32 d1024``, ``batch4 decode g32 d128``."""
        s = f"prefill p{self.prompt_tokens}" if self.phase == "prefill" else f"decode g{self.gen_tokens}"
        if self.context_depth:
            s += f" d{self.context_depth}"
        return f"batch{self.batch} {s}" if self.kind == "batch" else s


# ----------------------------------------------------------------------------------------------
# JSONL store
# ----------------------------------------------------------------------------------------------


def read_jsonl(path: str | os.PathLike[str]) -> list[RunRecord]:
    """Read every record of a JSONL file (missing file -> []); corrupt lines, a binary file, a folder, a FIFO or a
    file over MAX_JSONL_BYTES raise CalibrationError naming the file."""
    p = Path(path)
    text = _read_text(p)
    if text is None:
        return []
    out: list[RunRecord] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(RunRecord.model_validate_json(line))
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(x) for x in first.get("loc", ())) or "line"
            raise CalibrationError(
                f"{p}:{n}: not a valid calibration record ({where}: {str(first.get('msg'))[:80]}); "
                "fix or delete that line, or re-run `plan calibrate`"
            ) from None
    return out


def _read_text(p: Path) -> str | None:
    """The UTF-8 text of a regular file of at most MAX_JSONL_BYTES (None when it does not exist); opened without
    blocking so a FIFO or device is refused instead of read forever."""
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise CalibrationError(f"{p}: cannot read ({e.strerror}); check the path and its permissions") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CalibrationError(f"{p}: not a regular file (a folder, FIFO or device); move it away")
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as f:
        try:
            data = f.read(MAX_JSONL_BYTES + 1)
        except OSError as e:
            raise CalibrationError(f"{p}: cannot read ({e.strerror}); check the file") from None
    if len(data) > MAX_JSONL_BYTES:
        raise CalibrationError(f"{p}: larger than {MAX_JSONL_BYTES // 2**20} MiB, not a calibration record file; "
                               "move it away")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CalibrationError(f"{p}: not a text file of calibration records (binary data); move it away or "
                               "re-run `plan calibrate --replace`") from None


@contextlib.contextmanager
def locked(path: Path):
    """An exclusive advisory lock (fcntl.flock) on ``.<name>.lock`` next to ``path``: every read-modify-write of a
    store file happens inside it, so concurrent `plan calibrate` runs never lose each other's records. The lock file
    is never deleted (deleting it would let two writers lock two different files)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(f".{path.name}.lock")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as e:
        raise CalibrationError(f"{lock}: cannot open the lock file ({e.strerror}); check the folder") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _check(records: Iterable[RunRecord]) -> list[RunRecord]:
    new = list(records)
    for r in new:
        if not isinstance(r, RunRecord):
            raise CalibrationError(f"append_jsonl expects RunRecord objects, got {type(r).__name__}")
    return new


def append_jsonl(path: str | os.PathLike[str], records: Iterable[RunRecord]) -> Path:
    """Append records to a JSONL file under the store lock, atomically (temp file in the same folder +
    ``os.replace``). The existing content is validated first, so a corrupt file is never silently extended."""
    p = Path(path)
    new = _check(records)
    with locked(p):
        existing = read_jsonl(p)
        return atomic_write_text(p, dumps_jsonl([*existing, *new]))


def write_jsonl(path: str | os.PathLike[str], records: Iterable[RunRecord]) -> Path:
    """Replace the content of a JSONL file with ``records`` under the store lock: the new file is written and
    synced first, then renamed over the old one, so a failure (a full disk) keeps the old records."""
    p = Path(path)
    new = _check(records)
    with locked(p):
        return atomic_write_text(p, dumps_jsonl(new))


def dumps_jsonl(records: Iterable[RunRecord]) -> str:
    """The JSONL text for records (one ``model_dump_json`` per line)."""
    return "".join(r.model_dump_json() + "\n" for r in records)


def atomic_write_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temp file in the same folder + ``os.replace``: a crash mid-write
    leaves the old file, never half a new one. A failed write (disk full, read-only folder, a folder in the way)
    is one CalibrationError line and removes the temp file; the old file is untouched."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a folder")
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        hint = "free some disk space" if e.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT) else \
            "check the path and its permissions"
        raise CalibrationError(f"{path}: cannot write ({e.strerror or e.__class__.__name__}); {hint}, the previous "
                               "content is kept") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return path


# ----------------------------------------------------------------------------------------------
# CSV export (measured_benchmarks_train.csv schema)
# ----------------------------------------------------------------------------------------------

_TOOL_RUNTIME_LABEL = {
    "llama-bench": "llama.cpp (llama-bench, {backend})",
    "llama-batched-bench": "llama.cpp (llama-batched-bench, {backend})",
    "llama-cpp-python": "llama.cpp (llama-cpp-python, {backend})",
    "mlx_lm.stream_generate": "mlx-lm (python API, {backend})",
    "mlx_lm.batch_generate": "mlx-lm (python API batch_generate, {backend})",
}


def _metric(r: RunRecord) -> str:
    base = "pp_tps" if r.phase == "prefill" else "tg_tps"
    # batch-sweep rows are batched_* even at batch 1, like llama-batched-bench rows in the training CSV
    return f"batched_{base}" if r.kind == "batch" or r.batch > 1 else base


def _fmt_num(x: float, digits: int = 4) -> str:
    return f"{x:.{digits}g}" if abs(x) < 1e4 else f"{x:.1f}"


def _device_cells(dev: dict[str, Any]) -> dict[str, str]:
    chip = str(dev.get("chip") or dev.get("cpu_model") or "unknown")
    ram = dev.get("ram_bytes")
    gpu = dev.get("gpu_cores")
    parts = [str(dev.get("chip_id") or "custom")]
    if dev.get("os_version"):
        parts.append(f"{dev.get('os', '')} {dev['os_version']}".strip())
    if dev.get("cpu_cores_physical"):
        parts.append(f"{dev['cpu_cores_physical']} physical CPU cores")
    if dev.get("wired_limit_bytes"):
        parts.append(f"iogpu.wired_limit_mb={int(dev['wired_limit_bytes']) // 2**20}")
    if dev.get("memory_bandwidth_Bps"):
        parts.append(f"measured copy bandwidth {dev['memory_bandwidth_Bps'] / 1e9:.1f} GB/s")
    if dev.get("matmul_flops"):
        parts.append(f"measured fp32 GEMM {dev['matmul_flops'] / 1e9:.1f} GFLOP/s")
    return {
        "chip": chip.removeprefix("Apple ").strip(),
        "gpu_cores": "" if gpu in (None, 0) else str(gpu),
        # Mac RAM is sold in GiB and quoted as "GB" (e.g. 64); keep one decimal for odd Linux sizes.
        "ram_GB": "" if not ram else _fmt_num(round(ram / 2**30, 1)),
        "device": "; ".join(parts),
    }


def to_measured_csv_rows(
    records: Sequence[RunRecord], *, start_row_id: int = 1, reliability: str = "high",
    include_peak_memory: bool = False,
) -> list[dict[str, str]]:
    """Rows with exactly :data:`MEASURED_CSV_COLUMNS` (all str), ``source_group="plan calibrate"``.

    Metrics: ``pp_tps``/``tg_tps`` at batch 1, ``batched_pp_tps``/``batched_tg_tps`` above (aggregate).
    ``include_peak_memory`` adds a ``peak_mem_GB`` row (1e9 bytes, as mx.get_peak_memory reports) for
    records that carry a peak. Row ids are consecutive from ``start_row_id``.
    """
    rows: list[dict[str, str]] = []
    rid = start_row_id
    for r in records:
        backend = "Metal" if r.backend == "metal" else "CPU"
        common = {
            "source": f"local run: {r.tool} on {r.model_path}",
            "source_type": "primary (local calibration run)",
            "source_group": "plan calibrate",
            "date": r.timestamp[:10],
            **_device_cells(r.device),
            "runtime": _TOOL_RUNTIME_LABEL[r.tool].format(backend=backend),
            "runtime_version": r.runtime_version,
            "model": r.model_id or Path(r.model_path).name,
            "params_B": f"{r.n_params / 1e9:.6g}",
            "active_params_B": "",
            "quant": r.quant,
            "prompt_tokens": str(r.prompt_tokens),
            "gen_tokens": str(r.gen_tokens),
            "context_depth": str(r.context_depth),
            "batch": str(r.batch),
            "flash_attn": "n/a" if r.flash_attn is None else ("on" if r.flash_attn else "off"),
            "reliability": reliability,
        }
        trials = ", ".join(_fmt_num(v) for v in r.trial_values)
        notes = (f"median of {r.trials} trials [{trials}]; weights {r.weights_bytes} B; seed {r.seed}"
                 + (f"; threads {r.threads}" if r.threads else "") + (f"; {r.notes}" if r.notes else ""))
        unit = "tok/s (aggregate over B seqs)" if r.kind == "batch" else "tok/s"
        rows.append({**common, "row_id": str(rid), "metric": _metric(r), "value": _fmt_num(r.value_tok_s, 6),
                     "unit": unit, "notes": notes})
        rid += 1
        if include_peak_memory and r.peak_memory_bytes:
            rows.append({**common, "row_id": str(rid), "metric": "peak_mem_GB",
                         "value": _fmt_num(r.peak_memory_bytes / 1e9, 6), "unit": "GB",
                         "notes": f"peak memory after {r.label} ({r.tool})"})
            rid += 1
    return [{c: row[c] for c in MEASURED_CSV_COLUMNS} for row in rows]

