"""`plan`: the command line. Parses, calls the core, renders. Errors become one line on stderr, exit 2.

The plain question (`plan --model llama-3.3-70b --ram 64`: `--flag value` pairs of the plan options, --json,
--[no-]flash-attn) is parsed here without importing typer; anything else (subcommands, --help, `--x=y`, a value
starting with '-', a repeated single-valued flag, a value that does not convert) goes to the typer application
in cli/commands.py, which answers the plain question through the same function (cli/plan.py run_plan).
"""

from __future__ import annotations

import gc
import os
import re
import sys
import types
from typing import TYPE_CHECKING

# pydantic scans every installed distribution for plugins on its first schema build (importlib.metadata
# entry_points): ~0.1 s on a full environment. The planner uses none; a user can still opt in by setting it.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")


def skip_plugin_discovery() -> None:
    """With plugins disabled, pydantic still imports its plugin loader at its first validator, and the loader
    imports importlib.metadata (email, zipfile, csv, socket: 8 % of the plain question's instructions) only for
    ``entry_points``, which it then does not call (pydantic/plugin/_loader.py get_plugins returns () first when
    PYDANTIC_DISABLE_PLUGINS is set). Give it a loader that answers the same; tests/cli/test_startup.py checks
    that the real loader still has this shape."""
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") in ("__all__", "1", "true"):
        loader = types.ModuleType("pydantic.plugin._loader")
        loader.get_plugins = lambda: ()  # type: ignore[attr-defined]
        sys.modules.setdefault("pydantic.plugin._loader", loader)


skip_plugin_discovery()

if TYPE_CHECKING:
    from pydantic import ValidationError

# The plain question's flags: flag -> (PlanRequest field, converter, repeatable). tests/cli/test_options.py
# checks this table against the typer command (same flags, same fields) and that both paths answer alike.
FAST_FLAGS: dict[str, tuple[str, type, bool]] = {
    "--model": ("model", str, False), "-m": ("model", str, False),
    "--ram": ("ram_gb", float, False),
    "--chip": ("chip", str, False),
    "--gpu-cores": ("gpu_cores", int, False),
    "--runtime": ("runtimes", str, True), "-r": ("runtimes", str, True),
    "--quant": ("quants", str, True), "-q": ("quants", str, True),
    "--context": ("context", int, False), "-c": ("context", int, False),
    "--users": ("users", int, False), "-u": ("users", int, False),
    "--kv-type": ("kv_type", str, False),
    "--wired-limit": ("wired_limit_mb", int, False),
    "--macos": ("macos", str, False),
    "--ubatch": ("n_ubatch", int, False),
    "--prompt": ("prompt_tokens", int, False),
    "--gen": ("gen_tokens", int, False),
    "--images": ("images", int, False),
    "--image-size": ("image_size", str, False),
    "--draft-model": ("draft_model", str, False),
    "--draft-acceptance": ("draft_acceptance", float, False),
    "--draft-tokens": ("draft_tokens", int, False),
    "--app-version": ("app_version", str, False),
    "--guardrail": ("guardrail", str, False),
    "--thinking-tokens": ("thinking_tokens", int, False),
}


# Flags without a value on the fast path: flag -> (key, value)
FAST_SWITCHES: dict[str, tuple[str, bool]] = {"--json": ("json_out", True), "--flash-attn": ("flash_attn", True),
                                              "--no-flash-attn": ("flash_attn", False)}


def fast_values(argv: list[str]) -> dict | None:
    """PlanRequest values (plus ``json_out``) for a plain question, or None when typer must parse ``argv``."""
    out: dict = {}
    it = iter(argv)
    for flag in it:
        if flag in FAST_SWITCHES:
            key, value = FAST_SWITCHES[flag]
            if key in out:
                return None
            out[key] = value
            continue
        spec, raw = FAST_FLAGS.get(flag), next(it, None)
        if spec is None or raw is None or raw.startswith("-"):
            return None
        field, conv, repeatable = spec
        try:
            value = conv(raw)
        except (ValueError, OverflowError):
            return None
        if repeatable:
            out.setdefault(field, []).append(value)
        elif field in out:
            return None
        else:
            out[field] = value
    return out if "model" in out else None


