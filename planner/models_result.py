"""The result of `plan models`: catalog models that run on one Mac, best first (split from planner/results.py, so
that the plain question does not define these classes)."""

from pydantic import BaseModel, Field

from ._model import Frozen
from .results import Verdict


class ModelRow(BaseModel):
    """One catalog model on one Mac: the best way to run it and what it gives (plan models)."""

    model_config = Frozen
    rank: int = Field(description="1 = best; embedding models are ranked among themselves")
    model: str
    name: str
    family: str | None = None
    tasks: list[str]
    params_b: float = Field(description="Published total parameters [billions]")
    runtime: str
    quant: str
    quant_quality: str = Field(description="Quality cost tier of the quant (advice.quality_of)")
    kv_type: str
    verdict: Verdict
    memory_bytes: int = Field(description="Weights + KV + buffers at the asked context and users [bytes]")
    memory_left_bytes: int = Field(description="GPU wired limit minus memory (negative: over the default) [bytes]")
    context: int = Field(description="Context per user the row was sized for [tokens]")
    max_context: int = Field(description="Longest context per user that fits at the asked users [tokens]")
    max_users: int = Field(description="Most concurrent users that fit at the asked context")
    decode_tok_s_per_user: float | None = Field(None, description="Decode speed per user [tok/s]; None without a chip")
    decode_tok_s_range: tuple[float, float] | None = Field(None, description="Likely decode range [tok/s]")
    prefill_tok_s: float | None = Field(None, description="Prefill speed of one prompt [tok/s]")
    ttft_s: float | None = Field(None, description="Time to first token at the result's prompt and prompt-cache "
                                 "share [s]")
    prefill_tok_s_range: tuple[float, float] | None = Field(None, description="Likely prefill range [tok/s]")
    score: float | None = Field(None, description="Published benchmark score [%]; None: unscored")
    benchmark: str | None = None
    score_source: str | None = None
    score_caveats: list[str] = Field([], description="third-party, base-model, other-protocol")
    meets: bool = Field(description="Fits at the asked context/users and meets the minimum tok/s")
    misses: list[str] = Field([], description="Why the row does not meet the filters")


class ModelsResult(BaseModel):
    """Catalog models that run on one Mac, best first (plan models)."""

    model_config = Frozen
    ram_gb: float
    chip: str | None = Field(None, description="Chip profile id (m4-max-40gpu); None: memory-only ranking")
    chip_label: str | None = Field(None, description="The chip's name for people (M4 Max 40-core GPU)")
    wired_limit_bytes: int
    context: int
    users: int
    min_tok_s: float | None = None
    prompt_tokens: int
    gen_tokens: int = 0
    cached_prefix_share: float = Field(0.0, description="Share of each prompt already in the server's prompt cache")
    quality_basis: str = Field(description="What the quality figure is")
    rows: list[ModelRow] = Field(description="Generative models, best first")
    embedding_rows: list[ModelRow] = Field([], description="Embedding models, ranked by their own benchmark")
    best_effort: bool = Field(False, description="Nothing met the filters: the closest rows are shown")
    binding: list[str] = Field([], description="Which filter binds and by how much")
    excluded: dict[str, int] = Field({}, description="Catalog models left out, by reason")
    evaluated: int = Field(0, description="model × runtime × quant × KV configurations evaluated")
    notes: list[str] = []


