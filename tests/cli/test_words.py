"""cli/words.py constraint_text: a pydantic constraint error worded as the rule and its fix, in every command."""

import subprocess
import sys

import pytest
from pydantic import BaseModel, Field, ValidationError

from cli.words import constraint_text


class _M(BaseModel):
    share: float = Field(0.5, ge=0, lt=1)
    n: int = Field(1, gt=0, le=8)


@pytest.mark.parametrize("bad, text", [
    ({"share": 1.0}, "must be less than 1; give a smaller value"),
    ({"share": -0.5}, "must be at least 0; give 0 or more"),
    ({"n": 0}, "must be more than 0; give a larger value"),
    ({"n": 9}, "must be at most 8; give 8 or less"),
    ({"n": "x"}, "must be a whole number; give e.g. 4"),
    ({"share": "x"}, "must be a number; give e.g. 0.5"),
])
def test_a_constraint_error_names_the_rule_and_a_fix(bad, text):
    with pytest.raises(ValidationError) as e:
        _M(**bad)
    assert constraint_text(e.value.errors()[0]) == text


def test_a_validators_own_message_is_kept():
    err = {"type": "value_error", "msg": "Value error, give a share from 0 up to 1", "ctx": {}}
    assert constraint_text(err) == "give a share from 0 up to 1"


@pytest.mark.parametrize("cmd", [
    ["--model", "qwen3-8b", "--ram", "32"],
    ["models", "--ram", "32"],
    ["cluster", "--model", "qwen3-8b", "--macs", "1x Mac mini M4 32GB"],
])
def test_every_command_says_the_fix_for_an_out_of_range_share(cmd):
    """`--cached-prefix 1` was "Input should be less than 1" in plan, models and cluster: no fix."""
    r = subprocess.run([sys.executable, "-m", "cli.main", *cmd, "--cached-prefix", "1"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2
    line = r.stderr.strip()
    assert "\n" not in line and "--cached-prefix" in line and "give" in line, line
