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
    lo, hi = sp.decode_range
    assert lo < sp.decode_tok_s_per_user < hi
    lo, hi = sp.prefill_range
    assert lo < sp.prefill_tok_s < hi


def test_queueing_scales_the_range_with_the_rate():
    """3 users on 1 slot: each sees a third of the rate, and the range shrinks by the same factor."""
    one = speed_at(_rf(), 1024, 256, slots=1, users=1, staggered=True)
    three = speed_at(_rf(), 1024, 256, slots=1, users=3, staggered=True)
    assert three.decode_tok_s_per_user == pytest.approx(one.decode_tok_s_per_user / 3)
    assert three.decode_range == pytest.approx(tuple(x / 3 for x in one.decode_range))


def test_an_interactive_ttft_is_one_prompts_prefill_never_above_the_batch_ttft():
    """Rule (issue 34): staggered (interactive) requests wait for one prompt's prefill, a batch for the whole
    batch's; so with slots = users (no queue) the interactive TTFT is the one-sequence prefill and at most the batch
    TTFT. (The two branches swapped turned 589 ms into 2.3 s for a 4-user chat.)"""
    from planner import throughput as tp

    rf = _rf()
    for prompt, users in ((1500, 4), (4000, 8), (500, 2)):
        one = tp.estimate(rf, prompt, 1, 0, 1, knee=False).ttft_s
        inter = speed_at(rf, prompt, 200, users, users, staggered=True)
        batch = speed_at(rf, prompt, 200, users, users, staggered=False)
        assert inter.ttft_s == pytest.approx(one)
        assert inter.ttft_s < batch.ttft_s
