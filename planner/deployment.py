"""The deployment stage: where a command's Mac is resolved, once, the same way for every command.

A chip name with bins (M3 Max 30/40-core) is resolved without refusing: the RAM picks the bin where only one bin
sells it (Apple sells the 36 GB M3 Max only with the 30-core GPU); bins that give the same speed need no choice;
otherwise the slowest bin sold with that RAM (the base bin, the conservative answer) with a note naming the others.
A RAM size Apple does not sell for the chip but inside its range (a 32 GB M4 Pro) is answered as given, with a note;
one outside it (an 8 GB M3 Max, a 512 GB M4) is refused.
"""


from pydantic import BaseModel, PositiveFloat

from . import profiles
from ._model import Frozen, assemble
from .errors import InputError
from .schema import Chip


class Mac(BaseModel):
    """A resolved Mac: chip bin (None when only the RAM is known), unified memory, and how the bin was chosen."""

    model_config = Frozen
    chip: Chip | None
    ram_gb: PositiveFloat
    """Unified memory [GB]"""
    bin_note: str | None = None
    """How a binned chip was resolved without its GPU core count"""


def resolve_bin(name: str, gpu_cores: int | None, ram: float | None) -> tuple[Chip, str | None]:
    """-> (chip, note): the bin a chip name, GPU core count and RAM size name (see the module docstring)."""
    try:
        return profiles.resolve_chip(name, gpu_cores), None
    except InputError:
        if gpu_cores is not None:
            raise
    key = profiles.norm(name).removeprefix("apple-")
    bins = sorted((c for c in profiles.all_chips() if profiles.norm(c.name) == key), key=lambda c: c.gpu_cores)
    if ram is not None:
        fit = [c for c in bins if float(ram) in map(float, c.ram_options_gb)]
        if not fit:
            # a size between the chip's smallest and largest (M4 Pro 32 GB) is answered as given, with a note
            fit = [c for c in bins if min(c.ram_options_gb) <= ram <= max(c.ram_options_gb)]
            if not fit:
                sold = "; ".join(f"{c.gpu_cores}-core GPU: {', '.join(map(str, c.ram_options_gb))} GB" for c in bins)
                raise InputError(f"[[ram]] {ram:g}: the {bins[0].name} comes with {sold}")
        bins = fit
    first = bins[0]
    if len(bins) == 1:
        return first, None
    same = {(c.memory_bandwidth_gb_s, c.gpu_fp16_tflops) for c in bins}
    if len(same) == 1:
        return first, None
    others = ", ".join(f"{c.gpu_cores}-core ({c.memory_bandwidth_gb_s:g} GB/s)" for c in bins[1:])
    sold = " with this memory" if ram is not None else ""
    return first, (f"{first.name} without [[gpu_cores]]: answered for the {first.gpu_cores}-core GPU "
                   f"({first.memory_bandwidth_gb_s:g} GB/s), the slowest bin sold{sold}; also sold as "
                   f"{others}: add [[gpu_cores]] for that one")


def resolve_mac(chip: str | None, gpu_cores: int | None, ram: float | None) -> Mac:
    """Chip name + GPU cores + RAM -> Mac. Without a chip the RAM alone answers memory questions; without RAM the
    chip's largest option is assumed. Every command enters here."""
    if chip is None:
        if gpu_cores is not None:
            raise InputError("[[gpu_cores]] needs [[chip]] (e.g. [[chip]] 'M3 Max' [[gpu_cores]] 40)")
        if ram is None:
            raise InputError("give [[ram]] (e.g. [[ram]] 64) or [[chip]]")
        profiles.ram_gb_valid(ram)  # a size Macs come in: positive and finite, as Mac.ram_gb's gt=0 asks
        return assemble(Mac, chip=None, ram_gb=float(ram))
    c, note = resolve_bin(chip, gpu_cores, ram)
    ram_gb = float(max(c.ram_options_gb)) if ram is None else ram
    unsold = check_ram(c, ram_gb)  # raises unless within the chip's sizes: positive and finite (gt=0)
    if unsold:
        note = f"{note}; {unsold}" if note else unsold
    return assemble(Mac, chip=c, ram_gb=float(ram_gb), bin_note=note)


def check_ram(chip: Chip, ram_gb: float) -> str | None:
    """The one RAM rule for a known chip: a size Apple sells -> None; a size inside the chip's range that Apple does
    not sell (a 32 GB M4 Pro) -> the note that says so (answered as given, best effort); outside it -> InputError."""
    sold = ", ".join(map(str, chip.ram_options_gb))
    if int(ram_gb) == ram_gb and int(ram_gb) in chip.ram_options_gb:
        return None
    if not min(chip.ram_options_gb) <= ram_gb <= max(chip.ram_options_gb):
        raise InputError(f"[[ram]] {ram_gb:g}: the {chip.label} comes with {sold} GB")
    return f"Apple does not sell the {chip.label} with {ram_gb:g} GB (it comes with {sold} GB); answered as given"
