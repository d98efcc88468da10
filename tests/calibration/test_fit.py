"""calibration.fit: synthetic rates generated from known constants are recovered; a failing optimizer raises."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest

pytest.importorskip("scipy", reason="the speed fit needs scipy (calibration extra; make test installs it)")
pytestmark = pytest.mark.requires_scipy

from calibration import fit as F  # noqa: E402
from calibration.errors import CalibrationError  # noqa: E402
from planner import profiles  # noqa: E402
from planner import throughput as tp  # noqa: E402
from planner.schema import SpeedConstants  # noqa: E402

TRUE = {"eta_bw:max": 0.78, "eta_bw:ultra": 0.55, "eta_c:M2": 0.62, "eta_c:M3": 0.70, "eta_attn": 0.35,
        "eta_c_decode": 0.2, "t_layer_s": 8e-5}
FIXED_Q = {"q_float": 1.0}


def _geo(layers=32, hidden=4096):
    params = 12 * layers * hidden * hidden  # attention 4h² + MLP 8h² per layer
    return tp.Geometry(n_layers=layers, dense_bytes=params * 2.0, expert_bytes=0.0, n_experts=0, top_k=0,
                       matmul_params=float(params), head_params=32000.0 * hidden, kv_full=2.0 * layers * hidden * 2,
                       kv_swa=0.0, window=None, state_bytes=0.0, attn_full=float(layers * 2 * hidden), attn_swa=0.0)


def _synthetic(noise=None) -> list[F.FitRecord]:
    chips = [profiles.resolve_chip(i) for i in ("m2-max-38gpu", "m2-ultra-76gpu", "m3-max-40gpu", "m3-ultra-80gpu")]
    geos = [_geo(), _geo(16, 2048)]
    out = []
    for c, g in itertools.product(chips, geos):
        k = F.full_constants(TRUE, {**FIXED_Q, "noflash_attn_factor": 2.0, "matrix_unit_factor": 1.0}, c)
        for B, D in itertools.product((1, 4, 16, 64), (0, 8192)):
            r = F.FitRecord(runtime="llama.cpp", chip=c, geo=g, phase="decode", prompt=0, gen=32, depth=D,
                            batch=B, value=1.0)
            out.append(F.FitRecord(**{**r.__dict__, "value": F.predict_record(r, k)}))
        for P, D in itertools.product((128, 512, 2048), (0, 16384)):
            r = F.FitRecord(runtime="llama.cpp", chip=c, geo=g, phase="prefill", prompt=P, gen=0, depth=D,
                            batch=1, value=1.0)
            out.append(F.FitRecord(**{**r.__dict__, "value": F.predict_record(r, k)}))
    return out


def test_fit_recovers_known_constants():
    recs = _synthetic()
    spec = F.Spec("llama.cpp", free={"eta_bw", "eta_c", "eta_attn", "eta_c_decode", "t_layer_s"})
    params, diag = F.fit_efficiency_least_squares(recs, spec)
    for name, true in TRUE.items():
        assert params[name] == pytest.approx(true, rel=0.03), name
    assert diag["ape"].max() < 1.0


def test_vectorised_fit_model_matches_planner_throughput():
    recs = _synthetic()
    spec = F.Spec("llama.cpp", free={"eta_bw", "eta_c", "eta_attn", "eta_c_decode", "t_layer_s"})
    names = F._param_names(recs, spec)
    import numpy as np
    theta = np.log([TRUE[n] for n in names])
    pred = F._predict(theta, F._Arrays(recs), F._index(recs, spec, names), F._fixed_values(recs, spec, FIXED_Q))
    assert pred == pytest.approx([r.value for r in recs], rel=1e-9)


def test_vectorised_fit_model_matches_planner_throughput_for_mlx_on_a_cpu():
    """The unfused CPU attention of MLX (Roofline.prefill_attn_time: every query × every key up to its chunk's
    end, at η_c) is in the fit's own vectorised model too, chunking included."""
    import numpy as np

    cpu = profiles.resolve_chip("m2-max-38gpu").model_copy(update={"id": "custom-00000000", "backend": "cpu"})
    k = F.full_constants(TRUE, {**FIXED_Q, "noflash_attn_factor": 2.0, "matrix_unit_factor": 1.0}, cpu)
    g = _geo(4, 512)
    recs = []
    for P, chunk in itertools.product((64, 256, 1024, 4096), (512, 2048)):
        r = F.FitRecord(runtime="mlx-lm", chip=cpu, geo=g, phase="prefill", prompt=P, gen=0, depth=0, batch=1,
                        value=1.0, chunk=chunk)
        recs.append(F.FitRecord(**{**r.__dict__, "value": F.predict_record(r, k)}))
    unfused = F.predict_record(recs[-1], k)
    fused = F.predict_record(F.FitRecord(**{**recs[-1].__dict__, "chip": profiles.resolve_chip("m2-max-38gpu")}), k)
    assert unfused != pytest.approx(fused, rel=1e-3)   # the rectangle at η_c, not the causal half at η_attn
    spec = F.Spec("mlx-lm", free={"eta_c", "t_layer_s"})
    names = F._param_names(recs, spec)
    theta = np.log([k.eta_c if n.startswith("eta_c") else k.t_layer_s for n in names])
    # mlx-lm's prompt speed includes one decode step (Roofline.reported_prefill_time): its constants too
    fixed = {**FIXED_Q, "eta_bw:max": k.eta_bw, "eta_attn": k.eta_attn, "eta_kv": k.eta_kv}
    pred = F._predict(theta, F._Arrays(recs), F._index(recs, spec, names), F._fixed_values(recs, spec, fixed))
    assert pred == pytest.approx([r.value for r in recs], rel=1e-9)


def test_vectorised_fit_model_matches_planner_throughput_with_moe_layer_cost():
    """A MoE layer's routing chain (throughput.Roofline.fixed_time: L_moe · t_moe_layer) is in the fit's vectorised
    model as in the planner, on decode steps and on mlx-lm's prompt speed (its first decode step), and the fit
    recovers it next to t_layer: a dense and a MoE geometry of different depths separate the two."""
    import dataclasses

    import numpy as np

    true = {"eta_bw:max": 0.78, "eta_c:M3": 0.7, "t_layer_s": 3e-5, "t_moe_layer_s": 1e-4}
    c = profiles.resolve_chip("m3-max-40gpu")
    k = F.full_constants(true, {**FIXED_Q, "matrix_unit_factor": 1.0, "moe_bw_factor": 1.0}, c, "mlx-lm")
    assert k.t_moe_layer_s == 1e-4
    moe = dataclasses.replace(_geo(24, 1024), moe_layers=24)
    geos = [_geo(16, 2048), _geo(40, 1024), moe, dataclasses.replace(_geo(48, 512), moe_layers=40)]
    recs = []
    for g in geos:
        for D in (0, 4096):
            r = F.FitRecord(runtime="mlx-lm", chip=c, geo=g, phase="decode", prompt=0, gen=64, depth=D, batch=1,
                            value=1.0)
            recs.append(F.FitRecord(**{**r.__dict__, "value": F.predict_record(r, k)}))
        r = F.FitRecord(runtime="mlx-lm", chip=c, geo=g, phase="prefill", prompt=512, gen=0, depth=0, batch=1,
                        value=1.0, chunk=2048)
        recs.append(F.FitRecord(**{**r.__dict__, "value": F.predict_record(r, k)}))
    spec = F.Spec("mlx-lm", tier_eta_bw=True, free={"eta_bw", "eta_c", "t_layer_s", "t_moe_layer_s"})
    names = F._param_names(recs, spec)
    assert "t_moe_layer_s" in names
    fixed = {**FIXED_Q, "moe_bw_factor": 1.0, "matrix_unit_factor": 1.0, "eta_attn": k.eta_attn, "eta_kv": k.eta_kv}
    theta = np.log([true[n] for n in names])
    pred = F._predict(theta, F._Arrays(recs), F._index(recs, spec, names), F._fixed_values(recs, spec, fixed))
    assert pred == pytest.approx([r.value for r in recs], rel=1e-9)
    params, _ = F.fit_efficiency_least_squares(recs, spec, fixed=fixed)
    assert params["t_moe_layer_s"] == pytest.approx(1e-4, rel=0.03)
    assert params["t_layer_s"] == pytest.approx(3e-5, rel=0.03)
    # a runtime whose spec leaves it out (llama.cpp's default) keeps no MoE layer cost
    assert "t_moe_layer_s" not in F._param_names(recs, F.Spec("llama.cpp"))
    assert F.full_constants(true, FIXED_Q, c).t_moe_layer_s == 1e-4
    no_moe = {n: v for n, v in true.items() if n != "t_moe_layer_s"}
    assert F.full_constants(no_moe, FIXED_Q, c).t_moe_layer_s == 0.0


