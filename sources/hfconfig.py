"""HF ``config.json`` dict -> ModelConfig: keep known keys, unwrap VLM ``text_config``, normalise MoE/SWA variants.

Key names and defaults: transformers configuration_*.py and mlx-lm mlx_lm/models/*.py ``ModelArgs``
(see docs/model-facts.md §6.1). Architectures we cannot lay out raise UnsupportedArchitectureError, never "Llama".
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from planner.architecture import SUPPORTED
from planner.errors import UnsupportedArchitectureError, render_validation_error
from planner.schema import MAX_LAYERS, ModelConfig

from . import hf_attention
from .bounds import check_layers, check_pattern
from .errors import SourceError

KNOWN_KEYS = set(ModelConfig.model_fields)
LAYER_TYPES = {"full_attention", "sliding_attention", "linear_attention", "chunked_attention"}
# config keys that mean state-space (Mamba) layers: Jamba, Nemotron-H, Granite 4, Falcon-H1
SSM_KEYS = ("mamba_d_state", "mamba_d_conv", "mamba_expand", "attn_layer_period", "attn_layer_indices",
            "hybrid_override_pattern", "ssm_state_size", "mamba_n_heads")
# transformers configuration_gemma3.py Gemma3TextConfig / configuration_gemma2.py defaults (not head counts: those
# must be in the file)
MODEL_DEFAULTS = {
    "gemma3_text": {"vocab_size": 262_208, "max_position_embeddings": 131_072, "tie_word_embeddings": True,
                    "sliding_window_pattern": 6},
    "gemma2": {"vocab_size": 256_000, "max_position_embeddings": 8192, "tie_word_embeddings": True},
    "gemma": {"tie_word_embeddings": True},
    # transformers modeling_qwen2.py: q/k/v projections always carry a bias (the config has no key for it)
    "qwen2": {"attention_bias": True},
}
VLM_TEXT_TYPES = {"gemma3": "gemma3_text", "mistral3": "mistral", "llava": "llama"}
# VLMs whose language model is a known text architecture with only M-RoPE positions changed (same tensors and
# KV cache): transformers modeling_qwen2_5_vl.py Qwen2_5_VLTextModel reuses the Qwen2 decoder layer
VLM_FLAT_TYPES = {"qwen2_vl": "qwen2", "qwen2_5_vl": "qwen2"}
# text_config model_types whose tensors and KV cache are those of a known text model: Llama 4's own layout;
# Qwen3-VL's decoders are Qwen3 / Qwen3-MoE with interleaved M-RoPE and DeepStack features added to the hidden
# states (positions and activations, no extra weights): transformers modeling_qwen3_vl.py / modeling_qwen3_vl_moe.py
TEXT_TYPES = {"llama4_text": "llama4", "qwen3_vl_text": "qwen3", "qwen3_vl_moe_text": "qwen3_moe"}
# key spellings of configs written before the transformers names settled (EXAONE 3.x configuration_exaone.py)
KEY_ALIASES = {"num_layers": "num_hidden_layers"}


def _seed_oss(d: dict[str, Any], source: str) -> None:
    """Seed-OSS is the Llama decoder with biases on q/k/v only, every layer full attention: llama.cpp
    src/models/seed-oss.cpp (create_tensor_qkv with optional biases, wo, attn_norm + attn_post_norm, SwiGLU), mlx_lm
    models/seed_oss.py (q/k/v bias=attention_bias, o_proj bias=attention_out_bias, MLP bias=mlp_bias, one KVCache per
    layer). The planner's llama layout with attention_bias is exactly that (q/k/v biases, none on o_proj)."""
    for k in ("attention_out_bias", "mlp_bias"):
        if d.get(k):
            raise UnsupportedArchitectureError(
                f"{source}: model_type 'seed_oss' with {k} true is not supported yet: only q/k/v biases are modelled")
    d["model_type"] = "llama"


