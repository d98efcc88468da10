"""Each command's options come from its request model, and the typer-free path of `plan` answers exactly as the
typer command does."""

from __future__ import annotations

import contextlib
import io
import typing

import pytest
import typer.main

from cli import main as M
from cli.commands import app
from cli.words import say
from planner.plan import PlanRequest
from planner.requests import BuyRequest, ClusterRequest, PredictRequest, RecommendRequest

REQUESTS = {"predict": PredictRequest, "recommend": RecommendRequest, "buy": BuyRequest, "cluster": ClusterRequest}
PLAN_FIELDS = {"model": "model", "ram": "ram", "chip": "chip", "gpu_cores": "gpu_cores", "runtime": "runtimes",
               "quant": "quants", "context": "context", "users": "users", "kv_type": "kv_type",
               "wired_limit": "wired_limit_mb", "macos": "macos", "flash_attn": "flash_attn", "ubatch": "n_ubatch",
               "prompt": "prompt", "gen": "gen", "images": "images", "image_size": "image_size",
               "draft_model": "draft_model", "draft_acceptance": "draft_acceptance", "draft_tokens": "draft_tokens",
               "app_version": "app_version", "guardrail": "guardrail", "ssd_gb": "ssd_gb",
               "thinking_tokens": "thinking_tokens", "cached_prefix": "cached_prefix"}


def _click():
    return typer.main.get_command(app)


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_help_is_the_request_field_description(name):
    cmd, req = _click().commands[name], REQUESTS[name]
    checked = 0
    for p in cmd.params:
        if p.name == "json_out":
            continue
        desc = req.model_fields[p.name].description
        assert desc and p.help.startswith(say(desc)), (name, p.name, p.help)  # inputs named by their flags
        checked += 1
    assert checked == len(req.model_fields)  # every request field is an option, and only those


def test_plan_options_are_plan_request_fields():
    for p in _click().params:
        if p.name in PLAN_FIELDS:
            assert p.help.startswith(say(PlanRequest.model_fields[PLAN_FIELDS[p.name]].description or "")), p.name


def test_fast_flags_are_the_typer_flags():
    by_flag = {o: p.name for p in _click().params for o in (*p.opts, *p.secondary_opts)}
    assert {by_flag[f] for f in M.FAST_SWITCHES} == {"json_out", "flash_attn"}
    for flag, (field, _, repeatable) in M.FAST_FLAGS.items():
        assert PLAN_FIELDS[by_flag[flag]] == field, flag
        assert repeatable == (field in ("runtimes", "quants")), flag  # the two list fields of PlanRequest


@pytest.mark.parametrize("argv", [
    ["--help"], ["recommend", "--model", "x"], ["--model=llama-3.1-8b", "--ram", "64"],
    ["--model", "llama-3.1-8b", "--ram", "-64"], ["--model", "a", "--model", "b"], ["--ram", "64", "--users", "x"],
    ["--model", "llama-3.1-8b", "--ram"], ["--model", "llama-3.1-8b", "--json", "--json"], ["--file", "x.gguf"],
])
def test_the_fast_path_declines_what_only_typer_parses(argv):
    assert M.fast_values(argv) is None


