"""The one error hierarchy of the planner (core, sources, calibration and the CLI's question layer).

Two kinds, each with a stable ``code`` (the JSON contract: ``{"error": {"code": ..., "message": ...}}``):

- :class:`PlannerError` and its subclasses: the question cannot be answered as asked (a bad value, an unknown
  id, an unreadable file, an unreachable hub, a failed calibration run). The CLI prints one line; exit 2.
- :class:`AnswerIsNo`: the question is valid and its answer is "no" (the model does not fit, no configuration
  meets the targets, no Mac within the budget). Not an error for the user: exit 0, rendered as an answer, with
  the closest options in ``fields``.
The message names the input and says what to do; ``fields`` carries the same facts as numbers for programs.
A message names an input by a marker (planner/inputs.py: ``f"{IN.ram} ..."``), never by a front end's spelling:
``err.template`` keeps the markers for the edges to render (:meth:`PlannerError.message`), ``str(err)`` reads
each as its key, and ``fields["input"]`` is the first input the message names (a "no" answer:
``fields["inputs"]``, the inputs it suggests changing).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError

from .inputs import keys_in, render


class PlannerError(Exception):
    """Any user-facing error: the message names the input and says what to do."""

    exit_code = 2
    code = "error"
    inputs_field = "input"

    def __init__(self, *args: object, fields: dict[str, Any] | None = None):
        super().__init__(*args)
        self.template = args[0] if len(args) == 1 and isinstance(args[0], str) else Exception.__str__(self)
        self.fields: dict[str, Any] = dict(fields or {})
        named = keys_in(self.template)
        if named and self.inputs_field not in self.fields:  # the input it is about; a "no": the inputs to change
            self.fields[self.inputs_field] = named[0] if self.inputs_field == "input" else named

    def message(self, names: Mapping[str, str] | Callable[[str], str] | None = None) -> str:
        """The message with each input spelled by ``names`` (an edge's table; None: the keys)."""
        return render(self.template, names)

    def __str__(self) -> str:
        return self.message()

    def to_json(self, names: Mapping[str, str] | Callable[[str], str] | None = None) -> dict[str, Any]:
        """``{"code", "message"}`` plus the structured ``fields`` (the JSON form of this error)."""
        return {"code": self.code, "message": " ".join(self.message(names).splitlines()), **self.fields}


class UnknownProfileError(PlannerError, KeyError):
    """An id that matches no profile. Lists close matches and where profiles live."""

    code = "unknown_profile"

    def __init__(self, kind: str, value: str, known: list[str], flag: str | None = None, hint: str = ""):
        """``flag``: the input's marker (planner.inputs.IN.model), said after the kind."""
        import difflib  # here: only a misspelt input needs it

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
        super().__init__(msg, fields={"kind": kind, "suggestions": close_ids})

    def __str__(self) -> str:  # KeyError would quote the message; "unknown model 'x'", not "unknown model model 'x'"
        return render(re.sub(r"^(unknown [^\[]*?)\[\[[a-z_]+\]\] ", r"\1", self.template))

    def message(self, names: Mapping[str, str] | Callable[[str], str] | None = None) -> str:
        """As PlannerError.message, but an input spelled as the kind itself (the agents' ``model`` argument) is
        said once: "unknown model 'x'", not "unknown model model 'x'"."""
        out = super().message(names)
        doubled = f"unknown {self.kind} {self.kind} "
        return out.replace(doubled, f"unknown {self.kind} ", 1) if out.startswith(doubled) else out


class ProfileError(PlannerError):
    """A profile or config file that does not validate."""

    code = "profile"


class InputError(PlannerError):
    """A bad value on the command line or in the form (negative RAM, a RAM size that chip lacks...)."""

    code = "input"


class UnsupportedArchitectureError(PlannerError):
    """A model the planner cannot model honestly (never silently treated as a Llama)."""

    code = "unsupported_architecture"


class SourceError(PlannerError):
    """A model file, folder or config that cannot be read (bad GGUF, malformed config.json...)."""

    code = "source"


class HubError(PlannerError):
    """The Hugging Face Hub could not answer (404, gated, no network, offline cache miss)."""

    code = "hub"


class CalibrationError(PlannerError, RuntimeError):
    """A calibration step failed; the message names the step and carries the runtime's own message."""

    code = "calibration"


class DatasetError(PlannerError):
    """The measurements CSV is missing or malformed; the message names the file, row and column."""

    code = "dataset"


class QuestionError(InputError, ValueError):
    """A bad question to the agent interfaces (MCP, HTTP API): unknown question, argument or value."""

    code = "question"


# ------------------------------------------------------------------------------------- answers, not errors


class AnswerIsNo(PlannerError):
    """A valid question whose answer is no: exit 0, rendered as an answer; ``fields`` holds the closest options."""

    exit_code = 0
    code = "no"
    inputs_field = "inputs"


class NoFitError(AnswerIsNo):
    """The model does not fit in memory in any searched configuration."""

    code = "no_fit"


class TargetsUnreachableError(AnswerIsNo):
    """No configuration meets the workload's targets; the message says what the best reaches."""

    code = "targets_missed"


class BudgetError(AnswerIsNo):
    """The budget is below every Mac in the catalog; ``fields`` names the cheapest."""

    code = "over_budget"


def render_validation_error(source: str, err: ValidationError) -> str:
    """pydantic ValidationError -> one line: 'source: loc: msg; loc: msg'."""
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e.get("loc", ())) or "(root)"
        parts.append(f"{loc}: {e.get('msg')}")
    return f"{source}: " + "; ".join(parts[:4]) + (" ..." if len(parts) > 4 else "")
