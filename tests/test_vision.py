"""Vision (planner/vision.py): image tokens per family, the projector only with --images, mlx-vlm for MLX."""

import pytest

from planner import profiles
from planner.errors import InputError
from planner.plan import PlanRequest, plan
from planner.vision import image_tokens, smart_resize


@pytest.mark.parametrize("size,per_image", [
    (None, 258),          # Gemma 3: mm_tokens_per_image 256 + <start_of_image>/<end_of_image>, any size
    ("4000x3000", 258),
])
def test_gemma3_fixed_tokens(size, per_image):
    assert image_tokens(profiles.load_model("gemma-3-27b"), 3, size)[0] == 3 * per_image


@pytest.mark.parametrize("size,per_image", [
    ("1280x720", 1198),   # 720/28 = 25.7 -> 26, 1280/28 = 45.7 -> 46: 26 × 46 = 1196, + 2 markers
    ("1024x1024", 1371),  # 1024/28 = 36.6 -> 37: 37 × 37 = 1369 + 2
    ("20x20", 6),         # 28 × 28 = 784 px < min_pixels 3136: scaled up to 56 × 56 -> 2 × 2 = 4 + 2
    ("8000x8000", 16386), # 64 Mpx > max_pixels 12,845,056 = 16,384 × 28²: 128 × 128 = 16,384 + 2
])
def test_qwen25vl_tokens_depend_on_resolution(size, per_image):
    assert image_tokens(profiles.load_model("qwen2.5-vl-7b"), 1, size)[0] == per_image


def test_smart_resize_keeps_multiples_of_28():
    assert smart_resize(720, 1280, 28, 3136, 12845056) == (728, 1288)


def test_text_only_plan_carries_no_projector():
    p = plan(PlanRequest(model="gemma-3-27b", ram=32, quants=["Q4_K_M"]))
    assert all(o.memory.vision == 0 for o in p.options)


def test_images_add_the_projector_and_their_tokens():
    base = plan(PlanRequest(model="gemma-3-27b", ram=32, quants=["Q4_K_M", "4bit"], context=8192))
    img = plan(PlanRequest(model="gemma-3-27b", ram=32, quants=["Q4_K_M", "4bit"], context=8192, images=2))
    assert {o.runtime for o in img.options} == {"llama.cpp", "mlx-vlm"}  # mlx-lm reads text only
    for o in img.options:
        # 0.42 B params in F16 (llama.cpp mmproj) / bf16 (mlx-vlm vision tower): 0.84 GB
        assert o.memory.vision == 840_000_000
        assert o.memory.context == 8192 + 2 * 258
    lc_img, lc_base = (next(o for o in p.options if o.runtime == "llama.cpp") for p in (img, base))
    assert lc_img.memory.total > lc_base.memory.total + 840_000_000
    assert "--mmproj" in lc_img.recipe.server


def test_images_on_a_text_model_is_one_clear_error():
    with pytest.raises(InputError, match="images 1: llama-3.1-8b has no vision encoder"):
        plan(PlanRequest(model="llama-3.1-8b", ram=16, images=1))


def test_image_size_needs_images():
    with pytest.raises(InputError, match=r"image_size needs images N"):
        plan(PlanRequest(model="qwen2.5-vl-7b", ram=16, image_size="640x480"))


def test_bigger_images_cost_more_context_on_qwen():
    small = plan(PlanRequest(model="qwen2.5-vl-7b", ram=16, quants=["Q4_K_M"], images=1, image_size="448x448"))
    big = plan(PlanRequest(model="qwen2.5-vl-7b", ram=16, quants=["Q4_K_M"], images=1, image_size="1792x1792"))
    # 448/28 = 16 -> 256 + 2 tokens; 1792/28 = 64 -> 4096 + 2
    assert small.options[0].memory.context == 8192 + 258 and big.options[0].memory.context == 8192 + 4098


def test_every_vision_model_in_the_catalog_has_an_image_token_rule():
    vlms = [m.id for m in profiles.all_models() if m.vision_params_b or "vision" in m.tasks]
    assert len(vlms) >= 10
    assert [m for m in vlms if profiles.vision_family(m) is None] == []


@pytest.mark.parametrize("model,size,per_image", [
    ("qwen3-vl-8b", "1024x1024", 1026),        # 32-px tokens: 32 × 32 + 2 markers
    ("qwen3-vl-8b", "300x200", 72),            # 60,000 px < 65,536: scaled by √(65536/60000) -> 224 × 320 -> 7 × 10 + 2
    ("mistral-small-3.1-24b", "1024x1024", 1406),  # ceil(1024/28) = 37: 37 × 37 + 37 row breaks
    ("mistral-small-3.1-24b", "4000x3000", 2352),  # scaled to 1540 × 1155: 55 × 42 cells + 42 breaks
    ("llama-4-scout", "1024x1024", 2450),      # 4 × 4 = 16 tiles (the cap) + 1 global = 17 × 144 + 2
    ("llama-4-scout", "300x200", 146),         # one tile, no global tile: 144 + 2
])
def test_other_families(model, size, per_image):
    assert image_tokens(profiles.load_model(model), 1, size)[0] == per_image
