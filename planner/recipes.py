"""Launch command lines: llama-server, Ollama and mlx_lm.server/generate for one chosen option."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ._model import Frozen
from .memory import MemoryModel
from .results import Fit
from .schema import LlamaCppFamily, ModelProfile, QuantFormat
from .units import pad_to


def _mlx_repo(model: ModelProfile, q: QuantFormat) -> str:
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
    notes: list[str] = Field(default_factory=list)


def recipe(mm: MemoryModel, q: QuantFormat, context: int, slots: int, fit: Fit) -> Recipe:
    rt, model = mm.runtime, mm.model
    notes: list[str] = []
    if isinstance(rt, LlamaCppFamily):
        ctx_total = pad_to(context * slots, rt.ctx_pad)
        kv = mm.kv.kv_type
        name = (model.hf_repo or model.id).split("/")[-1]
        cmd = (f"llama-server -m {name}-{q.id}.gguf -c {ctx_total} -np {slots} -fa on -ctk {kv} -ctv {kv} "
               f"-ub {mm.n_ubatch} -ngl 99")
        notes.append(f"-c is the total over slots: {slots} × {context:,} tokens (llama-server splits it per -np slot)")
        if rt.id == "ollama":
            cmd = (f"OLLAMA_NUM_PARALLEL={slots} OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE={kv} ollama serve  "
                   f"# then num_ctx={context * slots} in the Modelfile")
        return Recipe(server=cmd, sysctl=fit.sysctl, notes=notes)
    repo = _mlx_repo(model, q)
    kv_bits = {"kv8": 8, "kv4": 4}.get(mm.kv.kv_type)
    server = f"mlx_lm.server --model {repo} --prefill-step-size {rt.prefill_chunk}"
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
    gen += f" --prefill-step-size {rt.prefill_chunk}"
    if mm.kv.swa_bytes_per_token:
        notes.append("sliding-window model: --max-kv-size turns every layer into a rotating cache; leave it off "
                     "if answers must see the whole context")
    return Recipe(server=server, generate=gen, sysctl=fit.sysctl, notes=notes)