def test_the_fit_recovers_mlx_lms_per_call_wiring_time_from_prompts_of_several_lengths():
    """mlx-lm's prompt speed is P over its TTFT, which waits for the call's residency wiring of every weight
    (throughput.Roofline.wire_time: weight GB × t_wire_s_per_gb). Hand-derived: a 15 GB model at 12 ms/GB adds
    0.18 s to the time the prompt speed divides by; the vectorised model agrees with the planner, and prompts of
    128, 512 and 2048 tokens separate the fixed wiring from the per-token compute (η_c)."""
    import dataclasses

    import numpy as np

    true = {"eta_bw:max": 0.78, "eta_c:M3": 0.7, "t_layer_s": 5e-5, "t_wire_s_per_gb": 0.012}
    c = profiles.resolve_chip("m3-max-40gpu")
    fixed = {**FIXED_Q, "matrix_unit_factor": 1.0, "moe_bw_factor": 1.0}
    k = F.full_constants(true, fixed, c, "mlx-lm")
    assert k.t_wire_s_per_gb == 0.012
    g = dataclasses.replace(_geo(40, 5120), weight_bytes=15e9)
    r = F.FitRecord(runtime="mlx-lm", chip=c, geo=g, phase="prefill", prompt=128, gen=0, depth=0, batch=1,
                    value=1.0, chunk=2048)
    k0 = k.model_copy(update={"t_wire_s_per_gb": 0.0})
    assert 128 / F.predict_record(r, k) == pytest.approx(128 / F.predict_record(r, k0) + 0.18, rel=1e-12)
    # llama.cpp's pp is the prefill alone: no wiring whatever the constant
    lc = F.FitRecord(**{**r.__dict__, "runtime": "llama.cpp"})
    assert F.predict_record(lc, k) == F.predict_record(lc, k0)
    recs = []
    for geo in (g, dataclasses.replace(_geo(24, 2048), weight_bytes=2.4e9)):
        for P in (128, 512, 2048):
            x = F.FitRecord(**{**r.__dict__, "geo": geo, "prompt": P})
            recs.append(F.FitRecord(**{**x.__dict__, "value": F.predict_record(x, k)}))
        d = F.FitRecord(runtime="mlx-lm", chip=c, geo=geo, phase="decode", prompt=0, gen=64, depth=512, batch=1,
                        value=1.0)
        recs.append(F.FitRecord(**{**d.__dict__, "value": F.predict_record(d, k)}))
    spec = F.Spec("mlx-lm", free={"eta_bw", "eta_c", "t_layer_s", "t_wire_s_per_gb"})
    names = F._param_names(recs, spec)
    assert "t_wire_s_per_gb" in names
    fixed = {**fixed, "eta_attn": k.eta_attn, "eta_kv": k.eta_kv}
    theta = np.log([true[n] for n in names])
    pred = F._predict(theta, F._Arrays(recs), F._index(recs, spec, names), F._fixed_values(recs, spec, fixed))
    assert pred == pytest.approx([x.value for x in recs], rel=1e-9)
    params, _ = F.fit_efficiency_least_squares(recs, spec, fixed=fixed)
    assert params["t_wire_s_per_gb"] == pytest.approx(0.012, rel=0.03)
    assert params["eta_c:M3"] == pytest.approx(0.7, rel=0.03)
    # decode rows alone cannot see it: not a parameter there, and unset it is 0
    assert "t_wire_s_per_gb" not in F._param_names([x for x in recs if x.phase == "decode"], spec)
    assert F.full_constants({n: v for n, v in true.items() if n != "t_wire_s_per_gb"}, fixed, c).t_wire_s_per_gb == 0


def test_the_fit_recovers_a_recurrent_layer_cost_next_to_the_layer_cost():
    """L_rec · t_recurrent_layer (throughput.Roofline.fixed_time) is in the vectorised model as in the planner, and
    a dense and a hybrid geometry of different depths separate it from t_layer (llama.cpp frees it)."""
    import dataclasses

    import numpy as np

    true = {"eta_bw:max": 0.78, "eta_c:M3": 0.7, "t_layer_s": 3e-5, "t_recurrent_layer_s": 2e-4}
    c = profiles.resolve_chip("m3-max-40gpu")
    k = F.full_constants(true, {**FIXED_Q, "matrix_unit_factor": 1.0, "moe_bw_factor": 1.0}, c, "llama.cpp")
    assert k.t_recurrent_layer_s == 2e-4
    geos = [_geo(16, 2048), _geo(40, 1024), dataclasses.replace(_geo(32, 1024), recurrent_layers=24),
            dataclasses.replace(_geo(64, 512), recurrent_layers=48)]
    recs = []
    for g in geos:
        for D in (0, 4096):
            r = F.FitRecord(runtime="llama.cpp", chip=c, geo=g, phase="decode", prompt=0, gen=64, depth=D, batch=1,
                            value=1.0)
            recs.append(F.FitRecord(**{**r.__dict__, "value": F.predict_record(r, k)}))
    spec = F.Spec("llama.cpp", tier_eta_bw=True, free={"eta_bw", "t_layer_s", "t_recurrent_layer_s"})
    names = F._param_names(recs, spec)
    assert "t_recurrent_layer_s" in names
    fixed = {**FIXED_Q, "moe_bw_factor": 1.0, "matrix_unit_factor": 1.0, "eta_attn": k.eta_attn, "eta_kv": k.eta_kv,
             "eta_c:M3": 0.7}
    theta = np.log([true[n] for n in names])
    pred = F._predict(theta, F._Arrays(recs), F._index(recs, spec, names), F._fixed_values(recs, spec, fixed))
    assert pred == pytest.approx([r.value for r in recs], rel=1e-9)
    params, _ = F.fit_efficiency_least_squares(recs, spec, fixed=fixed)
    assert params["t_recurrent_layer_s"] == pytest.approx(2e-4, rel=0.03)
    assert params["t_layer_s"] == pytest.approx(3e-5, rel=0.05)
    dense = [r for r in recs if not r.geo.recurrent_layers]
    assert "t_recurrent_layer_s" not in F._param_names(dense, spec)  # no hybrid row, nothing to fit


def test_each_generation_gets_its_own_layer_time_and_the_planner_chain_carries_it():
    """t_layer_s per GPU generation (GEN_T_LAYER): the vectorised model and the planner's constants give a row its
    generation's value; the fit recovers two generations' values from rows of two layer counts each; the scoped
    constants put each in its gen-<M> profile and the default is their geometric mean (a chip of no fitted
    generation)."""
    import numpy as np

    m3, m5 = profiles.resolve_chip("m3-max-40gpu"), profiles.resolve_chip("m5-max-40gpu")
    true = {"eta_bw:max": 0.75, "t_layer_s:M3": 1.3e-4, "t_layer_s:M5": 4e-5}
    fixed = {**FIXED_Q, "moe_bw_factor": 1.0, "matrix_unit_factor": 1.0, "eta_c:M3": 0.7, "eta_c:M5": 0.7}
    recs = []
    for chip in (m3, m5):
        k = F.full_constants(true, fixed, chip, "llama.cpp")
        assert k.t_layer_s == true[f"t_layer_s:{chip.generation}"]
        for g in (_geo(16, 2048), _geo(64, 512)):
            r = F.FitRecord(runtime="llama.cpp", chip=chip, geo=g, phase="decode", prompt=0, gen=64, depth=0,
                            batch=1, value=1.0)
            recs.append(F.FitRecord(**{**r.__dict__, "value": F.predict_record(r, k)}))
    spec = F.Spec("llama.cpp", tier_eta_bw=True, gen_t_layer=("M3", "M5"), free={"eta_bw", "t_layer_s"})
    names = F._param_names(recs, spec)
    assert {"t_layer_s:M3", "t_layer_s:M5"} <= set(names)
    fixedv = {**fixed, "eta_attn": 0.5, "eta_kv": 0.6}
    theta = np.log([true.get(n, 1e-4) for n in names])
    pred = F._predict(theta, F._Arrays(recs), F._index(recs, spec, names), F._fixed_values(recs, spec, fixedv))
    k3 = F.full_constants(true, fixedv, m3, "llama.cpp")
    assert pred[:2] == pytest.approx([F.predict_record(r, k3) for r in recs[:2]], rel=1e-9)
    params, _ = F.fit_efficiency_least_squares(recs, spec, fixed=fixedv)
    assert params["t_layer_s:M3"] == pytest.approx(1.3e-4, rel=0.05)
    assert params["t_layer_s:M5"] == pytest.approx(4e-5, rel=0.05)
    scoped = F.constants_from_params(params)
    assert scoped["gen-M5"].t_layer_s == params["t_layer_s:M5"]
    assert scoped["default"].t_layer_s == pytest.approx((params["t_layer_s:M3"] * params["t_layer_s:M5"]) ** 0.5)


