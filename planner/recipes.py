"""Launch command lines: llama-server, Ollama and mlx_lm.server/generate for one chosen option."""


from pydantic import BaseModel

from ._model import Frozen, assemble
from .memory import MemoryModel
from .results import Fit
from .schema import LlamaCppFamily, MlxRuntime, ModelProfile, QuantFormat, Runtime
from .units import pad_to


def mlx_repo(model: ModelProfile, q: QuantFormat) -> str:
    name = (model.hf_repo or model.id).split("/")[-1]
    suffix = {"affine": f"{q.bits}bit", "mxfp4": "mxfp4", "nvfp4": "nvfp4", "mxfp8": "mxfp8", "none": "bf16"}.get(
        q.mode or "", f"{q.bits}bit")
    if q.mode == "affine" and q.group_size and q.group_size != 64:
        suffix += f"-g{q.group_size}"
    return f"mlx-community/{name}-{suffix}"


class Recipe(BaseModel):
    model_config = Frozen
    server: str
    generate: str | None = None
    sysctl: str | None = None
    notes: list[str] = []


def recipe(mm: MemoryModel, q: QuantFormat, context: int, slots: int, fit: Fit,
           draft: tuple[MemoryModel, int] | None = None) -> Recipe:
    """Launch commands for one option; ``draft``: (draft model's memory model, tokens drafted per step)."""
    eng = mm.engine  # the engine or product adapter (planner/engines) picks the launch line
    r = eng.launch(mm, q, context, slots, fit)
    return r if draft is None else eng.with_draft(r, mm, draft[0], draft[1])


def _llama_draft(r: Recipe, mm: MemoryModel, dm: MemoryModel, g: int) -> Recipe:
    """llama-server -md (common/arg.cpp --spec-draft-model, --draft-max, -ctkd/-ctvd)."""
    kv = mm.kv.kv_type
    name = (dm.model.hf_repo or dm.model.id).split("/")[-1]
    flags = f" -md {name}-{dm.quant_id}.gguf -ngld 99 --draft-max {g} -ctkd {kv} -ctvd {kv}"
    return r.model_copy(update={"server": r.server + flags, "notes": [
        *r.notes, "the draft gets the same -c and -np as the main model (its KV is counted)"]})


def _mlx_draft(r: Recipe, mm: MemoryModel, dm: MemoryModel, g: int) -> Recipe:
    """mlx_lm.server --draft-model (mlx_lm/server.py, mlx_lm/generate.py --num-draft-tokens)."""
    repo = mlx_repo(dm.model, _quant_of(dm))
    flags = f" --draft-model {repo} --num-draft-tokens {g}"
    server = r.server.split(" --decode-concurrency")[0] + flags
    return r.model_copy(update={"server": server, "generate": (r.generate or "") + flags, "notes": [
        *r.notes, "mlx_lm.server with a draft model serves one request at a time (not batchable)"]})


def _llama(rt: Runtime) -> LlamaCppFamily:
    """The runtime of a llama.cpp recipe (planner/engines sends only llama.cpp-family runtimes here)."""
    assert isinstance(rt, LlamaCppFamily), rt.id
    return rt


def _mlx(rt: Runtime) -> MlxRuntime:
    assert isinstance(rt, MlxRuntime), rt.id
    return rt


def _quant_of(mm: MemoryModel) -> QuantFormat:
    from . import profiles

    return profiles.load_quant(mm.quant_id, mm.runtime.weight_format)


def _llama_server(mm: MemoryModel, q: QuantFormat, context: int, slots: int, fit: Fit) -> Recipe:
    rt, model = _llama(mm.runtime), mm.model
    ctx_total = pad_to(context * slots, rt.ctx_pad)
    kv = mm.kv.kv_type
    name = (model.hf_repo or model.id).split("/")[-1]
    fa = "on" if mm.flash_attn else "off"  # common/arg.cpp -fa [on|off|auto]
    cmd = (f"llama-server -m {name}-{q.id}.gguf -c {ctx_total} -np {slots} -fa {fa} -ctk {kv} -ctv {kv} "
           f"-ub {mm.n_ubatch} -ngl 99")
    notes = [f"-c is the total over slots: {slots} × {context:,} tokens (llama-server splits it per -np slot)"]
    if mm.images:
        cmd += f" --mmproj mmproj-{name}-f16.gguf"
        notes.append("--mmproj loads the vision encoder and projector (tools/mtmd); images count as prompt tokens")
    return assemble(Recipe, server=cmd, sysctl=fit.sysctl, notes=notes)


def _ollama(mm: MemoryModel, context: int, slots: int, fit: Fit) -> Recipe:
    """Ollama takes num_ctx per request and gives its runner num_ctx × OLLAMA_NUM_PARALLEL
    (ollama server/sched.go effectiveLlamaServerContext), so the per-sequence context is what we set."""
    from . import profiles

    app = profiles.serving_app_of(mm.runtime.id)
    queued = slots > 1 and app is not None and app.one_at_a_time(mm.model.id, mm.model.config.model_type)
    slots = 1 if queued else slots  # server/sched.go forces numParallel = 1 for these architectures
    kv = mm.kv.kv_type
    fa = "OLLAMA_FLASH_ATTENTION=1 " if mm.flash_attn else ""
    cmd = (f"OLLAMA_NUM_PARALLEL={slots} OLLAMA_CONTEXT_LENGTH={context} {fa}OLLAMA_KV_CACHE_TYPE={kv} ollama serve")
    n_ctx = pad_to(context * slots, _llama(mm.runtime).ctx_pad)
    notes = [(f"num_ctx is per request: Ollama reserves num_ctx × OLLAMA_NUM_PARALLEL = {context:,} × {slots} "
              f"= {n_ctx:,} KV cells (ollama server/sched.go effectiveLlamaServerContext)"),
             (f"a Modelfile 'PARAMETER num_ctx' or a request's options.num_ctx overrides OLLAMA_CONTEXT_LENGTH: "
              f"keep it at {context}")]
    if queued:
        notes.append(f"Ollama serves {mm.model.id} one request at a time: the other users queue")
    return assemble(Recipe, server=cmd, sysctl=fit.sysctl, notes=notes)


