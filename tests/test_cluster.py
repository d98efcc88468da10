"""planner.cluster: layer split, per-node bytes, the traffic model by hand, and the latency-bound cluster."""

from __future__ import annotations

import pytest

from planner import profiles
from planner import throughput as tp
from planner.cluster import (
    cluster_candidates,
    comm_per_step,
    layout,
    place,
    plan_cluster,
    shard_geometry,
    split_layers,
    stage_geometry,
)
from planner.cluster.links import Transport, check_engine, load_link, transport
from planner.cluster.spec import parse_macs
from planner.errors import InputError
from planner.memory import memory_model
from planner.schema import ModelConfig, ModelProfile

TR = Transport(link="test", backend="ring", bytes_s=1e9, latency_s=1e-4)


def tiny(n_layers: int = 4) -> ModelProfile:
    cfg = ModelConfig(model_type="llama", hidden_size=256, num_hidden_layers=n_layers, num_attention_heads=4,
                      num_key_value_heads=2, intermediate_size=512, vocab_size=1024)
    return ModelProfile(id="tiny", name="tiny", params_b=0.01, config=cfg, sources=["test"], verified="2026-01-01")


def mm_of(model: ModelProfile, runtime: str = "llama.cpp", quant: str = "Q8_0"):
    rt = profiles.load_runtime(runtime)
    return memory_model(model, rt, profiles.load_quant(quant, rt.weight_format), profiles.ggml_types())


# ---------------------------------------------------------------- placement arithmetic
@pytest.mark.parametrize("L,w,expect", [
    (10, [1, 1], [(0, 5), (5, 10)]),
    (12, [3, 1], [(0, 9), (9, 12)]),
    (61, [512, 512], [(0, 30), (30, 61)]),        # 30.5 rounds to even
    (3, [100, 1, 1], [(0, 1), (1, 2), (2, 3)]),   # every stage keeps at least one layer
    (80, [128, 64, 64], [(0, 40), (40, 60), (60, 80)]),
])
def test_split_layers_proportional_and_complete(L, w, expect):
    r = split_layers(L, w)
    assert r == expect
    assert sum(b - a for a, b in r) == L and r[0][0] == 0 and r[-1][1] == L


def test_split_more_nodes_than_layers():
    with pytest.raises(InputError):
        split_layers(2, [1, 1, 1])


def test_layout_bytes_sum_to_the_model():
    mm = mm_of(tiny())
    lay = layout(mm)
    assert sum(lay.layer_bytes) + lay.embed_bytes + lay.head_bytes == pytest.approx(mm.weights.total_bytes)
    assert len({round(b) for b in lay.layer_bytes}) == 1  # identical layers


def test_pipeline_node_bytes_llama_cpp_sum_to_weights():
    mm = mm_of(tiny())
    nodes = parse_macs("2x Mac Studio M3 Ultra 512GB")
    sh = place(mm, nodes, "pipeline", "llama.cpp-rpc", 4096, 1, "26")
    assert sum(s.weights_bytes for s in sh) == pytest.approx(mm.weights.total_bytes, abs=2)
    # the head host (llama-server) holds the last layers + token_embd + output (RPC devices come first)
    assert sh[0].layers == (2, 4) and sh[1].layers == (0, 2)
    assert sum(s.kv_bytes for s in sh) == pytest.approx(mm.estimate(4096, 1).kv_cache, abs=2)
    for s in sh:
        assert s.total_bytes == s.weights_bytes + s.kv_bytes + s.buffers_bytes
        assert s.verdict == "fits"


def test_mlx_pipeline_replicates_embedding_and_head():
    mm = mm_of(tiny(), "mlx-lm", "mlx-4bit-g64")
    lay = layout(mm)
    sh = place(mm, parse_macs("2x Mac Studio M3 Ultra 512GB"), "pipeline", "mlx", 4096, 1, "26")
    extra = lay.embed_bytes + lay.head_bytes
    assert sum(s.weights_bytes for s in sh) == pytest.approx(mm.weights.total_bytes + extra, abs=2)


