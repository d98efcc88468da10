"""Model sources (edge package, allowed to do I/O): catalog id, HF repo, local GGUF file, MLX/HF folder.

``resolve_model(spec, file, quant)`` -> ``ResolvedModel``: a ModelProfile plus, when read from real files, the exact
weight bytes and the detected quant/runtime. The core (planner.plan) takes a ResolvedModel and never imports this.
"""

from __future__ import annotations

import os
import re
from datetime import date
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from planner import architecture as arch
from planner import profiles
from planner.errors import PlannerError, UnknownProfileError
from planner.results import WeightsEstimate
from planner.schema import ModelConfig, ModelProfile, NativeQuant

from .errors import HubError, SourceError
from .hfconfig import from_hf_config

__all__ = ["HubError", "ResolvedModel", "SourceError", "from_hf_config", "mlx_quant_id", "resolve_model"]

# huggingface_hub validate_repo_id: [\w.-], names at most 96 characters
REPO_RE = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")


class ResolvedModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    profile: ModelProfile
    source: str = Field(description="catalog | gguf | folder | hub")
    exact_weights: WeightsEstimate | None = Field(None, description="Exact bytes read from file headers")
    quant_id: str | None = Field(None, description="Detected preset: Q4_K_M, mlx-4bit-g64, ...")
    runtime_hint: str | None = Field(None, description="llama.cpp for GGUF, mlx-lm for MLX-quantized weights")
    vision_bytes: int = Field(0, description="Vision tower / projector bytes (mmproj or VLM tensors)")
    files: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def make_profile(cfg: ModelConfig, *, id_: str, name: str, source_url: str, hf_repo: str | None = None,
                 vision_bytes: int = 0, vision_elem_bytes: float = 2.0) -> ModelProfile:
    from planner.format import redact_urls, safe_text

    n = arch.n_params(cfg)
    active = arch.active_params(cfg) if cfg.is_moe else None
    # names come from the file (GGUF general.name) or the hub's file list: no control characters, no credentials
    name, id_ = (safe_text(v, keep_newlines=False)[:300] for v in (name, id_))
    return ModelProfile(
        id=id_, name=name, hf_repo=hf_repo, params_b=n / 1e9, active_params_b=active / 1e9 if active else None,
        vision_params_b=(vision_bytes / vision_elem_bytes) / 1e9 if vision_bytes else None,
        sources=[redact_urls(source_url)], verified=date.today(), config=cfg)


def native_quant_of(raw: dict, cfg: ModelConfig, url: str) -> NativeQuant | None:
    """A gpt-oss checkpoint published in MXFP4 (config.json quantization_config.quant_method: mxfp4): llama.cpp's
    converter writes its experts as MXFP4 (conversion/gpt_oss.py) and every GGUF preset keeps them."""
    q = raw.get("quantization_config")
    if cfg.model_type == "gpt_oss" and isinstance(q, dict) and q.get("quant_method") == "mxfp4":
        return NativeQuant(groups=["experts"], gguf_type="MXFP4", gguf_preset="MXFP4_MOE", mlx_quant="mlx-mxfp4",
                           source=f"{url}: quantization_config.quant_method mxfp4")
    return None


def mlx_quant_id(raw: dict) -> tuple[str | None, list[str]]:
    """config.json ``quantization`` block (mlx_lm/utils.py quantize_model) -> our MLX format id."""
    q = raw.get("quantization") or raw.get("quantization_config")
    notes: list[str] = []
    if not isinstance(q, dict):
        return None, notes
    mode = q.get("mode", "affine")
    bits, g = q.get("bits"), q.get("group_size")
    if q.get("quant_method") and bits is None:
        notes.append(f"weights use {q['quant_method']} quantization (not an MLX format); exact bytes shown as read")
        return None, notes
    per_module = [k for k, v in q.items() if isinstance(v, dict)]
    if per_module:
        notes.append(f"{len(per_module)} modules override the base quantization (mixed recipe); bytes are exact")
    if mode in ("mxfp4", "nvfp4", "mxfp8"):
        return f"mlx-{mode}", notes
    if bits and g:
        return f"mlx-{bits}bit-g{g}", notes
    return None, notes


