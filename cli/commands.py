"""The typer application: every `plan` command and its options. cli/main.py runs it (and answers the plain
`plan --model ... --ram ...` question without importing typer)."""

from __future__ import annotations

import typer

from planner.plan import PlanRequest

from .options import opt, wopt
from .plan import run_plan

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


EXIT = (typer.Exit, *(m.Exit for m in _CE if hasattr(m, "Exit")))
ABORT = (typer.Abort, *(m.Abort for m in _CE if hasattr(m, "Abort")))
USAGE = tuple(m.UsageError for m in _CE)
CLICK = tuple(m.ClickException for m in _CE)


# One example per command, shown at the end of its --help (docs/cli.md is generated from those pages by
# scripts/gen_cli_docs.py; tests/cli/test_cli_docs.py runs the examples that need no Mac, server or network).
EXAMPLES = {
    "": 'plan --model llama-3.3-70b --ram 64 --chip "M4 Max" --gpu-cores 40',
    "predict": 'plan predict --chip "M3 Max" --gpu-cores 40 --ram 64 --model llama-3.1-8b --quant Q4_K_M '
               "--runtime llama.cpp",
    "recommend": 'plan recommend --model qwen3-30b-a3b --chip "M4 Max" --gpu-cores 40 --ram 64 --workload agent',
    "buy": "plan buy --model llama-3.3-70b --workload chat --users 2 --budget 4000",
    "calibrate": "plan calibrate --runtime llama.cpp --model ./model-Q4_K_M.gguf",
    "cluster": 'plan cluster --model llama-3.3-70b --macs "2x Mac Studio M4 Max 64GB" --link tb5',
    "serve": 'plan serve --model qwen3-30b-a3b --chip "M4 Max" --gpu-cores 40 --ram 128 --rate 20/min',
    "app": "plan app",
    "models": 'plan models --ram 36 --chip "M3 Pro" --gpu-cores 18',
    "finetune": 'plan finetune --model llama-3.1-8b --ram 48 --chip "M4 Pro" --gpu-cores 20 --quant 4bit',
    "mcp": "plan mcp",
    "api": "plan api --port 8765",
    "running": 'plan running --chip "M4 Max" --gpu-cores 40 --ram 64',
}


def _example(name: str) -> str:
    return "\b\nExample:\n  " + EXAMPLES[name]  # \b: click keeps the line as written


app = typer.Typer(
    add_completion=False, invoke_without_command=True, no_args_is_help=False, rich_markup_mode=None,
    pretty_exceptions_enable=False, epilog=_example(""),
    help="Will this model fit on this Mac, how fast, and with which runtime? (mlx-lm and llama.cpp on Apple Silicon)",
)
P = PlanRequest


