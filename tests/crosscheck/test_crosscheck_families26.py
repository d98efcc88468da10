"""The 2026 families laid out on the Llama attention path (apertus, hunyuan_v1_dense, ernie4_5_moe; exaone4_5_text
read as exaone4) against mlx-lm: its own Model class built from a tiny config has the planner's parameter count
(plus the few scalars the planner leaves out, named per family) and the K/V bytes per cached token of the caches it
makes equal the planner's KV layout. Against the vendored llama.cpp: a GGUF written from the planner's tensor list
under the runtime's architecture name loads, and the KV bytes and cells it logs equal the planner's."""

from __future__ import annotations

import importlib

import pytest

from planner import architecture as arch
from planner import memory as M
from planner import profiles as P
from sources import make_profile
from sources.hfconfig import from_hf_config

BASE = {"hidden_size": 64, "num_hidden_layers": 3, "intermediate_size": 96, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 1000, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "max_position_embeddings": 4096}
RAW = {
    # mlx_lm/models/apertus.py ModelArgs has no defaults for these
    "apertus": {**BASE, "mlp_bias": False, "attention_bias": False, "post_norm": False, "qk_norm": True,
                "tie_word_embeddings": False},
    "hunyuan_v1_dense": {**BASE, "use_qk_norm": True, "tie_word_embeddings": False},
    "ernie4_5_moe": {**BASE, "use_bias": False, "tie_word_embeddings": True, "moe_num_experts": 4,
                     "moe_layer_start_index": 1, "moe_intermediate_size": 32, "moe_k": 2,
                     "moe_num_shared_experts": 2, "moe_gate_act": "softmax"},
}
# elements mlx-lm holds that the planner does not count: apertus.py XieLU keeps alpha_p, alpha_n, beta and eps as
# arrays in every MLP (llama.cpp reads them as GGUF scalars, src/models/apertus.cpp)
EXTRA = {"apertus": 4 * BASE["num_hidden_layers"], "hunyuan_v1_dense": 0, "ernie4_5_moe": 0}


def _mlx_counts(model_type: str, raw: dict):
    mx = pytest.importorskip("mlx.core")
    pytest.importorskip("mlx_lm")
    from mlx.utils import tree_flatten
    from mlx_lm.models.cache import make_prompt_cache

    mod = importlib.import_module(f"mlx_lm.models.{model_type}")
    model = mod.Model(mod.ModelArgs.from_dict({**raw, "model_type": model_type}))
    n = sum(v.size for _, v in tree_flatten(model.parameters()))
    cache = make_prompt_cache(model)
    mx.eval(model(mx.array([[5 + i for i in range(40)]]), cache=cache))
    per = sum((c.keys.shape[1] * c.keys.shape[3] + c.values.shape[1] * c.values.shape[3]) * c.keys.dtype.size
              for c in cache)
    return n, per


@pytest.mark.requires_mlx
@pytest.mark.parametrize("model_type", sorted(RAW))
def test_mlx_params_and_kv_bytes(model_type):
    raw = {**RAW[model_type], "model_type": model_type}
    n, per = _mlx_counts(model_type, raw)
    cfg = from_hf_config(dict(raw))
    assert n == arch.n_params(cfg) + EXTRA[model_type]
    rt = P.load_runtime("mlx-lm").model_copy(update={"activation_bytes": 4})
    prof = make_profile(cfg, id_="t", name="t", source_url="test")
    assert M.kv_layout(prof, rt, "bf16", P.ggml_types()).bytes_per_token == per