def test_a_chip_familys_bandwidth_factor_is_fitted_and_ships_as_each_of_its_bins_eta_bw():
    """FAMILY_ETA_BW: a chip's η_bw is its tier's times its family's factor (tier x generation), in the vectorised
    model and the planner's constants alike, clipped at 1. Rows of two Max families whose chips reach 0.75 and
    0.9 of their bandwidth: the fit gives each chip its own share (factor ratio 1.2); the scoped constants put
    tier x factor in every bin of the fitted family (the 32-core M5 Max too, which has no rows) and none in a
    family without a factor."""
    import numpy as np

    m3, m5 = profiles.resolve_chip("m3-max-40gpu"), profiles.resolve_chip("m5-max-40gpu")
    assert (F.family(m3), F.family(m5)) == ("max-M3", "max-M5")
    true = {"eta_bw:max": 0.75, "eta_bw_fam:max-M5": 1.2, "t_layer_s": 5e-5}
    fixed = {**FIXED_Q, "moe_bw_factor": 1.0, "matrix_unit_factor": 1.0, "eta_c:M3": 0.7, "eta_c:M5": 0.7,
             "eta_attn": 0.5, "eta_kv": 0.6}
    assert F.full_constants(true, fixed, m3).eta_bw == 0.75
    assert F.full_constants(true, fixed, m5).eta_bw == pytest.approx(0.9)
    assert F.full_constants({**true, "eta_bw_fam:max-M5": 1.5}, fixed, m5).eta_bw == 1.0  # a share, at most 1
    recs = []
    for chip in (m3, m5):
        k = F.full_constants(true, fixed, chip)
        for g in (_geo(16, 2048), _geo(64, 512)):
            r = F.FitRecord(runtime="llama.cpp", chip=chip, geo=g, phase="decode", prompt=0, gen=64, depth=0,
                            batch=1, value=1.0)
            recs.append(F.FitRecord(**{**r.__dict__, "value": F.predict_record(r, k)}))
    spec = F.Spec("llama.cpp", family_eta_bw=True, free={"eta_bw"})
    names = F._param_names(recs, spec)
    assert names == ["eta_bw:max", "eta_bw_fam:max-M3", "eta_bw_fam:max-M5"]
    assert F._param_names(recs, F.Spec("llama.cpp", free={"eta_bw"})) == ["eta_bw:max"]
    fixedv = {**fixed, "t_layer_s": 5e-5}
    theta = np.log([{"eta_bw:max": 0.75, "eta_bw_fam:max-M3": 1.0, "eta_bw_fam:max-M5": 1.2}[n] for n in names])
    pred = F._predict(theta, F._Arrays(recs), F._index(recs, spec, names), F._fixed_values(recs, spec, fixedv))
    assert pred == pytest.approx([r.value for r in recs], rel=1e-9)
    params, _ = F.fit_efficiency_least_squares(recs, spec, fixed=fixedv)
    share = {c.id: params["eta_bw:max"] * params[f"eta_bw_fam:{F.family(c)}"] for c in (m3, m5)}
    assert share["m3-max-40gpu"] == pytest.approx(0.75, rel=0.01)
    assert share["m5-max-40gpu"] == pytest.approx(0.9, rel=0.01)
    scoped = F.constants_from_params({"eta_bw:max": 0.75, "eta_bw_fam:max-M5": 1.2})
    assert scoped["tier-max"].eta_bw == 0.75
    assert scoped["m5-max-40gpu"].eta_bw == pytest.approx(0.9) and scoped["m5-max-32gpu"].eta_bw == pytest.approx(0.9)
    assert "m3-max-40gpu" not in scoped and "m5-pro-20gpu" not in scoped


def test_the_planner_chain_gives_a_chip_its_familys_shipped_eta_bw_for_llama_cpp_and_its_wrappers():
    """The shipped chip-scope files (calibration.fit FAMILY_ETA_BW) are the last scope of the planner's chain: a bin
    of a fitted family decodes at its file's η_bw under llama.cpp and under the wrappers that start from
    llama.cpp's chain (Ollama, LM Studio's llama.cpp engine); a chip with no file keeps its tier's."""
    import yaml

    def shipped(name):
        p = F.OUT_DIR / f"{name}.yaml"
        return yaml.safe_load(p.read_text())["constants"].get("eta_bw") if p.is_file() else None

    chips = [c for c in profiles.builtin_chips() if shipped(f"{c.id}__llama.cpp") is not None]
    assert chips, "no chip-scope llama.cpp profile shipped"
    for c in chips:
        for rt in ("llama.cpp", "ollama", "lmstudio-llama.cpp"):
            got = profiles.load_speed_constants(c, rt, include_user=False).constants.eta_bw
            assert got == shipped(f"{c.id}__llama.cpp"), (c.id, rt)
    bare = [c for c in profiles.builtin_chips() if shipped(f"{c.id}__llama.cpp") is None]
    for c in bare:
        want = shipped(f"gen-{c.generation}__llama.cpp") or shipped(f"tier-{c.tier}__llama.cpp")
        if want is not None:
            assert profiles.load_speed_constants(c, "llama.cpp", include_user=False).constants.eta_bw == want


def test_a_chip_without_its_own_layer_time_takes_the_pooled_then_an_older_generations():
    """layer_time: the generation's own t_layer_s, else the pooled one (rows of a generation GEN_T_LAYER leaves out),
    else the newest earlier generation's (as the planner falls back to an older gen profile), else the geometric
    mean (the default profile of a fit where every generation has its own). The pooled parameter is left out of a
    fit where every row's generation has its own: no row would use it."""
    own = {"t_layer_s:M3": 1e-4, "t_layer_s:M5": 4e-5}
    assert F.layer_time(own, "M5") == 4e-5
    assert F.layer_time({**own, "t_layer_s": 2e-4}, "M4") == 2e-4
    assert F.layer_time(own, "M4") == 1e-4 and F.layer_time(own, "M6") == 4e-5
    assert F.layer_time(own, "M1") == pytest.approx((1e-4 * 4e-5) ** 0.5)
    assert F.layer_time({}, "M1") == F.BASE_PRIORS["t_layer_s"][0]
    m3, m5 = profiles.resolve_chip("m3-max-40gpu"), profiles.resolve_chip("m5-max-40gpu")
    recs = [F.FitRecord(runtime="llama.cpp", chip=c, geo=_geo(16, 2048), phase="decode", prompt=0, gen=64, depth=0,
                        batch=1, value=10.0) for c in (m3, m5)]
    spec = F.Spec("llama.cpp", gen_t_layer=("M3", "M5"), free={"t_layer_s"})
    assert F._param_names(recs, spec) == ["t_layer_s:M3", "t_layer_s:M5"]
    assert F._param_names(recs, F.Spec("llama.cpp", gen_t_layer=("M5",), free={"t_layer_s"})) == ["t_layer_s",
                                                                                                  "t_layer_s:M5"]
    assert F.constants_from_params({"t_layer_s": 2e-4, "t_layer_s:M5": 4e-5})["default"].t_layer_s == 2e-4


def test_a_batched_regime_one_source_measured_keeps_the_engines_efficiency():
    """η_mv (2 <= B <= 8) and η_c_decode (B > 8) are fitted for a runtime only when MIN_BATCHED_SOURCES (2) source
    groups measured their regime; otherwise they are held at llama.cpp's value (sigma BORROWED_SIGMA)."""
    c = profiles.resolve_chip("m3-max-40gpu")

    def rec(src, batch):
        return F.FitRecord(runtime="mlx-lm", chip=c, geo=_geo(32, 1024), phase="decode", prompt=0, gen=64, depth=0,
                           batch=batch, value=1.0, source=src)

    engine = {"eta_mv": 0.3, "eta_c_decode": 0.5}
    one = [rec("a", 1), rec("a", 3), rec("a", 5), rec("b", 1), rec("b", 16)]
    assert F.borrowed_kernel_priors(one, engine, "mlx-lm") == {"eta_mv": (0.3, F.BORROWED_SIGMA),
                                                               "eta_c_decode": (0.5, F.BORROWED_SIGMA)}
    two = [*one, rec("c", 4), rec("d", 32)]
    assert F.borrowed_kernel_priors(two, engine, "mlx-lm") == {}
    assert F.borrowed_kernel_priors([*one, rec("c", 4)], engine, "mlx-lm") == {"eta_c_decode": (0.5, F.BORROWED_SIGMA)}


