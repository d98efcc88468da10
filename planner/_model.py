"""The one pydantic configuration of the core: frozen, strict (unknown keys are an error), built on first use."""

from pydantic import ConfigDict

Frozen = ConfigDict(frozen=True, extra="forbid", defer_build=True)
