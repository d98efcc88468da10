"""planner.throughput: hand-derived golden numbers on a tiny synthetic model/chip, the MoE expert union, the
compute knee, and the hard bandwidth bound over every chip × runtime profile and sampled models × quants."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import hybrid, profiles
from planner import throughput as tp
from planner.dirs import builtin_dir
from planner.errors import InputError
from planner.memory import memory_model
from planner.schema import Chip, ResolvedSpeedConstants, SpeedConstants

K = SpeedConstants(eta_bw=0.5, eta_c=0.5, eta_attn=0.25, eta_c_decode=0.2, eta_mv=0.1, mv_max_batch=8, mm_tile=32,
                   mm_id_min_batch=32,
                   eta_kv=1.0, noflash_kv_factor=3.0,
                   moe_bw_factor=1.0, t_layer_s=1e-4, noflash_attn_factor=2.0,
                   quant_prefill_factor={"float": 1.0, "legacy": 0.8}, matrix_unit_factor=2.0)
RES = ResolvedSpeedConstants(constants=K, source="test", scopes=["test"])
# 2 layers, 1 GB of weights read per step, 0.5 B matmul params, 1000 B of KV per token, H=4 x hd=16 attention
GEO = tp.Geometry(n_layers=2, dense_bytes=1e9, expert_bytes=0.0, n_experts=0, top_k=0, matmul_params=0.5e9,
                  head_params=0.0, kv_full=1000.0, kv_swa=0.0, window=None, state_bytes=0.0,
                  attn_full=2 * 4 * 2 * 16, attn_swa=0.0)


def chip(**kw) -> Chip:
    base = dict(id="t-10gpu", name="T", generation="M4", tier="base", gpu_cores=10, cpu_cores=[10],
                memory_bandwidth_gb_s=100.0, ram_options_gb=[16], gpu_fp32_tflops=10.0, gpu_fp16_tflops=10.0,
                release_year=2024, status="shipping", sources=["x"], verified="2026-01-01")
    return Chip(**{**base, **kw})


def rf(geo=GEO, **kw) -> tp.Roofline:
    return tp.roofline(geo, chip(**kw), RES, "llama.cpp", flash_attn=True, chunk=512)


def test_decode_step_golden():
    r = rf()
    # bytes 1e9 / (0.5 × 1e11 B/s) = 20 ms; compute 1e9 FLOP / (0.1 × 1e13) = 1 ms; fixed 2 × 0.1 ms
    assert r.step_bytes(1, 0) == 1e9
    assert r.step_time(1, 0) == pytest.approx(0.0202, rel=1e-9)
    # at 1000 cached tokens the KV adds 1 MB: + 0.02 ms
    assert r.step_time(1, 1000) == pytest.approx(0.02022, rel=1e-9)
    est = tp.estimate(r, prompt=0, gen=1, depth=0)
    assert est.decode_tok_s_per_seq == pytest.approx(1 / 0.0202, rel=1e-9)
    assert est.bound == "bandwidth"
    assert est.bytes_per_step == 1_000_000_000


def test_decode_average_over_depth_is_simpson():
    r = rf()
    # step time is linear in depth here, so the Simpson mean is exact: mean over 0..127 = t(63.5)
    assert r.decode_time(1, 0, 128) == pytest.approx(128 * r.step_time(1, 63.5), rel=1e-12)


def test_batch_aggregate_and_knee():
    r = rf()
    # compute per token 1 ms; memory 20 ms per step. B ≤ 8 (matrix-vector): the B − 1 extra columns add
    # (B − 1) ms on top of the reads (not overlapped), still bandwidth-bound.
    # B = 9 switches to the matrix-matrix kernel (η_cd 0.2 × η_c 0.5 = 0.1) padded to 32 columns: 32 ms > 20 ms
    assert r.knee(0) == 9
    e1 = tp.estimate(r, prompt=0, gen=1, batch=1)
    assert e1.decode_tok_s == pytest.approx(1 / 0.0202, rel=1e-9)
    e4 = tp.estimate(r, prompt=0, gen=1, batch=4)
    assert e4.decode_tok_s == pytest.approx(4 / (0.0202 + 0.003), rel=1e-9)
    assert e4.decode_tok_s_per_seq == pytest.approx(1 / 0.0232, rel=1e-9)
    assert e4.bound == "bandwidth"
    fixed, mem, cmp = r.step_parts(4, 0)
    assert fixed + max(mem, cmp) == pytest.approx(0.0002 + 0.020 + 0.003, rel=1e-12)
    e40 = tp.estimate(r, prompt=0, gen=1, batch=40)
    assert e40.bound == "compute"
    assert e40.decode_tok_s == pytest.approx(40 / (0.0002 + 0.064), rel=1e-9)  # 40 pads to 64
    assert r.step_time(16, 0) == r.step_time(32, 0)  # same tile


def test_moe_factor_slows_expert_reads_but_not_the_bytes():
    geo = tp.Geometry(n_layers=1, dense_bytes=1e8, expert_bytes=8e8, n_experts=8, top_k=2, matmul_params=1e6,
                      head_params=0, kv_full=0, kv_swa=0, window=None, state_bytes=0, attn_full=0, attn_swa=0)
    slow = ResolvedSpeedConstants(constants=K.model_copy(update={"moe_bw_factor": 0.5}), source="t", scopes=[])
    r1 = tp.roofline(geo, chip(), RES, "llama.cpp")
    r2 = tp.roofline(geo, chip(), slow, "llama.cpp")
    assert r1.step_bytes(1, 0) == r2.step_bytes(1, 0) == pytest.approx(1e8 + 2e8)
    # 1e8 dense + 2e8 expert bytes at half speed: (1e8 + 4e8) / 5e10 = 10 ms
    assert r2.step_time(1, 0) == pytest.approx(1e-4 + 0.010)


def test_moe_expert_union():
    geo = tp.Geometry(n_layers=1, dense_bytes=1e8, expert_bytes=8e8, n_experts=8, top_k=2, matmul_params=1e8,
                      head_params=0, kv_full=0, kv_swa=0, window=None, state_bytes=0, attn_full=0, attn_swa=0)
    assert geo.expert_union(1) == pytest.approx(0.25)
    assert geo.expert_union(4) == pytest.approx(1 - 0.75**4)  # 0.68359375
    assert geo.weights_read(4) == pytest.approx(1e8 + 8e8 * 0.68359375)
    assert geo.weights_read(10_000) == pytest.approx(9e8)


def test_prefill_golden():
    r = rf()
    # 1000 tokens in 2 ubatches of 512: matmul 2·0.5e9·1000 / (0.5 × 1e13) = 0.2 s; weight reads 2 × 20 ms < 0.2 s;
    # attention 2 × 256 × 1000²/2 / (0.25 × 1e13) = 0.1024 ms; fixed 2 chunks × 2 layers × 0.1 ms
    t, bound = r.prefill_time(1000, 0, 1)
    assert t == pytest.approx(0.2 + 1.024e-4 + 4e-4, rel=1e-9)
    assert bound == "compute"
    est = tp.estimate(r, prompt=1000, gen=0)
    assert est.prefill_tok_s == pytest.approx(1000 / t)
    # llama.cpp samples the first token from the prompt's last logits: TTFT is the prefill (first_token_time)
    assert est.ttft_s == pytest.approx(t, rel=1e-12)
    # mlx-lm runs the last prompt token as the first decode step: prefill of 999 tokens + one step at depth 999
    m = tp.roofline(GEO, chip(), RES, "mlx-lm", flash_attn=True, chunk=512)
    assert tp.estimate(m, prompt=1000, gen=0).ttft_s == pytest.approx(
        m.prefill_time(999, 0, 1)[0] + m.step_time(1, 999), rel=1e-12)


def test_prefill_steps_rule():
    # llama.cpp: 12 prompts x 3000 tokens = 36000 tokens in 512-token ubatches -> ceil(70.3) = 71 graphs.
    # mlx-lm BatchGenerator: 12 prompts in ceil(12 / 8) = 2 groups, each 3000 tokens in ceil(3000 / 2048) = 2 steps.
    assert tp.prefill_steps("llama.cpp", 3000, 12, 512) == 71
    assert tp.prefill_steps("mlx-lm", 3000, 12, 2048, 8) == 4
    assert tp.prefill_steps("mlx-lm", 128, 8, 2048, 8) == 1
    assert tp.prefill_steps("mlx-lm", 3000, 1, 2048, 8) == 2


def test_mlx_batched_prefill_pays_the_step_cost_once_per_group():
    # 8 prompts x 128 tokens, compute bound: matmul 2·0.5e9·1024 / (0.5 × 1e13) = 0.2048 s either way; weight
    # reads 20 ms per step. One (8, 128) step: fixed 1 × 2 layers × 0.1 ms. One step per prompt (generate_step
    # each): 8 × 2 × 0.1 ms. The difference is 7 steps' fixed cost, 1.4 ms; attention is the same.
    k = dict(flash_attn=True, chunk=2048)
    grouped = tp.roofline(GEO, chip(), RES, "mlx-lm", prefill_batch=8, **k).prefill_time(128, 0, 8)[0]
    single = tp.roofline(GEO, chip(), RES, "mlx-lm", prefill_batch=1, **k).prefill_time(128, 0, 8)[0]
    assert single - grouped == pytest.approx(7 * 2 * 1e-4, rel=1e-9)
    assert profiles.load_runtime("mlx-lm").prefill_batch == 8
    assert profiles.load_runtime("llama.cpp").prefill_batch == 1


def test_mlx_on_a_cpu_runs_unfused_attention_over_the_whole_rectangle_at_the_matmul_efficiency():
    """mlx fast.cpp: ScaledDotProductAttention::use_fallback is true on Device::cpu, so Q·Kᵀ, mask, softmax and ·V
    are plain matmuls over every (query, key) pair up to the chunk's end, at η_c. GEO: A = Σ H·(d_qk + d_v) = 256.
    1000 tokens in one 2048-token chunk on 0 cached: 2 · 256 · 1000 · 1000 = 5.12e8 FLOP (twice the causal
    2 · 256 · 1000²/2), at η_c · F = 0.5 × 1e13 -> 0.1024 ms, where the fused kernel takes 2.56e8 / (0.25 × 1e13)
    = 0.1024 ms too: η_attn = η_c / 2 here, so only the chunking below tells them apart. In 512-token chunks on
    100 cached: 512 queries × 612 keys + 488 × 1100 -> 2 · 256 · (313,344 + 536,800) = 435,273,728 FLOP."""
    cpu = chip(id="custom-0123abcd", backend="cpu")
    r = tp.roofline(GEO, cpu, RES, "mlx-lm", chunk=2048)
    assert r.attn_unfused and r.unfused_attn_flops(1000, 0, 1) == 2 * 256 * 1000 * 1000
    assert r.prefill_attn_time(1000, 0, 1) == pytest.approx(5.12e8 / 5e12, rel=1e-12)
    assert r.prefill_attn_time(1000, 0, 3) == pytest.approx(3 * 5.12e8 / 5e12, rel=1e-12)
    r512 = tp.roofline(GEO, cpu, RES, "mlx-lm", chunk=512)
    assert r512.unfused_attn_flops(1000, 100, 1) == 435_273_728
    # an older custom chip file (no backend field) is still a CPU by its id; a Mac, and llama.cpp's own CPU
    # flash-attention kernel, keep the causal count at η_attn
    assert tp.roofline(GEO, chip(id="custom-0123abcd"), RES, "mlx-lm").attn_unfused
    assert not tp.roofline(GEO, chip(), RES, "mlx-lm").attn_unfused
    assert not tp.roofline(GEO, cpu, RES, "llama.cpp").attn_unfused
    metal = tp.roofline(GEO, chip(), RES, "mlx-lm", chunk=512)
    assert metal.prefill_attn_time(1000, 0, 1) == pytest.approx(2 * 256 * 1000 ** 2 / 2 / 2.5e12, rel=1e-12)


@given(st.integers(0, 5000), st.integers(0, 6000), st.integers(1, 3000), st.one_of(st.none(), st.integers(1, 9000)))
@settings(max_examples=200, deadline=None)
def test_chunk_keys_closed_form_is_the_chunk_by_chunk_sum(prompt, depth, chunk, cap):
    """The closed form behind unfused_attn_flops equals walking the chunks: each chunk's queries × min(keys up to
    its end, cap)."""
    total, done = 0, 0
    while done < prompt:
        n = min(chunk, prompt - done)
        keys = depth + done + n
        total += n * (keys if cap is None else min(keys, cap))
        done += n
    assert tp._chunk_keys(prompt, depth, chunk, cap) == pytest.approx(total, rel=1e-12, abs=1e-9)


def test_prefill_attention_grows_with_depth_and_window_caps_it():
    r = rf()
    assert r.prefill_time(512, 8192)[0] > r.prefill_time(512, 0)[0]
    assert tp._keys_sum(100, 0, None) == 100 * 100 / 2
    assert tp._keys_sum(100, 50, 60) == pytest.approx(10 * 50 + 10 * 10 / 2 + 90 * 60)
    assert tp._keys_sum(100, 1000, 60) == 100 * 60


def test_noflash_and_quant_factor_and_matrix_units():
    r_fa = rf()
    r_nofa = tp.roofline(GEO, chip(), RES, "llama.cpp", flash_attn=False, chunk=512)
    geo_q = tp.Geometry(**{**GEO.__dict__, "quant_class": "legacy"})
    a = r_fa.prefill_time(4096, 0)[0]
    assert r_nofa.prefill_time(4096, 0)[0] > a
    assert rf(geo=geo_q).prefill_time(4096, 0)[0] > a
    mu = rf(gpu_matrix_units=True)
    assert mu.flops == pytest.approx(2 * 1e13)


def test_m5_peak_is_derived_and_missing_bandwidth_refused():
    refs = [chip(id="m4-10gpu", generation="M4", gpu_cores=10, gpu_fp16_tflops=3.76)]
    m5 = chip(id="m5-10gpu", generation="M5", gpu_fp16_tflops=None, gpu_fp32_tflops=None, gpu_matrix_units=True)
    peak, basis = tp.peak_flops(m5, refs)
    assert peak == pytest.approx(3.76e12)
    assert basis.startswith("derived")
    with pytest.raises(InputError, match="bandwidth"):
        tp.bandwidth(chip(memory_bandwidth_gb_s=None, status="rumoured"))


# ----------------------------------------------------------------------------- the hard physical bound
CHIPS = [c for c in profiles.all_chips() if c.memory_bandwidth_gb_s]
RUNTIMES = ["llama.cpp", "mlx-lm", "ollama"]
DEFAULT_Q = {"gguf": "Q4_K_M", "mlx": "mlx-4bit-g64"}


def _check_bound(model_id, rt_id, quant_id, c, batch, depth, gen):
    rt = profiles.load_runtime(rt_id)
    q = profiles.load_quant(quant_id, rt.weight_format)
    mm = memory_model(profiles.load_model(model_id), rt, q, profiles.ggml_types())
    res = profiles.load_speed_constants(c, rt_id)
    assert res.constants.eta_bw <= 1
    est = tp.predict(mm, c, res, q.kind, q.mode, prompt=0, gen=gen, depth=depth, batch=batch,
                     reference_chips=profiles.all_chips())
    bw = c.memory_bandwidth_gb_s * 1e9
    # no sequence decodes faster than bandwidth / bytes read per step (weights + its KV) at the start depth
    assert est.decode_tok_s_per_seq * est.bytes_per_step <= bw * (1 + 1e-9)
    assert est.decode_tok_s_per_seq <= est.decode_ceiling_tok_s * (1 + 1e-9)
    assert est.decode_tok_s > 0 and math.isfinite(est.prefill_tok_s)


@pytest.mark.parametrize("c", CHIPS, ids=lambda c: c.id)
@pytest.mark.parametrize("rt_id", RUNTIMES)
def test_bound_every_chip_and_calibration_profile(c, rt_id):
    fmt = profiles.load_runtime(rt_id).weight_format
    _check_bound("llama-3.1-8b", rt_id, DEFAULT_Q[fmt], c, 1, 0, 1)


MODELS = profiles.model_ids()
GGUF = [q.id for q in profiles.all_quants() if q.kind == "gguf" and q.id not in ("F32",)]
MLX = [q.id for q in profiles.all_quants() if q.kind == "mlx"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(MODELS), rt_id=st.sampled_from(RUNTIMES), gi=st.integers(0, 10_000),
       c=st.sampled_from(CHIPS), batch=st.integers(1, 64), depth=st.integers(0, 32768), gen=st.integers(1, 512))
def test_bound_models_quants_property(model, rt_id, gi, c, batch, depth, gen):
    fmt = profiles.load_runtime(rt_id).weight_format
    quants = GGUF if fmt == "gguf" else MLX
    q = quants[gi % len(quants)]
    if q == "MXFP4_MOE" and not profiles.load_model(model).config.is_moe:
        q = "Q4_K_M"
    _check_bound(model, rt_id, q, c, batch, depth, gen)


# ----------------------------------------------------------------------------- calibration lookup
def test_lookup_chip_scopes_and_generation_fallback():
    m3 = profiles.resolve_chip("m3-max-40gpu")
    res = profiles.load_speed_constants(m3, "llama.cpp")
    # generic to specific: default -> tier -> generation -> the chip's own (its family's eta_bw, when shipped:
    # calibration.fit.FAMILY_ETA_BW)
    own_chip = (builtin_dir() / "calibration" / "m3-max-40gpu__llama.cpp.yaml").exists()
    assert res.scopes == ["default__llama.cpp", "tier-max__llama.cpp", "gen-M3__llama.cpp",
                          *(["m3-max-40gpu__llama.cpp"] if own_chip else [])]
    # a generation without its own file takes the newest earlier one's, and says so
    files = {"gen-M3__llama.cpp": Path("a"), "gen-M4__llama.cpp": Path("b"), "gen-M5__mlx-lm": Path("c")}
    notes: list[str] = []
    assert profiles._generation_scope(files, "llama.cpp", "M5", notes) == "gen-M4"
    assert notes == ["llama.cpp per-generation constants from generation M4 (no M5 data)"]
    assert profiles._generation_scope(files, "mlx-lm", "M5", notes) == "gen-M5" and len(notes) == 1
    m5 = profiles.resolve_chip("m5-max-40gpu")
    res5 = profiles.load_speed_constants(m5, "llama.cpp")
    own = (builtin_dir() / "calibration" / "gen-M5__llama.cpp.yaml").exists()
    assert ("gen-M5__llama.cpp" if own else "gen-M4__llama.cpp") in res5.scopes


def test_ollama_inherits_llama_cpp_and_overrides_eta_bw():
    c = profiles.resolve_chip("m3-pro-18gpu")
    lc = profiles.load_speed_constants(c, "llama.cpp")
    ol = profiles.load_speed_constants(c, "ollama")
    assert ol.scopes[: len(lc.scopes)] == lc.scopes and any(s.endswith("__ollama") for s in ol.scopes)
    assert ol.constants.eta_c == lc.constants.eta_c


def test_user_calibration_wins(tmp_path, monkeypatch):
    import yaml
    (tmp_path / "calibration").mkdir()
    prof = {"id": "m3-max-40gpu__llama.cpp", "scope": "m3-max-40gpu", "runtime": "llama.cpp",
            "constants": {"eta_bw": 0.5}, "provenance": {"method": "user run", "fitted_on": "2026-12-01",
                                                          "residuals": {"mape": 3.0}}}
    (tmp_path / "calibration" / "m3-max-40gpu__llama.cpp.yaml").write_text(yaml.safe_dump(prof))
    monkeypatch.setenv("MAC_LLM_PLANNER_USER_PROFILES", str(tmp_path))
    profiles.clear_cache()
    try:
        res = profiles.load_speed_constants(profiles.resolve_chip("m3-max-40gpu"), "llama.cpp")
        shipped = profiles.load_speed_constants(profiles.resolve_chip("m3-max-40gpu"), "llama.cpp", include_user=False)
    finally:
        monkeypatch.undo()
        profiles.clear_cache()
    assert res.constants.eta_bw == 0.5 and shipped.constants.eta_bw > 0.5
    assert "calibrated on this Mac on 2026-12-01" in res.source


def test_roofline_carries_its_calibration_source():
    r = rf()
    assert r.calibration == "test"
    assert tp.estimate(r, prompt=16, gen=4).calibration == "test"
    assert tp.estimate(r, prompt=16, gen=4, calibration="other").calibration == "other"


def test_speed_constants_cached_and_cleared(tmp_path, monkeypatch):
    """YAML read once per process per (chip, runtime); clear_cache() forgets it (a new user file is then seen)."""
    import yaml
    monkeypatch.setenv("MAC_LLM_PLANNER_USER_PROFILES", str(tmp_path))
    profiles.clear_cache()
    reads = []
    real = profiles.load_file
    monkeypatch.setattr(profiles, "load_file", lambda p, cls: reads.append(p) or real(p, cls))
    try:
        c = profiles.resolve_chip("m3-max-40gpu")
        a = profiles.load_speed_constants(c, "llama.cpp")
        n = len(reads)
        assert n >= 1 and profiles.load_speed_constants(c, "llama.cpp") is a and len(reads) == n
        (tmp_path / "calibration").mkdir()
        prof = {"id": "m3-max-40gpu__llama.cpp", "scope": "m3-max-40gpu", "runtime": "llama.cpp",
                "constants": {"eta_bw": 0.5}, "provenance": {"method": "user run"}}
        (tmp_path / "calibration" / "m3-max-40gpu__llama.cpp.yaml").write_text(yaml.safe_dump(prof))
        assert profiles.load_speed_constants(c, "llama.cpp").constants.eta_bw == a.constants.eta_bw  # cached
        profiles.clear_cache()
        assert profiles.load_speed_constants(c, "llama.cpp").constants.eta_bw == 0.5
    finally:
        monkeypatch.undo()
        profiles.clear_cache()


# ----------------------------------------------------------------------------- batched decode, big dense models
MAX_ULTRA = [c for c in CHIPS if c.tier in ("max", "ultra")]


@pytest.mark.parametrize("c", MAX_ULTRA, ids=lambda c: c.id)
def test_batched_decode_70b_drops_only_when_compute_bound(c):
    """Shipped (current-build) constants, 70B dense Q4_K_M: 16 users pad to the same 32-column mm tile as 32
    users, so 32 users never give less aggregate decode than 16; and aggregate decode only falls below the 8-user
    figure when the step is compute-bound (B16 step ≈ B32 step in the M2 Ultra batched-bench rows)."""
    rt = profiles.load_runtime("llama.cpp")
    q = profiles.load_quant("Q4_K_M", rt.weight_format)
    mm = memory_model(profiles.load_model("llama-3.3-70b"), rt, q, profiles.ggml_types())
    res = profiles.load_speed_constants(c, "llama.cpp")
    est = {b: tp.predict(mm, c, res, q.kind, q.mode, prompt=1024, gen=256, batch=b,
                         reference_chips=profiles.all_chips()) for b in (8, 16, 32)}
    assert est[32].decode_tok_s >= est[16].decode_tok_s
    for b in (16, 32):
        if est[b].decode_tok_s < est[8].decode_tok_s:
            assert est[b].bound == "compute"


def test_likely_range_scales_the_rate_by_regime_quantiles():
    """The range is rate × (q10, q90) of measured / predicted in the row's regime, the phase's as fallback, and
    the decode high end never passes BW / bytes per step."""
    k = K.model_copy(update={"likely_range": {"decode": (0.8, 1.1), "decode_deep": (0.6, 1.05),
                                              "prefill": (0.9, 1.2)}})
    r = tp.roofline(GEO, chip(), ResolvedSpeedConstants(constants=k, source="t", scopes=["t"]), "llama.cpp")
    e = tp.estimate(r, prompt=512, gen=1)
    # decode at 512 cached tokens: step 20.2 ms + KV 512 × 1000 B / 5e10 B/s = 0.01024 ms -> 1 / 0.02021024 s
    rate = 1 / 0.02021024
    assert e.decode_tok_s_per_seq == pytest.approx(rate, rel=1e-6)
    assert e.decode_tok_s_range == pytest.approx((0.8 * rate, 1.1 * rate), rel=1e-6)
    assert e.prefill_tok_s_range == pytest.approx((0.9 * e.prefill_tok_s, 1.2 * e.prefill_tok_s))
    deep = tp.estimate(r, prompt=0, gen=1, depth=8192)
    assert deep.decode_tok_s_range[0] == pytest.approx(0.6 * deep.decode_tok_s_per_seq)
    # batched decode has no own entry: the phase's "decode" range
    assert tp.regime("decode", 0, 0, 32) == "decode_batched"
    b = tp.estimate(r, prompt=0, gen=1, batch=32)
    assert b.decode_tok_s_range[0] == pytest.approx(0.8 * b.decode_tok_s_per_seq)
    # a wide high end is capped at the bandwidth ceiling: 1e11 B/s / 1e9 B = 100 tok/s (step rate 1/0.0202 = 49.5)
    wide = k.model_copy(update={"likely_range": {"decode": (0.5, 3.0)}})
    w = tp.estimate(tp.roofline(GEO, chip(), ResolvedSpeedConstants(constants=wide, source="t", scopes=["t"]),
                                "llama.cpp"), prompt=0, gen=1)
    assert w.decode_tok_s_range[1] == pytest.approx(100.0)


# --------------------------------------------------------------------------- mechanisms of the speed model
def test_expected_tiles_poisson():
    # λ = 4 tokens per expert, tile 32: one tile whenever an expert gets any token, P(n > 0) = 1 − e^−4;
    # P(n > 32) for Poisson(4) is ~1e-17
    assert tp.expected_tiles(4.0, 32) == pytest.approx(1 - math.exp(-4), rel=1e-9)
    # large λ: λ/t + (t − 1)/(2t) = 1000/32 + 31/64
    assert tp.expected_tiles(1000.0, 32) == pytest.approx(31.25 + 31 / 64, rel=1e-12)
    # exact sum and the large-λ form agree where they meet (λ = 400 vs 401)
    assert tp.expected_tiles(400.0, 32) == pytest.approx(tp.expected_tiles(401.0, 32) - 1 / 32, rel=2e-3)


GEO_MOE = tp.Geometry(n_layers=2, dense_bytes=1e9, expert_bytes=0.0, n_experts=4, top_k=1, matmul_params=0.5e9,
                      head_params=0.0, kv_full=1000.0, kv_swa=0.0, window=None, state_bytes=0.0,
                      attn_full=2 * 4 * 2 * 16, attn_swa=0.0, expert_matmul_params=0.4e9)


def test_moe_prefill_pads_each_experts_rows_to_the_tile():
    """2048 tokens in one chunk, 4 experts, top-1: λ = 512 rows per expert, padded rows
    4 × 32 × (512/32 + 31/64) = 2110 instead of 2048."""
    assert GEO_MOE.padded_expert_rows(2048, 32) == pytest.approx(2110.0, rel=1e-12)
    r = tp.roofline(GEO_MOE, chip(), RES, "llama.cpp", flash_attn=True, chunk=2048)
    t, bound = r.prefill_time(2048)
    # matmul: (2 × 0.1e9 × 2048 + 2 × 0.4e9 × 2110) / (0.5 × 1e13) = 0.41952 s
    # attention: 2 × 256 × 2048²/2 / (0.25 × 1e13) = 0.4294967 ms; fixed: 1 chunk × 2 layers × 0.1 ms
    assert t == pytest.approx(0.41952 + 2 * 256 * 2048 ** 2 / 2 / 2.5e12 + 2e-4, rel=1e-9)
    assert bound == "compute"


def test_batched_decode_attention_runs_after_the_matrix_kernel():
    """B = 16 runs kernel_mul_mm on the weights (32-column tile: 32 × 1e9 FLOP / (0.2 × 0.5 × 1e13) = 32 ms, above
    the 20 ms of reads), then the attention kernel: 16 × 1000 tokens × 1000 B / (0.5 × 1e11) = 0.32 ms (its FLOPs,
    2 × 16 × 256 × 1000 / (0.25 × 1e13) = 3.3 us, are below the read). The attention adds to the step; it is not
    hidden under the matmul."""
    r = rf()
    assert r.kv_time(16, 1000) == pytest.approx(3.2e-4, rel=1e-12)
    assert r.step_time(16, 1000) == pytest.approx(2e-4 + 3.2e-4 + 0.032, rel=1e-12)
    assert r.step_time(16, 1000) - r.step_time(16, 0) == pytest.approx(3.2e-4, rel=1e-9)


def test_moe_batched_decode_pads_each_experts_rows_at_prefill_efficiency():
    """32 sequences, 4 experts, top-1 (kernel_mul_mm_id from 32 rows): λ = 8 rows per expert, each expert's rows
    padded to one 32-row tile: 4 × 32 × E[ceil(n/32)] ≈ 127.96 rows through 0.4e9 expert params at the prefill
    η_c · q = 0.5 (5e12 FLOP/s): 20.47 ms; the 0.1e9 dense params run one 32-column tile at η_cd · η_c = 0.1:
    32 × 0.2e9 / 1e12 = 6.4 ms."""
    r = tp.roofline(GEO_MOE, chip(), RES, "llama.cpp", flash_attn=True, chunk=512)
    rows = 4 * 32 * tp.expected_tiles(8.0, 32)
    assert rows == pytest.approx(127.957, abs=1e-3)
    t_exp = 2 * 0.4e9 * rows / 5e12
    assert r.expert_time(32) == pytest.approx(t_exp, rel=1e-12)
    fixed, mem, cmp = r.step_parts(32, 0)
    assert cmp == pytest.approx(0.0064 + t_exp, rel=1e-12)
    assert r.step_time(32, 0) == pytest.approx(2e-4 + 0.0064 + t_exp, rel=1e-12)   # compute-bound: 26.9 > 20 ms


def test_decode_attention_is_max_of_kv_stream_and_flops():
    """An absorbed-MLA-like cache: 1e6 attention MACs per key but only 1000 B per key. At 1000 cached tokens
    the FLOPs (2 × 1e6 × 1000 / (0.25 × 1e13) = 0.8 ms) beat the read (1 MB / (0.5 × 1 × 1e11) = 0.02 ms)."""
    geo = tp.Geometry(n_layers=2, dense_bytes=1e9, expert_bytes=0.0, n_experts=0, top_k=0, matmul_params=0.5e9,
                      head_params=0.0, kv_full=1000.0, kv_swa=0.0, window=None, state_bytes=0.0,
                      attn_full=1e6, attn_swa=0.0)
    r = tp.roofline(geo, chip(), RES, "llama.cpp", flash_attn=True)
    assert r.kv_time(1, 1000) == pytest.approx(0.8e-3, rel=1e-9)
    # step = fixed 0.2 ms + weights 20 ms + attention 0.8 ms (B = 1: no extra column)
    assert r.step_time(1, 1000) == pytest.approx(0.021, rel=1e-9)
    # without flash attention (llama.cpp -fa off) the attention costs noflash_kv_factor = 3 × more
    off = tp.roofline(geo, chip(), RES, "llama.cpp", flash_attn=False)
    assert off.kv_time(1, 1000) == pytest.approx(2.4e-3, rel=1e-9)
    # mlx-lm has no no-flash path
    assert tp.roofline(geo, chip(), RES, "mlx-lm", flash_attn=False).kv_time(1, 1000) == pytest.approx(0.8e-3)


def test_decode_attention_flops_run_at_their_own_efficiency():
    """eta_attn_decode (a calibration's, unset = 1) divides only the decode attention FLOPs: at 0.2 the 0.8 ms of the
    test above become 4 ms, the KV read (0.02 ms) does not move, prefill attention keeps η_attn, and at 1000 keys
    of a cheap cache the read still wins: max(0.02 ms, 2 × 1000 × 1000 / (0.2 × 0.25 × 1e13) = 0.004 ms)."""
    geo = tp.Geometry(n_layers=2, dense_bytes=1e9, expert_bytes=0.0, n_experts=0, top_k=0, matmul_params=0.5e9,
                      head_params=0.0, kv_full=1000.0, kv_swa=0.0, window=None, state_bytes=0.0,
                      attn_full=1e6, attn_swa=0.0)
    slow = RES.model_copy(update={"constants": RES.constants.model_copy(update={"eta_attn_decode": 0.2})})
    r, base = tp.roofline(geo, chip(), slow, "llama.cpp"), tp.roofline(geo, chip(), RES, "llama.cpp")
    assert RES.constants.eta_attn_decode is None
    assert r.kv_time(1, 1000) == pytest.approx(4e-3, rel=1e-9)
    assert r.prefill_attn_time(512, 0) == base.prefill_attn_time(512, 0)
    cheap = dataclasses.replace(geo, attn_full=1000.0)
    assert tp.roofline(cheap, chip(), slow, "llama.cpp").kv_time(1, 1000) == pytest.approx(2e-5, rel=1e-9)


def test_mlx_prefills_mla_with_decompressed_heads():
    """DeepSeek-V3 (61 MLA layers, 128 heads): mlx-lm decode attends in the latent, H·(576 + 512) per key per
    layer = 8,495,104 over all layers; its prefill decompresses to H·(128 + 64 + 128) = 2,498,560."""
    rt = profiles.load_runtime("mlx-lm")
    q = profiles.load_quant("4bit", "mlx")
    mm = memory_model(profiles.load_model("deepseek-v3"), rt, q, profiles.ggml_types())
    g = tp.geometry(mm, q.kind, q.mode)
    assert g.attn_full + g.attn_swa == 128 * (576 + 512) * 61
    assert g.prefill_attn_full == 128 * (128 + 64 + 128) * 61
    lc = profiles.load_runtime("llama.cpp")
    q4 = profiles.load_quant("Q4_K_M", "gguf")
    assert tp.geometry(memory_model(profiles.load_model("deepseek-v3"), lc, q4, profiles.ggml_types()),
                       q4.kind).prefill_attn_full is None


def test_moe_batches_below_the_mm_id_switch_reread_experts_per_token():
    """llama.cpp runs routed experts through kernel_mul_mv_id below 32 tokens (one grid per (token, expert)
    pair, each re-reading its expert) and kernel_mul_mm_id from 32 on (each touched expert read once).
    8 experts of 1e8 bytes, top-2, 1e8 dense bytes:
      B = 1:  2 experts                       -> 1e8 + 2e8        = 3e8   (= the union, 1 − 0.75)
      B = 4:  4 · 2 = 8 expert reads          -> 1e8 + 8e8        = 9e8   (the union would give 6.47e8)
      B = 12: 12 · 2 = 24 expert reads        -> 1e8 + 24e8       = 2.5e9
      B = 32: union 1 − 0.75^32 of 8e8        -> 1e8 + 8e8 · (1 − 0.75^32)"""
    geo = tp.Geometry(n_layers=1, dense_bytes=1e8, expert_bytes=8e8, n_experts=8, top_k=2, matmul_params=1e6,
                      head_params=0, kv_full=0, kv_swa=0, window=None, state_bytes=0, attn_full=0, attn_swa=0)
    r = tp.roofline(geo, chip(), RES, "llama.cpp")
    assert r.step_bytes(1, 0) == pytest.approx(3e8)
    assert r.step_bytes(4, 0) == pytest.approx(9e8)
    assert r.step_bytes(12, 0) == pytest.approx(2.5e9)
    assert r.step_bytes(32, 0) == pytest.approx(1e8 + 8e8 * (1 - 0.75**32))
    # the read time follows: B = 12 streams 2.5e9 B at 0.5 × 1e11 B/s = 50 ms (matrix-matrix compute is tiny)
    assert r.step_parts(12, 0)[1] == pytest.approx(0.05)


MLX_K = K.model_copy(update={"mm_id_min_batch": 1, "expert_tile": 16, "expert_tiling": "segments",
                             "mm_id_min_rows_per_expert": 4.0})


def test_mlx_sorted_gather_runs_one_full_block_per_expert_segment():
    """mlx gather_qmm_rhs runs 16-row blocks over the rows sorted by expert, one full block per expert segment:
    rows = R + (tile − 1)(E_t − 1/2) with E_t the touched experts. 512 tokens, 512 experts, top-10 (Qwen3-Next):
    R = 5120, E_t = 512 (1 − (1 − 10/512)^512) = 512 (1 − e^{-10.05...}) ≈ 511.98, rows = 5120 + 15 × 511.48 ≈ 12,792;
    llama.cpp's per-expert 32-row padding of the same pass: 512 × 32 × E[ceil(n/32)], λ = 10 ≈ 16,384 (n ≤ 32 almost
    always). GLM-4.7's 160 experts, top-8, at 512 tokens: R = 4096, E_t ≈ 160, rows = 4096 + 15 × 159.5 = 6,488.5
    against llama.cpp's 160 × 32 × E[ceil(n/32)], λ = 25.6 ≈ 5,648: MLX wastes less with many experts and few rows
    each, more with few experts."""
    next80 = tp.Geometry(n_layers=1, dense_bytes=0, expert_bytes=1e9, n_experts=512, top_k=10, matmul_params=1e9,
                         head_params=0, kv_full=0, kv_swa=0, window=None, state_bytes=0, attn_full=0, attn_swa=0)
    touched = 512 * (1 - (1 - 10 / 512) ** 512)
    assert next80.segment_expert_rows(512, 16) == pytest.approx(5120 + 15 * (touched - 0.5), rel=1e-12)
    assert 12_780 < next80.segment_expert_rows(512, 16) < 12_800 < next80.padded_expert_rows(512, 32)
    glm = dataclasses.replace(next80, n_experts=160, top_k=8)
    assert glm.segment_expert_rows(512, 16) == pytest.approx(4096 + 15 * (160 * (1 - (1 - 8 / 160) ** 512) - 0.5))
    assert glm.segment_expert_rows(512, 16) > glm.padded_expert_rows(512, 32)
    # the roofline takes the MLX rule from its constants; llama.cpp's constants keep the per-expert padding
    res = ResolvedSpeedConstants(constants=MLX_K, source="test", scopes=["test"])
    mlx, lcpp = tp.roofline(glm, chip(), res, "mlx-lm"), tp.roofline(glm, chip(), RES, "llama.cpp")
    assert mlx.expert_rows(512) == glm.segment_expert_rows(512, 16)
    assert lcpp.expert_rows(512) == glm.padded_expert_rows(512, 32)


def test_mlx_routed_experts_run_per_row_below_four_rows_per_expert():
    """MLX GatherQMM takes the sorted matrix kernel only from B / E >= 4 routed rows per expert: with 8 experts,
    top-2 that is 16 tokens (llama.cpp's kernel_mul_mm_id: 32 tokens whatever the experts). Below, every
    (token, expert) pair reads its expert: B = 12 reads 24 experts of 1e8 bytes (2.4e9 + 1e8 dense), B = 16 the
    union 8e8 (1 − 0.75^16); and the rows below the switch are the R = 2B unpadded vector products."""
    geo = tp.Geometry(n_layers=1, dense_bytes=1e8, expert_bytes=8e8, n_experts=8, top_k=2, matmul_params=1e6,
                      head_params=0, kv_full=0, kv_swa=0, window=None, state_bytes=0, attn_full=0, attn_swa=0)
    res = ResolvedSpeedConstants(constants=MLX_K, source="test", scopes=["test"])
    mlx, lcpp = tp.roofline(geo, chip(), res, "mlx-lm"), tp.roofline(geo, chip(), RES, "llama.cpp")
    assert (mlx.expert_mm_min(), lcpp.expert_mm_min()) == (16, 32)
    assert mlx.step_bytes(12, 0) == pytest.approx(2.5e9)
    assert mlx.step_bytes(16, 0) == pytest.approx(1e8 + 8e8 * (1 - 0.75**16))
    assert lcpp.step_bytes(16, 0) == pytest.approx(1e8 + 16 * 2e8)
    assert mlx.expert_rows(12) == 24
    # 256 experts, top-8 (Qwen3.5-35B-A3B): the switch is at 4 × 256 / 8 = 128 tokens
    big = dataclasses.replace(geo, n_experts=256, top_k=8)
    assert tp.roofline(big, chip(), res, "mlx-lm").expert_mm_min() == 128


def test_mlx_on_neural_accelerators_widens_the_expert_tile_from_64_rows_per_expert():
    """gather_qmm_rhs_nax (mlx #4023, #4352): 16-row segment tiles below 64 rows per expert, 32 from it. 256 experts,
    top-8: 2,047 tokens give 16,376 rows, 63.97 per expert: rows = 16,376 + 15 (E_t − 1/2); 2,048 tokens give exactly
    64 per expert: rows = 16,384 + 31 (E_t − 1/2), E_t = 256 (1 − (1 − 8/256)^2048) ≈ 256, so 24,304.5: one pass of
    2,048 tokens computes 1.48x its rows, against 1.23x one token fewer."""
    geo = tp.Geometry(n_layers=1, dense_bytes=0, expert_bytes=1e9, n_experts=256, top_k=8, matmul_params=1e9,
                      head_params=0, kv_full=0, kv_swa=0, window=None, state_bytes=0, attn_full=0, attn_swa=0)
    nax = MLX_K.model_copy(update={"expert_tile_wide": 32, "expert_tile_wide_from": 64.0})
    r = tp.roofline(geo, chip(), ResolvedSpeedConstants(constants=nax, source="t", scopes=["t"]), "mlx-lm")
    touched = lambda n: 256 * (1 - (1 - 8 / 256) ** n)  # noqa: E731
    assert (r.expert_tile(2047), r.expert_tile(2048), r.expert_tile(8192)) == (16, 32, 32)
    assert r.expert_rows(2047) == pytest.approx(16_376 + 15 * (touched(2047) - 0.5), rel=1e-12)
    assert r.expert_rows(2048) == pytest.approx(16_384 + 31 * (touched(2048) - 0.5), rel=1e-12)
    assert r.expert_rows(2048) == pytest.approx(24_304.5, abs=0.01)
    # without the wide tile (every other Mac), 16 rows at every size
    plain = tp.roofline(geo, chip(), ResolvedSpeedConstants(constants=MLX_K, source="t", scopes=["t"]), "mlx-lm")
    assert plain.expert_tile(8192) == 16


def test_a_shared_prefix_is_read_once_per_step():
    """4 sequences at 3000 cached tokens, the first 2000 shared (llama-batched-bench -pps, unified cache):
    cells read = 2000 + 4 × 1000 = 6000, not 4 × 3000; at 1000 B per cell and 0.5 × 1e11 B/s: 6e6 / 5e10 = 0.12 ms."""
    shared = tp.Roofline(geo=GEO, bw=1e11, flops=1e13, k=K, shared_prefix=2000)
    assert GEO.batch_kv_read(4, 3000, 2000) == pytest.approx(6e6)
    assert shared.kv_time(4, 3000) == pytest.approx(1.2e-4)
    assert rf().kv_time(4, 3000) == pytest.approx(2.4e-4)  # 12e6 B without sharing
    assert shared.kv_time(1, 3000) == rf().kv_time(1, 3000)  # one sequence shares with nobody


def test_a_unified_cache_attends_over_every_sequences_cells():
    """llama.cpp before per-sequence streams: one cache, every query scans all used cells (masked).
    Decode, 4 sequences at 3000 tokens: 4 · 3000 = 12000 keys per query (2000 shared: 2000 + 4 · 1000 = 6000);
    one sequence: its own 3000. Attention FLOPs of the step: 2 · B · A · keys = 2 · 4 · 256 · 12000 = 24.576e6.
    Prefill of 4 prompts of 128 tokens on an empty cache: one causal prompt of 512,
    A · 512² / 2 = 256 · 131072 = 33.554432e6 MACs (separate caches: 4 · 256 · 128² / 2 = 8.388608e6)."""
    uni = tp.Roofline(geo=GEO, bw=1e11, flops=1e13, k=K, unified_kv=True)
    assert uni.keys_per_query(4, 3000) == 12000
    assert uni.keys_per_query(1, 3000) == 3000
    assert tp.Roofline(geo=GEO, bw=1e11, flops=1e13, k=K, unified_kv=True, shared_prefix=2000).keys_per_query(
        4, 3000) == 6000
    assert rf().keys_per_query(4, 3000) == 3000
    # decode attention: max(read 12e6 B / 5e10 = 0.24 ms, FLOPs 24.576e6 / (0.25 · 1e13) = 9.8 µs) -> the read
    assert uni.kv_time(4, 3000) == pytest.approx(2.4e-4)
    assert uni.prefill_attn_flops(128, 0, 4) == pytest.approx(2 * 33.554432e6)
    assert rf().prefill_attn_flops(128, 0, 4) == pytest.approx(2 * 8.388608e6)


def test_range_regimes_switch_exactly_at_their_documented_boundaries():
    """Rule (issue 34): every documented boundary is tested on both sides. Decode is 'deep' from DEEP_CONTEXT
    tokens of context (prompt + depth), prefill from 2 × DEEP_CONTEXT; decode is 'batched' above mv_max_batch."""
    from planner.throughput import DEEP_CONTEXT, regime

    assert regime("decode", DEEP_CONTEXT - 1, 0, 1) == "decode"
    assert regime("decode", DEEP_CONTEXT, 0, 1) == "decode_deep"
    assert regime("decode", 1, DEEP_CONTEXT - 2, 1) == "decode" and regime("decode", 1, DEEP_CONTEXT - 1, 1) == \
        "decode_deep"
    assert regime("prefill", 2 * DEEP_CONTEXT - 1, 0, 1) == "prefill"
    assert regime("prefill", 2 * DEEP_CONTEXT, 0, 1) == "prefill_deep"
    assert regime("decode", 1, 0, 8) == "decode" and regime("decode", 1, 0, 9) == "decode_batched"


def test_mlx_gemma2_attention_is_unfused_on_the_gpu_and_pays_the_score_matrix_trips():
    """mlx_lm/models/gemma2.py soft-caps the logits, so it cannot call the fused sdpa: Q·Kᵀ, /cap, tanh, ×cap, mask
    select, softmax, ·V are separate GPU kernels. GEO with Σ_layers H = 2 layers × 4 heads = 8 score heads, 1000
    tokens in 512-token chunks on 0 cached: Σ chunk queries × keys = 512 × 512 + 488 × 1000 = 750,144.
    Matmuls: 2 · 256 · 750,144 = 384,073,728 FLOP at η_c · F = 5e12 -> 76.8147456 µs. Score matrix: 12 trips
    (1 write, 5 read+write, 1 read) × 2 bytes × 8 × 750,144 = 144,027,648 bytes at η_bw · BW = 5e10 -> 2.88055296 ms."""
    geo = dataclasses.replace(GEO, score_heads=8.0, unfused_full=GEO.attn_full)  # every layer unfused, 12 trips
    r = tp.roofline(geo, chip(), RES, "mlx-lm", chunk=512)
    assert r.score_bytes(1000, 0, 1) == 144_027_648
    assert r.prefill_attn_time(1000, 0, 1) == pytest.approx(384_073_728 / 5e12 + 144_027_648 / 5e10, rel=1e-12)
    # the fused kernel (score_heads 0) keeps the causal count at η_attn
    assert tp.roofline(GEO, chip(), RES, "mlx-lm", chunk=512).prefill_attn_time(1000, 0, 1) == pytest.approx(
        2 * 256 * 1000 ** 2 / 2 / 2.5e12, rel=1e-12)


def _geo_of(model, runtime, quant):
    rt = profiles.load_runtime(runtime)
    q = profiles.load_quant(quant, rt.weight_format)
    mm = memory_model(profiles.load_model(model), rt, q, profiles.ggml_types())
    return tp.geometry(mm, q.kind, q.mode)


def test_only_mlx_lm_gemma2_materialises_its_scores():
    """score_heads = num_attention_heads × attention layers for mlx-lm gemma2 (Gemma 2 9B: 16 × 42 = 672), 12 trips
    (soft-capping ops); llama.cpp runs Gemma 2 through its fused flash-attention kernel (soft-capping inside it)."""
    g = _geo_of("gemma-2-9b", "mlx-lm", "mlx-4bit-g64")
    assert (g.score_heads, g.score_heads_swa, g.score_passes) == (16 * 42, 0, 12)
    assert g.unfused_full == g.attn_full and g.unfused_swa == 0 == g.attn_swa   # gemma2: no rotating cache in mlx-lm
    assert _geo_of("gemma-2-9b", "llama.cpp", "Q4_K_M").score_heads == 0


def test_mlx_lm_prefills_head_sizes_without_a_fused_kernel_unfused():
    """mlx's fused full-attention kernel takes head sizes {64, 72, 80, 96, 128} for a chunk of more than 8 queries
    (scaled_dot_product_attention.cpp use_fallback, profiles/runtimes/mlx-lm.yaml fused_sdpa_head_dims); other
    layers run mlx/fast.cpp's fallback, 6 trips of the score matrix. Gemma 3 12B: 48 layers of 16 heads × 256, 8
    global and 40 sliding (window 1024, RotatingKVCache): score_heads 16 × 8 = 128, score_heads_swa 16 × 40 = 640,
    unfused dims 16 × 2 × 256 × 8 = 65,536 and × 40 = 327,680, all of attn_full / attn_swa. Qwen3.6-35B-A3B: 10
    full-attention layers of 16 heads × 256 (the 30 linear layers have no scores): 160, dims 81,920. Llama 3.1 8B
    (128) stays fused, and llama.cpp never materialises them."""
    g = _geo_of("gemma-3-12b", "mlx-lm", "mlx-4bit-g64")
    assert (g.score_heads, g.score_heads_swa, g.score_passes) == (128, 640, 6)
    assert (g.unfused_full, g.unfused_swa) == (65_536, 327_680) == (g.attn_full, g.attn_swa)
    q = _geo_of("qwen3.6-35b-a3b", "mlx-lm", "mlx-4bit-g64")
    assert (q.score_heads, q.score_heads_swa, q.unfused_full) == (160, 0, 81_920)
    assert _geo_of("llama-3.1-8b", "mlx-lm", "mlx-4bit-g64").score_heads == 0
    assert _geo_of("gemma-3-12b", "llama.cpp", "Q4_K_M").score_heads == 0


def test_an_unfused_sliding_layer_scores_at_most_its_window_plus_the_chunk():
    """One full and one sliding layer (window 600) of 4 heads × 16, the sliding one unfused (6 trips), 1000 tokens in
    512-token chunks on 0 cached. Sliding keys: chunk 1 512 × min(512, 1112) = 262,144, chunk 2 488 × min(1000,
    1112) = 488,000: 750,144; on 600 cached the cap W + chunk = 1112 binds for both: 1000 × 1112. Score bytes
    6 × 2 × 4 × 750,144 = 36,006,912; unfused FLOPs 2 · 128 · 750,144 = 192,036,864 at η_c · F = 5e12; the fused full
    layer keeps its causal 128 · 1000²/2 MACs at η_attn · F = 2.5e12."""
    geo = dataclasses.replace(GEO, attn_full=128.0, attn_swa=128.0, window=600, score_heads_swa=4.0, score_passes=6,
                              unfused_swa=128.0)
    r = tp.roofline(geo, chip(), RES, "mlx-lm", chunk=512)
    assert r.score_bytes(1000, 0, 1) == 36_006_912
    assert r.gpu_unfused_attn_flops(1000, 0, 1) == 192_036_864
    assert r.prefill_attn_time(1000, 0, 1) == pytest.approx(
        2 * 128 * 1000 ** 2 / 2 / 2.5e12 + 192_036_864 / 5e12 + 36_006_912 / 5e10, rel=1e-12)
    assert r.score_bytes(1000, 600, 1) == 6 * 2 * 4 * 1000 * 1112


def test_mlx_lm_prompt_speed_is_the_prompt_over_the_time_to_first_token():
    """mlx_lm/generate.py: generate_step prefills P − 1 tokens and runs the last through _step with the first
    sampled token; stream_generate's prompt_tps = P / (time until that token). So mlx-lm's reported prompt speed
    is P over the prefill of P − 1 tokens plus one decode step at depth P − 1: on GEO at 1000 tokens that step is
    20 ms of weights (1e9 B at 0.5 × 1e11 B/s) + 0.01998 ms of KV (999 × 1000 B) + 2 × 0.1 ms fixed = 20.21998 ms.
    llama-bench's pp is the prefill alone."""
    mlx = tp.roofline(GEO, chip(), RES, "mlx-lm", chunk=2048)
    t_pf, _ = mlx.prefill_time(999)
    assert mlx.reported_prefill_time(1000) == pytest.approx(t_pf + 0.02021998, rel=1e-12)
    est = tp.estimate(mlx, prompt=1000, gen=1)
    assert est.prefill_tok_s == pytest.approx(1000 / est.ttft_s, rel=1e-12)
    lc = rf()
    assert lc.reported_prefill_time(1000) == lc.prefill_time(1000)[0]
    assert tp.estimate(lc, prompt=1000, gen=1).prefill_tok_s == pytest.approx(1000 / lc.prefill_time(1000)[0])


def test_mlx_lm_prompt_speed_waits_for_the_calls_wiring_of_the_weights_the_servers_ttft_does_not():
    """mlx_lm/generate.py stream_generate starts its prompt timer inside ``with wired_limit(...)``, which wires every
    weight buffer into mlx's Metal residency set on entry and unwires them on exit: each call pays
    Roofline.wire_time = weight GB × t_wire_s_per_gb before its first token. 15 GB at 12 ms/GB: 0.18 s on top of
    test_mlx_lm_prompt_speed_is_the_prompt_over_the_time_to_first_token's TTFT (prefill of 999 tokens + the 20.21998
    ms step). The TTFT (the serving rule, mlx_lm.server sets the limit once) and llama-bench's pp do not pay it."""
    geo = dataclasses.replace(GEO, weight_bytes=15e9)
    wired = ResolvedSpeedConstants(constants=K.model_copy(update={"t_wire_s_per_gb": 0.012}), source="t", scopes=["t"])
    mlx = tp.roofline(geo, chip(), wired, "mlx-lm", chunk=2048)
    assert mlx.wire_time() == pytest.approx(0.18, rel=1e-12)
    t_pf, _ = mlx.prefill_time(999)
    assert mlx.reported_prefill_time(1000) == pytest.approx(t_pf + 0.02021998 + 0.18, rel=1e-12)
    est = tp.estimate(mlx, prompt=1000, gen=1)
    assert est.ttft_s == pytest.approx(t_pf + 0.02021998, rel=1e-12)
    # a running server's prompt speed is P / TTFT; the estimate's note gives a one-shot call's report, wiring included
    assert est.prefill_tok_s == pytest.approx(1000 / est.ttft_s, rel=1e-12)
    one_shot = 1000 / (est.ttft_s + 0.18)
    assert any(f"reports {one_shot:,.0f} tok/s" in n and "(0.18 s)" in n for n in est.notes)
    assert not any("wires the weights" in n for n in tp.estimate(mlx, prompt=0, gen=5).notes)  # nothing prefilled
    assert tp.roofline(geo, chip(), RES, "mlx-lm", chunk=2048).wire_time() == 0  # unset: no wiring
    lc = tp.roofline(geo, chip(), wired, "llama.cpp", chunk=512)
    assert lc.reported_prefill_time(1000) == lc.prefill_time(1000)[0]


def test_moe_layer_fixed_cost_adds_once_per_moe_layer_per_pass():
    """Roofline.fixed_time = L · t_layer + L_moe · t_moe_layer: 3 MoE layers at 0.2 ms add 0.6 ms to a decode step
    (0.0202 s in test_decode_step_golden) and to every prefill chunk; unset (the shipped profiles before a refit)
    adds nothing."""
    geo = dataclasses.replace(GEO, moe_layers=3)
    k = K.model_copy(update={"t_moe_layer_s": 2e-4})
    r = tp.roofline(geo, chip(), ResolvedSpeedConstants(constants=k, source="t", scopes=[]), "llama.cpp", chunk=512)
    assert r.fixed_time() == pytest.approx(2 * 1e-4 + 3 * 2e-4, rel=1e-12)
    assert r.step_time(1, 0) == pytest.approx(0.0202 + 0.0006, rel=1e-9)
    base = rf()
    # 1024 tokens in 512-token chunks: two passes, each 0.6 ms longer
    assert r.prefill_time(1024)[0] - base.prefill_time(1024)[0] == pytest.approx(2 * 0.0006, rel=1e-9)
    assert rf(geo=geo).step_time(1, 0) == pytest.approx(0.0202, rel=1e-9)  # t_moe_layer_s unset: 0


def test_moe_layers_counts_layers_with_routed_experts():
    """DeepSeek-V3: 61 layers, the first 3 dense (first_k_dense_replace), so 58 routed-expert layers; every layer of
    Mixtral-8x7B (32); none in a dense model."""
    for mid, n in (("deepseek-v3", 58), ("mixtral-8x7b", 32), ("llama-3.1-8b", 0)):
        cfg = profiles.load_model(mid).config
        assert (tp.moe_layers(cfg) if cfg.is_moe else 0) == n, mid
        rt = profiles.load_runtime("mlx-lm")
        q = profiles.load_quant("mlx-4bit-g64", rt.weight_format)
        mm = memory_model(profiles.load_model(mid), rt, q, profiles.ggml_types())
        assert tp.geometry(mm, q.kind, q.mode).moe_layers == n, mid


def test_recurrent_layer_fixed_cost_adds_once_per_recurrent_layer_per_pass():
    """Roofline.fixed_time adds L_rec · t_recurrent_layer: 5 recurrent layers at 0.24 ms add 1.2 ms to the golden
    decode step (0.0202 s) and to each of two 512-token prefill chunks; unset adds nothing."""
    geo = dataclasses.replace(GEO, recurrent_layers=5)
    k = K.model_copy(update={"t_recurrent_layer_s": 2.4e-4})
    r = tp.roofline(geo, chip(), ResolvedSpeedConstants(constants=k, source="t", scopes=[]), "llama.cpp", chunk=512)
    assert r.fixed_time() == pytest.approx(2 * 1e-4 + 5 * 2.4e-4, rel=1e-12)
    assert r.step_time(1, 0) == pytest.approx(0.0202 + 0.0012, rel=1e-9)
    assert r.prefill_time(1024)[0] - rf().prefill_time(1024)[0] == pytest.approx(2 * 0.0012, rel=1e-9)
    assert rf(geo=geo).step_time(1, 0) == pytest.approx(0.0202, rel=1e-9)


def test_recurrent_layers_count_the_layers_that_hold_a_state():
    """Qwen3.5-4B: 32 layers, full attention every 4th (full_attention_interval 4), so 24 gated-DeltaNet layers;
    Qwen3.6-27B: 64 layers, 48 of them linear; a dense model none. Every runtime's geometry carries the count."""
    for mid, n in (("qwen3.5-4b", 24), ("qwen3.6-27b", 48), ("llama-3.1-8b", 0)):
        cfg = profiles.load_model(mid).config
        assert hybrid.recurrent_layers(cfg) == n, mid
        assert n == 0 or cfg.num_hidden_layers - n == cfg.num_hidden_layers // 4, mid
        for rt_id, q_id in (("llama.cpp", "Q4_K_M"), ("mlx-lm", "mlx-4bit-g64")):
            rt = profiles.load_runtime(rt_id)
            q = profiles.load_quant(q_id, rt.weight_format)
            mm = memory_model(profiles.load_model(mid), rt, q, profiles.ggml_types())
            assert tp.geometry(mm, q.kind, q.mode).recurrent_layers == n, (mid, rt_id)


def test_the_shipped_recurrent_layer_cost_is_llama_cpps_only():
    """llama.cpp's gated-DeltaNet layer is a chain of ~20 ggml nodes, fitted as t_recurrent_layer_s (a free
    parameter its profile ships, whatever value the data give: ~25 us with current builds); mlx-lm runs the update
    as one compiled kernel and fits none (calibration/fit.py OPTIONAL_FIXED): a hybrid's step on llama.cpp is
    longer than its dense-equivalent by exactly L_rec · t_recurrent_layer."""
    lc = profiles.load_speed_constants(profiles.resolve_chip("m3-max-40gpu"), "llama.cpp").constants
    mx = profiles.load_speed_constants(profiles.resolve_chip("m3-max-40gpu"), "mlx-lm").constants
    assert lc.t_recurrent_layer_s is not None and lc.t_recurrent_layer_s >= 0
    assert not mx.t_recurrent_layer_s


def test_decode_attention_efficiency_only_on_the_vector_kernel():
    """eta_attn_decode applies where llama.cpp runs kernel_flash_attn_ext_vec (fewer than 20 queries per KV stream,
    ggml-metal-ops.cpp ggml_metal_op_flash_attn_ext_use_vec). Per-sequence streams: one query each, so 32
    sequences at 1000 keys take 32 × 4 ms = 128 ms (the 0.8 ms of the test above / 0.2, per sequence). A unified
    cache puts the whole batch in one stream: 32 queries run the tiled kernel at η_attn, 32 × 32 000 keys ×
    2 × 1e6 / (0.25 × 1e13) = 819.2 ms, and 8 queries the vector kernel again: 8 × 8000 × 2e6 / (0.2 × 2.5e12)
    = 256 ms. Without flash attention the decode attention is mul_mat: η_attn × noflash_kv_factor 3 = 2.4 ms."""
    geo = tp.Geometry(n_layers=2, dense_bytes=1e9, expert_bytes=0.0, n_experts=0, top_k=0, matmul_params=0.5e9,
                      head_params=0.0, kv_full=1000.0, kv_swa=0.0, window=None, state_bytes=0.0,
                      attn_full=1e6, attn_swa=0.0)
    slow = RES.model_copy(update={"constants": RES.constants.model_copy(update={"eta_attn_decode": 0.2})})
    r = tp.roofline(geo, chip(), slow, "llama.cpp")
    assert r.kv_time(32, 1000) == pytest.approx(0.128, rel=1e-9)
    uni = dataclasses.replace(r, unified_kv=True)
    assert uni.kv_time(32, 1000) == pytest.approx(0.8192, rel=1e-9)
    assert uni.kv_time(8, 1000) == pytest.approx(0.256, rel=1e-9)
    assert uni.kv_time(19, 1000) == pytest.approx(19 * 19000 * 2e6 / (0.2 * 2.5e12), rel=1e-9)
    assert uni.kv_time(20, 1000) == pytest.approx(20 * 20000 * 2e6 / 2.5e12, rel=1e-9)
    off = tp.roofline(geo, chip(), slow, "llama.cpp", flash_attn=False)
    assert off.kv_time(1, 1000) == pytest.approx(2.4e-3, rel=1e-9)
    # a query head size that is no multiple of 32 has no vector kernel: the tiled one at η_attn, 0.8 ms
    odd = tp.roofline(dataclasses.replace(geo, attn_heads=((80, 80),)), chip(), slow, "llama.cpp")
    assert odd.kv_time(1, 1000) == pytest.approx(0.8e-3, rel=1e-9)


def test_mlx_decode_attention_efficiency_only_for_its_vector_head_sizes():
    """mlx-lm: eta_attn_decode applies where mlx runs sdpa_vector (query and value heads of one size in
    64/96/128/256, scaled_dot_product_attention.cpp), at any batch: 32 sequences at 1000 keys, 128-wide heads, take
    32 × 0.8 ms / 0.2 = 128 ms; an absorbed-MLA head (576 over 512) falls back to matmul/softmax/matmul at η_attn,
    32 × 0.8 ms = 25.6 ms (the llama.cpp test above: 0.8 ms per sequence at η_attn)."""
    geo = tp.Geometry(n_layers=2, dense_bytes=1e9, expert_bytes=0.0, n_experts=0, top_k=0, matmul_params=0.5e9,
                      head_params=0.0, kv_full=1000.0, kv_swa=0.0, window=None, state_bytes=0.0,
                      attn_full=1e6, attn_swa=0.0)
    slow = RES.model_copy(update={"constants": RES.constants.model_copy(update={"eta_attn_decode": 0.2})})
    vec = tp.roofline(geo, chip(), slow, "mlx-lm")
    mla = tp.roofline(dataclasses.replace(geo, attn_heads=((576, 512),)), chip(), slow, "mlx-lm")
    assert vec.eta_attn_decode(32) == 0.2 and mla.eta_attn_decode(32) == 1.0
    assert mla.kv_time(32, 1000) == pytest.approx(vec.kv_time(32, 1000) * 0.2, rel=1e-9)