def _run(fn, argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = fn(argv)
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("argv", [
    ["--model", "llama-3.3-70b", "--ram", "64"],
    ["-m", "qwen3-30b-a3b", "--ram", "36", "-r", "mlx-lm", "-u", "4", "-c", "16384"],
    ["--model", "gemma-3-27b", "--ram", "32", "--runtime", "ollama", "--quant", "Q4_K_M", "--quant", "Q8_0"],
    ["--model", "llama-3.1-8b", "--ram", "16", "--chip", "M4", "--prompt", "2048", "--gen", "64"],
    ["--model", "llama-3.3-70b", "--ram", "nan"],            # validation error: one line, exit 2, either path
    ["--model", "no-such-model", "--ram", "64"],
    ["--model", "llama-3.1-8b", "--ram", "64", "--kv-type", "q9"],
    ["--model", "llama-3.1-8b"],                              # no --ram and no --chip
    ["--model", "llama-3.1-8b", "--ram", "16", "--json"],
    ["--no-flash-attn", "--model", "llama-3.1-8b", "--ram", "16", "--kv-type", "q8_0"],
    ["--model", "qwen3-30b-a3b", "--ram", "64", "--flash-attn", "--ubatch", "1024", "--json"],
])
def test_fast_path_answers_like_typer(argv):
    assert M.fast_values(argv) is not None
    fast = _run(M.main, argv)
    slow = _run(lambda a: M._core_errors(lambda: M._typer(a)), argv)
    assert fast == slow
    assert fast[0] in (0, 2)


# ------------------------------------------------------------------- one workload spelling in every command
WORKLOAD_COMMANDS = ["", "predict", "recommend", "buy", "models", "serve", "cluster"]


def _params(name: str) -> dict:
    cmd = _click()
    if name:
        cmd = cmd.commands[name]
    return {p.name: p for p in cmd.params}


@pytest.mark.parametrize("field", ["prompt", "gen", "users", "cached_prefix", "rate"])
def test_workload_options_have_one_spelling(field):
    """--prompt, --gen, --users, --cached-prefix and --rate: the same flags in every command that takes them, and
    the lengths the same forms (the same first words of the help: tokens | distribution | p50/p90)."""
    from cli.options import WORKLOAD_FLAGS

    seen = {n: ps[field] for n in WORKLOAD_COMMANDS if field in (ps := _params(n))}
    assert len(seen) >= (1 if field == "rate" else 5), seen.keys()
    for name, p in seen.items():
        assert set(p.opts) == set(WORKLOAD_FLAGS[field]), (name, p.opts)
        if field in ("prompt", "gen"):
            assert p.help.startswith("Prompt tokens: 12000 | 1024:0.6,8192:0.4 | p50=..,p90=.." if field == "prompt"
                                     else "Generated tokens, same forms as --prompt"), (name, p.help)
        if field == "cached_prefix":
            assert p.help.startswith("Share of each prompt already in the server's prompt cache"), name


def test_every_command_that_reports_ttft_takes_cached_prefix():
    for name in ["", "predict", "recommend", "buy", "serve"]:
        assert "cached_prefix" in _params(name), name


@pytest.mark.parametrize("text, prompt, gen", [("12000", 12000, None), ("1024:0.6,8192:0.4", 8192, None),
                                                ("p50=1000,p90=4000", 4000, None)])
def test_a_distribution_is_answered_at_its_p90_prompt_and_mean_output(text, prompt, gen):
    """plan and predict take the distribution forms too: the prompt at its p90 (TTFT), the output at its mean,
    rounded up: 100:0.5,301:0.5 -> 200.5 -> 201 tokens."""
    assert PlanRequest(model="x", prompt=text).prompt == prompt
    assert PredictRequest(chip="M4", model="x", quant="Q4_K_M", prompt=text).prompt == prompt
    assert PlanRequest(model="x", gen="100:0.5,301:0.5").gen == 201
    assert PredictRequest(chip="M4", model="x", quant="Q4_K_M", gen="p50=100,p90=301").gen == 201


@pytest.mark.parametrize("argv", [["--prompt", "p50=x"], ["--cached-prefix", "1"], ["--cached-prefix", "-0.1"]])
def test_bad_workload_values_are_one_line_naming_the_flag(argv, capsys):
    base = ["predict", "--chip", "M4 Max", "--gpu-cores", "40", "--model", "llama-3.1-8b", "--quant", "Q4_K_M"]
    for cmd in (base, ["--model", "llama-3.1-8b", "--ram", "64"]):
        assert M.main([*cmd, *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert argv[0] in err and len(err.splitlines()) == 1, err


# --------------------------------------------------------------------------- plan models --ram ... (the ranking)
def _value_type(hint) -> type:
    """float | None -> float, list[str] | None -> str."""
    args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    inner = args[0]
    return typing.get_args(inner)[0] if typing.get_origin(inner) is list else inner


def test_models_fast_flags_are_the_typer_flags():
    from cli.models import models_cmd
    from cli.models_rank import DEFAULTS

    hints = typing.get_type_hints(models_cmd)
    cmd = _click().commands["models"]
    by_flag = {o: p for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
    assert {by_flag[f].name for f in M.MODELS_FAST_SWITCHES} == {"json_out"}
    for flag, (name, conv, repeatable) in M.MODELS_FAST_FLAGS.items():
        p = by_flag[flag]
        assert p.name == name, flag
        assert repeatable == p.multiple, flag
        assert _value_type(hints[name]) is conv, flag
    # every option of the ranking is on the fast path; only the installed-models listing is left to typer
    covered = {n for n, _, _ in M.MODELS_FAST_FLAGS.values()} | {"json_out"}
    assert {p.name for p in cmd.params} - covered == {"installed", "dirs"}
    assert set(DEFAULTS) == covered
    for p in cmd.params:  # rank_text fills in what was not given with the typer command's own defaults
        if p.name in DEFAULTS:
            assert DEFAULTS[p.name] == (None if p.multiple and not p.default else p.default), p.name


@pytest.mark.parametrize("argv", [
    ["models", "--help"], ["models"], ["models", "--ram", "64", "--installed"], ["models", "--ram=64"],
    ["models", "--ram", "64", "--dir", "x"], ["models", "--ram", "64", "--ram", "32"], ["models", "--chip", "M4"],
    ["models", "--ram", "64", "--top", "x"], ["models", "--ram", "64", "--min-tok-s", "-5"],
    ["--ram", "64", "models"], ["models", "--ram", "64", "--model", "x"],
])
def test_the_models_fast_path_declines_what_only_typer_parses(argv):
    assert M.models_fast_values(argv) is None


MODELS_CASES = [
    ["--ram", "16"], ["--ram", "16", "--chip", "M4"],
    ["--ram", "64"], ["--ram", "64", "--chip", "M4 Max"],
    ["--ram", "128"], ["--ram", "128", "--chip", "M4 Max"],
    ["--ram", "192"], ["--ram", "192", "--chip", "M2 Ultra"],
    ["--ram", "64", "--chip", "M4 Max", "--task", "chat"],
    ["--ram", "128", "--chip", "M4 Max", "--min-tok-s", "30", "--context", "32768"],
]


@pytest.mark.parametrize("case", MODELS_CASES)
def test_models_fast_path_answers_like_typer(case):
    """Byte-identical JSON either way (the fast path is taken: it must not import what only typer parses)."""
    argv = ["models", *case, "--json"]
    assert M.models_fast_values(argv) is not None
    fast = _run(M.main, argv)
    slow = _run(lambda a: M._core_errors(lambda: M._typer(a)), argv)
    assert fast == slow
    assert fast[0] == 0 and '"rows"' in fast[1]


@pytest.mark.parametrize("argv", [
    ["models", "--ram", "36", "--chip", "M3 Pro", "--gpu-cores", "18", "--top", "5", "-c", "16384"],
    ["models", "--ram", "64", "-r", "mlx-lm", "-u", "4", "--family", "qwen", "--max-params", "40"],
    ["models", "--ram", "nan"],                            # errors: one line, exit 2, either path
    ["models", "--ram", "64", "--task", "poetry"],
    ["models", "--ram", "64", "--gpu-cores", "40"],
    ["models", "--ram", "64", "--top", "20000", "--json"],
    ["models", "--ram", "64", "--chip", "M9 Ultra"],
])
def test_models_fast_path_text_and_errors_like_typer(argv):
    assert M.models_fast_values(argv) is not None
    fast = _run(M.main, argv)
    json_mode = "--json" in argv
    slow = _run(lambda a: M._core_errors(lambda: M._typer(a, json_mode), json_mode), argv)
    assert fast == slow
    assert fast[0] in (0, 2)
