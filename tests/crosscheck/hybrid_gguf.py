"""A GGUF of a recurrent hybrid written from the planner's own tensor list (planner/hybrid.py), F32, data region
sparse (zeros): llama.cpp refuses a file with a missing, extra or wrongly shaped tensor ("wrong number of tensors",
"tensor has wrong shape"), so loading it checks the planner's tensors against src/models/<arch>.cpp.

GGUF shapes the planner keeps only as element counts: ssm_a / ssm_d of Mamba-2 are {1, H} (nemotron-h.cpp,
granite-hybrid.cpp), ssm_norm of Mamba-2 {d_inner / G, G}; 1-D vectors ({n}) for biases and norms.
"""

from __future__ import annotations

from pathlib import Path

from gguf import GGMLQuantizationType

from planner import architecture as arch
from planner.schema import ModelConfig
from tests.sources.gguf_gen import write_gguf

F32 = GGMLQuantizationType.F32
SUFFIX = {"shortconv_b": ("shortconv_b", None), "ssm_a_kimi": ("ssm_a", None), "ssm_dt_w": ("ssm_dt", "weight"), "ssm_dt": ("ssm_dt", "bias"), "ssm_a": ("ssm_a", None), "ssm_d": ("ssm_d", None),
          "ssm_conv1d_b": ("ssm_conv1d", "bias"), "exp_probs_b": ("exp_probs_b", "bias")}


