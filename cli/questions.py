"""The planner's questions, protocol-neutral: question name -> request model -> core call -> the JSON the CLI's
``--json`` prints. `plan mcp` (cli/mcp_server.py) and `plan api` (cli/http_api.py) both answer through
:func:`answer`, so an agent, a script and the command line get the same answer to the same question.

On a Mac, a question without chip and ram is answered for this Mac (:func:`with_this_mac`), as the CLI does.
Every question's input schema is its request model's JSON schema (pydantic). Bad input raises
:class:`QuestionError` with one line naming the field and a fix; nothing else escapes as a traceback.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from planner._model import DEFAULT_MACOS, Frozen
from planner.errors import QuestionError  # noqa: E402  (the one hierarchy: bad input or a planner error, one line)
from planner.plan import PlanRequest
from planner.points import (
    DEFAULT_CACHED_PREFIX,
    DEFAULT_GEN,
    DEFAULT_GEN_LENGTHS,
    DEFAULT_PROMPT,
    DEFAULT_PROMPT_LENGTHS,
    DEFAULT_RATE_NOTE,
    GEN_HELP,
    PROMPT_HELP,
    RATE_HELP,
    CachedPrefix,
    GenPoint,
    PromptPoint,
)
from planner.requests import BuyRequest, RecommendRequest

from .words import constraint_text


class WhatRunsRequest(BaseModel):
    """`plan models --ram ...`: the catalog models that run on one Mac, best first."""

    model_config = Frozen
    ram: float = Field(gt=0, le=65_536, allow_inf_nan=False,
                       description="Unified memory [GB]: rank the models that run on it")
    chip: str | None = Field(None, description="Apple chip, e.g. 'M4 Max' (for speed)")
    gpu_cores: int | None = Field(None, gt=0, le=256, description="GPU cores of a binned chip")
    task: str | None = Field(None, description="chat, code, reasoning, vision or embedding")
    min_tok_s: float | None = Field(None, gt=0, le=1e6, allow_inf_nan=False,
                                    description="Minimum decode tok/s per user")
    context: int = Field(8192, gt=0, le=10_000_000, description="Context per user [tokens]")
    users: int = Field(1, gt=0, le=4096, description="Concurrent users")
    prompt: PromptPoint = DEFAULT_PROMPT
    gen: GenPoint = DEFAULT_GEN
    cached_prefix: CachedPrefix = DEFAULT_CACHED_PREFIX
    runtime: list[str] | None = Field(None, description="Runtimes (default llama.cpp, mlx-lm)")
    max_params: float | None = Field(None, gt=0, le=100_000, allow_inf_nan=False,
                                     description="Largest model [billions of parameters]")
    family: str | None = Field(None, description="Model family, e.g. qwen, llama, gemma")
    macos: str = Field(DEFAULT_MACOS, description="macOS major version (15 or 26)")


class ServeQuestion(BaseModel):
    """`plan serve`: latency under load of one server (a seeded simulation); the CLI's options, without --trace."""

    model_config = Frozen
    model: str = Field(description="Catalog id or alias (qwen3-30b-a3b), a .gguf file, a model folder or a HF repo")
    chip: str = Field(description="Apple chip, e.g. 'M4 Max'")
    gpu_cores: int | None = Field(None, gt=0, le=256, description="GPU cores (needed for binned chips)")
    ram: float | None = Field(None, gt=0, le=65_536, allow_inf_nan=False,
                              description="Unified memory [GB]; default: the chip's largest")
    runtime: str | None = Field(None, description="llama.cpp (llama-server) or mlx-lm (mlx_lm.server); default: the "
                                "runtime of the format the model's files, name or quant pin (mlx-community/...: "
                                "mlx-lm), else llama.cpp")
    quant: str | None = Field(None, description="GGUF preset or MLX format; default: the checkpoint's own format "
                              "(gpt-oss: MXFP4), else Q4_K_M / 4bit")
    slots: int = Field(4, ge=1, le=512, description="llama-server -np / mlx_lm.server --decode-concurrency")
    # the default workload's request stream (planner/points.py): its length distributions, cached share and rate
    rate: str | None = Field(None, description=RATE_HELP + DEFAULT_RATE_NOTE)
    prompt: str = Field(DEFAULT_PROMPT_LENGTHS, description=PROMPT_HELP)
    gen: str = Field(DEFAULT_GEN_LENGTHS, description=GEN_HELP)
    duration: str = Field("1h", description="Simulated time: 1h, 30min, 600s")
    max_ttft_p95: float | None = Field(None, gt=0, le=315_360_000, allow_inf_nan=False,
                                       description="Target 95th-percentile TTFT [s]")
    cached_prefix: CachedPrefix = DEFAULT_CACHED_PREFIX
    slot_context: int | None = Field(None, ge=64, le=10_000_000, description="KV tokens per slot")
    seed: int = Field(0, ge=0, le=2**63 - 1, description="Seed of the arrival process and lengths")
    sweep: bool = Field(True, description="Also try 1-32 slots for the best count")
    kv_unified: bool = Field(False, description="llama-server --kv-unified: one KV stream for all slots")
    kwh_price: float = Field(0.16, gt=0, lt=100, allow_inf_nan=False,
                             description="Electricity price [USD/kWh] for the daily running cost")
    macos: str = Field(DEFAULT_MACOS, description="macOS major version (default GPU limit)")


