"""What real Macs answered to the detector's commands (sources/thismac.py), one entry per Mac, each with its source.

Every value below was read in the cited public report; it is written here in the output format of the command
(``sysctl -n`` prints the bare value, ``hw.memsize`` in bytes = the reported GB x 2**30, ``sw_vers
-productVersion`` the version). The layout of ``system_profiler SPDisplaysDataType -json`` (the GPU entry with
``_name``, ``sppci_cores``, ``sppci_model``...) is the one recorded in
https://github.com/timmo001/system-bridge/pull/3408 (an M3 Pro, pasted in full). A command a report does not show
is left out: its stand-in then fails, as a command that cannot be read does, and the detector must cope.

tests/sources/test_thismac.py writes stand-in ``sysctl`` / ``system_profiler`` / ``sw_vers`` scripts that print
these and puts them first on PATH.
"""

from __future__ import annotations

import json


def displays(chip: str, cores: int) -> str:
    """system_profiler SPDisplaysDataType -json of an Apple silicon GPU entry (layout of system-bridge #3408)."""
    return json.dumps({"SPDisplaysDataType": [{
        "_name": chip,
        "spdisplays_vendor": "sppci_vendor_Apple",
        "sppci_bus": "spdisplays_builtin",
        "sppci_cores": str(cores),
        "sppci_device_type": "spdisplays_gpu",
        "sppci_model": chip,
    }]}, indent=2).replace('": ', '" : ') + "\n"


MACS: dict[str, dict] = {
    # https://github.com/smpanaro/coreml-llm-cli/issues/2 : "M2 Pro (12 (8 performance and 4 efficiency) Cores,
    # 32GB RAM, 19 GPU Cores) Performance on macOS Sonoma (14.5)"
    "m2-pro-19gpu-32gb-macos14": {
        "source": "https://github.com/smpanaro/coreml-llm-cli/issues/2",
        "sysctl": {"machdep.cpu.brand_string": "Apple M2 Pro", "hw.memsize": str(32 * 2**30),
                   "hw.physicalcpu": "12", "hw.logicalcpu": "12", "hw.perflevel0.physicalcpu": "8"},
        "system_profiler": displays("Apple M2 Pro", 19),
        "sw_vers": "14.5",
    },
    # https://github.com/AlexsJones/llmfit/issues/570 : `sudo sysctl iogpu.wired_limit_mb=26000`, llama-server
    # "MTL0: Apple M1 Max (26000 MiB ...)", llmfit "CPU: Apple M1 Max (10 cores)", "Total RAM: 32.00 GB". The GPU core
    # count and the macOS version are not in the report.
    "m1-max-32gb-wired26000": {
        "source": "https://github.com/AlexsJones/llmfit/issues/570",
        "sysctl": {"machdep.cpu.brand_string": "Apple M1 Max", "hw.memsize": str(32 * 2**30),
                   "iogpu.wired_limit_mb": "26000", "hw.physicalcpu": "10", "hw.logicalcpu": "10"},
    },
    # https://github.com/philipturner/applegpuinfo/issues/4 : "GPU name: Apple M3 Max", "GPU core count: 40",
    # "GPU memory: 64 GB" (the macOS version is not in the report)
    "m3-max-40gpu-64gb": {
        "source": "https://github.com/philipturner/applegpuinfo/issues/4",
        "sysctl": {"machdep.cpu.brand_string": "Apple M3 Max", "hw.memsize": str(64 * 2**30)},
        "system_profiler": displays("Apple M3 Max", 40),
    },
    # https://github.com/wandb/wandb/pull/12680 : "an M4 Max (Mac16,5, 64 GB, 12 + 4 cores, 40 GPU cores)", values read
    # from sysctl machdep.cpu.brand_string / hw.memsize / hw.perflevelN.physicalcpu
    "m4-max-40gpu-64gb": {
        "source": "https://github.com/wandb/wandb/pull/12680",
        "sysctl": {"machdep.cpu.brand_string": "Apple M4 Max", "hw.memsize": str(64 * 2**30),
                   "hw.physicalcpu": "16", "hw.perflevel0.physicalcpu": "12"},
        "system_profiler": displays("Apple M4 Max", 40),
    },
    # https://github.com/Lospi/MetalDuck/issues/34 : "Chip: Apple A18 Pro", "CPU Cores: 6 (2P 4E)", "GPU Cores: 5",
    # "Memory: 8 GB", "macOS: Version 26.5.2 (Build 25F84)" (the MacBook Neo; also AlexsJones/llmfit#1044: "Apple A18
    # Pro host (5-core GPU, 8 GB RAM, macOS 26.5.2)")
    "a18-pro-5gpu-8gb-macos26": {
        "source": "https://github.com/Lospi/MetalDuck/issues/34",
        "sysctl": {"machdep.cpu.brand_string": "Apple A18 Pro", "hw.memsize": str(8 * 2**30),
                   "hw.physicalcpu": "6", "hw.perflevel0.physicalcpu": "2"},
        "system_profiler": displays("Apple A18 Pro", 5),
        "sw_vers": "26.5.2",
    },
}
