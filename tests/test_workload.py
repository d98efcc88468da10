"""Workload presets and custom workloads (planner/workload.py)."""

import pytest

from planner.errors import InputError, PlannerError, UnknownProfileError
from planner.workload import (
    Length,
    WorkloadProfile,
    custom_workload,
    load_workload,
    parse_length,
    shrink_lengths,
    workload_ids,
)


def test_presets_load_and_validate():
    # every preset in profiles/workloads validates against WorkloadProfile and names itself
    assert set(workload_ids()) >= {"chat", "rag", "agent", "batch", "code"}
    for w in workload_ids():
        assert load_workload(w).id == w


def test_agent_is_prefill_heavy_by_construction():
    # the agent loop: a 12K prompt every turn and ~300 tokens out
    a = load_workload("agent")
    assert a.prompt_tokens.p90_tokens == 12288 and a.gen_tokens.mean == 300
    assert a.context >= a.request_tokens


def test_length_forms():
    assert Length(value=100).mean == 100
    d = Length(dist=[(1000, 3), (9000, 1)])           # weights normalised: mean 0.75·1000 + 0.25·9000
    assert d.mean == pytest.approx(3000) and d.p90_tokens == 9000 and d.max_tokens == 9000
    p = Length(p50=8192, p90=16384)
    assert p.p90_tokens == 16384 and p.max_tokens == 16384
    with pytest.raises(ValueError):
        Length(value=1, p50=2, p90=3)                   # exactly one form


def test_parse_length_cli_forms():
    assert parse_length("12000", "--prompt").value == 12000
    assert parse_length("1024:0.6,8192:0.4", "--prompt").dist == [(1024, 0.6), (8192, 0.4)]
    assert parse_length("p50=10,p90=20", "--gen").p90 == 20
    with pytest.raises(InputError):
        parse_length("lots", "--prompt")


def test_custom_overrides_preset():
    w = custom_workload("rag", users=3, min_tok_s=12, max_ttft=5, prompt="4096")
    assert w.users == 3 and w.targets.min_tok_s_per_user == 12 and w.targets.max_ttft_s == 5
    assert w.prompt_tokens.value == 4096


def _validated(base, **upd):
    """The slow road every custom workload once took: the preset dumped, overridden and validated."""
    wl = load_workload(base)
    return WorkloadProfile.model_validate({**wl.model_dump(), **upd})


@pytest.mark.parametrize("base", ["chat", "rag", "agent"])
@pytest.mark.parametrize("users, context, share", [(None, None, None), (1, 8192, 0.0), (4096, 10_000_000, 0.99),
                                                    (3, 1, 0.5), (2, 4096, None)])
def test_custom_workload_without_new_lengths_is_the_validated_one(base, users, context, share):
    # users, context and prompt-cache share within their fields' bounds take the preset's copy: the same
    # workload, value types and all, as validating the overridden preset gives
    got = custom_workload(base, users=users, context=context, cached_prefix=share)
    upd = {k: v for k, v in (("users", users), ("context_cap", context), ("cached_prefix_share", share))
           if v is not None}
    pre = load_workload(base)
    shrunk = None if context is None else shrink_lengths(pre.prompt_tokens, pre.gen_tokens, context, set())
    if shrunk is not None:  # a context shorter than the preset's requests: its lengths shrink into it
        upd |= {"prompt_tokens": shrunk[0].model_dump(), "gen_tokens": shrunk[1].model_dump(),
                "shrunk_from": (pre.prompt_tokens.max_tokens, pre.gen_tokens.max_tokens)}
    want = _validated(base, **upd)
    assert got == want and got.model_dump() == want.model_dump()
    assert [type(v) for v in dict(got).values()] == [type(v) for v in dict(want).values()]


def test_custom_workload_values_validation_would_change_are_validated():
    # an int share becomes the float validation makes of it; a context above the field's bound is refused
    w = custom_workload("chat", cached_prefix=0)
    assert type(w.cached_prefix_share) is float
    with pytest.raises(InputError, match="context_cap"):
        custom_workload("chat", context=10_000_001)


def test_mixed_flag():
    # code mixes long-prompt edits and chat turns (router candidate); chat alone is not mixed
    assert load_workload("code").is_mixed and not load_workload("chat").is_mixed


def test_unknown_workload_suggests_close_match():
    with pytest.raises(UnknownProfileError, match="did you mean agent"):
        load_workload("agnet")
    with pytest.raises(PlannerError):
        custom_workload("chat", users=0)


@pytest.mark.parametrize("text", ["inf", "nan", "1e999", "1024:nan,2048:0.5", "1024:inf", "p50=inf,p90=3"])
def test_parse_length_refuses_non_finite(text):
    # int(float('inf')) raised OverflowError past the InputError handler; NaN weights reached math.ceil in buy
    with pytest.raises(InputError, match="--gen"):
        parse_length(text, "--gen")


