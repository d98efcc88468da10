"""This Mac: the one detector of the machine the planner runs on (used by the CLI and by calibration/hardware.py).

On macOS it reads
  - ``sysctl -n machdep.cpu.brand_string`` (the chip: "Apple M4 Pro"), ``hw.memsize`` (RAM in bytes) and
    ``iogpu.wired_limit_mb`` (the GPU wired limit the user set; 0 = the macOS default), plus the CPU core counts
    ``hw.physicalcpu``, ``hw.logicalcpu``, ``hw.perflevel0.physicalcpu`` (calibration uses them);
  - ``system_profiler SPDisplaysDataType -json`` (GPU cores: the ``sppci_cores`` field of the GPU entry);
  - ``sw_vers -productVersion`` (macOS version, "26.1"),
and maps them to a chip profile (profiles/chips) through planner.profiles. A chip or GPU bin the profiles do not
know is said in one line (an update of the tool is the fix), never answered with another bin.

Off a Mac nothing is read (:func:`on_mac` is False) unless MAC_LLM_PLANNER_FAKE_DARWIN=1, which lets the tests run
the detector against stand-in ``sysctl`` / ``system_profiler`` / ``sw_vers`` scripts on PATH that print recorded
outputs of real Macs (tests/sources/fixtures/macs).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict

FAKE_ENV = "MAC_LLM_PLANNER_FAKE_DARWIN"
TIMEOUT_S = 30   # system_profiler takes ~0.3-2 s on a real Mac; a hung one must not hang the planner


class CommandFailed(Exception):
    """A detection command could not run or exited non-zero."""


CommandRunner = Callable[[Sequence[str]], str]


def run_command(argv: Sequence[str]) -> str:
    """Run ``argv`` (found on PATH), return its stdout; CommandFailed when it cannot run or exits non-zero."""
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, check=False, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired, ValueError) as e:
        raise CommandFailed(f"`{' '.join(argv)}` failed: {e}") from None
    if proc.returncode != 0:
        raise CommandFailed(f"`{' '.join(argv)}` exited {proc.returncode}: {proc.stderr.strip()[:200]}")
    return proc.stdout


def on_mac() -> bool:
    """True on macOS, or when MAC_LLM_PLANNER_FAKE_DARWIN=1 (tests: stand-in commands on PATH)."""
    return sys.platform == "darwin" or os.environ.get(FAKE_ENV) == "1"


class MacFacts(BaseModel):
    """What the commands said, as read (None: the command failed or printed nothing usable)."""

    model_config = ConfigDict(frozen=True)
    brand: str                       # machdep.cpu.brand_string, e.g. "Apple M4 Pro"
    gpu_cores: int | None = None     # system_profiler SPDisplaysDataType: sppci_cores
    ram_bytes: int | None = None     # hw.memsize
    wired_limit_mb: int | None = None  # iogpu.wired_limit_mb (0: the macOS default limit)
    macos_version: str = ""          # sw_vers -productVersion
    cpu_cores_physical: int | None = None
    cpu_cores_logical: int | None = None
    cpu_cores_performance: int | None = None


def _int(s: str | None) -> int | None:
    return int(s) if s and s.strip().isdigit() else None


def gpu_cores_from_profiler(text: str) -> int | None:
    """``sppci_cores`` of the first display-data entry that has it (Apple silicon's GPU entry)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    items = data.get("SPDisplaysDataType", []) if isinstance(data, dict) else []
    for item in items if isinstance(items, list) else []:
        cores = item.get("sppci_cores") if isinstance(item, dict) else None
        if cores is not None and str(cores).strip().isdigit():
            return int(str(cores).strip())
    return None


def read_facts(run: CommandRunner = run_command) -> MacFacts:
    """Read the Mac through ``run`` (any exception from ``run`` = that fact is unknown). Raises CommandFailed when
    even the chip name cannot be read (not a Mac, or sysctl missing)."""

    def sysctl(key: str) -> str | None:
        try:
            return run(["sysctl", "-n", key]).strip() or None
        except Exception:  # noqa: BLE001 - an injected runner raises its own error type
            return None

    brand = sysctl("machdep.cpu.brand_string")
    if not brand:
        raise CommandFailed("sysctl -n machdep.cpu.brand_string printed nothing; is this macOS?")
    try:
        gpu = gpu_cores_from_profiler(run(["system_profiler", "SPDisplaysDataType", "-json"]))
    except Exception:  # noqa: BLE001
        gpu = None
    try:
        version = run(["sw_vers", "-productVersion"]).strip()
    except Exception:  # noqa: BLE001
        version = ""
    return MacFacts(brand=" ".join(brand.split()), gpu_cores=gpu, ram_bytes=_int(sysctl("hw.memsize")),
                    wired_limit_mb=_int(sysctl("iogpu.wired_limit_mb")),
                    macos_version=version if re.fullmatch(r"\d+(\.\d+)*", version) else "",
                    cpu_cores_physical=_int(sysctl("hw.physicalcpu")), cpu_cores_logical=_int(sysctl("hw.logicalcpu")),
                    cpu_cores_performance=_int(sysctl("hw.perflevel0.physicalcpu")))


class ThisMac(BaseModel):
    """The facts mapped to the planner: the chip profile (None when unknown) and the values to answer with."""

    model_config = ConfigDict(frozen=True)
    facts: MacFacts
    chip_id: str | None        # profiles/chips id, e.g. "m4-pro-20gpu"; None: not in the profiles
    chip_name: str | None = None  # the chip's name when the profiles know it ("M1 Max"), even if not its bin
    ram_gb: float | None       # hw.memsize in GiB (Apple's "GB")
    macos: str | None          # the macOS profile to answer with ("15" or "26"); None: unknown version
    wired_limit_mb: int | None  # the user's iogpu.wired_limit_mb when set (> 0), else None (macOS default)
    unknown: str | None = None  # why the chip is not mapped (one line), when chip_id is None
    note: str | None = None     # a caveat on a mapped chip (its profile is pre-launch)

    def headline(self) -> str:
        """'This Mac: M4 Pro 20-core GPU, 48 GB, macOS 26.1' (+ the GPU limit when set, + why the chip is unknown)."""
        f = self.facts
        chip = f.brand.removeprefix("Apple ").strip() or f.brand
        gpu = f" {f.gpu_cores}-core GPU" if f.gpu_cores else ""
        parts = [f"{chip}{gpu}"]
        if self.ram_gb is not None:
            parts.append(f"{self.ram_gb:g} GB")
        parts.append(f"macOS {f.macos_version}" if f.macos_version else "macOS version not read")
        if self.wired_limit_mb:
            parts.append(f"GPU limit {self.wired_limit_mb:,} MB (iogpu.wired_limit_mb)")
        line = "This Mac: " + ", ".join(parts)
        if self.unknown or self.note:
            line += f" — {self.unknown or self.note}"
        return line


def _macos_profile(version: str) -> str | None:
    """The macos profile for a version: the newest profile whose major is at most the Mac's (macos-15 covers 15
    and earlier, profiles/macos/macos-15.yaml); None when the version was not read."""
    from planner import profiles

    m = re.match(r"(\d+)", version or "")
    if not m:
        return None
    majors = sorted(int(k.removeprefix("macos-")) for k in profiles._index("macos") if k.removeprefix("macos-").isdigit())
    fit = [x for x in majors if x <= int(m.group(1))]
    return str(fit[-1]) if fit else (str(majors[0]) if majors else None)


def map_to_profile(facts: MacFacts) -> ThisMac:
    """Facts -> ThisMac: the chip profile of this brand and GPU core count, checked against the RAM sizes the
    profile says it was sold with; anything the profiles do not know is one line in ``unknown``."""
    from planner import profiles
    from planner.deployment import resolve_mac
    from planner.errors import PlannerError
    from planner.inputs import template

    ram_gb = facts.ram_bytes / 2**30 if facts.ram_bytes else None
    if ram_gb is not None and abs(ram_gb - round(ram_gb)) < 1e-9:
        ram_gb = float(round(ram_gb))
    wired = facts.wired_limit_mb if facts.wired_limit_mb else None
    macos = _macos_profile(facts.macos_version)
    name = facts.brand.removeprefix("Apple ").strip()
    update = "update mac-llm-planner for its speed, or name a known chip with --chip"
    known_names = {profiles.norm(c.name) for c in profiles.all_chips()}
    unknown = note = None
    chip_id = None
    if not facts.brand.startswith("Apple "):
        unknown = "not an Apple silicon chip: the planner answers for Apple GPUs (memory answers only)"
    elif profiles.norm(name) not in known_names:
        unknown = f"the {name} is not in this tool's chip profiles yet ({update}); memory answers only"
    else:
        try:
            mac = resolve_mac(name, facts.gpu_cores, ram_gb)
        except PlannerError as e:
            unknown = (f"this {name} configuration is not in the chip profiles ({' '.join(template(e).split())}; "
                       f"{update}); memory answers only")
        else:
            if mac.chip is not None and (facts.gpu_cores is not None or mac.bin_note is None):
                chip_id = mac.chip.id
                if mac.chip.status == "rumoured":   # this Mac exists; the profile's figures were announced ahead
                    note = "its chip profile is from before launch (status rumoured): speeds are estimates"
            elif mac.chip is not None:
                # GPU cores not read and the chip is sold in bins of different speed: name the chip and let the
                # deployment stage say which bin it answered for (its note), instead of picking one silently
                chip_id = None
                unknown = (f"GPU cores not read (system_profiler); the {name} comes in several bins: "
                           "give --gpu-cores for speed answers; memory answers only")
    chip_name = name if facts.brand.startswith("Apple ") and profiles.norm(name) in known_names else None
    return ThisMac(facts=facts, chip_id=chip_id, chip_name=chip_name, ram_gb=ram_gb, macos=macos,
                   wired_limit_mb=wired, unknown=unknown, note=note)


def detect(run: CommandRunner = run_command) -> ThisMac:
    """Read and map this Mac (CommandFailed when it cannot be read)."""
    return map_to_profile(read_facts(run))
