"""Per-option additions of the serving setups, applied by planner.plan: images (tokens and projector), wrapper
apps' defaults and guardrails (Ollama, LM Studio), llama.cpp partial offload, speculative decoding; each with the
launch recipe that goes with it (planner.recipes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import profiles
from .errors import InputError
from .memory import MemoryModel
from .recipes import recipe
from .results import WiredLimit
from .schema import Chip, ModelProfile, QuantFormat, Runtime
from .serving import app_defaults, check_guardrail

if TYPE_CHECKING:
    from .plan import FitOption as Option
    from .plan import PlanRequest


def with_images(req: PlanRequest, model: ModelProfile) -> tuple[PlanRequest, list[Runtime], list[str]]:
    """N images per request: image tokens join the context and the prompt, mlx-lm gives way to mlx-vlm (mlx-lm reads text
    only), and the projector is counted. Without images: the runtimes asked for, no projector."""
    names = profiles.expand_runtimes(req.runtimes)
    _check_app_flags(req, names)
    if req.draft_model is None and (req.draft_acceptance is not None or req.draft_tokens is not None):
        given = "[[draft_acceptance]]" if req.draft_acceptance is not None else "[[draft_tokens]]"
        raise InputError(f"{given} needs [[draft_model]] (the draft that speculates for the model)")  # was ignored
    if req.thinking_tokens is not None and req.chip is None:  # was ignored: the wait needs the chip's decode speed
        raise InputError("[[thinking_tokens]] needs [[chip]] (the wait is those tokens at the chip's decode speed): add "
                         "[[chip]], e.g. [[chip]] 'M4 Max', or drop [[thinking_tokens]]")
    if not req.images:
        if req.image_size is not None:
            raise InputError("[[image_size]] needs [[images]] N (images per request)")
        return req, [profiles.load_runtime(r) for r in names], []
    from .vision import image_tokens

    tokens, how = image_tokens(model, req.images, req.image_size)
    notes = [(f"{how}; context and prompt include them; the vision encoder + projector "
              f"({model.vision_params_b:g} B params) is loaded")]
    rts, swap = image_runtimes([profiles.load_runtime(r) for r in names])
    upd = {"context": req.context + tokens, "prompt": req.prompt + tokens}
    return req.model_copy(update=upd), rts, [*notes, *swap]


def image_runtimes(rts: list[Runtime]) -> tuple[list[Runtime], list[str]]:
    """The runtimes that read images: mlx-vlm in place of mlx-lm (text only); the others as they are. One rule for
    planner.plan and planner.advice.recommend."""
    if not any(rt.id == "mlx-lm" for rt in rts):
        return rts, []
    rts = list({(r := profiles.load_runtime("mlx-vlm") if rt.id == "mlx-lm" else rt).id: r for rt in rts}.values())
    return rts, ["mlx-lm reads text only: images run on mlx-vlm"]


def with_serving(opt: Option, mm: MemoryModel, q: QuantFormat, wired: WiredLimit, req: PlanRequest) -> Option:
    """Wrapper apps: what the app does with no settings (default context, guardrail) and its launch recipe."""
    app = profiles.serving_app_of(mm.runtime.id)
    if app is None:
        if mm.images:  # vision plans show how to launch with the projector
            return opt.model_copy(update={"recipe": recipe(mm, q, opt.memory.context, req.users, opt.fit)})
        return opt
    dflt = app_defaults(mm, app, wired, req.app_version, req.guardrail)
    rec = recipe(mm, q, opt.memory.context, req.users, opt.fit)
    _, _, gr = check_guardrail(app, opt.memory.total, opt.fit, req.guardrail)
    if gr:
        rec = rec.model_copy(update={"notes": [*rec.notes, f"at {req.users} × {opt.memory.context:,}: {gr}"]})
    return opt.model_copy(update={"serving": dflt, "recipe": rec})


def with_offload(opt: Option, mm: MemoryModel, q: QuantFormat, chip: Chip | None, wired: WiredLimit, req: PlanRequest) -> Option:
    """A llama.cpp option too big for the GPU limit: the largest -ngl that fits and its decode."""
    if opt.fit.verdict not in ("no-fit", "raise-limit") or not mm.engine.partial_offload:
        return opt
    from .offload import offload

    est = None
    if chip is not None and chip.memory_bandwidth_gb_s:
        from . import throughput as tp

        try:
            res = profiles.load_speed_constants(chip, mm.runtime.id)
            est = tp.predict(mm, chip, res, q.kind, q.mode, req.prompt, req.gen, 0, 1,
                             profiles.all_chips())
        except InputError:
            est = None
    off = offload(mm, opt.memory.context, req.users, wired, chip, est)
    return opt if off is None else opt.model_copy(update={"offload": off})


def with_draft(opt: Option, mm: MemoryModel, q: QuantFormat, chip: Chip | None, wired: WiredLimit, req: PlanRequest) -> Option:
    """A draft model (speculative decoding): the draft's memory at the same context and slots, the decode speed-up, and the recipe."""
    if not req.draft_model or not mm.engine.drafts or profiles.serving_app_of(mm.runtime.id) is not None:
        return opt
    from .draft import draft_memory_model, draft_plan
    from .search import speed_model

    rf = speed_model(mm, chip, q) if chip is not None else None
    d = draft_plan(mm, opt.memory.total, req.draft_model, wired, opt.memory.context, req.users, req.draft_acceptance,
                   req.draft_tokens, rf, chip, depth=req.prompt + req.gen / 2)
    dm = draft_memory_model(mm, req.draft_model)
    rec = recipe(mm, q, opt.memory.context, req.users, d.fit, draft=(dm, d.draft_tokens))
    return opt.model_copy(update={"draft": d, "recipe": rec})


