"""2026 catalog additions (scripts/stubs/2026/): the published totals the profiles' params_b come from, rebuilt from
their parts, and the architectures added for them."""

import pytest

from planner import architecture as A
from planner import profiles as P


def _qwen35_vision(depth, h, inter, out, patch=16, temporal=2, merge=2, pos=2304):
    # transformers qwen3_5 Qwen3_5VisionModel (the module tree in the model-info reports the stubs cite): Conv3d patch
    # embed with bias, position table, per block 2 LayerNorms + qkv + proj + fc1 + fc2 (all with bias), merger LN +
    # fc1 (h*merge^2 square) + fc2 to the text width
    hm = h * merge * merge
    block = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * inter + inter) + (inter * h + h)
    return 3 * temporal * patch * patch * h + h + pos * h + depth * block + 2 * h + hm * hm + hm + hm * out + out


def _qwen35_mtp(c):
    # mtp.* tensors: fc (2h -> h), one gated full-attention layer (q_proj doubled for the output gate, q/k norms),
    # a SwiGLU MLP, input/post-attention norms, pre_fc_norm_embedding/hidden and the final norm
    h, hd = c.hidden_size, c.head_dim
    attn = h * c.num_attention_heads * hd * 2 + 2 * h * c.num_key_value_heads * hd + c.num_attention_heads * hd * h
    return 2 * h * h + attn + 2 * hd + 3 * h * c.intermediate_size + 5 * h


@pytest.mark.parametrize("name, vision, hub_total", [
    ("Qwen/Qwen3.5-0.8B", (12, 768, 3072, 1024), 873_438_784),
    ("Qwen/Qwen3.5-2B", (24, 1024, 4096, 2048), 2_274_069_824),
    ("Qwen/Qwen3.5-4B", (24, 1024, 4096, 2560), 4_659_865_088),
])
def test_qwen35_small_hub_totals_are_text_plus_vision_plus_mtp(name, vision, hub_total):
    # The cards' 0.8B/2B/4B round the Hub's safetensors totals, which hold the text model the runtimes load, the
    # vision tower and the multi-token-prediction layer (mtp_num_hidden_layers 1, outside num_hidden_layers)
    m = P.load_model(name)
    tower = _qwen35_vision(*vision)
    assert A.n_params(m.config) + tower + _qwen35_mtp(m.config) == hub_total
    assert m.vision_params_b == pytest.approx(tower / 1e9, abs=5e-4)
    assert m.params_b == pytest.approx(hub_total / 1e9, abs=5e-4)


def test_qwen35_0_8b_text_count_is_what_llama_cpp_loads():
    # llama.cpp's loaded parameter count for Qwen3.5-0.8B-Q4_K_M.gguf (no vision, no MTP): 752,393,024
    assert A.n_params(P.load_model("Qwen/Qwen3.5-0.8B").config) == 752_393_024


def test_qwen38_27b_has_qwen36_27b_text_model_and_hub_total():
    # Both Hub totals are 27,781,427,952: same text config, same MTP layer, and the vision share left over equals
    # Qwen3.6-27B's tower (depth 27, width 1152, MLP 4304, out 5120)
    q38, q36 = P.load_model("Qwen/Qwen3.8-27B"), P.load_model("Qwen/Qwen3.6-27B")
    assert A.n_params(q38.config) == A.n_params(q36.config)
    assert [cl.kind for cl in A.cache_layers(q38.config)] == [cl.kind for cl in A.cache_layers(q36.config)]
    rest = 27_781_427_952 - A.n_params(q38.config) - _qwen35_mtp(q38.config)
    assert rest == _qwen35_vision(27, 1152, 4304, 5120)
    assert q38.vision_params_b == pytest.approx(rest / 1e9, abs=5e-4)


@pytest.mark.parametrize("name, paper_b", [("tiiuae/Falcon-H1-7B-Instruct", 7.59), ("tiiuae/Falcon-H1-3B-Instruct", 3.15)])
def test_falcon_h1_layout_rounds_to_the_technical_report_size(name, paper_b):
    # Falcon-H1 technical report Table 1 gives two decimals; the planner's count must round to it
    assert round(A.n_params(P.load_model(name).config) / 1e9, 2) == paper_b


# --------------------------------------------------------------------------- 2026 architectures (hand-derived)
def _tiny(model_type, **kw):
    from sources.hfconfig import from_hf_config

    raw = {"model_type": model_type, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 3,
           "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, "max_position_embeddings": 512,
           "tie_word_embeddings": False, **kw}
    return from_hf_config(raw)