def test_tensor_shares_split_weights_and_kv():
    mm = mm_of(tiny(), "mlx-lm", "mlx-4bit-g64")
    lay = layout(mm)
    sh = place(mm, parse_macs("2x Mac Studio M3 Ultra 512GB"), "tensor", "mlx", 4096, 1, "26")
    assert sh[0].weights_bytes == pytest.approx(sum(lay.layer_bytes) / 2 + lay.embed_bytes + lay.head_bytes, abs=2)
    assert sh[0].kv_bytes == pytest.approx(mm.estimate(4096, 1).kv_cache / 2, abs=2)  # 2 KV heads over 2 nodes


def test_stage_geometries_partition_the_model():
    mm = mm_of(tiny(6))
    geo = tp.geometry(mm, "gguf")
    lay = layout(mm)
    parts = [stage_geometry(geo, lay, a, b, b == 6) for a, b in [(0, 2), (2, 5), (5, 6)]]
    for f in ("dense_bytes", "expert_bytes", "matmul_params", "head_params", "kv_full", "attn_full"):
        assert sum(getattr(p, f) for p in parts) == pytest.approx(getattr(geo, f)), f
    assert sum(p.n_layers for p in parts) == 6
    sh = shard_geometry(geo, lay, 2, kv_rep=False)
    assert sh.matmul_params == pytest.approx(geo.matmul_params / 2) and sh.head_params == geo.head_params


# ---------------------------------------------------------------- traffic model, by hand
def test_pipeline_traffic_by_hand():
    # mlx, 2 stages: 2 messages (1 forward hop + the token back), 1 activation of 256 × 2 bytes
    t, lat = comm_per_step("pipeline", "mlx", 2, 1, 256, 2, 4, TR)
    assert lat == pytest.approx(2e-4)
    assert t == pytest.approx(2e-4 + 512 / 1e9)
    # llama.cpp RPC, 3 Macs: 2 remote stages × 4 messages, activations in and out of each (f32)
    t, lat = comm_per_step("pipeline", "llama.cpp-rpc", 3, 1, 256, 4, 4, TR)
    assert lat == pytest.approx(8e-4)
    assert t == pytest.approx(8e-4 + 4 * 1024 / 1e9)


def test_tensor_traffic_by_hand():
    # 4 nodes, 4 layers, 8 tokens: 2 all-reduces per layer of 8·256·2 = 4096 bytes each
    t, lat = comm_per_step("tensor", "mlx", 4, 8, 256, 2, 4, TR)
    one = 2 * 3 / 4 * 4096 / 1e9 + 2 * 3 * 1e-4
    assert t == pytest.approx(8 * one)
    assert lat == pytest.approx(8 * 6e-4)
    assert comm_per_step("tensor", "mlx", 1, 8, 256, 2, 4, TR) == (0.0, 0.0)


def test_transport_choice():
    tb5, tb4 = load_link("tb5"), load_link("Thunderbolt 4")
    assert transport(tb5, "mlx").backend == "jaccl" and transport(tb5, "mlx").latency_s < 1e-4
    assert transport(tb5, "mlx", rdma=False).backend == "ring"
    assert transport(tb5, "llama.cpp-rpc").backend == "rpc"
    assert transport(tb4, "exo").backend == "ring"
    assert check_engine("llama.cpp", "pipeline") == ("llama.cpp-rpc", "pipeline")
    with pytest.raises(InputError):
        check_engine("llama.cpp-rpc", "tensor")


# ---------------------------------------------------------------- speed
def test_one_node_cluster_equals_the_single_mac_roofline():
    p = plan_cluster("qwen3-8b", parse_macs("1x Mac Studio M3 Ultra 512GB"), "tb5", "mlx", "pipeline",
                     context=4096, prompt=512, gen=128)
    assert p.speed.comm_s_per_step == 0
    assert p.speed.decode_tok_s_per_user == pytest.approx(p.best_single.decode_tok_s, rel=1e-3)


