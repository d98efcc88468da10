"""Products that run an engine underneath: they inherit every memory and speed rule of their engine (profiles/
runtimes/<id>.yaml ``wraps``) and override only what differs, the launch line and what the product lets you do.
Keyed by runtime profile id."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .llamacpp import LlamaCpp
from .mlxlm import MlxLm

if TYPE_CHECKING:  # these modules import planner.engines
    from ..memory import MemoryModel
    from ..recipes import Recipe
    from ..results import Fit
    from ..schema import QuantFormat, Runtime


class LlamaCppProduct(LlamaCpp):
    """Any product on llama.cpp (runtime kind ``wrapper``): llama.cpp's rules, but not llama-server itself."""

    context_checkpoints = False  # the checkpoints are llama-server's (planner/hybrid.py checkpoint_note)


class MlxProduct(MlxLm):
    """Any product on mlx-lm (runtime kind ``mlx-wrapper``): mlx-lm's rules and launch line."""


class Ollama(LlamaCppProduct):
    """Ollama runs llama.cpp (its ggml runner): llama.cpp's memory and steps; launched with ``ollama``."""

    drafts = False               # Ollama has no draft-model option
    # a model with a projector loads it on every start, whatever the request: llm/llama_server.go startLlamaServer
    # ("Multimodal projectors": ``--mmproj projectors[0]`` when the model has one, as the older llama runner's
    # launcher did; Ollama's own engine keeps the vision weights in the model file), not only for image requests
    loads_vision_tower = True

    def launch(self, mm: MemoryModel, q: QuantFormat, context: int, slots: int, fit: Fit) -> Recipe:
        from ..recipes import _ollama

        return _ollama(mm, context, slots, fit)


class LmStudioLlamaCpp(LlamaCppProduct):
    """LM Studio's llama.cpp engine: llama.cpp's memory and steps; launched with ``lms load``."""

    def launch(self, mm: MemoryModel, q: QuantFormat, context: int, slots: int, fit: Fit) -> Recipe:
        from ..recipes import _lms

        return _lms(mm, q, context, slots, fit)


class LmStudioMlx(MlxProduct):
    """LM Studio's mlx-engine (mlx-lm underneath): mlx-lm's memory and steps; launched with ``lms load``."""

    # a config with vision_config loads as a vision model whatever the request (mlx-engine 08f0c07 generate.py
    # load_model -> BatchedVisionModelKit, batched_vision/model_kit.py mlx_vlm.utils.load_model; before 2026-05
    # VisionModelKit, also mlx-vlm's model)
    loads_vision_tower = True

    def launch(self, mm: MemoryModel, q: QuantFormat, context: int, slots: int, fit: Fit) -> Recipe:
        from ..recipes import _lms

        return _lms(mm, q, context, slots, fit)


class MlxVlm(MlxProduct):
    """mlx-vlm: the language model's caches as mlx-lm's; launched with mlx_vlm's server."""

    loads_vision_tower = True  # mlx_vlm.utils.load_model builds and loads the whole model, vision tower included

    def launch(self, mm: MemoryModel, q: QuantFormat, context: int, slots: int, fit: Fit) -> Recipe:
        from ..recipes import _mlx_vlm

        return _mlx_vlm(mm, q, context, slots, fit)


def adapter_for(runtime: Runtime) -> LlamaCpp | MlxLm | None:
    """The adapter of a product runtime: by profile id, any other ``lmstudio*`` id as LM Studio on its engine, any
    other wrapper as a plain product of its engine; None for the engines themselves (kind llama.cpp / mlx-lm)."""
    hit = ADAPTERS.get(runtime.id)
    if hit is not None:
        return hit
    wraps = getattr(runtime, "wraps", None)
    if runtime.id.startswith("lmstudio"):
        return LMSTUDIO[wraps or runtime.family]
    return PRODUCTS[wraps] if wraps else None


ADAPTERS: dict[str, LlamaCpp | MlxLm] = {"ollama": Ollama(), "lmstudio-llama.cpp": LmStudioLlamaCpp(),
                                         "lmstudio-mlx": LmStudioMlx(), "mlx-vlm": MlxVlm()}
LMSTUDIO: dict[str, LlamaCpp | MlxLm] = {"llama.cpp": ADAPTERS["lmstudio-llama.cpp"],
                                         "mlx-lm": ADAPTERS["lmstudio-mlx"]}
PRODUCTS: dict[str, LlamaCpp | MlxLm] = {"llama.cpp": LlamaCppProduct(), "mlx-lm": MlxProduct()}
