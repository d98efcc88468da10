"""Gemma 4 (``gemma4_text``; llama.cpp arch ``gemma4``): tensors and cache layout.

What differs from Gemma 3, each rule read in both runtimes:
- per-layer attention shape: sliding layers use ``head_dim`` x ``num_key_value_heads``; full (global) layers
  ``global_head_dim`` x ``num_global_key_value_heads`` when ``attention_k_eq_v`` (else ``num_key_value_heads``)
  (mlx_lm/models/gemma4_text.py Attention.__init__; llama.cpp conversion/gemma.py Gemma4Model writes
  key_length = global_head_dim, key_length_swa = head_dim and a per-layer head_count_kv array, read by
  src/llama-hparams.cpp n_embd_head_k(il) / n_embd_k_gqa(il)).
- K = V on global layers (``attention_k_eq_v``): no v_proj weight, but both runtimes still cache K and V: mlx
  ``values = keys`` then ``cache.update_and_fetch(keys, values)`` (values get their own v_norm, keys k_norm + RoPE);
  llama.cpp src/models/gemma4.cpp ``Vcur = wv ? wv·x : Kcur`` then build_attn stores both.
- KV sharing: the last ``num_kv_shared_layers`` layers compute no K/V and hold no cache; they attend over the last
  owning layer of the same type (mlx gemma4_text.py make_cache builds caches for the first L - N layers only,
  Gemma4TextModel.previous_kvs; llama.cpp src/llama-kv-cache.cpp skips ``!hparams.has_kv(il)`` layers,
  src/llama-model.cpp reuse callback: n_layer_kv_from_start - (is_swa ? 2 : 1)). Their k_proj / v_proj / k_norm
  are not loaded (mlx sanitize drops them; llama.cpp loads them TENSOR_NOT_REQUIRED).
- per-layer embeddings (PLE, E2B/E4B): a table [vocab_size_per_layer_input, L x hidden_size_per_layer_input]
  gathered one row per token (group ``lookup``: in memory, never streamed as a matmul weight), a projection
  hidden -> L x hpl, and per layer a gate (hidden -> hpl) and projection (hpl -> hidden).
  llama.cpp keeps the table in the input (CPU/host) buffer (src/llama-arch.cpp LLM_TENSOR_LAYER_INPUT,
  GGML_OP_GET_ROWS) and reads it lazily from the mmap when it is over 4 GiB (TENSOR_READ_LAZY,
  llama-model-loader.cpp lazy_read::add, default LLAMA_LAZY_MODE_AUTO); mlx keeps it as an nn.Embedding
  (quantized like the token embedding).
- double-wide MLP on KV-shared layers (``use_double_wide_mlp``: 2 x intermediate_size; gemma4_text.py MLP,
  conversion/gemma.py writes the per-layer feed_forward_length array).
- MoE block beside the dense MLP (``enable_moe_block``, 26B-A4B): every layer keeps the dense GeGLU MLP and adds a
  router (hidden -> E, plus a hidden-wide scale and a per-expert scale) and E experts of moe_intermediate_size
  (gemma4_text.py DecoderLayer/Router/Experts; gemma4.cpp ffn_gate_inp, ffn_gate_inp.scale, ffn_*_exps,
  ffn_down_exps.scale, ffn_pre_norm_2, ffn_post_norm_1/2).
"""

from __future__ import annotations

from .architecture import CacheLayer, Tensor
from .schema import ModelConfig

MODEL_TYPES = {"gemma4_text"}


def first_shared(cfg: ModelConfig) -> int:
    """Index of the first KV-shared layer (L when none): gemma4_text.py ``first_kv_shared_layer_idx``."""
    return cfg.num_hidden_layers - (cfg.num_kv_shared_layers or 0)


def is_global(cfg: ModelConfig, i: int) -> bool:
    return cfg.layer_type(i) == "full_attention"


def k_eq_v(cfg: ModelConfig, i: int) -> bool:
    """gemma4_text.py: ``use_k_eq_v = attention_k_eq_v and not is_sliding``."""
    return bool(cfg.attention_k_eq_v) and is_global(cfg, i)


def layer_heads(cfg: ModelConfig, i: int) -> tuple[int, int]:
    """(KV heads, head size) of layer i."""
    if is_global(cfg, i):
        hd = cfg.global_head_dim or cfg.head_dim
        kvh = cfg.num_global_key_value_heads if (k_eq_v(cfg, i) and cfg.num_global_key_value_heads) \
            else cfg.num_key_value_heads
        return kvh, hd
    return cfg.num_key_value_heads, cfg.head_dim


