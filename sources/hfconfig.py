"""HF ``config.json`` dict -> ModelConfig: keep known keys, unwrap VLM ``text_config``, normalise MoE/SWA variants.

Key names and defaults: transformers configuration_*.py and mlx-lm mlx_lm/models/*.py ``ModelArgs``
(see docs/model-facts.md §6.1). Architectures we cannot lay out raise UnsupportedArchitectureError, never "Llama".
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from planner import hybrid
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
    "falcon_h1": {"mamba_rms_norm": False},  # configuration_falcon_h1.py default
    # mlx_lm/models/qwen3_5.py TextModelArgs: full_attention_interval 4 when layer_types is left out
    "qwen3_5": {"full_attention_interval": 4}, "qwen3_5_moe": {"full_attention_interval": 4},
}
VLM_TEXT_TYPES = {"gemma3": "gemma3_text", "mistral3": "mistral", "llava": "llama"}
# VLMs whose language model is a known text architecture with only M-RoPE positions changed (same tensors and
# KV cache): transformers modeling_qwen2_5_vl.py Qwen2_5_VLTextModel reuses the Qwen2 decoder layer
VLM_FLAT_TYPES = {"qwen2_vl": "qwen2", "qwen2_5_vl": "qwen2"}
# text_config model_types whose tensors and KV cache are those of a known text model: Llama 4's own layout;
# Qwen3-VL's decoders are Qwen3 / Qwen3-MoE with interleaved M-RoPE and DeepStack features added to the hidden
# states (positions and activations, no extra weights): transformers modeling_qwen3_vl.py / modeling_qwen3_vl_moe.py
TEXT_TYPES = {"llama4_text": "llama4", "qwen3_vl_text": "qwen3", "qwen3_vl_moe_text": "qwen3_moe",
              # EXAONE 4.5's text model is EXAONE 4.0's: transformers configuration_exaone4_5.py renames
              # text_config model_type exaone4_5_text to exaone4 ('first released with the text model type as
              # exaone4_5_text'); llama.cpp conversion/exaone.py Exaone4_5_TextModel(Exaone4Model) 'Tensors match
              # EXAONE4', its MTP block loaded as a skipped nextn layer (src/models/exaone4.cpp TENSOR_SKIP)
              "exaone4_5_text": "exaone4",
              **hybrid.TEXT_TYPES}  # recurrent hybrids: Qwen3.5 qwen3_5_text / qwen3_5_moe_text (planner/hybrid.py)
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


def _refuse_true(d: dict[str, Any], source: str, keys: tuple[str, ...], why: str) -> None:
    for k in keys:
        if d.get(k):
            raise UnsupportedArchitectureError(
                f"{source}: model_type {d.get('model_type')!r} with {k} true is not supported yet: {why}")


def _apertus(d: dict[str, Any], source: str) -> None:
    """Apertus (mlx_lm/models/apertus.py): q/k/v/o without bias whatever attention_bias says, up/down with bias iff
    mlp_bias, head_dim = hidden_size / num_attention_heads; q/k norms always present (llama.cpp apertus.cpp loads
    them as required tensors). Only the bias-free form is laid out."""
    _refuse_true(d, source, ("mlp_bias", "attention_bias"), "only the bias-free Apertus layout is modelled")
    h, n = d.get("hidden_size"), d.get("num_attention_heads")
    if isinstance(h, int) and isinstance(n, int) and n > 0:
        d["head_dim"] = h // n  # apertus.py ignores a head_dim key


def _hunyuan_dense(d: dict[str, Any], source: str) -> None:
    """Hunyuan dense (mlx_lm/models/hunyuan_v1_dense.py): attention_bias puts a bias on q/k/v AND o_proj, which the
    Llama layout does not model; use_cla (cross-layer KV sharing) is ignored by mlx-lm and llama.cpp alike, so a
    config asking for it is refused rather than planned with a cache neither runtime would build. Without
    use_qk_norm the tensors are plain Llama ones."""
    _refuse_true(d, source, ("attention_bias", "mlp_bias", "use_cla"),
                 "o_proj biases and cross-layer KV sharing are not modelled")
    if d.get("use_qk_norm") is False:
        d["model_type"] = "llama"


def _ernie45_moe(d: dict[str, Any], source: str) -> None:
    """ERNIE 4.5 MoE keys -> the planner's MoE fields (transformers configuration_ernie4_5_moe.py defaults:
    moe_k 6, moe_layer_start_index 1, moe_layer_end_index -1 = last layer, moe_layer_interval 1, tie true;
    mlx_lm/models/ernie4_5_moe.py: layer i is MoE iff (i + 1) % interval == 0 and start <= i <= end, shared MLP
    width moe_num_shared_experts x moe_intermediate_size, no router bias in the model (e_score_correction_bias and
    the mtp_* tensors are dropped by sanitize))."""
    _refuse_true(d, source, ("use_bias",), "q/k/v/o and MLP biases are not modelled")
    n = d.get("num_hidden_layers")
    start = 1 if d.get("moe_layer_start_index") is None else d["moe_layer_start_index"]
    end = d.get("moe_layer_end_index")
    step = 1 if d.get("moe_layer_interval") is None else d["moe_layer_interval"]
    for k, v in (("moe_layer_start_index", start), ("moe_layer_interval", step)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise UnsupportedArchitectureError(
                f"{source}: model_type 'ernie4_5_moe' with {k} {v!r} is not supported yet: only one integer is modelled")
    if step != 1:
        raise UnsupportedArchitectureError(
            f"{source}: model_type 'ernie4_5_moe' with moe_layer_interval {step} is not supported yet: "
            "only every layer from moe_layer_start_index on is modelled")
    if "moe_num_experts" in d:
        d.setdefault("num_experts", d["moe_num_experts"])
    d.setdefault("num_experts_per_tok", d.get("moe_k", 6))
    if d.get("moe_num_shared_experts"):
        d.setdefault("n_shared_experts", d["moe_num_shared_experts"])
    d.setdefault("tie_word_embeddings", True)
    d["first_k_dense_replace"] = start
    if end is not None and end != -1 and isinstance(n, int):
        if not isinstance(end, int) or isinstance(end, bool) or end < start:
            raise SourceError(f"{source}: moe_layer_end_index {end!r} is not a layer index after "
                              "moe_layer_start_index; fix or re-download config.json")
        n = check_layers(n, source)
        d["mlp_only_layers"] = list(range(end + 1, n))


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
    if d.get("model_type") == "apertus":
        _apertus(d, source)
    if d.get("model_type") == "hunyuan_v1_dense":
        _hunyuan_dense(d, source)
    if d.get("model_type") == "ernie4_5_moe":
        _ernie45_moe(d, source)
    for src, dst in KEY_ALIASES.items():
        if dst not in d and src in d:
            d[dst] = d[src]
    if d.get("model_type") in VLM_FLAT_TYPES:
        d["model_type"] = VLM_FLAT_TYPES[d["model_type"]]
    mt = d.get("model_type")
    if not mt:
        raise SourceError(f"{source}: no model_type; is this a transformers config.json?")
    if mt in hybrid.MAMBA2:
        _mamba2_blocks(d, mt, source)
    elif mt in hybrid.FALCON_H1:
        _mamba_keys(d)
    elif mt in hybrid.LFM2:
        _lfm2(d, mt, source)
    elif mt in hybrid.JAMBA:
        _jamba(d, source)
    elif mt in hybrid.KIMI_LINEAR:
        _kimi_linear(d, source)
    elif any(d.get(k) is not None for k in SSM_KEYS):
        raise UnsupportedArchitectureError(
            f"{source}: model_type {mt!r} is not supported yet: its Mamba/state-space layers are not laid out "
            f"(supported recurrent hybrids: {', '.join(sorted(hybrid.MODEL_TYPES))})")
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


# block names -> planner layers_block_type: Nemotron-H pattern characters, transformers 5 names (layers_block_type /
# layer_types: linear_attention = Mamba-2 there) and the older mamba / attention spellings
_BLOCK = {"M": "mamba", "*": "attention", "E": "moe", "-": "mlp", "mamba": "mamba", "linear_attention": "mamba",
          "attention": "attention", "full_attention": "attention", "moe": "moe", "mlp": "mlp"}
# Granite 4.0-H and Falcon-H1 (configuration_granitemoehybrid.py, configuration_falcon_h1.py) spellings of the
# Mamba-2 sizes -> Nemotron-H's
_MAMBA_KEYS = {"mamba_n_heads": "mamba_num_heads", "mamba_d_head": "mamba_head_dim", "mamba_d_state": "ssm_state_size",
               "mamba_n_groups": "n_groups", "mamba_d_conv": "conv_kernel", "mamba_conv_bias": "use_conv_bias",
               "shared_intermediate_size": "shared_expert_intermediate_size", "mamba_d_ssm": "mamba_d_inner"}


def _mamba_keys(d: dict[str, Any]) -> None:
    for src, dst in _MAMBA_KEYS.items():
        if d.get(src) is not None:
            d[dst] = d[src]


def _mamba2_blocks(d: dict[str, Any], mt: str, source: str) -> None:
    """One block type per layer (planner/hybrid.py): Nemotron-H ``hybrid_override_pattern`` ("M*E-" string) or
    ``layers_block_type``; Granite 4.0-H ``layer_types`` (mlx_lm/models/nemotron_h.py ModelArgs.__post_init__,
    granitemoehybrid.py)."""
    pat = d.get("hybrid_override_pattern")
    raw = list(pat) if isinstance(pat, str) else d.get("layers_block_type") or d.get("layer_types")
    if not isinstance(raw, list) or not raw:
        raise SourceError(f"{source}: model_type {mt!r} needs hybrid_override_pattern or layers_block_type "
                          "(one block type per layer); fix or re-download config.json")
    if len(raw) > MAX_LAYERS:
        raise SourceError(f"{source}: {len(raw)} block types, over {MAX_LAYERS}; fix the config")
    unknown = sorted({str(t) for t in raw if _BLOCK.get(t) is None})
    if unknown:
        raise UnsupportedArchitectureError(f"{source}: model_type {mt!r}: block types {', '.join(unknown)} are not "
                                           "supported yet")
    d["layers_block_type"] = [_BLOCK[t] for t in raw]
    d["num_hidden_layers"] = len(raw)
    d.pop("hybrid_override_pattern", None)
    d.pop("layer_types", None)
    if mt == "granitemoehybrid":
        _mamba_keys(d)
    if d.get("moe_latent_size") and mt != "nemotron_h":
        raise UnsupportedArchitectureError(f"{source}: model_type {mt!r} with moe_latent_size (latent expert "
                                           "projections, Nemotron 3 Super) is not supported yet")


def _kimi_linear(d: dict[str, Any], source: str) -> None:
    """Kimi Linear: the published config's linear_attn_config {kda_layers (1-based), num_heads, head_dim,
    short_conv_kernel_size} (mlx_lm/models/kimi_linear.py) or transformers 5's flat linear_num_heads /
    linear_head_dim / linear_conv_kernel_dim + layer_types + mlp_layer_types (configuration_kimi_linear.py) ->
    linear_* fields and layer_types; num_experts_per_token / num_shared_experts -> the DeepSeek names."""
    n = d.get("num_hidden_layers")
    lac = d.get("linear_attn_config")
    if isinstance(lac, dict) and isinstance(n, int):
        kda = lac.get("kda_layers") or []
        d["layer_types"] = ["linear_attention" if i + 1 in kda else "full_attention" for i in range(check_layers(n, source))]
        heads, dim, conv = lac.get("num_heads"), lac.get("head_dim"), lac.get("short_conv_kernel_size", 4)
    else:
        heads, dim, conv = d.get("linear_num_heads"), d.get("linear_head_dim"), d.get("linear_conv_kernel_dim", 4)
    d.update(linear_num_key_heads=heads, linear_num_value_heads=heads, linear_key_head_dim=dim,
             linear_value_head_dim=dim, linear_conv_kernel_dim=conv)
    if heads is not None and heads != d.get("num_attention_heads"):
        # llama.cpp llama-hparams.cpp sizes the KDA state with n_head() (the attention head count)
        raise UnsupportedArchitectureError(f"{source}: kimi_linear with {heads} KDA heads != num_attention_heads "
                                           f"{d.get('num_attention_heads')} is not supported (llama.cpp sizes KDA by "
                                           "the attention head count)")
    if d.get("num_experts_per_tok") is None:
        d["num_experts_per_tok"] = d.get("num_experts_per_token")
    d["n_routed_experts"], d["num_experts"] = d.get("num_experts"), None
    d["n_shared_experts"] = d.get("num_shared_experts")
    mlt = d.get("mlp_layer_types")
    if isinstance(mlt, list) and "sparse" in mlt and d.get("first_k_dense_replace") is None:
        first = mlt.index("sparse")
        if any(t != "sparse" for t in mlt[first:]):
            raise UnsupportedArchitectureError(f"{source}: kimi_linear with dense layers after the first sparse one "
                                               "is not supported yet")
        d["first_k_dense_replace"] = first
    d.setdefault("moe_layer_freq", 1)
    d.setdefault("first_k_dense_replace", 0)


def _jamba(d: dict[str, Any], source: str) -> None:
    """transformers configuration_jamba.py: layer i is attention iff i % attn_layer_period == attn_layer_offset,
    MoE iff i % expert_layer_period == expert_layer_offset; d_inner = mamba_expand x hidden, mamba_dt_rank "auto" =
    ceil(hidden / 16) (mlx_lm/models/jamba.py ModelArgs.__post_init__)."""
    n, h = d.get("num_hidden_layers"), d.get("hidden_size")
    if not isinstance(n, int) or not isinstance(h, int):
        return  # the missing-key check below names them
    n = check_layers(n, source)
    ap, ao = d.get("attn_layer_period") or 8, d.get("attn_layer_offset") or 4
    ep, eo = d.get("expert_layer_period") or 2, d.get("expert_layer_offset") or 1
    if not all(isinstance(v, int) and v >= 0 for v in (ap, ao, ep, eo)) or ap < 1 or ep < 1:
        raise SourceError(f"{source}: jamba layer periods/offsets must be non-negative integers; fix config.json")
    if (d.get("num_experts") or 1) > 1 and eo != ep - 1:
        # mlx-lm jamba.py puts experts where (i + offset) % period == 0, transformers where i % period == offset:
        # they agree only for offset = period - 1 (every published Jamba: period 2, offset 1)
        raise UnsupportedArchitectureError(f"{source}: jamba with expert_layer_offset {eo} != period - 1 is not "
                                           "supported (the runtimes place its experts differently)")
    if not d.get("layers_block_type"):  # a GGUF gives the list itself (sources/ggufmeta.py)
        d["layers_block_type"] = ["attention" if i % ap == ao else "mamba" for i in range(n)]
    if (d.get("num_experts") or 1) > 1:
        d.setdefault("decoder_sparse_step", ep)
    else:
        d.pop("num_experts", None)
    d["mamba_d_inner"] = d.get("mamba_d_inner") or (d.get("mamba_expand") or 2) * h
    rank = d.get("mamba_dt_rank")
    d["mamba_dt_rank"] = -(-h // 16) if rank in (None, "auto") else rank
    for src, dst in (("mamba_d_state", "ssm_state_size"), ("mamba_d_conv", "conv_kernel"),
                     ("mamba_conv_bias", "use_conv_bias")):
        if d.get(src) is not None:
            d[dst] = d[src]


def _lfm2(d: dict[str, Any], mt: str, source: str) -> None:
    """LFM2: conv / full_attention layer_types (or full_attn_idxs) -> layers_block_type; the dense FFN width as
    llama.cpp conversion/lfm2.py _add_feed_forward_length and mlx_lm/models/lfm2.py MLP compute it (2/3 of
    block_ff_dim, times block_ffn_dim_multiplier, rounded up to block_multiple_of); LFM2-MoE keeps
    intermediate_size for its num_dense_layers leading dense layers (lfm2_moe.py); both tie the head to the
    embedding (mlx-lm embed_tokens.as_linear)."""
    n = d.get("num_hidden_layers")
    lt, idxs = d.get("layer_types"), d.get("full_attn_idxs")
    if not isinstance(lt, list) and isinstance(idxs, list) and isinstance(n, int):
        lt = ["full_attention" if i in idxs else "conv" for i in range(check_layers(n, source))]
    if not isinstance(lt, list) or not lt or len(lt) > MAX_LAYERS:
        raise SourceError(f"{source}: model_type {mt!r} needs layer_types or full_attn_idxs; fix or re-download "
                          "config.json")
    bad = sorted({str(t) for t in lt} - {"conv", "full_attention"})
    if bad:
        raise UnsupportedArchitectureError(f"{source}: model_type {mt!r}: layer types {', '.join(bad)} are not "
                                           "supported yet")
    d["layers_block_type"] = ["attention" if t == "full_attention" else "conv" for t in lt]
    d.pop("layer_types", None)
    d["tie_word_embeddings"] = True
    if mt == "lfm2":
        ff = d.get("block_ff_dim") or d.get("intermediate_size")
        if isinstance(ff, int) and d.get("block_auto_adjust_ff_dim"):
            ff = int(2 * ff / 3)
            if d.get("block_ffn_dim_multiplier") is not None:
                ff = int(d["block_ffn_dim_multiplier"] * ff)
            m = d.get("block_multiple_of") or 1
            ff = m * ((ff + m - 1) // m)
        d["intermediate_size"] = ff
    else:
        d["first_k_dense_replace"] = d.get("num_dense_layers") or 0


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
