"""Local model files: a GGUF (single or split) and a MLX / HF folder (config.json + safetensors headers)."""

from __future__ import annotations

import re
import struct
from pathlib import Path

from planner.results import WeightsEstimate

from .bounds import (
    MAX_CONFIG_BYTES,
    MAX_ST_HEADER_BYTES,
    MAX_ST_TENSORS,
    MAX_TENSOR_ELEMENTS,
    check_shards,
    is_regular,
    loads_json,
    open_regular,
    read_capped,
)
from .errors import SourceError, missing_part
from .ggufmeta import (
    TensorInfo,
    check_tensors,
    config_from_gguf,
    exact_weights,
    mtp_layers,
    quant_from_gguf,
    read_header,
)

SPLIT_RE = re.compile(r"^(?P<prefix>.*)-(?P<i>\d{5})-of-(?P<n>\d{5})\.gguf$", re.IGNORECASE)


def read_gguf(path: Path) -> tuple[dict, list[TensorInfo]]:
    """Metadata and tensor infos of one GGUF, parsed by the bounded header reader shared with the hub path
    (ggufmeta.read_header): only the header is read, a few MB even for a 400 GB model, and every declared count
    is checked against sources/bounds.py before anything is built. Every failure is one SourceError line."""
    src = str(path)
    with open_regular(path, src) as f:
        try:
            return read_header(f, src)
        except SourceError:
            raise
        except OSError as e:
            raise SourceError(f"{src}: cannot read ({e.strerror or e.__class__.__name__}); check the path") from None
        except ImportError as e:
            raise missing_part(e, f"reading {src}") from None


def gguf_shards(path: Path) -> list[Path]:
    m = SPLIT_RE.match(path.name)
    if not m:
        return [path]
    i, n = int(m["i"]), int(m["n"])
    if not 1 <= i <= n:
        raise SourceError(f"{path}: split GGUF part {i} of {n} is not a valid part number; check the file name")
    check_shards(n, str(path), "a split GGUF")
    shards = [path.with_name(f"{m['prefix']}-{i:05d}-of-{n:05d}.gguf") for i in range(1, n + 1)]
    missing = [s.name for s in shards if not is_regular(s)]
    if missing:
        raise SourceError(f"{path}: split GGUF is missing {', '.join(missing[:3])}; download all {n} parts")
    return shards


def find_mmproj(path: Path) -> Path | None:
    """A vision projector next to the model (llama.cpp tools/mtmd: --mmproj mmproj-*.gguf)."""
    cands = sorted(p for p in _glob(path.parent, "*.gguf") if "mmproj" in p.name.lower() and p != path)
    if not cands:
        return None
    f16 = [p for p in cands if "f16" in p.name.lower()]
    return (f16 or cands)[0]


def load_gguf(path: Path):
    """-> (config, exact weights, quant id, notes, files, title: general.name or None)."""
    shards = gguf_shards(path)
    parts = [(*read_gguf(s), _size(s)) for s in shards]
    kv = parts[0][0]
    tensors = [t for _, ts, _ in parts for t in ts]
    cfg, more = config_from_gguf(kv, tensors, str(path))
    notes = check_tensors(parts, str(path))  # no tensors, parts of two models, data past the end: one line
    if len(shards) > 1:
        notes.append(f"split GGUF: summed {len(shards)} shards")
    notes += more
    vision = 0
    files = [str(s) for s in shards]
    mm = find_mmproj(path) if "mmproj" not in path.name.lower() else None
    if mm is not None:
        vision = sum(t.n_bytes for t in read_gguf(mm)[1])
        notes.append(f"vision projector {mm.name} counted ({vision / 2**20:,.0f} MiB)")
        files.append(str(mm))
    w = exact_weights(tensors, vision, mtp_layers(cfg))
    qid = None if any("general.file_type says" in n for n in notes) else quant_from_gguf(kv, path.name)
    return cfg, w, qid, notes, files, gguf_title(kv)


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None
def gguf_title(kv: dict) -> str | None:
    """general.name (GGUF spec: "the name of the model ... human-readable"), one printable line of at most 120
    characters; None when absent, empty or not text."""
    name = kv.get("general.name")
    if not isinstance(name, str):
        return None
    name = " ".join("".join(c if c.isprintable() else " " for c in name).split())[:120]
    return name or None


# --------------------------------------------------------------------------- safetensors
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "U32": 4, "I16": 2, "U16": 2,
               "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "F4": 0.5}
VISION_PREFIXES = ("vision_tower", "vision_model", "multi_modal_projector", "model.vision_tower", "model.visual",
                   "visual.", "model.vision_model", "model.multi_modal_projector", "mm_projector", "vision_embed",
                   "embed_vision", "model.embed_vision", "language_model.vision")


