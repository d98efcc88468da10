"""Images in the prompt: tokens per image by model family (profiles/vision/*.yaml) and the projector weights.

Fixed-count families (Gemma 3: 256 soft tokens per image at any size) and resolution-dependent ones (Qwen2.5-VL:
one token per 28 x 28 pixels after transformers' smart_resize scales the image into [min_pixels, max_pixels]).
A plan without images carries no projector (planner.memory.MemoryModel.images = 0).
"""

from __future__ import annotations

import math
import re

from . import profiles
from .errors import InputError
from .schema import ModelProfile
from .schema_extra import VisionFamily

DEFAULT_IMAGE = (1024, 1024)  # width x height when no image size is given [px]


def parse_size(text: str | None) -> tuple[int, int]:
    """'1280x720' -> (1280, 720) [px]."""
    if text is None:
        return DEFAULT_IMAGE
    m = re.fullmatch(r"\s*(\d{1,5})\s*[xX×]\s*(\d{1,5})\s*", text)
    if not m or 0 in (int(m.group(1)), int(m.group(2))):
        raise InputError(f"[[image_size]] {text!r}: give width x height in pixels, e.g. 1280x720")
    return int(m.group(1)), int(m.group(2))


def smart_resize(h: int, w: int, side: int, min_px: int, max_px: int) -> tuple[int, int]:
    """transformers qwen2_vl image_processing smart_resize: sides rounded to multiples of ``side``, area scaled
    into [min_px, max_px]. [px]"""
    hb, wb = max(side, round(h / side) * side), max(side, round(w / side) * side)
    if hb * wb > max_px:
        beta = math.sqrt(h * w / max_px)
        hb, wb = max(side, math.floor(h / beta / side) * side), max(side, math.floor(w / beta / side) * side)
    elif hb * wb < min_px:
        beta = math.sqrt(min_px / (h * w))
        hb, wb = math.ceil(h * beta / side) * side, math.ceil(w * beta / side) * side
    return hb, wb


def long_side_grid(h: int, w: int, side: int, max_long: int) -> tuple[int, int]:
    """(rows, columns) of tokens after scaling the longest side down to ``max_long`` (transformers
    image_processing_pixtral: ratio = max(h, w) / longest_edge; sides rounded up to whole patches)."""
    ratio = max(h / max_long, w / max_long, 1.0)
    return math.ceil(h / ratio / side), math.ceil(w / ratio / side)


def tile_count(h: int, w: int, tile: int, max_tiles: int, global_tile: bool) -> int:
    """Tiles of ``tile`` px covering the image (capped at ``max_tiles``, aspect kept), plus a global tile."""
    rows, cols = math.ceil(h / tile), math.ceil(w / tile)
    while rows * cols > max_tiles:  # shrink the longer side's count first
        if rows >= cols:
            rows -= 1
        else:
            cols -= 1
    n = rows * cols
    return n + (1 if global_tile and n > 1 else 0)


def tokens_per_image(fam: VisionFamily, width: int, height: int) -> int:
    """Prompt tokens one image costs, markers included. [tokens]"""
    if fam.tokens_per_image is not None:
        return fam.tokens_per_image + fam.extra_tokens
    if fam.tile_px is not None:
        return tile_count(height, width, fam.tile_px, fam.max_tiles or 1, fam.global_tile) * (
            fam.tokens_per_tile or 0) + fam.extra_tokens
    s = fam.pixels_per_token_side or 1
    if fam.max_long_side is not None:
        rows, cols = long_side_grid(height, width, s, fam.max_long_side)
        return rows * cols + (rows if fam.row_break_tokens else 0) + fam.extra_tokens
    hb, wb = smart_resize(height, width, s, fam.min_pixels or s * s, fam.max_pixels or 1 << 40)
    return (hb // s) * (wb // s) + fam.extra_tokens


def image_tokens(model: ModelProfile, images: int, size: str | None) -> tuple[int, str]:
    """(tokens for ``images`` images, a sentence saying how) — InputError for a text-only model."""
    fam = profiles.vision_family(model.id)
    if fam is None or not model.vision_params_b:
        known = sorted({m for f in _families() for m in f.models})
        raise InputError(f"[[images]] {images}: {model.id} has no vision encoder; vision models: {', '.join(known)}")
    w, h = parse_size(size)
    per = tokens_per_image(fam, w, h)
    if fam.tokens_per_image:
        how = f"{per} tokens per image ({fam.tokens_per_image} soft tokens + {fam.extra_tokens} markers, any size)"
    elif fam.tile_px:
        how = f"{per} tokens per {w}×{h} image ({fam.tokens_per_tile} per {fam.tile_px}-px tile)"
    else:
        how = f"{per} tokens per {w}×{h} image (one per {fam.pixels_per_token_side}² px after resizing)"
    return images * per, f"{images} image(s) × {how} = {images * per:,} prompt tokens"


def image_prompt(model: ModelProfile, images: int, size: str | None) -> tuple[int, list[str]]:
    """(prompt tokens of ``images`` per request, the note saying how) for predict and recommend, (0, []) without
    images; an image size without images is an error, as in a plan (planner.setups.with_images)."""
    if not images:
        if size is not None:
            raise InputError("[[image_size]] needs [[images]] N (images per request)")
        return 0, []
    tokens, how = image_tokens(model, images, size)
    return tokens, [f"{how}; context and prompt include them"]


def _families() -> list[VisionFamily]:
    return [profiles._load("vision", k, VisionFamily) for k in sorted(profiles._index("vision"))]
