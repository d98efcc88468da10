"""The deployment stage: where a command's Mac is resolved, once, the same way for every command.

A chip name with bins (M3 Max 30/40-core) is resolved without refusing: the RAM picks the bin where only one bin
sells it (Apple sells the 36 GB M3 Max only with the 30-core GPU); bins that give the same speed need no choice;
otherwise the slowest bin sold with that RAM (the base bin, the conservative answer) with a note naming the others.
A RAM size Apple does not sell for the chip but inside its range (a 32 GB M4 Pro) is answered as given, with a note;
one outside it (an 8 GB M3 Max, a 512 GB M4) is refused.

A quantization in the other runtime's weight format (Q4_K_M asked of mlx-lm, 4bit of llama.cpp) is answered in
the runtime's own format at the same bit class, with a note (:class:`QuantConverted`): speed and size depend on
the bits, not on the file. Every command that takes a quantization resolves it here (:func:`resolve_quant`,
:func:`resolve_quants`).

A command that answers one runtime and was given none answers the runtime whose weight format the model pins: an
MLX name or folder (mlx-community/Qwen3-8B-4bit) mlx-lm, a GGUF name or file llama.cpp, else the format of the
asked quantization, else llama.cpp (:func:`resolve_runtime`; `plan` keeps the pinned format's runtimes the same
way, planner.plan.pinned_by_name). An explicit runtime that loads the other format is answered by the quant rule.
"""

import re
from typing import Literal

from pydantic import BaseModel, PositiveFloat

from . import profiles
from ._model import Frozen, assemble
from .errors import InputError, UnknownProfileError
from .schema import Chip, ModelProfile, QuantFormat, Runtime


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


# --------------------------------------------------------------------------- the quantization
class QuantConverted(BaseModel):
    """An asked quantization in the other weight format, answered in the runtime's format at the same bit class.
    The fields are the facts; :meth:`text` words them with input markers (each edge spells the input its own way)."""

    model_config = Frozen
    code: Literal["quant_converted"] = "quant_converted"
    asked: str
    asked_format: str
    runtime: str
    runtime_format: str
    answered: str
    bits: int
    pinned_by: str | None = None
    """The model name that pinned the asked preset (mlx-community/Qwen3-8B-4bit), when no quant was asked"""

    def text(self) -> str:
        what = (f"{self.pinned_by} holds {self.asked}, a {self.asked_format} format," if self.pinned_by
                else f"[[quant]] {self.asked} is a {self.asked_format} format")
        return (f"{what} and {self.runtime} loads {self.runtime_format} weights: answered for {self.answered}, the "
                f"same {self.bits}-bit class")


_GGUF_BY_BITS = {2: "Q2_K", 3: "Q3_K_M", 4: "Q4_K_M", 5: "Q5_K_M", 6: "Q6_K", 8: "Q8_0", 16: "F16"}


def resolve_quant(name: str, rt: Runtime, pinned_by: str | None = None) -> tuple[QuantFormat, QuantConverted | None]:
    """-> (quant, conversion). A format of the runtime's weight kind as is; one of the other kind (Q4_K_M on mlx-lm)
    as the same bit class in the runtime's own format (mlx-4bit-g64), said by the conversion; an unknown name is
    UnknownProfileError with close matches. ``pinned_by``: the model name the preset came from (none was asked)."""
    try:
        return profiles.load_quant(name, rt.weight_format), None
    except UnknownProfileError as first:
        other = "mlx" if rt.weight_format == "gguf" else "gguf"
        try:
            q = profiles.load_quant(name, other)
        except UnknownProfileError:
            raise first from None
    bits = quant_bits(q)
    target = (_GGUF_BY_BITS.get(bits) if rt.weight_format == "gguf"
              else ("bf16" if bits >= 16 else f"{bits}bit") if bits in (2, 3, 4, 5, 6, 8, 16) else None)
    if target is None:
        raise InputError(f"[[quant]] {name.strip()} is a {q.kind} format; {rt.id} loads {rt.weight_format} weights "
                         f"(e.g. {'Q4_K_M' if rt.weight_format == 'gguf' else '4bit'})")
    t = profiles.load_quant(target, rt.weight_format)
    return t, assemble(QuantConverted, asked=name.strip(), asked_format=q.kind, runtime=rt.id,
                       runtime_format=rt.weight_format, answered=t.id, bits=bits, pinned_by=pinned_by)


