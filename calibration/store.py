"""Where `plan calibrate` keeps its results: the user's config dir, written atomically.

Layout under :func:`planner.profiles.user_dir` (``$MAC_LLM_PLANNER_USER_PROFILES`` or platformdirs)::

    calibration/<chip id>__<runtime>.yaml    CalibrationProfile: the planner's lookup reads it (scope = chip id)
    calibration/<chip id>__<runtime>.jsonl   the raw RunRecords it was fitted on (all runtime versions kept)
    chips/custom-<hash>.yaml                 Linux / non-Apple machines: a Chip profile with the measured
                                             bandwidth and GEMM rate, so ``plan --chip custom-<hash>`` works

A calibration is keyed by chip and runtime (the file name the planner looks up) and by runtime version (in
the profile's provenance; the JSONL keeps every version, and a refit uses the records of the newest one).

Custom chips: the Chip schema only knows Apple generations and tiers, so a custom device is written with the
placeholder ``generation: M1, tier: base`` (documented in its ``notes``). Its speed constants come from its
own calibration file, which is complete and therefore overrides every shipped scope of the lookup chain.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import platform
import stat
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from calibration.errors import CalibrationError
from calibration.records import (
    MEASURED_CSV_COLUMNS,
    RunRecord,
    append_jsonl,
    atomic_write_text,
    read_jsonl,
    to_measured_csv_rows,
    write_jsonl,
)

CUSTOM_PREFIX = "custom-"
#: Placeholders the Chip schema needs for a non-Apple device (its Literal fields only know Apple chips).
CUSTOM_GENERATION = "M1"
CUSTOM_TIER = "base"


# --------------------------------------------------------------------------- paths
def user_root() -> Path:
    """The user profile root (``planner.profiles.user_dir()``); raises when there is none."""
    from planner import profiles

    root = profiles.user_dir()
    if root is None:
        raise CalibrationError("no user config dir: install platformdirs or set MAC_LLM_PLANNER_USER_PROFILES")
    return root


def calibration_dir(root: Path | None = None) -> Path:
    return (root or user_root()) / "calibration"


def profile_path(chip_id: str, runtime: str, root: Path | None = None) -> Path:
    return calibration_dir(root) / f"{chip_id}__{runtime}.yaml"


def records_path(chip_id: str, runtime: str, root: Path | None = None) -> Path:
    return calibration_dir(root) / f"{chip_id}__{runtime}.jsonl"


def _round(d: Any) -> Any:
    if isinstance(d, float):
        return float(f"{d:.5g}")
    if isinstance(d, dict):
        return {k: _round(v) for k, v in d.items()}
    return d


# --------------------------------------------------------------------------- calibration profiles
def write_profile(profile, root: Path | None = None) -> Path:
    """Write a CalibrationProfile as ``<scope>__<runtime>.yaml`` (same layout as calibration.fit's files)."""
    data = profile.model_dump(mode="json", exclude_none=True)
    data["constants"] = _round(data["constants"])
    text = ("# Written by `plan calibrate`; re-run it to update, delete this file to use the shipped constants.\n"
            + yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return atomic_write_text(profile_path(profile.scope, profile.runtime, root), text)


def read_profile(path: Path, chip_id: str | None = None, runtime: str | None = None):
    """Load and check one user calibration file; CalibrationError with a one-line reason otherwise.

    Checks: YAML, the CalibrationProfile schema, id == file name, and (when given) that it belongs to
    ``chip_id`` / ``runtime``. Constants it lacks (a newer planner added one) come from the shipped chain."""
    from planner import profiles
    from planner.errors import ProfileError
    from planner.schema import CalibrationProfile

    try:
        prof = profiles.load_file(Path(path), CalibrationProfile)
    except ProfileError as e:
        raise CalibrationError(str(e)) from None
    scope, _, rt = Path(path).stem.partition("__")
    if (prof.scope, prof.runtime) != (scope, rt):
        raise CalibrationError(f"{path}: holds a calibration of {prof.scope} / {prof.runtime}, not {scope} / {rt}")
    if chip_id is not None and prof.scope != chip_id:
        raise CalibrationError(f"{path}: calibrated on {prof.scope}, not on this device ({chip_id})")
    if runtime is not None and prof.runtime != runtime:
        raise CalibrationError(f"{path}: a {prof.runtime} calibration, not {runtime}")
    return prof


@dataclass
class StoredCalibration:
    """One file of the user calibration dir, loaded or with the reason it is ignored."""

    path: Path
    profile: Any = None  # CalibrationProfile
    error: str | None = None
    records: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None


def list_calibrations(root: Path | None = None) -> list[StoredCalibration]:
    """Every ``*.yaml`` of the user calibration dir, each loaded or with its error (never raises)."""
    folder = calibration_dir(root)
    out = []
    for p in _files(folder, "*.yaml"):
        item = StoredCalibration(path=p)
        if not _regular(p):
            item.error = f"{p}: not a regular file (a folder, FIFO or device); move it away"
            out.append(item)
            continue
        try:
            item.profile = read_profile(p)
        except CalibrationError as e:
            item.error = str(e)
        jl = p.with_suffix(".jsonl")
        if jl.exists():
            try:
                item.records = len(read_jsonl(jl))
            except CalibrationError as e:
                item.error = item.error or str(e)
        out.append(item)
    return out


# --------------------------------------------------------------------------- raw records
def save_records(chip_id: str, runtime: str, records: list[RunRecord], root: Path | None = None,
                 replace: bool = False) -> Path:
    """Append ``records`` to ``<chip>__<runtime>.jsonl`` atomically under the store lock (``replace``: the new
    records replace the old ones, which stay until the new file is safely written).

    A corrupt existing file is not extended: CalibrationError names it (delete it or use ``replace``)."""
    path = records_path(chip_id, runtime, root)
    try:
        return write_jsonl(path, records) if replace else append_jsonl(path, records)
    except CalibrationError as e:
        if replace or "cannot write" in str(e):
            raise
        raise CalibrationError(f"{e} (or run `plan calibrate --replace` to start a fresh record file)") from None


def _files(folder: Path, pattern: str) -> list[Path]:
    try:
        return sorted(folder.glob(pattern)) if folder.is_dir() else []
    except OSError as e:
        raise CalibrationError(f"{folder}: cannot list ({e.strerror}); check its permissions") from None


def _regular(p: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(p).st_mode)
    except OSError:
        return False


def load_records(chip_id: str, runtime: str, root: Path | None = None,
                 runtime_version: str | None = None) -> list[RunRecord]:
    recs = read_jsonl(records_path(chip_id, runtime, root))
    return [r for r in recs if runtime_version is None or r.runtime_version == runtime_version]


def export_csv(records: list[RunRecord], path: Path | None = None) -> str:
    """Records as CSV text with exactly the columns of measured_benchmarks_train.csv; written when ``path``."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(MEASURED_CSV_COLUMNS), lineterminator="\n")
    w.writeheader()
    for row in to_measured_csv_rows(records, include_peak_memory=True):
        w.writerow(row)
    text = buf.getvalue()
    if path is not None:
        atomic_write_text(Path(path), text)
    return text


def all_records(root: Path | None = None, runtime: str | None = None) -> list[RunRecord]:
    folder = calibration_dir(root)
    out: list[RunRecord] = []
    for p in _files(folder, "*.jsonl"):
        if runtime is None or p.stem.endswith(f"__{runtime}"):
            out.extend(read_jsonl(p))
    return out


# --------------------------------------------------------------------------- the device as a Chip
def custom_chip_id(device: dict[str, Any], hostname: str | None = None) -> str:
    """``custom-<8 hex>``: a hash of the host name and CPU model (stable across runs on one machine)."""
    host = hostname if hostname is not None else platform.node()
    key = f"{host}|{device.get('cpu_model') or device.get('chip') or ''}"
    return CUSTOM_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:8]


def custom_chip_data(device: dict[str, Any], chip_id: str) -> dict[str, Any]:
    """A Chip profile dict for a non-Apple device: bandwidth = measured copy bandwidth, peak FLOPS = measured
    fp32 GEMM (calibration.hardware.detect_linux), GPU cores = physical CPU cores."""
    bw, flops = device.get("memory_bandwidth_Bps"), device.get("matmul_flops")
    if not bw or not flops:
        raise CalibrationError("the device has no measured bandwidth / GEMM rate; detect() must run with measure=True")
    cores = int(device.get("cpu_cores_physical") or os.cpu_count() or 1)
    ram = device.get("ram_bytes") or 0
    ram_gb = max(1, round(ram / 2**30))
    tf = round(flops / 1e12, 6)
    return {
        "id": chip_id,
        "name": f"custom {device.get('cpu_model') or device.get('chip') or 'CPU'}".strip()[:80],
        "generation": CUSTOM_GENERATION,
        "tier": CUSTOM_TIER,
        "gpu_cores": max(1, min(cores, 256)),
        "cpu_cores": [max(1, cores)],
        "memory_bandwidth_gb_s": round(bw / 1e9, 3),
        "ram_options_gb": [ram_gb],
        "gpu_fp32_tflops": tf,
        "gpu_fp16_tflops": tf,
        "gpu_matrix_units": False,
        "backend": "cpu",
        "release_year": date.today().year,
        "status": "shipping",
        "tflops_basis": f"measured: numpy fp32 GEMM {flops / 1e9:.1f} GFLOP/s by `plan calibrate`",
        "notes": (f"custom device written by `plan calibrate` on {date.today().isoformat()} "
                  f"({device.get('os', '')} {device.get('os_version', '')}, {cores} physical cores): bandwidth is "
                  "the measured numpy copy bandwidth (read + write), peak FLOPS the measured fp32 GEMM rate; "
                  f"generation {CUSTOM_GENERATION} / tier {CUSTOM_TIER} are schema placeholders, its speed "
                  "constants come from its own calibration files."),
        "sources": ["local measurement: plan calibrate (calibration.hardware.detect_linux)"],
        "verified": date.today().isoformat(),
    }


def chip_file(chip_id: str, root: Path | None = None) -> Path:
    return (root or user_root()) / "chips" / f"{chip_id}.yaml"


def ensure_custom_chip(device: dict[str, Any], root: Path | None = None, hostname: str | None = None,
                       remeasure: bool = False):
    """The Chip of this non-Apple device, written to ``chips/custom-<hash>.yaml`` on first use.

    An existing valid file is kept (its bandwidth and FLOPS are the reference every calibration of this device
    was fitted against) unless ``remeasure``. Returns ``(Chip, path, written)``."""
    from planner import profiles
    from planner.errors import ProfileError
    from planner.schema import Chip

    cid = custom_chip_id(device, hostname)
    path = chip_file(cid, root)
    if path.exists() and not _regular(path):
        raise CalibrationError(f"{path}: not a regular file (a folder, FIFO or device); move it away")
    if path.exists() and not remeasure:
        try:
            return profiles.load_file(path, Chip), path, False
        except ProfileError:
            pass  # corrupt: rewrite it from this run's measurement
    data = custom_chip_data(device, cid)
    chip = Chip.model_validate(data)
    atomic_write_text(path, "# Written by `plan calibrate` (measured on this machine).\n"
                      + yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    profiles.clear_cache()
    return chip, path, True


def device_chip(device: dict[str, Any], root: Path | None = None, remeasure: bool = False):
    """The planner Chip the calibration belongs to: the Apple chip id on macOS, a custom chip elsewhere.

    Returns ``(Chip, custom chip path or None, written)``."""
    from planner import profiles
    from planner.errors import PlannerError

    cid = str(device.get("chip_id") or "custom")
    if device.get("os") == "macos" and cid != "custom":
        try:
            return profiles.resolve_chip(cid), None, False
        except PlannerError as e:
            raise CalibrationError(f"this Mac's chip {cid!r} is not in the planner's chip profiles ({e}); "
                                   "add profiles/chips/<id>.yaml or update mac-llm-planner") from None
    return ensure_custom_chip(device, root, remeasure=remeasure)
