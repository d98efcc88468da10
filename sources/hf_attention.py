"""config.json normalisation of the 2026 attention families (Gemma 4, ...), called by sources/hfconfig.py.

Defaults are the runtime's, read in its code: mlx_lm/models/gemma4_text.py ``ModelArgs`` (mlx-lm 0.32.2) for the
keys a Gemma 4 config.json may leave out.
"""

from __future__ import annotations

from typing import Any

from planner.errors import UnsupportedArchitectureError

from .bounds import check_layers, check_pattern
from .errors import SourceError

# mlx_lm/models/gemma4_text.py ModelArgs defaults (head counts are not defaulted here: they must be in the file)
GEMMA4_DEFAULTS = {
    "head_dim": 256, "global_head_dim": 512, "vocab_size": 262144, "vocab_size_per_layer_input": 262144,
    "num_kv_shared_layers": 20, "hidden_size_per_layer_input": 256, "sliding_window": 512,
    "max_position_embeddings": 131072, "attention_k_eq_v": False, "use_double_wide_mlp": True,
    "enable_moe_block": False, "tie_word_embeddings": True,
}


# text families added here, each the tensors and cache of a known layout plus its own layer_types rule
TEXT_FAMILIES = {
    # Ministral 3 / Devstral Small 2 text (mlx_lm/models/ministral3.py): Llama tensors, layer_types default all
    # full_attention, RotatingKVCache(sliding_window) on sliding layers (make_cache)
    "ministral3",
    # OLMo 3 (mlx_lm/models/olmo3.py): OLMo 2 tensors, layer_types default sliding except every 4th layer;
    # llama.cpp runs it as arch olmo2 with SWA (src/models/olmo2.cpp load_swa_pattern(ml, 4))
    "olmo3",
}


# architectures refused with what is missing (checked on the config's model_type and its text_config's)
REFUSED = {
    "deepseek_v4": "DeepSeek V4's compressed CSA/HCA attention (llama.cpp src/llama-kv-cache-dsv4.cpp: raw sliding "
                   "cache + 1/4 and 1/128 compressed caches + compressor state) is not modelled",
    "mllama": "Llama 3.2 Vision's cross-attention layers to the image (their own cross-attention states) are not "
              "modelled",
    "minicpmv": "MiniCPM-V's vision resampler and its language model are not laid out here; use a GGUF of its "
                "language model (llama.cpp runs the vision part from a separate mmproj)",
    "gemma3n": "Gemma 3n's AltUp, Laurel and per-layer-embedding layers are not modelled",
    "gemma3n_text": "Gemma 3n's AltUp, Laurel and per-layer-embedding layers are not modelled",
    "bert": "encoder (embedding) models are not modelled: no KV cache, their batch activations are not sized",
    "nomic_bert": "encoder (embedding) models are not modelled: no KV cache, their batch activations are not sized",
    "xlm-roberta": "encoder (embedding) models are not modelled: no KV cache, their batch activations are not sized",
    "roberta": "encoder (embedding) models are not modelled: no KV cache, their batch activations are not sized",
}
REFUSED["mllama_text_model"] = REFUSED["mllama"]
REFUSED["deepseek_v41"] = REFUSED["deepseek_v41_text"] = REFUSED["deepseek_v4"]


def refuse(d: dict[str, Any], outer: dict[str, Any], source: str) -> None:
    """One line naming what is missing, for the architectures in REFUSED (never a silent Llama)."""
    for mt in (d.get("model_type"), outer.get("model_type")):
        if isinstance(mt, str) and mt in REFUSED:
            raise UnsupportedArchitectureError(f"{source}: model_type {mt!r} is not supported yet: {REFUSED[mt]}")


def unwrap(d: dict[str, Any], outer: dict[str, Any]) -> None:
    """In place, right after a VLM wrapper's text_config is merged: the text model_type mlx-lm builds."""
    ot = outer.get("model_type")
    if ot in ("gemma4", "gemma4_unified"):
        # mlx_lm/utils.py MODEL_REMAPPING gemma4_unified -> gemma4; gemma4.py builds gemma4_text from text_config
        d["model_type"] = "gemma4_text"
    if ot == "kimi_k25":
        # mlx_lm/models/kimi_k25.py: the language model is DeepseekV3 built from text_config, whatever it names
        d["model_type"] = "deepseek_v3"
    tc = outer.get("text_config")
    if ot == "mistral3" and isinstance(tc, dict) and "tie_word_embeddings" not in tc:
        d["tie_word_embeddings"] = False  # mlx_lm/models/mistral3.py ModelArgs.__post_init__