def name_quant(name: str, rt: Runtime) -> tuple[QuantFormat, str] | None:
    """-> (quant, note) of the preset a typed model name pins (``qwen3:8b-q8_0``, ``mlx-community/Qwen3-8B-8bit``:
    profiles.parse_name, as planner.plan.pinned_by_name) in this runtime's format (:func:`resolve_quant`), or None
    when the name pins none. The rule of every command that answers one quant (predict, finetune) without [[quant]]."""
    named = profiles.parse_name(name).quant
    if named is None:
        return None
    q, conv = resolve_quant(named, rt, pinned_by=name)
    return q, conv.text() if conv else f"quant {q.id} from the name {name} (give [[quant]] for another)"


# Without a quantization: the 4-bit class, the most common download of a local model (Ollama's library tags and
# mlx-community's default conversions), or the format the checkpoint itself ships in (gpt-oss's MXFP4 experts).
DEFAULT_QUANT = {"gguf": "Q4_K_M", "mlx": "4bit"}


def pick_quant(quant: str | None, name: str, model: ModelProfile, rt: Runtime) -> tuple[QuantFormat, str | None]:
    """-> (quant, note): the asked one; else the preset the typed model name pins (``qwen3:8b-q8_0``,
    ``mlx-community/Qwen3-8B-4bit``: name_quant), in this runtime's format; else the default (:func:`default_quant`)."""
    if quant is not None:
        return asked_quant(quant, rt)
    return name_quant(name, rt) or default_quant(model, rt)


def native_quant_id(model: ModelProfile, rt: Runtime) -> str | None:
    """The preset of the format the checkpoint ships in (gpt-oss: MXFP4) for this runtime's weights, if any."""
    nq = model.native_quant
    return None if nq is None else nq.preset_for(rt.weight_format)


def default_quant_id(model: ModelProfile, rt: Runtime) -> str:
    """The quant a command answers without one asked (predict, serve, cluster: :func:`pick_quant`): the checkpoint's own format, else
    DEFAULT_QUANT."""
    return native_quant_id(model, rt) or DEFAULT_QUANT[rt.weight_format]


def default_quant(model: ModelProfile, rt: Runtime) -> tuple[QuantFormat, str]:
    """-> (quant, note) when none was asked: :func:`default_quant_id`; the note says which, so the answer is never
    mistaken for the asked quantization."""
    q = profiles.load_quant(default_quant_id(model, rt), rt.weight_format)
    why = "the format the checkpoint ships in" if native_quant_id(model, rt) else "the most common download"
    return q, f"no [[quant]] given: answered for {q.id}, {why}; give [[quant]] for another"


def asked_quant(name: str, rt: Runtime) -> tuple[QuantFormat, str | None]:
    """-> (quant, note): the deployment stage's rule (:func:`resolve_quant`), its note worded."""
    q, conv = resolve_quant(name, rt)
    return q, conv.text() if conv is not None else None


def resolve_quants(names: list[str], runtimes: list[Runtime]) -> tuple[dict[str, list[QuantFormat]], list[str]]:
    """-> ({runtime id: its quants}, notes): asked quantizations for several runtimes at once, each answered
    somewhere. An asked format goes to the runtimes of its weight kind; one that none of them loads goes to every
    runtime converted (:func:`resolve_quant`), each conversion said once. A runtime left with none is left out
    with a note (the asked formats chose the other runtimes)."""
    for n in names:
        profiles.load_quant(n)  # an unknown name: UnknownProfileError with close matches
    out: dict[str, list[QuantFormat]] = {rt.id: [] for rt in runtimes}
    notes: list[str] = []
    for n in names:
        own = {rt.id: q for rt in runtimes if (q := _own(n, rt)) is not None}
        for rt in runtimes:
            if own:
                out[rt.id] += [own[rt.id]] if rt.id in own else []
                continue
            q, conv = resolve_quant(n, rt)
            out[rt.id].append(q)
            if conv is not None and conv.text() not in notes:
                notes.append(conv.text())
    notes += [f"{rt.id}: none of [[quant]] {', '.join(names)} is a {rt.weight_format} format; skipped"
              for rt in runtimes if not out[rt.id]]
    return {k: _unique(v) for k, v in out.items()}, notes