@pytest.mark.requires_mlx
def test_mlx_exaone4_5_text_is_exaone4():
    # EXAONE 4.5's text_config (model_type exaone4_5_text) is run by mlx-lm's exaone4.py after the transformers
    # rename; every layer global here (no sliding_window_pattern): one KVCache per layer
    text = {**BASE, "head_dim": 16, "tie_word_embeddings": False, "sliding_window": None,
            "sliding_window_pattern": None, "rope_scaling": None}
    n, per = _mlx_counts("exaone4", {**text, "model_type": "exaone4"})
    wrapped = {"model_type": "exaone4_5", "tie_word_embeddings": False,
               "text_config": {**text, "model_type": "exaone4_5_text"}, "vision_config": {"depth": 1}}
    cfg = from_hf_config(wrapped)
    assert cfg == from_hf_config({**text, "model_type": "exaone4"})
    # the planner's OLMo 2 layout leaves out the per-head q/k norms (2 x head_dim a layer)
    assert n == arch.n_params(cfg) + BASE["num_hidden_layers"] * 2 * 16
    rt = P.load_runtime("mlx-lm").model_copy(update={"activation_bytes": 4})
    prof = make_profile(cfg, id_="t", name="t", source_url="test")
    assert M.kv_layout(prof, rt, "bf16", P.ggml_types()).bytes_per_token == per


# --------------------------------------------------------------------------- llama.cpp
# GGUF architecture names (src/llama-arch.cpp LLM_ARCH_NAMES); the planner's tensor short names are llama.cpp's
GGUF_ARCH = {"apertus": "apertus", "hunyuan_v1_dense": "hunyuan-dense", "ernie4_5_moe": "ernie4_5-moe"}


