"""Issue 32, types: the speed engine reads resolved Constants (every field it uses required), split from the
optional SpeedConstants layer of the YAML profiles; no module of the core is exempt from mypy."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from planner import profiles
from planner.errors import ProfileError
from planner.schema import OPTIONAL_CONSTANTS, Constants, ResolvedSpeedConstants, SpeedConstants

ROOT = Path(__file__).resolve().parents[1]


def test_required_fields_are_required_and_only_the_optional_ones_stay_optional():
    optional = {n for n, f in Constants.model_fields.items() if not f.is_required()}
    assert optional == set(OPTIONAL_CONSTANTS)
    assert set(Constants.model_fields) == set(SpeedConstants.model_fields)
    # the YAML layer keeps every field optional (a scope sets only what it overrides)
    assert all(not f.is_required() for f in SpeedConstants.model_fields.values())


def test_every_shipped_chip_and_runtime_resolves_to_constants():
    n = 0
    for chip in profiles.all_chips():
        for rt in ("llama.cpp", "mlx-lm"):
            try:
                res = profiles.load_speed_constants(chip, rt, include_user=False)
            except ProfileError:
                continue
            assert isinstance(res.constants, Constants)
            assert not res.constants.missing()
            n += 1
    assert n >= 10


def test_an_incomplete_layer_is_refused_by_name():
    partial = SpeedConstants(eta_bw=0.8)
    with pytest.raises(ProfileError, match="eta_c"):
        partial.resolved()
    with pytest.raises(ProfileError, match="eta_c"):
        ResolvedSpeedConstants(constants=partial, source="t", scopes=[])


def test_no_core_module_is_exempt_from_mypy():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert "planner" in cfg["packages"]
    for o in cfg.get("overrides", []):
        assert not o.get("ignore_errors"), o


def test_the_core_is_checked_strictly():
    """`mypy` (make lint) checks the core with --strict: no override loosens it, and every ``# type: ignore`` in the
    core names its error code and says why after it."""
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert cfg.get("strict") is True
    loosening = {"disallow_untyped_defs", "disallow_incomplete_defs", "disallow_untyped_calls", "disallow_any_generics",
                 "warn_return_any", "check_untyped_defs", "no_implicit_reexport", "strict"}
    for o in cfg.get("overrides", []):
        assert not any(o.get(k) is False for k in loosening), o
        assert o.get("implicit_reexport") is not True, o
    for path in sorted((ROOT / "planner").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "type: ignore" in line:
                rest = line.split("type: ignore", 1)[1]
                assert rest.startswith("[") and "#" in rest, f"{path.name}:{n}: {line.strip()}"
