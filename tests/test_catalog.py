"""The model catalog as the planner sees it: sizes recomputed with planner.architecture, every alias resolving
through planner.profiles.load_model, and the family / tasks / quality fields `plan models` ranks on.

tests/test_profile_data.py checks the same files with an independent parameter formula; this file uses the
planner's own tensor list, so a layout the planner gets wrong fails here even when the YAML is right.
"""

from __future__ import annotations

import re

import pytest

from planner import architecture as arch
from planner import profiles as P
from planner.errors import UnknownProfileError

MODELS = {m.id: m for m in P.all_models()}

# Published totals are rounded to 2-4 significant digits ("355B", "1.04T", "0.49B") and some exclude a
# multi-token-prediction layer the config also leaves out of num_hidden_layers (GLM-4.5: 352.8B computed vs 355B
# published, -0.6 %; Kimi K2: 1026B vs 1.04T, -1.3 %). 3 % covers that rounding; a wrong hidden size, FFN width,
# vocabulary or expert count moves the total by far more (one expert FFN of 128 already 0.8 % of every layer).
TOTAL_TOL = 0.03
# Active counts on cards are names more than measurements ("A3B", "12B active") and differ on whether the
# embedding row gather counts (planner.architecture.active_params leaves it out): Qwen3-30B-A3B 3.04B computed
# vs 3.3B, Qwen3-Next 3.56B vs 3B. 25 % still catches a wrong top-k or shared-expert count (2x or more).
ACTIVE_TOL = 0.25
CHAT_BENCHMARK = "MMLU-Pro"
EMBEDDING_BENCHMARK = "MTEB English (mean)"
URL = re.compile(r"^https://\S+$")


def test_catalog_size():
    assert len(MODELS) >= 100


@pytest.mark.parametrize("mid", sorted(MODELS))
def test_params_from_planner_layout(mid):
    m = MODELS[mid]
    derived = arch.n_params(m.config) / 1e9 + (m.vision_params_b or 0.0)
    assert derived == pytest.approx(m.params_b, rel=TOTAL_TOL), f"{mid}: planner {derived:.2f}B vs card {m.params_b}B"


@pytest.mark.parametrize("mid", sorted(k for k, m in MODELS.items() if m.active_params_b))
def test_active_params_from_planner_layout(mid):
    m = MODELS[mid]
    derived = arch.active_params(m.config) / 1e9
    assert derived == pytest.approx(m.active_params_b, rel=ACTIVE_TOL), (
        f"{mid}: planner {derived:.2f}B active vs card {m.active_params_b}B")


def _names(m) -> list[str]:
    return [m.id, m.name, *m.aliases, *([m.hf_repo] if m.hf_repo else [])]


@pytest.mark.parametrize("mid", sorted(MODELS))
def test_every_alias_resolves_to_its_model(mid):
    m = MODELS[mid]
    for name in _names(m):
        assert P.load_model(name).id == mid, f"{name!r} resolves to {P.load_model(name).id}, not {mid}"
        assert P.load_model(name.upper()).id == mid  # the matcher is case-insensitive


def test_no_alias_collides():
    """load_model matches a name and its part after the last '/', normalised (planner.profiles.norm): two
    models must never share either spelling, or one of them becomes unreachable by that name."""
    owner: dict[str, str] = {}
    clashes = []
    for m in MODELS.values():
        keys = {P.norm(k) for n in _names(m) for k in (n, n.split("/")[-1])}
        for k in keys:
            if owner.setdefault(k, m.id) != m.id:
                clashes.append(f"{k!r}: {owner[k]} and {m.id}")
    assert clashes == []


@pytest.mark.parametrize(
    ("name", "mid"),
    [
        ("deepseek-r1:70b", "deepseek-r1-distill-llama-70b"),
        ("deepseek-r1:32b", "deepseek-r1-distill-qwen-32b"),
        ("deepseek-r1:14b", "deepseek-r1-distill-qwen-14b"),
        ("deepseek-r1:8b", "deepseek-r1-0528-qwen3-8b"),
        ("deepseek-r1:7b", "deepseek-r1-distill-qwen-7b"),
        ("deepseek-r1:1.5b", "deepseek-r1-distill-qwen-1.5b"),
        ("deepseek-r1:671b", "deepseek-v3"),
        ("qwen3-coder:30b", "qwen3-coder-30b-a3b"),
        ("qwq:32b", "qwq-32b"),
        ("mistral-nemo:12b", "mistral-nemo-12b"),
        ("mistral-small3.2:24b", "mistral-small-3.2-24b"),
        ("devstral:24b", "devstral-small-24b"),
        ("magistral:24b", "magistral-small-24b"),
        ("phi4-mini:3.8b", "phi-4-mini"),
        ("phi4-reasoning:plus", "phi-4-reasoning"),
        ("gemma3:1b", "gemma-3-1b"),
        ("gemma3:270m", "gemma-3-270m"),
        ("granite3.3:8b", "granite-3.3-8b"),
        ("zai-org/GLM-4.5-Air", "glm-4.5-air"),
        ("mlx-community/GLM-4.5-Air-4bit", "glm-4.5-air"),
        ("moonshotai/Kimi-K2-Instruct", "kimi-k2"),
        ("unsloth/Qwen3-Coder-30B-A3B-Instruct-GGUF", "qwen3-coder-30b-a3b"),
        ("bartowski/DeepSeek-R1-Distill-Qwen-32B-GGUF", "deepseek-r1-distill-qwen-32b"),
        ("lmstudio-community/Qwen3-Coder-30B-A3B-Instruct-MLX-4bit", "qwen3-coder-30b-a3b"),
        ("qwen2.5vl:7b", "qwen2.5-vl-7b"),
        ("smollm2:135m", "smollm2-135m"),
    ],
)
def test_names_people_type(name, mid):
    assert P.load_model(name).id == mid


def test_unknown_model_is_still_unknown():
    with pytest.raises(UnknownProfileError):
        P.load_model("deepseek-r1:9000b")


@pytest.mark.parametrize("mid", sorted(MODELS))
def test_family_tasks_quality(mid):
    m = MODELS[mid]
    assert m.family and re.fullmatch(r"[a-z0-9-]+", m.family), f"{mid}: family {m.family!r}"
    assert m.tasks and len(set(m.tasks)) == len(m.tasks)
    assert ("vision" in m.tasks) == bool(m.vision_params_b), f"{mid}: vision task iff a vision tower"
    if "embedding" in m.tasks:
        assert m.tasks == ["embedding"]
    if m.quality is not None:
        expected = EMBEDDING_BENCHMARK if "embedding" in m.tasks else CHAT_BENCHMARK
        assert m.quality.benchmark == expected, f"{mid}: one benchmark across the catalog"
        assert URL.match(m.quality.source), m.quality.source
        assert 0 < m.quality.score <= 100


def test_scores_are_not_lost():
    """The ranking is only useful if the benchmark is widely reported; a drop here means scores were lost."""
    scored = [m for m in MODELS.values() if m.quality is not None]
    assert len(scored) >= 67  # the count after the MMLU-Pro scores were filled in (112 models); it only grows


@pytest.mark.parametrize("mid", sorted(MODELS))
def test_sources_cite_the_config(mid):
    m = MODELS[mid]
    assert any(s.endswith("/config.json") for s in m.sources), f"{mid}: cite the config.json the numbers came from"


def test_header_names_chunked_attention():
    from planner.plan import describe_architecture

    text = describe_architecture(MODELS["llama-4-scout"])
    assert "36 of 48 layers chunked attention (8192)" in text and "MoE 1/16 experts" in text
