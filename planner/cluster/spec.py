"""Parse the Macs of a cluster ("2x Mac Studio M3 Ultra 512GB, 1x MacBook Pro M4 Max 128GB") into cluster nodes.

Each item: optional count (``2x``, ``2 x``, ``2×``), a product family (Mac Studio, Mac mini, MacBook Pro, MacBook Air,
iMac, Mac Pro; optional), a chip name (``M3 Ultra``), optional GPU cores (``80-core``, ``80gpu``) and the RAM
(``512GB``). A catalogued Mac (profiles/macs) is used when one matches; otherwise the chip bin that offers that RAM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import profiles
from ..errors import InputError
from ..schema import Chip

MAX_NODES = 64
FAMILIES = ["mac studio", "mac mini", "macbook pro", "macbook air", "imac", "mac pro"]
DISPLAY = {"mac studio": "Mac Studio", "mac mini": "Mac mini", "macbook pro": "MacBook Pro",
           "macbook air": "MacBook Air", "imac": "iMac", "mac pro": "Mac Pro"}
_ITEM = re.compile(r"^\s*(?:(\d+)\s*[x×*]\s*)?(.*?)\s*$", re.IGNORECASE)
_CHIP = re.compile(r"\b(m\d)(?:\s*(pro|max|ultra))?\b", re.IGNORECASE)
_RAM = re.compile(r"\b(\d+)\s*(gb|g|gib)\b", re.IGNORECASE)
_CORES = re.compile(r"\b(\d+)[\s-]*(?:core[\s-]*)?gpu\b|\b(\d+)[\s-]*core\b", re.IGNORECASE)


@dataclass(frozen=True)
class Node:
    """One Mac of the cluster. ``label`` is what the user will recognise."""

    label: str
    chip: Chip
    ram_gb: int
    mac_id: str | None = None
    price_usd: float | None = None


def _bad(item: str, why: str) -> InputError:
    shown = item.strip() if len(item.strip()) <= 80 else item.strip()[:60] + "..."
    return InputError(f"[[macs]] {shown!r}: {why} (e.g. [[macs]] \"2x Mac Studio M3 Ultra 512GB, "
                      f"1x MacBook Pro M4 Max 128GB\")")


def _check_family(item: str, fam: str, chip_name: str, chips: list[Chip]) -> None:
    """The product family must offer this chip (any GPU bin): no Mac mini with an M3 Ultra."""
    named = [x for x in profiles.all_macs() if x.chip in {c.id for c in chips}]
    if named and not any(x.product.lower().startswith(fam) for x in named):
        offered = sorted({x.product for x in named})
        raise _bad(item, f"no {DISPLAY[fam]} with an {chip_name} in the catalog (it comes in {', '.join(offered)})")


def _int(digits: str, item: str, what: str) -> int:
    """A count or size of at most 7 digits: 5,000 digits exceed Python's int-from-string limit (a traceback)."""
    if len(digits) > 7:
        raise _bad(item, f"the {what} {digits[:12]}... has {len(digits):,} digits")
    return int(digits)


def parse_item(item: str) -> tuple[int, Node]:
    m = _ITEM.match(item)
    count = _int(m.group(1), item, "count") if m and m.group(1) else 1
    text = (m.group(2) if m else item).strip()
    if count < 1 or count > MAX_NODES:
        raise _bad(item, f"count must be 1..{MAX_NODES}")
    low = text.lower()
    fam = next((f for f in FAMILIES if low.startswith(f) or f" {f}" in f" {low}"), None)
    cm = _CHIP.search(text)
    if not cm:
        raise _bad(item, "no chip name found (M1..M5, optionally Pro/Max/Ultra)")
    chip_name = (cm.group(1).upper() + (f" {cm.group(2).capitalize()}" if cm.group(2) else ""))
    rm = _RAM.search(text)
    if not rm:
        raise _bad(item, "no RAM size found (e.g. 128GB)")
    ram = _int(rm.group(1), item, "RAM size")
    cores_m = _CORES.search(text)
    cores = _int(cores_m.group(1) or cores_m.group(2), item, "GPU core count") if cores_m else None
    chips = [c for c in profiles.all_chips() if c.name.lower() == chip_name.lower()]
    if not chips:
        raise _bad(item, f"unknown chip {chip_name}; known: {', '.join(profiles.chip_names())}")
    if fam:
        _check_family(item, fam, chip_name, chips)
    if cores is not None:
        chips = [c for c in chips if c.gpu_cores == cores]
        if not chips:
            raise _bad(item, f"{chip_name} has no {cores}-core GPU bin")
    macs = [x for x in profiles.all_macs() if x.chip in {c.id for c in chips}]
    if fam:
        macs = [x for x in macs if x.product.lower().startswith(fam)]
    exact = [x for x in macs if x.ram_gb == ram]
    by_ram = [c for c in chips if ram in c.ram_options_gb]
    if not by_ram:
        opts = sorted({r for c in chips for r in c.ram_options_gb})
        raise _bad(item, f"{chip_name} comes with {', '.join(map(str, opts))} GB, not {ram} GB")
    if exact:
        mac = min(exact, key=lambda x: x.price_usd)
        chip = next(c for c in chips if c.id == mac.chip)
        label = f"{mac.product} {chip.name} {chip.gpu_cores}-core {ram}GB"
        return count, Node(label=label, chip=chip, ram_gb=ram, mac_id=mac.id, price_usd=mac.price_usd)
    if len(by_ram) > 1:
        bins = " or ".join(f"{c.gpu_cores}-core" for c in by_ram)
        raise _bad(item, f"{chip_name} {ram}GB comes with a {bins} GPU; add the core count, e.g. "
                         f"'{chip_name} {by_ram[-1].gpu_cores}-core {ram}GB'")
    chip = by_ram[0]
    prod = DISPLAY[fam] if fam else "Mac"
    return count, Node(label=f"{prod} {chip.name} {chip.gpu_cores}-core {ram}GB", chip=chip, ram_gb=ram)


def parse_macs(spec: str) -> list[Node]:
    """The whole spec of the Macs -> one Node per Mac, in the order given (the first is the head node)."""
    if not spec or not spec.strip():
        raise InputError("[[macs]] is empty; e.g. [[macs]] \"2x Mac Studio M3 Ultra 512GB\"")
    nodes: list[Node] = []
    for item in re.split(r"[,;+]", spec):
        if not item.strip():
            continue
        n, node = parse_item(item)
        nodes += [node] * n
    if len(nodes) > MAX_NODES:
        raise InputError(f"[[macs]]: {len(nodes)} Macs; at most {MAX_NODES} are modelled")
    return nodes
