"""Gemma 4 (gemma4 / gemma4_text): per-layer heads, K=V, KV sharing, per-layer embeddings, double-wide MLP, MoE block.

Expected numbers are derived by hand from the rules of mlx_lm/models/gemma4_text.py and llama.cpp
src/models/gemma4.cpp (cited in planner/arch_gemma4.py), never from the code under test.
Shapes: E2B = mlx-lm gemma4_text.py ModelArgs defaults (read in the runtime's code); 31B and 26B-A4B = test
fixtures with the survey's shapes (third-party copies of the configs; these are fixtures, not catalog profiles).
"""

from __future__ import annotations

import json

import pytest

from cli.main import main
from planner import architecture as arch
from planner import memory as M
from planner import profiles as P
from planner import throughput as T
from sources import make_profile
from sources.errors import SourceError
from sources.hfconfig import from_hf_config

# mlx_lm/models/gemma4_text.py ModelArgs defaults (= E2B); the wrapper as google/gemma-4-* ship it
E2B_RAW = {
    "model_type": "gemma4", "vocab_size": 262144,
    "text_config": {"model_type": "gemma4_text", "hidden_size": 1536, "num_hidden_layers": 35,
                    "intermediate_size": 6144, "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256,
                    "global_head_dim": 512, "num_kv_shared_layers": 20, "hidden_size_per_layer_input": 256,
                    "vocab_size_per_layer_input": 262144, "sliding_window": 512, "use_double_wide_mlp": True},
    "vision_config": {"hidden_size": 768},
}
LT_31B = (["sliding_attention"] * 5 + ["full_attention"]) * 10
G31B_RAW = {
    "model_type": "gemma4_text", "hidden_size": 5376, "num_hidden_layers": 60, "intermediate_size": 21504,
    "num_attention_heads": 32, "num_key_value_heads": 16, "num_global_key_value_heads": 4, "head_dim": 256,
    "global_head_dim": 512, "attention_k_eq_v": True, "num_kv_shared_layers": 0, "hidden_size_per_layer_input": 0,
    "sliding_window": 1024, "layer_types": LT_31B, "vocab_size": 262144, "max_position_embeddings": 262144,
    "use_double_wide_mlp": False,
}
G26B_RAW = {
    "model_type": "gemma4_text", "hidden_size": 2816, "num_hidden_layers": 30, "intermediate_size": 2112,
    "num_attention_heads": 16, "num_key_value_heads": 8, "num_global_key_value_heads": 2, "head_dim": 256,
    "global_head_dim": 512, "attention_k_eq_v": True, "num_kv_shared_layers": 0, "hidden_size_per_layer_input": 0,
    "sliding_window": 1024, "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 5,
    "vocab_size": 262144, "enable_moe_block": True, "num_experts": 128, "top_k_experts": 8,
    "moe_intermediate_size": 704, "use_double_wide_mlp": False,
}


def prof(raw, id_="g4"):
    return make_profile(from_hf_config(raw), id_=id_, name=id_, source_url="test fixture")


def kv(p, runtime="llama.cpp", kv_type=None):
    rt = P.load_runtime(runtime)
    return M.kv_layout(p, rt, kv_type or rt.default_kv_type, P.ggml_types())


# --------------------------------------------------------------------------- config.json
def test_wrapper_unwraps_to_gemma4_text_with_mlx_defaults():
    cfg = from_hf_config(E2B_RAW)
    assert cfg.model_type == "gemma4_text"
    # gemma4_text.py: pattern 5 -> every 5th layer global; max_position_embeddings default 131072
    assert [i for i, t in enumerate(cfg.layer_types) if t == "full_attention"] == [4, 9, 14, 19, 24, 29, 34]
    assert cfg.max_position_embeddings == 131072 and cfg.tie_word_embeddings