def normalise(d: dict[str, Any], outer: dict[str, Any], source: str) -> None:
    """In place: the model_type-specific rules of the families this module covers."""
    if d.get("model_type") == "gemma4_text":
        _gemma4(d, outer, source)
    n = d.get("num_hidden_layers")
    if d.get("model_type") == "olmo3" and not d.get("layer_types") and d.get("sliding_window") and n is not None:
        n = check_layers(n, source)
        d["layer_types"] = ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention" for i in range(n)]
    it = d.get("indexer_types")
    if d.get("model_type") in ("deepseek_v32", "glm_moe_dsa") and isinstance(it, list) and any(t != "full" for t in it):
        # GLM-5.2 "shared" indexer layers: llama.cpp skips their indexer cache (is_indexer_full), mlx-lm 0.32.2
        # builds an indexer on every layer; neither layout is modelled here
        raise UnsupportedArchitectureError(f"{source}: model_type {d['model_type']!r} with shared indexer layers "
                                           "(indexer_types) is not supported yet: their indexer cache is not modelled")
    if d.get("model_type") == "deepseek_v32":
        for k, v in (("index_head_dim", 128), ("index_n_heads", 64)):  # mlx_lm/models/deepseek_v32.py ModelArgs
            if d.get(k) is None:
                d[k] = v
    if d.get("model_type") == "glm_moe_dsa" and not (d.get("index_head_dim") and d.get("index_n_heads")):
        raise SourceError(f"{source}: {d['model_type']} config without index_head_dim/index_n_heads (the DSA "
                          "indexer); fix or re-download config.json")


def _gemma4(d: dict[str, Any], outer: dict[str, Any], source: str) -> None:
    # mlx_lm/models/gemma4.py ModelArgs.__post_init__: text_config["vocab_size"] = the outer vocab_size
    if isinstance(outer.get("text_config"), dict) and isinstance(outer.get("vocab_size"), int):
        d["vocab_size"] = outer["vocab_size"]
    for k, v in GEMMA4_DEFAULTS.items():
        if d.get(k) is None:
            d[k] = v
    n = d.get("num_hidden_layers")
    if n is None:
        return
    n = check_layers(n, source)
    if not d.get("layer_types"):
        # gemma4_text.py: (["sliding"] * (pattern - 1) + ["full"]) repeated, pattern default 5
        p = check_pattern(d.get("sliding_window_pattern") or 5, source)
        d["layer_types"] = [("sliding_attention" if (i % p) < p - 1 else "full_attention") for i in range(n)]
    shared = d.get("num_kv_shared_layers")
    if isinstance(shared, int) and not isinstance(shared, bool) and shared > 0:
        lt = d["layer_types"]
        first = n - shared
        if first < 1 or not isinstance(lt, list) or len(lt) != n or any(
                t not in lt[:first] for t in set(lt[first:])):
            raise SourceError(f"{source}: num_kv_shared_layers {shared} leaves no earlier layer of each attention "
                              f"type to share the KV cache of ({n} layers); fix the config")
    if d.get("use_double_wide_mlp") and (d.get("num_kv_shared_layers") or 0) > 0 and d.get("intermediate_size"):
        # the widest FFN a token passes through (activations): 2 x intermediate_size on the KV-shared layers;
        # planner/arch_gemma4.py lays the weights out from intermediate_size itself
        d["intermediate_size_mlp"] = 2 * d["intermediate_size"]
    if d.get("enable_moe_block"):
        # the router picks top_k_experts of num_experts; the dense MLP runs beside them on every layer, which the
        # activations count as a shared expert of intermediate_size (gemma4_text.py DecoderLayer)
        if d.get("num_experts_per_tok") is None and d.get("top_k_experts") is not None:
            d["num_experts_per_tok"] = d["top_k_experts"]
        if d.get("intermediate_size"):
            d["shared_expert_intermediate_size"] = d["intermediate_size"]
    else:
        d.pop("num_experts", None)  # experts exist only with the MoE block (gemma4_text.py DecoderLayer)
