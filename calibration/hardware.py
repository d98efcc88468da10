"""Detect the machine a calibration run is measured on.

- macOS: chip name (``sysctl machdep.cpu.brand_string``), GPU cores (``system_profiler
  SPDisplaysDataType -json``), RAM (``hw.memsize``), ``iogpu.wired_limit_mb``, CPU cores, macOS version, read by
  the one detector of this Mac, sources/thismac.py (the CLI's too).
- Linux (and anything else): a ``custom`` device with CPU model, physical cores, RAM, plus a measured
  memory copy bandwidth and fp32 GEMM FLOP/s (numpy) so a roofline can be placed on it.

Every shell command goes through an injectable ``run(argv) -> str`` so tests can feed recorded output.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from calibration.errors import CalibrationError

CommandRunner = Callable[[Sequence[str]], str]


class DeviceInfo(BaseModel):
    """What we know about the measuring machine (SI units)."""

    model_config = ConfigDict(frozen=True)

    os: Literal["macos", "linux", "other"]
    os_version: str = ""
    backend: Literal["metal", "cpu"]
    chip: str  # "Apple M3 Max" or the CPU model on Linux
    chip_id: str  # "m3-max-40gpu" (profiles/chips ids) or "custom"
    cpu_model: str = ""
    cpu_cores_physical: int | None = None
    cpu_cores_logical: int | None = None
    cpu_cores_performance: int | None = None
    gpu_cores: int | None = None
    ram_bytes: int | None = None
    wired_limit_bytes: int | None = None  # iogpu.wired_limit_mb in bytes; 0 = macOS default
    memory_bandwidth_Bps: float | None = None  # measured (numpy copy: read + write bytes / s)
    matmul_flops: float | None = None  # measured fp32 GEMM FLOP/s (numpy)


def run_command(argv: Sequence[str]) -> str:
    """Default runner: run argv, return stdout; raise CalibrationError on failure."""
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CalibrationError(f"`{' '.join(argv)}` failed: {e}") from e
    if proc.returncode != 0:
        raise CalibrationError(f"`{' '.join(argv)}` exited {proc.returncode}: {proc.stderr.strip()[:200]}")
    return proc.stdout


def chip_id(chip: str, gpu_cores: int | None) -> str:
    """Chip profile id (profiles/chips): ``Apple M3 Max`` + 40 -> ``m3-max-40gpu``; non-Apple -> ``custom``."""
    name = chip.strip()
    if not name.lower().startswith("apple m"):
        return "custom"
    slug = re.sub(r"\s+", "-", name[len("apple "):].strip().lower())
    return f"{slug}-{gpu_cores}gpu" if gpu_cores else slug


# ----------------------------------------------------------------------------------------------
# macOS
# ----------------------------------------------------------------------------------------------


def detect_macos(run: CommandRunner = run_command) -> DeviceInfo:
    """Read macOS facts through ``run`` with the one detector of this Mac (sources/thismac.py, also used by the
    CLI); no measurement: Metal bandwidth is taken from the chip profile."""
    from sources.thismac import CommandFailed, read_facts

    try:
        f = read_facts(run)
    except CommandFailed as e:
        raise CalibrationError(f"{e}") from None
    return DeviceInfo(
        os="macos",
        os_version=f.macos_version,
        backend="metal" if f.brand.startswith("Apple") else "cpu",
        chip=f.brand,
        chip_id=chip_id(f.brand, f.gpu_cores),
        cpu_model=f.brand,
        cpu_cores_physical=f.cpu_cores_physical,
        cpu_cores_logical=f.cpu_cores_logical,
        cpu_cores_performance=f.cpu_cores_performance,
        gpu_cores=f.gpu_cores,
        ram_bytes=f.ram_bytes,
        wired_limit_bytes=None if f.wired_limit_mb is None else f.wired_limit_mb * 2**20,
    )


# ----------------------------------------------------------------------------------------------
# Linux / other
# ----------------------------------------------------------------------------------------------


def _linux_cpu(cpuinfo: str) -> tuple[str, int | None, int | None]:
    model = ""
    cores: set[tuple[str, str]] = set()
    logical = 0
    phys_id = core_id = None
    for line in cpuinfo.splitlines() + [""]:
        if not line.strip():
            if phys_id is not None or core_id is not None:
                cores.add((phys_id or "0", core_id or str(logical)))
            phys_id = core_id = None
            continue
        key, _, val = line.partition(":")
        key, val = key.strip(), val.strip()
        if key == "processor":
            logical += 1
        elif key == "model name" and not model:
            model = val
        elif key == "physical id":
            phys_id = val
        elif key == "core id":
            core_id = val
    return model, (len(cores) or None), (logical or None)


def measure_memory_bandwidth(nbytes: int = 128 * 2**20, repeats: int = 5) -> float:
    """Best-of-``repeats`` numpy copy bandwidth in bytes/s, counting read + write (STREAM "copy")."""
    import numpy as np

    src = np.ones(nbytes // 8, dtype=np.float64)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # fault pages in
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return 2 * src.nbytes / best


def measure_matmul_flops(n: int = 1024, repeats: int = 3) -> float:
    """Best-of-``repeats`` fp32 GEMM rate in FLOP/s (2 n^3 per n x n x n product)."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    a @ b  # warm-up (BLAS thread pool)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n**3 / best


def detect_linux(measure: bool = True, proc_root: str | os.PathLike[str] = "/proc") -> DeviceInfo:
    """CPU model, cores and RAM from /proc; bandwidth and GEMM rate measured when ``measure``."""
    root = Path(proc_root)
    try:
        model, phys, logical = _linux_cpu((root / "cpuinfo").read_text())
    except OSError:
        model, phys, logical = platform.processor() or "unknown CPU", None, None
    ram = None
    try:
        m = re.search(r"^MemTotal:\s+(\d+)\s+kB", (root / "meminfo").read_text(), re.MULTILINE)
        ram = int(m.group(1)) * 1024 if m else None
    except OSError:
        pass
    return DeviceInfo(
        os="linux" if platform.system() == "Linux" else "other",
        os_version=platform.release(),
        backend="cpu",
        chip=model or "unknown CPU",
        chip_id="custom",
        cpu_model=model,
        cpu_cores_physical=phys or os.cpu_count(),
        cpu_cores_logical=logical or os.cpu_count(),
        ram_bytes=ram,
        memory_bandwidth_Bps=measure_memory_bandwidth() if measure else None,
        matmul_flops=measure_matmul_flops() if measure else None,
    )


def detect(system: str | None = None, run: CommandRunner = run_command, measure: bool = True) -> DeviceInfo:
    """Detect the current machine. ``system`` overrides ``platform.system()`` ("Darwin", "Linux")."""
    system = system or platform.system()
    if system == "Darwin":
        return detect_macos(run)
    return detect_linux(measure=measure)


def physical_cores(device: DeviceInfo | None = None) -> int:
    """Threads to use for CPU compute: performance cores on Apple, physical cores elsewhere (>= 1)."""
    if device is not None:
        n = device.cpu_cores_performance or device.cpu_cores_physical
        if n:
            return n
    try:
        _, phys, _ = _linux_cpu(Path("/proc/cpuinfo").read_text())
    except OSError:
        phys = None
    return max(1, phys or os.cpu_count() or 1)