def test_apertus_has_a_two_matrix_mlp_and_qk_norms():
    c = _tiny("apertus", qk_norm=True, mlp_bias=False, attention_bias=False, head_dim=999)
    h, f, L, H, kv, V = 64, 96, 3, 4, 2, 100
    hd = h // H  # apertus.py: head_dim = hidden_size / heads, a head_dim key is not read
    # per layer: q/k/v/o, q_norm + k_norm (hd each), up + down (no gate: xIELU), attention and feed-forward norms
    per_layer = h * H * hd + 2 * h * kv * hd + H * hd * h + 2 * hd + 2 * h * f + 2 * h
    assert A.n_params(c) == 2 * V * h + h + L * per_layer
    assert {cl.kind for cl in A.cache_layers(c)} == {"full"}
    assert all(cl.k_elems == cl.v_elems == kv * hd for cl in A.cache_layers(c))


@pytest.mark.parametrize("key", ["mlp_bias", "attention_bias"])
def test_apertus_with_biases_is_refused_in_one_line(key):
    from planner.errors import UnsupportedArchitectureError

    with pytest.raises(UnsupportedArchitectureError, match=f"'apertus' with {key} true"):
        _tiny("apertus", **{key: True})


def test_apertus_8b_reproduces_the_checkpoint_total():
    # 8,053,338,240 BF16 parameters at revision b946d40 = the planner's tensors + 4 xIELU scalars in each of the
    # 32 MLPs (alpha_p, alpha_n, beta, eps)
    c = P.load_model("swiss-ai/Apertus-8B-Instruct-2509").config
    assert A.n_params(c) + 4 * c.num_hidden_layers == 8_053_338_240
    # KV bytes per token at f16: 32 layers x 2 (K, V) x 8 heads x 128 x 2 bytes = 128 KiB
    assert sum(cl.k_elems + cl.v_elems for cl in A.cache_layers(c)) * 2 == 32 * 2 * 8 * 128 * 2 == 131_072


def test_hunyuan_dense_is_llama_with_qk_norms():
    h, f, L, H, kv, V, hd = 64, 96, 3, 4, 2, 100, 16
    llama = h * H * hd + 2 * h * kv * hd + H * hd * h + 3 * h * f + 2 * h
    c = _tiny("hunyuan_v1_dense", use_qk_norm=True)
    assert A.n_params(c) == 2 * V * h + h + L * (llama + 2 * hd)
    plain = _tiny("hunyuan_v1_dense", use_qk_norm=False)
    assert plain.model_type == "llama" and A.n_params(plain) == 2 * V * h + h + L * llama


@pytest.mark.parametrize("key", ["attention_bias", "use_cla"])
def test_hunyuan_dense_o_bias_and_cross_layer_kv_are_refused(key):
    from planner.errors import UnsupportedArchitectureError

    with pytest.raises(UnsupportedArchitectureError, match=f"with {key} true"):
        _tiny("hunyuan_v1_dense", **{key: True})


ERNIE = dict(moe_num_experts=8, moe_k=2, moe_intermediate_size=32, moe_num_shared_experts=2, moe_layer_start_index=1,
             tie_word_embeddings=True)


def test_ernie45_moe_dense_lead_routed_and_shared_experts():
    c = _tiny("ernie4_5_moe", **ERNIE)
    assert [c.is_moe_layer(i) for i in range(3)] == [False, True, True]
    h, f, V, H, kv, hd, E, fe = 64, 96, 100, 4, 2, 16, 8, 32
    attn = h * H * hd + 2 * h * kv * hd + H * hd * h + 2 * h
    dense = 3 * h * f
    # mlx_lm ernie4_5_moe.py: router h x E (no bias), E SwiGLU experts of moe_intermediate_size, one shared SwiGLU of
    # moe_num_shared_experts x moe_intermediate_size
    moe = h * E + E * 3 * h * fe + 3 * h * (2 * fe)
    assert A.n_params(c) == V * h + h + 3 * attn + dense + 2 * moe  # tied head
    # per token: the tied head, attention, the dense layer, 2 of 8 experts + the shared MLP + the router
    assert A.active_params(c) == V * h + h + 3 * attn + dense + 2 * (h * E + 2 * 3 * h * fe + 3 * h * 2 * fe)


def test_ernie45_moe_end_index_leaves_the_last_layers_dense():
    c = _tiny("ernie4_5_moe", **ERNIE, moe_layer_end_index=1)
    assert [c.is_moe_layer(i) for i in range(3)] == [False, True, False]
    assert _tiny("ernie4_5_moe", **ERNIE, moe_layer_end_index=-1).mlp_only_layers is None  # -1: the last layer


@pytest.mark.parametrize("kw, match", [({"moe_layer_interval": 2}, "moe_layer_interval 2"),
                                       ({"use_bias": True}, "use_bias true")])
def test_ernie45_moe_unmodelled_variants_are_refused(kw, match):
    from planner.errors import UnsupportedArchitectureError

    with pytest.raises(UnsupportedArchitectureError, match=match):
        _tiny("ernie4_5_moe", **ERNIE, **kw)


