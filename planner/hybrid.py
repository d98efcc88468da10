"""Recurrent / linear-attention hybrids: their tensors, cache layers and recurrent-update FLOPs.

planner/architecture.py hands a model here when its model_type is in MODEL_TYPES. Tensor names follow llama.cpp
(src/llama-arch.cpp) so the GGUF preset rules apply; shapes are ggml order (ne0 = input dimension).

Recurrent state, per sequence, constant in context:

- llama.cpp ``llama_memory_recurrent`` (src/llama-memory-recurrent.cpp): per recurrent layer one F32 row of
  ``n_embd_r`` and one of ``n_embd_s`` per sequence (mem_size = max(1, n_seq_max) rows, times 1 + n_rs_seq, which is
  0 unless speculative decoding asks for rollback snapshots). src/llama-hparams.cpp:
  n_embd_r = (d_conv - 1) * (d_inner + 2 * n_group * d_state), n_embd_s = d_state * d_inner.
- mlx-lm ``ArraysCache`` (mlx_lm/models/cache.py): the conv state in the activation dtype (bf16), the SSM / delta
  state in float32 (mlx_lm/models/gated_delta.py ``state = mx.zeros((B, Hv, Dv, Dk), dtype=mx.float32)``).
"""

from __future__ import annotations

from .errors import UnsupportedArchitectureError
from .schema import ModelConfig

# Gated DeltaNet (Qwen3.5 / 3.6 / 3.8): llama.cpp src/models/qwen35.cpp, qwen35moe.cpp; mlx_lm/models/qwen3_5.py
QWEN35 = {"qwen3_5", "qwen3_5_moe"}
MODEL_TYPES = QWEN35
# text_config model_types -> the model_type laid out here (sources/hfconfig.py)
TEXT_TYPES = {"qwen3_5_text": "qwen3_5", "qwen3_5_moe_text": "qwen3_5_moe"}
# GGUF general.architecture -> model_type (sources/ggufmeta.py)
GGUF_ARCHS = {"qwen35": "qwen3_5", "qwen35moe": "qwen3_5_moe"}

MLX_CONV_BYTES = 2  # mlx-lm conv state: the activation dtype (bf16) of the input it is sliced from
F32 = 4


def handles(cfg: ModelConfig) -> bool:
    return cfg.model_type in MODEL_TYPES


# --------------------------------------------------------------------------- gated delta net (Qwen3.5)
def _gdn_dims(cfg: ModelConfig) -> tuple[int, int, int, int]:
    kh, kd, vh, vd = (cfg.linear_num_key_heads, cfg.linear_key_head_dim, cfg.linear_num_value_heads,
                      cfg.linear_value_head_dim)
    if kh is None or kd is None or vh is None or vd is None:
        raise UnsupportedArchitectureError(
            f"model_type {cfg.model_type!r}: gated-delta-net layers need linear_num_key_heads, linear_key_head_dim, "
            "linear_num_value_heads and linear_value_head_dim in config.json")
    return kh, kd, vh, vd


def _qwen35_layer(cfg: ModelConfig, i: int) -> list:
    from .architecture import Tensor, _ffn

    h = cfg.hidden_size
    out = [Tensor("attn_norm", i, h, 1, group="norm", quantizable=False)]
    if cfg.layer_type(i) == "linear_attention":
        # llama.cpp qwen35.cpp load_block_trunk (recurrent): attn_qkv = in_proj_qkv, attn_gate = in_proj_z,
        # ssm_beta = in_proj_b, ssm_alpha = in_proj_a (mlx_lm/models/qwen3_5.py GatedDeltaNet)
        n_kh, khd, n_vh, vhd = _gdn_dims(cfg)
        kd, vd = n_kh * khd, n_vh * vhd
        k = cfg.linear_conv_kernel_dim or 4
        out += [
            Tensor("attn_qkv", i, h, 2 * kd + vd),
            Tensor("attn_gate", i, h, vd),
            Tensor("ssm_beta", i, h, n_vh),
            Tensor("ssm_alpha", i, h, n_vh),
            Tensor("ssm_conv1d", i, k, 2 * kd + vd, group="ssm", quantizable=False),
            Tensor("ssm_dt", i, n_vh, 1, group="norm", quantizable=False),
            Tensor("ssm_a", i, n_vh, 1, group="norm", quantizable=False),
            Tensor("ssm_norm", i, vhd, 1, group="norm", quantizable=False),
            Tensor("ssm_out", i, vd, h),
        ]
    else:
        # gated full attention: q_proj emits query + output gate, 2 x H x hd (qwen35.cpp create_tensor_qkv with
        # n_embd_head_k * n_head * 2; mlx_lm qwen3_next.py Qwen3NextAttention), q/k RMS norms
        H, Hkv, hd = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        out += [
            Tensor("attn_q", i, h, 2 * H * hd),
            Tensor("attn_k", i, h, Hkv * hd),
            Tensor("attn_v", i, h, Hkv * hd),
            Tensor("attn_output", i, H * hd, h),
            Tensor("attn_q_norm", i, hd, 1, group="norm", quantizable=False),
            Tensor("attn_k_norm", i, hd, 1, group="norm", quantizable=False),
        ]
    out.append(Tensor("attn_post_norm", i, h, 1, group="norm", quantizable=False))
    out += _ffn(cfg, i)
    if cfg.is_moe_layer(i) and cfg.shared_ffn:
        # shared-expert gate: llama.cpp ffn_gate_inp_shexp {n_embd} (1-D, F32); mlx-lm shared_expert_gate
        # Linear(h, 1), quantized at 8 bits like the router (qwen3_5.py quant_predicate)
        out.append(Tensor("ffn_gate_inp_shexp", i, h, 1, group="router", quantizable=False))
    return out


