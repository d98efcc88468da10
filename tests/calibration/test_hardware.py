"""Hardware detection: real on Linux, recorded command output for macOS."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from calibration.errors import CalibrationError
from calibration.hardware import chip_id, detect, detect_linux, detect_macos, physical_cores

# Recorded on a 16" MacBook Pro (M3 Max 16/40, 64 GB, macOS 15.1), trimmed to the fields we read.
SYSTEM_PROFILER_M3_MAX = json.dumps({
    "SPDisplaysDataType": [{
        "_name": "Apple M3 Max",
        "spdisplays_mtlgpufamilysupport": "spdisplays_metal3",
        "spdisplays_ndrvs": [{"_name": "Color LCD", "spdisplays_main": "spdisplays_yes"}],
        "spdisplays_vendor": "sppci_vendor_Apple",
        "sppci_bus": "spdisplays_builtin",
        "sppci_cores": "40",
        "sppci_device_type": "spdisplays_gpu",
        "sppci_model": "Apple M3 Max",
    }]
}, indent=2)

MAC_OUTPUTS = {
    ("sysctl", "-n", "machdep.cpu.brand_string"): "Apple M3 Max\n",
    ("sysctl", "-n", "hw.memsize"): "68719476736\n",
    ("sysctl", "-n", "iogpu.wired_limit_mb"): "57344\n",
    ("sysctl", "-n", "hw.physicalcpu"): "16\n",
    ("sysctl", "-n", "hw.logicalcpu"): "16\n",
    ("sysctl", "-n", "hw.perflevel0.physicalcpu"): "12\n",
    ("sw_vers", "-productVersion"): "15.1\n",
    ("system_profiler", "SPDisplaysDataType", "-json"): SYSTEM_PROFILER_M3_MAX,
}


def recorded(outputs: dict[tuple[str, ...], str]):  # type: ignore[no-untyped-def]
    calls: list[tuple[str, ...]] = []

    def run(argv: Sequence[str]) -> str:
        key = tuple(argv)
        calls.append(key)
        if key not in outputs:
            raise CalibrationError(f"`{' '.join(argv)}` exited 1: unknown oid")
        return outputs[key]

    run.calls = calls  # type: ignore[attr-defined]
    return run


def test_macos_detection_parses_recorded_outputs() -> None:
    dev = detect(system="Darwin", run=recorded(MAC_OUTPUTS))
    assert dev.os == "macos" and dev.backend == "metal"
    assert dev.chip == "Apple M3 Max" and dev.chip_id == "m3-max-40gpu"
    assert dev.gpu_cores == 40 and dev.ram_bytes == 64 * 2**30
    assert dev.wired_limit_bytes == 57344 * 2**20
    assert (dev.cpu_cores_physical, dev.cpu_cores_performance) == (16, 12)
    assert dev.os_version == "15.1"
    assert dev.memory_bandwidth_Bps is None  # nothing is measured on a Mac; the chip profile has it
    assert physical_cores(dev) == 12


def test_macos_detection_tolerates_missing_optional_facts() -> None:
    outputs = {k: v for k, v in MAC_OUTPUTS.items()
               if k[-1] not in ("iogpu.wired_limit_mb", "-json", "hw.perflevel0.physicalcpu")}
    outputs[("sysctl", "-n", "machdep.cpu.brand_string")] = "Apple M1\n"
    dev = detect_macos(recorded(outputs))
    assert dev.gpu_cores is None and dev.wired_limit_bytes is None
    assert dev.chip_id == "m1"
    with pytest.raises(CalibrationError, match="brand_string"):
        detect_macos(recorded({}))


def test_chip_ids_follow_team_convention() -> None:
    assert chip_id("Apple M1 Pro", 14) == "m1-pro-14gpu"
    assert chip_id("Apple M2 Ultra", 76) == "m2-ultra-76gpu"
    assert chip_id("AMD EPYC", None) == "custom"


def test_linux_detection_measures_positive_bandwidth() -> None:
    dev = detect_linux(measure=True)
    assert dev.backend == "cpu" and dev.chip_id == "custom"
    assert dev.cpu_cores_physical and dev.cpu_cores_physical >= 1
    assert dev.ram_bytes and dev.ram_bytes > 0
    for v in (dev.memory_bandwidth_Bps, dev.matmul_flops):
        assert v is not None and math.isfinite(v) and v > 0
    assert json.loads(dev.model_dump_json())["chip_id"] == "custom"


def test_linux_cpuinfo_parsing(tmp_path: Path) -> None:
    block = "processor\t: {i}\nmodel name\t: Test CPU 9000\nphysical id\t: 0\ncore id\t\t: {c}\n\n"
    (tmp_path / "cpuinfo").write_text("".join(block.format(i=i, c=i // 2) for i in range(8)))  # 4 cores, SMT2
    (tmp_path / "meminfo").write_text("MemTotal:       16384000 kB\nMemFree:  1 kB\n")
    dev = detect_linux(measure=False, proc_root=tmp_path)
    assert (dev.chip, dev.cpu_cores_physical, dev.cpu_cores_logical) == ("Test CPU 9000", 4, 8)
    assert dev.ram_bytes == 16384000 * 1024 and dev.memory_bandwidth_Bps is None