def test_exaone4_5_text_is_exaone4():
    from sources.hfconfig import from_hf_config

    text = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 8, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100, "sliding_window": 8,
            "sliding_window_pattern": "LLLG", "max_position_embeddings": 256}
    vlm = {"model_type": "exaone4_5", "tie_word_embeddings": False, "vision_config": {"depth": 2},
           "text_config": {**text, "model_type": "exaone4_5_text"}}
    c = from_hf_config(vlm)
    assert c == from_hf_config({**text, "model_type": "exaone4", "tie_word_embeddings": False})
    assert [cl.kind for cl in A.cache_layers(c)] == ["sliding"] * 3 + ["full"] + ["sliding"] * 3 + ["full"]


def test_exaone45_33b_text_is_exaone40_32b_with_the_larger_vocabulary():
    e45, e40 = P.load_model("LGAI-EXAONE/EXAONE-4.5-33B").config, P.load_model("LGAI-EXAONE/EXAONE-4.0-32B").config
    # same trunk; embedding and untied head grow by (153,600 - 102,400) rows of 5120; context 131,072 -> 262,144
    assert A.n_params(e45) - A.n_params(e40) == 2 * (153_600 - 102_400) * 5120
    assert [cl.kind for cl in A.cache_layers(e45)] == [cl.kind for cl in A.cache_layers(e40)]
    assert e45.max_position_embeddings == 262_144


def test_exaone45_vision_tower_from_its_config():
    # transformers modular_exaone4_5.py: Qwen2.5-VL vision blocks with GQA qkv (32 query, 8 KV heads of 64)
    h, inter, depth, out, q, kv = 2048, 5120, 28, 5120, 2048, 8 * 64
    block = 2 * h + h * (q + 2 * kv) + (q + 2 * kv) + h * h + h + 2 * h * inter + 2 * inter + inter * h + h
    hm = 4 * h
    tower = 3 * 2 * 14 * 14 * h + depth * block + h + hm * hm + hm + hm * out + out
    assert P.load_model("LGAI-EXAONE/EXAONE-4.5-33B").vision_params_b == pytest.approx(tower / 1e9, abs=5e-4)


def test_ernie45_21b_a3b_layout():
    c = P.load_model("baidu/ERNIE-4.5-21B-A3B-PT").config
    assert sum(c.is_moe_layer(i) for i in range(c.num_hidden_layers)) == 27 and not c.is_moe_layer(0)
    assert c.shared_ffn == 2 * 1536 and c.head_dim == 2560 // 20
    # KV per token at f16: 28 layers x 2 x 4 heads x 128 x 2 bytes = 56 KiB
    assert sum(cl.k_elems + cl.v_elems for cl in A.cache_layers(c)) * 2 == 57_344


def test_nemotron3_super_latent_moe_reproduces_the_bf16_headers():
    # BF16 tensors in the checkpoint headers 123,611,012,096, of which the MTP block holds 2,942,324,736; the 40 trunk
    # MoE layers' F32 score-correction biases (512 each, llama.cpp exp_probs_b) are in the planner's count
    c = P.load_model("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16").config
    moe = [i for i, b in enumerate(c.layers_block_type) if b == "moe"]
    assert len(moe) == 40 and c.moe_latent_size == 1024
    assert A.n_params(c) == 123_611_012_096 - 2_942_324_736 + 40 * 512
    # the latent projections (h -> 1024 -> h) replace h with 1024 in every routed expert: per MoE layer
    # 512 x 2 x 2688 x (4096 - 1024) elements fewer, 2 x 4096 x 1024 more
    lt = {t.name: t for t in A.tensors(c) if t.layer == moe[0]}
    assert (lt["ffn_up_exps"].ne0, lt["ffn_down_exps"].ne1) == (1024, 1024)
    assert lt["ffn_latent_down"].n_elements == lt["ffn_latent_up"].n_elements == 4096 * 1024
    assert lt["ffn_up_shexp"].ne0 == 4096  # the shared expert stays at the model width


def test_latent_moe_on_a_tiny_nemotron():
    from sources.hfconfig import from_hf_config

    raw = {"model_type": "nemotron_h", "vocab_size": 100, "hidden_size": 64, "intermediate_size": 96,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "mamba_num_heads": 4,
           "mamba_head_dim": 16, "ssm_state_size": 16, "conv_kernel": 4, "n_groups": 2, "hybrid_override_pattern": "E",
           "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "tie_word_embeddings": True}
    plain, latent = from_hf_config(raw), from_hf_config({**raw, "moe_latent_size": 8})
    # experts 4 x 2 x 32 x 64 -> 4 x 2 x 32 x 8, plus down 64x8 and up 8x64
    assert A.n_params(plain) - A.n_params(latent) == 4 * 2 * 32 * (64 - 8) - 2 * 64 * 8
    # active: 2 of 4 experts at the latent width, both projections
    assert A.active_params(plain) - A.active_params(latent) == 2 * 2 * 32 * (64 - 8) - 2 * 64 * 8