def _exaone4(d: dict[str, Any], source: str) -> None:
    """EXAONE 4.0 has OLMo 2's tensors (post-attention and post-feedforward RMSNorm, per-head q/k norms, no biases,
    SwiGLU) and, when sliding_window_pattern is set, local layers (pattern letter 'L') with a sliding_window cache and
    global ones ('G', NoPE) with a full cache: llama.cpp src/models/exaone4.cpp (attn_post_norm, ffn_post_norm,
    q/k norms; SWA pattern 4 with n_swa 4096 on the 64-layer model, none on the 1.2B), mlx_lm/models/exaone4.py
    (is_local = pattern[i % len(pattern)] == 'L'; make_cache: RotatingKVCache(sliding_window) or KVCache). That is the
    planner's olmo3 layout with these layer_types."""
    n = d.get("num_hidden_layers")
    pattern = d.pop("sliding_window_pattern", None)
    if n is None:
        return
    n = check_layers(n, source)
    if pattern and d.get("sliding_window"):
        if not isinstance(pattern, str) or set(pattern) - {"L", "G"}:
            raise UnsupportedArchitectureError(f"{source}: model_type 'exaone4' with sliding_window_pattern "
                                               f"{pattern!r} is not supported yet: only 'L'/'G' letter patterns are modelled")
        types = ["sliding_attention" if pattern[i % len(pattern)] == "L" else "full_attention" for i in range(n)]
        if d.get("layer_types") not in (None, types):
            raise SourceError(f"{source}: layer_types disagree with sliding_window_pattern {pattern!r}; "
                              "fix or re-download config.json")
        d["layer_types"] = types
    else:  # no pattern: every layer global (mlx_lm exaone4.py is_local None)
        d["sliding_window"] = None
        d["layer_types"] = None
    d["model_type"] = "olmo3"


def swa_layer_types(n_layers: int, pattern: int, first_sliding: bool = True) -> list[str]:
    """llama.cpp llama_hparams::set_swa_pattern(n): layer il is SWA iff il % n < n - 1 (n=6: 5 local + 1 global)."""
    return ["sliding_attention" if il % pattern < pattern - 1 else "full_attention" for il in range(n_layers)]


