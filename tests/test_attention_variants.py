"""MLA under other names (glm4_moe_lite) and the DSA lightning-indexer cache (deepseek_v32, glm_moe_dsa).

Expected numbers are derived by hand from mlx_lm/models/{glm4_moe_lite,deepseek_v32}.py and llama.cpp
src/llama-kv-cache-dsa.cpp (cited in planner/arch_attention.py), never from the code under test.
GLM-4.7-Flash = mlx_lm/models/glm4_moe_lite.py ModelArgs defaults (read in the runtime's code); the DeepSeek-V3.2
shape is a test fixture (the survey's third-party values), not a catalog profile.
"""

from __future__ import annotations

import pytest

from planner import architecture as arch
from planner import memory as M
from planner import profiles as P
from planner.errors import UnsupportedArchitectureError
from sources import make_profile
from sources.errors import SourceError
from sources.hfconfig import from_hf_config

# mlx_lm/models/glm4_moe_lite.py ModelArgs defaults
GLM47_FLASH = {
    "model_type": "glm4_moe_lite", "vocab_size": 154880, "hidden_size": 2048, "intermediate_size": 10240,
    "moe_intermediate_size": 1536, "num_hidden_layers": 47, "num_attention_heads": 20, "num_key_value_heads": 20,
    "n_shared_experts": 1, "n_routed_experts": 64, "kv_lora_rank": 512, "q_lora_rank": 768,
    "qk_rope_head_dim": 64, "qk_nope_head_dim": 192, "v_head_dim": 256, "num_experts_per_tok": 4,
    "moe_layer_freq": 1, "first_k_dense_replace": 1, "max_position_embeddings": 202752,
    "tie_word_embeddings": False, "num_nextn_predict_layers": 1,
}
DSV32 = {
    "model_type": "deepseek_v32", "vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432,
    "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
    "n_shared_experts": 1, "n_routed_experts": 256, "num_experts_per_tok": 8, "first_k_dense_replace": 3,
    "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
    "v_head_dim": 128, "index_head_dim": 128, "index_n_heads": 64, "index_topk": 2048,
    "max_position_embeddings": 163840,
}


def kv(raw, runtime, kv_type):
    p = make_profile(from_hf_config(dict(raw)), id_="t", name="t", source_url="test fixture")
    return M.kv_layout(p, P.load_runtime(runtime), kv_type, P.ggml_types())


def test_glm4_moe_lite_is_mla():
    # llama.cpp: latent 512 + rope key 64 per layer, no V; mlx-lm: the same two arrays (kv_latent, k_pe)
    assert kv(GLM47_FLASH, "llama.cpp", "f16").bytes_per_token == 47 * (512 + 64) * 2 == 54_144
    assert kv(GLM47_FLASH, "mlx-lm", "bf16").bytes_per_token == 54_144
    cfg = from_hf_config(dict(GLM47_FLASH))
    assert {c.kind for c in arch.cache_layers(cfg)} == {"mla"}
    assert sum(cfg.is_moe_layer(i) for i in range(47)) == 46


def test_dsa_indexer_cache_per_token():
    # llama.cpp: MLA (512 + 64) + the indexer key cache (one head of 128, K only, type_k) per layer
    assert kv(DSV32, "llama.cpp", "f16").bytes_per_token == 61 * (512 + 64 + 128) * 2 == 85_888
    # q8_0 keeps the same element count at 34 B per 32 values
    assert kv(DSV32, "llama.cpp", "q8_0").bytes_per_token == 61 * (576 + 128) // 32 * 34
    # mlx-lm: the indexer KVCache holds the keys and an equally large array of zeros as values
    assert kv(DSV32, "mlx-lm", "bf16").bytes_per_token == 61 * (512 + 64 + 2 * 128) * 2 == 101_504


def test_dsa_indexer_weights():
    h, q, n, d = 7168, 1536, 64, 128
    with_idx = arch.n_params(from_hf_config(dict(DSV32)))
    no_idx = arch.n_params(from_hf_config({**DSV32, "model_type": "deepseek_v3", "index_head_dim": None,
                                           "index_n_heads": None}))
    assert with_idx - no_idx == 61 * (q * n * d + h * d + 2 * d + h * n)


def test_glm5_shared_indexers_are_refused():
    raw = {**DSV32, "model_type": "glm_moe_dsa", "indexer_types": ["full", "shared"] * 30 + ["full"]}
    with pytest.raises(UnsupportedArchitectureError, match="shared indexer"):
        from_hf_config(raw)


def test_dsa_indexer_defaults_follow_mlx_lm():
    # deepseek_v32.py ModelArgs: index_head_dim 128, index_n_heads 64; glm_moe_dsa.py has no defaults
    cfg = from_hf_config({k: v for k, v in DSV32.items() if k not in ("index_head_dim", "index_n_heads")})
    assert (cfg.index_head_dim, cfg.index_n_heads) == (128, 64)
    raw = {k: v for k, v in DSV32.items() if k != "index_head_dim"}
    with pytest.raises(SourceError, match="index_head_dim"):
        from_hf_config({**raw, "model_type": "glm_moe_dsa"})


