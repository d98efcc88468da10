"""Safetensors headers with the real tensor names/shapes/dtypes of published checkpoints (no data).

A served shard is only its header (u64 length + JSON): huggingface_hub.get_safetensors_metadata reads just that.
"""

from __future__ import annotations

import json
import math
import struct

DT = {"BF16": 2, "F16": 2, "F32": 4, "U32": 4}


def header_bytes(tensors: list[tuple[str, str, list[int]]]) -> tuple[bytes, int]:
    """-> (safetensors header bytes, data bytes it describes)."""
    hdr, off = {"__metadata__": {"format": "pt"}}, 0
    for name, dt, shape in tensors:
        nb = math.prod(shape) * DT[dt]
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + nb]}
        off += nb
    raw = json.dumps(hdr, separators=(",", ":")).encode()
    raw += b" " * ((-len(raw)) % 8)
    return struct.pack("<Q", len(raw)) + raw, off


def shard(tensors: list, n: int, prefix: str = "model") -> dict[str, bytes]:
    """Split into n shards + model.safetensors.index.json (transformers save_pretrained naming)."""
    per = math.ceil(len(tensors) / n)
    files, weight_map, total = {}, {}, 0
    for i in range(n):
        part = tensors[i * per:(i + 1) * per]
        fname = f"{prefix}-{i + 1:05d}-of-{n:05d}.safetensors"
        files[fname], nb = header_bytes(part)
        total += nb
        weight_map.update({t[0]: fname for t in part})
    files[f"{prefix}.safetensors.index.json"] = json.dumps(
        {"metadata": {"total_size": total}, "weight_map": weight_map}).encode()
    return files


def llama_8b() -> list:
    h, f, V = 4096, 14336, 128256
    out = [("model.embed_tokens.weight", "BF16", [V, h])]
    for i in range(32):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", "BF16", [h]),
                (p + "mlp.down_proj.weight", "BF16", [h, f]), (p + "mlp.gate_proj.weight", "BF16", [f, h]),
                (p + "mlp.up_proj.weight", "BF16", [f, h]), (p + "post_attention_layernorm.weight", "BF16", [h]),
                (p + "self_attn.k_proj.weight", "BF16", [1024, h]), (p + "self_attn.o_proj.weight", "BF16", [h, h]),
                (p + "self_attn.q_proj.weight", "BF16", [h, h]), (p + "self_attn.v_proj.weight", "BF16", [1024, h])]
    return out + [("model.norm.weight", "BF16", [h]), ("lm_head.weight", "BF16", [V, h])]


def _q(name: str, out_dim: list[int], in_dim: int, bits: int = 4, g: int = 64) -> list:
    """mlx affine quantized linear: U32 packed weight + BF16 scales and biases (mlx/primitives.h)."""
    return [(name + ".weight", "U32", [*out_dim, in_dim * bits // 32]),
            (name + ".scales", "BF16", [*out_dim, in_dim // g]), (name + ".biases", "BF16", [*out_dim, in_dim // g])]


def qwen3_30b_a3b_mlx4() -> list:
    h, E, fe, V = 2048, 128, 768, 151936
    out = _q("model.embed_tokens", [V], h)
    for i in range(48):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", "BF16", [h]), (p + "post_attention_layernorm.weight", "BF16", [h])]
        out += _q(p + "mlp.gate", [E], h, bits=8)
        out += _q(p + "mlp.switch_mlp.down_proj", [E, h], fe) + _q(p + "mlp.switch_mlp.gate_proj", [E, fe], h)
        out += _q(p + "mlp.switch_mlp.up_proj", [E, fe], h)
        out += _q(p + "self_attn.k_proj", [512], h) + [(p + "self_attn.k_norm.weight", "BF16", [128])]
        out += _q(p + "self_attn.o_proj", [h], 4096) + _q(p + "self_attn.q_proj", [4096], h)
        out += [(p + "self_attn.q_norm.weight", "BF16", [128])] + _q(p + "self_attn.v_proj", [512], h)
    return out + [("model.norm.weight", "BF16", [h])] + _q("lm_head", [V], h)


def gemma3_27b() -> list:
    h, f, V, vh, vf = 5376, 21504, 262208, 1152, 4304
    out = [("language_model.model.embed_tokens.weight", "BF16", [V, h])]
    for i in range(62):
        p = f"language_model.model.layers.{i}."
        out += [(p + n, "BF16", [h]) for n in ("input_layernorm.weight", "post_attention_layernorm.weight",
                                              "pre_feedforward_layernorm.weight", "post_feedforward_layernorm.weight")]
        out += [(p + "mlp.down_proj.weight", "BF16", [h, f]), (p + "mlp.gate_proj.weight", "BF16", [f, h]),
                (p + "mlp.up_proj.weight", "BF16", [f, h]), (p + "self_attn.k_norm.weight", "BF16", [128]),
                (p + "self_attn.k_proj.weight", "BF16", [2048, h]), (p + "self_attn.o_proj.weight", "BF16", [h, 4096]),
                (p + "self_attn.q_norm.weight", "BF16", [128]), (p + "self_attn.q_proj.weight", "BF16", [4096, h]),
                (p + "self_attn.v_proj.weight", "BF16", [2048, h])]
    out.append(("language_model.model.norm.weight", "BF16", [h]))
    out += [("multi_modal_projector.mm_input_projection_weight", "BF16", [vh, h]),
            ("multi_modal_projector.mm_soft_emb_norm.weight", "BF16", [vh])]
    v = "vision_tower.vision_model."
    out += [(v + "embeddings.patch_embedding.weight", "BF16", [vh, 3, 14, 14]),
            (v + "embeddings.patch_embedding.bias", "BF16", [vh]),
            (v + "embeddings.position_embedding.weight", "BF16", [4096, vh])]
    for i in range(27):
        p = f"{v}encoder.layers.{i}."
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            out += [(p + f"self_attn.{n}.weight", "BF16", [vh, vh]), (p + f"self_attn.{n}.bias", "BF16", [vh])]
        out += [(p + "mlp.fc1.weight", "BF16", [vf, vh]), (p + "mlp.fc1.bias", "BF16", [vf]),
                (p + "mlp.fc2.weight", "BF16", [vh, vf]), (p + "mlp.fc2.bias", "BF16", [vh])]
        out += [(p + f"layer_norm{k}.{w}", "BF16", [vh]) for k in (1, 2) for w in ("weight", "bias")]
    out += [(v + "post_layernorm.weight", "BF16", [vh]), (v + "post_layernorm.bias", "BF16", [vh])]
    return out