def _write_gguf(path, cfg, model_type, hf_tok_dir):
    import gguf
    import numpy as np

    from calibration.tinymodels import add_gguf_vocab

    a = GGUF_ARCH[model_type]
    n = cfg.num_hidden_layers
    w = gguf.GGUFWriter(str(path), a)
    w.add_uint32(f"{a}.context_length", cfg.max_position_embeddings)
    w.add_uint32(f"{a}.embedding_length", cfg.hidden_size)
    w.add_uint32(f"{a}.block_count", n)
    w.add_uint32(f"{a}.feed_forward_length", cfg.intermediate_size)
    w.add_uint32(f"{a}.attention.head_count", cfg.num_attention_heads)
    w.add_uint32(f"{a}.attention.head_count_kv", cfg.num_key_value_heads)
    w.add_uint32(f"{a}.attention.key_length", cfg.head_dim)
    w.add_uint32(f"{a}.attention.value_length", cfg.head_dim)
    w.add_float32(f"{a}.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_uint32(f"{a}.rope.dimension_count", cfg.head_dim)
    w.add_float32(f"{a}.rope.freq_base", 1e4)
    w.add_uint32(f"{a}.vocab_size", cfg.vocab_size)
    if model_type == "apertus":  # src/models/apertus.cpp: per-layer xIELU scalars (conversion/apertus.py)
        for k, v in (("alpha_n", 0.3), ("alpha_p", 0.8), ("beta", 0.5), ("eps", -1e-6)):
            w.add_array(f"xielu.{k}", [v] * n)
    if model_type == "ernie4_5_moe":  # src/models/ernie4-5.cpp load_arch_hparams
        w.add_uint32(f"{a}.expert_count", cfg.n_experts)
        w.add_uint32(f"{a}.expert_used_count", cfg.num_experts_per_tok)
        w.add_uint32(f"{a}.expert_feed_forward_length", cfg.moe_intermediate_size)
        w.add_uint32(f"{a}.expert_shared_feed_forward_length", cfg.shared_ffn)
        w.add_uint32(f"{a}.interleave_moe_layer_step", 1)
        w.add_uint32(f"{a}.leading_dense_block_count", cfg.first_k_dense_replace)
    add_gguf_vocab(w, hf_tok_dir)
    rng = np.random.default_rng(0)
    for t in arch.tensors(cfg):
        name = f"{t.name}.weight" if t.layer is None else f"blk.{t.layer}.{t.name}.weight"
        shape = (t.ne1, t.ne0) if t.n == 1 else (t.n, t.ne1, t.ne0)
        if t.ne1 == 1 and t.n == 1:
            shape = (t.ne0,)
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.mark.requires_llama_cpp
@pytest.mark.parametrize("model_type", sorted(GGUF_ARCH))
@pytest.mark.parametrize(("n_ctx", "n_seq"), [(512, 1), (2048, 2)])
def test_llama_cpp_loads_the_planned_tensors_and_allocates_the_planned_kv(xc_root, xc_hf, model_type, n_ctx, n_seq):
    # llama.cpp refuses a GGUF whose tensor count or shapes differ from what its loader creates, so loading proves
    # the planner's tensor list (q/k norms, the missing ffn_gate, the MoE/shared split); the KV it logs is compared
    pytest.importorskip("gguf")
    from planner.units import MiB

    from .test_crosscheck_attention import _llama_kv

    raw = {**RAW[model_type], "model_type": model_type, "vocab_size": 1024}  # the tiny tokenizer's vocabulary
    cfg = from_hf_config(raw)
    path = xc_root / f"tiny-{model_type}.gguf"
    if not path.exists():
        _write_gguf(path, cfg, model_type, xc_hf)
    mib, cells, _ = _llama_kv(path, n_ctx, n_seq, False)
    from sources.ggufmeta import config_from_gguf, read_header

    with open(path, "rb") as f:  # the planner's GGUF reader gives back the same layout
        kv, ts = read_header(f, str(path))
    back, _ = config_from_gguf(kv, ts, str(path))
    assert back.model_type == model_type
    assert arch.tensors(back) == arch.tensors(cfg) and arch.cache_layers(back) == arch.cache_layers(cfg)
    rt = P.load_runtime("llama.cpp")
    prof = make_profile(cfg, id_="t", name="t", source_url="test")
    mm = M.memory_model(prof, rt, P.load_quant("F16", "gguf"), P.ggml_types(), flash_attn=True, kv_unified=False)
    est = mm.estimate(n_ctx // n_seq, n_seq)
    assert est.kv_cells == cells * n_seq
    assert est.kv_cache / MiB == pytest.approx(mib, abs=0.006)


@pytest.mark.requires_llama_cpp
@pytest.mark.parametrize("model_type", sorted(GGUF_ARCH))
@pytest.mark.parametrize("preset", ["Q4_K_M", "Q3_K_M", "Q6_K", "Q2_K", "Q8_0"])
def test_llama_quantize_file_bytes(xc_root, xc_hf, model_type, preset):
    # rows of 256 so the k-quants apply; llama-quantize's per-tensor type rules (llama_tensor_get_type: attn_v /
    # ffn_down counters, which count ffn_down once per layer whether or not there is an ffn_gate) against the planner
    pytest.importorskip("gguf")
    import shutil

    from gguf import GGUFReader

    if not shutil.which("llama-quantize"):
        from .conftest import llama_cpp_or_skip
        llama_cpp_or_skip()
    from calibration.tinymodels import quantize_gguf

    wide = {"hidden_size": 256, "intermediate_size": 768, "num_hidden_layers": 4, "num_attention_heads": 4,
            "num_key_value_heads": 2, "vocab_size": 1024}
    if model_type == "ernie4_5_moe":
        wide["moe_intermediate_size"] = 256
    cfg = from_hf_config({**RAW[model_type], **wide, "model_type": model_type})
    src = xc_root / f"wide-{model_type}.gguf"
    if not src.exists():
        _write_gguf(src, cfg, model_type, xc_hf)
    out = quantize_gguf(src, xc_root / f"wide-{model_type}-{preset}.gguf", preset)
    prof = make_profile(cfg, id_="t", name="t", source_url="test")
    planned = M.gguf_weights(prof, P.load_quant(preset, "gguf"), P.ggml_types()).total_bytes
    assert planned == sum(int(t.n_bytes) for t in GGUFReader(str(out)).tensors)
