"""Catalog profiles added from third-party or composite config readings (scripts/stubs/catalog3/): the rules behind
the numbers that are not a plain copy of a card."""

import pytest

from planner import architecture as A
from planner import profiles as P


def test_glm47_flash_card_total_excludes_the_mtp_layer_the_runtimes_skip():
    # The checkpoint's safetensors total (31,221,488,576) = the 47 trunk layers the planner lays out + the MTP layer 47,
    # which has its own embedding and head (DeepSeek-V3-style nextn block: eh_proj 2h x h, enorm, hnorm, shared_head
    # norm) and one MoE decoder layer. mlx-lm's glm4_moe_lite sanitize drops it and llama.cpp skips it unless
    # load_mtp, so the profile counts the card's 30B, not the 31.2B file.
    m = P.load_model("zai-org/GLM-4.7-Flash")
    c = m.config
    h, v, heads = c.hidden_size, c.vocab_size, c.num_attention_heads
    qk = c.qk_nope_head_dim + c.qk_rope_head_dim
    attn = (h * c.q_lora_rank + c.q_lora_rank + c.q_lora_rank * heads * qk
            + h * (c.kv_lora_rank + c.qk_rope_head_dim) + c.kv_lora_rank
            + c.kv_lora_rank * heads * (c.qk_nope_head_dim + c.v_head_dim) + heads * c.v_head_dim * h)
    n_exp = c.n_routed_experts
    moe = (n_exp + c.n_shared_experts) * 3 * h * c.moe_intermediate_size + n_exp * h + n_exp
    mtp = 2 * v * h + 2 * h * h + 3 * h + attn + moe + 2 * h
    total = A.n_params(c) + mtp
    # 64 router-bias elements per trunk MoE layer (46 x 64 = 2,944) are the only elements the planner leaves out
    assert abs(total - 31_221_488_576) <= 46 * 64
    assert abs(A.n_params(c) / 1e9 / m.params_b - 1) < 0.01


def test_olmo3_composite_configs_reproduce_the_hub_totals():
    # The Hub's safetensors totals (llmfit's scrape, cited in the stubs) = the planner's tensors + the per-layer QK
    # norms it does not count (OLMo 2/3: q_norm over all query heads, k_norm over all key heads).
    def qk_norms(c):
        return c.num_hidden_layers * (c.num_attention_heads + c.num_key_value_heads) * c.head_dim

    think32 = P.load_model("allenai/Olmo-3.1-32B-Think").config
    assert A.n_params(think32) + qk_norms(think32) == 32_233_522_176
    seven = P.load_model("allenai/Olmo-3-7B-Think").config
    assert A.n_params(seven) + qk_norms(seven) == 7_298_011_136  # Olmo-3-1025-7B / -SFT: the same tensors


def test_qwen3_coder_next_has_the_qwen3_next_layout_and_no_mtp_layer():
    # Hub total 79,674,391,296: the planner's count is within 0.0002 % (norm weights); Qwen3-Next-80B-A3B-Instruct's
    # checkpoint (81.32B) carries a multi-token-prediction layer that this one does not.
    c = P.load_model("Qwen/Qwen3-Coder-Next").config
    assert abs(A.n_params(c) - 79_674_391_296) / 79_674_391_296 < 2e-6
    assert A.n_params(c) == A.n_params(P.load_model("qwen3-next-80b-a3b").config)
    assert c.layer_types.count("linear_attention") == 36 and c.max_position_embeddings == 262_144


