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

from collections.abc import Callable
from typing import TYPE_CHECKING

from .errors import UnsupportedArchitectureError
from .schema import ModelConfig

if TYPE_CHECKING:  # architecture.py imports this module
    from .architecture import CacheLayer, Tensor

# Gated DeltaNet (Qwen3.5 / 3.6 / 3.8): llama.cpp src/models/qwen35.cpp, qwen35moe.cpp; mlx_lm/models/qwen3_5.py
QWEN35 = {"qwen3_5", "qwen3_5_moe"}
# Mamba-2 hybrids whose layers are listed one block type each (layers_block_type: mamba | attention | moe | mlp):
# Nemotron-H / Nemotron 3 (llama.cpp src/models/nemotron-h.cpp, mlx_lm/models/nemotron_h.py) and Granite 4.0-H
# (llama.cpp src/models/granite-hybrid.cpp, mlx_lm/models/granitemoehybrid.py)
MAMBA2 = {"nemotron_h", "granitemoehybrid"}
# Falcon-H1: every layer runs attention and a Mamba-2 mixer side by side, then a SwiGLU MLP (llama.cpp
# src/models/falcon-h1.cpp; mlx_lm/models/falcon_h1.py), so every layer holds both a KV cache and a state
FALCON_H1 = {"falcon_h1"}
# LFM2 / LFM2-MoE: short-convolution blocks (gated depthwise conv of conv_L_cache taps) and GQA attention
# (llama.cpp src/models/lfm2.cpp, lfm2moe.cpp; mlx_lm/models/lfm2.py, lfm2_moe.py); layers_block_type conv | attention
LFM2 = {"lfm2", "lfm2_moe"}
# Jamba: Mamba-1 mixers (selective scan, no heads or groups) with attention every attn_layer_period-th layer and
# routed experts on every expert_layer_period-th (llama.cpp src/models/jamba.cpp, mlx_lm/models/jamba.py)
JAMBA = {"jamba"}
# Kimi Linear: KDA (Kimi delta attention: per-channel gated delta rule, short convs on q, k, v) on the layers of
# linear_attn_config.kda_layers, MLA on the rest, DeepSeek-style MoE (llama.cpp src/models/kimi-linear.cpp,
# mlx_lm/models/kimi_linear.py); the KDA sizes are read into the linear_* fields, one head count for q, k and v
KIMI_LINEAR = {"kimi_linear"}
MODEL_TYPES = QWEN35 | MAMBA2 | FALCON_H1 | LFM2 | JAMBA | KIMI_LINEAR
MAMBA2_MIXERS = MAMBA2 | FALCON_H1  # every model with Mamba-2 mixers (built once: the memory searches ask per step)
# text_config model_types -> the model_type laid out here (sources/hfconfig.py)
TEXT_TYPES = {"qwen3_5_text": "qwen3_5", "qwen3_5_moe_text": "qwen3_5_moe"}
# GGUF general.architecture -> model_type (sources/ggufmeta.py)
GGUF_ARCHS = {"qwen35": "qwen3_5", "qwen35moe": "qwen3_5_moe", "nemotron_h": "nemotron_h",
              "nemotron_h_moe": "nemotron_h", "granitehybrid": "granitemoehybrid", "falcon-h1": "falcon_h1",
              "lfm2": "lfm2", "lfm2moe": "lfm2_moe", "jamba": "jamba", "kimi-linear": "kimi_linear"}

# llama-server keeps up to this many context checkpoints per slot in host memory (common/common.h
# n_ctx_checkpoints = 32, --ctx-checkpoints); a hybrid's checkpoint is its sequence's recurrent state only
# (llama-memory-hybrid.cpp state_write with LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY skips the attention KV)
LLAMA_SERVER_CTX_CHECKPOINTS = 32
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


def _qwen35_layer(cfg: ModelConfig, i: int) -> list[Tensor]:
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
    out.append(Tensor("post_attention_norm", i, h, 1, group="norm", quantizable=False))
    out += _ffn(cfg, i)
    if cfg.is_moe_layer(i) and cfg.shared_ffn:
        # shared-expert gate: llama.cpp ffn_gate_inp_shexp {n_embd} (1-D, F32); mlx-lm shared_expert_gate
        # Linear(h, 1), quantized at 8 bits like the router (qwen3_5.py quant_predicate)
        out.append(Tensor("ffn_gate_inp_shexp", i, h, 1, group="router", quantizable=False))
    return out