def from_hf_config(raw: dict, source: str = "config.json") -> ModelConfig:
    """A ModelConfig from the contents of a HF config.json (any extra keys dropped)."""
    if not isinstance(raw, dict):
        raise SourceError(f"{source}: expected a JSON object, got {type(raw).__name__}; re-download config.json")
    d: dict[str, Any] = dict(raw)
    outer_type = d.get("model_type")
    tc = d.get("text_config")
    for where, v in (("model_type", outer_type), ("text_config.model_type", tc.get("model_type")
                                                  if isinstance(tc, dict) else None)):
        if v is not None and (not isinstance(v, str) or len(v) > 100):
            raise SourceError(f"{source}: {where} must be a short string, not {type(v).__name__}; "
                              "fix or re-download config.json")
    if isinstance(tc, dict):
        # VLM wrapper (Gemma3ForConditionalGeneration, Mistral3, Qwen-VL): the LM lives in text_config
        merged = {k: v for k, v in d.items() if k not in ("text_config", "vision_config")}
        merged.update(tc)
        if not tc.get("model_type") or outer_type in VLM_FLAT_TYPES:
            merged["model_type"] = VLM_TEXT_TYPES.get(outer_type, outer_type)
        elif tc.get("model_type") == "gemma3":
            merged["model_type"] = "gemma3_text"
        d = merged
    if isinstance(tc, dict):
        hf_attention.unwrap(d, raw)  # --- Gemma 4, DSA indexer, MLA variants, encoders
    if d.get("model_type") in TEXT_TYPES:
        d["model_type"] = TEXT_TYPES[d["model_type"]]
    if d.get("model_type") == "seed_oss":
        _seed_oss(d, source)
    if d.get("model_type") == "exaone4":
        _exaone4(d, source)
    for src, dst in KEY_ALIASES.items():
        if dst not in d and src in d:
            d[dst] = d[src]
    if d.get("model_type") in VLM_FLAT_TYPES:
        d["model_type"] = VLM_FLAT_TYPES[d["model_type"]]
    mt = d.get("model_type")
    if not mt:
        raise SourceError(f"{source}: no model_type; is this a transformers config.json?")
    if any(d.get(k) is not None for k in SSM_KEYS):
        raise UnsupportedArchitectureError(
            f"{source}: model_type {mt!r} is not supported yet: Mamba/state-space layers are not modelled")
    atl = d.get("attn_type_list")
    if isinstance(atl, list) and 0 in atl:
        # MiniMax-Text-01 / M1: attn_type 0 = lightning (linear) attention, 1 = softmax (configuration_minimax.py)
        raise UnsupportedArchitectureError(
            f"{source}: model_type {mt!r} is not supported yet: lightning (linear) attention layers are not modelled")
    lt = d.get("layer_types")
    if isinstance(lt, list):
        if len(lt) > MAX_LAYERS:
            raise SourceError(f"{source}: layer_types has {len(lt)} entries, over {MAX_LAYERS}; fix the config")
        unknown = sorted({str(t) for t in lt} - LAYER_TYPES)
        if unknown:
            raise UnsupportedArchitectureError(
                f"{source}: model_type {mt!r} is not supported yet: layer types {', '.join(unknown)} are not modelled")
    hf_attention.refuse(d, raw, source)
    if mt not in SUPPORTED:
        raise UnsupportedArchitectureError(
            f"{source}: model_type {mt!r} is not supported yet: its tensor and cache layout is not modelled "
            f"(supported: {', '.join(sorted(SUPPORTED))})")
    hf_attention.normalise(d, raw, source)  # --- Gemma 4, DSA indexer, MLA variants, encoders
    # --- transformers config-class defaults that published configs omit (Gemma3TextConfig, Gemma2Config)
    for k, v in MODEL_DEFAULTS.get(mt, {}).items():
        d.setdefault(k, v)
    # --- normalise key variants
    if d.get("torch_dtype") is None and d.get("dtype") is not None:
        d["torch_dtype"] = d["dtype"]
    if d.get("num_experts_per_tok") is None and d.get("experts_per_token") is not None:  # gpt-oss
        d["num_experts_per_tok"] = d["experts_per_token"]
    if d.get("num_experts_per_tok") is None and d.get("moe_topk") is not None:
        d["num_experts_per_tok"] = d["moe_topk"]
    if d.get("use_sliding_window") is False and not lt:
        d["sliding_window"] = None  # Qwen2.5 carries sliding_window but does not use it
    if d.get("max_position_embeddings") is None:
        d["max_position_embeddings"] = d.get("max_seq_len") or d.get("seq_length") or 4096
    sw, ctx = d.get("sliding_window"), d.get("max_position_embeddings")
    if not lt and isinstance(sw, int) and isinstance(ctx, int) and sw >= ctx:
        d["sliding_window"] = None  # a window no shorter than the context never slides (Phi-3.5, Ministral 8B)
    n_layers = d.get("num_hidden_layers")
    if not lt and d.get("sliding_window") and n_layers is not None:
        n_layers = check_layers(n_layers, source)  # before any per-layer list is built
        pattern = d.get("sliding_window_pattern")
        if pattern is not None:
            pattern = check_pattern(pattern, source)
        if mt in ("gemma3", "gemma3_text"):
            # transformers Gemma3TextConfig: sliding_window_pattern default 6 (llama.cpp src/models/gemma3.cpp)
            d["layer_types"] = swa_layer_types(n_layers, pattern or 6)
        elif mt == "gemma2":
            d["layer_types"] = swa_layer_types(n_layers, 2)  # llama.cpp gemma2: set_swa_pattern(2)
        elif pattern and pattern > 1:
            d["layer_types"] = swa_layer_types(n_layers, pattern)
        # other models with a sliding_window but no pattern (Mistral 7B v0.1) slide on every layer
        elif mt in ("mistral", "mixtral", "starcoder2") and d.get("sliding_window"):
            d["layer_types"] = ["sliding_attention"] * n_layers
    if mt == "llama4":
        _llama4(d, source)
    for k in ("mlp_only_layers",):
        if d.get(k) == []:
            d[k] = None if k != "mlp_only_layers" else []
    if d.get("head_dim") is None:
        d.pop("head_dim", None)
    kept = {k: v for k, v in d.items() if k in KNOWN_KEYS and v is not None}
    missing = [k for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
               if k not in kept]
    if "intermediate_size" not in kept:
        ffn = d.get("moe_intermediate_size") or d.get("ffn_hidden_size") or d.get("n_inner")
        if ffn:
            kept["intermediate_size"] = ffn
        else:
            missing.append("intermediate_size")
    if missing:
        raise SourceError(f"{source}: missing {', '.join(missing)} (model_type {mt!r}); "
                          "pass a complete transformers config.json or a catalog id")
    try:
        cfg = ModelConfig.model_validate(kept)
    except ValidationError as e:
        raise SourceError(render_validation_error(source, e)) from None
    return check_consistency(cfg, source)


