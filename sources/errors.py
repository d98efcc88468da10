"""Errors of the model sources (edge package). All are PlannerError subclasses: one line, exit 2."""

from __future__ import annotations

from planner.errors import HubError, PlannerError, SourceError, UnsupportedArchitectureError  # noqa: F401  (re-exported)

# import name -> the requirement of pyproject.toml that provides it (both are base dependencies; an install that
# lost one still gets the exact command)
_PACKAGES = {"huggingface_hub": "huggingface-hub>=0.24", "gguf": "gguf>=0.10", "httpx2": "huggingface-hub>=0.24"}


def missing_part(e: ImportError, what: str) -> SourceError:
    """One line naming the missing package and the exact command that installs it into this interpreter."""
    import sys

    name = (getattr(e, "name", None) or str(e)).split(".")[0]
    req = _PACKAGES.get(name, name)
    return SourceError(f"{what} needs the {req.split('>')[0]} package, missing from this install: "
                       f"{sys.executable} -m pip install '{req}'")