def _gdn_cache(cfg: ModelConfig) -> CacheLayer:
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


# --------------------------------------------------------------------------- Mamba-2 (Nemotron-H, Granite 4.0-H)
def _mamba2_dims(cfg: ModelConfig) -> tuple[int, int, int, int, int]:
    """(heads H, head dim P, state N, groups G, conv kernel k); d_inner = H * P (Falcon-H1 gives it as
    mamba_d_ssm, read into mamba_d_inner; then P = d_inner / H)."""
    H, P, N, G = cfg.mamba_num_heads, cfg.mamba_head_dim, cfg.ssm_state_size, cfg.n_groups
    if cfg.mamba_d_inner and H:
        P = cfg.mamba_d_inner // H
    if not (H and P and N and G):
        raise UnsupportedArchitectureError(
            f"model_type {cfg.model_type!r}: Mamba-2 layers need mamba_num_heads, mamba_head_dim, ssm_state_size and "
            "n_groups (Granite: mamba_n_heads, mamba_d_head, mamba_d_state, mamba_n_groups) in config.json")
    return H, P, N, G, cfg.conv_kernel or 4


def _mamba2_mixer(cfg: ModelConfig, i: int) -> list[Tensor]:
    """llama.cpp nemotron-h.cpp / granite-hybrid.cpp (is_recr): ssm_in {n_embd, 2*d_inner + 2*G*N + H} (z, xBC, dt),
    depthwise conv over d_inner + 2*G*N channels, per-head dt bias, A, D, a grouped RMS norm, ssm_out;
    mlx-lm NemotronHMamba2Mixer / GraniteMoeHybridMamba2Mixer (in_proj, conv1d, dt_bias, A_log, D, norm, out_proj)."""
    from .architecture import Tensor

    h = cfg.hidden_size
    H, P, N, G, k = _mamba2_dims(cfg)
    d_inner, conv = H * P, H * P + 2 * G * N
    out = [Tensor("ssm_in", i, h, 2 * d_inner + 2 * G * N + H),
           Tensor("ssm_conv1d", i, k, conv, group="ssm", quantizable=False)]
    if cfg.use_conv_bias:
        out.append(Tensor("ssm_conv1d_b", i, conv, 1, group="norm", quantizable=False))
    out += [Tensor("ssm_dt", i, H, 1, group="norm", quantizable=False),
            Tensor("ssm_a", i, H, 1, group="norm", quantizable=False),
            Tensor("ssm_d", i, H, 1, group="norm", quantizable=False)]
    if cfg.mamba_rms_norm:
        out.append(Tensor("ssm_norm", i, d_inner, 1, group="norm", quantizable=False))
    out += [Tensor("ssm_out", i, d_inner, h)]
    if cfg.mamba_proj_bias:
        out.append(Tensor("ssm_proj_b", i, 2 * d_inner + 2 * G * N + H + h, 1, group="norm", quantizable=False))
    return out


def _attn_plain(cfg: ModelConfig, i: int) -> list[Tensor]:
    from .architecture import Tensor

    h, H, Hkv, hd = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    out = [Tensor("attn_q", i, h, H * hd), Tensor("attn_k", i, h, Hkv * hd), Tensor("attn_v", i, h, Hkv * hd),
           Tensor("attn_output", i, H * hd, h)]
    if cfg.attention_bias:
        out.append(Tensor("attn_qkv_bias", i, (H + 2 * Hkv) * hd + h, 1, group="norm", quantizable=False))
    return out


def _block_types(cfg: ModelConfig) -> list[str]:
    bt = cfg.layers_block_type
    if not bt or len(bt) != cfg.num_hidden_layers:
        raise UnsupportedArchitectureError(
            f"model_type {cfg.model_type!r}: needs one block type per layer (hybrid_override_pattern or "
            "layers_block_type) in config.json")
    return list(bt)


