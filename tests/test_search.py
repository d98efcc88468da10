"""planner.search's speed adapter: the likely ranges travel with the per-user decode and prefill rates."""

from __future__ import annotations

import pytest

from planner import profiles
from planner.search import base_memory_model, speed_at, speed_model


def _rf():
    mm = base_memory_model("llama-3.1-8b", "llama.cpp", "Q4_K_M")
    return speed_model(mm, profiles.resolve_chip("m3-max-40gpu"), profiles.load_quant("Q4_K_M", "gguf"))


def test_speed_carries_ranges_around_the_point():
    sp = speed_at(_rf(), 1024, 256, slots=1, users=1, staggered=True)
    lo, hi = sp.decode_tok_s_range
    assert lo < sp.decode_tok_s_per_user < hi
    lo, hi = sp.prefill_tok_s_range
    assert lo < sp.prefill_tok_s < hi


def test_queueing_scales_the_range_with_the_rate():
    """3 users on 1 slot: each sees a third of the rate, and the range shrinks by the same factor."""
    one = speed_at(_rf(), 1024, 256, slots=1, users=1, staggered=True)
    three = speed_at(_rf(), 1024, 256, slots=1, users=3, staggered=True)
    assert three.decode_tok_s_per_user == pytest.approx(one.decode_tok_s_per_user / 3)
    assert three.decode_tok_s_range == pytest.approx(tuple(x / 3 for x in one.decode_tok_s_range))


def test_the_smallest_need_searches_the_kv_types_and_keeps_the_margin():
    """search.smallest_need: the least weights + KV + buffers, with the runtime's margin, over the memory models given
    at every KV type their runtime advises (q4_0 below q8_0 below f16 at one quant); an asked KV type only that."""
    from planner.search import smallest_need, with_kv
    from planner.units import MiB

    mm = base_memory_model("llama-3.1-8b", "llama.cpp", "Q4_K_M")
    n = smallest_need([mm], 8192, 1)
    q4 = with_kv(mm, "q4_0")
    assert q4 is not None and (n.runtime, n.quant, n.kv_type) == ("llama.cpp", "Q4_K_M", "q4_0")
    assert n.memory_bytes == q4.total(8192, 1) < mm.total(8192, 1)
    assert n.margin_bytes == int(mm.runtime.headroom_mib * MiB) > 0
    asked = smallest_need([mm], 8192, 1, kv_type="f16")
    assert (asked.kv_type, asked.memory_bytes) == ("f16", mm.total(8192, 1))
    assert smallest_need([], 8192, 1) is None
