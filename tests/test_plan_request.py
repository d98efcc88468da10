"""planner.plan.plan_request: the request the CLI's plain question builds is the one validation gives."""

import pytest
from pydantic import ValidationError

from planner.capacity import MAX_USERS
from planner.plan import PlanRequest, plan_request


def _same(got: PlanRequest, want: PlanRequest) -> None:
    assert got == want and got.model_fields_set == want.model_fields_set
    assert list(got.__dict__) == list(want.__dict__)  # field order: what dumps and renders walk
    assert [type(v) for v in got.__dict__.values()] == [type(v) for v in want.__dict__.values()]


@pytest.mark.parametrize("values", [
    {"model": "llama-3.3-70b", "ram": 64.0},
    {"model": "llama-3.3-70b", "ram": 0.5, "chip": "M4 Pro"},
    {"model": "gemma-4-31b", "chip": "M4 Max"},
    {"model": "x", "ram": None, "chip": None},
    {"model": "qwen3-8b", "ram": 48.0, "context": 10_000_000, "users": MAX_USERS},
    {"model": "qwen3-8b", "ram": 48.0, "context": 1, "users": 1},
])
def test_values_validation_keeps_make_the_validated_request(values):
    # model, RAM, chip, context and users of their fields' types and bounds: the same object, value types and
    # fields set included, as validating them gives
    _same(plan_request(**values), PlanRequest(**values))


@pytest.mark.parametrize("values", [
    {"model": "m", "ram": 64},  # an int RAM: validation makes it a float
    {"model": "m", "ram_gb": 64.0},  # the older spelling: validation reads it as ram
    {"model": "m", "ram": 64.0, "users": True},  # a bool: validation makes it the int 1
    {"model": "m", "ram": 64.0, "runtimes": ["llama.cpp"], "context": 4096},
])
def test_values_validation_changes_are_validated(values):
    got = plan_request(**values)
    _same(got, PlanRequest(**values))
    assert type(got.ram) is float and type(got.users) is int


@pytest.mark.parametrize("values", [
    {"model": "m", "ram": 0.0}, {"model": "m", "ram": float("inf")}, {"model": "m", "ram": float("nan")},
    {"model": "m", "ram": -64.0}, {"model": "m", "context": 0}, {"model": "m", "context": 10_000_001},
    {"model": "m", "users": 0}, {"model": "m", "users": MAX_USERS + 1}, {"model": 7, "ram": 64.0},
    {"model": "m", "chip": 3}, {"model": "m", "ram": 64.0, "ram_gb": 64.0}, {"ram": 64.0},
])
def test_values_outside_the_bounds_get_validations_error(values):
    with pytest.raises(ValidationError) as got:
        plan_request(**values)
    with pytest.raises(ValidationError) as want:
        PlanRequest(**values)
    assert str(got.value) == str(want.value)