def _nemotron_layer(cfg: ModelConfig, i: int, kind: str) -> list[Tensor]:
    """Nemotron-H: one norm and one mixer per layer (mlx_lm nemotron_h.py NemotronHBlock): M Mamba-2, * attention,
    - a squared-ReLU MLP (up, down; no gate), E routed experts (up, down; relu2) + router with a score-correction
    bias + a shared expert (up, down), llama.cpp nemotron-h.cpp load_arch_tensors."""
    from .architecture import Tensor

    h = cfg.hidden_size
    out = [Tensor("attn_norm", i, h, 1, group="norm", quantizable=False)]
    if kind == "mamba":
        return out + _mamba2_mixer(cfg, i)
    if kind == "attention":
        return out + _attn_plain(cfg, i)
    if kind == "mlp":
        f = cfg.intermediate_size
        return out + [Tensor("ffn_up", i, h, f, group="ffn"), Tensor("ffn_down", i, f, h, group="ffn")]
    E, fe = cfg.n_experts, cfg.expert_ffn
    # latent MoE (Nemotron 3 Super): the router reads h, the experts run at moe_latent_size between two dense
    # projections every token passes (llama.cpp nemotron-h.cpp ffn_latent_down {n_embd, moe_n_embd}, ffn_latent_up
    # {moe_n_embd, n_embd}, experts {moe_n_embd, n_ff_exp}; mlx_lm nemotron_h.py fc1/fc2_latent_proj, SwitchMLP)
    lat = cfg.moe_latent_size or h
    # the router is a bare (E, h) array in mlx-lm (nemotron_h.py MoEGate.weight), not a Linear: never quantized, so
    # it stays in the activation dtype like a norm (group "norm"); llama-quant.cpp keeps ffn_gate_inp unquantized too
    out += [Tensor("ffn_gate_inp", i, h, E, group="norm", quantizable=False),
            Tensor("exp_probs_b", i, E, 1, group="norm", quantizable=False),
            Tensor("ffn_up_exps", i, lat, fe, E, group="experts"),
            Tensor("ffn_down_exps", i, fe, lat, E, group="experts")]
    if cfg.moe_latent_size:
        out += [Tensor("ffn_latent_down", i, h, lat, group="ffn"), Tensor("ffn_latent_up", i, lat, h, group="ffn")]
    fs = cfg.moe_shared_expert_intermediate_size or 0
    if cfg.n_shared_experts and fs:
        out += [Tensor("ffn_up_shexp", i, h, fs, group="shared_experts"),
                Tensor("ffn_down_shexp", i, fs, h, group="shared_experts")]
    return out


def _granite_layer(cfg: ModelConfig, i: int, kind: str) -> list[Tensor]:
    """Granite 4.0-H: attn_norm, a Mamba-2 or attention mixer, ffn_norm, then routed SwiGLU experts + a shared SwiGLU
    MLP (shared_intermediate_size), or a dense SwiGLU MLP without experts (granite-hybrid.cpp; mlx-lm
    GraniteMoeHybridLayer)."""
    from .architecture import Tensor

    h = cfg.hidden_size
    out = [Tensor("attn_norm", i, h, 1, group="norm", quantizable=False)]
    out += _mamba2_mixer(cfg, i) if kind == "mamba" else _attn_plain(cfg, i)
    out.append(Tensor("ffn_norm", i, h, 1, group="norm", quantizable=False))
    if cfg.is_moe:
        E, f = cfg.n_experts, cfg.intermediate_size
        out += [Tensor("ffn_gate_inp", i, h, E, group="router", quantizable=False),
                Tensor("ffn_gate_exps", i, h, f, E, group="experts"),
                Tensor("ffn_up_exps", i, h, f, E, group="experts"),
                Tensor("ffn_down_exps", i, f, h, E, group="experts")]
        fs = cfg.shared_expert_intermediate_size or 0
        if fs:
            out += [Tensor("ffn_gate_shexp", i, h, fs, group="shared_experts"),
                    Tensor("ffn_up_shexp", i, h, fs, group="shared_experts"),
                    Tensor("ffn_down_shexp", i, fs, h, group="shared_experts")]
        return out
    f = cfg.intermediate_size
    return out + [Tensor("ffn_gate", i, h, f, group="ffn"), Tensor("ffn_up", i, h, f, group="ffn"),
                  Tensor("ffn_down", i, f, h, group="ffn")]


