"""Errors of the model sources (edge package). All are PlannerError subclasses: one line, exit 2."""

from __future__ import annotations

from planner.errors import PlannerError, UnsupportedArchitectureError  # noqa: F401  (re-exported)


class SourceError(PlannerError):
    """A model file, folder or config that cannot be read (bad GGUF, malformed config.json...)."""


class HubError(PlannerError):
    """The Hugging Face Hub could not answer (404, gated, no network, offline cache miss)."""
