"""The 2026 attention layouts against the real runtimes. MLA variants (deepseek_v32 / glm_moe_dsa with the DSA
indexer, glm4_moe_lite): mlx-lm builds each from a tiny config; its parameter count and the bytes per token of
its caches (MLA latent + rope key, the indexer's keys and zero values) equal the planner's.

Gemma 4 against the real runtimes: a tiny random-weight gemma4_text with every new layer kind at once (sliding
and global heads of different sizes and counts, K=V on global layers, KV sharing, per-layer embeddings, the
double-wide MLP and the MoE block beside the dense MLP).

- mlx-lm 0.32.2: mlx_lm/models/gemma4_text.py Model built from the config: its parameter count equals the
  planner's, make_cache() holds caches for the owning layers only, and the K/V bytes per cached token of its
  KVCache / RotatingKVCache (window = sliding_window) equal the planner's KV layout.
- llama.cpp (the vendored build): a GGUF written from the planner's tensor list under llama.cpp's names loads
  (so every tensor llama.cpp requires is listed with its shape, and none it does not expect: the loader refuses a
  wrong tensor count), and the KV bytes and cells llama.cpp logs for its full and SWA caches equal the planner's.
"""

from __future__ import annotations

import numpy as np
import pytest

from planner import architecture as arch
from planner import memory as M
from planner import profiles as P
from planner.units import MiB
from sources import make_profile
from sources.hfconfig import from_hf_config

# 10 layers: pattern 3 -> globals at 2, 5, 8; the last 4 (6..9) share KV; vocab 1024 = the tiny tokenizer's
TINY = {
    "model_type": "gemma4_text", "hidden_size": 256, "num_hidden_layers": 10, "intermediate_size": 512,
    "num_attention_heads": 4, "head_dim": 64, "global_head_dim": 128, "num_key_value_heads": 2,
    "num_global_key_value_heads": 1, "attention_k_eq_v": True, "num_kv_shared_layers": 4,
    "hidden_size_per_layer_input": 32, "vocab_size": 1024, "vocab_size_per_layer_input": 1024,
    "sliding_window": 64, "sliding_window_pattern": 3, "use_double_wide_mlp": True, "enable_moe_block": True,
    "num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 256, "max_position_embeddings": 4096,
}


def _cfg():
    return from_hf_config(dict(TINY))


# --------------------------------------------------------------------------- mlx-lm
@pytest.mark.requires_mlx
def test_mlx_params_and_cache_layout():
    mx = pytest.importorskip("mlx.core")
    pytest.importorskip("mlx_lm")
    from mlx.utils import tree_flatten
    from mlx_lm.models import gemma4_text as g

    model = g.Model(g.ModelArgs.from_dict(dict(TINY)))
    cfg = _cfg()
    # rope_freqs is a GGUF-only tensor (conversion/gemma.py generate_extra_tensors); mlx computes the frequencies
    rope = sum(t.n_elements for t in arch.tensors(cfg) if t.name == "rope_freqs")
    assert rope == TINY["global_head_dim"] // 2
    assert sum(v.size for _, v in tree_flatten(model.parameters())) == arch.n_params(cfg) - rope
    cache = model.make_cache()
    owning = [c for c in arch.cache_layers(cfg) if c.owner is None]
    assert len(cache) == len(owning) == 6
    n = 100  # past the 64-token window
    mx.eval(model(mx.array([[5 + i % 900 for i in range(n)]]), cache=cache))
    for _ in range(3):
        mx.eval(model(mx.array([[7]]), cache=cache))
    full = swa = 0
    for c in cache:
        per = (c.keys.shape[1] * c.keys.shape[3] + c.values.shape[1] * c.values.shape[3]) * c.keys.dtype.size
        if isinstance(c, g.RotatingKVCache):
            assert c.max_size == TINY["sliding_window"]
            swa += per
        else:
            full += per
    rt = P.load_runtime("mlx-lm").model_copy(update={"activation_bytes": 4})
    prof = make_profile(cfg, id_="tiny-gemma4", name="tiny-gemma4", source_url="test")
    lay = M.kv_layout(prof, rt, "bf16", P.ggml_types())
    assert (lay.bytes_per_token, lay.swa_bytes_per_token, lay.window) == (full, swa, 64)