def _falcon_h1_layer(cfg: ModelConfig, i: int) -> list[Tensor]:
    """Falcon-H1 (falcon-h1.cpp load_arch_tensors): attn_norm, the Mamba-2 mixer and attention in parallel on the
    same input, ffn_norm, a SwiGLU MLP of intermediate_size (mlx-lm FalconH1DecoderLayer)."""
    from .architecture import Tensor

    h, f = cfg.hidden_size, cfg.intermediate_size
    return ([Tensor("attn_norm", i, h, 1, group="norm", quantizable=False)] + _mamba2_mixer(cfg, i)
            + _attn_plain(cfg, i) + [Tensor("ffn_norm", i, h, 1, group="norm", quantizable=False),
                                     Tensor("ffn_gate", i, h, f, group="ffn"), Tensor("ffn_up", i, h, f, group="ffn"),
                                     Tensor("ffn_down", i, f, h, group="ffn")])


def _lfm2_layer(cfg: ModelConfig, i: int, kind: str) -> list[Tensor]:
    """LFM2 (lfm2.cpp / lfm2moe.cpp load_arch_tensors; mlx-lm Lfm2DecoderLayer): operator norm (attn_norm), either
    attention with q/k RMS norms or a short conv (in_proj h -> 3h for B, C, x; depthwise conv of conv_L_cache taps;
    out_proj), ffn_norm, a SwiGLU MLP (LFM2-MoE: dense for the first num_dense_layers, then routed experts with a
    router bias)."""
    from .architecture import Tensor, _ffn

    h, H, Hkv, hd = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    out = [Tensor("attn_norm", i, h, 1, group="norm", quantizable=False)]
    if kind == "attention":
        out += [Tensor("attn_q_norm", i, hd, 1, group="norm", quantizable=False),
                Tensor("attn_k_norm", i, hd, 1, group="norm", quantizable=False),
                Tensor("attn_q", i, h, H * hd), Tensor("attn_k", i, h, Hkv * hd), Tensor("attn_v", i, h, Hkv * hd),
                Tensor("attn_output", i, H * hd, h)]
    else:
        L = _conv_taps(cfg)
        out += [Tensor("shortconv.conv", i, L, h, group="ssm", quantizable=False),
                Tensor("shortconv.in_proj", i, h, 3 * h), Tensor("shortconv.out_proj", i, h, h)]
        if cfg.conv_bias:  # mlx-lm ShortConv bias=conv_bias on conv, in_proj and out_proj
            out.append(Tensor("shortconv_b", i, h + 3 * h + h, 1, group="norm", quantizable=False))
    out.append(Tensor("ffn_norm", i, h, 1, group="norm", quantizable=False))
    out += _ffn(cfg, i)
    if cfg.is_moe_layer(i) and cfg.use_expert_bias:
        out.append(Tensor("exp_probs_b", i, cfg.n_experts, 1, group="norm", quantizable=False))
    return out


def _mamba1_dims(cfg: ModelConfig) -> tuple[int, int, int, int]:
    """(d_inner, state N, dt rank R, conv kernel k) of a Mamba-1 mixer."""
    d, N, R = cfg.mamba_d_inner, cfg.ssm_state_size, cfg.mamba_dt_rank
    if not (d and N and R):
        raise UnsupportedArchitectureError(f"model_type {cfg.model_type!r}: Mamba layers need mamba_expand (or "
                                           "d_inner), mamba_d_state and mamba_dt_rank in config.json")
    return d, N, R, cfg.conv_kernel or 4


