"""Write real GGUF files for tests: full metadata + tensor infos with real shapes, data region sparse.

The data region is created with truncate() (a sparse file, docs/model-facts.md §0.2), so an 8B-shaped GGUF
takes a few hundred KB on disk while GGUFReader sees every tensor at its real size.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFWriter

Q = GGMLQuantizationType


def nbytes(ne: tuple[int, ...], typ: Q) -> int:
    block, size = GGML_QUANT_SIZES[typ]
    n = int(np.prod(ne))
    return n // block * size


def write_gguf(path: Path, arch: str, kv: dict, tensors: list[tuple[str, tuple[int, ...], Q]],
               file_type: int | None = None, align: int = 32) -> int:
    """tensors: (name, ggml shape ne0 first, type). Returns the sum of tensor bytes."""
    w = GGUFWriter(str(path), arch)
    if file_type is not None:
        w.add_file_type(file_type)
    for k, v in kv.items():
        key = k if k.startswith(("general.", "tokenizer.")) else f"{arch}.{k}"
        if isinstance(v, bool):
            w.add_bool(key, v)
        elif isinstance(v, int):
            w.add_uint32(key, v)
        elif isinstance(v, float):
            w.add_float32(key, v)
        elif isinstance(v, str):
            w.add_string(key, v)
        elif isinstance(v, list):
            w.add_array(key, v)
        else:
            raise TypeError(k)
    total = 0
    for name, ne, typ in tensors:
        nb = nbytes(ne, typ)
        total += nb
        # numpy order (reversed ggml order); raw dtype + float32 placeholder keeps the shape in elements
        w.add_tensor_info(name, tuple(reversed(ne)), np.dtype(np.float32), nb, raw_dtype=typ)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    f = w.fout[0]
    pos = f.tell()
    pos += (-pos) % align
    for _, ne, typ in tensors:
        nb = nbytes(ne, typ)
        pos += nb + (-nb) % align
    f.truncate(pos)  # sparse data region
    w.close()
    return total


def llama_tensors(n_layers=32, h=4096, heads=32, kv_heads=8, hd=128, ffn=14336, vocab=128256, tied=False,
                  q4km=True) -> list:
    """Llama-3.1-8B layout with the Q4_K_M tensor mix of llama-quant.cpp (attn_v/ffn_down Q6_K on use_more_bits)."""
    def more(i, n):
        return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2

    base = Q.Q4_K if q4km else Q.F16
    out = [("token_embd.weight", (h, vocab), base)]
    for i in range(n_layers):
        hi = Q.Q6_K if (q4km and more(i, n_layers)) else base
        out += [
            (f"blk.{i}.attn_norm.weight", (h,), Q.F32),
            (f"blk.{i}.attn_q.weight", (h, heads * hd), base),
            (f"blk.{i}.attn_k.weight", (h, kv_heads * hd), base),
            (f"blk.{i}.attn_v.weight", (h, kv_heads * hd), hi),
            (f"blk.{i}.attn_output.weight", (heads * hd, h), base),
            (f"blk.{i}.ffn_norm.weight", (h,), Q.F32),
            (f"blk.{i}.ffn_gate.weight", (h, ffn), base),
            (f"blk.{i}.ffn_up.weight", (h, ffn), base),
            (f"blk.{i}.ffn_down.weight", (ffn, h), hi),
        ]
    out.append(("output_norm.weight", (h,), Q.F32))
    if not tied:
        out.append(("output.weight", (h, vocab), Q.Q6_K if q4km else base))
    return out


LLAMA8B_KV = {
    "block_count": 32, "context_length": 131072, "embedding_length": 4096, "feed_forward_length": 14336,
    "attention.head_count": 32, "attention.head_count_kv": 8, "rope.freq_base": 500000.0,
    "attention.layer_norm_rms_epsilon": 1e-5, "vocab_size": 128256, "rope.dimension_count": 128,
    "general.name": "Meta Llama 3.1 8B Instruct",
}


def write_llama8b(path: Path) -> int:
    return write_gguf(path, "llama", LLAMA8B_KV, llama_tensors(), file_type=15)