# --------------------------------------------------------------------------- llama.cpp
# planner short names -> llama.cpp GGUF names (src/llama-arch.cpp LLM_TENSOR_NAMES)
GGUF_NAME = {"attn_post_norm": "post_attention_norm", "ffn_post_norm": "post_ffw_norm",
             "ffn_post_norm_1": "post_ffw_norm_1", "ffn_post_norm_2": "post_ffw_norm_2",
             "ffn_pre_norm_2": "pre_ffw_norm_2", "per_layer_inp_gate": "inp_gate", "per_layer_proj": "proj",
             "per_layer_post_norm": "post_norm"}
SUFFIX = {"ffn_gate_inp_s": "ffn_gate_inp.scale", "ffn_down_exps_s": "ffn_down_exps.scale"}


def _write_gguf(path, cfg, hf_tok_dir):
    import gguf

    from calibration.tinymodels import add_gguf_vocab

    a = "gemma4"
    n = cfg.num_hidden_layers
    swa = [t == "sliding_attention" for t in cfg.layer_types]
    first = n - cfg.num_kv_shared_layers
    w = gguf.GGUFWriter(str(path), a)
    w.add_uint32(f"{a}.context_length", cfg.max_position_embeddings)
    w.add_uint32(f"{a}.embedding_length", cfg.hidden_size)
    w.add_uint32(f"{a}.block_count", n)
    # conversion/gemma.py Gemma4Model.set_gguf_parameters
    w.add_array(f"{a}.feed_forward_length", [cfg.intermediate_size * (2 if i >= first else 1) for i in range(n)])
    w.add_uint32(f"{a}.attention.head_count", cfg.num_attention_heads)
    w.add_array(f"{a}.attention.head_count_kv",
                [cfg.num_key_value_heads if s else cfg.num_global_key_value_heads for s in swa])
    w.add_uint32(f"{a}.attention.key_length", cfg.global_head_dim)
    w.add_uint32(f"{a}.attention.value_length", cfg.global_head_dim)
    w.add_uint32(f"{a}.attention.key_length_swa", cfg.head_dim)
    w.add_uint32(f"{a}.attention.value_length_swa", cfg.head_dim)
    w.add_uint32(f"{a}.attention.sliding_window", cfg.sliding_window)
    w.add_array(f"{a}.attention.sliding_window_pattern", swa)
    w.add_uint32(f"{a}.attention.shared_kv_layers", cfg.num_kv_shared_layers)
    w.add_uint32(f"{a}.embedding_length_per_layer_input", cfg.hidden_size_per_layer_input)
    w.add_float32(f"{a}.attention.layer_norm_rms_epsilon", 1e-6)
    w.add_uint32(f"{a}.rope.dimension_count", cfg.global_head_dim)
    w.add_uint32(f"{a}.rope.dimension_count_swa", cfg.head_dim)
    w.add_float32(f"{a}.rope.freq_base", 1e6)
    w.add_float32(f"{a}.rope.freq_base_swa", 1e4)
    w.add_uint32(f"{a}.expert_count", cfg.n_experts)
    w.add_uint32(f"{a}.expert_used_count", cfg.num_experts_per_tok)
    w.add_uint32(f"{a}.expert_feed_forward_length", cfg.moe_intermediate_size)
    w.add_uint32(f"{a}.vocab_size", cfg.vocab_size)
    add_gguf_vocab(w, hf_tok_dir)
    rng = np.random.default_rng(0)
    for t in arch.tensors(cfg):
        base = SUFFIX.get(t.name) or (GGUF_NAME.get(t.name, t.name) + ".weight")
        name = base if t.layer is None else f"blk.{t.layer}.{base}"
        shape = (t.ne1, t.ne0) if t.n == 1 else (t.n, t.ne1, t.ne0)
        if t.ne1 == 1 and t.n == 1:
            shape = (t.ne0,)
        arr = (rng.standard_normal(shape) * 0.02).astype(np.float32)
        if t.name == "per_layer_model_proj":  # convert_hf_to_gguf writes bf16 weights as BF16; quantize keeps it
            w.add_tensor(name, gguf.quants.quantize(arr, gguf.GGMLQuantizationType.BF16),
                         raw_dtype=gguf.GGMLQuantizationType.BF16)
        else:
            w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _llama_kv(path, n_ctx: int, n_seq: int, swa_full: bool) -> tuple[float, int, str]:
    """(KV MiB, cells) llama.cpp logs for one context; swa_full as llama-server sets it (common.h: false; the C
    API's llama_context_default_params says true)."""
    from . import test_crosscheck_llama_cpp as X
    from .conftest import llama_cpp_or_skip

    llama_cpp = llama_cpp_or_skip()
    X._install_log(llama_cpp)
    model = llama_cpp.llama_model_load_from_file(str(path).encode(), llama_cpp.llama_model_default_params())
    assert model, "llama.cpp refused the GGUF written from the planner's tensor list"
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx, cp.n_seq_max, cp.n_batch, cp.n_ubatch = n_ctx, n_seq, 512, 512
    cp.kv_unified, cp.n_threads, cp.n_threads_batch, cp.swa_full = False, 2, 2, swa_full
    cp.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED
    X._LINES.clear()
    ctx = llama_cpp.llama_init_from_model(model, cp)
    try:
        assert ctx
        text = "".join(X._LINES)
        kv = X.KV_RE.findall(text)
        return sum(float(x) for x, _ in kv), sum(int(c) for _, c in kv), text
    finally:
        if ctx:
            llama_cpp.llama_free(ctx)
        llama_cpp.llama_model_free(model)


