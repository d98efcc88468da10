"""The --json contract of every command: one ``schema_version``, errors and "no" answers in one shape.

- an answer: the command's result model, dumped with ``schema_version`` first (docs/schema/<command>.json is its
  JSON Schema, written by scripts/gen_schema.py from the same models);
- a "no" answer (planner.errors.AnswerIsNo: does not fit, targets missed, over budget): exit 0,
  ``{"schema_version": ..., "answer": {"code": ..., "message": ..., <closest options>}}``;
- an error (bad input): exit 2, ``{"schema_version": ..., "error": {"code": ..., "message": ...}}`` on stdout.
"""

from __future__ import annotations

import json
import re
from typing import Any

# 2: one name per fact across commands (chip = profile id with chip_label beside it, wired_limit_bytes,
# decode_tok_s_range), errors and "no" answers as JSON. 3: plan running / models --installed say wired_limit_bytes
# and chip, a models row's per-user decode is decode_tok_s_per_user, every TTFT has cached_prefix_share beside it.
# Bump on any rename or removal; additions keep it.
SCHEMA_VERSION = "4"


def with_version(data: Any) -> dict[str, Any]:
    """``data`` (a model or its JSON form) with ``schema_version`` first."""
    if hasattr(data, "model_dump"):
        data = data.model_dump(mode="json")
    if not isinstance(data, dict):
        data = {"result": data}
    return {"schema_version": SCHEMA_VERSION, **data}


def dumps(data: Any) -> str:
    """The JSON text of a command's answer (indented, schema_version first)."""
    from .words import say_json

    return json.dumps(say_json(with_version(data)), indent=2, ensure_ascii=False)


# a run of more than LONG characters without a space in an error line is an argument echoed back (a 5000-char
# --price or --trace): shown by its start and end, so the line stays one readable line
LONG = 240


def clip_long(text: str) -> str:
    """``text`` with every run of more than LONG non-space characters cut to its first 80 and last 40."""
    if len(text) <= LONG:
        return text
    return re.sub(rf"\S{{{LONG + 1},}}", lambda m: f"{m.group(0)[:80]}...{m.group(0)[-40:]}", text)


def one_line(msg: object) -> str:
    return clip_long(" ".join(str(msg).splitlines())) or "(no message)"


def error_json(code: str, message: str, **fields: Any) -> str:
    from .words import say

    return json.dumps({"schema_version": SCHEMA_VERSION, "error": {"code": code, "message": one_line(say(message)),
                                                                   **fields}}, indent=2, ensure_ascii=False)


def answer_json(e: Any) -> str:
    """The JSON of a planner.errors.AnswerIsNo: a valid question answered "no", with the closest options."""
    from .words import FLAGS

    return json.dumps({"schema_version": SCHEMA_VERSION, "answer": e.to_json(FLAGS)}, indent=2, ensure_ascii=False)


def load(model: Any, text: str) -> Any:
    """Read a command's --json answer back into its result model (``schema_version`` is the envelope's, not the
    model's): ``load(ServeResult, out)``."""
    data = json.loads(text)
    data.pop("schema_version", None)
    return model.model_validate(data)