def test_batched_rows_of_moe_models_do_not_unlock_a_kernel_efficiency():
    """A MoE's batched step also reads the union of its routed experts, so its rows cannot tell η_mv apart from the
    routing model: a second source group of batched MoE rows leaves η_mv borrowed; a dense one frees it."""
    c = profiles.resolve_chip("m4-10gpu")
    moe = dataclasses.replace(_geo(32, 1024), expert_bytes=4e9, n_experts=256, top_k=8)

    def rec(src, batch, geo):
        return F.FitRecord(runtime="mlx-lm", chip=c, geo=geo, phase="decode", prompt=0, gen=64, depth=0,
                           batch=batch, value=1.0, source=src)

    engine = {"eta_mv": 0.3, "eta_c_decode": 0.5}
    dense_a = [rec("a", 1, _geo()), rec("a", 4, _geo())]
    moe_b = [rec("b", 2, moe), rec("b", 8, moe), rec("b", 16, moe), rec("b", 32, moe)]
    assert F.borrowed_kernel_priors(dense_a + moe_b, engine, "mlx-lm") == {
        "eta_mv": (0.3, F.BORROWED_SIGMA), "eta_c_decode": (0.5, F.BORROWED_SIGMA)}
    dense_c = [rec("c", 8, _geo()), rec("c", 16, _geo())]
    assert F.borrowed_kernel_priors(dense_a + moe_b + dense_c, engine, "mlx-lm") == {
        "eta_c_decode": (0.5, F.BORROWED_SIGMA)}


def test_priors_pull_unidentified_parameters():
    recs = [r for r in _synthetic() if r.phase == "decode" and r.batch == 1]  # no prefill: eta_c unseen
    spec = F.Spec("llama.cpp", free={"eta_bw", "eta_c", "t_layer_s"})
    params, _ = F.fit_efficiency_least_squares(recs, spec, priors={"eta_c": (0.42, 0.1)})
    assert "eta_c:M2" not in params  # no prefill rows -> no per-generation eta_c parameter at all
    assert params["eta_bw:max"] == pytest.approx(0.78, rel=0.03)


def test_failing_optimizer_raises_calibration_error():
    recs = _synthetic()
    with pytest.raises(CalibrationError, match="optimizer failed"):
        F.fit_efficiency_least_squares(recs, F.Spec("llama.cpp"), max_nfev=1)


def test_no_records_raise():
    with pytest.raises(CalibrationError):
        F.fit_efficiency_least_squares([], F.Spec("llama.cpp"))


def test_constants_from_params_are_valid_profiles():
    scoped = F.constants_from_params({**TRUE, "q_legacy": 0.9}, fixed={})
    assert scoped["tier-max"].eta_bw == 0.78 and scoped["gen-M3"].eta_c == 0.70
    assert not scoped["default"].missing()
    assert isinstance(scoped["default"], SpeedConstants)


def test_constants_from_params_carry_the_moe_layer_cost():
    """A fitted t_moe_layer_s lands in the default scope; a user fit that keeps it fixed (calibration.user_fit passes
    the shipped constants as ``fixed``) writes it back; a fit that never had it leaves it unset (0 in the roofline)."""
    assert F.constants_from_params({**TRUE, "t_moe_layer_s": 1e-4}, fixed={})["default"].t_moe_layer_s == 1e-4
    assert F.constants_from_params(TRUE, fixed={"t_moe_layer_s": 2e-4})["default"].t_moe_layer_s == 2e-4
    assert F.constants_from_params(TRUE, fixed={})["default"].t_moe_layer_s is None


def test_shipped_profiles_are_reproducible(tmp_path):
    profs, _, _ = F.shipped_profiles()
    paths = F.write_profiles(profs, tmp_path)
    shipped = F.OUT_DIR
    assert sorted(p.name for p in paths) == sorted(p.name for p in shipped.glob("*.yaml"))
    for p in paths:
        assert p.read_text() == (shipped / p.name).read_text(), f"{p.name}: run python -m calibration.fit"


def test_range_table_is_the_10th_and_90th_percentile_by_regime():
    """Ten shallow decode rows measured at 0.80, 0.82, ..., 0.98 × the prediction: numpy's linear percentile
    gives 0.818 and 0.962; a regime with fewer than MIN_RANGE_ROWS rows is left out (it falls back to its
    phase's range at lookup)."""
    chip = profiles.resolve_chip("m2-max-38gpu")
    recs = [F.FitRecord(runtime="llama.cpp", chip=chip, geo=_geo(), phase="decode", prompt=0, gen=32, depth=0,
                        batch=1, value=0.80 + 0.02 * i) for i in range(10)]
    recs += [F.FitRecord(runtime="llama.cpp", chip=chip, geo=_geo(), phase="decode", prompt=0, gen=32, depth=8192,
                         batch=1, value=1.0)]
    table = F.range_table(recs, [1.0] * len(recs))
    # the deep row is its own regime; over the 10 shallow ones: index 0.9 -> 0.818, index 8.1 -> 0.962
    assert table["decode"] == pytest.approx((0.818, 0.962), abs=1e-3)
    assert "decode_deep" not in table


def test_2023_llama_cpp_builds_run_every_batch_above_one_on_the_matrix_matrix_kernel():
    """ggml-metal.m of 2023-2024 (GGML_OP_MUL_MAT: ``int ne11_mm_min = 1``) sent B >= 2 to kernel_mul_mm; current
    builds keep B <= 8 on the matrix-vector kernels (ggml-metal-common.cpp: ``ne11 > 8``)."""
    assert F.mv_max_batch("llama.cpp", "2023-10") == 1
    assert F.mv_max_batch("llama.cpp", "2024") == 1
    assert F.mv_max_batch("llama.cpp", "current") == 8
    assert F.mv_max_batch("mlx-lm", "current") == 8
    k = SpeedConstants(mv_max_batch=8, eta_c=0.5, eta_bw=0.5, eta_mv=0.1, t_layer_s=1e-4)
    assert F.era_adjusted(k, {}, "2023-11").mv_max_batch == 1
    assert F.era_adjusted(k, {}, "current").mv_max_batch == 8


def test_loso_ranges_take_the_runtime_offset_and_the_scatter_between_sources():
    """Out-of-source residuals (measured / predicted, predicted = 1): llama.cpp decode, source a 5 × 1.0 and
    source b 5 × 1.2; mlx-lm decode, one source, 5 × 1.3. In logs r:
    - llama.cpp decode: median of [0]*5 + [ln 1.2]*5 = ln 1.2 / 2; 10th / 90th percentile (numpy linear, index
      0.9 and 8.1) = 0 and ln 1.2 -> the range is exactly (1.0, 1.2);
    - mlx-lm: its own centre ln 1.3 (one source may set a runtime's offset); 5 rows < MIN_RANGE_ROWS, so the
      spread is the pooled one: 15 rows sorted 0×5, ln 1.2×5, ln 1.3×5, median (index 7) ln 1.2, 10th (index 1.4)
      0, 90th (index 12.6) ln 1.3 -> spread (−ln 1.2, ln 1.3 − ln 1.2), range exp(ln 1.3 − ln 1.2) = 1.083,
      capped at 1.0 below, and exp(2 ln 1.3 − ln 1.2) = 1.69 / 1.2 = 1.408 above (the pooled centre would give 1.3);
    - llama.cpp batched decode has no rows: the phase's centre and spread."""
    chip = profiles.resolve_chip("m2-max-38gpu")

    def rec(rt, value, src):
        return F.FitRecord(runtime=rt, chip=chip, geo=_geo(), phase="decode", prompt=0, gen=32, depth=0, batch=1,
                           value=value, source=src)
    held = [("llama.cpp", rec("llama.cpp", 1.0, "a"), 1.0) for _ in range(5)]
    held += [("llama.cpp", rec("llama.cpp", 1.2, "b"), 1.0) for _ in range(5)]
    held += [("mlx-lm", rec("mlx-lm", 1.3, "m"), 1.0) for _ in range(5)]
    table = F.loso_ranges(held)
    assert table["llama.cpp"]["decode"] == pytest.approx((1.0, 1.2), abs=1e-3)
    assert table["llama.cpp"]["decode_batched"] == pytest.approx((1.0, 1.2), abs=1e-3)
    assert table["mlx-lm"]["decode"] == pytest.approx((1.0, 1.408), abs=1e-3)




def test_scope_prior_sigma_makes_the_fit_the_random_effects_mean():
    # σ_p² = σ_n² · n_s / (λ · W), λ = (0.15 / 0.2)² = 0.5625: two sources, weight 8, σ_n 0.05
    # -> 0.05 · √(2 / (0.5625 · 8)) = 0.05 · √0.4444 = 0.03333
    assert F.scope_prior_sigma(2, 8.0, 0.05) == pytest.approx(0.033333, rel=1e-4)
    assert F.scope_prior_sigma(0, 0.0) == F.SCOPE_PRIOR_SIGMA