def _gdn_cache(cfg: ModelConfig):
    from .architecture import CacheLayer

    n_kh, khd, n_vh, vhd = _gdn_dims(cfg)
    kd, vd = n_kh * khd, n_vh * vhd
    k = cfg.linear_conv_kernel_dim or 4
    # llama.cpp (qwen35.cpp load_arch_hparams: ssm_d_inner = Hv*Dv, ssm_d_state = Dk, ssm_n_group = Hk):
    # n_embd_r = (k-1)(Hv*Dv + 2*Hk*Dk), n_embd_s = Dk * Hv*Dv, F32
    r = (k - 1) * (vd + 2 * kd)
    s = khd * vd
    # mlx-lm qwen3_5.py: ArraysCache(size=2) = conv (B, k-1, 2kd+vd) in the input dtype + state (B, Hv, Dv, Dk) f32
    mlx = (k - 1) * (2 * kd + vd) * MLX_CONV_BYTES + n_vh * vhd * khd * F32
    return CacheLayer("linear", state_f32_elems=r + s, mlx_state_bytes=mlx)


def _gdn_flops(cfg: ModelConfig) -> float:
    """FLOPs per token of one gated-delta-net layer's recurrence: per value head the Dv x Dk state is decayed,
    read against k, updated by the rank-1 delta and read against q (llama.cpp ggml-metal kernels/gated_delta_net.metal
    kernel_gated_delta_net_impl: ls *= g; s_k += ls*k; ls += k*d; y += ls*q), 7 FLOPs per state element,
    plus the depthwise causal conv, 2*k per channel (ggml_ssm_conv)."""
    n_kh, khd, n_vh, vhd = _gdn_dims(cfg)
    k = cfg.linear_conv_kernel_dim or 4
    return 7.0 * n_vh * vhd * khd + 2.0 * k * (2 * n_kh * khd + n_vh * vhd)


# --------------------------------------------------------------------------- dispatch
def tensors(cfg: ModelConfig) -> list:
    """Every weight tensor of a hybrid text model, in llama.cpp naming (the MTP block excluded: llama.cpp skips it
    unless --spec-type draft-mtp loads it, qwen35.cpp ``mtp_flags = TENSOR_SKIP``; mlx-lm drops ``mtp.*`` in
    qwen3_5.py sanitize)."""
    from .architecture import Tensor

    h, V = cfg.hidden_size, cfg.vocab_size
    out = [Tensor("token_embd", None, h, V, group="embedding")]
    for i in range(cfg.num_hidden_layers):
        out += _qwen35_layer(cfg, i)
    out.append(Tensor("output_norm", None, h, 1, group="norm", quantizable=False))
    if not cfg.tie_word_embeddings:
        out.append(Tensor("output", None, h, V, group="output"))
    return out


def cache_layers(cfg: ModelConfig) -> list:
    """Cache entries in layer order: a full-attention layer holds K and V per token, a recurrent layer a state per
    sequence (llama.cpp qwen35: llama_memory_hybrid with filter_attn = !is_recr, filter_recr = is_recr,
    src/llama-model.cpp create_memory)."""
    from .architecture import CacheLayer

    Hkv, hd = cfg.num_key_value_heads, cfg.head_dim
    out = []
    for i in range(cfg.num_hidden_layers):
        if cfg.layer_type(i) == "linear_attention":
            out.append(_gdn_cache(cfg))
        else:
            out.append(CacheLayer("full", Hkv * hd, Hkv * hd))
    return out


def state_flops(cfg: ModelConfig) -> float:
    """FLOPs per token (one sequence) of every recurrent layer's state update: decode does it once per step,
    prefill once per prompt token. [FLOP]"""
    # Qwen3-Next's linear layers (planner/architecture.py) run the same gated delta rule
    return sum(_gdn_flops(cfg) for i in range(cfg.num_hidden_layers) if cfg.layer_type(i) == "linear_attention")
