"""The command line's spelling of the core's inputs: each planner.inputs key as its `plan` flag (errors, notes,
--help text and --json answers), and as the argument names of the agent interfaces (MCP, HTTP API, Python API).

The core names an input by a marker (``[[wired_limit]]``, planner/inputs.py); this module is where the CLI turns
it into ``--wired-limit``. tests/test_no_flags_in_core.py checks that every key has a flag here and that every
flag is one of the `plan` commands' own options.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from planner.inputs import render, render_tree

# key -> flag, as the `plan` commands spell it (the command in front where the input belongs to another command)
FLAGS: dict[str, str] = {
    "model": "--model", "ram": "--ram", "chip": "--chip", "gpu_cores": "--gpu-cores", "macos": "--macos",
    "wired_limit": "--wired-limit", "ssd_gb": "--ssd-gb",
    "runtime": "--runtime", "quant": "--quant", "kv_type": "--kv-type", "flash_attn": "--flash-attn",
    "no_flash_attn": "--no-flash-attn", "app_version": "--app-version", "guardrail": "--guardrail",
    "draft_model": "--draft-model", "draft_acceptance": "--draft-acceptance",
    "draft_tokens": "--draft-tokens", "images": "--images",
    "image_size": "--image-size",
    "context": "--context", "users": "--users", "prompt": "--prompt", "gen": "--gen", "workload": "--workload",
    "min_tok_s": "--min-tok-s", "max_ttft": "--max-ttft", "max_request": "--max-request",
    "cached_prefix": "--cached-prefix", "thinking_tokens": "--thinking-tokens",
    "batch": "--batch", "depth": "--depth",
    "task": "--task", "family": "--family", "max_params": "--max-params",
    "budget": "--budget", "price": "--price", "prices": "--prices", "max_quality_cost": "--max-quality-cost",
    "include_rumoured": "--include-rumoured", "include_discontinued": "--include-discontinued",
    "clusters": "--clusters", "kwh_price": "--kwh-price", "busy_hours": "--busy-hours", "years": "--years",
    "all": "--all",
    "slots": "--slots", "rate": "--rate", "duration": "--duration", "slot_context": "--slot-context",
    "trace": "--trace", "kv_unified": "--kv-unified",
    "macs": "--macs", "link": "--link", "engine": "--engine", "mode": "--mode",
    "layers": "--layers", "lengths": "--lengths", "fine_tune_type": "--fine-tune-type", "seq_len": "--max-seq-length", "num_layers": "--num-layers",
    "batch_size": "--batch-size", "grad_checkpoint": "--grad-checkpoint",
    "calibrate_server": "plan calibrate --runtime llama.cpp --server",
    "json": "--json",
}

# key -> argument name of the agent interfaces where it is not the key itself; per question where the question's
# request names it otherwise (cli/questions.py QUESTIONS: `plan` takes PlanRequest's field names)
ARGS: dict[str, str] = {"all": "all_rows", "calibrate_server": "plan calibrate --runtime llama.cpp --server",
                        "json": "the JSON answer"}
QUESTION_ARGS: dict[str, dict[str, str]] = {
    "plan": {"wired_limit": "wired_limit_mb", "runtime": "runtimes", "quant": "quants",
             "no_flash_attn": "flash_attn"},
}


def flag(key: str) -> str:
    return FLAGS.get(key, key)


def say(text: str) -> str:
    """A core message (or a whole answer's text) in the command line's words."""
    return render(text, FLAGS)


def said(e: BaseException) -> str:
    """An error's message in the command line's words."""
    message = getattr(e, "message", None)
    return message(FLAGS) if callable(message) else str(e)


def say_json(data: Any) -> Any:
    """Every string of a JSON-like answer in the command line's words."""
    return render_tree(data, FLAGS)


def arg_names(question: str | None = None) -> dict[str, str]:
    """key -> argument name for one question of the agent interfaces (MCP, HTTP API, Python API)."""
    return {**ARGS, **QUESTION_ARGS.get(question or "", {})}


def in_args(data: Any, question: str | None = None) -> Any:
    """A JSON-like answer, a result model or a message with each input named as the question's argument."""
    names = arg_names(question)
    if isinstance(data, BaseModel):
        update = {}
        for name in type(data).model_fields:
            value = getattr(data, name)
            new = in_args(value, question)
            if new is not value:
                update[name] = new
        return data.model_copy(update=update) if update else data
    if isinstance(data, str):
        out = render(data, names)
        return data if out == data else out
    if isinstance(data, list | tuple):
        items = [in_args(v, question) for v in data]
        return data if all(a is b for a, b in zip(items, data, strict=True)) else type(data)(items)
    if isinstance(data, dict):
        d = {k: in_args(v, question) for k, v in data.items()}
        return data if all(d[k] is data[k] for k in data) else d
    return data


def _num(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


# pydantic error type -> the rule and the fix, worded from the error's context (pydantic_core ErrorType names)
_CONSTRAINTS = {
    "less_than": lambda c: f"must be less than {_num(c['lt'])}; give a smaller value",
    "less_than_equal": lambda c: f"must be at most {_num(c['le'])}; give {_num(c['le'])} or less",
    "greater_than": lambda c: f"must be more than {_num(c['gt'])}; give a larger value",
    "greater_than_equal": lambda c: f"must be at least {_num(c['ge'])}; give {_num(c['ge'])} or more",
    "finite_number": lambda c: "must be a finite number; give e.g. 0.5",
    "int_parsing": lambda c: "must be a whole number; give e.g. 4",
    "int_from_float": lambda c: "must be a whole number; give e.g. 4",
    "float_parsing": lambda c: "must be a number; give e.g. 0.5",
    "bool_parsing": lambda c: "must be true or false",
    "literal_error": lambda c: f"must be one of {c.get('expected', 'the listed values')}",
    "string_too_short": lambda c: "must not be empty; give a value",
}


def constraint_text(err: dict[str, Any]) -> str:
    """One pydantic error as the rule broken and how to mend it ("must be less than 1; give a smaller value"),
    where pydantic's own message names only the rule ("Input should be less than 1"); other errors keep their
    message (a validator's own text already names the fix)."""
    word = _CONSTRAINTS.get(str(err.get("type", "")))
    if word is not None:
        try:
            return word(err.get("ctx") or {})
        except KeyError:
            pass
    return str(err.get("msg", "")).removeprefix("Value error, ")
