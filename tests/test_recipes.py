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


# --------------------------------------------------------------------------- launch flags stated by the recipe (issue 34)
def _recipe(runtime: str, quant: str, context: int, slots: int, kv: str | None = None, fa: bool | None = None,
            ub: int | None = None):
    import dataclasses

    from planner.search import with_kv

    mm = base_memory_model("llama-3.1-8b", runtime, quant)
    mm = dataclasses.replace(mm, flash_attn=fa) if fa is not None else mm
    mm = dataclasses.replace(mm, n_ubatch=ub) if ub is not None else mm
    mm = with_kv(mm, kv) if kv else mm
    wired = capacity.wired_limit(64, profiles.load_macos("15"))
    fit = capacity.fit(mm.total(context, slots), mm.weights.total_bytes, wired, mm.runtime)
    return mm, recipe(mm, profiles.load_quant(quant, mm.runtime.weight_format), context, slots, fit)


@pytest.mark.parametrize("kv,fa", [("f16", None), ("f16", True), ("f16", False), ("q8_0", True)])
def test_ollama_recipe_states_flash_attention_when_the_plan_assumes_it(kv, fa):
    """Rule (issue 34): Ollama's flash attention follows OLLAMA_FLASH_ATTENTION, not the plan: the recipe sets it
    exactly when the memory model counted flash attention (and a quantized KV cache, which needs it, has it)."""
    mm, r = _recipe("ollama", "Q4_K_M", 8192, 2, kv, fa)
    assert ("OLLAMA_FLASH_ATTENTION=1" in r.server) == mm.flash_attn
    if kv != "f16":
        assert "OLLAMA_FLASH_ATTENTION=1" in r.server and f"OLLAMA_KV_CACHE_TYPE={kv}" in r.server


@pytest.mark.parametrize("slots", [1, 3, 8, 32])
def test_mlx_server_recipe_concurrency_is_the_slots_and_the_prefill_batch(slots):
    """Rule (issue 34): mlx_lm.server decodes --decode-concurrency sequences (the slots) and prefills at most
    --prompt-concurrency of them together: the slots, capped at the runtime's prefill_batch_size."""
    mm, r = _recipe("mlx-lm", "mlx-4bit-g64", 8192, slots)
    dec = int(re.search(r"--decode-concurrency (\d+)", r.server).group(1))
    pc = int(re.search(r"--prompt-concurrency (\d+)", r.server).group(1))
    assert dec == slots and pc == min(slots, mm.runtime.prefill_batch_size)


@pytest.mark.parametrize("context,slots,ubatch", [(8192, 1, None), (5000, 3, 1024), (32768, 4, 2048)])
def test_llama_server_recipe_batch_budget_is_the_planned_one(context, slots, ubatch):
    """Rule (issue 34): llama-server's -c is the whole KV budget (slots × context, padded as llama.cpp pads it),
    -np the slots, and -ub the micro-batch whose compute buffer the memory model counted."""
    mm, r = _recipe("llama.cpp", "Q4_K_M", context, slots, ub=ubatch)
    flag = {k: int(v) for k, v in re.findall(r"(-c|-np|-ub) (\d+)", r.server)}
    assert flag["-c"] == pad_to(context * slots, mm.runtime.ctx_pad) and flag["-np"] == slots
    assert flag["-ub"] == mm.n_ubatch
