"""Local model files: a GGUF (single or split) and a MLX / HF folder (config.json + safetensors headers)."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

from planner.results import WeightsEstimate

from .errors import SourceError, missing_part
from .ggufmeta import (
    GGUF_MAGIC,
    TensorInfo,
    config_from_gguf,
    exact_weights,
    quant_from_gguf,
)

SPLIT_RE = re.compile(r"^(?P<prefix>.*)-(?P<i>\d{5})-of-(?P<n>\d{5})\.gguf$", re.IGNORECASE)


HEADER_FIRST = 16 * 2**20    # first read [bytes]: a Llama 3 GGUF header (tokenizer included) is ~8 MiB
HEADER_MAX = 256 * 2**20     # refuse a header larger than this


def read_gguf(path: Path) -> tuple[dict, list[TensorInfo]]:
    """Metadata and tensor infos of one GGUF: the header and tensor table only, read in growing chunks and parsed
    by ggufmeta.parse_header (never the data region; GGUFReader's full parse took 20-90 s on a 70B file's
    tokenizer arrays). Every failure becomes one SourceError line."""
    from .ggufmeta import NeedMore, parse_header

    src = str(path)
    try:
        with open(path, "rb") as f:
            head = f.read(4)
            if head != GGUF_MAGIC:
                raise SourceError(f"{src} is not a valid GGUF (wrong magic {head[:4]!r}): re-download it")
            size = HEADER_FIRST
            while True:
                f.seek(0)
                buf = f.read(size)
                try:
                    return _parse(parse_header, buf, src)
                except NeedMore:
                    if len(buf) < size:
                        raise SourceError(f"{src} is not a valid GGUF (header ends after {len(buf):,} bytes, the "
                                          "file is truncated): re-download it") from None
                    if size >= HEADER_MAX:
                        raise SourceError(f"{src} is not a valid GGUF (header over {HEADER_MAX >> 20} MiB): "
                                          "re-download it") from None
                    size *= 4
    except OSError as e:
        raise SourceError(f"{src}: cannot read ({e.strerror or e.__class__.__name__}); check the path") from None


def _parse(parse_header, buf: bytes, src: str):
    from .ggufmeta import NeedMore

    try:
        return parse_header(buf, src)
    except (SourceError, NeedMore):
        raise
    except ImportError as e:
        raise missing_part(e, f"reading {src}") from None
    except Exception as e:  # noqa: BLE001 - a damaged header raises anything
        msg = str(e).splitlines()[0][:80] if str(e) else e.__class__.__name__
        raise SourceError(f"{src} is not a valid GGUF ({e.__class__.__name__}: {msg}): re-download it") from None


def gguf_shards(path: Path) -> list[Path]:
    m = SPLIT_RE.match(path.name)
    if not m:
        return [path]
    n = int(m["n"])
    shards = [path.with_name(f"{m['prefix']}-{i:05d}-of-{n:05d}.gguf") for i in range(1, n + 1)]
    missing = [s.name for s in shards if not s.is_file()]
    if missing:
        raise SourceError(f"{path}: split GGUF is missing {', '.join(missing[:3])}; download all {n} parts")
    return shards


def find_mmproj(path: Path) -> Path | None:
    """A vision projector next to the model (llama.cpp tools/mtmd: --mmproj mmproj-*.gguf)."""
    cands = sorted(p for p in path.parent.glob("*.gguf") if "mmproj" in p.name.lower() and p != path)
    if not cands:
        return None
    f16 = [p for p in cands if "f16" in p.name.lower()]
    return (f16 or cands)[0]


def load_gguf(path: Path):
    """-> (config, exact weights, quant id, notes, files)."""
    shards = gguf_shards(path)
    kv, tensors = read_gguf(shards[0])
    for s in shards[1:]:
        tensors += read_gguf(s)[1]
    notes = []
    if len(shards) > 1:
        notes.append(f"split GGUF: summed {len(shards)} shards")
    cfg, more = config_from_gguf(kv, tensors, str(path))
    notes += more
    vision = 0
    files = [str(s) for s in shards]
    mm = find_mmproj(path) if "mmproj" not in path.name.lower() else None
    if mm is not None:
        vision = sum(t.n_bytes for t in read_gguf(mm)[1])
        notes.append(f"vision projector {mm.name} counted ({vision / 2**20:,.0f} MiB)")
        files.append(str(mm))
    w = exact_weights(tensors, vision)
    return cfg, w, quant_from_gguf(kv, path.name), notes, files


# --------------------------------------------------------------------------- safetensors
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "U32": 4, "I16": 2, "U16": 2,
               "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "F4": 0.5}
VISION_PREFIXES = ("vision_tower", "vision_model", "multi_modal_projector", "model.vision_tower", "model.visual",
                   "visual.", "model.vision_model", "model.multi_modal_projector", "mm_projector", "vision_embed",
                   "embed_vision", "model.embed_vision", "language_model.vision")


def read_safetensors_header(path: Path) -> dict:
    """The JSON header of a .safetensors file: u64 little-endian length + JSON (safetensors format spec)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(8)
            if len(raw) < 8:
                raise ValueError("shorter than 8 bytes")
            (n,) = struct.unpack("<Q", raw)
            if n > 100 * 2**20:
                raise ValueError(f"header of {n} bytes")
            data = f.read(n)
            if len(data) < n:
                raise ValueError("truncated header")
        hdr = json.loads(data)
        if not isinstance(hdr, dict):
            raise ValueError("header is not an object")
        return hdr
    except (OSError, ValueError) as e:
        raise SourceError(f"{path} is not a valid safetensors file ({e}): re-download it") from None


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
    out = []
    for name, t in hdr.items():
        if name == "__metadata__":
            continue
        try:
            a, b = t["data_offsets"]
            out.append((name, str(t["dtype"]), list(t["shape"]), int(b) - int(a)))
        except (KeyError, TypeError, ValueError):
            raise SourceError(f"{src}: tensor {name!r} has a malformed safetensors entry; re-download it") from None
    return out


def read_config_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise SourceError(f"{path}: cannot read ({e.strerror or e.__class__.__name__})") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise SourceError(f"{path} is not valid JSON ({str(e).splitlines()[0][:60]}); fix or re-download it") from None
    if not isinstance(data, dict):
        raise SourceError(f"{path}: expected a JSON object; fix or re-download it")
    return data


def load_folder(path: Path):
    """-> (raw config, entries) for a MLX or HF folder."""
    raw = read_config_json(path / "config.json")
    entries = []
    for f in sorted(path.glob("*.safetensors")):
        entries += header_entries(read_safetensors_header(f), str(f))
    return raw, entries
