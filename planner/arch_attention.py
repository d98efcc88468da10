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
