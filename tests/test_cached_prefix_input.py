"""The cached-prefix share is a finite number in [0, 1): nan was refused as "should be less than 1", a reason that
does not hold for nan (every comparison with nan is false); it must say the value is not a finite number."""

import math

import pytest
from pydantic import ValidationError

from planner.plan import PlanRequest
from planner.requests import PredictRequest


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_share_is_named_as_such(bad):
    with pytest.raises(ValidationError, match="finite number"):
        PlanRequest(model="qwen3-0.6b", cached_prefix=bad)
    with pytest.raises(ValidationError, match="finite number"):
        PredictRequest(chip="M4 Max", model="qwen3-0.6b", quant="4bit", cached_prefix=bad)


@pytest.mark.parametrize("bad", [1.0, 1.5, -0.1])
def test_a_share_outside_0_to_1_is_refused(bad):
    with pytest.raises(ValidationError, match="cached_prefix"):
        PlanRequest(model="qwen3-0.6b", cached_prefix=bad)
