"""One spelling of the request fields (issue 32, "the same name for the same fact"): every request model says
``ram``, ``prompt`` and ``gen`` (PlanRequest and FinetuneRequest said ``ram_gb``, ``prompt_tokens``,
``gen_tokens`` before schema_version 4). The former names are still read for one version (pydantic validation
aliases): both spellings must give the same request and the same answer, in Python and through the agents."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from cli.questions import QUESTIONS, ServeQuestion, WhatRunsRequest, answer
from planner.finetune import FinetuneRequest, plan_finetune
from planner.plan import PlanRequest, plan
from planner.requests import BuyRequest, ClusterRequest, PredictRequest, RecommendRequest

REQUESTS: list[type[BaseModel]] = [PlanRequest, FinetuneRequest, PredictRequest, RecommendRequest, BuyRequest,
                                   ClusterRequest, WhatRunsRequest, ServeQuestion]
OLD = {"ram_gb": "ram", "prompt_tokens": "prompt", "gen_tokens": "gen"}


@pytest.mark.parametrize("request_model", REQUESTS, ids=lambda r: r.__name__)
def test_every_request_spells_ram_prompt_and_gen_alike(request_model):
    fields = set(request_model.model_fields)
    assert not fields & set(OLD), f"{request_model.__name__} still names {fields & set(OLD)}"
    # the input schema an agent sees (validation mode) names the fields as the command line's requests do
    props = set(request_model.model_json_schema(mode="validation")["properties"])
    assert not props & set(OLD)


def test_plan_reads_the_former_names_for_one_version():
    new = PlanRequest(model="llama-3.1-8b", chip="M4 Max", gpu_cores=40, ram=64, prompt="p50=1000,p90=3000",
                      gen=300)
    old = PlanRequest(model="llama-3.1-8b", chip="M4 Max", gpu_cores=40, ram_gb=64,
                      prompt_tokens="p50=1000,p90=3000", gen_tokens=300)
    assert old == new and (new.ram, new.prompt, new.gen) == (64, 3000, 300)
    assert plan(old).model_dump() == plan(new).model_dump()
    # a plan's JSON (request echoed) reads back under the new names
    assert PlanRequest.model_validate_json(new.model_dump_json()) == new
    assert {"ram", "prompt", "gen"} <= set(new.model_dump()) and not set(new.model_dump()) & set(OLD)


def test_finetune_reads_the_former_name_for_one_version():
    old, new = FinetuneRequest(model="qwen3-0.6b", ram_gb=16), FinetuneRequest(model="qwen3-0.6b", ram=16)
    assert old == new and new.ram == 16
    assert plan_finetune(old).model_dump() == plan_finetune(new).model_dump()


def test_the_python_api_and_the_agents_take_both_spellings():
    import mac_llm_planner as api

    assert (api.plan(model="qwen3-0.6b", ram_gb=16, prompt_tokens=2048).model_dump()
            == api.plan(model="qwen3-0.6b", ram=16, prompt=2048).model_dump())
    assert (answer("plan", {"model": "qwen3-0.6b", "chip": "M4", "gpu_cores": 10, "ram_gb": 16, "gen_tokens": 64})
            == answer("plan", {"model": "qwen3-0.6b", "chip": "M4", "gpu_cores": 10, "ram": 16, "gen": 64}))
    assert set(QUESTIONS["plan"].input_schema()["properties"]) >= {"ram", "prompt", "gen"}


def test_a_former_name_is_not_silently_dropped():
    # the rule can fail: a value given under the old name must reach the answer (48 GB, not the chip's largest)
    p = plan(PlanRequest(model="qwen3-0.6b", chip="M4 Max", gpu_cores=40, ram_gb=48))
    assert p.mac.ram_gb == 48


@pytest.mark.parametrize("request_model", [PlanRequest, FinetuneRequest], ids=lambda r: r.__name__)
def test_both_spellings_at_once_are_an_error_naming_both(request_model):
    from pydantic import ValidationError

    # pydantic's AliasChoices keeps the first choice given and drops the other: 64 or 32 GB, without a word
    with pytest.raises(ValidationError, match="ram and ram_gb"):
        request_model(model="qwen3-0.6b", ram_gb=64, ram=32)
    assert request_model(model="qwen3-0.6b", ram_gb=64).ram == 64   # one spelling alone is still read


def test_the_agents_refuse_both_spellings_at_once():
    from planner.errors import QuestionError

    # the agents' renaming ({old: new}) kept the later key and dropped the other
    for args in ({"ram_gb": 64, "ram": 32}, {"ram": 32, "ram_gb": 64}, {"gen_tokens": 10, "gen": 20}):
        with pytest.raises(QuestionError, match=r"^plan: (ram and ram_gb|gen and gen_tokens) are one input"):
            answer("plan", {"model": "qwen3-0.6b", **args})