@pytest.mark.parametrize("dist,p90", [
    ([(1000, 0.5), (2000, 0.4), (8000, 0.1)], 2000),   # cumulative 0.5, 0.9: the second value
    ([(1000, 0.5), (2000, 0.39), (8000, 0.11)], 8000),  # 0.89 < 0.9: the third
    ([(8000, 1), (100, 9)], 100),                       # order given does not matter; weights need not sum to 1
    ([(512, 0.95), (4096, 0.05)], 512),
])
def test_p90_is_the_smallest_value_whose_cumulative_weight_reaches_point_nine(dist, p90):
    """Rule (issue 34): p90 of a distribution is the smallest value v with weight(≤ v) ≥ 0.9."""
    assert Length(dist=dist).p90_tokens == p90


def test_the_default_workload_is_the_chat_presets_point():
    """Every command's default lengths and prompt-cache share are one definition (planner/points.py): the default
    preset's length distributions, their single point (p90 prompt, mean output) and its cached share."""
    from planner.points import (
        DEFAULT_CACHED_PREFIX,
        DEFAULT_GEN,
        DEFAULT_GEN_LENGTHS,
        DEFAULT_PROMPT,
        DEFAULT_PROMPT_LENGTHS,
        DEFAULT_WORKLOAD,
    )
    from planner.workload import gen_point, prompt_point

    wl = load_workload(DEFAULT_WORKLOAD)
    assert wl.id == "chat"
    assert parse_length(DEFAULT_PROMPT_LENGTHS, "--prompt") == wl.prompt_tokens
    assert parse_length(DEFAULT_GEN_LENGTHS, "--gen") == wl.gen_tokens
    # chat.yaml: 512:0.4, 1024:0.4, 2048:0.2 -> p90 2048; 500:0.5, 1000:0.5 -> mean 750
    assert (DEFAULT_PROMPT, DEFAULT_GEN) == (prompt_point(wl.prompt_tokens), gen_point(wl.gen_tokens)) == (2048, 750)
    assert DEFAULT_CACHED_PREFIX == wl.cached_prefix_share == 0.75
    from planner.points import DEFAULT_LONGEST  # the longest request, no length parsed (shrink_point)

    assert DEFAULT_LONGEST == (wl.prompt_tokens.max_tokens, wl.gen_tokens.max_tokens) == (2048, 1000)
    # the default request rate (plan serve): its users, each reading the mean answer at the reading rate its decode
    # target states (chat.yaml: users 1, min_tok_s_per_user 5.3) -> 1 × 5.3 / 750 per second = 0.424/min
    from planner.points import DEFAULT_READ_TOK_S, DEFAULT_USERS, default_rate_per_s

    assert (DEFAULT_USERS, DEFAULT_READ_TOK_S) == (wl.users, wl.targets.min_tok_s_per_user) == (1, 5.3)
    assert default_rate_per_s() * 60 == pytest.approx(0.424)
    assert custom_workload() == wl  # no preset named: the default one


def test_every_request_model_defaults_to_the_default_workload():
    """plan, predict, recommend, buy, models and the agent questions take their default lengths and prompt-cache
    share from the one definition (no command has its own)."""
    from cli.questions import WhatRunsRequest
    from planner.plan import PlanRequest
    from planner.points import DEFAULT_CACHED_PREFIX, DEFAULT_GEN, DEFAULT_PROMPT, DEFAULT_WORKLOAD
    from planner.requests import BuyRequest, PredictRequest, RecommendRequest

    for req in (PlanRequest, PredictRequest, WhatRunsRequest):
        f = req.model_fields
        assert (f["prompt"].default, f["gen"].default, f["cached_prefix"].default) == (
            DEFAULT_PROMPT, DEFAULT_GEN, DEFAULT_CACHED_PREFIX), req
    for req in (RecommendRequest, BuyRequest):  # a preset: its lengths and share unless given
        assert req.model_fields["workload"].default == DEFAULT_WORKLOAD
    from cli.questions import ServeQuestion
    from planner.requests import ClusterRequest

    f = ClusterRequest.model_fields
    assert (f["prompt"].default, f["gen"].default, f["cached_prefix"].default) == (
        DEFAULT_PROMPT, DEFAULT_GEN, DEFAULT_CACHED_PREFIX)
    # serve simulates a stream: the default preset's length distributions themselves, its share, its users' rate
    wl, f = load_workload(DEFAULT_WORKLOAD), ServeQuestion.model_fields
    assert parse_length(f["prompt"].default, "--prompt") == wl.prompt_tokens
    assert parse_length(f["gen"].default, "--gen") == wl.gen_tokens
    assert f["cached_prefix"].default == wl.cached_prefix_share and f["rate"].default is None