def check_consistency(cfg: ModelConfig, source: str) -> ModelConfig:
    """Internal consistency the schema's per-field bounds cannot see: query heads a multiple of KV heads (GQA
    groups, mlx_lm/models/base.py scaled_dot_product_attention repeats KV heads n_heads // n_kv_heads times),
    no more active experts than experts, head_dim > 0 when derived from hidden/heads."""
    h, kvh = cfg.num_attention_heads, cfg.num_key_value_heads
    if not cfg.is_mla and kvh and h % kvh:
        raise SourceError(f"{source}: num_attention_heads {h} is not a multiple of num_key_value_heads {kvh}; "
                          "fix or re-download config.json")
    if not cfg.head_dim:
        raise SourceError(f"{source}: head_dim is 0 (hidden_size {cfg.hidden_size} / {h} heads); "
                          "set head_dim or fix hidden_size")
    gkv = cfg.num_global_key_value_heads
    if gkv and h % gkv:
        raise SourceError(f"{source}: num_attention_heads {h} is not a multiple of num_global_key_value_heads {gkv}; "
                          "fix or re-download config.json")
    k = cfg.num_experts_per_tok or 0
    if cfg.n_experts and k > cfg.n_experts:
        raise SourceError(f"{source}: {k} active experts of {cfg.n_experts} (num_experts_per_tok > experts); "
                          "fix or re-download config.json")
    return cfg


def _llama4(d: dict[str, Any], source: str) -> None:
    """transformers configuration_llama4.py Llama4TextConfig: layers with RoPE use chunked attention, every
    no_rope_layer_interval-th layer is global NoPE attention; the MoE block adds a shared expert as wide as the
    routed ones (modeling_llama4.py Llama4TextMoe.shared_expert = Llama4TextMLP(config))."""
    n = d.get("num_hidden_layers")
    if n is None:
        return
    n = check_layers(n, source)  # before the per-layer list
    interval = check_pattern(d.get("no_rope_layer_interval") or 4, source, "no_rope_layer_interval")
    rope = d.get("no_rope_layers") or [int((i + 1) % interval != 0) for i in range(n)]
    if d.get("attention_chunk_size") and not d.get("layer_types") and isinstance(rope, list) and len(rope) == n:
        d["layer_types"] = ["chunked_attention" if r else "full_attention" for r in rope]
    if d.get("num_local_experts") and d.get("shared_expert_intermediate_size") is None:
        d["shared_expert_intermediate_size"] = d.get("intermediate_size")
    d.setdefault("interleave_moe_layer_step", 1)
