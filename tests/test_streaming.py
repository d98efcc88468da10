"""Models larger than RAM streamed from the SSD (planner/streaming.py): hand-derived bytes per token and speeds."""

from __future__ import annotations

import pytest

from planner import profiles
from planner import streaming as S
from planner.plan import PlanRequest, plan

GB = 1e9


def _ssd(read_gb_s: float, lo: float | None = None, hi: float | None = None) -> S.SSDSpeed:
    return S.SSDSpeed(read_bytes_s=read_gb_s * GB, range_bytes_s=((lo or read_gb_s) * GB, (hi or read_gb_s) * GB),
                      storage_gb=512, rows=["test"])


def test_moe_reads_the_routed_experts_that_miss_the_cache():
    # 100 GB of weights: 1 GB embedding (a lookup), 90 GB routed experts, 9 GB dense; 2 GB KV+buffers; 50 GB spare
    est = S.streaming(100 * GB, {"embedding": 1 * GB, "experts": 90 * GB, "attention": 9 * GB}, 2 * GB, 50 * GB,
                      n_experts=128, experts_per_tok=8, compute_s_per_token=0.05, compute_range_s=None,
                      ssd=_ssd(3.0))
    # RAM for weights 48 GB; the dense 9 GB stay; 39 GB cache the experts: hit rate 39/90
    assert est.always_read_bytes == 9 * GB and est.ram_for_weights_bytes == 48 * GB
    assert est.expert_cache_bytes == 39 * GB
    assert est.hit_rate == pytest.approx(39 / 90)
    # a token uses 8/128 of the 90 GB = 5.625 GB of experts, 51/90 of which come from the SSD: 3.1875 GB
    assert est.bytes_per_token == pytest.approx(3.1875 * GB)
    assert est.ssd_s_per_token == pytest.approx(1.0625)
    assert est.decode_tok_s == pytest.approx(1 / (0.05 + 1.0625))       # page faults block: the times add
    assert est.overlapped_tok_s == pytest.approx(1 / 1.0625)            # an engine reading while computing
    assert est.bound == "ssd" and not est.swaps


def test_dense_rereads_the_whole_scan_at_worst_and_the_excess_at_best():
    est = S.streaming(50 * GB, {"embedding": 1 * GB, "ffn": 40 * GB, "attention": 9 * GB}, 2 * GB, 30 * GB,
                      n_experts=0, experts_per_tok=0, compute_s_per_token=0.1, compute_range_s=None,
                      ssd=_ssd(3.0, 2.0, 4.0))
    assert est.bytes_per_token == pytest.approx(49 * GB)                # LRU misses a cyclic scan larger than it
    assert est.bytes_per_token_range == pytest.approx((21 * GB, 49 * GB))  # 49 − (30 − 2) at best
    assert est.decode_tok_s == pytest.approx(1 / (0.1 + 49 / 3))
    slow, fast = est.decode_tok_s_range
    assert slow == pytest.approx(1 / (0.1 + 49 / 2)) and fast == pytest.approx(1 / (0.1 + 21 / 4))


def test_kv_and_buffers_beyond_what_macos_spares_would_swap():
    est = S.streaming(50 * GB, {"ffn": 50 * GB}, 31 * GB, 30 * GB, 0, 0, 0.1, None, _ssd(3.0))
    assert est.swaps and est.ram_for_weights_bytes == 0


def test_more_ram_never_reads_more():
    def read(budget):
        return S.streaming(100 * GB, {"experts": 90 * GB, "attention": 10 * GB}, 2 * GB, budget * GB, 64, 4, 0.05,
                           None, _ssd(3.0)).bytes_per_token
    reads = [read(b) for b in (5, 12, 30, 60, 90, 102)]
    assert reads == sorted(reads, reverse=True) and reads[-1] == 0


def test_ssd_table_validates_each_row_and_ranks_capacity_first():
    t = profiles.ssd_speeds()
    assert all(r.source.startswith("http") for r in t.rows)
    m2 = S.ssd_speed(t, "M2", "base", 256)   # three single-NAND M2 256 GB drives: 1446, 1458.9, 1576 MB/s
    assert m2.read_bytes_s == pytest.approx(1458.9e6) and m2.range_bytes_s == pytest.approx((1446e6, 1576e6))
    m3 = S.ssd_speed(t, "M3", "base", 256)   # two NAND packages again
    assert m3.read_bytes_s == pytest.approx(2880.2e6) and m3.basis == "measured"
    m4max = S.ssd_speed(t, "M4", "max", 512)  # no M4 Max 512 GB row: the M4 512 GB one, same capacity
    assert m4max.read_bytes_s == pytest.approx(3000e6) and m4max.basis == "same capacity, other chip"
    with pytest.raises(ValueError):
        S.SSDRead(product="x", chip="M4 Maxi", storage_gb=512, read_mb_s=3000, tool="t", source="https://x")
    with pytest.raises(ValueError):
        S.SSDRead(product="x", chip="M4", storage_gb=512, read_mb_s=3000, tool="t", source="a blog")


