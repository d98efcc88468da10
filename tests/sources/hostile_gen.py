"""Small hostile model files: a few hundred bytes (or a few MB) that declare gigabytes, loop forever or nest deep.

Each builder writes into a folder and returns the path to pass as ``--model``. Layout of a GGUF header:
ggml docs/gguf.md (magic, version u32, n_tensors u64, n_kv u64, then key/value pairs and tensor infos).
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

T_U32, T_STRING, T_ARRAY = 4, 8, 9
GOOD_CFG = {"model_type": "mistral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
            "max_position_embeddings": 32768}


def gstr(s: str | bytes) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gguf_head(n_tensors: int, n_kv: int) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv)


def kv_u32(key: str, v: int) -> bytes:
    return gstr(key) + struct.pack("<II", T_U32, v)


def kv_str(key: str, v: str) -> bytes:
    return gstr(key) + struct.pack("<I", T_STRING) + gstr(v)


def llama_kv(n_layers: int = 2) -> list[bytes]:
    """The keys config_from_gguf needs for a tiny llama."""
    return [kv_str("general.architecture", "llama"), kv_u32("llama.block_count", n_layers),
            kv_u32("llama.embedding_length", 64), kv_u32("llama.attention.head_count", 4),
            kv_u32("llama.vocab_size", 256), kv_u32("llama.feed_forward_length", 128)]


def tensor_info(name: str, shape: tuple[int, ...], typ: int = 0) -> bytes:
    """One tensor info: name, n_dims u32, dims u64 each, ggml type u32 (0 = F32), offset u64."""
    return gstr(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", d) for d in shape) \
        + struct.pack("<IQ", typ, 0)


def write(folder: Path, name: str, data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_bytes(data)
    return p


# --------------------------------------------------------------------------- GGUF
def gguf_huge_array(folder: Path) -> Path:
    """~300 bytes declaring an array of 2^62 strings."""
    kv = llama_kv()
    blob = gguf_head(0, len(kv) + 1) + b"".join(kv) + gstr("tokenizer.ggml.tokens") \
        + struct.pack("<IIQ", T_ARRAY, T_STRING, 2**62)
    return write(folder, "m.gguf", blob + b"\0" * 16)


def gguf_many_keys(folder: Path, n: int = 1_000_000) -> Path:
    """A million u32 keys (~20 MB)."""
    body = b"".join(kv_u32(f"k{i:07d}", i) for i in range(n))
    return write(folder, "m.gguf", gguf_head(0, n) + body)


def gguf_many_tensors(folder: Path, n: int = 1_000_000) -> Path:
    kv = llama_kv()
    ti = b"".join(tensor_info(f"t{i:07d}", (1,)) for i in range(n))
    return write(folder, "m.gguf", gguf_head(n, len(kv)) + b"".join(kv) + ti)


def gguf_many_strings(folder: Path, n: int = 4_000_000) -> Path:
    """An array of 4 million one-byte strings (36 MB): over the array bound, each string in the file."""
    kv = llama_kv()
    arr = gstr("tokenizer.ggml.tokens") + struct.pack("<IIQ", T_ARRAY, T_STRING, n) + (struct.pack("<Q", 1) + b"x") * n
    return write(folder, "m.gguf", gguf_head(0, len(kv) + 1) + b"".join(kv) + arr)


def gguf_config(folder: Path, n_layers: int = 10**9, extra: list[bytes] = (), tensors: list[bytes] = ()) -> Path:
    """A llama GGUF with a sliding window and a layer count of our choice."""
    kv = [*llama_kv(n_layers), kv_u32("llama.attention.sliding_window", 4096), *extra]
    return write(folder, "m.gguf", gguf_head(len(tensors), len(kv)) + b"".join(kv) + b"".join(tensors))


def gguf_giant_tensor(folder: Path) -> Path:
    """One tensor of 2^126 elements (two dims of 2^63)."""
    return gguf_config(folder, 2, tensors=[tensor_info("token_embd.weight", (2**63, 2**63))])


def fifo(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    os.mkfifo(p)
    return p


# --------------------------------------------------------------------------- config.json / safetensors
def config(folder: Path, **over) -> Path:
    d = {**GOOD_CFG, **over}
    write(folder, "config.json", json.dumps({k: v for k, v in d.items() if v is not None}).encode())
    return folder


def deep_json(depth: int = 100_000) -> bytes:
    return b'{"model_type": ' + b"[" * depth + b"]" * depth + b"}"


def safetensors(folder: Path, header: bytes | dict, name: str = "model.safetensors") -> Path:
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    return write(folder, name, struct.pack("<Q", len(h)) + h)
