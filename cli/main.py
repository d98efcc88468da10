"""`plan`: the command line. Parses, calls the core, renders. Errors become one line on stderr, exit 2."""

from __future__ import annotations

import os
import sys

# pydantic scans every installed distribution for plugins on its first schema build (importlib.metadata
# entry_points): ~0.1 s on a full environment. The planner uses none; a user can still opt in by setting it.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")

import typer
from pydantic import ValidationError

from planner.errors import InputError, PlannerError
from planner.plan import PlanRequest

# typer >= 0.2x vendors click as typer._click (and no longer installs click): its parser raises those classes.
# Older typer raises click's own. Catch whichever exist; never require the click package.
_CE = []
try:
    from typer._click import exceptions as _vendored

    _CE.append(_vendored)
except ImportError:  # pragma: no cover - older typer
    pass
try:
    from click import exceptions as _click

    _CE.append(_click)
except ImportError:  # the core install has no click package
    pass
_EXIT = (typer.Exit, *(m.Exit for m in _CE if hasattr(m, "Exit")))
_ABORT = (typer.Abort, *(m.Abort for m in _CE if hasattr(m, "Abort")))
_USAGE = tuple(m.UsageError for m in _CE)
_CLICK = tuple(m.ClickException for m in _CE)


def _one_line(msg: object) -> str:
    """Errors are one stderr line even when the bad input holds a newline (--kv-type $'f16\\nx')."""
    return " ".join(str(msg).splitlines()) or "(no message)"


app = typer.Typer(
    add_completion=False, invoke_without_command=True, no_args_is_help=False, rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Will this model fit on this Mac, how fast, and with which runtime? (mlx-lm and llama.cpp on Apple Silicon)",
)
F = PlanRequest.model_fields


def _h(name: str) -> str:
    return F[name].description or ""


@app.callback()
def plan_cmd(
    ctx: typer.Context,
    model: str | None = typer.Option(None, "--model", "-m", help=_h("model")),
    ram: float | None = typer.Option(None, "--ram", help=_h("ram_gb")),
    chip: str | None = typer.Option(None, "--chip", help=_h("chip")),
    gpu_cores: int | None = typer.Option(None, "--gpu-cores", help=_h("gpu_cores")),
    runtime: list[str] | None = typer.Option(None, "--runtime", "-r", help=_h("runtimes") + " (repeatable)"),
    quant: list[str] | None = typer.Option(None, "--quant", "-q", help=_h("quants") + " (repeatable)"),
    context: int = typer.Option(8192, "--context", "-c", help=_h("context")),
    users: int = typer.Option(1, "--users", "-u", help=_h("users")),
    kv_type: str | None = typer.Option(None, "--kv-type", help=_h("kv_type")),
    wired_limit: int | None = typer.Option(None, "--wired-limit", help=_h("wired_limit_mb")),
    macos: str = typer.Option("15", "--macos", help=_h("macos")),
    flash_attn: bool | None = typer.Option(None, "--flash-attn/--no-flash-attn", help=_h("flash_attn")),
    ubatch: int | None = typer.Option(None, "--ubatch", help=_h("n_ubatch")),
    prompt: int = typer.Option(1024, "--prompt", help=_h("prompt_tokens")),
    gen: int = typer.Option(256, "--gen", help=_h("gen_tokens")),
    json_out: bool = typer.Option(False, "--json", help="Print the whole plan as JSON (same as the app's download)"),
    file: str | None = typer.Option(None, "--file", help="GGUF file to use in a HF repo or folder with several"),
):
    """Memory fit (and speed, with --chip) of one model on one Mac, for both runtimes."""
    if ctx.invoked_subcommand is not None:
        return
    if model is None:
        raise InputError("missing --model (e.g. plan --model llama-3.3-70b --ram 64); see plan --help")
    from planner.plan import plan

    from .render import render_plan

    req = PlanRequest(model=model, ram_gb=ram, chip=chip, gpu_cores=gpu_cores,
                      runtimes=list(runtime) if runtime else ["llama.cpp", "mlx-lm"], quants=list(quant) or None
                      if quant else None, context=context, users=users, kv_type=kv_type, wired_limit_mb=wired_limit,
                      macos=macos, flash_attn=flash_attn, n_ubatch=ubatch,
                      prompt_tokens=prompt, gen_tokens=gen)
    resolved = None
    if not _catalog_id(model):
        from sources import resolve_model  # edge: local files and the HF Hub (lazy: keeps catalog plans fast)

        resolved = resolve_model(model, file=file, quant=quant[0] if quant and len(quant) == 1 else None)
    result = plan(req, resolved)
    typer.echo(result.model_dump_json(indent=2) if json_out else render_plan(result), nl=not json_out)
    if json_out:
        typer.echo("")


def _catalog_id(spec: str) -> bool:
    """A catalog id or alias that is not also a local file or folder (those win, as in sources.resolve_model)."""
    from pathlib import Path

    from planner import profiles
    from planner.errors import UnknownProfileError

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


from .predict import predict_cmd  # noqa: E402  (plan predict: the speed contract, cli/predict.py)

app.command("predict")(predict_cmd)


from .recommend import recommend_cmd  # noqa: E402  (plan recommend, cli/recommend.py)

app.command("recommend")(recommend_cmd)
from .buy import buy_cmd  # noqa: E402  (plan buy, cli/buy.py)

app.command("buy")(buy_cmd)
from .calibrate import calibrate_cmd  # noqa: E402  (plan calibrate, cli/calibrate.py)

app.command("calibrate")(calibrate_cmd)
from .cluster import cluster_cmd  # noqa: E402  (plan cluster, cli/cluster.py)

app.command("cluster")(cluster_cmd)
from .app_cmd import app_cmd  # noqa: E402  (plan app: the web form, cli/app_cmd.py)

app.command("app")(app_cmd)


from .models import models_cmd  # noqa: E402  (plan models: the catalog and what runs on a Mac, cli/models.py)
app.command("models")(models_cmd)


def _param_name(e) -> str:
    return e.format_message().splitlines()[0]


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
        shown = f" {value!r}" if isinstance(value, (int, float, str)) and len(repr(value)) < 40 else ""
        parts.append(f"{flag}{shown}: {str(err.get('msg', '')).removeprefix('Value error, ')}")
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code. One line on stderr for any user error."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        rv = app(args=argv, prog_name="plan", standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except _EXIT as e:
        return e.exit_code
    except _ABORT:
        print("plan: aborted", file=sys.stderr)
        return 130
    except _USAGE as e:
        msg = _one_line(_param_name(e))
        print(f"plan: error: {msg}{'' if 'plan --help' in msg else ' (see plan --help)'}", file=sys.stderr)
        return 2
    except _CLICK as e:  # e.g. FileError
        print(f"plan: error: {_one_line(e.format_message())}", file=sys.stderr)
        return 2
    except PlannerError as e:
        print(f"plan: error: {_one_line(e)}", file=sys.stderr)
        return e.exit_code
    except ValidationError as e:
        print(f"plan: error: {_one_line(_flag_error(e))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