def tensors(cfg: ModelConfig) -> list[tuple[str, tuple[int, ...], GGMLQuantizationType]]:
    mamba2 = cfg.model_type in ("nemotron_h", "granitemoehybrid", "falcon_h1")
    out = []
    for t in arch.tensors(cfg):
        short, suffix = SUFFIX.get(t.name, (t.name, "weight"))
        if cfg.model_type == "falcon_h1" and t.name == "ffn_norm":
            suffix = None  # falcon-h1.cpp: tn(LLM_TENSOR_FFN_NORM, i), "blk.N.ffn_norm" (the converter maps
            # pre_ff_layernorm.weight whole, gguf-py tensor_mapping.py)
        name = short if t.layer is None else f"blk.{t.layer}.{short}"
        name = f"{name}.{suffix}" if suffix else name
        if t.name in ("attn_k_b", "attn_v_b"):  # kimi-linear.cpp: {nope, rank, H} and {rank, v, H}
            H = cfg.num_attention_heads
            out.append((f"{name}", (t.ne0, t.ne1 // H, H), F32))
            continue
        if t.n > 1:
            ne = (t.ne0, t.ne1, t.n)
        elif t.name.startswith("ssm_conv1d_"):  # Kimi KDA: {k, 1, channels}
            ne = (t.ne0, 1, t.ne1)
        elif (cfg.model_type == "kimi_linear" and t.name == "ssm_a") or (mamba2 and t.name in ("ssm_a", "ssm_d")):
            ne = (1, t.ne0)
        elif mamba2 and t.name == "ssm_norm":
            ne = (t.ne0 // cfg.n_groups, cfg.n_groups)
        elif t.ne1 == 1:
            ne = (t.ne0,)
        else:
            ne = (t.ne0, t.ne1)
        out.append((name, ne, F32))
    return out


def _vocab(n: int) -> dict:
    toks = ["<unk>", "<s>", "</s>"] + [f"t{i}" for i in range(n - 3)]
    return {"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": toks,
            "tokenizer.ggml.scores": [0.0] * n, "tokenizer.ggml.token_type": [2, 3, 3] + [1] * (n - 3),
            "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2,
            "tokenizer.ggml.unknown_token_id": 0}


def metadata(cfg: ModelConfig, gguf_arch: str) -> dict:
    n = cfg.num_hidden_layers
    kv = {"context_length": cfg.max_position_embeddings, "embedding_length": cfg.hidden_size, "block_count": n,
          "attention.head_count": cfg.num_attention_heads, "attention.key_length": cfg.head_dim,
          "attention.value_length": cfg.head_dim, "attention.layer_norm_rms_epsilon": 1e-6,
          "vocab_size": cfg.vocab_size, **_vocab(cfg.vocab_size)}
    if gguf_arch in ("qwen35", "qwen35moe"):
        kh, kd, vh, vd = (cfg.linear_num_key_heads, cfg.linear_key_head_dim, cfg.linear_num_value_heads,
                          cfg.linear_value_head_dim)
        kv.update({"attention.head_count_kv": cfg.num_key_value_heads, "feed_forward_length": cfg.intermediate_size,
                   "rope.dimension_count": cfg.head_dim // 4, "rope.dimension_sections": [2, 1, 1, 0],
                   "rope.freq_base": 10000.0, "ssm.conv_kernel": cfg.linear_conv_kernel_dim,
                   "ssm.inner_size": vh * vd, "ssm.state_size": kd, "ssm.time_step_rank": vh,
                   "ssm.group_count": kh, "full_attention_interval": 4,
                   "attention.recurrent_layers": [t == "linear_attention" for t in cfg.layer_types]})
        if cfg.is_moe:
            kv.update({"expert_count": cfg.n_experts, "expert_used_count": cfg.num_experts_per_tok,
                       "expert_feed_forward_length": cfg.expert_ffn,
                       "expert_shared_feed_forward_length": cfg.shared_ffn})
        return kv
    if gguf_arch in ("lfm2", "lfm2moe"):
        bt = cfg.layers_block_type
        kv.update({"attention.head_count_kv": [cfg.num_key_value_heads if b == "attention" else 0 for b in bt],
                   "feed_forward_length": cfg.intermediate_size, "shortconv.l_cache": cfg.conv_L_cache,
                   "rope.dimension_count": cfg.head_dim, "rope.freq_base": 10000.0})
        if cfg.is_moe:
            kv.update({"expert_count": cfg.n_experts, "expert_used_count": cfg.num_experts_per_tok,
                       "expert_feed_forward_length": cfg.expert_ffn,
                       "leading_dense_block_count": cfg.first_k_dense_replace or 0, "expert_gating_func": 2})
        return kv
    if gguf_arch == "kimi-linear":
        rank, rope = cfg.kv_lora_rank, cfg.qk_rope_head_dim
        kv.update({"attention.head_count_kv": [1 if t == "full_attention" else 0 for t in cfg.layer_types],
                   "attention.key_length": rank + rope, "attention.value_length": rank,
                   "attention.key_length_mla": cfg.qk_nope_head_dim + rope, "attention.value_length_mla": cfg.v_head_dim,
                   "attention.kv_lora_rank": rank, "rope.dimension_count": rope, "rope.freq_base": 10000.0,
                   "ssm.conv_kernel": cfg.linear_conv_kernel_dim, "kda.head_dim": cfg.linear_key_head_dim,
                   "feed_forward_length": cfg.intermediate_size, "expert_count": cfg.n_experts,
                   "expert_used_count": cfg.num_experts_per_tok, "expert_feed_forward_length": cfg.expert_ffn,
                   "expert_shared_count": cfg.n_shared_experts or 0,
                   "leading_dense_block_count": cfg.first_k_dense_replace or 0, "expert_gating_func": 2})
        return kv
    if gguf_arch == "jamba":
        bt = cfg.layers_block_type
        kv.update({"attention.head_count_kv": [cfg.num_key_value_heads if b == "attention" else 0 for b in bt],
                   "feed_forward_length": cfg.intermediate_size, "ssm.conv_kernel": cfg.conv_kernel,
                   "ssm.inner_size": cfg.mamba_d_inner, "ssm.state_size": cfg.ssm_state_size,
                   "ssm.time_step_rank": cfg.mamba_dt_rank})
        if cfg.is_moe:
            kv.update({"expert_count": cfg.n_experts, "expert_used_count": cfg.num_experts_per_tok})
        return kv
    bt = cfg.layers_block_type or ["attention"] * n
    kv.update({"ssm.conv_kernel": cfg.conv_kernel, "ssm.inner_size": cfg.mamba_num_heads * cfg.mamba_head_dim,
               "ssm.state_size": cfg.ssm_state_size, "ssm.time_step_rank": cfg.mamba_num_heads,
               "ssm.group_count": cfg.n_groups, "rope.dimension_count": cfg.head_dim, "rope.freq_base": 10000.0,
               "attention.head_count_kv": [cfg.num_key_value_heads if b == "attention" else 0 for b in bt]})
    if gguf_arch == "falcon-h1":
        kv.update({"attention.head_count_kv": cfg.num_key_value_heads, "feed_forward_length": cfg.intermediate_size,
                   "ssm.inner_size": cfg.mamba_d_inner or cfg.mamba_num_heads * cfg.mamba_head_dim})
        return kv
    if gguf_arch == "granitehybrid":
        kv["feed_forward_length"] = cfg.intermediate_size
        if cfg.is_moe:
            kv.update({"expert_count": cfg.n_experts, "expert_used_count": cfg.num_experts_per_tok,
                       "expert_shared_feed_forward_length": cfg.shared_expert_intermediate_size or 0})
        return kv
    kv["attention.layer_norm_epsilon"] = 1e-5
    kv["feed_forward_length"] = [cfg.expert_ffn if b == "moe" else cfg.intermediate_size if b == "mlp" else 0
                                 for b in bt]
    if cfg.is_moe:
        kv.update({"expert_count": cfg.n_experts, "expert_used_count": cfg.num_experts_per_tok,
                   "expert_feed_forward_length": cfg.expert_ffn, "expert_shared_count": cfg.n_shared_experts or 0,
                   "expert_shared_feed_forward_length": cfg.moe_shared_expert_intermediate_size or 0,
                   "expert_weights_norm": True, "expert_weights_scale": 1.0})
        if cfg.moe_latent_size:  # Nemotron 3 Super: conversion/nemotron.py add_moe_latent_size
            kv["moe_latent_size"] = cfg.moe_latent_size
    return kv


def mtp_block(cfg: ModelConfig, src_layer: int) -> list[tuple[str, tuple[int, ...], GGMLQuantizationType]]:
    """Qwen3.5's MTP block as the converter writes it after the last layer (conversion/qwen.py _QwenMtpMixin;
    qwen35moe.cpp load_block_mtp): a full-attention decoder layer (copied from ``src_layer``) + nextn eh_proj
    {2 n_embd, n_embd}, enorm, hnorm."""
    n, h = cfg.num_hidden_layers, cfg.hidden_size
    out = [(name.replace(f"blk.{src_layer}.", f"blk.{n}.", 1), ne, typ) for name, ne, typ in tensors(cfg)
           if name.startswith(f"blk.{src_layer}.")]
    return out + [(f"blk.{n}.nextn.eh_proj.weight", (2 * h, h), F32), (f"blk.{n}.nextn.enorm.weight", (h,), F32),
                  (f"blk.{n}.nextn.hnorm.weight", (h,), F32)]


def write(cfg: ModelConfig, gguf_arch: str, path: Path, mtp_from: int | None = None) -> int:
    """Write the GGUF (with one MTP block after the layers when ``mtp_from`` names a full-attention layer to copy);
    returns the tensor bytes (all F32)."""
    kv, ts = metadata(cfg, gguf_arch), tensors(cfg)
    if mtp_from is not None:
        ts += mtp_block(cfg, mtp_from)
        kv["block_count"] = cfg.num_hidden_layers + 1
        kv["nextn_predict_layers"] = 1
        kv["attention.recurrent_layers"] = kv["attention.recurrent_layers"] + [False]
    return write_gguf(path, gguf_arch, kv, ts, file_type=0)
