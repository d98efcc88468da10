"""The 2026 families laid out on the Llama attention path (apertus, hunyuan_v1_dense, ernie4_5_moe; exaone4_5_text
read as exaone4) against mlx-lm: its own Model class built from a tiny config has the planner's parameter count
(plus the few scalars the planner leaves out, named per family) and the K/V bytes per cached token of the caches it
makes equal the planner's KV layout."""

from __future__ import annotations

import importlib

import pytest

from planner import architecture as arch
from planner import memory as M
from planner import profiles as P
from sources import make_profile
from sources.hfconfig import from_hf_config

pytestmark = pytest.mark.requires_mlx

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


@pytest.mark.parametrize("model_type", sorted(RAW))
def test_mlx_params_and_kv_bytes(model_type):
    raw = {**RAW[model_type], "model_type": model_type}
    n, per = _mlx_counts(model_type, raw)
    cfg = from_hf_config(dict(raw))
    assert n == arch.n_params(cfg) + EXTRA[model_type]
    rt = P.load_runtime("mlx-lm").model_copy(update={"activation_bytes": 4})
    prof = make_profile(cfg, id_="t", name="t", source_url="test")
    assert M.kv_layout(prof, rt, "bf16", P.ggml_types()).bytes_per_token == per


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