def judge_offloads(options: list[Option]) -> list[Option]:
    """Partial offload is slower: not recommended when a smaller quant of the same runtime fits whole under the
    default limit, or when GPU and CPU parts together would not fit in RAM (unified memory: both count)."""
    out = []
    for o in options:
        if o.offload is None:
            out.append(o)
            continue
        whole = [x for x in options if x.runtime == o.runtime and x.fit.verdict in ("fits", "tight")]
        if not o.offload.fits_in_ram:
            why = ("not recommended: GPU and CPU parts together exceed what macOS can spare "
                   f"({(o.offload.gpu_bytes + o.offload.cpu_bytes) / 2**30:.1f} GiB): it would swap")
        elif whole:
            why = f"not recommended: {whole[-1].quant} fits whole on the GPU (faster)"
        elif o.fit.verdict == "raise-limit":
            why = f"no smaller quant fits whole; raising the GPU limit runs it whole, faster ({o.fit.sysctl})"
        else:
            why = "no smaller quant fits whole: the partial offload is the way to run it here"
        ok = not whole and o.offload.fits_in_ram and o.offload.gpu_layers > 0
        out.append(o.model_copy(update={"offload": o.offload.model_copy(update={"recommended": ok, "reason": why})}))
    return out


def _check_app_flags(req: PlanRequest, names: list[str]) -> None:
    """The app version, the guardrail and the draft model only mean something for some runtimes: say so instead of
    ignoring them."""
    apps = [a for a in (profiles.serving_app_of(profiles.load_runtime(n).id) for n in names) if a is not None]
    if req.app_version is not None and not apps:
        raise InputError("[[app_version]] applies to Ollama or LM Studio: add [[runtime]] ollama or [[runtime]] lmstudio")
    if req.guardrail is not None and not any(a.guardrails for a in apps):
        raise InputError("[[guardrail]] applies to LM Studio's model-loading guardrails: add [[runtime]] lmstudio")
    if req.draft_model is not None and not any(profiles.serving_app_of(profiles.load_runtime(n).id) is None
                                               for n in names):
        raise InputError("[[draft_model]] applies to llama.cpp and mlx-lm (llama-server -md, mlx_lm.server --draft-model)")
