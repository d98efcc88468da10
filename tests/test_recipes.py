"""Launch recipes (planner/recipes.py) reserve exactly the memory the plan states: each test parses the command
line and recomputes the KV cache the way the server would."""

import re

import pytest

from planner import capacity, profiles
from planner.recipes import recipe
from planner.search import base_memory_model
from planner.units import GiB, pad_to


def _env(cmd: str, name: str) -> int:
    return int(re.search(rf"{name}=(\d+)", cmd).group(1))


@pytest.mark.parametrize("context,slots", [(8192, 2), (4096, 4), (32768, 1), (5000, 3)])
def test_ollama_recipe_reserves_the_kv_it_states(context, slots):
    mm = base_memory_model("llama-3.1-8b", "ollama", "Q4_K_M")
    wired = capacity.wired_limit(64, profiles.load_macos("15"))
    fit = capacity.fit(mm.total(context, slots), mm.weights.total_bytes, wired, mm.runtime)
    r = recipe(mm, profiles.load_quant("Q4_K_M", "gguf"), context, slots, fit)
    par, num_ctx = _env(r.server, "OLLAMA_NUM_PARALLEL"), _env(r.server, "OLLAMA_CONTEXT_LENGTH")
    assert (par, num_ctx) == (slots, context)
    # ollama server/sched.go effectiveLlamaServerContext: the runner gets num_ctx x numParallel cells, which
    # llama.cpp pads to 256 and splits per sequence (each padded again)
    n_ctx = pad_to(num_ctx * par, 256)
    per_seq = pad_to(n_ctx // par, 256)
    kv_by_hand = per_seq * par * 131072  # llama-3.1-8b f16: 32 layers x 2 x 8 heads x 128 x 2 B per token
    assert mm.estimate(context, slots).kv_cache == kv_by_hand
    assert f"{n_ctx:,} KV cells" in r.notes[0]


def test_ollama_recipe_8k_x2_is_2_gib_of_kv():
    mm = base_memory_model("llama-3.1-8b", "ollama", "Q4_K_M")
    assert mm.estimate(8192, 2).kv_cache == 2 * GiB  # 16,384 cells x 128 KiB


def test_on_port_gives_each_server_its_own_port_and_lms_an_identifier():
    from planner.recipes import Recipe, on_port

    r = on_port(Recipe(server="llama-server -m x.gguf", sysctl="sudo sysctl iogpu.wired_limit_mb=1"), 8081, None)
    assert r.server.endswith(" --port 8081") and r.sysctl is None
    assert on_port(Recipe(server="lms load k --gpu max"), 8082, None).server.endswith("--identifier route-8082")
