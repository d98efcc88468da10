"""LM Studio as a serving setup on both engines (profiles/serving/lmstudio.yaml, runtimes lmstudio-llama.cpp and
lmstudio-mlx): defaults, guardrail verdicts, the lms recipe, and the unified KV cache it uses."""

import re

import pytest

from cli.main import main
from planner import capacity, profiles
from planner.errors import InputError
from planner.plan import PlanRequest, plan
from planner.search import base_memory_model
from planner.serving import check_guardrail
from planner.units import GiB, pad_to

LMS = profiles.load_serving_app("lmstudio")


def test_runtime_lmstudio_answers_for_both_engines(capsys):
    assert main(["--model", "llama-3.3-70b", "--ram", "64", "--runtime", "lmstudio"]) == 0
    out = capsys.readouterr().out
    assert "lmstudio-llama.cpp" in out and "lmstudio-mlx" in out
    assert "guardrail" in out and re.search(r"lms load \S+@q4_k_m --context-length 8192 --parallel 1 --gpu max", out)
    assert "lms load mlx-community/Llama-3.3-70B-Instruct-" in out


def test_defaults_2048_tokens_shared_by_4_predictions():
    # lms-kv-config: contextLength 2048, numParallelSessions 4, useUnifiedKvCache true: one cache of 2,048 cells.
    # llama-3.1-8b f16 KV = 32 layers × 2 × 8 heads × 128 × 2 B = 128 KiB per token -> 2,048 × 128 KiB = 256 MiB
    p = plan(PlanRequest(model="llama-3.1-8b", ram=16, runtimes=["lmstudio"], quants=["Q4_K_M"]))
    s = p.options[0].serving
    assert (s.default_context, s.default_parallel) == (2048, 4)
    mm = base_memory_model("llama-3.1-8b", "lmstudio-llama.cpp", "Q4_K_M")
    assert mm.estimate(2048, 1).kv_cache == 2048 * 131072 == 256 * 2**20
    assert s.memory_bytes == mm.total(2048, 1)


def test_recipe_context_length_holds_every_parallel_prediction():
    # unified KV: --context-length is shared, so 4 users × 8,192 need --context-length 32,768 (= the KV we count)
    p = plan(PlanRequest(model="llama-3.1-8b", ram=32, runtimes=["lmstudio"], quants=["Q4_K_M"], users=4))
    o = p.options[0]
    n = int(re.search(r"--context-length (\d+)", o.recipe.server).group(1))
    assert n == 32768 and "--parallel 4" in o.recipe.server
    assert o.memory.kv_cache == pad_to(n, 256) * 131072  # 4 GiB


@pytest.mark.parametrize("level,verdict,allows", [
    ("off", "no-fit", True), ("strict", "fits", True), ("strict", "no-fit", False), ("balanced", "tight", None),
    ("relaxed", "raise-limit", None),
])
def test_guardrail_levels(level, verdict, allows):
    from planner.results import Fit

    fit = Fit(verdict=verdict, reason="", headroom_bytes=0)
    assert check_guardrail(LMS, 40 * GiB, fit, level)[1] is allows


def test_custom_guardrail_is_exact():
    from planner.results import Fit

    fit = Fit(verdict="fits", reason="", headroom_bytes=0)
    assert check_guardrail(LMS, 39_000_000_000, fit, "custom:40")[1] is True
    assert check_guardrail(LMS, 41_000_000_000, fit, "custom:40")[1] is False
    with pytest.raises(InputError, match="custom:<GB>|custom:abc"):
        check_guardrail(LMS, 1, fit, "custom:abc")
    with pytest.raises(InputError, match="guardrail 'lax'"):
        check_guardrail(LMS, 1, fit, "lax")


def test_lmstudio_speed_is_its_engines_times_its_measured_factor():
    """LM Studio's llama.cpp engine is llama.cpp's roofline; a decode overhead factor only once
    calibration.fit.MIN_FACTOR_SOURCES source groups measured it (else llama.cpp's speed), and never above 1 (a
    wrapper adds work to its engine's step). Everything else is the engine's constants."""
    from calibration import fit as F

    data, _ = F.load_training_records()
    sources = {r.source for r in data.get("lmstudio-llama.cpp", []) if r.phase == "decode"}
    chip = profiles.resolve_chip("m3-max-40gpu")
    lc, lms = (profiles.load_speed_constants(chip, r) for r in ("llama.cpp", "lmstudio-llama.cpp"))
    drop = {"likely_range", "decode_factor"}
    assert lc.constants.model_dump(exclude=drop) == lms.constants.model_dump(exclude=drop)
    factor = lms.constants.decode_factor
    if len(sources) < F.MIN_FACTOR_SOURCES:
        assert factor is None
    else:
        assert factor is not None and 0 < factor <= 1


