"""planner/plan.py display wiring: the launch recipe of any plan option, and the MoE flag of the model summary."""

import pytest

from planner.plan import PlanRequest, launch_recipe, plan


def test_launch_recipe_of_a_plan_option_matches_its_kv_and_context():
    """Every option of a plan gets a server command at the request's context and users, with the option's KV type
    (llama.cpp -ctk/-ctv; mlx-lm serves at its default KV) and the total context over the slots (2 × 4096)."""
    req = PlanRequest(model="llama-3.1-8b", ram=64, context=4096, users=2, kv_type="q8_0")
    p = plan(req)
    for o in p.options:
        rc = launch_recipe(req, o)
        assert rc is not None and rc.server
        if o.runtime == "llama.cpp":
            assert rc.server.startswith("llama-server") and f"-{o.quant}.gguf" in rc.server
            assert "-c 8192 -np 2" in rc.server and "-ctk q8_0 -ctv q8_0" in rc.server
        else:
            assert rc.server.startswith("mlx_lm.server")


def test_model_summary_flags_moe_only():
    assert not plan(PlanRequest(model="llama-3.1-8b", ram=64)).model.is_moe
    moe = plan(PlanRequest(model="qwen3-30b-a3b", ram=64)).model
    assert moe.is_moe and moe.active_params < moe.params / 5  # 3B of 30B active (Qwen3-30B-A3B)


def test_an_8gb_mac_is_not_told_to_raise_the_limit_to_the_default():
    # 8 GB: the default is 2/3 = 5,461 MiB; macOS keeps at least 4 GiB, so the highest safe limit (4,096 MiB) is
    # below the default and the "raise" line would set the default again (issue 35)
    from app.readings import limit_reading
    from cli.render import render_plan

    p = plan(PlanRequest(model="qwen3-0.6b", ram=8))
    assert not p.wired.can_raise
    assert "sysctl" not in render_plan(p) and "sysctl" not in limit_reading(p)
    p16 = plan(PlanRequest(model="qwen3-0.6b", ram=16))
    assert p16.wired.can_raise and f"iogpu.wired_limit_mb={p16.wired.sysctl_max_mb}" in render_plan(p16)


@pytest.mark.parametrize(("typed", "llama", "mlx"), [("q8", "q8_0", "kv8"), ("q4", "q4_0", "kv4"),
                                                     ("Q8_0", "q8_0", "kv8")])
def test_kv_type_is_honoured_in_each_runtimes_spelling(typed, llama, mlx):
    # issue 35: --kv-type q8 silently became f16 on llama.cpp; it is q8_0 there and kv8 on mlx-lm
    p = plan(PlanRequest(model="qwen3-8b", ram=16, runtimes=["llama.cpp", "mlx-lm"], quants=["Q4_K_M", "4bit"],
                         kv_type=typed))
    kinds = {o.runtime: o.kv_type for o in p.options}
    assert kinds == {"llama.cpp": llama, "mlx-lm": mlx}
    assert not any("kv-type" in n for n in p.notes)


def test_an_unknown_kv_type_is_refused_not_replaced():
    from planner.errors import InputError

    with pytest.raises(InputError, match="^kv_type "):
        plan(PlanRequest(model="qwen3-8b", ram=16, runtimes=["llama.cpp"], kv_type="q3"))


def test_a_context_above_the_model_maximum_is_capped_once_and_shown_capped():
    # issue 35: --context 1000000 showed "1 × 976.6K" and "Fit at 1 × 976.6K" although planned at 131,072
    from cli.plan import run_plan

    p = plan(PlanRequest(model="llama-3.1-8b", ram=64, context=1_000_000))
    assert p.request.context == 131_072 == p.model.max_context
    assert sum("capped at 131,072" in n for n in p.notes) == 1
    text = run_plan({"model": "llama-3.1-8b", "ram": 64, "context": 1_000_000})
    assert "976" not in text and "1 × 128K" in text and "context 131,072" in text
    assert text.count("1,000,000") == 1   # only in the note that says it was capped


def test_a_context_shorter_than_the_request_is_planned_at_the_requests_length():
    # qa: `plan -c 8192 --prompt 20000` fitted the tables at 8K (a server started with -c 8192 refuses a 20,750-token
    # request: llama.cpp server-context.cpp "exceeds the available context size") while its bottom line reserved the
    # request, without a word. Planned at prompt + gen = 20,750, said once; within the maximum nothing else changes.
    p = plan(PlanRequest(model="qwen3-8b", ram=48, context=8192, prompt=20_000, gen=750))
    assert p.request.context == 20_750
    assert sum("20,750" in n and "8,192" in n for n in p.notes) == 1
    ok = plan(PlanRequest(model="qwen3-8b", ram=48, context=8192, prompt=7_000, gen=750))
    assert ok.request.context == 8192 and not any("shorter" in n for n in ok.notes)
    over = plan(PlanRequest(model="qwen3-8b", ram=48, context=8192, prompt=50_000, gen=750))
    assert over.request.context == 40_960   # the model's maximum, never beyond


def test_a_prompt_beyond_the_models_maximum_is_said():
    # Llama 3.1 8B: max_position_embeddings 131,072. A context above it was capped with a note; a prompt above it
    # was timed without a word. 200,000 + 256 > 131,072: said, with the longest prompt that fits beside the answer.
    from planner.plan import PlanRequest, plan

    long = plan(PlanRequest(model="llama-3.1-8b", ram=64, prompt=200_000, gen=256))
    said = [n for n in long.notes if "above" in n and "131,072" in n]
    assert len(said) == 1 and "130,816" in said[0]   # 131,072 - 256
    ok = plan(PlanRequest(model="llama-3.1-8b", ram=64, prompt=130_816, gen=256))
    assert not [n for n in ok.notes if "maximum of 131,072" in n]


@pytest.mark.parametrize("model", ["deepseek-v3", "llama-3.1-8b", "gpt-oss-20b"])
def test_a_plan_tries_the_quants_every_search_tries(model):
    """One quant set (plan.default_quants): a plan's options are, per runtime, the formats recommend, models and buy
    search (search.quants_for), so a 671 B MoE's plan lists the 1-3 bit GGUFs it only fits in on a Mac, as the
    searches do."""
    from planner import profiles
    from planner.search import quants_for

    p = plan(PlanRequest(model=model, ram_gb=512))
    prof = profiles.load_model(model)
    for rt in ("llama.cpp", "mlx-lm"):
        want = [q.id for q in quants_for(prof, profiles.load_runtime(rt))]
        assert [o.quant for o in p.options if o.runtime == rt] == want
    if model == "deepseek-v3":
        assert [o.quant for o in p.options][:4] == ["IQ1_S", "IQ2_XXS", "IQ2_M", "Q2_K"]
