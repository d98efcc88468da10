"""Input bounds of every reader, checked where bytes enter and before any allocation sized by a declared count.

One place for the limits (docs/model-facts.md §7.1 lists them with the largest real values they leave room for),
plus the helpers that enforce them: ``open_regular`` (no FIFOs, devices or folders), ``read_capped`` (at most N
bytes), ``loads_json`` (bounded size and nesting) and ``check_layers``.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import IO

from planner import bounded_read as _br
from planner.schema import MAX_LAYERS

from .errors import SourceError

MiB = 2**20
# config.json: the largest published ones (Qwen3-VL, Llama 4 with id2label tables) are under 100 KiB
MAX_CONFIG_BYTES = 4 * MiB
MAX_JSON_DEPTH = 64            # real configs nest 3 deep (text_config.rope_scaling.{...})
# safetensors JSON header: real shards (DeepSeek-V3, ~1,000 tensors each) have headers under 1 MiB; the format
# allows 100 MB (safetensors spec), which parses to far more than our memory bound
MAX_ST_HEADER_BYTES = 16 * MiB
MAX_ST_TENSORS = 1 << 17       # per file; unpacked-expert shards hold a few thousand
# GGUF header (metadata + tensor infos, ggml docs/gguf.md): ~12 MB for a 262k-token vocab with merges
MAX_GGUF_HEADER_BYTES = 64 * MiB
MAX_GGUF_KV = 1 << 16          # real files carry 30-60 keys
MAX_GGUF_TENSORS = 1 << 16     # Llama 3.1 405B: 1,138; DeepSeek-V3 (experts packed): 1,025
MAX_GGUF_ARRAY = 1 << 21       # items per array; largest real vocab 262,208 (Gemma 3)
MAX_GGUF_STRING = 1 << 24      # bytes per string; a chat template is ~10 KB
MAX_GGUF_DIMS = 8
# tensors: one tensor at most 2^40 elements, a model at most 2^44 (17.6 T params; the largest real is ~1 T)
MAX_TENSOR_ELEMENTS = 1 << 40
MAX_MODEL_PARAMS = 1 << 44
# hub: every HTTP body is capped and every call has an overall deadline (the client's timeouts are per read)
MAX_HUB_JSON_BYTES = 32 * MiB  # model_info with files_metadata for a repo of ~2,000 files is ~1 MiB
HUB_DEADLINE_S = 60.0          # one hub call (model_info, one ranged read, config.json); HF_HUB_DEADLINE overrides
# one model: at most MAX_SHARDS files read (a request each), all within HUB_TOTAL_DEADLINE_S. Real repos: Llama 3.1
# 405B has 191 safetensors shards, DeepSeek-V3 163; split GGUFs have under 100 parts
MAX_SHARDS = 1_000
HUB_TOTAL_DEADLINE_S = 300.0   # HF_HUB_TOTAL_DEADLINE overrides


def check_layers(n, source: str, key: str = "num_hidden_layers") -> int:
    """A layer count as an int in 1..MAX_LAYERS, checked before any per-layer list is built."""
    if isinstance(n, bool) or not isinstance(n, int) or not 0 < n <= MAX_LAYERS:
        raise SourceError(f"{source}: {key} is {_short(n)}, expected an integer from 1 to {MAX_LAYERS}; "
                          "fix the config or re-download it")
    return n


def check_pattern(p, source: str, key: str = "sliding_window_pattern") -> int:
    """A sliding-window pattern (every p-th layer is global) as an int in 1..MAX_LAYERS."""
    if isinstance(p, bool) or not isinstance(p, int) or not 0 < p <= MAX_LAYERS:
        raise SourceError(f"{source}: {key} is {_short(p)}, expected an integer from 1 to {MAX_LAYERS}; "
                          "fix the config or re-download it")
    return p


def _short(v) -> str:
    s = repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


def open_regular(path: Path, source: str | None = None) -> IO[bytes]:
    """Open a regular file for reading without blocking: a FIFO, device or folder is refused (the one bounded
    reader, planner.bounded_read, with the model readers' error and advice)."""
    return _br.open_regular(path, source, SourceError, "point at the model file")


def is_regular(path: Path) -> bool:
    """True for a regular file (following links); False for FIFOs, devices, folders, broken links, errors."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def read_capped(path: Path, cap: int, source: str | None = None, what: str = "file") -> bytes:
    """The bytes of a regular file of at most ``cap`` bytes; larger files are refused without reading them."""
    return _br.read_capped(path, cap, source, what, SourceError, "point at the model file")


def loads_json(data: bytes | str, source: str, cap: int = MAX_CONFIG_BYTES, what: str = "JSON"):
    """json.loads with a size cap and a nesting cap (deep nesting would raise RecursionError)."""
    if len(data) > cap:
        raise SourceError(f"{source}: {what} larger than {cap // MiB} MiB; is this the right file?")
    try:
        obj = json.loads(data)
    except RecursionError:
        raise SourceError(f"{source}: {what} nested deeper than {MAX_JSON_DEPTH} levels; fix or re-download it") \
            from None
    except (ValueError, UnicodeDecodeError) as e:
        raise SourceError(f"{source} is not valid JSON ({str(e).splitlines()[0][:60]}); fix or re-download it") \
            from None
    if _depth(obj) > MAX_JSON_DEPTH:
        raise SourceError(f"{source}: {what} nested deeper than {MAX_JSON_DEPTH} levels; fix or re-download it")
    return obj


def _depth(obj) -> int:
    """Nesting depth, iteratively (no recursion on hostile input)."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        o, d = stack.pop()
        if isinstance(o, dict | list):
            deepest = max(deepest, d)
            if d > MAX_JSON_DEPTH:
                return d
            stack.extend((v, d + 1) for v in (o.values() if isinstance(o, dict) else o))
    return deepest


def hub_deadline() -> float:
    try:
        v = float(os.environ.get("HF_HUB_DEADLINE") or HUB_DEADLINE_S)
    except ValueError:
        return HUB_DEADLINE_S
    return v if 0 < v < 3600 else HUB_DEADLINE_S


def hub_total_deadline() -> float:
    try:
        v = float(os.environ.get("HF_HUB_TOTAL_DEADLINE") or HUB_TOTAL_DEADLINE_S)
    except ValueError:
        return HUB_TOTAL_DEADLINE_S
    return v if 0 < v < 86400 else HUB_TOTAL_DEADLINE_S


def check_shards(n: int, source: str, what: str) -> None:
    """A model split into at most MAX_SHARDS files (each costs a request); checked before the first one is read."""
    if n > MAX_SHARDS:
        raise SourceError(f"{source}: {what} of {n:,} files, over {MAX_SHARDS:,} (the largest real model has ~200); "
                          "is this the right repo?")
