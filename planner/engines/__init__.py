"""Engines: the runtime-specific rules of memory, speed and launch, one module per engine.

Two engines run the models: llama.cpp (``llamacpp.py``) and mlx-lm (``mlxlm.py``). Every rule that differs between
them (KV element bytes, which caches rotate, the MLA/DSA cache layout, recurrent state dtype, runtime buffers,
the prefill chunk, prefill steps, the launch line) is a member of :class:`Engine` and lives in that engine's module,
with its source. Products that run an engine underneath (Ollama, LM Studio, mlx-vlm) are adapters
(``adapters.py``): they delegate to their engine and override only what differs (the launch line, drafts).

The physics modules (memory, throughput, serve_plan, ...) ask ``engine_for(runtime)`` and call the engine; they do
not compare runtime names. The runtime profile's ``kind`` picks the engine (``wrapper`` / ``mlx-wrapper``: the
engine named by ``wraps``), its ``id`` the adapter.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # these modules import planner.engines
    from ..architecture import CacheLayer
    from ..memory import MemoryModel
    from ..recipes import Recipe
    from ..results import Fit
    from ..schema import Chip, GgmlTypeTable, ModelConfig, ModelProfile, QuantFormat, Runtime
    from ..serve import Scheduler


@runtime_checkable
class Engine(Protocol):
    """What the core asks of an engine. ``name`` is the engine whose rules and speed constants apply (an adapter
    answers its engine's name); ``server`` the server program plan serve simulates."""

    name: str
    server: str
    # ---- capabilities (flags the physics modules test instead of runtime names)
    mmap_streams: bool        # weights mapped from the file: a model larger than RAM streams from the SSD
    partial_offload: bool     # -ngl: some layers on the CPU
    kv_unified_option: bool   # one KV stream shared by all slots (llama-server --kv-unified)
    refuses_long_prompts: bool  # the server refuses a prompt longer than the slot
    last_prompt_token_decodes: bool  # the prompt's last token runs as the first decode step (throughput.first_token_time)
    host_step: bool           # the server's host work per token is timed apart (the server calibration run)
    context_checkpoints: bool  # llama-server keeps recurrent-state checkpoints per slot (hybrid models)
    drafts: bool              # speculative decoding with a draft model
    draft_one_at_a_time: bool  # a draft model makes the server serve one request at a time
    loads_vision_tower: bool  # a multimodal checkpoint loads its vision tower even for text-only requests
    build_dtype_compute: bool  # the forward pass computes in the build's float dtype (planner/bf16.py)

    # ---- memory layout
    def kv_alias(self, kv_type: str) -> str: ...
    def check_kv_type(self, given: str, kv_type: str, runtime: Runtime, model: ModelProfile) -> None: ...
    def quantized_v_needs_flash(self, kv_type: str) -> bool: ...
    def settings(self, runtime: Runtime, flash_attn: bool | None, kv_unified: bool | None) -> tuple[bool, bool]: ...
    def kv_element_bytes(self, kv_type: str, runtime: Runtime, table: GgmlTypeTable, ne0: int) -> float: ...
    def rotating(self, model: ModelProfile, runtime: Runtime) -> bool: ...
    def cache_layer_bytes(self, c: CacheLayer, kv_type: str, runtime: Runtime, table: GgmlTypeTable) -> float: ...
    def state_bytes(self, c: CacheLayer) -> int: ...
    def decode_reads(self, cfg: ModelConfig, layers: Sequence[CacheLayer], runtime: Runtime, kv_type: str,
                     table: GgmlTypeTable) -> dict[str, int]: ...
    def resident_weights(self, by_group: dict[str, int], total: int) -> int: ...
    def memory_parts(self, mm: MemoryModel, context: int, users: int,
                     prompt_chunk: int | None) -> tuple[int, int, int, int, int, int]: ...
    def max_slots(self, kv_type: str) -> int | None: ...
    def warn_fraction(self, runtime: Runtime) -> float | None: ...
    def hidden_state_bytes(self, runtime: Runtime) -> int: ...

    # ---- step times
    def prefill_chunk(self, mm: MemoryModel) -> int: ...
    def prefill_steps(self, prompt: int, batch: int, chunk: int, prefill_batch: int = 1) -> int: ...
    def unfused_attention(self, chip: Chip) -> bool: ...
    def noflash(self, flash_attn: bool, factor: float) -> float: ...
    def decode_attn_vec(self, flash_attn: bool, queries: int, heads: tuple[tuple[int, int], ...]) -> bool: ...
    def prefill_attn_dims(self, cfg: ModelConfig) -> float | None: ...
    def unfused_prefill_layers(self, cfg: ModelConfig, runtime: Runtime) -> tuple[list[CacheLayer], int]: ...

    # ---- launch line
    def scheduler(self, mm: MemoryModel, slots: int, kv_unified: bool) -> Scheduler: ...
    def launch(self, mm: MemoryModel, q: QuantFormat, context: int, slots: int, fit: Fit) -> Recipe: ...
    def with_draft(self, r: Recipe, mm: MemoryModel, dm: MemoryModel, g: int) -> Recipe: ...


@functools.cache
def _registry() -> tuple[dict[str, Engine], Callable[[Runtime], Engine | None]]:
    from . import adapters, llamacpp, mlxlm

    engines: dict[str, Engine] = {llamacpp.ENGINE.name: llamacpp.ENGINE, mlxlm.ENGINE.name: mlxlm.ENGINE}
    return engines, adapters.adapter_for


def engines() -> dict[str, Engine]:
    """The engines by name (the ``family`` of a runtime profile)."""
    return _registry()[0]


def by_name(name: str) -> Engine:
    """The engine of a family name ("llama.cpp", "mlx-lm"); calibration rows and Roofline carry the name."""
    try:
        return engines()[name]
    except KeyError:
        raise ValueError(f"no engine named {name!r}; known: {', '.join(engines())}") from None


_FOR: dict[int, tuple[Runtime, Engine]] = {}


def engine_for(runtime: Runtime) -> Engine:
    """The engine of a runtime profile: its family's (``kind`` llama.cpp / mlx-lm, or the engine a wrapper
    ``wraps``), or the adapter of that product (Ollama, LM Studio, mlx-vlm) when there is one. Kept per profile
    object (profiles are frozen; a catalog sweep asks ~10,000 times), the object kept alive beside its answer so
    its id is not reused."""
    hit = _FOR.get(id(runtime))
    if hit is not None and hit[0] is runtime:
        return hit[1]
    base, adapter_for = _registry()
    eng = adapter_for(runtime) or base[runtime.family]
    if len(_FOR) > 256:
        _FOR.clear()
    _FOR[id(runtime)] = (runtime, eng)
    return eng
