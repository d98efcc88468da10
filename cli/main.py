"""`plan`: the command line. Parses, calls the core, renders. Errors become one line on stderr, exit 2 (under
--json: a JSON error object on stdout, cli/contract.py); a "no" answer (does not fit...) is an answer, exit 0.

The plain question (`plan --model llama-3.3-70b --ram 64`: `--flag value` pairs of the plan options, --json,
--[no-]flash-attn) is parsed here without importing typer; anything else (subcommands, --help, `--x=y`, a value
starting with '-', a repeated single-valued flag, a value that does not convert) goes to the typer application
in cli/commands.py, which answers the plain question through the same function (cli/plan.py run_plan).
`plan models --ram ...` (the catalog ranked for one Mac) takes the same kind of path (MODELS_FAST_FLAGS, answered
by cli/models_rank.py rank_text, which the typer command calls too).
"""

from __future__ import annotations

import atexit
import gc
import os
import re
import sys
import types
from typing import TYPE_CHECKING, NoReturn

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
    "--ram": ("ram", float, False),
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
    "--prompt": ("prompt", str, False),
    "--gen": ("gen", str, False),
    "--cached-prefix": ("cached_prefix", float, False),
    "--images": ("images", int, False),
    "--image-size": ("image_size", str, False),
    "--draft-model": ("draft_model", str, False),
    "--draft-acceptance": ("draft_acceptance", float, False),
    "--draft-tokens": ("draft_tokens", int, False),
    "--app-version": ("app_version", str, False),
    "--guardrail": ("guardrail", str, False),
    "--ssd-gb": ("ssd_gb", int, False),
    "--thinking-tokens": ("thinking_tokens", int, False),
}


# Flags without a value on the fast path: flag -> (key, value)
FAST_SWITCHES: dict[str, tuple[str, bool]] = {"--json": ("json_out", True), "--flash-attn": ("flash_attn", True),
                                              "--no-flash-attn": ("flash_attn", False)}


# `plan models --ram ...` (the ranking) on the same fast path: flag -> (models_cmd parameter, converter, repeatable);
# tests/cli/test_options.py checks it against the typer command too. --installed / --dir and the catalog listing
# (no --ram) go to typer.
MODELS_FAST_FLAGS: dict[str, tuple[str, type, bool]] = {
    "--ram": ("ram", float, False), "--chip": ("chip", str, False), "--gpu-cores": ("gpu_cores", int, False),
    "--task": ("task", str, False), "--min-tok-s": ("min_tok_s", float, False),
    "--context": ("context", int, False), "-c": ("context", int, False),
    "--users": ("users", int, False), "-u": ("users", int, False),
    "--prompt": ("prompt", str, False), "--gen": ("gen", str, False),
    "--cached-prefix": ("cached_prefix", float, False),
    "--runtime": ("runtime", str, True), "-r": ("runtime", str, True),
    "--max-params": ("max_params", float, False), "--family": ("family", str, False),
    "--macos": ("macos", str, False), "--top": ("top", int, False),
}
MODELS_FAST_SWITCHES: dict[str, tuple[str, bool]] = {"--json": ("json_out", True)}


def fast_values(argv: list[str], flags: dict | None = None, switches: dict | None = None,
                required: str = "model") -> dict | None:
    """PlanRequest values (plus ``json_out``) for a plain question, or None when typer must parse ``argv``
    (with ``flags``/``switches``/``required``: another command's table, e.g. MODELS_FAST_FLAGS)."""
    flags = FAST_FLAGS if flags is None else flags
    switches = FAST_SWITCHES if switches is None else switches
    out: dict = {}
    it = iter(argv)
    for flag in it:
        if flag in switches:
            key, value = switches[flag]
            if key in out:
                return None
            out[key] = value
            continue
        spec, raw = flags.get(flag), next(it, None)
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
    return out if required in out else None


def models_fast_values(argv: list[str]) -> dict | None:
    """models_cmd's values for `plan models --ram ...` in MODELS_FAST_FLAGS' flags, or None (typer parses)."""
    if argv[:1] != ["models"]:
        return None
    return fast_values(argv[1:], MODELS_FAST_FLAGS, MODELS_FAST_SWITCHES, required="ram")


def _one_line(msg: object) -> str:
    """Errors are one stderr line even when the bad input holds a newline (--kv-type $'f16\\nx'); control
    characters shown as escapes and URL credentials redacted (planner.format.safe_text)."""
    from planner.format import safe_text

    from .contract import clip_long

    return clip_long(safe_text(" ".join(str(msg).splitlines()), keep_newlines=False)) or "(no message)"