def _known_quant(qid: str | None, kind: str) -> str | None:
    if not qid:
        return None
    try:
        return profiles.load_quant(qid, kind).id
    except PlannerError:
        return None


def resolve_gguf(path: Path, quant: str | None = None) -> ResolvedModel:
    from .local import load_gguf

    cfg, w, qid, notes, files, title = load_gguf(path)
    known = _known_quant(qid, "gguf")
    if qid and not known:
        notes.append(f"quant {qid} is not one of our presets; exact bytes used as read")
    elif not qid:
        notes.append("quant type not recorded in the GGUF; exact bytes used as read")
    stem = re.sub(r"-\d{5}-of-\d{5}$", "", path.stem)
    prof = make_profile(cfg, id_=stem.lower(), name=title or stem, source_url=str(path.resolve()),
                        vision_bytes=w.vision_bytes)
    return ResolvedModel(profile=prof, source="gguf", exact_weights=w, quant_id=known or qid,
                         runtime_hint="llama.cpp", vision_bytes=w.vision_bytes, files=files, notes=notes)


def resolve_folder(path: Path) -> ResolvedModel:
    from .local import load_folder, safetensors_weights

    raw, entries = load_folder(path)
    cfg = from_hf_config(raw, str(path / "config.json"))
    return _from_config_and_tensors(raw, cfg, entries, source="folder", id_=path.name.lower(), name=path.name,
                                    url=str(path.resolve()), hf_repo=None, weights_fn=safetensors_weights)


def _from_config_and_tensors(raw, cfg, entries, *, source, id_, name, url, hf_repo, weights_fn) -> ResolvedModel:
    qid, notes = mlx_quant_id(raw)
    hint = None
    w = None
    if entries:
        quantized = qid is not None or any(dt in ("U32", "U8", "F8_E4M3", "I8") for _, dt, _, _ in entries)
        n = arch.n_params(cfg) if quantized else sum(_prod(s) for nm, _, s, _ in entries if not _vision(nm))
        w = weights_fn(entries, n)
    else:
        notes.append("no safetensors found: weights are estimated")
    if qid is not None:
        known = _known_quant(qid, "mlx")
        if not known:
            notes.append(f"MLX quantization {qid} is not one of our presets; exact bytes used as read")
        hint = "mlx-lm"
    elif w is not None and not raw.get("quantization_config"):
        fl = {dt for _, dt, _, _ in entries}
        if fl <= {"BF16", "F16", "F32"}:
            qid = "mlx-bf16"  # unquantized checkpoint: mlx-lm loads it as is
    vision = w.vision_bytes if w else 0
    prof = make_profile(cfg, id_=id_, name=name, source_url=url, hf_repo=hf_repo, vision_bytes=vision)
    native = native_quant_of(raw, cfg, url)
    if native is not None:
        prof = prof.model_copy(update={"native_quant": native})
    return ResolvedModel(profile=prof, source=source, exact_weights=w, quant_id=qid, runtime_hint=hint,
                         vision_bytes=vision, notes=notes)


def _vision(name: str) -> bool:
    from .local import st_group

    return st_group(name) == "vision"