def _jamba_layer(cfg: ModelConfig, i: int, kind: str) -> list[Tensor]:
    """Jamba (jamba.cpp load_arch_tensors; mlx-lm JambaMambaMixer / JambaAttention): attn_norm, a Mamba-1 mixer
    (in_proj h -> 2 d_inner, conv over d_inner with bias, x_proj d_inner -> R + 2N, dt_proj R -> d_inner with bias,
    RMS norms on dt, B, C, A {N, d_inner}, D, out_proj) or attention, ffn_norm, routed SwiGLU experts or a dense
    SwiGLU MLP."""
    from .architecture import Tensor, _ffn

    h = cfg.hidden_size
    out = [Tensor("attn_norm", i, h, 1, group="norm", quantizable=False)]
    if kind == "mamba":
        d, N, R, k = _mamba1_dims(cfg)
        out += [Tensor("ssm_in", i, h, 2 * d), Tensor("ssm_conv1d", i, k, d, group="ssm", quantizable=False),
                Tensor("ssm_conv1d_b", i, d, 1, group="norm", quantizable=False), Tensor("ssm_x", i, d, R + 2 * N),
                Tensor("ssm_dt_norm", i, R, 1, group="norm", quantizable=False), Tensor("ssm_dt_w", i, R, d),
                Tensor("ssm_dt", i, d, 1, group="norm", quantizable=False),
                Tensor("ssm_b_norm", i, N, 1, group="norm", quantizable=False),
                Tensor("ssm_c_norm", i, N, 1, group="norm", quantizable=False),
                Tensor("ssm_a", i, N, d, group="ssm", quantizable=False),
                Tensor("ssm_d", i, d, 1, group="norm", quantizable=False), Tensor("ssm_out", i, d, h)]
    else:
        out += _attn_plain(cfg, i)
    out.append(Tensor("ffn_norm", i, h, 1, group="norm", quantizable=False))
    return out + _ffn(cfg, i)


def _kimi_layer(cfg: ModelConfig, i: int) -> list[Tensor]:
    """Kimi Linear (kimi-linear.cpp load_arch_tensors; mlx-lm KimiDeltaAttention / KimiMLAAttention): attn_norm;
    KDA = q, k, v projections, a depthwise conv on each (no bias), the decay's low-rank f_a (h -> d), f_b (d -> H d),
    beta (h -> H), A (H), dt bias (H d), the output gate's g_a, g_b, a head norm (d), o_proj; or MLA (planner/
    architecture.py); ffn_norm; dense SwiGLU for the first first_k_dense_replace layers, then routed + shared
    experts with a score-correction bias (exp_probs_b)."""
    from .architecture import Tensor, _attention, _ffn

    h = cfg.hidden_size
    out = [Tensor("attn_norm", i, h, 1, group="norm", quantizable=False)]
    if cfg.layer_type(i) == "linear_attention":
        H, d, _, _ = _gdn_dims(cfg)
        k, p = cfg.linear_conv_kernel_dim or 4, H * d
        out += [Tensor("attn_q", i, h, p), Tensor("attn_k", i, h, p), Tensor("attn_v", i, h, p),
                Tensor("ssm_conv1d_q", i, k, p, group="ssm", quantizable=False),
                Tensor("ssm_conv1d_k", i, k, p, group="ssm", quantizable=False),
                Tensor("ssm_conv1d_v", i, k, p, group="ssm", quantizable=False),
                Tensor("ssm_f_a", i, h, d), Tensor("ssm_f_b", i, d, p), Tensor("ssm_beta", i, h, H),
                Tensor("ssm_a", i, H, 1, group="norm", quantizable=False),
                Tensor("ssm_dt", i, p, 1, group="norm", quantizable=False),
                Tensor("ssm_g_a", i, h, d), Tensor("ssm_g_b", i, d, p),
                Tensor("ssm_norm", i, d, 1, group="norm", quantizable=False), Tensor("attn_output", i, p, h)]
    else:
        # MLA (planner/architecture.py), with kv_b split per head the way kimi-linear.cpp loads it for the latent
        # cache: attn_k_b {nope, rank, H} and attn_v_b {rank, v, H} (conversion/kimi_linear.py), other row lengths
        # for the GGUF presets; mlx-lm's embed_q / unembed_out MultiLinear hold the same elements
        H, rank = cfg.num_attention_heads, cfg.kv_lora_rank or 0
        nope, v = cfg.qk_nope_head_dim or 128, cfg.v_head_dim or 128
        for t in _attention(cfg, i):
            out += [Tensor("attn_k_b", i, nope, rank * H), Tensor("attn_v_b", i, rank, v * H)] \
                if t.name == "attn_kv_b" else [t]
    out.append(Tensor("ffn_norm", i, h, 1, group="norm", quantizable=False))
    out += _ffn(cfg, i)
    if cfg.is_moe_layer(i):
        out.append(Tensor("exp_probs_b", i, cfg.n_experts, 1, group="norm", quantizable=False))
    return out


