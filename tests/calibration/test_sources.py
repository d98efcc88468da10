"""Issue 33, sources not rows: every source group counts once in the fit and in the likely range, a group held out
is absent from its own refit, wrappers get a measured overhead factor, M1 its own bandwidth efficiency, and new CSVs
with the measured-benchmark columns join the fit. Every number below is derived by hand in its docstring."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

pytest.importorskip("scipy", reason="the speed fit needs scipy (calibration extra; make test installs it)")
pytestmark = pytest.mark.requires_scipy

from calibration import fit as F  # noqa: E402
from planner import profiles  # noqa: E402
from planner import throughput as tp  # noqa: E402
from planner.schema import SpeedConstants  # noqa: E402


def _geo(layers=32, hidden=4096):
    params = 12 * layers * hidden * hidden  # attention 4h² + MLP 8h² per layer (as test_fit)
    return tp.Geometry(n_layers=layers, dense_bytes=params * 2.0, expert_bytes=0.0, n_experts=0, top_k=0,
                       matmul_params=float(params), head_params=32000.0 * hidden, kv_full=2.0 * layers * hidden * 2,
                       kv_swa=0.0, window=None, state_bytes=0.0, attn_full=float(layers * 2 * hidden), attn_swa=0.0)

CHIP = "m2-max-38gpu"


def _rec(value=1.0, source="a", phase="decode", runtime="llama.cpp", chip=CHIP, depth=0, batch=1):
    return F.FitRecord(runtime=runtime, chip=profiles.resolve_chip(chip), geo=_geo(), phase=phase,
                       prompt=512 if phase == "prefill" else 0, gen=0 if phase == "prefill" else 32, depth=depth,
                       batch=batch, value=value, source=source)


# ------------------------------------------------------------------------------------------- fit weights
def test_two_sources_of_1_and_9_rows_weigh_the_same_in_all():
    """10 decode rows in 2 groups: w = N / (G · n_g) = 10 / (2 · 1) = 5 for the lone row, 10 / (2 · 9) = 5/9 for
    each of the nine: 5 and 9 · 5/9 = 5 in all; the weights still sum to the 10 rows."""
    recs = F.source_weights([_rec(source="one")] + [_rec(source="nine") for _ in range(9)])
    assert recs[0].weight == pytest.approx(5.0)
    assert all(r.weight == pytest.approx(5 / 9) for r in recs[1:])
    assert sum(r.weight for r in recs if r.source == "nine") == pytest.approx(5.0)
    assert sum(r.weight for r in recs) == pytest.approx(10.0)


def test_each_phase_weighs_its_sources_on_its_own():
    """Source a: 1 decode + 3 prefill rows; source b: 3 decode + 1 prefill. Decode: N 4, G 2 -> a 4/2 = 2,
    b 4/(2·3) = 2/3 each; prefill the mirror image."""
    recs = F.source_weights([_rec(source="a"), *[_rec(source="a", phase="prefill")] * 3,
                             *[_rec(source="b")] * 3, _rec(source="b", phase="prefill")])
    w = {(r.source, r.phase): r.weight for r in recs}
    assert w[("a", "decode")] == pytest.approx(2.0) and w[("b", "decode")] == pytest.approx(2 / 3)
    assert w[("a", "prefill")] == pytest.approx(2 / 3) and w[("b", "prefill")] == pytest.approx(2.0)


def test_a_group_held_out_is_absent_from_its_own_fit(monkeypatch):
    """fit_all(exclude_source="b") hands the optimizer no row of b, and re-weights the rest: a and c, 2 and 1 rows,
    weigh 3 / (2 · 2) = 0.75 and 3 / (2 · 1) = 1.5 per row (1.5 each in all)."""
    seen = []

    def fake(records, spec, priors=None, fixed=None, **kw):
        seen.append(list(records))
        return {"eta_bw:max": 0.7}, {"predicted": [1.0] * len(records), "ape": [0.0] * len(records)}

    monkeypatch.setattr(F, "fit_efficiency_least_squares", fake)
    data = {"llama.cpp": [_rec(source="a"), _rec(source="a"), _rec(source="b"), _rec(source="c")]}
    F.fit_all(data, exclude_source="b")
    assert {r.source for r in seen[0]} == {"a", "c"}
    assert sorted(r.weight for r in seen[0]) == pytest.approx([0.75, 0.75, 1.5])


# ------------------------------------------------------------------------------------------- likely range
def test_weighted_percentiles_put_each_source_at_its_share_of_the_weight():
    """Equal weights: Hazen positions (i + 1/2) / n, so [0, 1, 2, 3]'s median is 1.5. Source a's 9 rows at 0
    (weights 1/9) and source b's 1 row at 0.3 (weight 1): b sits at (2 − 1/2) / 2 = 0.75, a's last row at
    (1 − 1/18) / 2 = 17/36; the median 0.5 lies (0.5 − 17/36) / (0.75 − 17/36) = 0.1 of the way: 0.03."""
    assert F.weighted_percentiles([3, 1, 0, 2], [1, 1, 1, 1], [50])[0] == pytest.approx(1.5)
    x = [0.0] * 9 + [0.3]
    w = F.per_source_weights(["a"] * 9 + ["b"])
    assert list(w) == pytest.approx([1 / 9] * 9 + [1.0])
    assert F.weighted_percentiles(x, w, [50])[0] == pytest.approx(0.03)


def test_the_likely_range_is_the_spread_between_sources_not_rows():
    """Held-out llama.cpp decode residuals (predicted = 1): source a 6 rows at 1.0, b one at 1.2, c one at 1.44
    (logs 0, L, 2L with L = ln 1.2). Weights 1/6, 1, 1 (total 3): a's rows at (k − 1/2)/18 ≤ 11/36, b at
    1.5/3 = 0.5, c at 2.5/3 = 5/6. Centre (median) = L; 10th percentile 0; 90th beyond 5/6: 2L. The range is
    exp(0) = 1.0 to exp(2L) = 1.44. Counted by rows (numpy, index 6.3 of 8) its top would be exp(1.3 L) = 1.268."""
    held = [("llama.cpp", _rec(1.0, "a"), 1.0) for _ in range(6)]
    held += [("llama.cpp", _rec(1.2, "b"), 1.0), ("llama.cpp", _rec(1.44, "c"), 1.0)]
    lo, hi = F.loso_ranges(held)["llama.cpp"]["decode"]
    assert lo == pytest.approx(1.0, abs=1e-3) and hi == pytest.approx(1.44, abs=1e-3)


# ------------------------------------------------------------------------------------------- wrappers
def test_wrapper_factor_pools_sources_and_shrinks_toward_one():
    """Source s1: two rows at 0.8 × the engine's prediction, s2 one at 0.9. Per source m = ln 0.8, ln 0.9;
    λ = (σ_s / σ_p)² = (0.15 / 0.3)² = 0.25; ln f = (ln 0.8 + ln 0.9) / (2 + 0.25) = −0.32850 / 2.25 → f = 0.8642.
    A wrapper measured faster (1.2: ln f = ln 1.2 / 1.25 > 0) is clipped to 1; no prefill rows, no prefill factor."""
    recs = [_rec(0.8, "s1", runtime="ollama"), _rec(0.8, "s1", runtime="ollama"), _rec(0.9, "s2", runtime="ollama")]
    f = F.fit_wrapper_factors(recs, [1.0, 1.0, 1.0])
    assert f == {"decode_factor": pytest.approx(math.exp((math.log(0.8) + math.log(0.9)) / 2.25))}
    assert f["decode_factor"] == pytest.approx(0.8642, abs=1e-4)
    assert F.fit_wrapper_factors([_rec(1.2, "s", runtime="ollama")], [1.0]) == {"decode_factor": 1.0}


def test_a_wrapper_factor_is_the_typical_sources_one_far_source_pulls_with_a_bounded_force():
    """robust_source_centre: source offsets −0.1, 0, 0.1 and one at 2.0 (a Mac at e² the engine's speed), no
    shrinkage (λ = 0), c = 0.15. With the three within c of μ (weight 1) and the far one at weight c / (2 − μ),
    μ · (3 + 0.15 / (2 − μ)) = 0.3 / (2 − μ) -> 3μ² − 6.15μ + 0.3 = 0 -> μ = (6.15 − √34.2225) / 6 = (6.15 − 5.85) / 6
    = 0.05 (−0.1 lies exactly c from it); the plain mean would be 0.475. Sources all within c of the shrunk mean
    Σ m / (k + λ) keep it: the Huber centre changes nothing for them. fit_wrapper_factors uses it: three sources at
    0.9 × the engine and one at 0.3 give ln f = the centre of ln 0.9 (× 3) and ln 0.3, shrunk, not their mean."""
    assert F.SOURCE_HUBER_C == 0.15
    assert F.robust_source_centre([-0.1, 0.0, 0.1, 2.0], 0.0) == pytest.approx(0.05, abs=1e-9)
    assert F.robust_source_centre([0.01, -0.02, 0.04], 0.25) == pytest.approx(0.03 / 3.25, abs=1e-12)
    recs = [_rec(0.9, s, runtime="ollama") for s in ("a", "b", "c")] + [_rec(0.3, "d", runtime="ollama")]
    f = F.fit_wrapper_factors(recs, [1.0] * 4)["decode_factor"]
    m = [math.log(0.9)] * 3 + [math.log(0.3)]
    assert f == pytest.approx(math.exp(F.robust_source_centre(m, 0.25)))
    mu = math.log(f)
    h = [F.huber_weight(x - mu) for x in m]
    assert mu == pytest.approx(sum(w * x for w, x in zip(h, m)) / (sum(h) + 0.25), abs=1e-9)  # its fixed point
    assert f > math.exp(sum(m) / 4.25)  # the slow Mac pulls less than in the mean


def test_every_wrapper_gets_its_measured_factors_lm_studio_mlx_decode_included():
    """fit_all's path (fit_wrapper_factors, then phase_factors): rows at 0.8 × the engine give LM Studio MLX and
    Ollama alike the pooled decode factor ln f = ln 0.8 / 1.25 (one source, λ = 0.25), and the prefill one
    ln f = ln 0.9 / 1.25: mlx-engine runs mlx-lm's step, but its users' sources measure what they measure."""
    def rows(rt):
        return [_rec(0.8, "s1", runtime=rt), _rec(0.9, "s1", phase="prefill", runtime=rt)]

    for rt in ("lmstudio-mlx", "ollama", "lmstudio-llama.cpp"):
        assert F.phase_factors(F.fit_wrapper_factors(rows(rt), [1.0, 1.0])) == {
            "decode_factor": pytest.approx(math.exp(math.log(0.8) / 1.25)),
            "prefill_factor": pytest.approx(math.exp(math.log(0.9) / 1.25))}


def test_the_prior_list_is_not_a_factor():
    # fit_all ships per_engine's entry through phase_factors: the "prior" list of unfitted phases goes
    per_engine = {"decode_factor": 0.8, "prefill_factor": 0.9, "prior": ["decode"]}
    assert F.phase_factors(per_engine) == {"decode_factor": 0.8, "prefill_factor": 0.9}


def test_wrapper_records_run_their_engines_roofline():
    assert _rec(runtime="lmstudio-mlx").engine == "mlx-lm" and _rec(runtime="ollama").engine == "llama.cpp"
    assert _rec(runtime="llama.cpp").engine == "llama.cpp"


def test_a_wrapper_factor_stretches_the_engines_step_and_prefill():
    """decode_factor 0.5: each decode step takes twice as long (rate halves); prefill_factor 0.8: prefill time / 0.8."""
    k = SpeedConstants(eta_bw=0.8, eta_c=0.6, eta_attn=0.3, eta_c_decode=0.4, eta_mv=0.2, eta_kv=0.8,
                       moe_bw_factor=0.7, t_layer_s=5e-5, noflash_attn_factor=2.0, noflash_kv_factor=2.0,
                       mv_max_batch=8, mm_tile=32, mm_id_min_batch=32, matrix_unit_factor=1.0)
    base = tp.Roofline(geo=_geo(), bw=400e9, flops=13e12, k=k)
    slow = tp.Roofline(geo=_geo(), bw=400e9, flops=13e12, k=k.model_copy(update={"decode_factor": 0.5,
                                                                                 "prefill_factor": 0.8}))
    assert slow.step_time(1, 1000) == pytest.approx(2 * base.step_time(1, 1000))
    assert slow.prefill_time(512)[0] == pytest.approx(base.prefill_time(512)[0] / 0.8)


def test_lm_studio_rows_are_fitted_as_lm_studio():
    from calibration.dataset import _runtime_family

    class M:
        def __init__(self, runtime):
            self.runtime, self.runtime_family = runtime, _runtime_family(runtime)

    assert F.planner_runtime(M("llama.cpp (LM Studio, flash attention on)")) == "lmstudio-llama.cpp"
    assert F.planner_runtime(M("mlx (LM Studio MLX engine)")) == "lmstudio-mlx"
    assert F.planner_runtime(M("LM Studio 0.3.9 (MLX engine)")) == "lmstudio-mlx"
    assert F.planner_runtime(M("LM Studio (llama.cpp engine, Metal)")) == "lmstudio-llama.cpp"
    assert F.planner_runtime(M("llama.cpp (llama-bench, Metal)")) == "llama.cpp"
    assert F.planner_runtime(M("ollama")) == "ollama"
    assert F.planner_runtime(M("mlx-vlm (MLX)")) is None


# ------------------------------------------------------------------------------------------- M1
def test_m1_chips_get_their_own_bandwidth_efficiency():
    """With GEN_ETA_BW the M1 rows free eta_bw:M1 instead of their tier's: an M1 Max row uses it, an M2 Max row
    eta_bw:max; the gen-M1 scope carries it and the planner's chain (default -> tier -> gen) lets it win."""
    recs = [_rec(chip="m1-max-32gpu"), _rec(chip="m2-max-38gpu")]
    spec = F.Spec("llama.cpp", gen_eta_bw=("M1",), free={"eta_bw"})
    assert F._param_names(recs, spec) == ["eta_bw:max", "eta_bw:M1"]
    params = {"eta_bw:max": 0.8, "eta_bw:M1": 0.6, "eta_c:M2": 0.6}
    assert F.full_constants(params, {}, profiles.resolve_chip("m1-max-32gpu")).eta_bw == 0.6
    assert F.full_constants(params, {}, profiles.resolve_chip("m2-max-38gpu")).eta_bw == 0.8
    scoped = F.constants_from_params(params, fixed={})
    assert scoped["gen-M1"].eta_bw == 0.6 and scoped["tier-max"].eta_bw == 0.8
    assert scoped["default"].eta_bw == 0.8  # the default is a mean over tiers only


def test_shipped_gen_m1_bandwidth_wins_over_the_tier():
    """The planner's chain default -> tier -> generation -> chip: a gen-M1 eta_bw, when a profile carries one, wins
    over the tier's, and the chip's own file (its family's eta_bw, calibration.fit.FAMILY_ETA_BW) over both;
    without either the M1 Max takes tier-max's."""
    m1 = profiles.resolve_chip("m1-max-32gpu")
    res = profiles.load_speed_constants(m1, "llama.cpp", include_user=False)
    assert res.scopes[:3] == ["default__llama.cpp", "tier-max__llama.cpp", "gen-M1__llama.cpp"]
    from planner.schema import CalibrationProfile

    def eta(name):
        p = F.OUT_DIR / f"{name}.yaml"
        return profiles.load_file(p, CalibrationProfile).constants.eta_bw if p.is_file() else None

    expected = next(v for v in (eta("m1-max-32gpu__llama.cpp"), eta("gen-M1__llama.cpp"), eta("tier-max__llama.cpp"))
                    if v is not None)
    assert res.constants.eta_bw == expected
    assert res.scopes[-1] == ("m1-max-32gpu__llama.cpp" if eta("m1-max-32gpu__llama.cpp") else "gen-M1__llama.cpp")


def test_m1_rows_fit_their_tier_bandwidth_efficiency():
    """The shipped fit frees no generation's own eta_bw (calibration.fit.GEN_ETA_BW): llama.cpp #4167 shows M1
    reaching the share of its bandwidth that M2 reaches in the same tier (base 78 vs 81 %, Ultra 35-39 vs 44 %),
    so an M1 Max row and an M2 Max row use eta_bw:max, an M1 base row eta_bw:base."""
    recs = [_rec(chip="m1-max-32gpu"), _rec(chip="m2-max-38gpu"), _rec(chip="m1-8gpu")]
    spec = F.Spec("llama.cpp", gen_eta_bw=F.GEN_ETA_BW, free={"eta_bw"})
    assert F._param_names(recs, spec) == ["eta_bw:base", "eta_bw:max"]


# ------------------------------------------------------------------------------------------- new data files
def test_new_csvs_with_the_measured_columns_join_the_fit(tmp_path):
    """A new file with the training CSV's header is picked up; a table with other columns and the multi-Mac
    cluster file (same columns, other measurements) are not."""
    shutil.copy(F.TRAIN_FILES[0], tmp_path / "measured_benchmarks_new_sources.csv")
    shutil.copy(F.TRAIN_FILES[0], tmp_path / "cluster_measurements.csv")
    (tmp_path / "mac_products.csv").write_text("product,chip\nMac mini,M4\n", encoding="utf-8")
    assert [p.name for p in F.training_files(tmp_path)] == ["measured_benchmarks_new_sources.csv"]


def test_rows_of_other_files_are_labelled_with_their_file(tmp_path):
    src = F.TRAIN_FILES[0].read_text(encoding="utf-8").splitlines()
    header, row = src[0], next(line for line in src[1:] if "llama.cpp benches/mac-m2-ultra" in line)
    p = tmp_path / "measured_benchmarks_extra.csv"
    p.write_text(header + "\n" + row + "\n", encoding="utf-8")
    data, _ = F.load_training_records([p])
    labels = [r.label for recs in data.values() for r in recs]
    assert labels and all(lbl.startswith("measured_benchmarks_extra row ") for lbl in labels)


def test_a_bad_row_in_a_new_file_names_the_file_and_line(tmp_path):
    from calibration.dataset import DatasetError, load_measurements

    src = F.TRAIN_FILES[0].read_text(encoding="utf-8").splitlines()
    p = tmp_path / "measured_benchmarks_new.csv"
    p.write_text(src[0] + "\n" + src[1] + "\nx" + src[2] + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"^measured_benchmarks_new\.csv:3: .*row_id"):
        load_measurements(p)


def test_report_counts_each_held_out_source_once_and_signs_its_bias():
    """Held-out llama.cpp decode rows, predicted / measured: source a 1.1, 1.1, 1.1; source b 0.8. Signed biases
    (median of predicted / measured − 1): a +10 %, b −20 %; the runtime's bias is their median, −5 %. MAPE with
    each source once: (10 + 20) / 2 = 15 %; by rows: (3 · 10 + 20) / 4 = 12.5 %. Coverage: 3 of a's rows inside
    their range, b's row outside -> 75 %."""
    from calibration import report as R

    held = [("llama.cpp", _rec(1.0, "a"), 1.1) for _ in range(3)] + [("llama.cpp", _rec(1.0, "b"), 0.8)]
    bias = R.source_bias(held)
    assert bias[("llama.cpp", "decode", "a")] == pytest.approx((3, 10.0, 10.0))
    assert bias[("llama.cpp", "decode", "b")] == pytest.approx((1, 20.0, -20.0))
    cov = {("llama.cpp", "decode", "a"): (3, 3), ("llama.cpp", "decode", "b"): (0, 1)}
    s = R.source_summary(held, cov)[("llama.cpp", "all decode")]
    assert s["sources"] == 2 and s["rows"] == 4
    assert s["bias"] == pytest.approx(-5.0) and s["mape_sources"] == pytest.approx(15.0)
    assert s["mape_rows"] == pytest.approx(12.5) and s["coverage"] == pytest.approx(75.0)
    lines = R.source_lines(held, cov)
    assert any("llama.cpp" in ln and "MAPE src  15.0% (<= 10%: MISS)" in ln for ln in lines)


# ------------------------------------------------------------------------------------------- wrapper families
def test_a_wrappers_chip_family_effect_is_the_shrunk_mean_of_its_sources():
    """fit_wrapper_family_effects, one row per source at exp(m) × a prediction of 1: M1 Max sources at m = −0.2
    (24-core bin) and −0.3 (32-core bin), M3 Pro sources at +0.1 and +0.2, one base-M4 source at 0. μ = median = 0.
    σ² pooled within families = ((0.05² + 0.05²) + (0.05² + 0.05²)) / (1 + 1) = 0.005. Family means −0.25, 0.15, 0:
    Var (ddof 1) = (0.21667² + 0.18333² + 0.03333²) / 2 = 0.0408333; mean(σ² / k) = (0.0025 + 0.0025 + 0.005) / 3
    = 0.0033333; τ² = 0.0375, λ = σ² / τ² = 2/15. δ = Σ(m − μ) / (k + λ): M1 Max −0.5 / (32/15) = −0.234375, M3 Pro
    0.3 / (32/15) = 0.140625; the lone base-M4 source gets none (MIN_FAMILY_SOURCES = 2)."""
    rows = [(-0.2, "a1", "m1-max-24gpu"), (-0.3, "a2", "m1-max-32gpu"), (0.1, "b1", "m3-pro-14gpu"),
            (0.2, "b2", "m3-pro-18gpu"), (0.0, "c1", "m4-10gpu")]
    recs = [_rec(math.exp(m), s, runtime="ollama", chip=c) for m, s, c in rows]
    f = F.fit_wrapper_family_effects(recs, [1.0] * len(recs))
    assert set(f) == {"max-M1", "pro-M3"}
    assert math.log(f["max-M1"]) == pytest.approx(-0.234375, abs=1e-12)
    assert math.log(f["pro-M3"]) == pytest.approx(0.140625, abs=1e-12)
    # prefill rows are another phase's: they change nothing
    assert F.fit_wrapper_family_effects(recs + [_rec(5.0, "p", phase="prefill", runtime="ollama")],
                                        [1.0] * 6) == f


def test_families_that_agree_get_no_effect_and_each_bin_of_a_family_ships_its_factor(monkeypatch):
    """Family means that differ no more than their sources explain (τ² ≤ 0) give no effect: M1 Max at −0.1 and +0.1,
    M3 Pro at −0.1 and +0.1 (means 0 and 0, Var 0 − mean(σ² / 2) < 0). A family factor 0.8 on a wrapper factor 0.9
    ships 0.72 in every M1 Max bin's scope (wrapper_family_scopes) and in no other chip's; a held-out record on an
    M1 Max gets the same product (held_out_constants), one on an M3 Pro the wrapper's 0.9. A family factor 1.2 on 0.9
    (1.08) ships 1: a wrapper's factor is at most 1."""
    rows = [(-0.1, "a1", "m1-max-24gpu"), (0.1, "a2", "m1-max-32gpu"), (-0.1, "b1", "m3-pro-14gpu"),
            (0.1, "b2", "m3-pro-18gpu")]
    recs = [_rec(math.exp(m), s, runtime="ollama", chip=c) for m, s, c in rows]
    assert F.fit_wrapper_family_effects(recs, [1.0] * 4) == {}
    diag = {"family_factors": {"max-M1": 0.8}}
    scopes = F.wrapper_family_scopes({"decode_factor": 0.9}, diag)
    m1_max = {c.id for c in profiles.builtin_chips() if c.tier == "max" and c.generation == "M1"}
    assert set(scopes) == m1_max and len(m1_max) >= 2
    assert all(k.decode_factor == pytest.approx(0.72) for k in scopes.values())
    monkeypatch.setattr(F, "engine_constants", lambda fits, rt, r: SpeedConstants())  # the engine's: not at issue
    fits = {"ollama": ({"decode_factor": 0.9}, {}, diag)}
    assert F.held_out_constants(fits, "ollama", recs[0]).decode_factor == pytest.approx(0.72)
    assert F.held_out_constants(fits, "ollama", recs[2]).decode_factor == pytest.approx(0.9)
    # a family faster than the engine's prediction: the product is held at 1 (a wrapper never removes work)
    faster = {"family_factors": {"pro-M3": 1.2}}
    assert all(k.decode_factor == 1.0 for k in F.wrapper_family_scopes({"decode_factor": 0.9}, faster).values())


def test_lm_studio_mlx_rows_before_its_2048_chunk_prefill_512_tokens_at_a_time():
    """mlx-engine's PROMPT_PROCESSING_CHUNK_SIZE was 512 until mlx-engine #295 (2026-03-25) made it 2048
    (PREFILL_CHUNK_BEFORE): thornad's 2026-01 GLM-4.7 prefill row runs 512-token chunks, the same row dated 2026-05
    the runtime's 2048, and an mlx-lm row of 2026-01 mlx-lm's own 2048 (its prefill_step_size did not change)."""
    from calibration.dataset import load_measurements

    here = Path(__file__).resolve().parents[2] / "calibration" / "data" / "measured_benchmarks_s21_prefill.csv"
    m = {m.row_id: m for m in load_measurements(here)}[71024]
    assert m.year_month == "2026-01" and F.planner_runtime(m) == "lmstudio-mlx"

    def chunk(**update) -> int:  # the row as if it did not state its chunk, unless the update does
        (r,), _ = F.records_from_measurements([m.model_copy(update={"prefill_step": None, **update})])
        return r.chunk

    assert chunk() == 512
    assert chunk(year_month="2026-05") == profiles.load_runtime("lmstudio-mlx").prefill_chunk == 2048
    assert chunk(runtime="mlx-lm (mlx_lm.generate)", runtime_family="mlx-lm") == 2048
    # a row that states its chunk ran it (thornad's patched engine at 1024), whatever its date
    assert chunk(prefill_step=1024) == 1024
    assert chunk(prefill_step=1024, year_month="2026-05") == 1024


def test_a_stated_prefill_step_size_is_read_and_only_mlx_engines_run_it():
    """'prefill_step_size=4096' (or mlx_lm's flag '--prefill-step-size 4096') in a row is the MLX prefill chunk it ran;
    llama.cpp's chunk is its n_ubatch, so a llama.cpp row keeps its own default whatever MLX text it carries."""
    from calibration.dataset import _parse_prefill_step, load_measurements

    assert _parse_prefill_step("patched: prefill_step_size=4096") == 4096
    assert _parse_prefill_step("mlx_lm.server --prefill-step-size 512 --port 1") == 512
    assert _parse_prefill_step("n_ubatch=2048") is None
    here = Path(__file__).resolve().parents[2] / "calibration" / "data" / "measured_benchmarks_s21_prefill.csv"
    m = {m.row_id: m for m in load_measurements(here)}[71024]
    assert m.prefill_step == 512  # its runtime_version names the stock engine's prefill_step_size 512
    lc = m.model_copy(update={"runtime": "llama.cpp", "runtime_family": "llama.cpp", "quant": "Q4_K_M",
                              "quant_id": "Q4_K_M", "prefill_step": 4096, "n_ubatch": None})
    (r,), _ = F.records_from_measurements([lc])
    assert r.chunk == profiles.load_runtime("llama.cpp").prefill_chunk != 4096


def test_mlx_rows_on_neural_accelerators_run_the_expert_tile_of_their_month():
    """gather_qmm_rhs_nax ran 64-row blocks on every expert segment from mlx #2772 (2025-11) until #4023/#4352
    (2026-08): BAEM1N's M5 Max row of 2026-04 (Qwen3.5-122B-A10B, 256 experts top-8, a 1,023-token pass) computes
    8,184 + 63 (E_t − 1/2) expert rows, the same row dated 2026-10 today's 16-row tile below 64 rows per expert
    (8,184 + 15 (E_t − 1/2)), and is predicted faster. Rows before NAX, other Macs and llama.cpp keep their kernels;
    the shipped scope of the M5 generation carries today's."""
    from calibration.dataset import load_measurements

    m5 = profiles.resolve_chip("m5-max-40gpu")
    assert F.row_kernels("mlx-lm", m5, "2026-04")["expert_tile"] == 64
    assert F.row_kernels("mlx-lm", m5, "2026-04")["expert_tile_wide"] is None
    assert F.row_kernels("lmstudio-mlx", m5, "2026-10") == {**F.KERNELS["lmstudio-mlx"], **F.NAX_KERNELS}
    assert F.row_kernels("mlx-lm", m5, "2025-10") == F.KERNELS["mlx-lm"]
    assert F.row_kernels("mlx-lm", profiles.resolve_chip("m4-max-40gpu"), "2026-04") == F.KERNELS["mlx-lm"]
    assert F.row_kernels("llama.cpp", m5, "2026-04") == F.KERNELS["llama.cpp"]
    here = Path(__file__).resolve().parents[2] / "calibration" / "data" / "measured_benchmarks_s22_baem1n.csv"
    m = {m.row_id: m for m in load_measurements(here)}[72117]
    (old,), _ = F.records_from_measurements([m])
    (new,), _ = F.records_from_measurements([m.model_copy(update={"year_month": "2026-10"})])
    assert (old.geo.n_experts, old.geo.top_k, old.prompt) == (256, 8, 1024)
    touched = 256 * (1 - (1 - 8 / 256) ** 1023)
    for r, tile in ((old, 64), (new, 16)):
        roof = tp.Roofline(geo=r.geo, bw=1.0, flops=1.0, k=SpeedConstants(**r.kernels), chunk=r.chunk)
        assert roof.expert_rows(1023) == pytest.approx(8184 + (tile - 1) * (touched - 0.5), rel=1e-12)
    consts = profiles.load_speed_constants(m5, "mlx-lm").constants
    assert F.predict_record(old, consts) < F.predict_record(new, consts)
    assert (consts.expert_tile, consts.expert_tile_wide, consts.expert_tile_wide_from) == (16, 32, 64.0)
    assert profiles.load_speed_constants(profiles.resolve_chip("m4-max-40gpu"), "mlx-lm").constants.expert_tile_wide \
        is None
    assert F.constants_from_params({"eta_c:M5": 0.8}, runtime="mlx-lm")["gen-M5"].expert_tile_wide == 32
    assert "gen-M5" not in F.constants_from_params({"eta_c:M4": 0.8}, runtime="llama.cpp")


def test_llama_cpp_rows_before_its_m5_tensor_kernels_get_the_era_factor_on_the_matrix_units():
    """llama.cpp #20962 (first in b8932, 2026-04-25) gave the M5's matrix units their own kernels: a row of b8500 on an
    M5 Max ran the old ones, a row of b9200 today's; without a build number the month decides (before 2026-05). Only
    llama.cpp engines on matrix-unit chips: an M4 or an mlx-lm row never. The era factor scales the matrix-unit
    speed-up of those rows alone (3.0 × 0.8 = 2.4), and never below no speed-up at all (3.0 × 0.2 -> 1)."""
    m5, m4 = profiles.resolve_chip("m5-max-40gpu"), profiles.resolve_chip("m4-max-40gpu")
    assert F.old_matrix_kernels("llama.cpp", m5, 8500, "2026-04")
    assert not F.old_matrix_kernels("llama.cpp", m5, 9200, "2026-05")
    assert F.old_matrix_kernels("llama.cpp", m5, None, "2026-04")
    assert not F.old_matrix_kernels("llama.cpp", m5, None, "2026-06")
    assert F.old_matrix_kernels("ollama", m5, None, "2026-03")
    assert not F.old_matrix_kernels("llama.cpp", m4, 8500, "2026-04")
    assert not F.old_matrix_kernels("mlx-lm", m5, None, "2026-04")
    k = SpeedConstants(matrix_unit_factor=3.0)
    assert F.era_adjusted(k, {"era_mu": 0.8}, "current", True).matrix_unit_factor == pytest.approx(2.4)
    assert F.era_adjusted(k, {"era_mu": 0.8}, "current", False).matrix_unit_factor == 3.0
    assert F.era_adjusted(k, {"era_mu": 0.2}, "current", True).matrix_unit_factor == 1.0
    from calibration.dataset import load_measurements

    here = Path(__file__).resolve().parents[2] / "calibration" / "data" / "measured_benchmarks_s22_baem1n.csv"
    llama = [m for m in load_measurements(here) if m.runtime_family == "llama.cpp"][:1]
    (r,), _ = F.records_from_measurements(llama)
    assert r.runtime == "llama.cpp" and r.old_matrix_kernels
