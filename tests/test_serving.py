"""Serving apps' defaults (planner/serving.py): Ollama's default context by version and GPU memory, default
parallel requests, LM Studio's guardrail verdicts. Expected values are derived by hand from the cited code."""

import pytest

from planner import capacity, profiles
from planner.errors import InputError
from planner.plan import PlanRequest, plan
from planner.search import base_memory_model
from planner.serving import app_defaults, default_context, version_tuple
from planner.units import GiB

OLLAMA = profiles.load_serving_app("ollama")


@pytest.mark.parametrize("version,gpu_gib,train,expected", [
    # ollama server/routes.go (>= 0.15.5): >= 47 GiB -> 262144, >= 23 GiB -> 32768, else 4096; capped at train ctx
    ("0.33.0", 48.0, 131072, 131072),   # 64 GB Mac: 3/4 x 64 = 48 GiB -> 262,144, cut to the model's 131,072
    ("0.33.0", 27.0, 131072, 32768),    # 36 GB Mac: 3/4 x 36 = 27 GiB
    ("0.33.0", 16 * 2 / 3, 131072, 4096),  # 16 GB Mac: 2/3 x 16 = 10.7 GiB
    ("0.15.4", 48.0, 131072, 4096),     # before the tiers: OLLAMA_CONTEXT_LENGTH default 4096 (since 0.6.7)
    ("0.6.0", 48.0, 131072, 2048),      # envconfig v0.6.0: 2048
    ("0.33.0", 48.0, 40960, 40960),     # a 40K-context model is cut to 40,960
])
def test_ollama_default_context(version, gpu_gib, train, expected):
    ctx, why, src = default_context(OLLAMA, version, int(gpu_gib * GiB), train)
    assert ctx == expected
    assert version in why and src.startswith("https://github.com/ollama/ollama")


def test_ollama_default_parallel_by_version():
    # 0.9.7 reduced the default to 1 (commit 20c3266e9); before, 4 when 4 sequences fit
    mm = base_memory_model("llama-3.1-8b", "ollama", "Q4_K_M")
    wired = capacity.wired_limit(64, profiles.load_macos("15"))
    assert app_defaults(mm, OLLAMA, wired, "0.33.0").default_parallel == 1
    old = app_defaults(mm, OLLAMA, wired, "0.9.0")
    assert old.default_parallel == 4 and old.default_context == 4096
    # 4 x 4096 tokens x 128 KiB f16 KV (32 layers x 2 x 8 heads x 128 x 2 B = 131,072 B per token) = 2 GiB of KV
    assert old.memory_bytes == mm.total(4096, 4)
    assert mm.estimate(4096, 4).kv_cache == 4 * 4096 * 131072


def test_ollama_default_on_64gb_is_the_full_context():
    p = plan(PlanRequest(model="llama-3.3-70b", ram=64, runtimes=["ollama"], quants=["Q4_K_M"]))
    s = p.options[0].serving
    # 80 layers x 2 x 8 heads x 128 x 2 B = 327,680 B/token; 131,072 tokens -> exactly 40 GiB of KV on top of the
    # 39.6 GiB of weights: over the 48 GiB limit
    assert s.default_context == 131072 and s.default_parallel == 1
    assert s.fit.verdict == "no-fit"
    assert s.memory_bytes - p.options[0].weights.total_bytes > 40 * GiB


@pytest.mark.parametrize("bad", ["x", "1.2.3.4", "", "v"])
def test_bad_version_is_one_clear_error(bad):
    with pytest.raises(InputError, match="app_version"):
        version_tuple(bad)


def test_ollama_own_engine_and_one_request_at_a_time():
    # server/sched.go forces numParallel = 1 for qwen3next in every version; fs/ggml/ggml.go OllamaEngineRequired
    # sent it to Ollama's own engine until v0.30.0 (#16031: llama-server for every GGUF model)
    p = plan(PlanRequest(model="qwen3-next-80b-a3b", ram=128, runtimes=["ollama"], quants=["Q4_K_M"], users=2))
    o = p.options[0]
    assert "own engine" not in o.serving.engine_note and "one request at a time" in o.serving.engine_note
    old = plan(PlanRequest(model="qwen3-next-80b-a3b", ram=128, runtimes=["ollama"], quants=["Q4_K_M"], users=2,
                           app_version="0.29.9")).options[0]
    assert "own engine" in old.serving.engine_note and "one request at a time" in old.serving.engine_note
    assert o.serving.default_parallel == 1
    assert "OLLAMA_NUM_PARALLEL=1 " in o.recipe.server and any("queue" in n for n in o.recipe.notes)
    # a llama.cpp-engine model keeps its slots
    p8 = plan(PlanRequest(model="llama-3.1-8b", ram=32, runtimes=["ollama"], quants=["Q4_K_M"], users=2))
    assert p8.options[0].serving.engine_note == "" and "OLLAMA_NUM_PARALLEL=2 " in p8.options[0].recipe.server