class _SafeStdout:
    """sys.stdout while a command runs: every write goes through planner.format.safe_text, so a name read from a
    model file or a hub (a GGUF general.name, a file name) never reaches the terminal with its escape sequences,
    and no URL is printed with its credentials. JSON output is unchanged (json escapes control characters)."""

    def __init__(self, raw):
        self._raw = raw

    def write(self, s: str) -> int:
        from planner.format import safe_text

        self._raw.write(safe_text(s))
        return len(s)

    def __getattr__(self, name):
        return getattr(self._raw, name)


# PlanRequest field -> the flag a user typed (pydantic reports field names)
_FLAGS = {"ram": "--ram", "wired_limit_mb": "--wired-limit", "n_ubatch": "--ubatch", "quants": "--quant",
          "runtimes": "--runtime", "gpu_cores": "--gpu-cores", "kv_type": "--kv-type", "prompt": "--prompt",
          "gen": "--gen", "flash_attn": "--flash-attn"}


def _flag_error(e: ValidationError) -> str:
    from .words import constraint_text

    parts = []
    # only a request's fields are flags; a model read from a file failing its own schema (a ModelProfile whose
    # params_b is out of range) named a --params-b flag that does not exist
    request = str(getattr(e, "title", "")).endswith("Request")
    for err in e.errors()[:3]:
        loc = err.get("loc", ("input",))
        field = str(loc[0]) if loc else "input"
        flag = (_FLAGS.get(field, f"--{field.replace('_', '-')}") if request
                else f"{'the model' if 'Model' in str(getattr(e, 'title', '')) else 'the input'}'s "
                     f"{'.'.join(map(str, loc))[:60]}")
        value = err.get("input")
        shown = f" {value!r}" if isinstance(value, int | float | str) and len(repr(value)) < 40 else ""
        parts.append(f"{flag}{shown}: {constraint_text(err)}")
    return "; ".join(parts)


def _error(code: str, message: str, json_mode: bool, fields: dict | None = None) -> int:
    """Bad input: one line on stderr, or under --json the error object on stdout (cli/contract.py) with the
    error's structured ``fields`` (``input``: the key of the input it is about); exit 2."""
    if json_mode:
        from .contract import error_json

        _say(error_json(code, message, **(fields or {})))
    else:
        _say(f"plan: error: {_one_line(message)}", sys.stderr)
    return 2


def _say(text: str, file=None) -> None:
    """print(), except that a reader gone away (`plan ... --json | head -1`) ends the output quietly: the rest of
    it, and the flush at exit, go to /dev/null instead of raising BrokenPipeError from an error handler."""
    out = sys.stdout if file is None else file
    try:
        print(text, file=out)
        out.flush()
    except BrokenPipeError:
        _drop_output(out)


def _drop_output(out) -> None:
    import contextlib

    with contextlib.suppress(OSError, ValueError, AttributeError):  # no descriptor (a test's stream): nothing to flush
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())


def _core_errors(run, json_mode: bool = False) -> int:
    """Run ``run()`` (prints its answer, returns an exit code); planner and validation errors become one line.
    A "no" answer (planner.errors.AnswerIsNo: does not fit, targets missed, over budget) is an answer: stdout,
    exit 0."""
    from pydantic import ValidationError

    from planner.errors import AnswerIsNo, PlannerError

    from .words import said

    try:
        return run()
    except AnswerIsNo as e:
        from .contract import answer_json

        _say(answer_json(e) if json_mode else _one_line(said(e)))
        return 0
    except PlannerError as e:
        if e.exit_code != 2:
            _say(f"plan: error: {_one_line(said(e))}", sys.stderr)
            return e.exit_code
        return _error(e.code, said(e), json_mode, e.fields)
    except ValidationError as e:
        return _error("input", _flag_error(e), json_mode)
    except BrokenPipeError:
        _drop_output(sys.stdout)
        return 0


def _fast(given: dict) -> int:
    from .plan import run_plan

    json_out = given.pop("json_out", False)
    sys.stdout.write(run_plan(given, json_out=json_out))
    sys.stdout.flush()
    return 0


def _fast_models(given: dict) -> int:
    from .models_rank import rank_text

    sys.stdout.write(rank_text(given))
    sys.stdout.flush()
    return 0


def _typer(argv: list[str], json_mode: bool = False) -> int:
    gc.enable()  # see run(): subcommands may sweep long, and collect as usual
    from .commands import ABORT, CLICK, EXIT, USAGE, app, param_name

    twice = repeated_option(argv, app)
    if twice:
        return _error("input", twice, json_mode)
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
        ctx = getattr(e, "ctx", None)  # the subcommand the error is in: its own --help lists its options
        where = ctx.command_path if ctx is not None and ctx.command_path else "plan"
        return _error("usage", f"{msg}{'' if '--help' in msg else f' (see {where} --help)'}", json_mode)
    except CLICK as e:  # e.g. FileError
        return _error("usage", e.format_message(), json_mode)