def _option(model, chip, cores, ram, quant, **kw):
    p = plan(PlanRequest(model=model, chip=chip, gpu_cores=cores, ram=ram, runtimes=["llama.cpp"],
                         quants=[quant], **kw))
    return p, p.options[0]


def test_qwen3_235b_on_a_64_gb_m4_max_streams_its_experts():
    p, o = _option("qwen3-235b-a22b", "M4 Max", 40, 64, "Q8_0")
    s = o.streaming
    assert s is not None and o.fit.verdict == "no-fit"
    # routed experts: 94 layers × 128 experts × 3 matrices (gate, up: 4096×1536; down: 1536×4096), Q8_0 = 34 B / 32
    E = 94 * 128 * 3 * 4096 * 1536 * 34 // 32
    assert s.routed_expert_bytes == E
    # RAM for weights: what macOS spares on 64 GB (56 GiB) minus KV and buffers; the rest after the dense part
    # caches experts; a token reads 8/128 of the experts, the missing share from the SSD
    B = 56 * 2**30 - (o.memory.total - o.memory.weights)
    D = o.weights.total_bytes - o.weights.by_group["embedding"] - E
    assert s.ram_for_weights_bytes == B and s.always_read_bytes == D
    assert s.bytes_per_token == pytest.approx(E * 8 / 128 * (1 - (B - D) / E))
    # a 64 GB M4 Max is sold with 512 GB at the least: the 512 GB M4 drive's 3,000 MB/s
    assert s.ssd.storage_gb == 512 and s.ssd.read_bytes_s == pytest.approx(3000e6)
    full = o.speed.decode_tok_s_per_seq[1]
    assert s.decode_tok_s == pytest.approx(1 / (1 / full + s.bytes_per_token / 3000e6))
    assert 0.2 < s.decode_tok_s < 0.3      # ≈ 12 GB per token at 3 GB/s
    assert not s.swaps


def test_a_dense_70b_on_a_24_gb_mac_reads_all_of_it_per_token():
    p, o = _option("llama-3.3-70b", "M4 Pro", 20, 24, "Q4_K_M")
    s = o.streaming
    scan = o.weights.total_bytes - o.weights.by_group["embedding"]
    assert s.routed_expert_bytes == 0 and s.bytes_per_token == scan
    B = s.ram_for_weights_bytes
    assert s.bytes_per_token_range == (scan - B, scan)
    assert s.decode_tok_s < 0.1


def test_a_model_that_fits_in_ram_does_not_stream():
    p, o = _option("llama-3.1-8b", "M4 Max", 40, 64, "Q4_K_M")
    assert o.streaming is None


def test_a_context_whose_kv_exceeds_the_ram_would_swap():
    p, o = _option("qwen3-235b-a22b", "M4 Max", 40, 64, "Q4_K_M", context=40960, users=16)
    assert o.streaming is not None and o.streaming.swaps


def test_plan_says_streamed_from_ssd_with_recipe(run_cli=None):
    from cli.render import render_plan

    p, _ = _option("qwen3-235b-a22b", "M4 Max", 40, 64, "Q4_K_M")
    text = render_plan(p)
    assert "does not fit → streamed from SSD" in text
    assert "reads only" in text and "-ngl 99" in text and "--load-mode" in text
    p, _ = _option("qwen3-235b-a22b", "M4 Max", 40, 64, "Q4_K_M", context=40960, users=16)
    assert "would swap" in render_plan(p)


def test_mlx_lm_larger_than_ram_is_said_to_swap_not_streamed():
    p = plan(PlanRequest(model="qwen3-235b-a22b", chip="M4 Max", gpu_cores=40, ram=64, runtimes=["mlx-lm"],
                         quants=["mlx-4bit-g64"]))
    o = p.options[0]
    assert o.streaming is None and any("would swap" in n for n in o.notes)