# --------------------------------------------------------------------------- a context shorter than the defaults
def test_the_lengths_not_given_shrink_by_one_factor_into_the_context():
    """The chat preset's longest request is 2,048 + 1,000 tokens; a 2,048-token context shrinks every value by
    2048 / 3048 = 0.67192, floored: prompts 512 -> 344, 1,024 -> 688, 2,048 -> 1,376; answers 500 -> 335, 1,000 -> 671
    (1,376 + 671 = 2,047 <= 2,048), weights unchanged; the note gives before and after."""
    from planner.workload import shrunk_note

    wl = custom_workload("chat", context=2048)
    assert wl.prompt_tokens.dist == [(344, 0.4), (688, 0.4), (1376, 0.2)]
    assert wl.gen_tokens.dist == [(335, 0.5), (671, 0.5)]
    assert wl.context == 2048 and wl.shrunk_from == (2048, 1000)
    assert "2,048 + 1,000 tokens" in shrunk_note(wl) and "to 1,376 + 671" in shrunk_note(wl)
    # a context that holds the preset's requests changes nothing
    assert custom_workload("chat", context=3048).prompt_tokens == load_workload("chat").prompt_tokens
    assert shrunk_note(custom_workload("chat", context=3048)) is None


def test_given_lengths_are_kept_and_only_the_others_shrink():
    """--prompt 1500 given, the answers not: 2,048 - 1,500 = 548 tokens are left for the answers, factor 548 / 1,000:
    500 -> 274, 1,000 -> 548. Both given (or the given ones leaving no room): nothing shrinks; the context holds the
    request (WorkloadProfile.context, capacity.hold_request)."""
    wl = custom_workload("chat", prompt="1500", context=2048)
    assert wl.prompt_tokens.value == 1500 and wl.gen_tokens.dist == [(274, 0.5), (548, 0.5)]
    both = custom_workload("chat", prompt="1500", gen="1000", context=2048)
    assert both.gen_tokens.value == 1000 and both.context == 2500 and both.shrunk_from is None
    full = custom_workload("chat", prompt="2048", context=2048)  # no token left for an answer
    assert full.gen_tokens == load_workload("chat").gen_tokens and full.context == 3048


def test_shrink_lengths_rules():
    from planner.workload import shrink_lengths

    p, g = parse_length("p50=1000,p90=4000", "p"), parse_length("1000", "g")
    sp, sg = shrink_lengths(p, g, 2500, set())  # factor 2500 / 5000 = 0.5
    assert (sp.p50, sp.p90, sg.value) == (500, 2000, 500)
    assert shrink_lengths(p, g, 5000, set()) is None          # fits already
    assert shrink_lengths(p, g, 2500, {"prompt", "gen"}) is None
    assert shrink_lengths(p, g, 1, set()) is None             # one token cannot hold a prompt and an answer
    zero = shrink_lengths(parse_length("0:0.5,100:0.5", "p"), g, 550, set())  # a 0-token prompt stays 0
    assert zero is not None and zero[0].dist == [(0, 0.5), (50, 0.5)] and zero[1].value == 500


@pytest.mark.parametrize("context", [2, 3, 17, 500, 1024, 2047, 2797, 3000, 3047])
def test_shrunk_requests_fit_their_context(context):
    """Property: whatever the context, the longest shrunk request fits it and every nonzero length keeps a token."""
    from planner.workload import shrink_lengths

    for given in (set(), {"prompt"}, {"gen"}):
        p, g = parse_length("512:0.4,1024:0.4,2048:0.2", "p"), parse_length("500:0.5,1000:0.5", "g")
        out = shrink_lengths(p, g, context, given)
        if out is None:
            continue
        assert out[0].max_tokens + out[1].max_tokens <= context
        assert min(v for v, _ in out[0].dist) >= 1 and min(v for v, _ in out[1].dist) >= 1


def test_the_single_point_is_the_shrunk_default_workloads_point():
    """plan, cluster and models answer at one point: for default lengths it is the point of the shrunk chat
    preset (p90 prompt 1,376; mean answer (335 + 671) / 2 = 503), the point recommend and buy read; a length that
    differs from the default is kept (1,000), the answers shrink into 1,500 - 1,000 = 500: 250 / 500, mean 375."""
    from planner.workload import gen_point, prompt_point, shrink_point

    wl = custom_workload("chat", context=2048)
    point = shrink_point(2048, 750, 2048)
    assert point is not None and point[:2] == (prompt_point(wl.prompt_tokens), gen_point(wl.gen_tokens)) == (1376, 503)
    assert "2,048 + 750 tokens" in point[2] and "to 1,376 + 503" in point[2]
    given = shrink_point(1000, 750, 1500)
    assert given is not None and given[:2] == (1000, 375)
    assert shrink_point(2048, 750, 8192) is None and shrink_point(20_000, 750, 8192) is None
