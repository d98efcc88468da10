"""No field of the core's models (nor of the commands' requests) starts with one of pydantic's protected prefixes
(model_validate, model_dump): planner._model.Frozen turns pydantic's own check off (it ran at every class creation of
every start-up), so this test is where a field named like a pydantic method is caught."""

from __future__ import annotations

import importlib
import pkgutil

from pydantic import BaseModel
from pydantic._internal._config import config_defaults

import planner


def _subclasses(cls: type) -> list[type]:
    return [s for k in cls.__subclasses__() for s in (k, *_subclasses(k))]


def test_no_field_takes_a_protected_prefix():
    for m in pkgutil.walk_packages(planner.__path__, "planner."):
        importlib.import_module(m.name)
    importlib.import_module("cli.questions")  # the commands' request models (planner._model.Frozen too)
    prefixes = config_defaults["protected_namespaces"]
    assert prefixes and all(isinstance(p, str) for p in prefixes)  # pydantic's defaults are plain prefixes
    models = [c for c in _subclasses(BaseModel) if c.model_config.get("protected_namespaces") == ()]
    assert len(models) > 50  # the walk found the core's models (those with pydantic's check off)
    bad = [f"{c.__module__}.{c.__qualname__}.{name}" for c in models for name in c.model_fields
           if name.startswith(prefixes)]
    assert not bad, f"fields named like pydantic's methods: {bad}"