def test_one_slow_source_moves_its_tier_by_its_offset_over_one_plus_lambda():
    """Decode at B = 1, depth 0, no fixed cost: rate = η_bw · BW / bytes, so log rate is linear in log η_bw.
    Sources A and B (M2 Max) measure η 0.8, source C (M2 Ultra) 0.5, 3 rows each, every source weighted once.
    Pooled: θ = (2 ln 0.8 + ln 0.5) / 3 (the prior on it, σ 1, is negligible against the rows). Each tier's offset
    shrinks by n / (n + λ), λ = 0.5625: max θ + (ln 0.8 − θ) · 2 / 2.5625, ultra θ + (ln 0.5 − θ) / 1.5625:
    the lone slow source C moves its tier by 64 % of its offset, not all of it."""
    import math

    g = _geo()
    recs = []
    for src, chip_id, eta in (("A", "m2-max-38gpu", 0.8), ("B", "m2-max-38gpu", 0.8), ("C", "m2-ultra-76gpu", 0.5)):
        c = profiles.resolve_chip(chip_id)
        for i in range(3):
            recs.append(F.FitRecord(runtime="llama.cpp", chip=c, geo=g, phase="decode", prompt=0, gen=1, depth=0,
                                    batch=1, value=eta * tp.bandwidth(c) / g.dense_bytes, source=src,
                                    label=f"{src}{i}"))
    recs = F.source_weights(recs)
    spec = F.Spec("llama.cpp", free={"eta_bw"})
    orig = F.BASE_PRIORS["t_layer_s"]
    try:
        F.BASE_PRIORS["t_layer_s"] = (0.0, 2.0)  # not free: no per-layer cost
        params, diag = F.fit_hierarchical(recs, spec)
    finally:
        F.BASE_PRIORS["t_layer_s"] = orig
    theta = (2 * math.log(0.8) + math.log(0.5)) / 3
    assert diag["pooled"]["eta_bw:*"] == pytest.approx(math.exp(theta), rel=1e-3)
    assert params["eta_bw:max"] == pytest.approx(math.exp(theta + (math.log(0.8) - theta) * 2 / 2.5625), rel=2e-3)
    assert params["eta_bw:ultra"] == pytest.approx(math.exp(theta + (math.log(0.5) - theta) / 1.5625), rel=2e-3)


def test_quant_prior_is_the_within_source_ratio_to_float_weights():
    """Source S prefills model g at 512 tokens on float weights at 100 tok/s and 4-bit at 81 (ratio 0.81), model h
    at 100 and 64 (0.64): the prior is their geometric mean √(0.81 · 0.64) = 0.72. Source T has only 4-bit rows
    (no float contrast) and changes nothing, however slow it is."""
    c = profiles.resolve_chip("m3-max-40gpu")
    out = []
    for src, geo, cls, value in (("S", _geo(), "float", 100.0), ("S", _geo(), "affine", 81.0),
                                 ("S", _geo(16, 2048), "float", 100.0), ("S", _geo(16, 2048), "affine", 64.0),
                                 ("T", _geo(), "affine", 20.0)):
        g = tp.Geometry(**{**geo.__dict__, "quant_class": cls})
        out.append(F.FitRecord(runtime="mlx-lm", chip=c, geo=g, phase="prefill", prompt=512, gen=0, depth=0,
                               batch=1, value=value, source=src))
    pri = F.within_source_quant_priors(out)
    assert set(pri) == {"q_affine"}
    assert pri["q_affine"][0] == pytest.approx(0.72, rel=1e-9)
    assert pri["q_affine"][1] == F.QUANT_CONTRAST_SIGMA


# --------------------------------------------------------------------------- Ollama's engines (issue 33)
def test_ollama_engine_follows_the_version_then_the_architecture():
    """calibration/data/ollama_engines.yaml: from v0.30.0 every GGUF runs on llama-server; before it Ollama's own
    engine for the architectures OllamaEngineRequired lists (gemma3, qwen3moe...), the llama.cpp runner for the rest
    (llama). A row without a version is placed by its month (v0.30.0: 2026-06); a version beats the month."""
    assert F.ollama_engine("0.31.2", "2026-07", "llama") == "llama-server"
    assert F.ollama_engine(None, "2026-06", "qwen3_moe") == "llama-server"
    assert F.ollama_engine(None, "2026-03", "gemma3_text") == "ollamarunner"  # gemma3_text -> GGUF gemma3
    assert F.ollama_engine(None, "2026-03", "qwen3_moe") == "ollamarunner"    # qwen3_moe -> qwen3moe
    assert F.ollama_engine(None, "2026-03", "llama") == "llamarunner"
    assert F.ollama_engine(None, "2026-03", "mistral") == "llamarunner"       # Mistral converts as llama
    assert F.ollama_engine("0.29.1", "2026-08", "qwen3_moe") == "ollamarunner"
    assert F.ollama_version("ollama 0.32.1, mlx-chronos 0.4.0") == "0.32.1"
    assert F.ollama_version("0.31.2") == "0.31.2"
    assert F.ollama_version("llmfit 1.1.10") is None  # the benchmark tool's version, not Ollama's


def test_ollama_flash_attention_default_per_engine():
    """llama-server and the llama.cpp runner: llama.cpp's auto (on for Metal); Ollama's own engine: on only for the
    architectures GGML.FlashAttention() lists (gemma3 yes; llama4 runs on that engine but is not listed)."""
    assert F.ollama_flash_attn("llama-server", "llama") is True
    assert F.ollama_flash_attn("llamarunner", "llama") is True
    assert F.ollama_flash_attn("ollamarunner", "gemma3_text") is True
    assert F.ollama_flash_attn("ollamarunner", "llama4") is False


def test_ollama_engine_and_flash_attention_follow_the_release():
    """ollama_engines.yaml, read release by release in ollama/ollama: qwen3 joined OllamaEngineRequired in v0.12.0
    (a May 2025 qwen3 row ran the llama.cpp runner), gemma3 in v0.6.0. Flash attention was off by default before
    v0.13.4 on the llama.cpp runner (OLLAMA_FLASH_ATTENTION unset), auto (on) from it; on Ollama's own engine it is on
    from the release whose GGML.FlashAttention() lists the architecture (gemma3: v0.12.6, gemma4: v0.20.4)."""
    assert F.ollama_engine(None, "2025-05", "qwen3") == "llamarunner"
    assert F.ollama_engine("0.11.5", None, "qwen3") == "llamarunner"
    assert F.ollama_engine("0.12.0", None, "qwen3") == "ollamarunner"
    assert F.ollama_engine(None, "2025-09", "qwen3") == "ollamarunner"  # v0.12.0 was tagged 2025-09-18
    assert F.ollama_engine(None, "2025-04", "gemma3_text") == "ollamarunner"
    assert F.ollama_flash_attn("llamarunner", "llama", "0.5.9") is False
    assert F.ollama_flash_attn("llamarunner", "llama", None, "2025-10") is False
    assert F.ollama_flash_attn("llamarunner", "llama", "0.13.4") is True
    assert F.ollama_flash_attn("llamarunner", "llama", None, "2025-12") is True
    assert F.ollama_flash_attn("ollamarunner", "gemma3_text", None, "2025-05") is False
    assert F.ollama_flash_attn("ollamarunner", "gemma3_text", "0.12.6") is True
    assert F.ollama_flash_attn("ollamarunner", "gemma4_text", "0.20.0") is False
    assert F.ollama_flash_attn("ollamarunner", "gemma4_text", "0.23.1") is True
    assert F.ollama_flash_attn("llama-server", "llama", "0.31.0") is True


def test_wrapper_engine_factor_needs_two_sources():
    """Engine A: sources s1 and s2 both measure 0.8 x the engine's prediction -> the pooled random effect
    exp(2 ln 0.8 / (2 + λ)), λ = (0.15 / 0.3)² = 0.25: exp(-0.446287 / 2.25) = exp(-0.198350) = 0.82008.
    Engine B: one source at 0.5 -> no factor (the prior, the engine's speed), its phase listed as at the prior."""
    chip = profiles.resolve_chip("m2-max-38gpu")

    def rec(eng, src, value):
        return F.FitRecord(runtime="ollama", chip=chip, geo=_geo(), phase="decode", prompt=0, gen=32, depth=0,
                           batch=1, value=value, source=src, wrapper_engine=eng)
    recs = [rec("A", "s1", 0.8), rec("A", "s1", 0.8), rec("A", "s2", 0.8), rec("B", "s3", 0.5)]
    out = F.fit_wrapper_engine_factors(recs, [1.0] * len(recs))
    assert out["A"]["decode_factor"] == pytest.approx(0.82008, rel=1e-4)
    assert out["A"]["prior"] == []
    assert "decode_factor" not in out["B"] and out["B"]["prior"] == ["decode"]


