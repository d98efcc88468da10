"""One check of the numeric options every subcommand shares, with the bounds and messages of `plan`.

`plan` validates through PlanRequest (context 1..10,000,000 tokens, users 1..MAX_USERS); the subcommands take the
same options as plain typer values, so each calls ``check_options`` first: out-of-range integers, NaN / infinite
floats and token distributions with NaN or infinite weights become one InputError line (exit 2).
"""

from __future__ import annotations

import math
import re

from planner.capacity import MAX_USERS
from planner.errors import InputError

MAX_TOKENS = 10_000_000      # PlanRequest.context (planner/plan.py), workload Length values
MAX_BATCH = MAX_USERS
MAX_PRICE_USD = 10_000_000.0
MAX_SECONDS = 10 * 365 * 86400.0

# flag -> (lowest, highest, unit) for integer options; None = no value given
INT_BOUNDS = {
    "--context": (1, MAX_TOKENS, "tokens"), "--users": (1, MAX_USERS, "concurrent users"),
    "--prompt": (0, MAX_TOKENS, "tokens"), "--gen": (0, MAX_TOKENS, "tokens"),
    "--depth": (0, MAX_TOKENS, "tokens"), "--batch": (1, MAX_BATCH, "sequences"),
    "--ubatch": (1, MAX_TOKENS, "tokens"), "--top": (1, 10_000, "rows"),
    "--gpu-cores": (1, 256, "GPU cores"), "--wired-limit": (1, 2**31 - 1, "MB"),
    "--seed": (0, 2**63 - 1, "(a seed)"), "--slot-context": (64, MAX_TOKENS, "tokens"),
}
FLOAT_BOUNDS = {
    "--ram": (0.0, 65_536.0, "GB"), "--budget": (0.0, MAX_PRICE_USD, "USD"),
    "--min-tok-s": (0.0, 1e6, "tok/s"), "--max-ttft": (0.0, MAX_SECONDS, "s"),
    "--max-request": (0.0, MAX_SECONDS, "s"), "--max-ttft-p95": (0.0, MAX_SECONDS, "s"),
    "--max-params": (0.0, 1e5, "billion parameters"),
}
_NUM = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?|nan|inf(?:inity)?", re.IGNORECASE)


def check_options(**values) -> None:
    """``check_options(context=8192, users=4, budget=None, prompt="1024:0.5,4096:0.5")``: keyword names are the
    flags without dashes (min_tok_s -> --min-tok-s); None means not given. Raises one InputError line."""
    for key, v in values.items():
        if v is None:
            continue
        flag = "--" + key.replace("_", "-")
        if isinstance(v, str):
            check_tokens(flag, v)
        elif flag in INT_BOUNDS:
            lo, hi, unit = INT_BOUNDS[flag]
            if not lo <= v <= hi:
                raise InputError(f"{flag} {v}: give {lo:,} to {hi:,} {unit}")
        elif flag in FLOAT_BOUNDS:
            lo, hi, unit = FLOAT_BOUNDS[flag]
            if not (math.isfinite(v) and lo < v <= hi):
                raise InputError(f"{flag} {v}: give a number above {lo:g} and at most {hi:,.0f} {unit}")


def check_tokens(flag: str, text: str) -> None:
    """A --prompt / --gen string (12000 | 1024:0.6,8192:0.4 | p50=..,p90=..): every number finite, token counts
    within MAX_TOKENS. The form itself is parsed by planner.workload.parse_length."""
    if len(text) > 1000:
        raise InputError(f"{flag}: {len(text):,} characters; give tokens (12000) or a short distribution")
    for m in _NUM.finditer(text):
        x = float(m.group(0))
        if not math.isfinite(x):
            raise InputError(f"{flag} {text[:60]!r}: {m.group(0)[:20]} is not a number of tokens or a weight; give finite "
                             "values, e.g. 1024:0.6,8192:0.4")
        if x > MAX_TOKENS:
            raise InputError(f"{flag} {text[:60]!r}: {m.group(0)[:20]} tokens is over {MAX_TOKENS:,}")


def check_macs(spec: str) -> None:
    """--macs counts must be plain integers ('2x ...'); '1e9x Mac Studio' was read as one Mac."""
    for item in re.split(r"[,;+]", spec or ""):
        m = re.match(r"\s*([^\s]*?)\s*[x×]\s", item + " ")
        if m and m.group(1) and not m.group(1).isdigit():
            raise InputError(f"--macs {item.strip()!r}: the count {m.group(1)!r} is not a whole number; "
                             "e.g. --macs \"2x Mac Studio M3 Ultra 512GB\"")
