"""GGUF metadata of the 2026 attention families -> HF-style config keys, called by sources/ggufmeta.py.

Key names: llama.cpp src/llama-arch.cpp LLM_KV_* and the converters that write them (conversion/gemma.py
Gemma4Model.set_gguf_parameters).
"""

from __future__ import annotations

from .errors import SourceError

# GGUF general.architecture -> HF model_type, for the families below
# (DSA archs read as deepseek_v3 first, so the generic MLA keys are read, then renamed in normalise)
ARCHS = {"gemma4": "gemma4_text", "deepseek32": "deepseek_v3", "glm-dsa": "deepseek_v3"}
DSA = {"deepseek32": "deepseek_v32", "glm-dsa": "glm_moe_dsa"}
# GGUF architectures refused with what is missing (sources/hf_attention.py REFUSED)
REFUSED_ARCHS = {"deepseek4": "deepseek_v4", "gemma3n": "gemma3n", "bert": "bert", "nomic-bert": "nomic_bert",
                 "nomic-bert-moe": "nomic_bert", "mllama": "mllama"}


def refuse(arch: str, source: str) -> None:
    from planner.errors import UnsupportedArchitectureError

    from .hf_attention import REFUSED
    if arch in REFUSED_ARCHS:
        raise UnsupportedArchitectureError(
            f"{source}: GGUF architecture {arch!r} is not supported yet: {REFUSED[REFUSED_ARCHS[arch]]}")


def normalise(arch: str, kv: dict, names: dict, d: dict, source: str) -> None:
    """In place: fill ``d`` (the HF-style dict ggufmeta built) with what the generic reader cannot."""
    if arch == "gemma4":
        _gemma4(arch, kv, names, d, source)
    if arch == "olmo2" and d.get("sliding_window") and kv.get(f"{arch}.attention.sliding_window_pattern") is None:
        # OLMo 3 GGUFs: src/models/olmo2.cpp load_swa_pattern(ml, 4): every 4th layer full when the key is absent
        n = d["num_hidden_layers"]
        d["layer_types"] = ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention" for i in range(n)]
    if arch in ("deepseek2", *DSA):
        # the multi-token-prediction layers are counted in block_count but hold no KV in the main context
        # (src/llama-hparams.cpp n_layer() = n_layer_all - n_layer_nextn; llama-model.cpp filter_mla)
        nextn = kv.get(f"{arch}.nextn_predict_layers")
        if isinstance(nextn, int) and not isinstance(nextn, bool) and 0 < nextn < d["num_hidden_layers"]:
            d["num_hidden_layers"] -= nextn
    if arch in DSA:
        d["model_type"] = DSA[arch]
        for k, key in (("index_head_dim", "key_length"), ("index_n_heads", "head_count")):
            v = kv.get(f"{arch}.attention.indexer.{key}")
            if v is None:
                raise SourceError(f"{source}: {arch} GGUF without attention.indexer.{key}; re-download it")
            d[k] = _ints(v, key, source)[0]
        types = kv.get(f"{arch}.attention.indexer.types")
        if isinstance(types, list) and not all(types):
            from planner.errors import UnsupportedArchitectureError
            raise UnsupportedArchitectureError(f"{source}: {arch} with shared indexer layers (attention.indexer.types) "
                                               "is not supported yet: their indexer cache is not modelled")


def _ints(v, key: str, source: str) -> list[int]:
    vals = v if isinstance(v, list) else [v]
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in vals):
        raise SourceError(f"{source}: GGUF key {key} is not an integer or integer array; re-download it")
    return vals


def _gemma4(arch: str, kv: dict, names: dict, d: dict, source: str) -> None:
    n = d["num_hidden_layers"]
    lt = d.get("layer_types") or ["full_attention"] * n
    swa = [t == "sliding_attention" for t in lt]

    def key(k):
        return kv.get(f"{arch}.{k}")

    # conversion/gemma.py: key_length = global_head_dim, key_length_swa = head_dim
    kl, kl_swa = key("attention.key_length"), key("attention.key_length_swa")
    if kl is not None:
        d["global_head_dim"] = _ints(kl, "key_length", source)[0]
    if kl_swa is not None:
        d["head_dim"] = _ints(kl_swa, "key_length_swa", source)[0]
    # head_count_kv: a per-layer array when sliding and global layers differ (swa value, global value)
    hkv = key("attention.head_count_kv")
    if hkv is not None:
        arr = _ints(hkv, "head_count_kv", source)
        if len(arr) == n:
            s = [a for a, w in zip(arr, swa, strict=True) if w]
            g = [a for a, w in zip(arr, swa, strict=True) if not w]
            d["num_key_value_heads"] = s[0] if s else arr[0]
            if g and g[0] != d["num_key_value_heads"]:
                d["num_global_key_value_heads"] = g[0]
        else:
            d["num_key_value_heads"] = arr[0]
    shared = key("attention.shared_kv_layers")
    d["num_kv_shared_layers"] = _ints(shared, "shared_kv_layers", source)[0] if shared is not None else 0
    first = n - d["num_kv_shared_layers"]
    ple = key("embedding_length_per_layer_input")
    d["hidden_size_per_layer_input"] = _ints(ple, "embedding_length_per_layer_input", source)[0] if ple else 0
    t = names.get("per_layer_token_embd.weight")
    if t is not None and len(t.shape) > 1:
        d["vocab_size_per_layer_input"] = t.shape[1]
    # feed_forward_length: per-layer array when KV-shared layers are double-wide (conversion/gemma.py)
    ff = key("feed_forward_length")
    if ff is not None:
        arr = _ints(ff, "feed_forward_length", source)
        d["intermediate_size"] = arr[0]
        d["use_double_wide_mlp"] = len(arr) == n and first < n and arr[-1] == 2 * arr[0]
    else:
        d["use_double_wide_mlp"] = False
    # K=V: an owning global layer without attn_v (gemma4.cpp: wv TENSOR_NOT_REQUIRED, Vcur = Kcur)
    glob = [i for i in range(min(first, n)) if not swa[i]]
    d["attention_k_eq_v"] = bool(glob) and f"blk.{glob[0]}.attn_v.weight" not in names \
        and f"blk.{glob[0]}.attn_qkv.weight" not in names
    if d["attention_k_eq_v"] and "num_global_key_value_heads" not in d:
        d["num_global_key_value_heads"] = d["num_key_value_heads"]
    # MoE block beside the dense MLP (gemma4.cpp: ffn_gate_inp present)
    ne = key("expert_count")
    if ne:
        d["enable_moe_block"] = True
        d["num_experts"] = _ints(ne, "expert_count", source)[0]
        d["top_k_experts"] = d.get("num_experts_per_tok")
        for k in ("num_local_experts", "decoder_sparse_step", "shared_expert_intermediate_size"):
            d.pop(k, None)
    else:
        d["enable_moe_block"] = False
