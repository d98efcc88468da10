"""Typer options read from a request model: the field's description is the --help text and its default the
option's default, so each command's options are written once, in its request model."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

_UNSET: Any = object()


def opt(request: type[BaseModel], field: str, *decls: str, default: Any = _UNSET, repeatable: bool = False,
        help_suffix: str = "") -> Any:
    """``typer.Option`` for ``request.field``: required fields are required options, list fields default to None
    (the request's own default then applies). ``repeatable`` notes it in the help."""
    f = request.model_fields[field]
    if default is _UNSET:
        if f.is_required():
            default = ...
        elif f.default_factory is not None or f.default is PydanticUndefined:
            default = None
        else:
            default = f.default
    from .words import say

    text = say(f.description or "") + help_suffix + (" (repeatable)" if repeatable else "")
    import typer  # here, not at the top: cli/plan.py (the fast path) uses values() without typer

    return typer.Option(default, *decls, help=text)


# The workload options' one spelling in every command (plan, predict, recommend, buy, models, serve): field ->
# flags. Their type, help text and parser are the shared fields of planner/requests.py (parse_length for lengths).
WORKLOAD_FLAGS: dict[str, tuple[str, ...]] = {
    "prompt": ("--prompt",), "gen": ("--gen",),
    "users": ("--users", "-u"), "rate": ("--rate",), "cached_prefix": ("--cached-prefix",),
}


def wopt(request: type[BaseModel], field: str, default: Any = _UNSET, help_suffix: str = "") -> Any:
    """``typer.Option`` of a workload field (``prompt``, ``gen``, ``users``, ``rate``, ``cached_prefix``) with its
    one spelling (:data:`WORKLOAD_FLAGS`); a point-valued length's default is shown as its tokens."""
    return opt(request, field, *WORKLOAD_FLAGS[field], default=default, help_suffix=help_suffix)


def values(request: type[BaseModel], given: dict[str, Any]) -> dict[str, Any]:
    """The CLI's values for ``request``: None for a list or an unset optional leaves the request's default."""
    out = {}
    for name, v in given.items():
        f = request.model_fields[name]
        if v is None and (f.default_factory is not None or f.is_required()):
            continue
        out[name] = list(v) if isinstance(v, (list, tuple)) else v
    return out


def check(request: type[BaseModel], given: dict[str, Any]) -> BaseModel:
    """Validate a command's arguments against its request model (a bad value: one line naming the flag)."""
    return request(**values(request, {k: v for k, v in given.items() if k in request.model_fields}))