def _own(name: str, rt: Runtime) -> QuantFormat | None:
    """The asked format when it is one of the runtime's own weight kind, else None."""
    try:
        return profiles.load_quant(name, rt.weight_format)
    except UnknownProfileError:
        return None


def _unique(qs: list[QuantFormat]) -> list[QuantFormat]:
    return list({q.id: q for q in qs}.values())


def quant_bits(q: QuantFormat) -> int:
    """Nominal bits of a format: MLX's own field; GGUF from the preset name (Q4_K_M -> 4, IQ2_XS -> 2, F16 -> 16)."""
    if q.kind == "mlx":
        return q.bits or 16
    if q.id.startswith("MXFP4"):
        return 4
    m = re.search(r"(\d+)", q.id.replace("F16", "Q16").replace("F32", "Q16"))
    return int(m.group(1)) if m else 16


# --------------------------------------------------------------------------- the runtime
RUNTIME_OF_FORMAT = {"gguf": "llama.cpp", "mlx": "mlx-lm"}


def resolve_runtime(runtime: str | None, name: str | None = None, files_runtime: str | None = None,
                    quant: str | None = None) -> tuple[Runtime, str | None]:
    """-> (runtime, note): the asked runtime; without one, the runtime of the weight format the model pins (its
    files' runtime, ``files_runtime``, or its name: profiles.parse_name), else of the asked quant's format when it
    has only one, else llama.cpp. The note says where a pinned runtime came from."""
    if runtime is not None:
        return profiles.load_runtime(runtime), None
    fmt = (profiles.load_runtime(files_runtime).weight_format if files_runtime is not None
           else profiles.parse_name(name).weight_format if name else None)
    if fmt == "mlx":
        rt = profiles.load_runtime(files_runtime or RUNTIME_OF_FORMAT[fmt])
        return rt, f"{name} holds MLX weights: answered for {rt.id} (give [[runtime]] for another)"
    if fmt == "gguf":  # llama.cpp, as without a pinned format: nothing to say
        return profiles.load_runtime(files_runtime or RUNTIME_OF_FORMAT[fmt]), None
    kinds = [k for k in RUNTIME_OF_FORMAT if quant is not None and _loads(quant, k)]
    if kinds == ["mlx"]:
        rt = profiles.load_runtime(RUNTIME_OF_FORMAT["mlx"])
        return rt, f"[[quant]] {(quant or '').strip()} is an mlx format: answered for {rt.id} (give [[runtime]] for another)"
    return profiles.load_runtime(RUNTIME_OF_FORMAT["gguf"]), None


def _loads(quant: str, kind: str) -> bool:
    try:
        profiles.load_quant(quant, kind)
    except UnknownProfileError:
        return False
    return True


def pinned_by_names(names: list[str], runtimes: list[str] | None) -> tuple[list[str] | None, str | None, list[str]]:
    """-> (runtimes, quant, notes) for a command that sizes several models together (`plan buy`): without asked
    runtimes, names that all pin one weight format (mlx-community/...: MLX) keep the default runtimes of that
    format, as planner.plan.pinned_by_name does for one model; one name that pins a preset pins the quant."""
    specs = [profiles.parse_name(n) for n in names]
    fmts = {s.weight_format for s in specs}
    library = [note for n in names if (note := profiles.library_note(n))]  # bare Ollama names: the size read
    if runtimes is not None or len(fmts) != 1 or None in fmts:
        return runtimes, None, library
    fmt = specs[0].weight_format
    assert fmt is not None  # one format, not None (checked above)
    keep = [RUNTIME_OF_FORMAT[fmt]]
    notes = [*library, f"{', '.join(names)} {'holds' if len(names) == 1 else 'hold'} {fmt.upper()} weights: "
             f"answered for {keep[0]} (give [[runtime]] for another)"]
    quant = specs[0].quant if len(specs) == 1 else None
    if quant:
        notes.append(f"quant {quant} from the name {names[0]}")
    return keep, quant, notes