# ------------------------------------------------------------------------------------------- core calls
def _plan(req: PlanRequest) -> Any:
    # `plan --json`'s answer with its input markers kept: answer() names them as this question's arguments (the
    # command line's text spelled them as flags: "give --model with the tag" in an agent's answer)
    from .plan import plan_answer, with_bottom_line

    return with_bottom_line(*plan_answer(req.model_dump(exclude_unset=True)))


def _what_runs(req: WhatRunsRequest) -> Any:
    # as cli/models.py models_cmd with --ram --json
    from planner.models import Query, resolve_chip_for_ram, what_runs

    chip = resolve_chip_for_ram(req.chip, req.ram, req.gpu_cores) if req.chip is not None else None
    if req.gpu_cores is not None and chip is None:
        raise QuestionError("gpu_cores needs chip (e.g. chip 'M4 Max', gpu_cores 40)")
    r = what_runs(Query(ram_gb=req.ram, chip=chip, task=req.task, min_tok_s=req.min_tok_s, context=req.context,
                        users=req.users, runtimes=tuple(req.runtime or ()), max_params_b=req.max_params,
                        family=req.family, macos=req.macos, prompt_tokens=req.prompt, gen_tokens=req.gen,
                        cached_prefix_share=req.cached_prefix))
    return r


def _recommend(req: RecommendRequest) -> Any:
    # as cli/recommend.py recommend_cmd --json
    from planner.advice import recommend
    from planner.plan import resolve_mac
    from planner.workload import custom_workload, with_images

    from .bounds import check_options

    check_options(gpu_cores=req.gpu_cores, ram=req.ram, users=req.users, prompt=req.prompt, gen=req.gen,
                  context=req.context, min_tok_s=req.min_tok_s, max_ttft=req.max_ttft, max_request=req.max_request,
                  wired_limit=req.wired_limit, top=req.top)
    if req.chip is None and req.ram is None:
        raise QuestionError("give chip (for speed) and/or ram, e.g. chip 'M4 Max', gpu_cores 40, ram 64")
    wl = custom_workload(req.workload, prompt=req.prompt, gen=req.gen, users=req.users, context=req.context,
                         min_tok_s=req.min_tok_s, max_ttft=req.max_ttft, max_request=req.max_request,
                         cached_prefix=req.cached_prefix)
    wl, image_notes = with_images(wl, req.model, req.images, req.image_size)
    ram_gb, chip, _ = resolve_mac(PlanRequest(model=req.model, ram=req.ram, chip=req.chip, gpu_cores=req.gpu_cores))
    r = recommend(req.model, ram_gb, wl, chip=chip, macos=req.macos, runtimes=list(req.runtime) if req.runtime else None,
                  quants=list(req.quant) if req.quant else None, wired_limit_mb=req.wired_limit, top=req.top,
                  best_effort=True, kv_type=req.kv_type, images=req.images)
    return r.model_copy(update={"notes": [*image_notes, *r.notes]}) if image_notes else r


