"""Speculative decoding (planner/draft.py): the draft's memory, tokens per step, speed-up and its ceiling."""

from dataclasses import dataclass

import pytest

from planner import capacity, profiles
from planner.draft import draft_plan, speculative_speed, tokens_per_step
from planner.errors import InputError
from planner.plan import PlanRequest, plan
from planner.search import base_memory_model
from planner.units import MiB


@dataclass
class FakeRoofline:
    """step_time(b) = t1 + dt·(b - 1); step_bytes and bw fixed: numbers a hand derivation can follow."""

    t1: float
    dt: float
    bytes_: float
    bw: float = 400e9

    def step_time(self, batch, depth):
        return self.t1 + self.dt * (batch - 1)

    def step_bytes(self, batch, depth):
        return self.bytes_


@pytest.mark.parametrize("alpha,g,expected", [(0.6, 3, 2.176), (0.88, 3, 3.335872), (0.5, 1, 1.5)])
def test_tokens_per_step(alpha, g, expected):
    # (1 - a^(g+1)) / (1 - a): 0.6, 3 -> (1 - 0.1296) / 0.4 = 2.176; 0.5, 1 -> 0.75 / 0.5 = 1.5
    assert tokens_per_step(alpha, g) == pytest.approx(expected, rel=1e-9)


def test_speed_up_by_hand():
    # main 0.1 s per token (+0.01 s per extra verified position), draft 0.02 s; a = 0.8, g = 3:
    # E = (1 - 0.8^4) / 0.2 = 2.952 tokens per 3 × 0.02 + 0.13 = 0.19 s -> 15.537 tok/s against 10 without
    main, draft = FakeRoofline(0.1, 0.01, 40e9), FakeRoofline(0.02, 0.0, 4e9)
    dec, base, ceiling = speculative_speed(main, draft, 0.8, 3, 0)
    assert dec == pytest.approx(2.952 / 0.19, rel=1e-6) and base == pytest.approx(10)
    assert ceiling == pytest.approx(4 * 400e9 / (40e9 + 3 * 4e9))  # 30.77 tok/s


def test_never_above_the_bandwidth_of_both_models_reads():
    # a = 0.99, g = 8, an almost free draft step but 10 GB per draft read: E = 8.65 tokens per 0.178 s = 48.6
    # tok/s, above 9 × 400e9 / (40e9 + 8 × 10e9) = 30 tok/s: clamped there
    main, draft = FakeRoofline(0.1, 0.01, 40e9), FakeRoofline(0.001, 0.0, 10e9)
    dec, _, ceiling = speculative_speed(main, draft, 0.99, 8, 0)
    assert ceiling == pytest.approx(30.0) and dec == pytest.approx(30.0)


def test_draft_memory_is_the_draft_at_the_main_context_and_slots():
    # llama-3.2-1b f16 KV: 16 layers × 2 × 8 KV heads × 64 × 2 B = 32,768 B per token; llama-server gives the draft
    # the main -c (8192 × 2 slots = 16,384 cells): 512 MiB
    mm = base_memory_model("llama-3.1-8b", "llama.cpp", "Q4_K_M")
    wired = capacity.wired_limit(32, profiles.load_macos("15"))
    d = draft_plan(mm, mm.total(8192, 2), "llama-3.2-1b", wired, 8192, 2, acceptance=0.7)
    assert d.kv_bytes == 512 * MiB
    assert d.total_bytes == mm.total(8192, 2) + d.weights_bytes + d.kv_bytes + d.buffer_bytes
    assert d.acceptance == 0.7 and d.acceptance_source == "[[draft_acceptance]]" and d.draft_tokens == 3


def test_documented_pair_and_default_acceptance():
    mm = base_memory_model("llama-3.3-70b", "llama.cpp", "Q4_K_M")
    wired = capacity.wired_limit(64, profiles.load_macos("15"))
    assert draft_plan(mm, mm.total(4096), "llama-3.1-8b", wired, 4096, 1).acceptance == 0.88
    d = draft_plan(mm, mm.total(4096), "llama-3.2-1b", wired, 4096, 1)
    assert d.acceptance == 0.6 and "2211.17192" in d.acceptance_source


def test_draft_with_another_tokenizer_is_refused():
    mm = base_memory_model("llama-3.3-70b", "llama.cpp", "Q4_K_M")
    wired = capacity.wired_limit(64, profiles.load_macos("15"))
    with pytest.raises(InputError, match="draft_model qwen3-0.6b: vocabulary"):
        draft_plan(mm, mm.total(4096), "qwen3-0.6b", wired, 4096, 1)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_non_finite_draft_acceptance_is_said_to_be_one(bad):
    # NaN failed only `< 1` and was told "Input should be less than 1"
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="finite number"):
        PlanRequest(model="qwen3-8b", ram=64, draft_model="qwen3-0.6b", draft_acceptance=bad)


@pytest.mark.parametrize("given", [{"draft_tokens": 5}, {"draft_acceptance": 0.5}])
def test_draft_settings_without_a_draft_are_refused_not_ignored(given):
    # `plan --draft-tokens 5` with no --draft-model answered as if it were not given (as --image-size without --images
    # is refused)
    with pytest.raises(InputError, match=r"needs \[\[draft_model\]\]|needs draft_model"):
        plan(PlanRequest(model="qwen3-8b", ram=64, **given))


def test_plan_with_draft_has_recipes_for_both_runtimes():
    p = plan(PlanRequest(model="llama-3.3-70b", chip="M3 Max", gpu_cores=40, ram=64, quants=["Q4_K_M", "4bit"],
                         draft_model="llama-3.1-8b"))
    by_rt = {o.runtime: o for o in p.options}
    assert "-md Llama-3.1-8B-Instruct-Q4_K_M.gguf" in by_rt["llama.cpp"].recipe.server
    assert "--draft-max 3" in by_rt["llama.cpp"].recipe.server
    assert "--draft-model mlx-community/Llama-3.1-8B-Instruct-4bit" in by_rt["mlx-lm"].recipe.server
    for o in p.options:
        d = o.draft
        assert d.decode_tok_s <= d.ceiling_tok_s and d.speedup > 1  # a = 0.88 with an 8B draft pays
