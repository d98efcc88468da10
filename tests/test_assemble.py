"""planner._model.assemble: the results the core assembles without validating them (model_construct) are the
objects validation would give, value types included (an int where a float field wants a float would print as 64
instead of 64.0). Every object assembled while planning a spread of requests (with their bottom lines, and
recommendations for each workload) is validated here and compared."""

from __future__ import annotations

import sys

import pytest
from pydantic import BaseModel

from cli.plan import plan_answer
from planner import _model, profiles
from planner.advice import recommend, runtime_verdicts
from planner.workload import load_workload

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
    dict(model="qwen2.5-vl-7b", ram=16, chip="M4", runtimes=["mlx-vlm", "llama.cpp"], images=1),
    dict(model="qwen3-30b-a3b", ram=24, chip="M4 Pro", quants=["Q8_0"]),  # partial offload
    dict(model="gpt-oss-120b", ram=64, chip="M4 Max", runtimes=["llama.cpp"]),  # does not fit: offload, SSD
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


@pytest.fixture
def seen(monkeypatch) -> list[str]:
    """Every planner module's ``assemble`` replaced by one that also validates and compares."""
    names: list[str] = []

    def checked(cls, **kw):
        built = assemble(cls, **kw)
        validated = cls(**kw)
        assert same(built, validated), f"{cls.__name__}: assembled {built!r} != validated {validated!r}"
        assert built.model_fields_set == validated.model_fields_set
        # and the object pydantic's own model_construct builds: same fields, in the same order, same private state
        constructed = cls.model_construct(**kw)
        assert list(built.__dict__.items()) == list(constructed.__dict__.items())
        assert built.model_fields_set == constructed.model_fields_set
        assert (built.__pydantic_extra__, built.__pydantic_private__) == (constructed.__pydantic_extra__,
                                                                          constructed.__pydantic_private__)
        names.append(cls.__name__)
        return built

    assemble = _model.assemble
    for name, module in list(sys.modules.items()):
        if name.startswith("planner") and getattr(module, "assemble", None) is assemble:
            monkeypatch.setattr(module, "assemble", checked)
    return names


@pytest.mark.parametrize("values", REQUESTS, ids=lambda v: "-".join(str(x) for x in v.values())[:60])
def test_assembled_objects_are_the_validated_ones(values, seen):
    result, rec = plan_answer(values)
    assert {"Plan", "FitOption", "ModelSummary", "MacSummary", "KVRow", "MemoryEstimate", "Fit",
            "WiredLimit"} <= set(seen)
    assert same(type(result).model_validate(result.model_dump()), result)  # the whole plan round-trips


@pytest.mark.parametrize("workload", ["chat", "agent", "batch", "code", "rag"])
def test_assembled_recommendations_are_the_validated_ones(workload, seen):
    # the RAM given as an int: the recommendation's ram_gb is a float either way
    for model, ram, chip in [("llama-3.3-70b", 64, "m4-max-40gpu"), ("qwen3-8b", 16, None),
                             ("gpt-oss-20b", 24, "m4-pro-20gpu")]:
        rec = recommend(model, ram, load_workload(workload), chip=profiles.resolve_chip(chip) if chip else None,
                        runtimes=["llama.cpp", "mlx-lm", "ollama"], best_effort=True)
        runtime_verdicts(rec)
        assert same(type(rec).model_validate(rec.model_dump()), rec)
    assert {"Recommendation", "ServingOption", "QualityNote", "RuntimeVerdict", "Recipe"} <= set(seen)


@pytest.mark.parametrize("model", ["llama-3.3-70b", "gemma-4-31b", "granite-4.0-h-1b", "deepseek-v3", "gpt-oss-20b",
                                   "qwen3-next-80b-a3b"])
def test_assembled_kv_layouts_are_the_validated_ones(model, seen):
    """KV layouts are remembered per model (the plans above may reuse one): each runtime's KV types afresh."""
    from planner.memory import _kv_layout, check_kv_type

    prof, table = profiles.load_model(model), profiles.ggml_types()
    for rt_id in ("llama.cpp", "mlx-lm"):
        rt = profiles.load_runtime(rt_id)
        for kv in dict.fromkeys([rt.default_kv_type, *rt.advised_kv_types]):
            try:
                _kv_layout(prof, rt, check_kv_type(kv, rt, prof), table)
            except profiles.InputError:
                continue
    assert "KVLayout" in seen


@pytest.mark.parametrize("chip, cores, ram", [(None, None, 64), (None, None, 16.0), ("M4 Max", None, 48),
                                              ("M4 Max", 40, None), ("M3 Max", None, 36), ("M4 Pro", None, 32)])
def test_assembled_macs_are_the_validated_ones(chip, cores, ram, seen):
    """A Mac from a RAM given as an int is a float, as validation made it; the size rules that run first keep
    ram_gb above 0 (its gt=0)."""
    from planner.deployment import resolve_mac

    assert type(resolve_mac(chip, cores, ram).ram_gb) is float
    assert seen == ["Mac"]


@pytest.mark.parametrize("name", ["llama-3.3-70b", "hf.co/unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL",
                                  "mlx-community/Qwen3-8B-4bit", "gemma3:27b-it-q4_K_M", "bartowski/Qwen_Qwen3-8B-GGUF"])
def test_assembled_name_specs_are_the_validated_ones(name, seen):
    profiles.parse_name(name)
    assert seen == ["NameSpec"]
