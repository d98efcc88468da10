"""Speed invariants of planner/throughput.py (hypothesis): the roofline can never beat physics, batching never
lowers aggregate decode before the compute knee, and never raises what one sequence sees."""

from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from planner import memory as M
from planner import profiles as P
from planner.errors import InputError
from planner.plan import DEFAULT_QUANTS

tp = pytest.importorskip("planner.throughput")

EXAMPLES = 300
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
TABLE = P.ggml_types()
CHIPS = [c for c in P.all_chips() if c.memory_bandwidth_gb_s]
REFS = P.all_chips()
COMBOS = [(m, r, q) for m in P.model_ids() for r in ("llama.cpp", "mlx-lm", "ollama")
          for q in DEFAULT_QUANTS[P.load_runtime(r).weight_format]]


@functools.cache
def _mm(model, runtime, quant):
    q = P.load_quant(quant)
    return M.memory_model(P.load_model(model), P.load_runtime(runtime), q, TABLE), q


@functools.cache
def _res(chip_id, runtime):
    chip = next(c for c in CHIPS if c.id == chip_id)
    return P.load_speed_constants(chip, runtime)


def _predict(combo, chip, prompt, gen, depth, batch):
    m, q = _mm(*combo)
    try:
        res = _res(chip.id, m.runtime.id)
    except InputError:
        assume(False)
    return tp.predict(m, chip, res, q.kind, q.mode, prompt, gen, depth, batch, REFS)


combos = st.sampled_from(COMBOS)
chips = st.sampled_from(CHIPS)
prompts = st.integers(1, 32768)
depths = st.integers(0, 32768)


@SETTINGS
@given(combos, chips, prompts, depths, st.integers(1, 256))
def test_decode_never_beats_bandwidth(combo, chip, prompt, depth, batch):
    e = _predict(combo, chip, prompt, 64, depth, batch)
    # bytes_per_step: everything one decode step of the whole batch reads (weights touched + KV)
    assert e.decode_ceiling_tok_s == pytest.approx(e.bandwidth_bytes_s / e.bytes_per_step, rel=1e-9)
    assert e.decode_tok_s_per_seq <= e.decode_ceiling_tok_s * (1 + 1e-9)
    assert e.decode_tok_s <= batch * e.decode_ceiling_tok_s * (1 + 1e-9)
    assert e.decode_tok_s > 0 and e.prefill_tok_s > 0 and e.ttft_s > 0


@SETTINGS
@given(combos, chips, depths, st.integers(1, 512), st.integers(1, 512))
def test_per_sequence_decode_never_rises_with_batch(combo, chip, depth, b1, b2):
    lo, hi = sorted((b1, b2))
    e_lo = _predict(combo, chip, 512, 64, depth, lo)
    e_hi = _predict(combo, chip, 512, 64, depth, hi)
    assert e_hi.decode_tok_s_per_seq <= e_lo.decode_tok_s_per_seq * (1 + 1e-9)


@SETTINGS
@given(combos, chips, depths, st.integers(1, 512), st.integers(1, 512))
@example(("deepseek-v3", "llama.cpp", "Q3_K_M"), next(c for c in CHIPS if c.id == "m1-7gpu"), 0, 17, 33)
def test_aggregate_decode_never_falls_before_the_knee(combo, chip, depth, b1, b2):
    lo, hi = sorted((b1, b2))
    e_lo = _predict(combo, chip, 512, 64, depth, lo)
    e_hi = _predict(combo, chip, 512, 64, depth, hi)
    knee = e_lo.knee_batch
    if knee is None or hi <= knee:
        assert e_hi.decode_tok_s >= e_lo.decode_tok_s * (1 - 1e-9)


@SETTINGS
@given(combos, chips, st.integers(1, 256))
def test_speed_round_trips_through_json(combo, chip, batch):
    e = _predict(combo, chip, 1024, 128, 0, batch)
    assert type(e).model_validate_json(e.model_dump_json()) == e