def ffn_width(cfg: ModelConfig, i: int) -> int:
    double = cfg.use_double_wide_mlp and i >= first_shared(cfg) and (cfg.num_kv_shared_layers or 0) > 0
    return cfg.intermediate_size * (2 if double else 1)


def owner(cfg: ModelConfig, i: int) -> int | None:
    """Layer whose cache a KV-shared layer reads: the last owning layer of the same type
    (gemma4_text.py Gemma4TextModel.previous_kvs); None for an owning layer."""
    m = first_shared(cfg)
    if i < m:
        return None
    same = [j for j in range(m) if cfg.layer_type(j) == cfg.layer_type(i)]
    return same[-1] if same else None


def tensors(cfg: ModelConfig) -> list[Tensor]:
    h, V, L, H = cfg.hidden_size, cfg.vocab_size, cfg.num_hidden_layers, cfg.num_attention_heads
    hpl = cfg.hidden_size_per_layer_input or 0
    out = [Tensor("token_embd", None, h, V, group="embedding")]
    if hpl:
        vp = cfg.vocab_size_per_layer_input or V
        out += [
            Tensor("per_layer_token_embd", None, L * hpl, vp, group="lookup"),
            # llama-quant.cpp tensor_allows_quantization: per_layer_model_proj is never quantized (mlx quantizes it)
            Tensor("per_layer_model_proj", None, h, L * hpl, group="attention"),
            Tensor("per_layer_proj_norm", None, hpl, 1, group="norm", quantizable=False),
        ]
    if any(is_global(cfg, i) for i in range(L)):
        # proportional RoPE frequencies of the global layers, one tensor (conversion/gemma.py generate_extra_tensors)
        out.append(Tensor("rope_freqs", None, (cfg.global_head_dim or cfg.head_dim) // 2, 1, group="norm",
                          quantizable=False))
    m = first_shared(cfg)
    for i in range(L):
        kvh, hd = layer_heads(cfg, i)
        def norm(name: str, n: int = h, i: int = i) -> Tensor:
            return Tensor(name, i, n, 1, group="norm", quantizable=False)
        out += [norm("attn_norm"), Tensor("attn_q", i, h, H * hd), norm("attn_q_norm", hd)]
        if i < m:
            out += [Tensor("attn_k", i, h, kvh * hd), norm("attn_k_norm", hd)]
            if not k_eq_v(cfg, i):
                out.append(Tensor("attn_v", i, h, kvh * hd))
        out += [Tensor("attn_output", i, H * hd, h), norm("attn_post_norm"), norm("layer_output_scale", 1)]
        f = ffn_width(cfg, i)
        out += [norm("ffn_norm"), Tensor("ffn_gate", i, h, f, group="ffn"), Tensor("ffn_up", i, h, f, group="ffn"),
                Tensor("ffn_down", i, f, h, group="ffn"), norm("ffn_post_norm")]
        if cfg.enable_moe_block and cfg.n_experts:
            E, fe = cfg.n_experts, cfg.expert_ffn
            out += [
                Tensor("ffn_gate_inp", i, h, E, group="router", quantizable=False),
                norm("ffn_gate_inp_s"), norm("ffn_down_exps_s", E),
                Tensor("ffn_gate_exps", i, h, fe, E, group="experts"),
                Tensor("ffn_up_exps", i, h, fe, E, group="experts"),
                Tensor("ffn_down_exps", i, fe, h, E, group="experts"),
                norm("ffn_pre_norm_2"), norm("ffn_post_norm_1"), norm("ffn_post_norm_2"),
            ]
        if hpl:
            out += [Tensor("per_layer_inp_gate", i, h, hpl), Tensor("per_layer_proj", i, hpl, h),
                    norm("per_layer_post_norm")]
    out.append(Tensor("output_norm", None, h, 1, group="norm", quantizable=False))
    if not cfg.tie_word_embeddings:
        out.append(Tensor("output", None, h, V, group="output"))
    return out


def cache_layers(cfg: ModelConfig) -> list[CacheLayer]:
    """Owning layers: K and V of their own shape (K=V layers still store both). KV-shared layers: no cache
    (k_elems = v_elems = 0), ``owner`` names the layer whose cache they attend over."""
    out = []
    for i in range(cfg.num_hidden_layers):
        kvh, hd = layer_heads(cfg, i)
        kind = "full" if is_global(cfg, i) else "sliding"
        win = None if kind == "full" else cfg.sliding_window
        o = owner(cfg, i)
        if o is None:
            out.append(CacheLayer(kind, kvh * hd, kvh * hd, window=win, head_dim=hd))
        else:
            out.append(CacheLayer(kind, 0, 0, window=win, head_dim=hd, owner=o))
    return out