def test_latency_bound_two_macs_decode_slower_than_one():
    # a small model fits one Mac; tensor parallel over TCP pays 2 × 28 all-reduces × 2 steps × 300 µs per token
    p = plan_cluster("qwen3-0.6b", parse_macs("2x Mac Studio M3 Ultra 512GB"), "10gbe", "mlx", "tensor",
                     context=4096, prompt=256, gen=64)
    assert p.slower_than_single
    assert p.scaling[2] < p.scaling[1]
    assert p.speed.comm_latency_s_per_step == pytest.approx(2 * 28 * 2 * 3e-4)
    assert "interconnect latency" in p.binding
    assert any("slower" in n for n in p.notes)


def test_pipeline_mixed_cluster_slowest_stage_binds():
    p = plan_cluster("llama-3.3-70b", parse_macs("1x Mac Studio M3 Ultra 96GB, 1x Mac mini M4 Pro 20-core 64GB"),
                     "tb5", "exo", "pipeline", context=4096)
    steps = [n.decode_step_s for n in p.nodes]
    assert p.speed.pipelined_ceiling_tok_s <= 1 / max(steps) + 1e-9
    assert "Mac mini" in p.binding  # the M4 Pro (273 GB/s) stage is the slow one
    assert p.nodes[0].layers[1] - p.nodes[0].layers[0] > p.nodes[1].layers[1] - p.nodes[1].layers[0]


def test_big_model_needs_the_cluster():
    p = plan_cluster("deepseek-v3", parse_macs("2x Mac Studio M3 Ultra 256GB"), "tb5", "mlx", "pipeline")
    assert p.fits and p.best_single is None
    assert all(s.decode_tok_s is None for s in p.single_macs)


# ---------------------------------------------------------------- --macs parsing
def test_parse_macs_counts_and_fallback_bins():
    # the catalog has every configuration Apple sold; a MacBook Pro with an M4 Pro and 64 GB was not one of them
    # (64 GB was Mac mini only), so it falls back to the chip bin without a catalog Mac
    nodes = parse_macs("2x Mac Studio M3 Ultra 512GB, 1x MacBook Pro M4 Pro 20-core 64GB")
    assert [n.chip.id for n in nodes] == ["m3-ultra-80gpu", "m3-ultra-80gpu", "m4-pro-20gpu"]
    assert nodes[0].mac_id and nodes[2].mac_id is None and nodes[2].ram_gb == 64
    assert parse_macs("M4 Pro 16-core 64GB")[0].chip.id == "m4-pro-16gpu"


@pytest.mark.parametrize("spec", ["", "2x Mac Studio M3 Ultra", "Mac Studio M9 Ultra 512GB",
                                  "Mac mini M3 Ultra 512GB", "M3 Ultra 1024GB", "0x Mac Studio M3 Ultra 512GB",
                                  "M3 Ultra 33-core 512GB", "banana"])
def test_parse_macs_bad_specs(spec):
    with pytest.raises(InputError) as e:
        parse_macs(spec)
    assert "\n" not in str(e.value) and e.value.fields["input"] == "macs" and str(e.value).startswith("macs")


def test_cluster_candidates_for_buy():
    cands = cluster_candidates("deepseek-v3", counts=(2, 4), budget_usd=30000)
    assert cands and all(c.price_usd <= 30000 and c.count in (2, 4) for c in cands)
    assert [c.price_usd for c in cands] == sorted(c.price_usd for c in cands)
    assert cands[0].decode_tok_s_per_user > 0 and cands[0].engine == "mlx"


@pytest.mark.parametrize("L,w", [(10, [2, 1]), (32, [1, 1, 1]), (80, [192, 128, 64]), (61, [3, 1]), (7, [5, 4, 2])])
def test_pipeline_cuts_are_the_nearest_integer_to_layers_times_cumulative_share(L, w):
    """Rule (issue 34): cut i is round(L × (w_1 + ... + w_i) / sum w), within half a layer of the exact share
    (floored cuts passed the table above: its shares are whole numbers)."""
    r = split_layers(L, w)
    acc = 0
    for i, (_, b) in enumerate(r[:-1]):
        acc += w[i]
        assert abs(b - L * acc / sum(w)) <= 0.5, (r, i)


