"""The orchestrator: a request in, a structured Plan out (the ModelChain of this project)."""


import dataclasses
from typing import Any

from pydantic import AliasChoices, BaseModel, Field, field_validator, model_validator

from . import architecture as arch
from . import capacity, deployment, hybrid, profiles
from ._model import Frozen, assemble, one_spelling
from .arch_attention import describe as arch_notes
from .beyond import bf16_notes, fanless_notes, with_energy, with_streaming
from .energy import EnergyPerToken
from .errors import InputError
from .memory import MemoryModel, check_kv_type, kv_alias, kv_layout, memory_model
from .points import (
    CACHED_PREFIX_HELP,
    DEFAULT_CACHED_NOTE,
    DEFAULT_CACHED_PREFIX,
    DEFAULT_GEN,
    DEFAULT_PROMPT,
    MAX_TOKENS,
    GenPoint,
    Images,
    ImageSize,
    KvType,
    PromptPoint,
)
from .recipes import Recipe, recipe
from .results import (
    DraftEstimate,
    Fit,
    KVLayout,
    MemoryEstimate,
    OffloadEstimate,
    ServingDefaults,
    SmallestNeed,
    SpeedSummary,
    StreamingEstimate,
    WeightsEstimate,
    WiredLimit,
)
from .schema import Chip, GgmlTypeTable, ModelProfile, QuantFormat, ResolvedFiles, Runtime
from .setups import judge_offloads, with_draft, with_images, with_offload, with_serving
from .workload import cached_tokens, shrink_point

DEFAULT_QUANTS = {
    "gguf": ["Q3_K_M", "IQ4_XS", "Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0"],
    "mlx": ["mlx-4bit-g64", "mlx-4bit-g32", "mlx-mxfp4", "mlx-6bit-g64", "mlx-6bit-g32", "mlx-8bit-g64",
            "mlx-8bit-g32"],
}
# 600B+ MoEs only fit at 1-3 bits per weight on a Mac (e.g. unsloth dynamic IQ1/IQ2 GGUFs)
_LOW_BITS = {"gguf": ["IQ1_S", "IQ2_XXS", "IQ2_M", "Q2_K"], "mlx": ["mlx-2bit-g64", "mlx-3bit-g64"]}
CONTEXTS = [4096, 8192, 16384, 32768, 131072]
USER_COUNTS = [1, 2, 4, 8, 16]