def test_wrapper_range_is_the_spread_between_wrapper_sources():
    """Ollama sources a (5 rows at 1.0 x predicted) and b (5 at 1.1), LM Studio sources c (1.2) and d (0.5).
    Ollama's centre: the source-weighted median of its 10 residuals, half-way between 0 and ln 1.1 = 0.047655;
    its own spread ±0.047655. The wrapper sources' medians sorted: ln 0.5, 0, ln 1.1, ln 1.2 at Hazen positions
    0.125 ... 0.875: 10th percentile ln 0.5 = -0.693147 (flat below the first), median 0.047655, 90th ln 1.2 =
    0.182322; spread (-0.740802, 0.134667), wider than Ollama's own -> the range exp(0.047655 - 0.740802) = 0.5,
    exp(0.047655 + 0.134667) = 1.2."""
    chip = profiles.resolve_chip("m2-max-38gpu")

    def rec(rt, value, src):
        return F.FitRecord(runtime=rt, chip=chip, geo=_geo(), phase="decode", prompt=0, gen=32, depth=0, batch=1,
                           value=value, source=src)
    held = [("ollama", rec("ollama", 1.0, "a"), 1.0) for _ in range(5)]
    held += [("ollama", rec("ollama", 1.1, "b"), 1.0) for _ in range(5)]
    held += [("lmstudio-mlx", rec("lmstudio-mlx", 1.2, "c"), 1.0) for _ in range(5)]
    held += [("lmstudio-mlx", rec("lmstudio-mlx", 0.5, "d"), 1.0) for _ in range(5)]
    lo, hi = F.wrapper_source_spread(held, "decode")
    assert (lo, hi) == pytest.approx((-0.740802, 0.134667), abs=1e-5)
    assert F.loso_ranges(held)["ollama"]["decode"] == pytest.approx((0.5, 1.2), abs=1e-3)
    assert F.wrapper_source_spread(held[:10], "decode") is None  # two sources: too few for a spread


def test_famstack_ollama_rows_ran_on_the_engine_of_their_month():
    """The famstack M1 Max rows (March 2026, no Ollama version: before v0.30.0) ran gemma3 and qwen3moe on
    Ollama's own engine with flash attention on, Llama 3.1 on the llama.cpp runner (auto: on); Macyou's rows name
    Ollama 0.31.2: llama-server. Their decode depth is the prompt Ollama evaluated (prompt_eval_count 16299 at
    gemma3's 4th turn), not the characters-based estimate 8496."""
    data, _ = F.load_training_records()
    fam = [r for r in data["ollama"] if r.source.startswith("famstack") and "M1 Max" in r.source]
    assert {r.wrapper_engine for r in fam if r.geo.window is not None} == {"ollamarunner"}  # gemma3 (sliding window)
    assert {r.wrapper_engine for r in fam} == {"ollamarunner", "llamarunner"}
    assert all(r.flash_attn for r in fam)
    assert max(r.depth for r in fam) == 16299
    assert {r.wrapper_engine for r in data["ollama"] if r.source.startswith("mac-llm-calculator")} == {"llama-server"}


def test_ollama_rows_of_2025_ran_without_flash_attention():
    """DavidRagone's rows (May 2025, no version: v0.6.x) ran qwen3:32b on the llama.cpp runner (qwen3 joined
    Ollama's engine in v0.12.0) and gemma3:27b on Ollama's engine, both without flash attention (default off before
    v0.13.4 / gemma3's listing in v0.12.6); freeletics (Ollama 0.5.9) likewise; AlexHiesch's gemma-4-e2b rows (Ollama
    0.23.1) with it (gemma4 listed from v0.20.4)."""
    data, _ = F.load_training_records()
    rows = {r.label.split()[-1]: r for r in data["ollama"]}
    assert (rows["47904"].wrapper_engine, rows["47904"].flash_attn) == ("llamarunner", False)   # qwen3:32b
    assert (rows["47906"].wrapper_engine, rows["47906"].flash_attn) == ("ollamarunner", False)  # gemma3:27b
    assert not any(r.flash_attn for r in data["ollama"] if r.source.startswith("freeletics"))
    assert all(rows[i].flash_attn for i in ("32236", "32237", "32241", "32242", "32243"))


def test_an_era_without_a_fit_takes_the_nearest_newer_fitted_era():
    """A refit without the only source of the 2023-09 builds: those rows take the 2023-10 factor (builds only got
    faster), not a current build's 1; an era newer than every fitted one stays at 1; a fitted era keeps its own."""
    params = {"era:2023-10": 0.86, "era:2023-11": 0.92}
    assert F.era_factor(params, "2023-09") == 0.86
    assert F.era_factor(params, "2023-08") == 0.86
    assert F.era_factor(params, "2023-11") == 0.92
    assert F.era_factor(params, "2024") == 1.0
    assert F.era_factor({"era:2024": 1.07}, "2023-11") == 1.0  # never faster than a current build


@pytest.mark.parametrize("unfused", ["all", "sliding"])
def test_vectorised_fit_model_matches_planner_throughput_for_mlx_gemma2_on_the_gpu(unfused):
    """mlx-lm gemma2's unfused GPU attention (matmuls at η_c + the score matrix's trips at η_bw) is in the fit's
    vectorised model too, and it is slower than the fused kernel on the same geometry; so is a model whose sliding
    layers alone run mlx's fallback (6 trips, keys capped at the window + chunk) beside fused full layers."""
    import dataclasses

    import numpy as np

    c = profiles.resolve_chip("m3-ultra-80gpu")
    k = F.full_constants(TRUE, {**FIXED_Q, "noflash_attn_factor": 2.0, "matrix_unit_factor": 1.0}, c, "mlx-lm")
    base = _geo(4, 512)
    if unfused == "all":
        g = dataclasses.replace(base, score_heads=4 * 8.0, unfused_full=base.attn_full)
    else:
        g = dataclasses.replace(base, attn_full=base.attn_full / 2, attn_swa=base.attn_full / 2, window=1024,
                                score_heads_swa=2 * 8.0, score_passes=6, unfused_swa=base.attn_full / 2)
    recs = []
    for P in (512, 4096, 32768):
        r = F.FitRecord(runtime="mlx-lm", chip=c, geo=g, phase="prefill", prompt=P, gen=0, depth=0, batch=1,
                        value=1.0, chunk=2048)
        recs.append(F.FitRecord(**{**r.__dict__, "value": F.predict_record(r, k)}))
    fused_geo = dataclasses.replace(g, score_heads=0.0, score_heads_swa=0.0, unfused_full=0.0, unfused_swa=0.0)
    fused = F.predict_record(F.FitRecord(**{**recs[-1].__dict__, "geo": fused_geo}), k)
    assert recs[-1].value < fused
    spec = F.Spec("mlx-lm", free={"eta_bw", "eta_c", "t_layer_s"})
    names = F._param_names(recs, spec)
    theta = np.log([k.eta_c if n.startswith("eta_c") else k.eta_bw if n.startswith("eta_bw") else k.t_layer_s
                    for n in names])
    fixed = {**FIXED_Q, "eta_attn": k.eta_attn}
    pred = F._predict(theta, F._Arrays(recs), F._index(recs, spec, names), F._fixed_values(recs, spec, fixed))
    assert pred == pytest.approx([r.value for r in recs], rel=1e-9)


def test_mlx_dequantization_factors_never_exceed_the_float_matmul():
    """A quantized mlx matmul does the float gemm's work plus the dequantization: q_affine and q_fp4 are capped at 1
    (a fit without float rows is otherwise free to trade η_c for q, as the leave-one-out of mlx-lm BENCHMARKS.md
    once did: q_affine 987, η_c 0.0006)."""
    assert F.UPPER["q_affine"] == 1.0 and F.UPPER["q_fp4"] == 1.0
    assert tp.quant_class("mlx-4bit-g64", "mlx", "affine") == "affine"


def test_mlx_eta_c_is_shared_within_a_gpu_family():
    """MLX_ETA_C_FAMILY: M2 rows use M1's η_c and M4 rows M3's (MLX picks kernels at architecture generation 15 and
    17). Synthetic mlx-lm prefill rows made with η_c 0.5 on an M1 and an M2 chip and 0.8 on an M3 and an M4 chip:
    the fit has one η_c per family, recovers 0.5 and 0.8, and writes the members' values out."""
    chips = [profiles.resolve_chip(i) for i in ("m1-max-32gpu", "m2-max-38gpu", "m3-max-40gpu", "m4-max-40gpu")]
    truth = {"M1": 0.5, "M2": 0.5, "M3": 0.8, "M4": 0.8}
    recs = []
    for i, c in enumerate(chips):
        k = F.full_constants({"eta_bw:max": 0.7, "eta_c:" + c.generation: truth[c.generation], "t_layer_s": 5e-5},
                             {**FIXED_Q, "eta_attn": 0.35, "matrix_unit_factor": 1.0}, c, "mlx-lm")
        for P in (512, 2048, 8192):
            r = F.FitRecord(runtime="mlx-lm", chip=c, geo=_geo(), phase="prefill", prompt=P, gen=0, depth=0,
                            batch=1, value=1.0, chunk=2048, source=f"s{i}")
            recs.append(F.FitRecord(**{**r.__dict__, "value": F.predict_record(r, k)}))
    spec = F.Spec("mlx-lm", eta_c_family=F.MLX_ETA_C_FAMILY, free={"eta_c"})
    assert [n for n in F._param_names(recs, spec) if n.startswith("eta_c")] == ["eta_c:M1", "eta_c:M3"]
    params, _ = F.fit_efficiency_least_squares(recs, spec, fixed={**FIXED_Q, "eta_attn": 0.35, "t_layer_s": 5e-5,
                                                                 "eta_bw:max": 0.7})
    assert params["eta_c:M1"] == pytest.approx(0.5, rel=1e-3) and params["eta_c:M3"] == pytest.approx(0.8, rel=1e-3)
    full = F.mlx_family_eta_c(params, recs)
    assert full["eta_c:M2"] == full["eta_c:M1"] and full["eta_c:M4"] == full["eta_c:M3"]


