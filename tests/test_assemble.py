"""planner._model.assemble: the results the core assembles without validating them (model_construct) are the
objects validation would give, value types included (an int where a float field wants a float would print as 64
instead of 64.0). Every object assembled while planning a spread of requests is validated here and compared."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from planner import plan as plan_module
from planner._model import assemble
from planner.plan import PlanRequest, plan

REQUESTS = [
    dict(model="llama-3.3-70b", ram=64),
    dict(model="llama-3.3-70b", ram=64, chip="M4 Max"),
    dict(model="qwen3-30b-a3b", ram=64, chip="M4 Max", users=4, context=32768),
    dict(model="gpt-oss-20b", ram=16),
    dict(model="qwen3-8b", chip="M4 Pro", ram=48, kv_type="q8_0"),
    dict(model="gemma-3-27b", ram=32, quants=["Q4_K_M", "4bit"], images=2),
    dict(model="qwen3-0.6b", ram=8, context=200000),
    dict(model="llama-3.1-8b", ram=16, runtimes=["ollama", "lmstudio-llama.cpp", "lmstudio-mlx"]),
    dict(model="llama-3.1-70b", ram=36, chip="M3 Pro", wired_limit_mb=30000),
    dict(model="llama-3.3-70b", chip="M3 Max", gpu_cores=40, ram=64, quants=["Q4_K_M", "4bit"],
         draft_model="llama-3.1-8b"),
    dict(model="qwen3-8b", chip="M2 Max", gpu_cores=38),  # the RAM: the chip's largest
    dict(model="granite-4.0-h-1b", ram=8, chip="M1"),  # hybrid: recurrent state
    dict(model="gemma-4-31b", ram=48, users=8),
    dict(model="qwen3-235b-a22b", ram=128, chip="M4 Max"),
    dict(model="deepseek-v3", ram=512, chip="M3 Ultra"),
]


def same(a: object, b: object) -> bool:
    """Equal, and of the same type all the way down (dict keys, list items, model fields)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, BaseModel):
        return all(same(getattr(a, f), getattr(b, f)) for f in type(a).model_fields)
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(k, k2) and same(a[k], b[k2]) for k, k2 in zip(a, b))  # type: ignore[index]
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))  # type: ignore[arg-type]
    return a == b


def test_same_sees_a_type_difference():
    assert same({1: [2.0]}, {1: [2.0]}) and not same({1: [2]}, {1: [2.0]}) and not same(64, 64.0)


@pytest.mark.parametrize("values", REQUESTS, ids=lambda v: "-".join(str(x) for x in v.values())[:60])
def test_assembled_objects_are_the_validated_ones(values, monkeypatch):
    seen: list[str] = []

    def checked(cls, **kw):
        built = assemble(cls, **kw)
        validated = cls(**kw)
        assert same(built, validated), f"{cls.__name__}: assembled {built!r} != validated {validated!r}"
        assert built.model_fields_set == validated.model_fields_set
        seen.append(cls.__name__)
        return built

    monkeypatch.setattr(plan_module, "assemble", checked)
    result = plan(PlanRequest(**values))
    assert {"Plan", "FitOption", "ModelSummary", "MacSummary", "KVRow"} <= set(seen)
    assert same(type(result).model_validate(result.model_dump()), result)  # the whole plan round-trips