def _prod(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def resolve_model(spec: str, file: str | None = None, quant: str | None = None) -> ResolvedModel:
    """Dispatch: local .gguf -> gguf; local folder with config.json -> folder; org/name not in the catalog -> hub;
    else the catalog (planner.profiles.load_model)."""
    if not isinstance(spec, str) or not spec.strip():
        raise SourceError("--model is empty; give a catalog id (plan models), a HF repo, a .gguf file or a folder")
    spec = spec.strip()
    try:
        p = Path(spec).expanduser()
    except RuntimeError:  # '~nosuchuser/x': no such home directory
        p = Path(spec)
    if spec.lower().endswith(".gguf") and not _safe(Path.is_dir, p):  # a folder named *.gguf is read as a folder
        if not _safe(Path.exists, p):
            raise SourceError(f"{spec}: no such GGUF file; check the path")
        return resolve_gguf(p, quant)
    if _safe(Path.is_dir, p):
        from .local import _glob

        if not os.access(p, os.R_OK | os.X_OK):
            raise SourceError(f"{spec}: cannot open the folder (permission denied); check its permissions")
        if _safe(Path.exists, p / "config.json"):
            return resolve_folder(p)
        ggufs = [x for x in _glob(p, "*.gguf") if "mmproj" not in x.name.lower()]
        if ggufs:
            pick = _pick_gguf([x.name for x in ggufs], file, quant, spec)
            return resolve_gguf(p / pick, quant)
        raise SourceError(f"{spec}: folder has no config.json or .gguf; point at a model folder or file")
    try:
        return ResolvedModel(profile=profiles.load_model(spec), source="catalog")
    except UnknownProfileError:
        if _safe(Path.is_file, p):
            return _other_file(p, spec, quant)
        repo, tag = hub_repo_of(spec)
        if repo is None:
            raise
    from .hub import resolve_hub

    return resolve_hub(repo, file=file, quant=quant or tag)


def hub_repo_of(spec: str) -> tuple[str | None, str | None]:
    """The HF repo id and file tag a name points at: ``org/name``, Ollama's ``hf.co/org/name:Q4_K_M`` (also
    ``https://huggingface.co/org/name``) and ``org/name-GGUF:Q4_K_M``; (None, None) for anything else."""
    s = re.sub(r"^(?:https?://)?(?:www\.)?(?:hf\.co|huggingface\.co)/", "", spec.strip(), flags=re.I)
    tag = None
    if "/" in s and ":" in s.rsplit("/", 1)[-1]:
        s, tag = s.rsplit(":", 1)
    return (s, tag or None) if REPO_RE.match(s) else (None, None)


def _other_file(p: Path, spec: str, quant: str | None) -> ResolvedModel:
    """A file named other than *.gguf: a GGUF by its magic (Ollama keeps its models as blobs/sha256-<hex>), else
    not a model."""
    if _gguf_magic(p):
        return resolve_gguf(p, quant)
    raise SourceError(f"{spec}: not a GGUF file (it does not start with the GGUF magic) nor a model folder; "
                      "give a .gguf file, a folder with config.json, or a catalog id (plan models)") from None


def _gguf_magic(p: Path) -> bool:
    """The file starts with b"GGUF" (ggml/include/gguf.h GGUF_MAGIC); False when it cannot be read."""
    try:
        with p.open("rb") as f:
            return f.read(4) == b"GGUF"
    except OSError:
        return False


def _safe(check, p: Path) -> bool:
    """Path.is_file/is_dir, False when the OS refuses the name (a 3000-char --model raised ENAMETOOLONG OSError)."""
    try:
        return check(p)
    except (OSError, ValueError):
        return False


def _pick_gguf(names: list[str], file: str | None, quant: str | None, where: str) -> str:
    """Choose the GGUF by --file (exact name or path) or --quant (name match); first shard of a split."""
    from .ggufmeta import quant_from_name

    cands = [n for n in names if "mmproj" not in n.lower()]
    if file:
        hit = [n for n in cands if n == file or n.endswith("/" + file) or n.rsplit("/", 1)[-1] == file]
        if not hit:
            raise SourceError(f"--file {file}: not in {where}; files: {', '.join(c.rsplit('/', 1)[-1] for c in cands[:6])}")
        return hit[0]
    firsts = [n for n in cands if not re.search(r"-\d{5}-of-\d{5}\.gguf$", n) or "-00001-of-" in n]
    if quant:
        q = quant.upper()
        hit = [n for n in firsts if (quant_from_name(n) or "") == q] or [n for n in firsts if q in n.upper()]
        if not hit:
            have = sorted({quant_from_name(n) or n for n in firsts})
            raise SourceError(f"--quant {quant}: no such GGUF in {where}; available: {', '.join(have[:12])}")
        return hit[0]
    if len(firsts) == 1:
        return firsts[0]
    have = sorted({quant_from_name(n) or n for n in firsts})
    raise SourceError(f"{where} has {len(firsts)} GGUF files; pick one with --quant ({', '.join(have[:10])}) or --file")