# --------------------------------------------------------------------------- sliding-window text families
MISTRAL3 = {  # a Ministral 3 wrapper shape (fixture): mlx_lm/models/mistral3.py builds ministral3 from text_config
    "model_type": "mistral3",
    "text_config": {"model_type": "ministral3", "hidden_size": 512, "num_hidden_layers": 8, "intermediate_size": 1024,
                    "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1000,
                    "rms_norm_eps": 1e-5, "sliding_window": 256, "max_position_embeddings": 32768,
                    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"] * 2},
    "vision_config": {"hidden_size": 64},
}


def test_ministral3_text_in_its_wrapper():
    cfg = from_hf_config(MISTRAL3)
    assert cfg.model_type == "ministral3" and cfg.tie_word_embeddings is False  # mistral3.py default
    # llama.cpp src/models/mistral3.cpp: no iSWA cache, all 8 layers full
    lay = kv(MISTRAL3, "llama.cpp", "f16")
    assert lay.bytes_per_token == 8 * 2 * 2 * 64 * 2 and lay.swa_bytes_per_token == 0
    # mlx-lm ministral3.py: RotatingKVCache(sliding_window) on the 6 sliding layers
    lay = kv(MISTRAL3, "mlx-lm", "bf16")
    assert lay.bytes_per_token == 2 * 2 * 2 * 64 * 2          # 2 full layers x (K+V) x 2 heads x 64 x 2 B
    assert lay.swa_bytes_per_token == 6 * 2 * 2 * 64 * 2 and lay.window == 256


def test_olmo3_default_pattern_every_fourth_layer_full():
    raw = {"model_type": "olmo3", "hidden_size": 512, "num_hidden_layers": 8, "intermediate_size": 1024,
           "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 1000, "sliding_window": 4096,
           "max_position_embeddings": 65536}
    cfg = from_hf_config(raw)
    assert [i for i, t in enumerate(cfg.layer_types) if t == "full_attention"] == [3, 7]   # olmo3.py
    lay = kv(raw, "mlx-lm", "bf16")
    assert lay.bytes_per_token == 2 * 2 * 512 * 2 and lay.swa_bytes_per_token == 6 * 2 * 512 * 2


def test_kimi_k25_wrapper_is_deepseek_v3_text():
    raw = {"model_type": "kimi_k25", "text_config": {k: v for k, v in GLM47_FLASH.items() if k != "model_type"},
           "vision_config": {"hidden_size": 64}}
    cfg = from_hf_config(raw)
    assert cfg.model_type == "deepseek_v3" and cfg.is_mla
    assert kv(raw, "llama.cpp", "f16").bytes_per_token == 47 * (512 + 64) * 2


# --------------------------------------------------------------------------- refusals: one line naming what is missing
@pytest.mark.parametrize(("model_type", "words"), [
    ("deepseek_v4", "compressed CSA/HCA attention"), ("mllama", "cross-attention"), ("gemma3n", "AltUp"),
    ("minicpmv", "resampler"), ("bert", "encoder"), ("nomic_bert", "encoder"), ("xlm-roberta", "encoder"),
])
def test_refused_architectures_say_why(model_type, words):
    raw = {"model_type": model_type, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "intermediate_size": 128, "vocab_size": 100}
    with pytest.raises(UnsupportedArchitectureError, match=words) as e:
        from_hf_config(raw)
    assert "\n" not in str(e.value)


def test_refused_gguf_architectures_say_why():
    from sources.ggufmeta import config_from_gguf

    for a, words in (("deepseek4", "CSA/HCA"), ("nomic-bert", "encoder"), ("bert", "encoder"), ("gemma3n", "AltUp")):
        with pytest.raises(UnsupportedArchitectureError, match=words):
            config_from_gguf({"general.architecture": a}, [], "x.gguf")


@pytest.mark.parametrize(("name", "words"), [
    ("llama3.2-vision:11b", "cross-attention"), ("minicpm-v", "resampler"), ("gemma3n:e4b", "AltUp"),
    ("nomic-embed-text", "encoder"), ("mxbai-embed-large:335m", "encoder"), ("BAAI/bge-m3", "encoder"),
    ("llava:7b", "config.json folder or GGUF"),
])
def test_typed_names_of_refused_models_are_one_line(name, words, capsys):
    from cli.main import main

    code = main(["--model", name, "--ram", "32", "--chip", "M4 Pro", "--gpu-cores", "20"])
    err = capsys.readouterr().err
    assert code != 0 and words in err and err.count("\n") == 1


def test_dsa_decode_reads_in_mlx_and_llama_cpp():
    """mlx-lm gathers the top index_topk latents at decode and reads only the indexer's keys; llama.cpp masks
    the whole cache (reads what it stores)."""
    from planner import throughput as T

    p = make_profile(from_hf_config(dict(DSV32)), id_="t", name="t", source_url="test fixture")
    mlx = P.load_runtime("mlx-lm")
    mm = M.memory_model(p, mlx, P.load_quant("mlx-4bit-g64", "mlx"), P.ggml_types())
    geo = T.geometry(mm, "mlx", "affine")
    c = 131072
    # 61 layers x (indexer keys 128 x 2 B) x c + 61 x (512 + 64) x 2 B x 2048
    assert geo.kv_read(c) == 61 * 128 * 2 * c + 61 * 576 * 2 * 2048
    llama = P.load_runtime("llama.cpp")
    mm = M.memory_model(p, llama, P.load_quant("Q4_K_M", "gguf"), P.ggml_types())
    assert T.geometry(mm).kv_read(c) == 61 * (576 + 128) * 2 * c
