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
# description too long for one line is a parenthesised string, still one constant. A field with constraints
# (gt=, min_length=, default_factory=) keeps its description in its Field call: the call stays, and moving the
# description saved nothing measurable. Request models keep Field(description=...) too: --help, the web app's form
# and the agents' input schemas read those at run time.
FIELD_DOCS = "MAC_LLM_PLANNER_FIELD_DOCS"
Frozen = ConfigDict(frozen=True, extra="forbid", defer_build=True, use_attribute_docstrings=FIELD_DOCS in os.environ)


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
    it equal, value types included."""
    return cls.model_construct(**values)