def read_safetensors_header(path: Path) -> dict:
    """The JSON header of a .safetensors file: u64 little-endian length + JSON (safetensors format spec), at most
    MAX_ST_HEADER_BYTES and MAX_JSON_DEPTH deep; only the header is read."""
    src = str(path)
    try:
        with open_regular(path, src) as f:
            raw = f.read(8)
            if len(raw) < 8:
                raise ValueError("shorter than 8 bytes")
            (n,) = struct.unpack("<Q", raw)
            if n > MAX_ST_HEADER_BYTES:
                raise ValueError(f"header of {n} bytes, over {MAX_ST_HEADER_BYTES // 2**20} MiB")
            data = f.read(n)
            if len(data) < n:
                raise ValueError("truncated header")
    except OSError as e:
        raise SourceError(f"{src}: cannot read ({e.strerror or e.__class__.__name__}); check the path") from None
    except ValueError as e:
        raise SourceError(f"{src} is not a valid safetensors file ({e}): re-download it") from None
    hdr = loads_json(data, f"{src} (safetensors header)", cap=MAX_ST_HEADER_BYTES, what="header")
    if not isinstance(hdr, dict):
        raise SourceError(f"{src} is not a valid safetensors file (header is not an object): re-download it")
    return hdr


def st_group(name: str) -> str:
    """HF/MLX tensor name -> our tensor group."""
    n = name.removeprefix("language_model.").removeprefix("model.language_model.")
    if n.startswith(VISION_PREFIXES) or name.startswith(VISION_PREFIXES):
        return "vision"
    if "embed_tokens" in n or n.endswith("wte.weight"):
        return "embedding"
    if n.startswith("lm_head"):
        return "output"
    parts = n.split(".")
    if len(parts) >= 2 and "norm" in parts[-2]:
        return "norm"
    if ".experts." in n or "switch_mlp" in n:
        return "experts"
    if "shared_expert" in n and "shared_expert_gate" not in n:
        return "shared_experts"
    if re.search(r"\.(mlp|block_sparse_moe)\.(gate|router)\.", n) or "shared_expert_gate" in n:
        return "router"
    if ".bias" in n and "attn" in n:
        return "norm"
    if any(k in n for k in ("self_attn", "attention", "linear_attn", "mixer")):
        return "attention"
    if any(k in n for k in ("mlp", "feed_forward", "ffn")):
        return "ffn"
    return "other"


def safetensors_weights(entries: list[tuple[str, str, list[int], int]], n_params: int) -> WeightsEstimate:
    """entries: (name, dtype, shape, bytes) -> exact bytes per group; vision tensors split off."""
    by_group: dict[str, int] = {}
    by_type: dict[str, int] = {}
    vision = 0
    for name, dtype, _shape, nb in entries:
        grp = st_group(name)
        if grp == "vision":
            vision += nb
            continue
        by_group[grp] = by_group.get(grp, 0) + nb
        by_type[dtype] = by_type.get(dtype, 0) + nb
    total = sum(by_group.values())
    return WeightsEstimate(total_bytes=total, n_params=n_params, bits_per_weight=8 * total / n_params if n_params else 0,
                           by_group=by_group, by_type=by_type, vision_bytes=vision, exact=True)


def header_entries(hdr: dict, src: str) -> list[tuple[str, str, list[int], int]]:
    """(name, dtype, shape, bytes) of each tensor of a safetensors header; a shape or offset that is not a list of
    non-negative integers within MAX_TENSOR_ELEMENTS is one SourceError line."""
    if len(hdr) > MAX_ST_TENSORS:
        raise SourceError(f"{src}: {len(hdr)} tensors in one safetensors header (limit {MAX_ST_TENSORS}); "
                          "re-download it")
    out = []
    for name, t in hdr.items():
        if name == "__metadata__":
            continue
        try:
            a, b = t["data_offsets"]
            shape = t["shape"]
            dtype = t["dtype"]
            if not (isinstance(dtype, str) and isinstance(shape, list) and _nat(a) and _nat(b) and a <= b
                    and all(_nat(d) for d in shape) and len(shape) <= 8):
                raise ValueError
            n = 1
            for d in shape:
                n *= d
                if n > MAX_TENSOR_ELEMENTS:
                    raise ValueError
            out.append((name, dtype, list(shape), b - a))
        except (KeyError, TypeError, ValueError):
            raise SourceError(f"{src}: tensor {str(name)[:60]!r} has a malformed safetensors entry (dtype, shape "
                              "and data_offsets must be a string and non-negative integers); re-download it") from None
    return out


def _nat(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 1 << 62


def read_config_json(path: Path) -> dict:
    """A config.json as a dict: a regular file of at most MAX_CONFIG_BYTES, nested at most MAX_JSON_DEPTH deep."""
    data = read_capped(path, MAX_CONFIG_BYTES, what="config.json")
    obj = loads_json(data, str(path))
    if not isinstance(obj, dict):
        raise SourceError(f"{path}: expected a JSON object; fix or re-download it")
    return obj


def _glob(folder: Path, pattern: str) -> list[Path]:
    """Regular files of a folder matching ``pattern`` (FIFOs, devices and folders named *.gguf are skipped: reading
    them blocks or never ends); a folder that can be listed but not entered is one SourceError."""
    try:
        return sorted(p for p in folder.glob(pattern) if is_regular(p))
    except OSError as e:
        raise SourceError(f"{folder}: cannot list ({e.strerror or e.__class__.__name__}); check its permissions") \
            from None


def load_folder(path: Path):
    """-> (raw config, entries) for a MLX or HF folder."""
    raw = read_config_json(path / "config.json")
    entries = []
    for f in _glob(path, "*.safetensors"):
        entries += header_entries(read_safetensors_header(f), str(f))
    return raw, entries
