"""The one pydantic configuration of the core: frozen, strict (unknown keys are an error), built on first use.

Empty list and dict defaults are written ``[]`` and ``{}`` (pydantic copies a mutable default for each instance):
``default_factory=list`` makes pydantic call ``inspect.signature(list)``, which compiles the tokenize module's
regular expressions (~7 ms) at the first validation of a plan."""

from pydantic import ConfigDict

Frozen = ConfigDict(frozen=True, extra="forbid", defer_build=True)


# The macOS every command assumes unless the macOS input says otherwise: the current release (macOS 26 Tahoe, shipping since
# 2025-09; a Mac bought today runs it). Its GPU limit rules and their evidence: profiles/macos/macos-26.yaml.
DEFAULT_MACOS = "26"