def test_unified_wrapper_is_gemma4_text():
    raw = json.loads(json.dumps(E2B_RAW))
    raw["model_type"] = "gemma4_unified"            # mlx_lm/utils.py MODEL_REMAPPING -> gemma4
    raw["text_config"]["model_type"] = "gemma4_unified_text"
    assert from_hf_config(raw).model_type == "gemma4_text"


def test_outer_vocab_wins_as_in_mlx_lm():
    raw = json.loads(json.dumps(E2B_RAW))
    raw["vocab_size"] = 1000
    raw["text_config"]["vocab_size"] = 262144
    assert from_hf_config(raw).vocab_size == 1000   # mlx_lm/models/gemma4.py __post_init__


def test_kv_sharing_without_an_owner_is_refused():
    raw = dict(G31B_RAW, num_kv_shared_layers=58)   # layers 2..59 shared: no earlier full layer to share from
    with pytest.raises(SourceError, match="num_kv_shared_layers"):
        from_hf_config(raw)


# --------------------------------------------------------------------------- 31B: K=V, per-layer heads
def test_31b_kv_per_token_global_and_sliding():
    p = prof(G31B_RAW)
    lay = kv(p)  # llama.cpp f16
    # 10 global layers x (K + V) x 4 KV heads x 512 x 2 B; K=V still stores both
    assert lay.bytes_per_token == 10 * 2 * 4 * 512 * 2 == 81_920
    # 50 sliding layers x (K + V) x 16 KV heads x 256 x 2 B, capped at the 1024-token window
    assert lay.swa_bytes_per_token == 50 * 2 * 16 * 256 * 2 and lay.window == 1024
    assert lay.read_bytes_per_token is None   # nothing shared: reads = stores