def repeated_option(argv: list[str], app) -> str | None:
    """A single-valued option given twice with different values ('--model a --model b'): the parser would keep the
    last one while the plain question's fast path refuses it; every command refuses it the same way."""
    from typer.main import get_command

    group = get_command(app)
    cmd, seen = group, {}

    def table(c) -> dict:
        return {o: p for p in getattr(c, "params", []) for o in (*p.opts, *getattr(p, "secondary_opts", []))}

    opts, i = table(cmd), 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            break
        name, eq, val = a.partition("=") if a.startswith("--") else (a, "", "")
        p = opts.get(name) if a.startswith("-") else None
        if p is not None:
            takes = not getattr(p, "is_flag", False) and not getattr(p, "count", False)
            if takes and not eq:
                val = argv[i + 1] if i + 1 < len(argv) else ""
                i += 1
            if takes and not getattr(p, "multiple", False):
                key = (cmd.name, p.name)
                if key in seen and seen[key][1] != val:
                    first, v0 = seen[key]
                    return (f"{name} given twice ({v0[:40]!r} and {val[:40]!r}); give it once"
                            + (f" ({first} and {name} are the same option)" if first != name else ""))
                seen.setdefault(key, (name, val))
        elif cmd is group and not a.startswith("-") and a in getattr(group, "commands", {}):
            cmd = group.commands[a]
            opts = table(cmd)
        i += 1
    return None


_RAM_UNIT = r"^\s*(\d+(?:\.\d+)?)\s*(?:GB|GiB|G)\s*$"


def _ram_unit(v: str) -> re.Match[str] | None:
    """_RAM_UNIT's match; compiled only for a value with a 'g' in it (every unit has one; case folding maps no
    other character to g), so a plain number never compiles it."""
    return re.match(_RAM_UNIT, v, re.IGNORECASE) if "g" in v or "G" in v else None


def ram_units(argv: list[str]) -> list[str]:
    """``--ram 16GB`` / ``--ram=16 GiB`` as ``--ram 16``: Apple's "16 GB" of unified memory is 16 GiB, the unit
    --ram counts in, so both suffixes name the same number (issue 35: '--ram 16GB' was refused)."""
    out, it = [], iter(argv)
    for a in it:
        if a == "--ram":
            v = next(it, None)
            m = _ram_unit(v) if v is not None else None
            out += [a] + ([m.group(1)] if m else [] if v is None else [v])
        elif a.startswith("--ram=") and (m := _ram_unit(a[6:])):
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
    from .profile_cache import install

    install()  # validated profiles kept between runs (the core keeps none)
    given = fast_values(argv)
    models = models_fast_values(argv) if given is None else None
    json_mode = "--json" in argv  # errors under --json are JSON on stdout (cli/contract.py)
    raw, sys.stdout = sys.stdout, _SafeStdout(sys.stdout)
    global _ONE_SHOT
    _ONE_SHOT = given is not None or models is not None
    try:
        if given is not None:
            return _core_errors(lambda: _fast(given), json_mode)
        if models is not None:
            return _core_errors(lambda: _fast_models(models), json_mode)
        return _core_errors(lambda: _typer(argv, json_mode), json_mode)
    finally:
        sys.stdout = raw


# True once main() answered on a typer-free path (the plain question, `plan models --ram`): no thread, no server,
# nothing left to run but the exit handlers (see run())
_ONE_SHOT = False


def _exit_now(rc: int) -> NoReturn:
    """End a one-shot answer as the interpreter would, without its teardown: the exit handlers (atexit: the profile
    cache's save), then stdout and stderr flushed, then the process ends with ``rc``. The teardown freed every
    module and object one by one (~1 % of the plain question's instructions) for a process about to end."""
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # as the interpreter: an unflushable stdout at exit is status 120
        rc = 120
    os._exit(rc)


def run() -> None:
    """The `plan` console script. The cyclic collector stays off while the plain question imports pydantic and
    builds the core's classes: hundreds of thousands of young objects it would walk for nothing in a one-shot
    answer (~4 % of the start-up's instructions; peak memory unchanged). The typer-free `plan models --ram ...`
    keeps it off too (its sweep makes young objects, few cycles: peak memory unchanged); the typer path turns it
    back on. Once answered, every object is frozen out of the collector (gc.freeze): the interpreter's exit
    collections (finalize_modules) walked them all for cycles nobody waits for (~5 % of the plain question's
    instructions); atexit handlers (the profile cache's save) and the flushing of stdout run as before. A one-shot
    answer (the typer-free paths) then ends without the interpreter's teardown (_exit_now)."""
    gc.disable()
    rc = main()
    gc.freeze()
    if _ONE_SHOT:
        _exit_now(rc)
    sys.exit(rc)


if __name__ == "__main__":
    run()