@app.callback()
def plan_cmd(
    ctx: typer.Context,
    model: str | None = opt(P, "model", "--model", "-m", default=None),
    ram: float | None = opt(P, "ram", "--ram"),
    chip: str | None = opt(P, "chip", "--chip"),
    gpu_cores: int | None = opt(P, "gpu_cores", "--gpu-cores"),
    runtime: list[str] | None = opt(P, "runtimes", "--runtime", "-r", default=None, repeatable=True),
    quant: list[str] | None = opt(P, "quants", "--quant", "-q", repeatable=True),
    context: int = opt(P, "context", "--context", "-c"),
    users: int = wopt(P, "users"),
    kv_type: str | None = opt(P, "kv_type", "--kv-type"),
    wired_limit: int | None = opt(P, "wired_limit_mb", "--wired-limit"),
    macos: str = opt(P, "macos", "--macos"),
    flash_attn: bool | None = opt(P, "flash_attn", "--flash-attn/--no-flash-attn"),
    ubatch: int | None = opt(P, "n_ubatch", "--ubatch"),
    prompt: str = wopt(P, "prompt"),
    gen: str = wopt(P, "gen"),
    cached_prefix: float | None = wopt(P, "cached_prefix"),
    json_out: bool = typer.Option(False, "--json", help="Print the whole plan as JSON (same as the app's download)"),
    file: str | None = typer.Option(None, "--file", help="GGUF file to use in a HF repo or folder with several"),
    images: int = opt(P, "images", "--images"),
    image_size: str | None = opt(P, "image_size", "--image-size"),
    draft_model: str | None = opt(P, "draft_model", "--draft-model"),
    draft_acceptance: float | None = opt(P, "draft_acceptance", "--draft-acceptance"),
    draft_tokens: int | None = opt(P, "draft_tokens", "--draft-tokens"),
    app_version: str | None = opt(P, "app_version", "--app-version"),
    guardrail: str | None = opt(P, "guardrail", "--guardrail"),
    ssd_gb: int | None = opt(P, "ssd_gb", "--ssd-gb"),
    thinking_tokens: int | None = opt(P, "thinking_tokens", "--thinking-tokens"),
):
    """Memory fit (and speed, with --chip) of one model on one Mac, for both runtimes."""
    if ctx.invoked_subcommand is not None:
        return
    values = {"model": model, "ram": ram, "chip": chip, "gpu_cores": gpu_cores, "runtimes": runtime,
              "quants": quant, "context": context, "users": users, "kv_type": kv_type, "wired_limit_mb": wired_limit,
              "macos": macos, "flash_attn": flash_attn, "n_ubatch": ubatch, "prompt": prompt,
              "gen": gen, "cached_prefix": cached_prefix, "images": images, "image_size": image_size, "draft_model": draft_model,
              "draft_acceptance": draft_acceptance, "draft_tokens": draft_tokens, "app_version": app_version,
              "guardrail": guardrail, "ssd_gb": ssd_gb, "thinking_tokens": thinking_tokens}
    typer.echo(run_plan(values, file=file, json_out=json_out), nl=False)


from .predict import predict_cmd  # noqa: E402  (plan predict: the speed contract, cli/predict.py)

app.command("predict", epilog=_example("predict"))(predict_cmd)


from .recommend import recommend_cmd  # noqa: E402  (plan recommend, cli/recommend.py)

app.command("recommend", epilog=_example("recommend"))(recommend_cmd)
from .buy import buy_cmd  # noqa: E402  (plan buy, cli/buy.py)

app.command("buy", epilog=_example("buy"))(buy_cmd)
from .calibrate import calibrate_cmd  # noqa: E402  (plan calibrate, cli/calibrate.py)

app.command("calibrate", epilog=_example("calibrate"))(calibrate_cmd)
from .cluster import cluster_cmd  # noqa: E402  (plan cluster, cli/cluster.py)

app.command("cluster", epilog=_example("cluster"))(cluster_cmd)
from .serve import serve_cmd  # noqa: E402  (plan serve: latency under load, cli/serve.py)

app.command("serve", epilog=_example("serve"))(serve_cmd)
from .app_cmd import app_cmd  # noqa: E402  (plan app: the web form, cli/app_cmd.py)

app.command("app", epilog=_example("app"))(app_cmd)


from .models import models_cmd  # noqa: E402  (plan models: the catalog and what runs on a Mac, cli/models.py)

app.command("models", epilog=_example("models"))(models_cmd)
from .finetune import finetune_cmd  # noqa: E402  (plan finetune: mlx_lm.lora memory, limits, speed, cli/finetune.py)

app.command("finetune", epilog=_example("finetune"))(finetune_cmd)
from .mcp_server import mcp_cmd  # noqa: E402  (plan mcp: the questions as MCP tools, cli/mcp_server.py)

app.command("mcp", epilog=_example("mcp"))(mcp_cmd)
from .http_api import api_cmd  # noqa: E402  (plan api: the questions as a local HTTP JSON API, cli/http_api.py)

app.command("api", epilog=_example("api"))(api_cmd)
from .running import running_cmd  # noqa: E402  (plan running: the servers on this machine, cli/running.py)

app.command("running", epilog=_example("running"))(running_cmd)


def param_name(e) -> str:
    return e.format_message().splitlines()[0]
