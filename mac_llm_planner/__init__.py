"""The public Python API of mac-llm-planner: the `plan` commands as functions, typed requests in, result models out.

    from mac_llm_planner import PlanRequest, plan
    p = plan(PlanRequest(model="./Llama-3.1-8B-Q4_K_M.gguf", ram=16))   # or model="llama-3.1-8b", a HF repo...

Each function takes its request model (or the same fields as keywords) and answers exactly as its command's
--json does (docs/api.md; the JSON Schema of each result is docs/schema/<command>.json). Model sources are the
CLI's: a catalog id or alias, a local .gguf file, an MLX/HF folder, or a Hugging Face repo id (read by sources/).

Inputs named in notes read as the functions' keyword arguments (cli/words.py in_args); an error names its
input as ``e.fields["input"]`` and ``str(e)`` reads it as that key (planner/inputs.py).
Errors: bad input raises planner.errors.PlannerError (``e.code``, one-line ``str(e)``); a valid question answered
"no" (does not fit, targets missed, over budget) raises planner.errors.AnswerIsNo with the closest options in
``e.fields``. This module is an edge, like cli/ and app/: the core (planner/) stays pure and never imports it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from cli.profile_cache import install as _install_profile_cache
from cli.questions import ServeQuestion, WhatRunsRequest
from cli.words import arg_names, in_args
from planner.advice import Recommendation
from planner.buy import BuyResult
from planner.errors import AnswerIsNo, NoFitError, PlannerError, TargetsUnreachableError, UnknownProfileError
from planner.finetune import FinetunePlan, FinetuneRequest
from planner.plan import Plan, PlanRequest
from planner.requests import BuyRequest, PredictRequest, RecommendRequest
from planner.results import ModelsResult, ServeResult

_install_profile_cache()  # validated profiles kept in the user cache dir between runs, as the CLI does

__all__ = [
    "AnswerIsNo", "BuyRequest", "BuyResult", "FinetunePlan", "FinetuneRequest", "ModelsResult", "NoFitError", "Plan",
    "PlanRequest", "PlannerError", "PredictRequest", "Recommendation", "RecommendRequest", "ServeQuestion",
    "ServeResult", "TargetsUnreachableError", "WhatRunsRequest", "buy", "finetune", "plan", "predict", "recommend",
    "serve", "what_runs",
]

R = TypeVar("R", bound=BaseModel)
F = TypeVar("F", bound=Callable[..., Any])


def _words(question: str | None) -> Callable[[F], F]:
    """Errors of the function name their input as its keyword argument (``wired_limit_mb``), as its notes do."""
    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except PlannerError as e:
                if not isinstance(e, UnknownProfileError):  # "unknown model 'x'" already reads well
                    e.template = e.message(arg_names(question))
                raise
        return call  # type: ignore[return-value]
    return wrap


def _request(cls: type[R], request: R | dict[str, Any] | None, fields: dict[str, Any]) -> R:
    if isinstance(request, cls) and not fields:
        return request
    if isinstance(request, BaseModel):
        return cls(**{**request.model_dump(exclude_unset=True), **fields})
    return cls(**{**(request or {}), **fields})


@_words('plan')
def plan(request: PlanRequest | dict[str, Any] | None = None, /, *, file: str | None = None, **fields: Any) -> Plan:
    """Memory fit (and speed, with a chip) of one model on one Mac, with the chat bottom line: `plan --json`.
    ``file`` picks the GGUF in a HF repo or folder holding several (as ``--file``)."""
    from cli.plan import plan_answer, with_bottom_line

    req = _request(PlanRequest, request, fields)
    return in_args(with_bottom_line(*plan_answer(req.model_dump(exclude_unset=True), file)), "plan")


@_words('what_runs')
def what_runs(request: WhatRunsRequest | dict[str, Any] | None = None, /, **fields: Any) -> ModelsResult:
    """The catalog models that run on one Mac, best first: `plan models --ram ... --json`."""
    from cli.questions import _what_runs

    return in_args(_what_runs(_request(WhatRunsRequest, request, fields)), "what_runs")


@_words('recommend')
def recommend(request: RecommendRequest | dict[str, Any] | None = None, /, **fields: Any) -> Recommendation:
    """Ranked runtime × quant × KV × slots for a workload on one Mac: `plan recommend --json`."""
    from cli.questions import _recommend

    return in_args(_recommend(_request(RecommendRequest, request, fields)), "recommend")


@_words('buy')
def buy(request: BuyRequest | dict[str, Any] | None = None, /, **fields: Any) -> BuyResult:
    """Which Mac to buy for a model and a workload: `plan buy --json`."""
    from cli.questions import _buy

    return in_args(_buy(_request(BuyRequest, request, fields)), "buy")


@_words('serve')
def serve(request: ServeQuestion | dict[str, Any] | None = None, /, **fields: Any) -> ServeResult:
    """Latency under load of one llama-server / mlx_lm.server (a seeded simulation): `plan serve --json`."""
    from cli.questions import _serve

    return in_args(_serve(_request(ServeQuestion, request, fields)), "serve")


@_words(None)
def finetune(request: FinetuneRequest | dict[str, Any] | None = None, /, **fields: Any) -> FinetunePlan:
    """Memory, limits, speed and command line of an mlx_lm.lora fine-tune: `plan finetune --json`."""
    from planner.finetune import plan_finetune

    return in_args(plan_finetune(_request(FinetuneRequest, request, fields)))


@_words(None)
def predict(request: PredictRequest | dict[str, Any] | None = None, /, **fields: Any) -> dict[str, Any]:
    """Prefill, TTFT, decode speed and memory fit at one operating point: `plan predict --json` (a dict;
    docs/schema/predict.json)."""
    from cli.bounds import check_options
    from planner.predict import predict_result

    q = _request(PredictRequest, request, fields)
    check_options(gpu_cores=q.gpu_cores, ram=q.ram, prompt=q.prompt, gen=q.gen, depth=q.depth, batch=q.batch,
                  ubatch=q.ubatch)
    return in_args(predict_result(q.chip, q.gpu_cores, q.ram, q.model, q.quant, q.runtime, q.prompt, q.gen, q.depth,
                                  q.batch, q.macos, q.flash_attn, q.ubatch, q.kv_type, cached_prefix=q.cached_prefix,
                                  images=q.images, image_size=q.image_size))