def _kda_cache(cfg: ModelConfig) -> CacheLayer:
    from .architecture import CacheLayer

    H, d, _, _ = _gdn_dims(cfg)
    k = cfg.linear_conv_kernel_dim or 4
    # llama.cpp n_embd_r = 3 (k-1) n_head d, n_embd_s = d d n_head (llama-hparams.cpp, the KDA branches; n_head is
    # the attention head count, equal to the KDA heads: checked by the reader); mlx-lm ArraysCache(size=4): q, k, v
    # conv rows (B, k-1, H d) in the input dtype + the delta state (B, H, d, d) float32 (gated_delta.py)
    return CacheLayer("linear", state_f32_elems=3 * (k - 1) * H * d + H * d * d,
                      mlx_state_bytes=3 * (k - 1) * H * d * MLX_CONV_BYTES + H * d * d * F32)


def _conv_taps(cfg: ModelConfig) -> int:
    if not cfg.conv_L_cache:
        raise UnsupportedArchitectureError(f"model_type {cfg.model_type!r}: short-conv layers need conv_L_cache in "
                                           "config.json")
    return cfg.conv_L_cache


def _mamba2_cache(cfg: ModelConfig) -> CacheLayer:
    from .architecture import CacheLayer

    H, P, N, G, k = _mamba2_dims(cfg)
    d_inner, conv = H * P, H * P + 2 * G * N
    # llama.cpp: n_embd_r = (k-1)(d_inner + 2*G*N), n_embd_s = N * d_inner (llama-hparams.cpp), F32
    # mlx-lm ArraysCache(size=2): conv (B, k-1, conv) in the input dtype + ssm state (B, H, P, N) float32
    # (mlx_lm/models/ssm.py ssm_attn: dt is cast to float32, so the state it builds is float32)
    return CacheLayer("linear", state_f32_elems=(k - 1) * conv + N * d_inner,
                      mlx_state_bytes=(k - 1) * conv * MLX_CONV_BYTES + H * P * N * F32)


def _mamba2_flops(cfg: ModelConfig) -> float:
    """FLOPs per token of one Mamba-2 layer's scan: per head the P x N state is decayed by exp(dt*A), takes the
    dt*x B outer product and is read against C, 6 FLOPs per state element (llama.cpp ggml_ssm_scan,
    ggml-metal kernel_ssm_scan; mlx_lm/models/ssm.py ssm_update_kernel), plus the depthwise conv, 2*k per channel."""
    H, P, N, G, k = _mamba2_dims(cfg)
    return 6.0 * H * P * N + 2.0 * k * (H * P + 2 * G * N)


# --------------------------------------------------------------------------- dispatch
RECURRENT_KINDS = ("linear", "mamba", "conv", "both")  # layers holding a recurrent state ("both": Falcon-H1)
ATTENTION_KINDS = ("attention", "both")                # layers holding a KV cache


def _kinds(cfg: ModelConfig) -> list[str]:
    """One kind per layer: linear | attention (gated delta net, KDA), both (Falcon-H1: Mamba-2 and attention side by
    side), or the block list (mamba | attention | moe | mlp | conv)."""
    if cfg.model_type in FALCON_H1:
        return ["both"] * cfg.num_hidden_layers
    if cfg.model_type in QWEN35 | KIMI_LINEAR or cfg.model_type not in MODEL_TYPES:
        return ["linear" if cfg.layer_type(i) == "linear_attention" else "attention"
                for i in range(cfg.num_hidden_layers)]
    return _block_types(cfg)


def _layer_builder(cfg: ModelConfig) -> Callable[[ModelConfig, int, str], list[Tensor]]:
    """(cfg, i, kind) -> the tensors of layer i."""
    if cfg.model_type in QWEN35:
        return lambda c, i, k: _qwen35_layer(c, i)
    if cfg.model_type in FALCON_H1:
        return lambda c, i, k: _falcon_h1_layer(c, i)
    if cfg.model_type in KIMI_LINEAR:
        return lambda c, i, k: _kimi_layer(c, i)
    return {"lfm2": _lfm2_layer, "lfm2_moe": _lfm2_layer, "jamba": _jamba_layer, "nemotron_h": _nemotron_layer,
            "granitemoehybrid": _granite_layer}[cfg.model_type]