def _one_line(msg: object) -> str:
    """Errors are one stderr line even when the bad input holds a newline (--kv-type $'f16\\nx')."""
    return " ".join(str(msg).splitlines()) or "(no message)"


# PlanRequest field -> the flag a user typed (pydantic reports field names)
_FLAGS = {"ram_gb": "--ram", "wired_limit_mb": "--wired-limit", "n_ubatch": "--ubatch", "quants": "--quant",
          "runtimes": "--runtime", "gpu_cores": "--gpu-cores", "kv_type": "--kv-type", "prompt_tokens": "--prompt",
          "gen_tokens": "--gen", "flash_attn": "--flash-attn"}


def _flag_error(e: ValidationError) -> str:
    parts = []
    for err in e.errors()[:3]:
        field = str(err.get("loc", ("input",))[0])
        flag = _FLAGS.get(field, f"--{field.replace('_', '-')}")
        value = err.get("input")
        shown = f" {value!r}" if isinstance(value, int | float | str) and len(repr(value)) < 40 else ""
        parts.append(f"{flag}{shown}: {str(err.get('msg', '')).removeprefix('Value error, ')}")
    return "; ".join(parts)


def _core_errors(run) -> int:
    """Run ``run()`` (prints its answer, returns an exit code); planner and validation errors become one line."""
    from pydantic import ValidationError

    from planner.errors import PlannerError

    try:
        return run()
    except PlannerError as e:
        print(f"plan: error: {_one_line(e)}", file=sys.stderr)
        return e.exit_code
    except ValidationError as e:
        print(f"plan: error: {_one_line(_flag_error(e))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


def _fast(given: dict) -> int:
    from .plan import run_plan

    json_out = given.pop("json_out", False)
    sys.stdout.write(run_plan(given, json_out=json_out))
    sys.stdout.flush()
    return 0


def _typer(argv: list[str]) -> int:
    gc.enable()  # see run(): subcommands may sweep long, and collect as usual
    from .commands import ABORT, CLICK, EXIT, USAGE, app, param_name

    try:
        rv = app(args=argv, prog_name="plan", standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except EXIT as e:
        return e.exit_code
    except ABORT:
        print("plan: aborted", file=sys.stderr)
        return 130
    except USAGE as e:
        msg = _one_line(param_name(e))
        print(f"plan: error: {msg}{'' if 'plan --help' in msg else ' (see plan --help)'}", file=sys.stderr)
        return 2
    except CLICK as e:  # e.g. FileError
        print(f"plan: error: {_one_line(e.format_message())}", file=sys.stderr)
        return 2


_RAM_UNIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:GB|GiB|G)\s*$", re.IGNORECASE)


def ram_units(argv: list[str]) -> list[str]:
    """``--ram 16GB`` / ``--ram=16 GiB`` as ``--ram 16``: Apple's "16 GB" of unified memory is 16 GiB, the unit
    --ram counts in, so both suffixes name the same number (issue 35: '--ram 16GB' was refused)."""
    out, it = [], iter(argv)
    for a in it:
        if a == "--ram":
            v = next(it, None)
            m = _RAM_UNIT.match(v) if v is not None else None
            out += [a] + ([m.group(1)] if m else [] if v is None else [v])
        elif a.startswith("--ram=") and (m := _RAM_UNIT.match(a[6:])):
            out.append(f"--ram={m.group(1)}")
        else:
            out.append(a)
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code. One line on stderr for any user error."""
    argv = ram_units(sys.argv[1:] if argv is None else list(argv))
    if sys.platform == "darwin" or os.environ.get("MAC_LLM_PLANNER_FAKE_DARWIN") == "1":
        from .thismac import fill  # on a Mac, no --chip/--ram: answer for this Mac (cli/thismac.py)

        argv = fill(argv)
    given = fast_values(argv)
    if given is not None:
        return _core_errors(lambda: _fast(given))
    return _core_errors(lambda: _typer(argv))


def run() -> None:
    """The `plan` console script. The cyclic collector stays off while the plain question imports pydantic and
    builds the core's classes: hundreds of thousands of young objects it would walk for nothing in a one-shot
    answer (~4 % of the start-up's instructions; peak memory unchanged). Subcommands turn it back on."""
    gc.disable()
    sys.exit(main())


if __name__ == "__main__":
    run()