def _buy(req: BuyRequest) -> Any:
    # as cli/buy.py buy_cmd --json
    from planner.buy import buy, cluster_link
    from planner.workload import custom_workload

    from .bounds import check_options
    from .buy import user_prices

    cluster_link(req.clusters, req.link)  # before the search: a link without clusters is refused, not ignored

    check_options(users=req.users, prompt=req.prompt, gen=req.gen, context=req.context, min_tok_s=req.min_tok_s,
                  max_ttft=req.max_ttft, max_request=req.max_request, budget=req.budget)
    wl = custom_workload(req.workload, prompt=req.prompt, gen=req.gen, users=req.users, context=req.context,
                         min_tok_s=req.min_tok_s, max_ttft=req.max_ttft, max_request=req.max_request,
                         cached_prefix=req.cached_prefix)
    r = buy(list(req.model), wl, budget_usd=req.budget, include_rumoured=req.include_rumoured,
            runtimes=list(req.runtime) if req.runtime else None, macos=req.macos,
            max_quality_cost=req.max_quality_cost, include_discontinued=req.include_discontinued,
            prices=user_prices(list(req.price or []), req.prices))
    from planner.beyond import running_costs  # as buy_cmd: the running cost per Mac

    r = r.model_copy(update={"running_costs": running_costs(r.per_mac, req.busy_hours, req.kwh_price, req.years)})
    link = cluster_link(req.clusters, req.link)  # a link without clusters is refused, not ignored
    if link is not None:
        from .buy import cluster_options

        r = r.model_copy(update={"clusters": cluster_options(req.model[0], wl, link, req.budget,
                                                             req.include_discontinued, req.macos)})
    return r


def _serve(req: ServeQuestion) -> Any:
    # as cli/serve.py serve_cmd --json (no --trace: a question carries no file)
    from planner.serve_plan import ServeRequest, serve, setup
    from planner.workload import parse_length

    from .serve import _model, parse_duration, people_rate, rate_users

    sr = ServeRequest(slots=req.slots, rate=people_rate(req.rate, None, None, None, "[[rate]]")[0],
                      prompt=parse_length(req.prompt, "[[prompt]]"), gen=parse_length(req.gen, "[[gen]]"),
                      duration=parse_duration(req.duration, "[[duration]]"), seed=req.seed,
                      cached_prefix_share=req.cached_prefix, slot_context=req.slot_context,
                      max_ttft_p95=req.max_ttft_p95, sweep=req.sweep, trace=None, kv_unified=req.kv_unified,
                      users=rate_users(req.rate, None))
    r = serve(setup(req.chip, req.gpu_cores, req.ram, _model(req.model, req.quant), req.quant, req.runtime,
                    req.macos), sr)
    from planner.beyond import serve_energy  # as serve_cmd: kWh and money per day at this load

    energy = serve_energy(r.chip, min(r.utilisation, 1.0), r.throughput_tok_s, req.kwh_price)
    return r.model_copy(update={"energy": energy})


@dataclass(frozen=True)
class Question:
    name: str
    request: type[BaseModel]
    call: Callable[[Any], Any]
    description: str
    cli: str   # the command line asking the same question

    def input_schema(self) -> dict[str, Any]:
        return self.request.model_json_schema()


QUESTIONS: dict[str, Question] = {q.name: q for q in (
    Question("plan", PlanRequest, _plan, "Memory fit (and speed, with chip) of one model on one Mac, for llama.cpp "
             "and mlx-lm, with the recommended configuration.", "plan --model ... --json"),
    Question("what_runs", WhatRunsRequest, _what_runs, "The catalog models that run on one Mac (ram, and chip for "
             "speed), best first.", "plan models --ram ... --json"),
    Question("recommend", RecommendRequest, _recommend, "Best runtime, quantization, KV type and slots for a "
             "workload on one Mac, with launch recipes.", "plan recommend ... --json"),
    Question("buy", BuyRequest, _buy, "Which Mac to buy for a model (or several resident together) and a workload: "
             "cheapest that meets the targets, best value, fastest within budget.", "plan buy ... --json"),
    Question("serve", ServeQuestion, _serve, "Latency under load of one llama-server or mlx_lm.server on one Mac: "
             "TTFT percentiles, per-user speed, sustainable request rate.", "plan serve ... --json"),
)}


def one_line(msg: object) -> str:
    return " ".join(str(msg).split()) or "(no message)"


def _validation_line(e: ValidationError) -> str:
    parts = []
    for err in e.errors()[:3]:
        loc = ".".join(str(x) for x in err.get("loc", ())) or "input"
        value = err.get("input")
        shown = f" {value!r}" if isinstance(value, int | float | str) and len(repr(value)) < 40 else ""
        parts.append(f"{loc}{shown}: {constraint_text(err)}")
    return "; ".join(parts)