# Huber's β for c = 1.345: Φ(1.345) = 0.9106874, φ(1.345) = 0.1614676;
# (2 · 0.9106874 − 1) − 2 · 1.345 · 0.1614676 + 2 · 1.345² · (1 − 0.9106874) = 0.821375 − 0.434348 + 0.323138
BETA = 0.7101645


def test_huber_scale_clips_one_extreme_source_and_stops_there():
    """Huber's proposal 2 scale about the median (calibration.fit.huber_scale), c = 1.345, β = 0.7101645.
    - No value clipped: s² = Σ d² / ((k − 1) β). [0, 0.2, 0.4]: median 0.2, Σ d² = 0.08, s = √(0.08 / 1.420329)
      = 0.237329; c · s = 0.3192 > 0.2, so indeed nothing is clipped (the sample sd 0.2 divided by √β).
    - Five source offsets, one extreme: [−0.2, −0.1, 0, 0.1, 1.0], median 0. With 1.0 clipped:
      s² = (0.04 + 0.01 + 0 + 0.01) / (4β − c²) = 0.06 / (2.840658 − 1.809025) = 0.058160, s = 0.241164; c · s =
      0.3244: 1.0 lies beyond (clipped), 0.2 within. The sample sd would be 0.4827.
    - The bound: for the fifth offset e anywhere ≥ 0.1 (the median stays 0), s² = (0.06 + e²) / (4β) while e is
      within c · s, which reaches 0.06 / (4β − c²) exactly when e = c · s and stays there: one extreme source moves
      the scale by at most to 0.241164, however far it lies (the sample sd at e = 1000 is 447)."""
    import numpy as np

    beta = F.HUBER_SCALE_BETA  # the module computes it from NormalDist
    assert beta == pytest.approx(0.7101645, abs=1e-7)
    assert F.huber_scale([0.0, 0.2, 0.4]) == pytest.approx(0.237329, abs=1e-6)
    base = [-0.2, -0.1, 0.0, 0.1]
    assert F.huber_scale(base + [1.0]) == pytest.approx(0.241164, abs=1e-6)
    assert F.huber_scale(base + [1000.0]) == pytest.approx(0.241164, abs=1e-6)
    sweep = [F.huber_scale(base + [e]) for e in np.concatenate([np.linspace(0.1, 2.0, 191), np.logspace(0.5, 4, 30)])]
    assert max(sweep) == pytest.approx(0.241164, abs=1e-6)
    assert all(s <= 0.241164 + 1e-6 for s in sweep)
    assert F.huber_scale(base + [0.2]) == pytest.approx((0.1 / (4 * BETA)) ** 0.5, abs=1e-6)  # nothing clipped
    assert float(np.std(base + [1000.0], ddof=1)) > 400
    assert F.huber_scale([0.3]) == 0.0 and F.huber_scale([0.1, 0.1, 0.1]) == 0.0


def _between_held(runtime="mlx-lm", sources="abcde", depth=0):
    """Held-out decode residuals log(measured / predicted) of five sources: a = [−0.3, −0.1], b = [−0.1] × 2,
    c = [0] × 2, d = [0.1] × 2, e = [1.0] × 2 (one source at 2.7 × the prediction, as tolkin's M1 Max at 1/2.1)."""
    import math

    chip = profiles.resolve_chip("m3-max-40gpu")
    rows = {"a": [-0.3, -0.1], "b": [-0.1, -0.1], "c": [0.0, 0.0], "d": [0.1, 0.1], "e": [1.0, 1.0]}

    def rec(x, src):
        return (runtime, F.FitRecord(runtime=runtime, chip=chip, geo=_geo(), phase="decode", prompt=0, gen=32,
                                     depth=depth, batch=1, value=math.exp(x), source=src), 1.0)
    return [rec(x, s) for s in sources for x in rows[s]]


def test_between_source_range_with_one_extreme_source_by_hand():
    """_between_held's five sources. Source medians −0.2, −0.1, 0, 0.1, 1.0: centre (their median) 0, τ = 0.241164
    (huber_scale, 1.0 clipped); within-source mean square (0.01 + 0 + 0 + 0 + 0) / 5 = 0.002.
    sd = √(τ² · (1 + 1/5) + 0.002) = √(0.069792 + 0.002) = 0.267941; t(90 %, 5 − 2 = 3 df) = 1.637744 (Higgins et
    al. 2009's k − 2; the normal's 1.281552 would give ±0.343380); t · sd = 0.438819: range exp(±0.438819) =
    (0.6448, 1.5509). With the sample variance of the medians (0.4827²) it would be exp(±0.8691) = (0.419, 2.385):
    the one extreme source widening every other source's range.
    The same rule for every runtime: llama.cpp or Ollama residuals give the same range; LM Studio's MLX engine
    shares mlx-lm's table. With four sources (fewer than MIN_BETWEEN_SOURCES) there is no between-source table
    and loso_ranges keeps its pooled fallback."""
    assert F.MIN_BETWEEN_SOURCES == 5
    held = _between_held()
    c, lo, hi = F.between_source_interval([(math.log(r.value), r.source) for _, r, _ in held])
    assert (c, lo, hi) == pytest.approx((0.0, -0.438819, 0.438819), abs=1e-5)
    table = F.loso_ranges(held)
    assert table["mlx-lm"]["decode"] == pytest.approx((0.645, 1.551), abs=1e-3)
    assert table["lmstudio-mlx"]["decode"] == table["mlx-lm"]["decode"]
    for rt in ("llama.cpp", "ollama"):
        assert F.loso_ranges(_between_held(rt))[rt]["decode"] == pytest.approx((0.645, 1.551), abs=1e-3)
    assert F.between_source_ranges(_between_held(sources="abcd"), F.MLX_ENGINE_RUNTIMES) == {}
    assert F.between_source_ranges(held, ("llama.cpp",)) == {}  # another runtime's residuals


def test_a_regime_seen_by_few_sources_takes_its_phases_between_source_range():
    """_between_held's five sources at depth 0 (regime decode) and source f with two rows at a deep context
    (decode_deep) at log residual 0 (its median 0, no within scatter). decode_deep has one source (< 5): its range
    is the phase's, six sources: medians −0.2, −0.1, 0, 0, 0.1, 1.0, centre 0; all within c · s but 1.0:
    s² = (0.04 + 0.01 + 0.01) / (5β − c²) = 0.06 / (3.550823 − 1.809025) = 0.034447, τ² (1 + 1/6) = 0.040188;
    within 0.01 / 6 = 0.001667; sd = √0.041855 = 0.204585, t(90 %, 4 df) = 1.533206, t · sd = 0.313671 ->
    (0.7308, 1.3684). The decode regime (five sources, f's deep rows not among them) keeps its own (0.645, 1.551)."""
    deep = _between_held(sources="c", depth=tp.DEEP_CONTEXT)
    deep = [(rt, F.FitRecord(**{**r.__dict__, "source": "f"}), p) for rt, r, p in deep]
    table = F.between_source_ranges(_between_held() + deep, F.MLX_ENGINE_RUNTIMES)
    assert table["decode"] == pytest.approx((0.645, 1.551), abs=1e-3)
    assert table["decode_deep"] == pytest.approx((0.731, 1.368), abs=1e-3)
    assert table["decode_batched"] == table["decode_deep"]  # no batched rows: the phase's range
    assert "prefill" not in table


def test_a_wrapper_phase_measured_by_one_source_keeps_the_engines_speed():
    """The MIN_FACTOR_SOURCES rule holds for every wrapper, not only Ollama's engines: a shipped wrapper profile
    carries a decode (prefill) factor only when at least that many source groups measured the wrapper's current
    engine on that phase (LM Studio's llama.cpp engine: one bug report, so no factor)."""
    data, _ = F.load_training_records()
    for rt in F.WRAPPERS:
        recs = data.get(rt, [])
        engine = F.ollama_engines()["current_engine"] if any(r.wrapper_engine for r in recs) else ""
        k = profiles.load_speed_constants(profiles.resolve_chip("m3-max-40gpu"), rt).constants
        for phase in ("decode", "prefill"):
            n_src = len({r.source for r in recs if r.phase == phase and r.wrapper_engine == engine})
            if n_src < F.MIN_FACTOR_SOURCES:
                assert (getattr(k, f"{phase}_factor") or 1.0) == 1.0, (rt, phase, n_src)


