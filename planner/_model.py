"""The one pydantic configuration of the core: frozen, strict (unknown keys are an error), built on first use.

Empty list and dict defaults are written ``[]`` and ``{}`` (pydantic copies a mutable default for each instance):
``default_factory=list`` makes pydantic call ``inspect.signature(list)``, which compiles the tokenize module's
regular expressions (~7 ms) at the first validation of a plan."""

import os
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict
from pydantic.fields import FieldInfo

M = TypeVar("M", bound=BaseModel)

# Field descriptions of the result and profile models are attribute docstrings (a string on the line after the
# field), not Field(description=...): the compiler drops a bare string, where each Field call and pydantic merging
# its FieldInfo cost ~0.12-0.16 M instructions per field at class creation (the plain question: ~743 M before,
# ~720 M with 162 fields moved). pydantic reads the docstrings (it parses the class's source: slow) only when
# this variable is set: scripts/gen_schema.py sets it for the published JSON Schema (tests/test_field_docs.py). A
# description too long for one line is a parenthesised string, still one constant. A field with constraints of its
# own (le=MAX_CTX, default_factory=) keeps its description in its Field call: the call stays, and moving the
# description saved nothing measurable; a constraint many fields share is an Annotated alias (pydantic's
# PositiveInt, NonNegativeFloat..., planner/schema.py's NonEmptyStrs, OptPosInt), which needs no Field call at all.
# Request models keep Field(description=...) too: --help, the web app's form and the agents' input schemas read
# those at run time.
FIELD_DOCS = "MAC_LLM_PLANNER_FIELD_DOCS"
# protected_namespaces=(): pydantic checks each field name against its reserved prefixes (model_validate,
# model_dump) at every class creation (~3.8 M instructions of the plain question); tests/test_field_names.py checks
# them once instead. alias_generator and field_title_generator are pydantic's defaults (None), written out because
# pydantic reads both for every field and finds a setting the config leaves out only after a KeyError (~2.8 M).
Frozen = ConfigDict(frozen=True, extra="forbid", defer_build=True, use_attribute_docstrings=FIELD_DOCS in os.environ,
                    protected_namespaces=(), alias_generator=None, field_title_generator=None)


# The macOS every command assumes unless the macOS input says otherwise: the current release (macOS 26 Tahoe, shipping since
# 2025-09; a Mac bought today runs it). Its GPU limit rules and their evidence: profiles/macos/macos-26.yaml.
DEFAULT_MACOS = "26"


def one_spelling(fields: Mapping[str, FieldInfo], data: object) -> None:
    """A ValueError naming both when ``data`` gives one field under two of its names (``ram`` and ``ram_gb``: a
    field's validation alias choices): pydantic would keep the first and drop the other without a word."""
    if not isinstance(data, dict):
        return
    for name, f in fields.items():
        if isinstance(f.validation_alias, AliasChoices):
            given = [c for c in f.validation_alias.choices if isinstance(c, str) and c in data]
            if len(given) > 1:
                raise ValueError(f"{' and '.join(given)} are one input under two names; give {name} only")


def assemble(cls: type[M], **values: Any) -> M:
    """``cls(**values)`` for a result the core assembles from parts it validated or computed itself: the same
    object (``model_construct``) without running the class's validator, nor building it (deferred) on first use,
    as the plain question built a Plan's and each option's and never needed them (~25 M instructions, 3 % of its
    start-up). Only for classes without validators or constraints, given every value in its field's exact type
    (no int for a float): tests/test_assemble.py validates each object the core assembles over many plans and finds
    it equal, value types included. The loop is model_construct's, without its per-field alias checks: each
    class's fields and defaults are read once (:func:`_steps`; a class with aliases or private state takes
    model_construct itself), and the test finds the objects equal to model_construct's, field order included."""
    steps = _STEPS.get(cls)
    if steps is None:
        steps = _STEPS[cls] = _steps(cls)
    if not steps:
        return cls.model_construct(**values)
    d: dict[str, Any] = {}
    for name, field, const in steps:
        if name in values:
            d[name] = values[name]
        elif field is not None:
            d[name] = field.get_default(call_default_factory=True, validated_data=d)
        elif const is not _REQUIRED:
            d[name] = const
    m = cls.__new__(cls)
    _set(m, "__dict__", d)
    _set(m, "__pydantic_fields_set__", values.keys() & d.keys())
    _set(m, "__pydantic_extra__", None)
    _set(m, "__pydantic_private__", None)
    return m


_set = object.__setattr__
_REQUIRED = object()
_IMMUTABLE = (type(None), bool, int, float, str)  # pydantic's smart_deepcopy returns these as they are
_STEPS: dict[type, list[tuple[str, FieldInfo | None, Any]]] = {}


def _steps(cls: type[BaseModel]) -> list[tuple[str, FieldInfo | None, Any]]:
    """(field, FieldInfo when pydantic must make the default, else the default itself or _REQUIRED), in field
    order; empty when model_construct must do it (aliases, post-init, extra fields kept)."""
    out: list[tuple[str, FieldInfo | None, Any]] = []
    if cls.__pydantic_post_init__ or cls.__pydantic_root_model__ or cls.model_config.get("extra") == "allow":
        return out
    for name, f in cls.__pydantic_fields__.items():
        if f.alias is not None or f.validation_alias is not None:
            return []
        if f.is_required():
            out.append((name, None, _REQUIRED))
        elif f.default_factory is None and type(f.default) in _IMMUTABLE:
            out.append((name, None, f.default))
        else:
            out.append((name, f, None))
    return out