def test_31b_llama_cpp_cache_at_32k():
    p = prof(G31B_RAW)
    rt = P.load_runtime("llama.cpp")
    mm = M.memory_model(p, rt, P.load_quant("Q4_K_M", "gguf"), P.ggml_types())
    est = mm.estimate(32768, 1)
    # llama-kv-cache-iswa.cpp: SWA cells = PAD(min(n_ctx, n_swa + n_ubatch), 256)
    swa_cells = -(-min(32768, 1024 + rt.n_ubatch) // 256) * 256
    assert est.kv_cache == 81_920 * 32768 + 819_200 * swa_cells


def test_31b_k_eq_v_drops_v_proj_on_global_layers_only():
    cfg = from_hf_config(G31B_RAW)
    ts = arch.tensors(cfg)
    v_layers = {t.layer for t in ts if t.name == "attn_v"}
    assert v_layers == {i for i in range(60) if LT_31B[i] == "sliding_attention"}
    h, H = 5376, 32
    k_full = [t for t in ts if t.name == "attn_k" and t.layer == 5][0]
    assert (k_full.ne0, k_full.ne1) == (h, 4 * 512)
    q_full = [t for t in ts if t.name == "attn_q" and t.layer == 5][0]
    assert q_full.ne1 == H * 512
    q_swa = [t for t in ts if t.name == "attn_q" and t.layer == 0][0]
    assert q_swa.ne1 == H * 256


def test_31b_params_by_hand():
    h, H, V, f = 5376, 32, 262144, 21504
    swa = h * H * 256 * 2 + 2 * h * 16 * 256 + 2 * 256      # q, o, k, v; q_norm, k_norm
    glob = h * H * 512 * 2 + h * 4 * 512 + 2 * 512          # q, o, k (no v); q_norm, k_norm
    per = 3 * h * f + 4 * h + 1                             # GeGLU; attn/post-attn/ffn/post-ffn norms; out scale
    expected = V * h + 50 * (swa + per) + 10 * (glob + per) + h + 512 // 2   # tied head; final norm; rope_freqs
    assert arch.n_params(from_hf_config(G31B_RAW)) == expected


# --------------------------------------------------------------------------- E2B: sharing, PLE, double-wide
def test_e2b_only_owning_layers_hold_kv():
    p = prof(E2B_RAW)
    lay = kv(p)
    # owning layers 0..14: globals 4, 9, 14 -> 3 x 2 x 1 x 512 x 2 B; 12 sliding x 2 x 1 x 256 x 2 B
    assert lay.bytes_per_token == 3 * 2 * 512 * 2 == 6144
    assert lay.swa_bytes_per_token == 12 * 2 * 256 * 2 == 12288
    # the 20 shared layers (4 global, 16 sliding) re-read their owner's cache every decode step
    assert lay.read_bytes_per_token == 6144 + 4 * 2048
    assert lay.swa_read_bytes_per_token == 12288 + 16 * 1024
    assert lay.window == 512


def test_e2b_mlx_cache_is_the_same_per_token():
    p = prof(E2B_RAW)
    lay = kv(p, "mlx-lm", "bf16")
    assert (lay.bytes_per_token, lay.swa_bytes_per_token, lay.window) == (6144, 12288, 512)


def test_e2b_shared_layers_have_no_kv_projections_and_double_mlp():
    cfg = from_hf_config(E2B_RAW)
    ts = arch.tensors(cfg)
    assert {t.layer for t in ts if t.name == "attn_k"} == set(range(15))
    assert {t.layer for t in ts if t.name == "attn_v"} == set(range(15))   # E2B has no K=V
    gate = {t.layer: t.ne1 for t in ts if t.name == "ffn_gate"}
    assert all(gate[i] == 6144 for i in range(15)) and all(gate[i] == 12288 for i in range(15, 35))


def test_e2b_params_by_hand_and_ple_is_not_active():
    h, H, V, L, hpl = 1536, 8, 262144, 35, 256
    total = V * h + V * L * hpl + h * L * hpl + hpl + 512 // 2 + h   # embd, PLE table, PLE proj + norm, rope, norm
    for i in range(L):
        hd = 512 if i % 5 == 4 else 256
        total += 2 * h * H * hd + hd                       # q, o, q_norm
        if i < 15:
            total += 2 * h * hd + hd                       # k, v (1 KV head), k_norm
        f = 6144 * (2 if i >= 15 else 1)
        total += 3 * h * f + 5 * h + 1                     # MLP; 4 block norms + PLE post norm; out scale
        total += 2 * h * hpl                               # PLE gate + projection
    cfg = from_hf_config(E2B_RAW)
    assert arch.n_params(cfg) == total
    # the PLE table is gathered (one row per token), never multiplied: not an active parameter
    assert arch.active_params(cfg) == total - V * L * hpl


def test_ple_table_is_not_streamed_by_decode():
    p = prof(E2B_RAW)
    for runtime, quant, kind in (("llama.cpp", "Q4_K_M", "gguf"), ("mlx-lm", "mlx-4bit-g64", "mlx")):
        rt = P.load_runtime(runtime)
        mm = M.memory_model(p, rt, P.load_quant(quant, kind), P.ggml_types())
        g = mm.weights.by_group
        assert g["lookup"] > 0
        geo = T.geometry(mm, kind)
        # everything but the two gathered tables, the tied embedding read once as the head
        assert geo.dense_bytes == sum(v for k, v in g.items() if k != "lookup")
        # decode KV read: shared layers re-read their owner's cache
        assert geo.kv_full == mm.kv.read_bytes_per_token and geo.kv_swa == mm.kv.swa_read_bytes_per_token


def test_ple_table_takes_the_output_type_when_tied_in_gguf():
    """llama-quant.cpp: per_layer_token_embd is a TOKEN_EMBD tensor; with tied embeddings it gets the output
    tensor's type (Q6_K for Q4_K_M); per_layer_model_proj is never quantized (kept bf16)."""
    p = prof(E2B_RAW)
    q = P.load_quant("Q4_K_M", "gguf")
    types = {t.name: t for t in P.ggml_types().types}
    by = {t.name: t for t in arch.tensors(p.config)}
    cls = P.ggml_types().llama_quantize
    assert M.gguf_tensor_type(by["per_layer_token_embd"], q, p, types, {"attn_v": 0, "n_attn_v": 15},
                              classes=cls) == "Q6_K"
    assert M.gguf_tensor_type(by["per_layer_model_proj"], q, p, types, {"attn_v": 0, "n_attn_v": 15},
                              classes=cls) == "BF16"


def test_attention_flops_use_each_layers_head_size():
    p = prof(E2B_RAW)
    full, swa = T._attention_dims(p.config, "llama.cpp")
    # every layer attends (shared ones over their owner's cache): 7 global x 8 heads x 2 x 512, 28 sliding x 256
    assert full == 7 * 8 * 2 * 512 and swa == 28 * 8 * 2 * 256


# --------------------------------------------------------------------------- 26B-A4B: MoE beside the dense MLP
def test_26b_moe_block_beside_dense_mlp():
    cfg = from_hf_config(G26B_RAW)
    h, E, fe, f, k = 2816, 128, 704, 2112, 8
    ts = [t for t in arch.tensors(cfg) if t.layer == 0]
    names = {t.name for t in ts}
    assert {"ffn_gate", "ffn_up", "ffn_down", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps",
            "ffn_gate_inp"} <= names
    experts = sum(t.n_elements for t in ts if t.group == "experts")
    assert experts == 3 * h * fe * E
    dense = sum(t.n_elements for t in ts if t.group == "ffn")
    assert dense == 3 * h * f
    total, active = arch.n_params(cfg), arch.active_params(cfg)
    assert total - active == 30 * 3 * h * fe * (E - k)   # only the routed experts not picked are inactive


# --------------------------------------------------------------------------- CLI end to end
def test_plan_answers_for_a_gemma4_folder(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps(E2B_RAW))
    code = main(["--model", str(tmp_path), "--ram", "16", "--chip", "M4", "--gpu-cores", "10"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "6.0 KiB + 12.0 KiB SWA (window 512)" in out
    assert "global layers 1 KV heads × 512" in out and "15 of 35 layers hold KV (20 share it)" in out


def test_llama_cpp_reads_a_ple_table_over_4_gib_lazily():
    """llama-model-loader.cpp lazy_read::add: a TENSOR_READ_LAZY table over 4 GiB is read on demand from the mmap.
    E2B's table: 262144 x 35 x 256 values = 4.70 GB in BF16 (lazy), 2.50 GB in Q8_0 (loaded); mlx keeps it."""
    p = prof(E2B_RAW)
    table = 262144 * 35 * 256
    for runtime, quant, kind, lazy in (("llama.cpp", "BF16", "gguf", table * 2), ("llama.cpp", "Q8_0", "gguf", 0),
                                       ("mlx-lm", "mlx-bf16", "mlx", 0)):
        mm = M.memory_model(p, P.load_runtime(runtime), P.load_quant(quant, kind), P.ggml_types())
        assert mm.weights.by_group["lookup"] == (table * 2 if quant.endswith("bf16") or quant == "BF16"
                                                 else table // 32 * 34)
        assert mm.estimate(4096, 1).weights == mm.weights.total_bytes - lazy


def test_activations_see_the_double_wide_mlp():
    assert from_hf_config(E2B_RAW).ffn_width == 2 * 6144


def test_cluster_layout_keeps_every_gemma4_weight():
    """planner.cluster.layout spreads the weights over layers, the embedding host and the head: with the PLE table
    (on the input host) and per_layer_model_proj (a layer-less tensor), nothing is dropped."""
    from planner import cluster

    p = prof(E2B_RAW)
    mm = M.memory_model(p, P.load_runtime("llama.cpp"), P.load_quant("Q4_K_M", "gguf"), P.ggml_types())
    lay = cluster.layout(mm)
    g = mm.weights.by_group
    tied_head = g["embedding"]   # tied: the embedding is also counted as the head
    assert sum(lay.layer_bytes) + lay.embed_bytes + lay.head_bytes - tied_head == pytest.approx(
        mm.weights.total_bytes)