def test_vectorised_fit_model_matches_planner_throughput_with_the_vector_attention_kernel():
    """eta_attn_decode divides the decode attention FLOPs only where llama.cpp runs kernel_flash_attn_ext_vec
    (throughput.Roofline.eta_attn_decode): flash attention on and fewer than 20 queries per KV stream (one per
    sequence with per-sequence streams, the whole batch with the unified cache of 2024 builds). The fit's
    vectorised model agrees with the planner on every case, and the fit recovers it from a cache whose attention
    FLOPs dominate (absorbed-MLA-like: 1e6 MACs per key, 1000 B per key)."""
    import dataclasses

    import numpy as np

    true = {**TRUE, "eta_attn_decode": 0.25}
    c = profiles.resolve_chip("m2-ultra-76gpu")
    fixed = {**FIXED_Q, "noflash_attn_factor": 2.0, "noflash_kv_factor": 3.0, "matrix_unit_factor": 1.0}
    mla = dataclasses.replace(_geo(16, 2048), kv_full=1000.0 * 16, attn_full=16 * 20 * 1088.0)
    recs = []
    for g, era, fa, B, D in itertools.product((_geo(16, 2048), mla), ("current", "2024"), (True, False),
                                               (1, 16, 32), (0, 8192)):
        r = F.FitRecord(runtime="llama.cpp", chip=c, geo=g, phase="decode", prompt=0, gen=32, depth=D, batch=B,
                        value=1.0, era=era, flash_attn=fa)
        k = F.held_out_constants({"llama.cpp": (true, fixed, {})}, "llama.cpp", r)
        recs.append(F.FitRecord(**{**r.__dict__, "value": F.predict_record(r, k)}))
    for P, D in itertools.product((512, 2048), (0, 16384)):
        r = F.FitRecord(runtime="llama.cpp", chip=c, geo=mla, phase="prefill", prompt=P, gen=0, depth=D, batch=1,
                        value=1.0)
        recs.append(F.FitRecord(**{**r.__dict__, "value": F.predict_record(r, F.full_constants(true, fixed, c))}))
    A = F._Arrays(recs)
    assert A.vec.any() and not A.vec.all()
    # unified cache, 32 queries: the tiled kernel, as fast as with eta_attn_decode = 1
    uni = next(r for r in recs if r.era == "2024" and r.flash_attn and r.batch == 32 and r.depth and r.geo is mla)
    k1 = F.held_out_constants({"llama.cpp": ({**true, "eta_attn_decode": 1.0}, fixed, {})}, "llama.cpp", uni)
    assert F.predict_record(uni, k1) == pytest.approx(uni.value, rel=1e-12)
    spec = F.Spec("llama.cpp", free={"eta_bw", "eta_c", "eta_attn", "eta_c_decode", "t_layer_s", "eta_attn_decode"})
    names = F._param_names(recs, spec)
    assert "eta_attn_decode" in names
    theta = np.log([true[n] for n in names])
    pred = F._predict(theta, A, F._index(recs, spec, names), F._fixed_values(recs, spec, fixed))
    assert pred == pytest.approx([r.value for r in recs], rel=1e-9)
    params, _ = F.fit_efficiency_least_squares(recs, spec, fixed=fixed)
    assert params["eta_attn_decode"] == pytest.approx(0.25, rel=0.03)
    assert F.full_constants(params, fixed, c).eta_attn_decode == pytest.approx(0.25, rel=0.03)


# --------------------------------------------------------------------------- the typical source: a robust centre
def _one_parameter_sources(etas: dict[str, float], rows: int = 10) -> list[F.FitRecord]:
    """Decode at B = 1, depth 0 on one M2 Max: rate = η_bw · BW / bytes, so log rate is linear in log η_bw; each
    source measures its own η on ``rows`` identical rows, every source weighted once."""
    g, c = _geo(), profiles.resolve_chip("m2-max-38gpu")
    return F.source_weights([F.FitRecord(runtime="llama.cpp", chip=c, geo=g, phase="decode", prompt=0, gen=1,
                                         depth=0, batch=1, value=eta * tp.bandwidth(c) / g.dense_bytes, source=s,
                                         label=f"{s}{i}") for s, eta in etas.items() for i in range(rows)])


def _fit_one_parameter(recs):
    spec = F.Spec("llama.cpp", tier_eta_bw=False, free={"eta_bw"})
    orig = F.BASE_PRIORS["t_layer_s"]
    try:
        F.BASE_PRIORS["t_layer_s"] = (0.0, 2.0)  # not free: no per-layer cost
        return F.fit_source_robust(recs, lambda rs, x0: F.fit_efficiency_least_squares(
            rs, spec, start=x0[1] if x0 else None))
    finally:
        F.BASE_PRIORS["t_layer_s"] = orig


def test_huber_centre_of_three_sources_with_offsets_0_0_1():
    """Sources A and B measure η 0.7, C e^-1 · 0.7 (log offset 1.0). With t = log(fitted η / 0.7), the offsets
    log(pred / measured) are t (A, B) and t + 1 (C), and each fit is Σ h_g (t + o_g) = 0 (the prior, σ 1 against
    30 rows of σ 0.05, is negligible). Plain: t = -1/3. Huber weights c / |m|, c = 0.15:
    A, B 0.15 / (1/3) = 0.45, C 0.15 / (2/3) = 0.225 -> t = -0.225 / 1.125 = -0.2;
    A, B 0.75, C 0.15 / 0.8 = 0.1875 -> t = -0.1875 / 1.6875 = -0.111111;
    A, B within c: 1, C 0.15 / 0.888889 = 0.16875 -> t = -0.16875 / 2.16875 = -0.077810 after 3 reweightings
    (the fixed point, 2 t + c = 0, is t = -0.075; least squares stays at -1/3, 4.3x further from A and B)."""
    import math

    assert F.SOURCE_HUBER_C == F.SCOPE_SOURCE_SIGMA == 0.15 and F.ROBUST_ITERATIONS == 3
    params, diag = _fit_one_parameter(_one_parameter_sources({"A": 0.7, "B": 0.7, "C": 0.7 / math.e}))
    assert math.log(params["eta_bw:*"] / 0.7) == pytest.approx(-0.077810, abs=2e-4)
    assert diag["huber"][("A", "decode")] == diag["huber"][("B", "decode")] == 1.0
    assert diag["huber"][("C", "decode")] == pytest.approx(0.16875, rel=1e-3)


def test_sources_within_c_keep_their_weight_and_the_plain_fit():
    """Offsets 0, 0.1, 0.2 in log: the plain centre 0.1 leaves every source within c = 0.15 of it, so every Huber
    weight is 1 and the robust fit is the least-squares one, exp(mean) · 0.5."""
    import math

    etas = {"A": 0.5, "B": 0.5 * math.exp(0.1), "C": 0.5 * math.exp(0.2)}
    params, diag = _fit_one_parameter(_one_parameter_sources(etas))
    assert set(diag["huber"].values()) == {1.0}
    assert params["eta_bw:*"] == pytest.approx(0.5 * math.exp(0.1), rel=1e-3)


def test_huber_weights_keep_the_phase_sum():
    """One row each, offsets log(pred / measured) 0.1 (within c: weight 1) and -0.3 (0.15 / 0.3 = 0.5); the weights
    1 and 0.5 are rescaled to keep their sum 2: 4/3 and 2/3. The input records are left as they were."""
    import math

    recs = _one_parameter_sources({"A": 1.0, "B": 1.0}, rows=1)
    pred = [recs[0].value * math.exp(0.1), recs[1].value * math.exp(-0.3)]
    out, h = F.huber_source_weights(recs, pred)
    assert h == {("A", "decode"): 1.0, ("B", "decode"): pytest.approx(0.5)}
    assert [r.weight for r in out] == pytest.approx([4 / 3, 2 / 3])
    assert [r.weight for r in recs] == [1.0, 1.0]
    assert F.huber_weight(0.15) == 1.0 and F.huber_weight(-0.6) == pytest.approx(0.25)


def test_robust_fit_is_deterministic():
    """The same records give the same parameters and weights to the last bit (no random start, no ordering by
    hash): the shipped profiles must be reproducible."""
    import math

    recs = _one_parameter_sources({"A": 0.7, "B": 0.6, "C": 0.7 / math.e, "D": 0.9})
    p1, d1 = _fit_one_parameter(recs)
    p2, d2 = _fit_one_parameter(list(recs))
    assert p1 == p2 and d1["huber"] == d2["huber"]