def tensors(cfg: ModelConfig) -> list[Tensor]:
    """Every weight tensor of a hybrid text model, in llama.cpp naming (the MTP block excluded: llama.cpp skips it
    unless --spec-type draft-mtp loads it, qwen35.cpp ``mtp_flags = TENSOR_SKIP``; mlx-lm drops ``mtp.*`` in
    qwen3_5.py sanitize)."""
    from .architecture import Tensor

    h, V = cfg.hidden_size, cfg.vocab_size
    out = [Tensor("token_embd", None, h, V, group="embedding")]
    layer = _layer_builder(cfg)
    for i, kind in enumerate(_kinds(cfg)):
        out += layer(cfg, i, kind)
    # LFM2's final norm is llama.cpp LLM_TENSOR_OUTPUT_NORM_LFM2 "token_embd_norm" (llama-arch.cpp)
    out.append(Tensor("token_embd_norm" if cfg.model_type in LFM2 else "output_norm", None, h, 1, group="norm",
                      quantizable=False))
    if not cfg.tie_word_embeddings:
        out.append(Tensor("output", None, h, V, group="output"))
    return out


def _jamba_cache(cfg: ModelConfig) -> CacheLayer:
    """llama.cpp (n_group 0): n_embd_r = (k-1) d_inner, n_embd_s = N d_inner, F32. mlx-lm ArraysCache(size=2):
    conv rows (B, k-1, d_inner) and the scan state (B, d_inner, N), both in the activation dtype (jamba.py ssm_step
    builds the state from delta * x * B without a float32 cast)."""
    from .architecture import CacheLayer

    d, N, _, k = _mamba1_dims(cfg)
    return CacheLayer("linear", state_f32_elems=(k - 1) * d + N * d, mlx_state_bytes=((k - 1) * d + N * d) * MLX_CONV_BYTES)


def _conv_cache(cfg: ModelConfig) -> CacheLayer:
    """llama.cpp n_embd_r = n_embd * (n_shortconv_l_cache - 1), n_embd_s = 0 (llama-hparams.cpp); mlx-lm
    ArraysCache(size=1): the last L-1 rows of B*x, (B, L-1, hidden) in the activation dtype (lfm2.py ShortConv)."""
    from .architecture import CacheLayer

    r = (_conv_taps(cfg) - 1) * cfg.hidden_size
    return CacheLayer("linear", state_f32_elems=r, mlx_state_bytes=r * MLX_CONV_BYTES)


def _recurrent_cache(cfg: ModelConfig) -> CacheLayer:
    if cfg.model_type in MAMBA2_MIXERS:
        return _mamba2_cache(cfg)
    if cfg.model_type in JAMBA:
        return _jamba_cache(cfg)
    if cfg.model_type in LFM2:
        return _conv_cache(cfg)
    if cfg.model_type in KIMI_LINEAR:
        return _kda_cache(cfg)
    return _gdn_cache(cfg)


def cache_layers(cfg: ModelConfig) -> list[CacheLayer]:
    """Cache entries in layer order: an attention layer holds K and V per token (Kimi Linear's MLA: the latent + rope
    key, no V), a recurrent layer a state per sequence, a Falcon-H1 layer both, MoE / MLP blocks nothing.
    llama.cpp src/llama-model.cpp create_memory: llama_memory_hybrid with filter_attn = !is_recr and filter_recr =
    is_recr (nemotron_h: && n_ff == 0; falcon-h1: both true); mlx-lm make_cache: ArraysCache for the recurrent
    layers, KVCache for attention (Falcon-H1: CacheList of both), nothing for Nemotron-H E / - blocks."""
    from .architecture import CacheLayer

    Hkv, hd = cfg.num_key_value_heads, cfg.head_dim
    if cfg.model_type in KIMI_LINEAR:
        attn = CacheLayer("mla", k_elems=(cfg.kv_lora_rank or 0) + (cfg.qk_rope_head_dim or 0))
    else:
        attn = CacheLayer("full", Hkv * hd, Hkv * hd)
    kinds = _kinds(cfg)
    rec = _recurrent_cache(cfg) if any(k in RECURRENT_KINDS for k in kinds) else None
    out: list[CacheLayer] = []
    for kind in kinds:
        if kind in RECURRENT_KINDS and rec is not None:  # rec is None only when no layer is recurrent
            out.append(rec)
        if kind in ATTENTION_KINDS:
            out.append(attn)
    return out


