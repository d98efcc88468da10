"""plan buy core (planner/buy.py): scenarios whose answers follow from the models."""

import pytest

from planner import profiles
from planner.advice import NoFitError, TargetsUnreachableError
from planner.buy import BudgetError, buy
from planner.search import base_memory_model, speed_at, speed_available, speed_model, with_kv
from planner.workload import Targets, custom_workload

needs_speed = pytest.mark.skipif(not speed_available(), reason="planner/throughput.py not available")


def _no_targets(wl):
    return wl.model_copy(update={"targets": Targets()})


def test_671b_moe_only_large_ultras():
    # DeepSeek-V3 has 671 B parameters: even at ~4.3 bits/weight (the "small" quality cost floor) the weights are
    # ~360 GiB. Only Macs with 512 GB (M3 Ultra Mac Studio) have a GPU limit that large (3/4 of 512 = 384 GiB,
    # raisable to ~460 GiB); 256 GB and below cannot hold the weights at any quant within the quality floor.
    r = buy(["deepseek-v3"], _no_targets(custom_workload("chat")))
    assert r.per_mac, "some Mac must fit"
    for row in r.per_mac:
        assert row.ram_gb >= 512 and "Ultra" in row.chip, row
        assert row.memory_bytes > 300 * 2**30                 # the memory is the reason
    assert r.cheapest.ram_gb == 512


def test_671b_with_a_low_budget_has_no_fastest_within_budget():
    r = buy(["deepseek-v3"], _no_targets(custom_workload("chat")), budget_usd=5000)
    assert r.fastest_within_budget is None and any("within $5,000" in n for n in r.notes)


def test_two_models_resident_together_need_more_memory():
    one = buy(["llama-3.1-8b"], _no_targets(custom_workload("chat")))
    two = buy(["llama-3.1-8b", "qwen2.5-32b"], _no_targets(custom_workload("chat")))
    assert two.cheapest.price_usd >= one.cheapest.price_usd
    assert two.cheapest.memory_bytes > one.cheapest.memory_bytes


def test_rumoured_chips_excluded_unless_asked():
    r = buy(["llama-3.1-8b"], _no_targets(custom_workload("chat")))
    assert all("rumoured" not in " ".join(x.flags) for x in r.per_mac)
    assert any("rumoured" in n for n in r.notes)


def test_budget_below_every_mac():
    with pytest.raises(BudgetError, match="below every Mac"):
        buy(["llama-3.1-8b"], custom_workload("chat"), budget_usd=100)


def test_no_mac_fits():
    # Llama-3.1-405B (≥ 4 bits: ~220 GiB) and DeepSeek-V3 (~360 GiB) resident together need ~580 GiB of weights,
    # above the ~460 GiB a raised limit allows on the largest (512 GB) Mac — even with one slot
    with pytest.raises(NoFitError, match="fits no Mac"):
        buy(["llama-3.1-405b", "deepseek-v3"], _no_targets(custom_workload("chat")))


@needs_speed
def test_impossible_target_names_the_best():
    wl = custom_workload("chat", users=4, min_tok_s=200)
    with pytest.raises(TargetsUnreachableError, match=r"no Mac meets 200 tok/s per user.*the best reaches"):
        buy(["llama-3.3-70b"], wl)


@needs_speed
def test_vectorised_sweep_equals_scalar_speed_model():
    # the numpy sweep must reproduce planner/throughput.py's scalar estimate for the chosen rows
    wl = custom_workload("chat", users=4, context=8192, min_tok_s=1, max_ttft=600)
    r = buy(["llama-3.1-8b"], wl)
    for row in r.per_mac[::7]:
        mac = next(m for m in profiles.all_macs() if m.id == row.mac)
        mm = with_kv(base_memory_model("llama-3.1-8b", row.runtime, row.quant), row.kv_type)
        q = profiles.load_quant(row.quant, mm.runtime.weight_format)
        sp = speed_at(speed_model(mm, profiles.resolve_chip(mac.chip), q), wl.prompt_tokens.p90_tokens,
                      750, row.slots, 4, True)
        assert row.decode_tok_s_per_user == pytest.approx(sp.decode_tok_s_per_user, rel=1e-6)
        assert row.ttft_s == pytest.approx(sp.ttft_s, rel=1e-6)
        assert row.time_per_request_s == pytest.approx(sp.time_per_request_s, rel=1e-6)


@needs_speed
def test_pareto_is_non_dominated_and_picks_are_consistent():
    r = buy(["llama-3.1-8b"], custom_workload("chat", users=2), budget_usd=4000)
    for a in r.pareto:
        for b in r.pareto:
            if a is not b:
                assert not (b.price_usd <= a.price_usd and b.decode_tok_s_per_user >= a.decode_tok_s_per_user
                            and b.ttft_s <= a.ttft_s and (b.price_usd, b.decode_tok_s_per_user, b.ttft_s)
                            != (a.price_usd, a.decode_tok_s_per_user, a.ttft_s))
    meeting = [x for x in r.per_mac if x.meets_targets]
    assert r.cheapest.price_usd == min(x.price_usd for x in meeting)
    assert r.fastest_within_budget.price_usd <= 4000
    assert r.best_value.tok_s_per_kusd == max(x.tok_s_per_kusd for x in meeting)
    assert all(x.binding in ("memory", "bandwidth", "compute") for x in r.per_mac)
    laptops = [x for x in r.per_mac if x.form_factor == "laptop"]
    assert laptops and all(any("throttle" in f for f in x.flags) for x in laptops)