def _lms(mm: MemoryModel, q: QuantFormat, context: int, slots: int, fit: Fit) -> Recipe:
    """LM Studio: lms load (lmstudio-ai/lms src/subcommands/load.ts: --context-length, --parallel, --gpu); flash
    attention and the KV cache type are load settings of the app (lms-kv-config schema.ts) with no lms flag."""
    rt, model, kv = mm.runtime, mm.model, mm.kv.kv_type
    gguf = rt.weight_format == "gguf"
    key = f"{(model.hf_repo or model.id).lower()}@{q.id.lower()}" if gguf else mlx_repo(model, q)
    # unified KV (useUnifiedKvCache): the parallel predictions share --context-length, so it holds them all
    ctx = pad_to(context * slots, _llama(rt).ctx_pad) if gguf and mm.kv_unified else context
    cmd = f"lms load {key} --context-length {ctx} --parallel {slots} --gpu max"
    settings = [f"Context Length {ctx}", f"Max Concurrent Predictions {slots}", "GPU Offload max"]
    if gguf:
        settings.append(f"Flash Attention {'on' if mm.flash_attn or kv != 'f16' else 'off'}")
        if kv != "f16":
            settings.append(f"K Cache Quantization Type {kv}, V Cache Quantization Type {kv} (experimental)")
    elif kv != "bf16":
        settings.append(f"KV Cache Quantization on, {kv[2:]} bits, group {_mlx(rt).kv_group_size}")
    notes = [f"app load settings (My Models → model → defaults, also used by lms load): {'; '.join(settings)}",
             (f"or POST /api/v1/models/load {{\"model\": \"{key}\", \"context_length\": {ctx}"
              + (f", \"flash_attention\": {str(mm.flash_attn or kv != 'f16').lower()}" if gguf else "") + "}")]
    if gguf and mm.kv_unified and slots > 1:
        notes.append(f"one unified KV cache: {slots} × {context:,} tokens share --context-length {ctx:,}")
    return assemble(Recipe, server=cmd, sysctl=fit.sysctl, notes=notes)


def _mlx_vlm(mm: MemoryModel, q: QuantFormat, context: int, slots: int, fit: Fit) -> Recipe:
    """mlx-vlm (Blaizzy/mlx-vlm server/cli.py, generate/dispatch.py): one model for images and text."""
    rt, repo = _mlx(mm.runtime), mlx_repo(mm.model, q)
    kv_bits = {"kv8": 8, "kv4": 4}.get(mm.kv.kv_type)
    kv = f" --kv-bits {kv_bits} --kv-group-size {rt.kv_group_size}" if kv_bits else ""
    server = (f"mlx_vlm.server --model {repo} --max-num-seqs {slots} --max-kv-size {context} "
              f"--prefill-step-size {mm.n_ubatch}{kv}")
    gen = (f"mlx_vlm.generate --model {repo} --max-kv-size {context}{kv} --image photo.jpg "
           f"--prompt 'Describe the image'")
    return assemble(Recipe, server=server, generate=gen, sysctl=fit.sysctl,
                    notes=["the vision tower loads with the model; each image is encoded into prompt tokens"])


def _mlx_lm(mm: MemoryModel, q: QuantFormat, context: int, slots: int, fit: Fit) -> Recipe:
    rt, model = _mlx(mm.runtime), mm.model
    notes: list[str] = []
    repo = mlx_repo(model, q)
    kv_bits = {"kv8": 8, "kv4": 4}.get(mm.kv.kv_type)
    server = f"mlx_lm.server --model {repo} --prefill-step-size {mm.n_ubatch}"
    if kv_bits:
        server += f" --kv-bits {kv_bits} --kv-group-size {rt.kv_group_size}"
        notes.append("mlx_lm.server --kv-bits disables batching: requests are served one at a time")
    else:
        server += f" --decode-concurrency {slots} --prompt-concurrency {min(slots, rt.prefill_batch_size)}"
    notes.append(f"mlx_lm.server has no --max-kv-size (ml-explore/mlx-lm#615): keep prompts + --max-tokens "
                 f"under {context:,} per request")
    gen = f"mlx_lm.generate --model {repo} --max-kv-size {context}"
    if kv_bits:
        gen += f" --kv-bits {kv_bits}"
    gen += f" --prefill-step-size {mm.n_ubatch}"
    if mm.kv.swa_bytes_per_token:
        notes.append("sliding-window model: --max-kv-size turns every layer into a rotating cache; leave it off "
                     "if answers must see the whole context")
    return assemble(Recipe, server=server, generate=gen, sysctl=fit.sysctl, notes=notes)


def on_port(r: Recipe, port: int, sysctl: str | None) -> Recipe:
    """The same launch line on its own port, for two servers on one Mac (LM Studio serves every loaded model on its
    one server: an identifier instead); ``sysctl`` replaces the single option's wired-limit command."""
    tail = f" --identifier route-{port}" if r.server.startswith("lms load") else f" --port {port}"
    return r.model_copy(update={"server": r.server + tail, "sysctl": sysctl})