def test_quantized_kv_in_the_recipe_turns_flash_attention_on():
    from planner.memory import memory_model
    from planner.recipes import recipe

    q = profiles.load_quant("Q4_K_M", "gguf")
    mm8 = memory_model(profiles.load_model("llama-3.1-8b"), profiles.load_runtime("lmstudio-llama.cpp"), q,
                       profiles.ggml_types(), kv_type="q8_0", flash_attn=True)
    wired = capacity.wired_limit(32, profiles.load_macos("15"))
    fit = capacity.fit(mm8.total(8192), mm8.weights.total_bytes, wired, mm8.runtime)
    r = recipe(mm8, q, 8192, 1, fit)
    assert "Flash Attention on" in r.notes[0] and "K Cache Quantization Type q8_0" in r.notes[0]
    assert '"flash_attention": true' in r.notes[1]


def test_lmstudio_mlx_prefills_one_prompt_at_a_time():
    # mlx-engine (08f0c07) prefills one request per step: model_kit/batched_model_kit.py BatchGenerator(
    # prefill_batch_size=1), batched_vision/batch_generator.py "Prompt prefill handles one request". Four users'
    # prompts hold one prompt's prefill buffers (MlxLm.compute_buffer: min(users, prefill_batch_size) × one chunk);
    # mlx_lm.server batches up to 8 prompts (BatchGenerator prefill_batch_size), so there four hold four.
    lms = base_memory_model("llama-3.1-8b", "lmstudio-mlx", "mlx-4bit")
    mlx = base_memory_model("llama-3.1-8b", "mlx-lm", "mlx-4bit")
    assert lms.estimate(8192, 4).compute_buffer == lms.estimate(8192, 1).compute_buffer
    one, four = mlx.estimate(8192, 1).compute_buffer, mlx.estimate(8192, 4).compute_buffer
    logits = 128256 * 4  # the last token's float32 logits, held once
    assert four - logits == 4 * (one - logits)


def test_lmstudio_mlx_loads_a_multimodal_checkpoints_vision_tower_without_images():
    # mlx-engine load_model: a config with vision_config loads through mlx-vlm (BatchedVisionModelKit,
    # mlx_vlm.utils.load_model) whatever the request; mlx-lm's gemma3 sanitize() drops the tower; LM Studio's
    # llama.cpp engine loads a projector only as its own file. gemma-3-12b: 0.42 B vision params × 2 B (bf16).
    tower = int(0.42e9 * 2)
    lms = base_memory_model("gemma-3-12b", "lmstudio-mlx", "mlx-4bit")
    mlx = base_memory_model("gemma-3-12b", "mlx-lm", "mlx-4bit")
    gguf = base_memory_model("gemma-3-12b", "lmstudio-llama.cpp", "Q4_K_M")
    assert lms.estimate(8192, 1).vision == tower == 840_000_000
    assert mlx.estimate(8192, 1).vision == 0 and gguf.estimate(8192, 1).vision == 0
    assert lms.total(8192, 1) - mlx.total(8192, 1) == tower
    text_only = base_memory_model("llama-3.1-8b", "lmstudio-mlx", "mlx-4bit")
    assert text_only.estimate(8192, 1).vision == 0


def test_a_vision_tower_is_counted_once_and_ollama_loads_its_projector_always():
    # --images on an engine that loads the tower anyway adds nothing more: one tower, 0.42 B params x 2 B
    import dataclasses

    tower = int(0.42e9 * 2)
    lms = base_memory_model("gemma-3-12b", "lmstudio-mlx", "mlx-4bit")
    with_images = dataclasses.replace(lms, images=4)
    assert with_images.estimate(8192, 1).vision == lms.estimate(8192, 1).vision == tower
    # Ollama passes --mmproj whenever the model has a projector (llm/llama_server.go startLlamaServer), so a text
    # request pays for it too; llama-server and LM Studio's llama.cpp engine load it only when asked (--mmproj)
    ollama = base_memory_model("gemma-3-12b", "ollama", "Q4_K_M")
    server = base_memory_model("gemma-3-12b", "llama.cpp", "Q4_K_M")
    assert ollama.estimate(8192, 1).vision == server.weights.vision_bytes > 0
    assert server.estimate(8192, 1).vision == 0
    assert dataclasses.replace(ollama, images=2).estimate(8192, 1).vision == server.weights.vision_bytes
    assert base_memory_model("llama-3.1-8b", "ollama", "Q4_K_M").estimate(8192, 1).vision == 0
