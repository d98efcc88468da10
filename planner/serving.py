"""Serving apps around the engines (Ollama, LM Studio): what they do by default and what they refuse.

Defaults come from profiles/serving/*.yaml (each rule with its upstream source): the default context by app
version and GPU memory, the default parallel requests, whether the server multiplies the context by them, and
LM Studio's model-loading guardrail levels. Memory and fit come from planner.memory and planner.capacity.
"""

from __future__ import annotations

import re

from . import capacity
from .errors import InputError
from .memory import MemoryModel
from .results import Fit, ServingDefaults, WiredLimit
from .schema import ServingApp
from .units import GiB

PARALLEL_AUTO_TRY = 4  # ollama v0.9.0 server/sched.go: defaultParallel = 4, else 1


def version_tuple(v: str, flag: str = "[[app_version]]") -> tuple[int, ...]:
    m = re.fullmatch(r"v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", v.strip())
    if not m:
        raise InputError(f"{flag} {v!r}: not a version; write it like 0.15.5")
    return tuple(int(x or 0) for x in m.groups())


def default_context(app: ServingApp, version: str, gpu_bytes: int, train_ctx: int) -> tuple[int, str, str]:
    """Default context per sequence [tokens], why, and the source of the rule that gave it (first rule whose version and GPU
    memory match; ollama server/routes.go tiers by the GPU memory Metal reports, the wired limit on a Mac)."""
    v = version_tuple(version)
    for r in app.context_rules:
        if v >= version_tuple(r.since_version) and gpu_bytes >= r.min_gpu_gib * GiB:
            per = "per request" if app.context_per_parallel else "shared by the parallel requests"
            why = f"{app.name} {version}: {r.context:,} tokens {per}"
            if r.min_gpu_gib:
                why += f" (GPU memory {gpu_bytes / GiB:.1f} GiB ≥ {r.min_gpu_gib:g} GiB)"
            if app.context_capped_at_train and r.context > train_ctx:
                return train_ctx, why + f", capped at the model's {train_ctx:,}", r.source
            return r.context, why, r.source
    raise InputError(f"[[app_version]] {version}: older than every {app.name} version the planner knows")


def default_parallel(app: ServingApp, version: str, fits: bool) -> int:
    """Default parallel requests; the automatic setting of old Ollama takes 4 when they fit, else 1."""
    v = version_tuple(version)
    for r in app.parallel_rules:
        if v >= version_tuple(r.since_version):
            return r.parallel or (PARALLEL_AUTO_TRY if fits else 1)
    return 1


def app_defaults(mm: MemoryModel, app: ServingApp, wired: WiredLimit, version: str | None = None,
                 guardrail: str | None = None) -> ServingDefaults:
    """The configuration a user gets from ``app`` with no settings, its memory and its fit."""
    version = version or app.current_version
    rt, train = mm.runtime, mm.model.config.max_position_embeddings
    ctx, why, src = default_context(app, version, wired.effective_bytes, train)
    fits4 = capacity.fit(mm.total(ctx, PARALLEL_AUTO_TRY), mm.weights.total_bytes, wired, rt).verdict == "fits"
    mt = mm.model.config.model_type
    par = 1 if app.one_at_a_time(mm.model.id, mt) else default_parallel(app, version, fits4)
    # Ollama multiplies the context by the parallel requests; LM Studio's unified KV shares one context among them
    total = mm.total(ctx, par) if app.context_per_parallel else mm.total(ctx, 1)
    fit = capacity.fit(total, mm.weights.total_bytes, wired, rt)
    gr = check_guardrail(app, total, fit, guardrail)
    return ServingDefaults(app=app.id, version=version, default_context=ctx, default_parallel=par, context_rule=why,
                           memory_bytes=total, fit=fit, guardrail=gr[0], guardrail_allows=gr[1],
                           guardrail_reason=gr[2], engine_note=engine_note(app, mm.model.id, mt, version), sources=[src])


def engine_note(app: ServingApp, model_id: str, model_type: str, version: str | None = None) -> str:
    """What the app does differently for this model at ``version`` (default: the current one): its own engine, one
    request at a time (with sources)."""
    parts = []
    if app.runs_own_engine(model_id, model_type, version_tuple(version) if version else None):
        parts.append(f"{app.name} runs {model_id} on its own engine, not llama.cpp ({app.own_engine_source}); "
                     "memory and speed here are llama.cpp's")
    if app.one_at_a_time(model_id, model_type):
        parts.append(f"{app.name} serves {model_id} one request at a time whatever OLLAMA_NUM_PARALLEL says "
                     f"({app.single_parallel_source})")
    return "; ".join(parts)


def check_guardrail(app: ServingApp, total: int, fit: Fit, level: str | None) -> tuple[str | None, bool | None, str]:
    """(level, allows, reason) for an app with load guardrails; (None, None, '') otherwise. allows is None when
    the level's threshold is unpublished and the estimate is between a comfortable fit and no fit at all.
    ``level`` may be ``custom:<GB>`` (LM Studio: 'Models will not load if loading them would exceed this limit')."""
    if not app.guardrails:
        return None, None, ""
    name = (level or app.default_guardrail or app.guardrails[0].name).lower().strip()
    name, _, cap_gb = name.partition(":")
    lv = next((g for g in app.guardrails if g.name == name), None)
    if lv is None:
        raise InputError(f"[[guardrail]] {level!r}: {app.name} has {', '.join(g.name for g in app.guardrails)} "
                         "(custom:<GB> for your own limit)")
    if lv.custom_cap:
        return _custom_guardrail(lv.name, cap_gb, total)
    if lv.strength == 0:
        return lv.name, True, f"guardrail {lv.name}: no check ({lv.description}); past the GPU limit macOS may freeze"
    if fit.verdict == "fits":
        return lv.name, True, f"guardrail {lv.name} loads it: {total / GiB:.1f} GiB fits comfortably"
    if fit.verdict == "no-fit":
        return lv.name, False, (f"guardrail {lv.name} refuses it: {total / GiB:.1f} GiB does not fit this Mac "
                                "(lower the context or the quant)")
    return lv.name, None, (f"guardrail {lv.name} may refuse it: {total / GiB:.1f} GiB is {fit.verdict} and "
                           f"{app.name} does not publish the level's threshold; hold ⌥ (Option) to load anyway")


def _custom_guardrail(name: str, cap_gb: str, total: int) -> tuple[str, bool, str]:
    try:
        cap = float(cap_gb) * 1e9
    except ValueError:
        cap = -1.0
    if not 0 < cap <= 65_536e9:  # also nan and inf: a limit no Mac has
        raise InputError(f"[[guardrail]] custom:{cap_gb[:20]}: give the memory limit in GB (up to 65,536), e.g. "
                         "custom:40")
    ok = total <= cap
    return name, ok, (f"guardrail custom {cap / 1e9:g} GB {'loads' if ok else 'refuses'}: estimate "
                      f"{total / 1e9:.1f} GB")
