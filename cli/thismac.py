"""On a Mac, a command asked without --chip/--ram answers for the machine it runs on (sources/thismac.py reads it).

:func:`fill` adds the detected Mac's flags (--chip <profile id>, --ram, and --wired-limit / --macos where the
command takes them and the user did not give them) to the command line, and prints the first line of the answer,
``This Mac: M4 Pro 20-core GPU, 48 GB, macOS 26.1`` (on stderr with --json, so stdout stays JSON). A chip the
profiles do not know is said on that line and only the RAM is filled in (memory answers), never another bin.
Off a Mac (sources.thismac.on_mac() False) the command line is returned unchanged.
"""

from __future__ import annotations

import sys

# command (None: the plain `plan --model ...` question) -> the Mac flags it takes
MAC_FLAGS: dict[str | None, tuple[str, ...]] = {
    None: ("--chip", "--ram", "--wired-limit", "--macos"),
    "recommend": ("--chip", "--ram", "--wired-limit", "--macos"),
    "finetune": ("--chip", "--ram", "--wired-limit", "--macos"),
    "predict": ("--chip", "--ram", "--macos"),
    "serve": ("--chip", "--ram", "--macos"),
    "models": ("--chip", "--ram", "--macos"),
    "running": ("--chip", "--ram", "--wired-limit", "--macos"),
}
# a user who names either asks about a Mac of their choosing: nothing is detected (--gpu-cores alone names the
# bin of this Mac's chip, e.g. when system_profiler could not be read)
GIVEN_MAC = ("--chip", "--ram")


def _given(argv: list[str], flag: str) -> bool:
    return any(a == flag or a.startswith(flag + "=") for a in argv)


def command_of(argv: list[str]) -> tuple[bool, str | None]:
    """(detection applies, command) for a command line."""
    if not argv or _given(argv, "--help") or "-h" in argv:
        return False, None
    first = argv[0]
    if first.startswith("-"):
        return True, None
    if first not in MAC_FLAGS:
        return False, first
    if first == "models" and all(a == "--json" for a in argv[1:]):
        return False, first   # `plan models` alone lists the catalog, as everywhere
    return True, first


def fill(argv: list[str], detect=None) -> list[str]:
    """``argv`` with this Mac's flags added when the command takes them and neither --chip nor --ram is given; prints the ``This Mac:`` line. Unchanged off a Mac or when the Mac cannot be read (one note line)."""
    from sources import thismac

    if not thismac.on_mac():
        return argv
    applies, cmd = command_of(argv)
    if not applies or any(_given(argv, f) for f in GIVEN_MAC):
        return argv
    from planner.errors import PlannerError

    try:
        mac = (detect or thismac.detect)()
    except (thismac.CommandFailed, PlannerError) as e:
        print(f"plan: note: could not read this Mac ({' '.join(str(e).split())}); give --chip and --ram",
              file=sys.stderr)
        return argv
    takes = MAC_FLAGS[cmd]
    extra: list[str] = []
    if _given(argv, "--gpu-cores") and mac.chip_name is not None:
        extra += ["--chip", mac.chip_name]   # the user's GPU core count picks the bin
    elif mac.chip_id is not None:
        extra += ["--chip", mac.chip_id]
    if mac.ram_gb is not None:
        extra += ["--ram", f"{mac.ram_gb:g}"]
    if mac.wired_limit_mb and "--wired-limit" in takes and not _given(argv, "--wired-limit"):
        extra += ["--wired-limit", str(mac.wired_limit_mb)]
    if mac.macos and "--macos" in takes and not _given(argv, "--macos"):
        extra += ["--macos", mac.macos]
    from .words import say

    out = sys.stderr if "--json" in argv else sys.stdout
    print(say(mac.headline()), file=out, flush=True)
    return [*argv, *extra]
