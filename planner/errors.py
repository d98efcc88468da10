"""A tiny error hierarchy. The core raises these; the CLI and app turn them into one line."""

from __future__ import annotations

import difflib


class PlannerError(Exception):
    """Any user-facing error: the message names the input and says what to do."""

    exit_code = 2


class UnknownProfileError(PlannerError, KeyError):
    """An id that matches no profile. Lists close matches and where profiles live."""

    def __init__(self, kind: str, value: str, known: list[str], flag: str | None = None, hint: str = ""):
        close = difflib.get_close_matches(value.lower(), [k.lower() for k in known], n=4, cutoff=0.5)
        lower_to_id = {k.lower(): k for k in known}
        close_ids = [lower_to_id[c] for c in close]
        where = f"{flag} " if flag else ""
        shown = value if len(value) <= 80 else value[:60] + "..."  # never echo a 3000-char argument back
        msg = f"unknown {kind} {where}{shown!r}"
        if close_ids:
            msg += f"; did you mean {', '.join(close_ids)}?"
        elif hint:
            msg += f"; {hint}"
        else:
            msg += f"; known: {', '.join(sorted(known)[:12])}{' ...' if len(known) > 12 else ''}"
        self.kind, self.value, self.suggestions = kind, value, close_ids
        super().__init__(msg)

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


class ProfileError(PlannerError):
    """A profile or config file that does not validate."""


class InputError(PlannerError):
    """A bad value on the command line or in the form (negative RAM, a RAM size that chip lacks...)."""


class UnsupportedArchitectureError(PlannerError):
    """A model the planner cannot model honestly (never silently treated as a Llama)."""


def render_validation_error(source: str, err) -> str:
    """pydantic ValidationError -> one line: 'source: loc: msg; loc: msg'."""
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e.get("loc", ())) or "(root)"
        parts.append(f"{loc}: {e.get('msg')}")
    return f"{source}: " + "; ".join(parts[:4]) + (" ..." if len(parts) > 4 else "")