# question -> its fields for (chip, ram, wired limit, macOS), as cli/thismac.py MAC_FLAGS for the commands
MAC_FIELDS: dict[str, tuple[str, str, str | None, str]] = {
    "plan": ("chip", "ram", "wired_limit_mb", "macos"),
    "recommend": ("chip", "ram", "wired_limit", "macos"),
    "what_runs": ("chip", "ram", None, "macos"),
    "serve": ("chip", "ram", None, "macos"),
}


@functools.lru_cache(maxsize=4)
def _detected(path: str):
    """This Mac, read once per PATH (a server answers many questions; system_profiler takes a second)."""
    from sources import thismac

    return thismac.detect()


def with_this_mac(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """On a Mac, a question without chip and ram is asked for this Mac (sources/thismac.py), as on the command
    line: the chip profile when known (else the RAM only), its wired limit and macOS unless given."""
    from sources import thismac

    fields = MAC_FIELDS.get(name)
    if fields is None or not thismac.on_mac():
        return arguments
    chip_f, ram_f, wired_f, macos_f = fields
    if arguments.get(chip_f) is not None or arguments.get(ram_f) is not None:
        return arguments
    try:
        mac = _detected(os.environ.get("PATH", ""))
    except thismac.CommandFailed:
        return arguments
    out = dict(arguments)
    if arguments.get("gpu_cores") is not None and mac.chip_name is not None:
        out[chip_f] = mac.chip_name
    elif mac.chip_id is not None:
        out[chip_f] = mac.chip_id
    if mac.ram_gb is not None:
        out[ram_f] = mac.ram_gb
    if wired_f and mac.wired_limit_mb and arguments.get(wired_f) is None:
        out[wired_f] = mac.wired_limit_mb
    if mac.macos and macos_f not in arguments:
        out[macos_f] = mac.macos
    return out


def current_names(request: type[BaseModel], arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` with a field's former name (``ram_gb``, ``prompt_tokens``, ``gen_tokens`` before
    schema_version 4: the extra choices of its validation alias) read as the field's own name, for one version."""
    from pydantic import AliasChoices

    from planner._model import one_spelling

    try:
        one_spelling(request.model_fields, arguments)  # ram and ram_gb at once: an error, not the later one kept
    except ValueError as e:
        raise QuestionError(str(e)) from None
    old = {c: name for name, f in request.model_fields.items() if isinstance(f.validation_alias, AliasChoices)
           for c in f.validation_alias.choices if isinstance(c, str) and c != name}
    return {old.get(k, k): v for k, v in arguments.items()}


def answer(name: str, arguments: dict[str, Any] | None) -> Any:
    """The JSON answer (parsed) to question ``name`` with ``arguments``; QuestionError (one line) on bad input."""
    from planner.errors import AnswerIsNo, PlannerError

    from .contract import SCHEMA_VERSION, with_version
    from .words import arg_names, in_args

    q = QUESTIONS.get(name)
    if q is None:
        raise QuestionError(f"unknown question {name!r}; ask one of {', '.join(QUESTIONS)}")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise QuestionError(f"{name}: give the arguments as a JSON object, e.g. {{\"model\": \"qwen3-8b\"}}")
    try:
        arguments = current_names(q.request, arguments)
    except QuestionError as e:
        raise QuestionError(f"{name}: {e}") from None
    unknown = sorted(set(arguments) - set(q.request.model_fields))
    if unknown:
        raise QuestionError(f"{name}: unknown argument(s) {', '.join(unknown)}; known: {', '.join(q.request.model_fields)}")
    try:
        arguments = with_this_mac(name, arguments)
        req = q.request(**arguments)
        return in_args(with_version(q.call(req)), name)   # inputs named as this question's arguments
    except AnswerIsNo as e:  # a valid question answered no (does not fit...): an answer, as in the CLI
        return {"schema_version": SCHEMA_VERSION, "answer": e.to_json(arg_names(name))}
    except QuestionError:
        raise
    except ValidationError as e:
        raise QuestionError(f"{name}: {one_line(_validation_line(e))}") from None
    except PlannerError as e:
        err = QuestionError(f"{name}: {one_line(e.message(arg_names(name)))}", fields=e.fields)
        err.code = e.code  # the core's code (unknown_profile, input...), as the command line's --json error
        raise err from None
    except (ValueError, TypeError, OverflowError) as e:   # a malformed value the core did not name
        raise QuestionError(f"{name}: {one_line(e)}") from None