@pytest.mark.requires_llama_cpp
@pytest.mark.parametrize(("n_ctx", "n_seq", "swa_full"), [(512, 1, False), (2048, 1, False), (4096, 2, False),
                                                          (2048, 1, True)])
def test_llama_cpp_loads_the_planned_tensors_and_allocates_the_planned_kv(xc_root, xc_hf, n_ctx, n_seq, swa_full):
    pytest.importorskip("gguf")
    cfg = _cfg()
    path = xc_root / "tiny-gemma4.gguf"
    if not path.exists():
        _write_gguf(path, cfg, xc_hf)
    mib, cells, text = _llama_kv(path, n_ctx, n_seq, swa_full)
    # the bytes below hold only if llama.cpp allocated no cache for the 4 KV-shared layers and K and V (same size)
    # on the K=V global layers (src/llama-kv-cache.cpp skips !has_kv layers)
    rt = P.load_runtime("llama.cpp").model_copy(update={"swa_full": swa_full})
    prof = make_profile(cfg, id_="tiny-gemma4", name="tiny-gemma4", source_url="test")
    mm = M.memory_model(prof, rt, P.load_quant("F16", "gguf"), P.ggml_types(), flash_attn=True, kv_unified=False)
    est = mm.estimate(n_ctx // n_seq, n_seq)
    assert est.kv_cells == cells * n_seq   # logged per stream
    assert est.kv_cache / MiB == pytest.approx(mib, abs=0.011)  # two caches, each logged to 2 decimals


def test_gguf_reader_recovers_the_layout(xc_root, xc_hf):
    """sources/ggufmeta.py on a gemma4 GGUF written as conversion/gemma.py writes one: the same config back
    (per-layer heads, K=V from the missing attn_v, sharing, PLE, double-wide MLP, MoE), and exact weights keep
    the PLE table out of what decode streams (group lookup)."""
    pytest.importorskip("gguf")
    from sources.ggufmeta import config_from_gguf, exact_weights, read_header

    cfg = _cfg()
    path = xc_root / "tiny-gemma4.gguf"
    if not path.exists():
        _write_gguf(path, cfg, xc_hf)
    with open(path, "rb") as f:
        kv, tensors = read_header(f, str(path))
    back, _ = config_from_gguf(kv, tensors, str(path))
    for k in ("head_dim", "global_head_dim", "num_key_value_heads", "num_global_key_value_heads", "attention_k_eq_v",
              "num_kv_shared_layers", "hidden_size_per_layer_input", "vocab_size_per_layer_input",
              "use_double_wide_mlp", "enable_moe_block", "num_experts_per_tok", "moe_intermediate_size",
              "intermediate_size", "layer_types", "sliding_window"):
        assert getattr(back, k) == getattr(cfg, k), k
    assert back.n_experts == cfg.n_experts
    assert arch.n_params(back) == arch.n_params(cfg) == sum(t.n_elements for t in tensors)
    w = exact_weights(tensors)
    assert w.by_group["lookup"] == cfg.vocab_size_per_layer_input * 10 * 32 * 4   # F32 table


# --------------------------------------------------------------------------- MLA variants and DSA (mlx-lm)
DSA_TINY = {
    "hidden_size": 256, "num_hidden_layers": 3, "intermediate_size": 512, "moe_intermediate_size": 128,
    "num_attention_heads": 4, "num_key_value_heads": 4, "n_routed_experts": 4, "n_shared_experts": 1,
    "num_experts_per_tok": 2, "first_k_dense_replace": 1, "moe_layer_freq": 1, "kv_lora_rank": 64,
    "q_lora_rank": 96, "qk_rope_head_dim": 32, "qk_nope_head_dim": 64, "v_head_dim": 64, "vocab_size": 1024,
    "index_head_dim": 64, "index_n_heads": 4, "index_topk": 16, "max_position_embeddings": 4096,
}


@pytest.mark.requires_mlx
@pytest.mark.parametrize("model_type", ["deepseek_v32", "glm_moe_dsa", "glm4_moe_lite"])
def test_mlx_mla_variants_params_and_cache(model_type):
    mx = pytest.importorskip("mlx.core")
    pytest.importorskip("mlx_lm")
    import importlib

    from mlx.utils import tree_flatten

    raw = {**DSA_TINY, "model_type": model_type}
    if model_type == "glm4_moe_lite":
        raw = {k: v for k, v in raw.items() if not k.startswith("index_")}
    if model_type == "glm_moe_dsa":  # glm_moe_dsa.py ModelArgs has no defaults for these
        raw.update(routed_scaling_factor=1.0, topk_method="noaux_tc", scoring_func="sigmoid", norm_topk_prob=True,
                   n_group=1, topk_group=1, rms_norm_eps=1e-5, rope_parameters={"rope_theta": 10000.0},
                   attention_bias=False)
    mod = importlib.import_module(f"mlx_lm.models.{model_type}")
    model = mod.Model(mod.ModelArgs.from_dict(raw))
    cfg = from_hf_config(dict(raw))
    # the planner's DeepSeek MoE layout leaves out the router's e_score_correction_bias (n_routed_experts per MoE
    # layer; llama.cpp exp_probs_b), a known few-element difference
    bias = 4 * sum(cfg.is_moe_layer(i) for i in range(3))
    assert sum(v.size for _, v in tree_flatten(model.parameters())) == arch.n_params(cfg) + bias
    from mlx_lm.models.cache import make_prompt_cache

    cache = make_prompt_cache(model)  # model.make_cache() where the model has one, else a KVCache per layer
    n = 40
    mx.eval(model(mx.array([[5 + i for i in range(n)]]), cache=cache))
    per = 0
    for c in cache:
        parts = list(c.caches) if hasattr(c, "caches") else [c]
        for p in parts:
            for a in (p.keys, p.values):
                per += a.shape[1] * a.shape[3] * a.dtype.size
    rt = P.load_runtime("mlx-lm").model_copy(update={"activation_bytes": 4})
    prof = make_profile(cfg, id_="t", name="t", source_url="test")
    assert M.kv_layout(prof, rt, "bf16", P.ggml_types()).bytes_per_token == per


# --------------------------------------------------------------------------- sliding-window families (mlx-lm)
@pytest.mark.requires_mlx
@pytest.mark.parametrize("model_type", ["ministral3", "olmo3"])
def test_mlx_sliding_families_cache(model_type):
    mx = pytest.importorskip("mlx.core")
    pytest.importorskip("mlx_lm")
    import importlib

    from mlx_lm.models.cache import RotatingKVCache

    raw = {"model_type": model_type, "hidden_size": 128, "num_hidden_layers": 8, "intermediate_size": 256,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 1000,
           "rms_norm_eps": 1e-5, "sliding_window": 16, "max_position_embeddings": 4096, "rope_theta": 10000.0,
           "layer_types": (["sliding_attention"] * 3 + ["full_attention"]) * 2}
    if model_type == "olmo3":
        raw.pop("layer_types")  # olmo3.py's own default pattern
    else:  # ministral3.py reads these three from rope_parameters
        raw["rope_parameters"] = {"llama_4_scaling_beta": 0.1, "original_max_position_embeddings": 4096,
                                  "rope_theta": 10000.0}
    mod = importlib.import_module(f"mlx_lm.models.{model_type}")
    model = mod.Model(mod.ModelArgs.from_dict(dict(raw)))
    cache = model.make_cache()
    mx.eval(model(mx.array([[5 + i for i in range(40)]]), cache=cache))
    full = swa = 0
    for c in cache:
        per = (c.keys.shape[1] * c.keys.shape[3] + c.values.shape[1] * c.values.shape[3]) * c.keys.dtype.size
        if isinstance(c, RotatingKVCache):
            assert c.max_size == 16
            swa += per
        else:
            full += per
    rt = P.load_runtime("mlx-lm").model_copy(update={"activation_bytes": 4})
    prof = make_profile(from_hf_config(dict(raw)), id_="t", name="t", source_url="test")
    lay = M.kv_layout(prof, rt, "bf16", P.ggml_types())
    assert (lay.bytes_per_token, lay.swa_bytes_per_token, lay.window) == (full, swa, 16)


# --------------------------------------------------------------------------- DSA (llama.cpp deepseek32)
def _write_dsa_gguf(path, cfg, hf_tok_dir):
    """A deepseek32 GGUF from the planner's tensor list, with the keys conversion/deepseek.py writes; the planner's
    attn_kv_b is written as llama.cpp's split attn_k_b {nope, rank, H} + attn_v_b {rank, v, H} (same elements)
    and indexer.k_norm (weight + bias) as its two vectors."""
    import gguf

    from calibration.tinymodels import add_gguf_vocab

    a = "deepseek32"
    H, rank, rope, nope, vd = (cfg.num_attention_heads, cfg.kv_lora_rank, cfg.qk_rope_head_dim,
                               cfg.qk_nope_head_dim, cfg.v_head_dim)
    w = gguf.GGUFWriter(str(path), a)
    for k, v in (("context_length", cfg.max_position_embeddings), ("embedding_length", cfg.hidden_size),
                 ("block_count", cfg.num_hidden_layers), ("feed_forward_length", cfg.intermediate_size),
                 ("attention.head_count", H), ("attention.head_count_kv", 1),
                 ("attention.key_length", rank + rope), ("attention.value_length", rank),
                 ("attention.key_length_mla", nope + rope), ("attention.value_length_mla", vd),
                 ("attention.q_lora_rank", cfg.q_lora_rank), ("attention.kv_lora_rank", rank),
                 ("rope.dimension_count", rope), ("expert_count", cfg.n_experts),
                 ("expert_used_count", cfg.num_experts_per_tok), ("expert_shared_count", cfg.n_shared_experts),
                 ("leading_dense_block_count", cfg.first_k_dense_replace),
                 ("expert_feed_forward_length", cfg.moe_intermediate_size), ("expert_gating_func", 2),
                 ("attention.indexer.head_count", cfg.index_n_heads),
                 ("attention.indexer.key_length", cfg.index_head_dim), ("attention.indexer.top_k", 16),
                 ("vocab_size", cfg.vocab_size)):
        w.add_uint32(f"{a}.{k}", v)
    w.add_float32(f"{a}.attention.layer_norm_rms_epsilon", 1e-6)
    w.add_float32(f"{a}.rope.freq_base", 1e4)
    add_gguf_vocab(w, hf_tok_dir)
    rng = np.random.default_rng(0)

    def put(name, shape):
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    for t in arch.tensors(cfg):
        pre = "" if t.layer is None else f"blk.{t.layer}."
        if t.name == "attn_kv_b":
            put(pre + "attn_k_b.weight", (H, rank, nope))
            put(pre + "attn_v_b.weight", (H, vd, rank))
        elif t.name == "indexer.k_norm":
            put(pre + "indexer.k_norm.weight", (t.ne0,))
            put(pre + "indexer.k_norm.bias", (t.ne0,))
        elif t.ne1 == 1 and t.n == 1:
            put(pre + t.name + ".weight", (t.ne0,))
        else:
            put(pre + t.name + ".weight", (t.ne1, t.ne0) if t.n == 1 else (t.n, t.ne1, t.ne0))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.mark.requires_llama_cpp
@pytest.mark.parametrize(("n_ctx", "n_seq"), [(512, 1), (2048, 1), (2048, 2)])
def test_llama_cpp_dsa_indexer_cache(xc_root, xc_hf, n_ctx, n_seq):
    """llama_kv_cache_dsa: the MLA cache (latent + rope key, no V) and the indexer key cache (one f16 head of
    index_head_dim, no V) both equal the planner's KV bytes."""
    pytest.importorskip("gguf")
    cfg = from_hf_config({**DSA_TINY, "model_type": "deepseek_v32"})
    path = xc_root / "tiny-dsv32.gguf"
    if not path.exists():
        _write_dsa_gguf(path, cfg, xc_hf)
    mib, cells, _ = _llama_kv(path, n_ctx, n_seq, False)
    rt = P.load_runtime("llama.cpp")
    prof = make_profile(cfg, id_="t", name="t", source_url="test")
    mm = M.memory_model(prof, rt, P.load_quant("F16", "gguf"), P.ggml_types(), flash_attn=True, kv_unified=False)
    est = mm.estimate(n_ctx // n_seq, n_seq)
    # two caches (MLA, indexer) of the same cells: the planner counts each token once
    assert est.kv_cells * 2 == cells * n_seq
    assert est.kv_cache / MiB == pytest.approx(mib, abs=0.011)


@pytest.mark.requires_llama_cpp
@pytest.mark.parametrize("preset", ["Q4_K_M", "Q8_0", "Q6_K", "Q3_K_M"])
def test_llama_quantize_gemma4_file_bytes(xc_root, xc_hf, preset):
    """llama-quantize on the Gemma 4 GGUF: the planner's preset bytes equal the file's tensor bytes (the PLE
    table at the output type as a tied TOKEN_EMBD tensor, per_layer_model_proj kept, rows of 32 and 320 values
    falling back from K-quants)."""
    import shutil

    pytest.importorskip("gguf")
    if not shutil.which("llama-quantize"):
        from .conftest import llama_cpp_or_skip
        llama_cpp_or_skip()
    from gguf import GGUFReader

    from calibration.tinymodels import quantize_gguf

    cfg = _cfg()
    path = xc_root / "tiny-gemma4.gguf"
    if not path.exists():
        _write_gguf(path, cfg, xc_hf)
    out = quantize_gguf(path, xc_root / f"tiny-gemma4-{preset}.gguf", preset)
    real = {t.name: (t.tensor_type.name, int(t.n_bytes)) for t in GGUFReader(str(out)).tensors}
    prof = make_profile(cfg, id_="tiny-gemma4", name="tiny-gemma4", source_url="test")
    est = M.gguf_weights(prof, P.load_quant(preset, "gguf"), P.ggml_types())
    assert est.total_bytes == sum(b for _, b in real.values()), {k: v for k, v in real.items() if "blk.0." in k
                                                                 or "." not in k.split(".weight")[0]}


@pytest.mark.requires_mlx
@pytest.mark.parametrize("quant", ["mlx-4bit-g64", "mlx-8bit-g64"])
def test_mlx_quantized_gemma4_weight_bytes(quant):
    """mlx_lm.utils.quantize_model with gemma4_text's quant_predicate (router at 8 bits): the quantized model's
    array bytes equal the planner's MLX weights (the PLE table quantized as an embedding, rows not a multiple of
    the group left in the activation dtype). Float32 model: activation_bytes 4."""
    pytest.importorskip("mlx.core")
    pytest.importorskip("mlx_lm")
    from mlx.utils import tree_flatten
    from mlx_lm.models import gemma4_text as g
    from mlx_lm.utils import quantize_model

    q = P.load_quant(quant, "mlx")
    model = g.Model(g.ModelArgs.from_dict(dict(TINY)))
    quantize_model(model, dict(TINY), q.group_size, q.bits, quant_predicate=model.quant_predicate)
    got = sum(v.nbytes for _, v in tree_flatten(model.parameters()))
    cfg = _cfg()
    rt = P.load_runtime("mlx-lm").model_copy(update={"activation_bytes": 4})
    prof = make_profile(cfg, id_="t", name="t", source_url="test")
    # a float32 model keeps its scales and biases in float32
    est = M.mlx_weights(prof, q.model_copy(update={"scale_bytes": 4, "bias_bytes": 4}), rt)
    rope = 4 * sum(t.n_elements for t in arch.tensors(cfg) if t.name == "rope_freqs")  # GGUF-only tensor
    assert est.total_bytes - rope == got
