"""MLA variants and the DSA lightning-indexer cache (deepseek_v32, glm_moe_dsa, glm4_moe_lite).

- ``glm4_moe_lite`` (GLM-4.7-Flash) is DeepSeek-V3's layout under another name: MLA attention (q_lora, kv_lora,
  decoupled rope key), DeepSeek MoE with a shared expert and leading dense layers (mlx_lm/models/glm4_moe_lite.py;
  llama.cpp converts it to arch ``deepseek2``, conversion/glm.py Glm4MoeLiteModel(DeepseekV2Model)).
- DSA (``deepseek_v32``, ``glm_moe_dsa``): MLA plus a lightning indexer per layer: wq_b (q_lora_rank ->
  index_n_heads x index_head_dim), wk (hidden -> index_head_dim), a LayerNorm on the key (weight + bias) and
  weights_proj (hidden -> index_n_heads) (mlx_lm/models/deepseek_v32.py Indexer; llama.cpp
  src/models/deepseek32.cpp / glm-dsa.cpp indexer.attn_q_b, indexer.attn_k, indexer.k_norm, indexer.proj).
  The indexer caches one key of index_head_dim per token per layer:
  llama.cpp src/llama-kv-cache-dsa.cpp builds a second llama_kv_cache with n_head_kv = 1 and
  n_embd_head_k = indexer_head_size, of the main cache's type_k, K only (the hparams stay MLA: no V);
  mlx-lm deepseek_v32.py keeps it in a KVCache of the activation dtype holding the keys and an equally large
  array of zeros as values (``cache.update_and_fetch(k, k)`` then ``cache.values = mx.zeros_like(cache.keys)``).
"""

from __future__ import annotations

from .architecture import Tensor
from .schema import ModelConfig

MLA_VARIANTS = {"glm4_moe_lite", "deepseek_v32", "glm_moe_dsa"}
# model_types whose sliding layers llama.cpp caches in full: src/models/mistral3.cpp builds build_attn_inp_kv()
# (no iSWA cache) and loads no sliding window, so every layer keeps n_ctx cells (mlx-lm ministral3.py rotates)
LLAMA_CPP_NO_SWA = {"ministral3"}


def indexer_tensors(cfg: ModelConfig, i: int) -> list[Tensor]:
    """The lightning indexer's weights of layer i (none without index_head_dim)."""
    d, n = cfg.index_head_dim, cfg.index_n_heads
    if not d or not n:
        return []
    return [
        Tensor("indexer.attn_q_b", i, cfg.q_lora_rank or cfg.hidden_size, n * d),
        Tensor("indexer.attn_k", i, cfg.hidden_size, d),
        Tensor("indexer.k_norm", i, d, 2, group="norm", quantizable=False),  # LayerNorm weight + bias
        Tensor("indexer.proj", i, cfg.hidden_size, n),
    ]


# Names people type for models whose architecture is refused (or not in the catalog), by prefix of the lower-cased
# last path segment without an Ollama ":tag": one line naming what is missing instead of "unknown model".
_ENCODER = ("an encoder (embedding) model: encoders are not modelled (no KV cache; their weights and batch "
            "activations are not sized)")
REFUSED_NAMES = (
    ("llama3.2-vision", "Llama 3.2 Vision (mllama): its cross-attention layers to the image are not modelled"),
    ("llama-3.2-11b-vision", "Llama 3.2 Vision (mllama): its cross-attention layers to the image are not modelled"),
    ("llama-3.2-90b-vision", "Llama 3.2 Vision (mllama): its cross-attention layers to the image are not modelled"),
    ("minicpm-v", "MiniCPM-V: its vision resampler is not modelled; pass a GGUF of its language model"),
    ("gemma3n", "Gemma 3n: its AltUp, Laurel and per-layer-embedding layers are not modelled"),
    ("gemma-3n-", "Gemma 3n: its AltUp, Laurel and per-layer-embedding layers are not modelled"),
    ("deepseek-v4", "DeepSeek V4: its compressed CSA/HCA attention (llama.cpp llama-kv-cache-dsv4) is not modelled"),
    ("nomic-embed-text", f"nomic-embed-text is {_ENCODER}"),
    ("mxbai-embed-large", f"mxbai-embed-large is {_ENCODER}"),
    ("bge-m3", f"bge-m3 is {_ENCODER}"),
    ("llava", "LLaVA is not in the catalog: pass its config.json folder or GGUF (the Llama/Mistral language model "
              "is laid out; the CLIP tower counts from its weights or mmproj)"),
)


def refused_name(name: str) -> str | None:
    """Why a typed model name cannot be planned, or None when it is not one of REFUSED_NAMES."""
    key = name.strip().lower().split("/")[-1].split(":")[0]
    for prefix, why in REFUSED_NAMES:
        if key.startswith(prefix):
            return why
    return None


def describe(cfg: ModelConfig) -> list[str]:
    """Short phrases for the plan header: what the 2026 layouts add to the usual heads × size."""
    from .architecture import cache_layers

    out = []
    if cfg.global_head_dim and cfg.model_type == "gemma4_text":
        from .arch_gemma4 import layer_heads
        g = [i for i in range(cfg.num_hidden_layers) if cfg.layer_type(i) == "full_attention"]
        if g:
            kvh, hd = layer_heads(cfg, g[0])
            out.append(f"global layers {kvh} KV heads × {hd}" + (" (K = V)" if cfg.attention_k_eq_v else ""))
    shared = sum(1 for c in cache_layers(cfg) if c.owner is not None)
    if shared:
        out.append(f"{cfg.num_hidden_layers - shared} of {cfg.num_hidden_layers} layers hold KV ({shared} share it)")
    if cfg.hidden_size_per_layer_input:
        out.append(f"per-layer embeddings {cfg.hidden_size_per_layer_input}/layer (a lookup, not streamed)")
    if cfg.index_head_dim and cfg.is_mla:
        out.append(f"DSA indexer keys {cfg.index_head_dim}/token/layer")
    return out
