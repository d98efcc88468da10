"""The plain `plan --model ... --ram ...` question: request values in, rendered text out. Shared by the typer
command (cli/commands.py) and the typer-free fast path of cli/main.py, so both answer identically."""

from __future__ import annotations

from typing import Any

from planner.plan import PlanRequest

from .options import values


def run_plan(given: dict[str, Any], file: str | None = None, json_out: bool = False) -> str:
    from planner.errors import InputError
    from planner.plan import plan

    from .render import render_plan

    model = given.get("model")
    if model is None:
        raise InputError("missing --model (e.g. plan --model llama-3.3-70b --ram 64); see plan --help")
    v = values(PlanRequest, given)
    if not v.get("quants"):
        v.pop("quants", None)
    req = PlanRequest(**v)
    resolved = None
    if not catalog_id(model):
        from sources import resolve_model  # edge: local files and the HF Hub (lazy: keeps catalog plans fast)

        quants = req.quants or []
        resolved = resolve_model(model, file=file, quant=quants[0] if len(quants) == 1 else None)
    result = plan(req, resolved)
    return result.model_dump_json(indent=2) + "\n" if json_out else render_plan(result) + "\n"


def catalog_id(spec: str) -> bool:
    """A catalog id or alias that is not also a local file or folder (those win, as in sources.resolve_model)."""
    from pathlib import Path

    from planner import profiles
    from planner.errors import PlannerError, UnknownProfileError

    s = spec.strip()
    try:
        local = Path(s).expanduser().exists()
    except (RuntimeError, OSError, ValueError):  # '~nosuchuser/x', names too long, NUL bytes
        local = True  # let sources.resolve_model give the one-line error
    if not s or s.lower().endswith(".gguf") or local:
        return False
    try:
        profiles.load_model(s)
    except (UnknownProfileError, PlannerError):
        return False
    return True