def checkpoint_note(state_bytes_per_seq: int, runtime_id: str) -> str:
    """The host memory llama-server may add for a hybrid: up to 32 recurrent-state checkpoints per slot, outside
    the GPU buffers (unified memory on a Mac: it comes out of the same RAM, not out of the wired GPU limit)."""
    mib = state_bytes_per_seq / 2**20
    top = LLAMA_SERVER_CTX_CHECKPOINTS * state_bytes_per_seq / 2**30
    return (f"{runtime_id}: llama-server keeps up to {LLAMA_SERVER_CTX_CHECKPOINTS} context checkpoints of the "
            f"recurrent state per slot in host memory ({mib:,.1f} MiB each, up to {top:,.2f} GiB per slot, not in "
            "the GPU total above; --ctx-checkpoints N lowers it)")


def recurrent_layers(cfg: ModelConfig) -> int:
    """Layers that hold a recurrent state (gated DeltaNet, KDA, Mamba, short-conv; Falcon-H1's every layer): each
    runs its own chain of small kernels per forward pass (throughput.Roofline.fixed_time)."""
    return sum(k in RECURRENT_KINDS for k in _kinds(cfg)) if handles(cfg) else 0


def recurrent_kind(cfg: ModelConfig) -> str:
    """What the recurrent layers are, for the model summary line."""
    if cfg.model_type in MAMBA2:
        return "Mamba-2"
    if cfg.model_type in FALCON_H1:
        return "Mamba-2 (each beside an attention)"
    if cfg.model_type in JAMBA:
        return "Mamba"
    if cfg.model_type in LFM2:
        return "short-conv"
    if cfg.model_type in KIMI_LINEAR:
        return "KDA"
    return "linear-attention"  # gated DeltaNet (Qwen3-Next, Qwen3.5)


def mlx_prefill_transient(cfg: ModelConfig, S: int, act: int) -> int:
    """Extra transient bytes of one recurrent layer in an mlx-lm prefill chunk of S tokens. [bytes]

    Jamba: JambaMambaMixer.ssm_step materialises the per-token states of the whole chunk, new_state and dtA, each
    (B, S, d_inner, N) in the activation dtype (mlx_lm/models/jamba.py; its "TODO, speed up prefill with chunked
    scan"). Mamba-2: mlx_lm/models/ssm.py ssm_attn works in 256-token steps, holding CB, the decay and the masked
    surrogate attention, (B, H, 256, 256) each, in float32. The gated delta rule (qwen3_5, kimi_linear) and the
    short convs keep only their state."""
    if cfg.model_type in JAMBA:
        d, N, _, _ = _mamba1_dims(cfg)
        return 2 * S * d * N * act
    if cfg.model_type in MAMBA2_MIXERS:
        step = min(S, 256)
        return 3 * _mamba2_dims(cfg)[0] * step * step * F32
    return 0


def state_flops(cfg: ModelConfig) -> float:
    """FLOPs per token (one sequence) of every recurrent layer's state update: decode does it once per step,
    prefill once per prompt token. [FLOP]"""
    n = sum(k in RECURRENT_KINDS for k in _kinds(cfg))
    if not n:
        return 0.0
    if cfg.model_type in MAMBA2_MIXERS:
        return n * _mamba2_flops(cfg)
    if cfg.model_type in KIMI_LINEAR:  # the gated delta rule with a per-channel decay (same kernel, G = d)
        H, d, _, _ = _gdn_dims(cfg)
        return n * (7.0 * H * d * d + 2.0 * (cfg.linear_conv_kernel_dim or 4) * 3 * H * d)
    if cfg.model_type in JAMBA:  # selective scan: decay, dt*x*B, C readout per state element + conv
        d, N, _, k = _mamba1_dims(cfg)
        return n * (6.0 * d * N + 2.0 * k * d)
    if cfg.model_type in LFM2:  # depthwise conv (2 L per channel) + the B*x and C*y gates (lfm2.py ShortConv)
        return n * 2.0 * (_conv_taps(cfg) + 2) * cfg.hidden_size
    # Qwen3.5, and Qwen3-Next's linear layers (planner/architecture.py): the same gated delta rule
    return n * _gdn_flops(cfg)
