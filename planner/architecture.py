"""The tensors and cache layout of a model, derived from its HF config.

Tensor names follow llama.cpp (``blk.N.attn_v`` -> ``attn_v``) because the GGUF preset rules match on them.
Shapes are ggml order: ``ne0`` is the row length (the input dimension), ``ne1`` the number of rows.
References: llama.cpp src/llama-model.cpp (load_tensors), src/llama-arch.cpp (tensor names);
mlx-lm mlx_lm/models/{llama,qwen3_moe,deepseek_v3,qwen3_next,gpt_oss}.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple, TypeVar, cast

from . import hybrid
from .errors import UnsupportedArchitectureError
from .schema import ModelConfig

# model_types whose tensors we know how to lay out; anything else is refused, never treated as a Llama
SUPPORTED = {
    "llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "qwen2_moe", "qwen3_next", "gemma", "gemma2",
    "gemma3", "gemma3_text", "phi3", "deepseek_v2", "deepseek_v3", "kimi_k2", "gpt_oss", "granite", "olmo2",
    "starcoder2", "cohere", "internlm3", "exaone",
    # GQA attention (q/k/v bias) + DeepSeek-style routed/shared experts with leading dense layers: llama.cpp
    # src/models/glm4-moe.cpp, mlx_lm/models/glm4_moe.py (the multi-token-prediction layer is not loaded)
    "glm4_moe",
    # GQA attention + Mixtral-style routed experts (num_local_experts, intermediate_size per expert), every layer
    # full softmax attention: llama.cpp src/models/minimax-m2.cpp, mlx_lm/models/minimax.py
    "minimax_m2",
    # Llama 4: 3 of 4 layers chunked attention (RoPE), every 4th global (NoPE); routed experts + a shared expert on
    # every interleave_moe_layer_step-th layer, dense FFN of intermediate_size_mlp elsewhere: llama.cpp
    # src/models/llama.cpp (LLM_ARCH_LLAMA4, LLAMA_SWA_TYPE_CHUNKED), mlx_lm/models/llama4.py
    "llama4",
    # SmolLM3: Llama tensors; every 4th layer skips RoPE (no_rope_layers), which changes positions, not memory:
    # llama.cpp src/models/smollm3.cpp, mlx_lm/models/smollm3.py
    "smollm3",
}
# --- Gemma 4, DSA indexer, MLA variants, encoders: layouts kept in their own modules (planner/arch_gemma4.py ...)
_GEMMA4 = {"gemma4_text"}  # planner/arch_gemma4.py
SUPPORTED |= _GEMMA4 | {"glm4_moe_lite", "deepseek_v32", "glm_moe_dsa"}  # MLA variants: planner/arch_attention.py
# sliding-window text families with Llama / OLMo 2 tensors (sources/hf_attention.py TEXT_FAMILIES)
SUPPORTED |= {"ministral3", "olmo3"}
# recurrent / linear-attention hybrids (Qwen3.5 gated delta net, Mamba-2, short conv): planner/hybrid.py
SUPPORTED |= hybrid.MODEL_TYPES
# 2026 families on the Llama attention layout (keys mapped in sources/hfconfig.py):
# - Apertus: per-head q/k RMSNorm and a non-gated xIELU MLP (up_proj, down_proj only): mlx_lm/models/apertus.py
#   (ApertusMLP, q_norm/k_norm), llama.cpp src/models/apertus.cpp (ffn_up/ffn_down, attn_q_norm/attn_k_norm; the
#   xIELU alpha/beta/eps are GGUF scalars, mlx-lm keeps them as 4 scalar arrays per layer, neither counted here)
# - Hunyuan dense (hunyuan_v1_dense): Llama tensors + per-head q/k RMSNorm: mlx_lm/models/hunyuan_v1_dense.py
#   (query_layernorm/key_layernorm), llama.cpp src/models/hunyuan-vl.cpp (attn_q_norm/attn_k_norm, required)
# - ERNIE 4.5 MoE: Llama attention, dense leading layer(s), softmax-routed experts + one shared MLP of
#   moe_num_shared_experts x moe_intermediate_size: mlx_lm/models/ernie4_5_moe.py, llama.cpp src/models/ernie4-5.cpp
SUPPORTED |= {"apertus", "hunyuan_v1_dense", "ernie4_5_moe"}
QK_NORM_TYPES = {"apertus", "hunyuan_v1_dense"}  # attn_q_norm / attn_k_norm of head_dim per layer
NON_GATED_FFN = {"apertus"}  # ffn_up + ffn_down, no ffn_gate


@dataclass(frozen=True, init=False)
class Tensor:
    """One weight tensor (a docstring of its own: without one, dataclass builds one from inspect.signature at
    import)."""

    name: str                 # llama.cpp short name: attn_q, ffn_down_exps, token_embd, ...
    layer: int | None
    ne0: int                  # row length [elements]
    ne1: int                  # rows
    n: int = 1                # experts stacked in a 3-D tensor
    group: str = "attention"  # embedding | output | attention | ffn | experts | shared_experts | router | norm | ssm
    quantizable: bool = True  # llama-quant.cpp tensor_allows_quantization / mlx to_quantized

    def __init__(self, name: str, layer: int | None, ne0: int, ne1: int, n: int = 1, group: str = "attention",
                 quantizable: bool = True) -> None:
        # the frozen dataclass's own __init__ sets each field through object.__setattr__: one call here instead
        # of seven (a catalog sweep builds ~90,000 tensors)
        object.__setattr__(self, "__dict__", {"name": name, "layer": layer, "ne0": ne0, "ne1": ne1, "n": n,
                                              "group": group, "quantizable": quantizable})

    @property
    def n_elements(self) -> int:
        return self.ne0 * self.ne1 * self.n


class CacheLayer(NamedTuple):
    """One layer's KV cache or recurrent state, per token or per sequence. A named tuple: immutable and compared
    and hashed by value as a frozen dataclass is (a KV layout keys its per-layer bytes by it), without the six
    methods a dataclass compiles when the module is imported."""

    kind: str                 # full | sliding | mla | linear
    k_elems: int = 0          # per token
    v_elems: int = 0          # per token (0 for MLA in llama.cpp: no V tensor)
    window: int | None = None
    state_f32_elems: int = 0  # recurrent state per sequence (llama.cpp n_embd_r + n_embd_s)
    mlx_state_bytes: int = 0  # mlx-lm ArraysCache per sequence
    head_dim: int = 0         # per-head size of K and V on this layer (0: the config's head_dim)
    owner: int | None = None  # KV-shared layer (Gemma 4): attends over layer ``owner``'s cache, holds none itself
    index_elems: int = 0      # DSA lightning-indexer key per token (one head of index_head_dim)


def check_supported(cfg: ModelConfig) -> None:
    if cfg.model_type not in SUPPORTED:
        raise UnsupportedArchitectureError(
            f"model_type {cfg.model_type!r} is not supported yet: its tensor and cache layout is not modelled "
            f"(supported: {', '.join(sorted(SUPPORTED))})")
    if any(t == "linear_attention" for t in (cfg.layer_types or [])) and not cfg.linear_num_value_heads:
        raise UnsupportedArchitectureError(
            "linear-attention layers without linear_num_value_heads/linear_key_head_dim are not supported yet")


def linear_dims(cfg: ModelConfig) -> tuple[int, int, int, int]:
    """(key heads, key head dim, value heads, value head dim) of the gated-delta-net layers (Qwen3-Next)."""
    kh, kd, vh, vd = (cfg.linear_num_key_heads, cfg.linear_key_head_dim, cfg.linear_num_value_heads,
                      cfg.linear_value_head_dim)
    if kh is None or kd is None or vh is None or vd is None:
        raise UnsupportedArchitectureError(
            "linear-attention layers need linear_num_key_heads, linear_key_head_dim, linear_num_value_heads and "
            "linear_value_head_dim")
    return kh, kd, vh, vd


def _attention(cfg: ModelConfig, i: int) -> list[Tensor]:
    h, H, Hkv, hd = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    kind = cfg.layer_type(i)
    if kind == "linear_attention":
        # Qwen3-Next gated delta net: in_proj_qkvz, in_proj_ba, conv1d, out_proj (mlx_lm/models/qwen3_next.py)
        n_kh, khd, n_vh, vhd = linear_dims(cfg)
        kd, vd = n_kh * khd, n_vh * vhd
        conv_dim = 2 * kd + vd
        return [
            Tensor("ssm_in", i, h, 2 * kd + 2 * vd, group="attention"),
            Tensor("ssm_ba", i, h, 2 * n_vh, group="attention"),
            Tensor("ssm_conv1d", i, cfg.linear_conv_kernel_dim or 4, conv_dim, group="ssm", quantizable=False),
            Tensor("ssm_out", i, vd, h, group="attention"),
            Tensor("ssm_norm", i, vhd, 1, group="norm", quantizable=False),
            Tensor("ssm_a", i, n_vh, 2, group="norm", quantizable=False),
        ]
    rank = cfg.kv_lora_rank
    if rank is not None:  # MLA (cfg.is_mla)
        # DeepSeek V2/V3 (llama.cpp src/models/deepseek2.cpp; mlx_lm/models/deepseek_v3.py)
        qk = (cfg.qk_nope_head_dim or 128) + (cfg.qk_rope_head_dim or 64)
        out = []
        if cfg.q_lora_rank:
            out += [Tensor("attn_q_a", i, h, cfg.q_lora_rank), Tensor("attn_q_b", i, cfg.q_lora_rank, H * qk),
                    Tensor("attn_q_a_norm", i, cfg.q_lora_rank, 1, group="norm", quantizable=False)]
        else:
            out.append(Tensor("attn_q", i, h, H * qk))
        out += [
            Tensor("attn_kv_a_mqa", i, h, rank + (cfg.qk_rope_head_dim or 64)),
            Tensor("attn_kv_a_norm", i, rank, 1, group="norm", quantizable=False),
            Tensor("attn_kv_b", i, rank, H * ((cfg.qk_nope_head_dim or 128) + (cfg.v_head_dim or 128))),
            Tensor("attn_output", i, H * (cfg.v_head_dim or 128), h),
        ]
        if cfg.index_head_dim:  # DSA lightning indexer (planner/arch_attention.py)
            from .arch_attention import indexer_tensors
            out += indexer_tensors(cfg, i)
        return out
    # Qwen3-Next full-attention layers gate their output: q_proj emits 2 x H x hd (mlx_lm/models/qwen3_next.py)
    q_mult = 2 if cfg.model_type == "qwen3_next" else 1
    if cfg.model_type == "phi3":
        # Phi-3/Phi-4 keep qkv_proj fused: llama.cpp blk.N.attn_qkv (src/models/phi3.cpp create_tensor_qkv;
        # conversion/phi.py Phi3MiniModel does not split it), which llama-quantize treats as attn_v
        out = [Tensor("attn_qkv", i, h, (H + 2 * Hkv) * hd), Tensor("attn_output", i, H * hd, h)]
    else:
        out = [
            Tensor("attn_q", i, h, q_mult * H * hd),
            Tensor("attn_k", i, h, Hkv * hd),
            Tensor("attn_v", i, h, Hkv * hd),
            Tensor("attn_output", i, H * hd, h),
        ]
    if cfg.attention_bias:
        out.append(Tensor("attn_qkv_bias", i, (H + 2 * Hkv) * hd, 1, group="norm", quantizable=False))
    if cfg.model_type == "gpt_oss":
        # o_proj bias and per-head attention sinks (llama.cpp src/models/openai-moe.cpp wo_b, attn_sinks; mlx_lm gpt_oss.py)
        out += [Tensor("attn_output_bias", i, h, 1, group="norm", quantizable=False),
                Tensor("attn_sinks", i, H, 1, group="norm", quantizable=False)]
    if cfg.model_type in QK_NORM_TYPES:
        out += [Tensor("attn_q_norm", i, hd, 1, group="norm", quantizable=False),
                Tensor("attn_k_norm", i, hd, 1, group="norm", quantizable=False)]
    return out


def _ffn(cfg: ModelConfig, i: int) -> list[Tensor]:
    h = cfg.hidden_size
    if cfg.is_moe_layer(i):
        E, f = cfg.n_experts, cfg.expert_ffn
        out = [
            Tensor("ffn_gate_inp", i, h, E, group="router", quantizable=False),
            Tensor("ffn_gate_exps", i, h, f, E, group="experts"),
            Tensor("ffn_up_exps", i, h, f, E, group="experts"),
            Tensor("ffn_down_exps", i, f, h, E, group="experts"),
        ]
        if cfg.model_type == "gpt_oss":
            # router and expert biases, F32 in the GGUF (names end in .bias: never quantized, converter F32):
            # llama.cpp src/models/openai-moe.cpp (ffn_gate_inp_b, ffn_{gate,up,down}_exps_b), mlx_lm gpt_oss.py
            out += [Tensor("ffn_gate_inp_bias", i, E, 1, group="router", quantizable=False),
                    Tensor("ffn_gate_exps_bias", i, f, 1, E, group="experts", quantizable=False),
                    Tensor("ffn_up_exps_bias", i, f, 1, E, group="experts", quantizable=False),
                    Tensor("ffn_down_exps_bias", i, h, 1, E, group="experts", quantizable=False)]
        sf = cfg.shared_ffn
        if sf:
            out += [
                Tensor("ffn_gate_shexp", i, h, sf, group="shared_experts"),
                Tensor("ffn_up_shexp", i, h, sf, group="shared_experts"),
                Tensor("ffn_down_shexp", i, sf, h, group="shared_experts"),
            ]
        return out
    f = cfg.dense_ffn
    if cfg.model_type in NON_GATED_FFN:
        return [Tensor("ffn_up", i, h, f, group="ffn"), Tensor("ffn_down", i, f, h, group="ffn")]
    return [
        Tensor("ffn_gate", i, h, f, group="ffn"),
        Tensor("ffn_up", i, h, f, group="ffn"),
        Tensor("ffn_down", i, f, h, group="ffn"),
    ]


_MEMO: dict[tuple[str, int], tuple[ModelConfig, object]] = {}
R = TypeVar("R")


def _memo(kind: str, cfg: ModelConfig, build: Callable[[ModelConfig], R]) -> R:
    """Per-config cache keyed on identity (configs are frozen and profiles are loaded once); keeps the config
    alive so its id is not reused. A plan asks for the same layout once per quant and KV type."""
    key = (kind, id(cfg))
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is cfg:
        return cast(R, hit[1])  # stored by build() under this kind: one cache for layouts of several types
    if len(_MEMO) > 4096:  # a catalog sweep keeps ~6 entries for each of 100+ models
        _MEMO.clear()
    val = build(cfg)
    _MEMO[key] = (cfg, val)
    return val


def tensors(cfg: ModelConfig) -> tuple[Tensor, ...]:
    """Every weight tensor of the text model (norms included), in llama.cpp naming."""
    return _memo("tensors", cfg, _tensors)


def cache_layers(cfg: ModelConfig) -> tuple[CacheLayer, ...]:
    """Per-layer KV/state layout (llama.cpp src/llama-kv-cache.cpp, src/llama-memory-recurrent.cpp)."""
    return _memo("cache", cfg, _cache_layers)


def tensor_summary(cfg: ModelConfig) -> tuple[tuple[str, int, bool, int], ...]:
    """(group, ne0, quantizable, elements) summed over tensors that share them: enough for formats whose cost
    does not depend on the layer index (MLX)."""
    def build(c: ModelConfig) -> tuple[tuple[str, int, bool, int], ...]:
        acc: dict[tuple[str, int, bool], int] = {}
        for t in tensors(c):
            k = (t.group, t.ne0, t.quantizable)
            acc[k] = acc.get(k, 0) + t.ne0 * t.ne1 * t.n  # n_elements
        return tuple((g, ne0, q, n) for (g, ne0, q), n in acc.items())
    return _memo("summary", cfg, build)


def _tensors(cfg: ModelConfig) -> tuple[Tensor, ...]:
    check_supported(cfg)
    if cfg.model_type in _GEMMA4:
        from . import arch_gemma4
        return tuple(arch_gemma4.tensors(cfg))
    if hybrid.handles(cfg):
        return tuple(hybrid.tensors(cfg))
    h, V = cfg.hidden_size, cfg.vocab_size
    out = [Tensor("token_embd", None, h, V, group="embedding")]
    for i in range(cfg.num_hidden_layers):
        out.append(Tensor("attn_norm", i, h, 1, group="norm", quantizable=False))
        out += _attention(cfg, i)
        out.append(Tensor("ffn_norm", i, h, 1, group="norm", quantizable=False))
        out += _ffn(cfg, i)
    out.append(Tensor("output_norm", None, h, 1, group="norm", quantizable=False))
    if not cfg.tie_word_embeddings:
        out.append(Tensor("output", None, h, V, group="output"))
    return tuple(out)


def _cache_layers(cfg: ModelConfig) -> tuple[CacheLayer, ...]:
    check_supported(cfg)
    if cfg.model_type in _GEMMA4:
        from . import arch_gemma4
        return tuple(arch_gemma4.cache_layers(cfg))
    if hybrid.handles(cfg):
        return tuple(hybrid.cache_layers(cfg))
    out = []
    Hkv, hd = cfg.num_key_value_heads, cfg.head_dim
    for i in range(cfg.num_hidden_layers):
        kind = cfg.layer_type(i)
        if kind == "linear_attention":
            n_kh, khd, n_vh, vhd = linear_dims(cfg)
            kd, vd = n_kh * khd, n_vh * vhd
            k = cfg.linear_conv_kernel_dim or 4
            # llama.cpp n_embd_r = (d_conv-1)*(d_inner + 2*n_group*d_state), n_embd_s = d_state*d_inner (f32)
            r = (k - 1) * (vd + 2 * kd)
            s = khd * vd
            # mlx-lm ArraysCache: conv state (k-1, 2kd+vd) bf16 + recurrent (Hv, Dv, Dk) f32 (gated_delta.py)
            mlx = (k - 1) * (2 * kd + vd) * 2 + n_vh * vhd * khd * 4
            out.append(CacheLayer("linear", state_f32_elems=r + s, mlx_state_bytes=mlx))
        elif cfg.kv_lora_rank is not None:  # MLA (cfg.is_mla)
            # latent kv_lora_rank + decoupled rope key, no V (llama.cpp has_v = !is_mla)
            out.append(CacheLayer("mla", k_elems=cfg.kv_lora_rank + (cfg.qk_rope_head_dim or 64),
                                  index_elems=cfg.index_head_dim or 0))  # DSA indexer keys: arch_attention.py
        elif kind == "sliding_attention":
            out.append(CacheLayer("sliding", Hkv * hd, Hkv * hd, window=cfg.sliding_window))
        elif kind == "chunked_attention":
            # attention within aligned chunks: llama.cpp keeps it in the SWA cache with n_swa = chunk size
            # (llama-kv-cache-iswa.cpp), mlx-lm in a ChunkedKVCache trimmed to the current chunk (models/cache.py)
            out.append(CacheLayer("sliding", Hkv * hd, Hkv * hd, window=cfg.attention_chunk_size))
        else:
            out.append(CacheLayer("full", Hkv * hd, Hkv * hd))
    return tuple(out)


def n_params(cfg: ModelConfig) -> int:
    # the summary holds every tensor's elements (grouped), and a sweep builds it anyway (mlx_weights)
    return _memo("n_params", cfg, lambda c: sum(n for _, _, _, n in tensor_summary(c)))


def active_params(cfg: ModelConfig) -> int:
    """Parameters touched per decoded token, excluding the embedding gather (one row)."""
    return _memo("active_params", cfg, _active_params)


def _active_params(cfg: ModelConfig) -> int:
    total = 0
    for t in tensors(cfg):
        if t.group == "embedding":
            total += t.n_elements if cfg.tie_word_embeddings else 0  # tied: read once as the head
        elif t.group == "lookup":
            continue  # a per-layer embedding table (Gemma 4 PLE): one row gathered per token, never multiplied
        elif t.group == "experts":
            total += t.ne0 * t.ne1 * min(cfg.num_experts_per_tok or 1, t.n)
        else:
            total += t.n_elements
    return total
