"""The inputs a core message may name, as neutral keys the edges spell in their own words.

The core never writes a front end's spelling of an input (a `plan` flag, a form label, an MCP argument): a
message names the input by a marker, ``f"{IN.wired_limit} {mb} MB must be ..."`` -> ``"[[wired_limit]] ... "``,
and each edge renders the markers with its own table (cli/words.py: the `plan` flag; app/readings.py: "GPU
wired limit (Advanced)"; MCP / HTTP / Python API: the argument name ``wired_limit_mb``). Without an edge
(``str(err)`` in plain Python) a marker reads as its key. Errors carry the first input they name as
``fields["input"]`` (planner/errors.py). Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

# key -> what it is (the edges' tables give the spelling; tests/test_no_flags_in_core.py checks each edge names
# every key). Requests' fields where they exist; a few keys name an input of another question than the message's.
KEYS: dict[str, str] = {
    # the Mac
    "model": "model id, file, folder or repo", "ram": "unified memory [GB]", "chip": "chip name",
    "gpu_cores": "GPU cores of the chip", "macos": "macOS version", "wired_limit": "GPU wired limit [MB]",
    "ssd_gb": "SSD size [GB]",
    # the runtime
    "runtime": "runtime(s)", "quant": "quantization(s)", "kv_type": "KV cache type", "flash_attn": "flash attention on",
    "no_flash_attn": "flash attention off", "app_version": "Ollama / LM Studio version", "guardrail": "LM Studio guardrail",
    "draft_model": "speculative draft model", "draft_acceptance": "draft acceptance rate",
    "draft_tokens": "tokens drafted per step", "images": "images per request",
    "image_size": "image size [px]",
    # the workload
    "context": "context per user [tokens]", "users": "concurrent users", "prompt": "prompt length [tokens]",
    "gen": "answer length [tokens]", "workload": "workload preset", "min_tok_s": "minimum decode speed per user",
    "max_ttft": "longest wait for the first token", "max_request": "longest request",
    "cached_prefix": "share of each prompt already cached",
    "thinking_tokens": "tokens a reasoning model thinks before its answer",
    # predict
    "batch": "batch of sequences", "depth": "context depth [tokens]",
    # models
    "task": "task", "family": "model family", "max_params": "largest model [B parameters]",
    # buy
    "budget": "budget [USD]", "price": "a Mac's own price", "prices": "prices CSV", "max_quality_cost": "quality cost",
    "include_rumoured": "include rumoured chips", "include_discontinued": "include discontinued Macs",
    "clusters": "clusters of Macs", "kwh_price": "electricity price", "busy_hours": "busy hours per day",
    "years": "years of ownership", "all": "every configuration",
    # serve
    "slots": "server slots", "rate": "request rate", "duration": "simulated duration", "slot_context": "context per slot",
    "trace": "request trace CSV", "kv_unified": "one KV stream for every server slot",
    # cluster
    "macs": "Macs of the cluster", "link": "interconnect", "engine": "cluster engine", "mode": "split mode",
    # finetune
    "layers": "trained layers", "num_layers": "trained layers (as mlx_lm.lora names it)", "lengths": "example lengths", "fine_tune_type": "fine-tuning type",
    "seq_len": "sequence length [tokens]", "batch_size": "batch size [sequences]", "grad_checkpoint": "gradient checkpointing",
    # calibrate (a command of its own)
    "calibrate_server": "timing llama-server's host work on this Mac",
    # output
    "json": "the JSON answer",
}

MARK = re.compile(r"\[\[([a-z][a-z0-9_]*)\]\]")


class _Marks:
    """``IN.wired_limit`` -> ``"[[wired_limit]]"``; an unknown key is an AttributeError (a typo fails at once)."""

    def __getattr__(self, key: str) -> str:
        if key not in KEYS:
            raise AttributeError(f"no input {key!r} in planner.inputs.KEYS")
        return f"[[{key}]]"


IN = _Marks()


def keys_in(text: str) -> list[str]:
    """The input keys a message names, in order, each once."""
    return list(dict.fromkeys(k for k in MARK.findall(text) if k in KEYS))


def render(text: str, names: Mapping[str, str] | Callable[[str], str] | None = None) -> str:
    """``text`` with every marker spelled by ``names`` (a table or a function of the key); a key the table lacks,
    or no table, reads as the key itself. Unknown keys stay as written."""
    def one(m: re.Match[str]) -> str:
        k = m.group(1)
        if k not in KEYS:
            return m.group(0)
        if names is None:
            return k
        if callable(names):
            return names(k)
        return names.get(k, k)

    return MARK.sub(one, text) if "[[" in text else text


def render_tree(data: Any, names: Mapping[str, str] | Callable[[str], str] | None = None) -> Any:
    """Every string in a JSON-like tree (dicts, lists, tuples) rendered; anything else returned as is."""
    if isinstance(data, str):
        return render(data, names)
    if isinstance(data, dict):
        return {k: render_tree(v, names) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return type(data)(render_tree(v, names) for v in data)
    return data


def template(e: BaseException) -> str:
    """An exception's message with its markers kept (for a core message that quotes another error)."""
    t = getattr(e, "template", None)
    return t if isinstance(t, str) else str(e)