class PlanRequest(BaseModel):
    """Everything a plan needs; field descriptions double as --help text and form tooltips."""

    model_config = Frozen
    model: str = Field(description="Catalog id, alias, HF repo id or Ollama tag (e.g. llama-3.3-70b)")
    # ram, prompt, gen: the spelling of every request (planner/requests.py); ram_gb, prompt_tokens, gen_tokens (the
    # names before schema_version 4) are still read, for one version
    ram: float | None = Field(None, validation_alias=AliasChoices("ram", "ram_gb"),
                              description="Unified memory of the Mac [GB]; default: the chip's largest")
    chip: str | None = Field(None, description="Apple chip, e.g. 'M3 Max' (needed for speed answers)")
    gpu_cores: int | None = Field(None, gt=0, description="GPU cores, to pick a binned chip (M3 Max 30/40)")
    runtimes: list[str] = Field(default_factory=lambda: ["llama.cpp", "mlx-lm"], description="Runtimes to compare")
    quants: list[str] | None = Field(None, description="Quantizations; default: the sensible set per runtime")
    context: int = Field(8192, gt=0, le=MAX_TOKENS, description="Context per sequence [tokens]")
    users: int = Field(1, gt=0, le=capacity.MAX_USERS, description="Concurrent sequences")
    kv_type: KvType = None
    wired_limit_mb: int | None = Field(None, description="GPU wired limit you set with sysctl iogpu.wired_limit_mb [MB]")
    macos: str = Field(profiles.DEFAULT_MACOS, description="macOS major version (15 or 26); changes the default GPU limit")
    flash_attn: bool | None = Field(None, description="llama.cpp flash attention (default on)")
    n_ubatch: int | None = Field(None, gt=0, le=65536, description="prompt tokens per prefill step: llama.cpp "
                                   "-ub, mlx_lm --prefill-step-size (default: the runtime's, 512 / 2048)")
    # the default workload's point and cached share (planner/points.py), in the speed table and the bottom line
    prompt: PromptPoint = Field(DEFAULT_PROMPT, validation_alias=AliasChoices("prompt", "prompt_tokens"))
    gen: GenPoint = Field(DEFAULT_GEN, validation_alias=AliasChoices("gen", "gen_tokens"))
    cached_prefix: float | None = Field(DEFAULT_CACHED_PREFIX, ge=0, lt=1, allow_inf_nan=False,
                                        description=CACHED_PREFIX_HELP + DEFAULT_CACHED_NOTE)
    images: Images = 0
    image_size: ImageSize = None
    draft_model: str | None = Field(None, description="Draft model for speculative decoding (catalog id, same tokenizer)")
    draft_acceptance: float | None = Field(None, gt=0, lt=1, allow_inf_nan=False, description="Per-token acceptance of the draft (default: "
                                           "the documented rate of the pair, else 0.6)")
    draft_tokens: int | None = Field(None, gt=0, le=64, description="Tokens drafted per step (default 3)")
    app_version: str | None = Field(None, description="Ollama / LM Studio version, for its defaults (default: current)")
    guardrail: str | None = Field(None, description="LM Studio model-loading guardrail: off, relaxed, balanced, "
                                  "strict or custom:<GB>")
    thinking_tokens: int | None = Field(None, ge=0, le=1_000_000, description="Tokens a reasoning model thinks "
                                        "before its answer: the wait for the answer's first token")
    ssd_gb: int | None = Field(None, gt=0, le=16384, description="Internal SSD capacity [GB], for models streamed "
                               "from the SSD (default: the smallest SSD sold with this chip and RAM)")

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        one_spelling(cls.model_fields, data)  # ram and ram_gb at once: an error, not a silent pick
        return data

    @field_validator("guardrail")
    @classmethod
    def _guardrail(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():  # a guardrail "" was taken as no guardrail
            raise ValueError("is empty; give off, relaxed, balanced, strict or custom:<GB>")
        return v

    @field_validator("ram")
    @classmethod
    def _ram(cls, v: float | None) -> float | None:
        # `not 0 < v < inf` also rejects nan and inf (inf reached int() in ram_gb_valid: OverflowError traceback)
        if v is not None and not 0 < v < float("inf"):
            raise ValueError("must be a positive size in GB, e.g. 64")
        return v


def plan_request(**values: Any) -> PlanRequest:
    """``PlanRequest(**values)``. Values its validation would keep as they are (:func:`_valid_as_is`: the plain
    question's model, RAM and chip, a context and users within their bounds) make the same object with
    ``model_construct``, without building the class's validator and serializer on first use (~6 M instructions of
    the plain question; tests/test_plan_request.py finds it equal, value types and fields set included). Any other
    value is validated: a bad one gets validation's own error."""
    if _valid_as_is(values):
        return PlanRequest.model_construct(**values)
    return PlanRequest(**values)


def _valid_as_is(v: dict[str, Any]) -> bool:
    """Whether ``v`` holds only model, ram, chip, context and users, each of its field's exact type (a float RAM,
    not an int) and within its field's bounds (PlanRequest's Field constraints and its RAM validator)."""
    if v.keys() - {"model", "ram", "chip", "context", "users"} or type(v.get("model")) is not str:
        return False
    ram, chip, context, users = v.get("ram"), v.get("chip"), v.get("context", 1), v.get("users", 1)
    return ((ram is None or type(ram) is float and 0 < ram < float("inf")) and (chip is None or type(chip) is str)
            and type(context) is int and 0 < context <= MAX_TOKENS
            and type(users) is int and 0 < users <= capacity.MAX_USERS)


class KVRow(BaseModel):
    model_config = Frozen
    runtime: str
    layout: KVLayout
    per_sequence_bytes: dict[int, int]
    """KV + state bytes for one sequence, by context"""


class FitOption(BaseModel):
    model_config = Frozen
    runtime: str
    quant: str
    kv_type: str
    weights: WeightsEstimate
    memory: MemoryEstimate
    """At the requested context and users"""
    fit: Fit
    safe_users: dict[int, int]
    """Concurrent sequences that fit comfortably, by context"""
    max_context: dict[int, int]
    """Longest context per sequence that fits comfortably, by users"""
    max_context_raised: dict[int, int]
    """Same with the wired limit raised to the safe maximum"""
    notes: list[str] = []
    speed: SpeedSummary | None = None
    """Prefill/TTFT and decode by users (needs a chip)"""
    draft: DraftEstimate | None = None
    """Speculative decoding with a draft model: memory and speed-up"""
    offload: OffloadEstimate | None = None
    """llama.cpp partial offload when the whole model does not fit"""
    serving: ServingDefaults | None = None
    """Wrapper app (Ollama, LM Studio): its defaults and guardrail"""
    recipe: Recipe | None = None
    """Launch command of a wrapper app at the requested context and users"""
    streaming: StreamingEstimate | None = None
    """llama.cpp paging the weights from the SSD when they do not fit in RAM (needs a chip)"""
    energy: EnergyPerToken | None = None
    """Joules per token and battery hours (needs a chip)"""


class ModelSummary(BaseModel):
    model_config = Frozen
    id: str
    name: str
    params: int
    active_params: int
    """Parameters read per decoded token (the routed experts of a MoE)"""
    is_moe: bool = False
    architecture: str
    max_context: int


class MacSummary(BaseModel):
    model_config = Frozen
    ram_gb: float
    chip: Chip | None = None
    note: str = ""


class Plan(BaseModel):
    model_config = Frozen
    request: PlanRequest
    model: ModelSummary
    mac: MacSummary
    wired: WiredLimit
    contexts: list[int]
    user_counts: list[int]
    kv: list[KVRow]
    options: list[FitOption]
    notes: list[str] = []
    # planner.advice imports this module (through planner.search), so the bottom line is kept as its JSON:
    # {workload, targets_met, option (a ServingOption), runtime_verdicts (RuntimeVerdict list)}
    bottom_line: dict[str, Any] | None = None
    """The option to run for the chat workload and mlx-lm vs llama.cpp, as plan recommend ranks them"""
    smallest: SmallestNeed | None = None
    """When no option fits: the configuration needing least memory at any KV type, as plan recommend names it"""


def describe_architecture(m: ModelProfile) -> str:
    c = m.config
    kinds = [cl.kind for cl in arch.cache_layers(c)]
    parts = []
    if "linear" in kinds:
        mla = f" (MLA, latent {c.kv_lora_rank}+{c.qk_rope_head_dim})" if c.is_mla else ""
        parts.append(f"hybrid: {kinds.count('linear')} {hybrid.recurrent_kind(c)} + "
                     f"{kinds.count('full') + kinds.count('mla')} full-attention layers{mla}")
    elif c.is_mla:
        parts.append(f"MLA (latent {c.kv_lora_rank}+{c.qk_rope_head_dim})")
    else:
        kind = "MHA" if c.num_key_value_heads == c.num_attention_heads else "GQA"
        parts.append(f"{kind} {c.num_attention_heads}/{c.num_key_value_heads} heads × {c.head_dim}")
    parts += arch_notes(c)  # Gemma 4 global heads, KV sharing, PLE, DSA indexer (planner/arch_attention.py)
    if "sliding" in kinds:
        if c.attention_chunk_size and "chunked_attention" in (c.layer_types or []):
            parts.append(f"{kinds.count('sliding')} of {len(kinds)} layers chunked attention ({c.attention_chunk_size})")
        else:
            parts.append(f"{kinds.count('sliding')} of {len(kinds)} layers sliding-window ({c.sliding_window})")
    if c.is_moe:
        parts.append(f"MoE {c.num_experts_per_tok}/{c.n_experts} experts")
    return ", ".join(parts)


def resolve_mac(req: PlanRequest) -> tuple[float, Chip | None, str]:
    """-> (RAM, chip, note) through the one deployment stage (planner.deployment.resolve_mac)."""
    # `is not None`: a chip "" was silently treated as no chip
    mac = deployment.resolve_mac(req.chip, req.gpu_cores, req.ram)
    if mac.chip is None:
        return mac.ram_gb, None, "memory answers only need RAM; name the chip for speed answers"
    return mac.ram_gb, mac.chip, mac.bin_note or ""


def mlx_bits_per_weight(q: QuantFormat) -> float:
    """Stored bits per quantized weight of an MLX format: bits + 8·(scale + bias bytes)/group
    (mlx/primitives.h quantize; mlx_lm/utils.py quantize_model)."""
    return (q.bits or 16) + 8 * ((q.scale_bytes or 0) + (q.bias_bytes or 0)) / (q.group_size or 1)


def default_quants(model: ModelProfile, weight_format: str) -> list[QuantFormat]:
    """The formats plans and searches try. A checkpoint that ships quantized (ModelProfile.native_quant, e.g.
    gpt-oss's MXFP4 experts) is tried in its own format first, and no MLX format storing more bits per weight than
    that one is tried: converting it up (mlx_lm.convert -q --q-bits 8 of the dequantized MXFP4) doubles the memory
    and cannot restore what the checkpoint never held. A MoE over 300 B params first tries the 1-3 bit formats
    it only fits in on a Mac (e.g. unsloth's dynamic IQ1/IQ2 GGUFs): one set for plan, recommend, models and buy."""
    ids = list(DEFAULT_QUANTS[weight_format])
    nq = model.native_quant
    if nq is not None:
        native = nq.preset_for(weight_format)
        if native is not None:
            ids = [native] + [i for i in ids if i != native]
            if weight_format == "mlx":
                cap = mlx_bits_per_weight(profiles.load_quant(native, "mlx"))
                ids = [i for i in ids if mlx_bits_per_weight(profiles.load_quant(i, "mlx")) <= cap]
    if model.config.is_moe and model.params_b > 300:
        ids = [i for i in _LOW_BITS[weight_format] if i not in ids] + ids
    return [profiles.load_quant(i, weight_format) for i in ids]


def _known(q: str, kind: str) -> bool:
    try:
        profiles.load_quant(q, kind)
        return True
    except InputError:
        return False
    except KeyError:
        return False


def build_option(mm: MemoryModel, req: PlanRequest, wired: WiredLimit, raised: WiredLimit, contexts: list[int],
                 user_counts: list[int], max_ctx: int) -> FitOption:
    rt = mm.runtime
    ctx = min(req.context, max_ctx)
    est = mm.estimate(ctx, req.users)
    verdict = capacity.fit(est.total, mm.weights.total_bytes, wired, rt)
    budget = capacity.comfortable_budget(wired, rt, mm.weights.total_bytes)
    budget_raised = capacity.comfortable_budget(raised, rt, mm.weights.total_bytes)
    return assemble(  # the request's context is capped once, with its note, by plan (capacity.cap_context)
        FitOption,
        runtime=rt.id, quant=mm.quant_id, kv_type=mm.kv.kv_type, weights=mm.weights, memory=est,
        fit=verdict,
        safe_users=capacity.safe_users_by_context(mm, contexts, budget),
        max_context=capacity.max_context_by_users(mm, user_counts, budget, max_ctx),
        max_context_raised=capacity.max_context_by_users(mm, user_counts, budget_raised, max_ctx))


def _option(mm: MemoryModel, q: QuantFormat, req: PlanRequest, chip: Chip | None, ram: float, limits: tuple[WiredLimit, WiredLimit],
            contexts: list[int], user_counts: list[int], max_ctx: int) -> FitOption:
    """One runtime x quant: the fit, then each optional part from its own module (speed, wrapper app, partial
    offload, draft model, streaming from the SSD, energy)."""
    wired, raised = limits
    opt = build_option(mm, req, wired, raised, contexts, user_counts, max_ctx)
    opt = with_speed(opt, mm, q, chip, req, user_counts)
    opt = with_serving(opt, mm, q, wired, req)
    opt = with_offload(opt, mm, q, chip, wired, req)
    opt = with_draft(opt, mm, q, chip, wired, req)
    opt = with_streaming(opt, mm, chip, wired, req.ssd_gb)
    return with_energy(opt, chip, ram)


def plan(req: PlanRequest, resolved: ResolvedFiles | None = None) -> Plan:
    """``resolved``: a sources.ResolvedModel (duck-typed: the core does not import the edge); its profile
    replaces the catalog lookup and its exact weight bytes replace the estimate for the matching runtime x quant."""
    model = resolved.profile if resolved is not None else profiles.load_model(req.model)
    ram, chip, mac_note = resolve_mac(req)
    macos = profiles.load_macos(req.macos)
    wired = capacity.wired_limit(ram, macos, req.wired_limit_mb)
    raised = capacity.raised_limit(ram, macos, wired)
    table = profiles.ggml_types()
    max_ctx = model.config.max_position_embeddings
    req, cap_notes = _capped(req, model, max_ctx)
    contexts = sorted({c for c in CONTEXTS if c <= max_ctx} | {req.context})
    user_counts = sorted(set(USER_COUNTS) | {req.users})
    req, runtimes, vision_notes = with_images(req, model)
    if not runtimes:
        raise InputError("[[runtime]]: give at least one of llama.cpp, mlx-lm, ollama")
    req, runtimes, name_notes = pinned_by_name(req, runtimes, resolved)
    vision_notes = [*vision_notes, *name_notes]
    _check_asked(req, runtimes)
    kv_rows, options, notes = [], [], [*cap_notes, *vision_notes, *(getattr(resolved, "notes", None) or [])]
    mms: list[MemoryModel] = []
    runtimes = _file_runtimes(req, runtimes, resolved, model.name, notes)
    asked, quant_notes = deployment.resolve_quants(req.quants, runtimes) if req.quants else ({}, [])
    notes += quant_notes  # the deployment stage's rule: other-format quants converted, or runtimes left out
    for rt in runtimes:
        quants = _exact_quants(req, rt, resolved) or _quants_for(req, rt, model, resolved, asked)
        if not quants:
            continue
        kv_type = req.kv_type if _kv_applies(req.kv_type, rt) else None
        if req.kv_type and kv_type is None:
            notes.append(f"{rt.id}: [[kv_type]] {req.kv_type} is not a {rt.id} KV type; using {rt.default_kv_type}")
        first = None
        for q in quants:
            mm = memory_model(model, rt, q, table, kv_type=kv_type, flash_attn=req.flash_attn, n_ubatch=req.n_ubatch)
            mm, label = _apply_exact(mm, q, rt, resolved)
            mm = mm.with_images(req.images)
            first, mms = first or mm, [*mms, mm]
            opt = _option(mm, q, req, chip, ram, (wired, raised), contexts, user_counts, max_ctx)
            options.append(opt if label is None else opt.model_copy(update={"quant": label, "notes": [
                *opt.notes, "weights: exact bytes read from the model files"]}))
        if first is not None:
            kv_rows += _kv_rows(first, rt, model, table, req, contexts)
            if first.engine.context_checkpoints and first.kv.state_bytes_per_seq:  # llama-server itself
                notes.append(hybrid.checkpoint_note(first.kv.state_bytes_per_seq, rt.id))
    options = judge_offloads(options)
    if chip is not None:
        notes += fanless_notes(chip, ram)
        notes += bf16_notes(chip, model.config.torch_dtype, [o for o in runtimes if _planned(o, options)])
    if req.quants and not options:
        raise InputError(f"[[quant]] {', '.join(req.quants)}: not a format of {', '.join(r.id for r in runtimes)} "
                         "(GGUF: Q4_K_M, Q8_0...; MLX: 4bit, 8bit-g32, mxfp4...)")
    summary = assemble(ModelSummary, id=model.id, name=model.name, params=options[0].weights.n_params if options else 0,
                       active_params=_active_params(model), is_moe=model.config.is_moe,
                       architecture=describe_architecture(model),
                       max_context=max_ctx)
    mac = assemble(MacSummary, ram_gb=ram, chip=chip, note=mac_note)
    return assemble(Plan, request=req, model=summary, mac=mac, wired=wired, contexts=contexts, user_counts=user_counts,
                    kv=kv_rows, options=options, notes=notes, smallest=_smallest(options, mms, req))


def _planned(rt: Runtime, options: list[FitOption]) -> bool:
    """An option of this runtime is in the plan."""
    return any(o.runtime == rt.id for o in options)


def _check_asked(req: PlanRequest, runtimes: list[Runtime]) -> None:
    """An asked quant or KV type no runtime asked for knows: one clear error (both were once dropped silently)."""
    for qn in req.quants or []:  # a quant no format knows was silently dropped when another asked quant was valid
        profiles.load_quant(qn)  # UnknownProfileError with close matches
    if req.kv_type is not None and not any(_kv_applies(req.kv_type, rt) for rt in runtimes):  # was ignored
        raise InputError(f"[[kv_type]] {req.kv_type!r} is not a KV type of {', '.join(r.id for r in runtimes)}; "
                         "use f16, q8_0, q4_0 (llama.cpp) or bf16, kv8, kv4 (mlx-lm)")


def _smallest(options: list[FitOption], mms: list[MemoryModel], req: PlanRequest) -> SmallestNeed | None:
    """When no option fits: the smallest need over the plan's runtimes and quants at any KV type (the asked one
    only), the figure recommend names too (planner.search.smallest_need)."""
    if not options or any(o.fit.verdict != "no-fit" for o in options):
        return None
    from .search import smallest_need  # planner.search imports this module

    return smallest_need(mms, req.context, req.users, req.kv_type)


def _active_params(model: ModelProfile) -> int:
    """arch.active_params, kept across runs beside the model's profile (profiles.derived): it walks every tensor,
    which a plan from the cache otherwise never builds."""
    return profiles.derived("active_params", (model,), lambda: arch.active_params(model.config))


def _capped(req: PlanRequest, model: ModelProfile, max_ctx: int) -> tuple[PlanRequest, list[str]]:
    """A context above the model's maximum planned at the maximum: one value everywhere (headline, tables, JSON),
    said once. A prompt and answer longer than the maximum are said too (the speed is timed at the lengths given);
    a context shorter than the prompt and answer is planned at their length (up to the maximum), said too."""
    notes = []
    context, capped = capacity.cap_context(req.context, model)
    shrunk = shrink_point(req.prompt, req.gen, context)  # the lengths not given, into the context (one rule)
    if shrunk is not None:
        notes.append(shrunk[2])
        req = req.model_copy(update={"prompt": shrunk[0], "gen": shrunk[1]})
    if req.prompt + req.gen > max_ctx:
        notes.append(f"[[prompt]] {req.prompt:,} + [[gen]] {req.gen:,} tokens is above {model.name}'s maximum of "
                     f"{max_ctx:,} tokens: the speed is timed at a length the model does not run; give a prompt up to "
                     f"{max(max_ctx - req.gen, 1):,}")
    if capped is not None:
        notes.insert(0, capped)
    context, short = capacity.hold_request(context, req.prompt, req.gen, max_ctx)
    notes += [short] if short else []
    if context == req.context:
        return req, notes
    return req.model_copy(update={"context": context}), notes


def pinned_by_name(req: PlanRequest, runtimes: list[Runtime],
                   resolved: ResolvedFiles | None = None) -> tuple[PlanRequest, list[Runtime], list[str]]:
    """A catalog name that names a published repo of one format plans that format (and its preset, when the name
    says which) instead of every runtime x quant: ``mlx-community/Qwen3-30B-A3B-4bit`` is mlx-lm at mlx-4bit-g64,
    ``hf.co/unsloth/<Model>-GGUF:Q4_K_M`` the GGUF runtimes at Q4_K_M (profiles.parse_name). The asked quants win over the
    name's preset; runtimes that cannot load that format are dropped unless they are all that was asked for."""
    if resolved is not None and getattr(resolved, "source", "catalog") != "catalog":
        return req, runtimes, []  # files read from disk or the Hub pin format and quant themselves
    spec = profiles.parse_name(req.model)
    if spec.weight_format is None:  # a bare Ollama library name says which size it was read as
        return req, runtimes, [n for n in (profiles.library_note(req.model),) if n]
    label = "GGUF" if spec.weight_format == "gguf" else "MLX"
    keep = [rt for rt in runtimes if rt.weight_format == spec.weight_format]
    if not keep:  # the name's preset, converted to their format (the deployment stage's quant rule)
        notes = [f"{req.model} holds {label} weights; planned for {', '.join(r.id for r in runtimes)} as asked "
                 "(those runtimes load another format)"]
        if spec.quant and not req.quants:
            got = [deployment.resolve_quant(spec.quant, rt, pinned_by=req.model) for rt in runtimes]
            notes += list(dict.fromkeys(c.text() for _, c in got if c is not None))
            req = req.model_copy(update={"quants": list(dict.fromkeys(q.id for q, _ in got))})
        return req, runtimes, notes
    notes = list(spec.notes)
    if len(keep) < len(runtimes):
        notes.append(f"{req.model} holds {label} weights: planned for {', '.join(r.id for r in keep)} only")
    if spec.quant and not req.quants:
        req = req.model_copy(update={"quants": [spec.quant]})
        notes.append(f"quant {spec.quant} from the name {req.model} (pass [[quant]] to compare others)")
    return req, keep, notes


def launch_recipe(req: PlanRequest, o: FitOption, resolved: ResolvedFiles | None = None) -> Recipe | None:
    """The launch commands of one plan option at the request's context and users (the web form's chosen option):
    the option's own recipe when the plan has one (wrapper apps, vision), else planner.recipes for its runtime,
    quant and KV cache. None for weights read from files in a format no profile names."""
    if o.recipe is not None:
        return o.recipe
    model = resolved.profile if resolved is not None else profiles.load_model(req.model)
    rt = profiles.load_runtime(o.runtime)
    if not _known(o.quant, rt.weight_format):
        return None
    q = profiles.load_quant(o.quant, rt.weight_format)
    mm = memory_model(model, rt, q, profiles.ggml_types(), kv_type=o.kv_type, flash_attn=req.flash_attn,
                      n_ubatch=req.n_ubatch)
    return recipe(mm, q, o.memory.context, req.users, o.fit)


def _kv_rows(first: MemoryModel, rt: Runtime, model: ModelProfile, table: GgmlTypeTable, req: PlanRequest,
             contexts: list[int]) -> list[KVRow]:
    """KV cost of one sequence for the runtime's main KV types (the chosen one first)."""
    kinds = list(dict.fromkeys([first.kv.kv_type, *rt.advised_kv_types]))
    rows = []
    for k in kinds:
        try:
            # same weights and buffers, only the KV layout changes
            mm = first if k == first.kv.kv_type else dataclasses.replace(
                first, kv=kv_layout(model, rt, check_kv_type(k, rt, model), table))
        except InputError:
            continue  # e.g. mlx-lm cannot quantize a rotating (sliding-window) cache
        rows.append(assemble(KVRow, runtime=rt.id, layout=mm.kv, per_sequence_bytes={
            c: mm.estimate(c, 1).kv_cache + mm.kv.state_bytes_per_seq for c in contexts}))
    return rows


def _kv_applies(kv_type: str | None, rt: Runtime) -> bool:
    if kv_type is None:
        return False
    return kv_alias(kv_type, rt) in rt.kv_types  # the runtime's own spelling (q8 -> q8_0 / kv8)


# --------------------------------------------------------------------------- exact weights from real files
def _exact_format(resolved: ResolvedFiles | None) -> str | None:
    """Weight format ('gguf' | 'mlx') the resolved files are in, when they pin one runtime: read weights, or a
    config whose quantization block names the format (an MLX folder without its safetensors: estimated bytes)."""
    hint = getattr(resolved, "runtime_hint", None)
    if resolved is None or hint is None or (resolved.exact_weights is None and not resolved.quant_id):
        return None
    return "gguf" if hint == "llama.cpp" else "mlx"


def _file_runtimes(req: PlanRequest, runtimes: list[Runtime], resolved: ResolvedFiles | None, name: str,
                   notes: list[str]) -> list[Runtime]:
    """The runtimes that can load the model's files; an asked runtime that cannot is said (a note), or refused when
    none of those asked for can (-r mlx-lm on a GGUF was answered for llama.cpp without a word)."""
    kept = _exact_runtimes(runtimes, resolved)
    dropped = [rt.id for rt in runtimes if rt not in kept]
    if dropped and req.runtimes:
        fmt = _exact_format(resolved)
        what = "a GGUF file" if fmt == "gguf" else "MLX weights"
        if not any(rt in runtimes for rt in kept):  # best effort, as the quant rule: the same model in their format
            notes.append(f"[[model]] {name} is {what}, which {', '.join(dropped)} cannot load: answered for the same "
                         f"model in {', '.join(dropped)}'s format (use [[runtime]] {kept[0].id} for these files)")
            return runtimes
        notes.append(f"[[runtime]] {', '.join(dropped)} skipped: [[model]] is {what}, which it cannot load")
    return kept


def _exact_runtimes(runtimes: list[Runtime], resolved: ResolvedFiles | None) -> list[Runtime]:
    """A GGUF file runs on llama.cpp-family runtimes, MLX weights on mlx-lm: keep only those."""
    fmt = _exact_format(resolved)
    if fmt is None:
        return runtimes
    keep = [rt for rt in runtimes if rt.weight_format == fmt]
    assert resolved is not None and resolved.runtime_hint is not None  # _exact_format found the files' format
    return keep or [profiles.load_runtime(resolved.runtime_hint)]


def _exact_quants(req: PlanRequest, rt: Runtime, resolved: ResolvedFiles | None) -> list[QuantFormat]:
    """The file's own quant (or a stand-in preset of the same format, relabelled later), unless quants were asked."""
    fmt = _exact_format(resolved)
    if fmt is None or req.quants or rt.weight_format != fmt:
        return []
    assert resolved is not None  # _exact_format found the files' format
    qid = resolved.quant_id
    if qid and _known(qid, fmt):
        return [profiles.load_quant(qid, fmt)]
    return [profiles.load_quant("Q8_0" if fmt == "gguf" else "mlx-8bit-g64", fmt)]


def _quants_for(req: PlanRequest, rt: Runtime, model: ModelProfile, resolved: ResolvedFiles | None,
                asked: dict[str, list[QuantFormat]]) -> list[QuantFormat]:
    """The asked quants as the deployment stage resolved them for this runtime; else the files' own converted to
    its format; else the formats plans try (:func:`default_quants`)."""
    if req.quants:
        return asked[rt.id]
    return _converted_file_quants(rt, resolved) or default_quants(model, rt.weight_format)


def _converted_file_quants(rt: Runtime, resolved: ResolvedFiles | None) -> list[QuantFormat]:
    """Files of the other weight format asked of this runtime: their quant at the same bit class in the runtime's
    format (the deployment stage's quant rule, planner.deployment.resolve_quant)."""
    fmt = _exact_format(resolved)
    if fmt is None or rt.weight_format == fmt or resolved is None or not resolved.quant_id:
        return []
    if not _known(resolved.quant_id, fmt):
        return []
    return [deployment.resolve_quant(resolved.quant_id, rt)[0]]


def _apply_exact(mm: MemoryModel, q: QuantFormat, rt: Runtime,
                 resolved: ResolvedFiles | None) -> tuple[MemoryModel, str | None]:
    """Swap in the exact bytes for the option whose format and quant match the files; label unknown quants."""
    w = getattr(resolved, "exact_weights", None)
    if w is None or resolved is None:
        return mm, None
    fmt = _exact_format(resolved)
    qid = resolved.quant_id
    known = bool(qid and _known(qid, rt.weight_format))
    if fmt is not None and rt.weight_format == fmt and (q.id == qid or not known):
        label = None if known else f"{qid or fmt} (as read)"
        return dataclasses.replace(mm, weights=w), label
    if fmt is None and qid and q.id == qid and rt.weight_format == q.kind:
        return dataclasses.replace(mm, weights=w), None
    return mm, None


# --------------------------------------------------------------------------- speed (planner/throughput.py)
def with_speed(opt: FitOption, mm: MemoryModel, q: QuantFormat, chip: Chip | None, req: PlanRequest, user_counts: list[int]) -> FitOption:
    """Add prefill/TTFT at the workload's prompt and decode at 1..N users when the chip is known."""
    if chip is None:
        return opt
    from . import throughput as tp

    try:
        res = profiles.load_speed_constants(chip, mm.runtime.id)
        refs = profiles.all_chips()
        P, G = req.prompt, req.gen
        # the prompt's cached prefix is not prefilled again, only the rest on top of it (planner/workload.py)
        share = DEFAULT_CACHED_PREFIX if req.cached_prefix is None else req.cached_prefix
        C = cached_tokens(P, share, mm.runtime)
        ests = {u: tp.predict(mm, chip, res, q.kind, q.mode, P - C, G, C, u, refs) for u in user_counts}
    except InputError as e:
        return opt.model_copy(update={"notes": [*opt.notes, f"speed: {e.template}"]})  # inputs kept by key
    one = ests[user_counts[0]]
    speed = SpeedSummary(
        prompt_tokens=P, gen_tokens=G, cached_prefix_share=share, prefill_tok_s=one.prefill_tok_s,
        ttft_s=one.ttft_s,
        time_per_request_s=one.time_per_request_s,
        decode_tok_s_per_seq={u: e.decode_tok_s_per_seq for u, e in ests.items()},
        decode_tok_s_range={u: e.decode_tok_s_range for u, e in ests.items()},
        prefill_tok_s_range=one.prefill_tok_s_range,
        decode_tok_s_total={u: e.decode_tok_s for u, e in ests.items()},
        bound={u: e.bound for u, e in ests.items()}, knee_batch=one.knee_batch, calibration=res.source)
    return opt.model_copy(update={"speed": speed})