def test_rpc_head_host_holds_the_embedding_and_the_output_head():
    """Rule (issue 34): with llama.cpp RPC the head host (nodes[0], running llama-server) holds token_embd and the
    output head on top of its layers; the RPC devices hold their layers only."""
    mm = mm_of(tiny(8))
    lay = layout(mm)
    sh = place(mm, parse_macs("3x Mac Studio M3 Ultra 512GB"), "pipeline", "llama.cpp-rpc", 4096, 1, "26")
    for i, s in enumerate(sh):
        a, b = s.layers
        extra = lay.embed_bytes + lay.head_bytes if i == 0 else 0.0
        assert s.weights_bytes == pytest.approx(sum(lay.layer_bytes[a:b]) + extra, abs=2), i


def test_a_cluster_that_does_not_fit_has_no_speed_and_says_what_would_fit():
    # Kimi K2 at 8 bits is ~1.09 TB of weights; two 512 GB Macs hold at most 2 × 448 GiB (each keeps 64 GiB for
    # macOS): no speed, and the ways out: a quant under ~896 GiB, or a third 512 GB Mac (3 × 448 = 1,344 GiB)
    p = plan_cluster("kimi-k2", parse_macs("2x Mac Studio M3 Ultra 512GB"), quant="mlx-8bit-g64")
    assert not p.fits and p.speed is None
    smaller = next(s for s in p.suggestions if s.startswith("a smaller quant"))
    q = smaller.split(": ")[1].split(" ")[0]
    assert plan_cluster("kimi-k2", parse_macs("2x Mac Studio M3 Ultra 512GB"), quant=q).fits
    assert any("1 more Mac Studio M3 Ultra" in s and "(3 in all)" in s for s in p.suggestions)
    assert plan_cluster("kimi-k2", parse_macs("3x Mac Studio M3 Ultra 512GB"), quant="mlx-8bit-g64").fits


def test_cluster_candidates_leave_out_discontinued_macs_like_the_single_mac_search():
    old = {m.id for m in profiles.all_macs() if m.discontinued}
    assert old
    kw = dict(counts=(2,), budget_usd=20000)
    assert not {c.mac_id for c in cluster_candidates("llama-3.3-70b", **kw)} & old
    assert {c.mac_id for c in cluster_candidates("llama-3.3-70b", include_discontinued=True, **kw)} & old


def test_one_mac_that_needs_the_limit_raised_says_so():
    # Llama 3.3 70B at 4 bits (~37 GiB) on one 48 GB Mac mini: over the 36 GiB default, under the raised limit
    one = cluster_candidates("llama-3.3-70b", counts=(1,), budget_usd=2000)
    mini = next(c for c in one if "48GB" in c.macs)
    assert mini.needs_raised_limit


def test_the_quant_is_the_deployment_stages_one_rule():
    """A name that pins a preset is answered at it (mlx-community/Qwen3-8B-8bit: mlx-8bit-g64, as `plan` and `plan
    predict`; the cluster answered the 4-bit default), and a quant of the other format at its bit class with the
    quant rule's note (Q8_0 on the mlx engine: mlx-8bit-g64; it was refused)."""
    macs = parse_macs("2x Mac Studio M4 Max 64GB")
    assert plan_cluster("mlx-community/Qwen3-8B-8bit", macs).quant == "mlx-8bit-g64"
    assert plan_cluster("mlx-community/Qwen3-8B-8bit", macs, engine="llama.cpp-rpc").quant == "Q8_0"
    p = plan_cluster("qwen3-8b", macs, quant="Q8_0")
    assert p.quant == "mlx-8bit-g64" and any("the same 8-bit class" in n for n in p.notes)