def _gemma4_audio_tower(text_hidden, h=1024, layers=12, heads=8, kernel=5, ch=(128, 32), out=1536):
    # transformers models/gemma4/modeling_gemma4.py: Gemma4AudioModel + Gemma4MultimodalEmbedder (no biases but output_proj)
    hd = h // heads
    sub = ch[0] * 9 + ch[0] + ch[0] * ch[1] * 9 + ch[1] + (ch[0] // 4) * ch[1] * h
    ffn = 2 * (h * 4 * h) + 2 * h
    attn = 4 * h * heads * hd + h * heads * hd + hd
    lconv = h * 2 * h + h * h + h * kernel + 2 * h
    return sub + layers * (2 * ffn + attn + lconv + 3 * h) + h * out + out + out * text_hidden


def _gemma4_vision_tower(text_hidden, h=768, inter=3072, layers=16, heads=12, kv=12, hd=64, patch=16, pos=10240):
    # Gemma4VisionModel (patch embedder, encoder layers; the pooler has no weights) + Gemma4MultimodalEmbedder
    layer = h * heads * hd + 2 * h * kv * hd + heads * hd * h + 2 * hd + 3 * h * inter + 4 * h
    return 3 * patch * patch * h + 2 * pos * h + layers * layer + h * text_hidden


def _kv_shared_projections(c):
    # k_proj, v_proj and k_norm of the KV-shared (last num_kv_shared_layers) layers: in the checkpoint, not laid out
    total = 0
    for i in range(c.num_hidden_layers - c.num_kv_shared_layers, c.num_hidden_layers):
        hd = c.global_head_dim if c.layer_types[i] == "full_attention" else c.head_dim
        total += 2 * c.hidden_size * c.num_key_value_heads * hd + hd
    return total


@pytest.mark.parametrize("name, hub_total", [("google/gemma-4-E2B-it", 5_123_178_051),
                                             ("google/gemma-4-E4B-it", 7_996_156_490)])
def test_gemma4_small_towers_close_the_hub_total(name, hub_total):
    m = P.load_model(name)
    c = m.config
    towers = _gemma4_audio_tower(c.hidden_size) + _gemma4_vision_tower(c.hidden_size)
    assert round(towers / 1e9, 3) == m.vision_params_b
    assert abs(A.n_params(c) + towers + _kv_shared_projections(c) - hub_total) < 2_000


@pytest.mark.parametrize("variant, base", [
    ("Qwen/Qwen3-235B-A22B-Thinking-2507", "Qwen/Qwen3-235B-A22B-Instruct-2507"),
    ("MiniMaxAI/MiniMax-M2.1", "MiniMaxAI/MiniMax-M2"),
    ("MiniMaxAI/MiniMax-M2.5", "MiniMaxAI/MiniMax-M2"),
    ("moonshotai/Kimi-K2.6", "moonshotai/Kimi-K2.5"),
    ("nvidia/Llama-3.1-Nemotron-Nano-8B-v1", "meta-llama/Llama-3.1-8B-Instruct"),
    ("NousResearch/Hermes-4-70B", "meta-llama/Llama-3.1-70B-Instruct"),
])
def test_same_tensor_checkpoints_get_their_own_profile_with_the_base_layout(variant, base):
    # Each pair has the same Hub safetensors total to the element (llmfit's scrape, cited in the stubs): the variant's
    # own profile (its name, its quality) must lay out exactly the base's tensors and context.
    v, b = P.load_model(variant), P.load_model(base)
    assert v.id != b.id
    assert A.n_params(v.config) == A.n_params(b.config)
    assert v.config.max_position_embeddings == b.config.max_position_embeddings


def test_kimi_k2_0905_is_k2_with_the_longer_context():
    v, b = P.load_model("moonshotai/Kimi-K2-Instruct-0905"), P.load_model("moonshotai/Kimi-K2-Instruct")
    assert A.n_params(v.config) == A.n_params(b.config)
    # llmfit's context figure is max_position_embeddings x rope factor: 16,777,216 for 0905 (factor 64), 4,194,304 for K2
    assert v.config.max_position_embeddings == 16_777_216 // 64 == 2 * b.config.max_position_embeddings


@pytest.mark.parametrize("name", ["zai-org/GLM-5", "zai-org/GLM-5.1"])
def test_glm5_report_total_is_the_trunk_without_its_mtp_layer(name):
    # GLM-5 technical report: 744B total, 1 MTP layer; the safetensors total 753,864,139,008 holds the MTP layer too.
    # The planner lays out the 78 trunk layers only, and lands on the report's figure, not the file's.
    m = P.load_model(name)
    n = A.n_params(m.config)
    assert abs(n / 744e9 - 1) < 0.001
    assert 753_864_139_008 - n > 9e9  # one MoE layer of 256 x 3 x 6144 x 2048 experts (9.7B) is missing from n


@pytest.mark.parametrize("name, hub_total, tied", [
    ("ibm-granite/granite-4.1-3b", 3_402_836_480, True),
    ("ibm-granite/granite-4.1-8b", 8_791_592_960, False),
    ("ibm-granite/granite-4.1-30b", 28_865_728_512, True),
])
def test_granite41_tie_flag_is_the_one_that_reproduces_the_hub_total(name, hub_total, tied):
    c = P.load_model(name).config
    assert c.tie_word_embeddings is tied
    assert A.n_params(c) == hub_total
    head = c.vocab_size * c.hidden_size  # the other setting is off by exactly one output head
    assert abs(A.n_params(c.model_copy(update={"tie_word_embeddings": not tied})) - hub_total) == head


@pytest.mark.parametrize("size", ["20b", "120b"])
def test_gpt_oss_safeguard_is_gpt_oss_with_its_mxfp4_experts(size):
    s, g = P.load_model(f"openai/gpt-oss-safeguard-{size}"), P.load_model(f"openai/gpt-oss-{size}")
    assert s.id != g.id and s.config == g.config
    assert s.native_quant is not None and s.native_quant.gguf_preset == g.native_quant.gguf_preset == "MXFP4_MOE"


def test_tongyi_deepresearch_is_qwen3_30b_a3b_with_a_128k_context():
    t, q = P.load_model("Alibaba-NLP/Tongyi-DeepResearch-30B-A3B"), P.load_model("Qwen/Qwen3-30B-A3B")
    assert A.n_params(t.config) == A.n_params(q.config)
    assert t.config.max_position_embeddings == 131_072 > q.config.max_position_embeddings


@pytest.mark.parametrize("name, stem", [
    ("Qwen/Qwen3-VL-2B-Thinking", "qwen3-vl-2b"),
    ("Qwen/Qwen3-VL-4B-Thinking", "qwen3-vl-4b"),
    ("Qwen/Qwen3-VL-32B-Thinking", "qwen3-vl-32b"),
    ("Qwen/Qwen3-VL-235B-A22B-Thinking", "qwen3-vl-235b-a22b"),
    ("deepseek-ai/DeepSeek-V3.2-Exp", "deepseek-v3.2"),
])
def test_same_config_siblings_resolve_to_the_profile_that_names_them(name, stem):
    # identical Hub totals and scraped config values (scripts/stubs/catalog3/README.md); the profile's name says so
    m = P.load_model(name)
    assert m.id == stem
    assert ("Thinking" in m.name) or ("V3.2-Exp" in m.name)


SEED_TINY = {"model_type": "seed_oss", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 3,
             "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 100,
             "attention_bias": True, "attention_out_bias": False, "mlp_bias": False, "tie_word_embeddings": False,
             "max_position_embeddings": 512}


def test_seed_oss_is_the_llama_layout_with_qkv_biases():
    from sources.hfconfig import from_hf_config

    c = from_hf_config(SEED_TINY)
    h, f, L, H, kv, hd, V = 64, 96, 3, 4, 2, 32, 100
    # transformers modeling_seed_oss.py: embed + untied head + final norm; per layer q/k/v/o (+ q/k/v bias), SwiGLU,
    # input and post-attention norms
    per_layer = h * H * hd + 2 * h * kv * hd + H * hd * h + (H + 2 * kv) * hd + 3 * h * f + 2 * h
    assert A.n_params(c) == 2 * V * h + h + L * per_layer
    layers = A.cache_layers(c)
    assert len(layers) == L and all(cl.kind == "full" and cl.k_elems == cl.v_elems == kv * hd for cl in layers)


def test_seed_oss_with_an_output_bias_is_refused_in_one_line():
    from planner.errors import UnsupportedArchitectureError
    from sources.hfconfig import from_hf_config

    with pytest.raises(UnsupportedArchitectureError, match="attention_out_bias"):
        from_hf_config({**SEED_TINY, "attention_out_bias": True})


def test_seed_oss_36b_layout_reproduces_the_published_total():
    # 36,151,104,512: the total llmfit records for lmstudio-community/Seed-OSS-36B-Instruct-MLX-4bit (its element count
    # corrected for the 4-bit packing); the q/k/v biases are 64 x (80 + 16) x 128 of it
    m = P.load_model("ByteDance-Seed/Seed-OSS-36B-Instruct")
    assert A.n_params(m.config) == 36_151_104_512
    assert m.config.attention_bias and m.config.max_position_embeddings == 524_288


EXAONE4_TINY = {"model_type": "exaone4", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 6,
                "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100,
                "sliding_window": 8, "sliding_window_pattern": "LLLG", "max_position_embeddings": 256,
                "tie_word_embeddings": False}


def test_exaone4_pattern_letters_give_the_cache_layout():
    from sources.hfconfig import from_hf_config

    c = from_hf_config(EXAONE4_TINY)
    # mlx_lm exaone4.py: layer i is local iff pattern[i % 4] == "L" -> RotatingKVCache(sliding_window)
    assert [cl.kind for cl in A.cache_layers(c)] == ["sliding", "sliding", "sliding", "full", "sliding", "sliding"]
    assert {cl.window for cl in A.cache_layers(c) if cl.kind == "sliding"} == {8}
    # no pattern: every layer global (EXAONE 4.0 1.2B; mlx is_local None, llama.cpp no SWA below 64 layers)
    g = from_hf_config({k: v for k, v in EXAONE4_TINY.items() if k != "sliding_window_pattern"})
    assert {cl.kind for cl in A.cache_layers(g)} == {"full"}
    # OLMo 2 tensors: q/k/v/o, SwiGLU, two post-norms per layer, untied head (q/k norms not counted)
    h, f, L, H, kv, hd, V = 64, 96, 6, 4, 2, 16, 100
    assert A.n_params(c) == 2 * V * h + h + L * (2 * h * H * hd + 2 * h * kv * hd + 3 * h * f + 2 * h)


def test_exaone4_32b_reproduces_the_hub_total():
    c = P.load_model("LGAI-EXAONE/EXAONE-4.0-32B").config
    assert A.n_params(c) + c.num_hidden_layers * 2 * c.head_dim == 32_003_216_384


def test_exaone4_1_2b_is_tied_all_global_and_reproduces_the_hub_total():
    c = P.load_model("LGAI-EXAONE/EXAONE-4.0-1.2B").config
    assert c.tie_word_embeddings and c.layer_types is None and c.sliding_window is None
    assert A.n_params(c) + c.num_hidden_layers * 2 * c.head_dim == 1_279_391_488
    assert {cl.kind for cl in A.cache_layers(c)} == {"full"}
