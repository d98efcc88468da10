"""Find, load and validate profiles (the only module of the core that reads files).

Profiles are YAML files, one per entity, filename == id. There is no registry list in code: folders are globbed.
User profiles (custom Macs, models) in ``$MAC_LLM_PLANNER_USER_PROFILES`` or the user config dir
(``platformdirs.user_config_dir('mac-llm-planner')/profiles``) are loaded too and win over built-ins.
"""

import functools
import os
import re
import types
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

from pydantic import BaseModel, ValidationError

from ._model import assemble
from .bounded_read import MAX_PROFILE_BYTES, read_text_capped
from .dirs import _shipped_dir as _shipped_dir  # noqa: F401  (re-exported)
from .dirs import builtin_dir as builtin_dir
from .dirs import user_dir as user_dir
from .errors import (
    InputError,
    ProfileError,
    UnknownProfileError,
    UnsupportedArchitectureError,
    render_validation_error,
)
from .schema import (
    Chip,
    GgmlTypeTable,
    MacOS,
    ModelProfile,
    QuantFormat,
    Runtime,
    ServingApp,
)

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from .bf16 import Bf16Table
    from .fanless import FanlessTable
    from .power import PowerTable
    from .schema_extra import CpuMemory, MacProduct, SpeculativePairs, VisionFamily
    from .speed_schema import CalibrationProfile, FinetuneConstants, ResolvedSpeedConstants
    from .streaming import SSDTable

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")
# mypy types the value of the ``Runtime`` alias (an Annotated discriminated union) as types.UnionType: the overloads
# below take it as that and return the union, any model class returns an instance of itself
RuntimeForm = types.UnionType


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml  # only when a profile is not in the validated cache

    # bounded: a profile named as a FIFO or a link to /dev/zero in the user's folder is one line, not a hang
    text = read_text_capped(path, MAX_PROFILE_BYTES, what="profile", error=ProfileError, fix="fix or delete it")
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ProfileError(f"{path}:{where} is not valid YAML; fix or delete the file") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: expected a mapping of fields, got {type(data).__name__}; fix or delete the file")
    return data


@functools.cache
def _adapter(tp: Any) -> "TypeAdapter[Any]":  # Any: a type form (the Annotated Runtime union), not typable before PEP 747
    # only to validate a runtime profile: a run from the cache never imports pydantic.type_adapter
    from pydantic import TypeAdapter

    return TypeAdapter(tp)


@overload
def load_file(path: Path, cls: type[T]) -> T: ...
@overload
def load_file(path: Path, cls: RuntimeForm) -> Runtime: ...
def load_file(path: Path, cls: type[BaseModel] | RuntimeForm) -> BaseModel:
    """Read and validate one profile; ``cls`` is a model class or a discriminated union such as ``Runtime``.
    A file validated before (same path, size and mtime) comes from the installed :class:`ValidatedStore`, if any."""
    key = (str(path), getattr(cls, "__qualname__", None) or repr(cls))
    stamp = _stamp(path)
    store = _STORE
    hit: BaseModel | None = store.get(key, stamp) if store is not None else None
    if hit is not None:
        if stamp is not None:
            _ORIGIN[id(hit)] = (hit, key, stamp)
        return hit
    obj = _validate_file(path, cls)
    if stamp is not None and store is not None:
        store.put(key, stamp, obj)
        _ORIGIN[id(obj)] = (obj, key, stamp)
    return obj


@overload
def _validate_file(path: Path, cls: type[T]) -> T: ...
@overload
def _validate_file(path: Path, cls: RuntimeForm) -> Runtime: ...
def _validate_file(path: Path, cls: type[BaseModel] | RuntimeForm) -> BaseModel:
    data = _read_yaml(path)
    try:
        obj: BaseModel = (cls.model_validate(data) if isinstance(cls, type)
                          else _adapter(cls).validate_python(data))
    except ValidationError as e:
        raise ProfileError(render_validation_error(str(path), e)) from None
    if (oid := getattr(obj, "id", path.stem)) != path.stem:
        raise ProfileError(f"{path}: id {oid!r} does not match the file name; rename one of them")
    return obj


# --------------------------------------------------------------------------- validated-profile store
class ValidatedStore(Protocol):
    """Where validated profiles may be kept between runs, keyed ``(path, class name)`` and stamped ``(mtime, size)``.
    The core keeps none: an edge installs one with :func:`use_validated_store` (cli/profile_cache.py keeps them in
    the user's cache dir), so the core reads the YAML profiles and nothing else."""

    def get(self, key: tuple[Any, ...], stamp: tuple[Any, ...] | None) -> Any: ...

    def put(self, key: tuple[Any, ...], stamp: tuple[Any, ...], obj: Any) -> None: ...


_STORE: ValidatedStore | None = None
# the profile file each object read through the installed store came from: id -> (object, store key, stamp)
_ORIGIN: dict[int, tuple[BaseModel, tuple[str, str], tuple[int, int]]] = {}


def use_validated_store(store: ValidatedStore | None) -> ValidatedStore | None:
    """Install ``store`` (None: validate every profile read in this process) and return the one it replaces."""
    global _STORE
    old, _STORE = _STORE, store
    _ORIGIN.clear()
    return old


def derived(name: str, inputs: tuple[BaseModel, ...], compute: Callable[[], R]) -> R:
    """``compute()``: a value that is a function of the profiles ``inputs`` alone (and of the code: the store's
    file is per code version), kept in the installed store beside them, keyed by their files and stamped with
    their stamps, so a later run reads it back instead of computing it again (an edit of any input is a miss).
    Without a store, or when an input was not read from a profile file (a model resolved from a GGUF), it is
    computed."""
    store = _STORE
    origins = [_ORIGIN.get(id(o)) for o in inputs]
    if store is None or any(g is None or g[0] is not o for g, o in zip(origins, inputs, strict=True)):
        return compute()
    key = (name, *(g[1] for g in origins if g is not None))
    return _kept(store, key, tuple(g[2] for g in origins if g is not None), compute)


def derived_from_files(name: str, paths: list[Path], compute: Callable[[], R]) -> R:
    """``compute()``: a value that is a function of the profile files ``paths`` alone, kept in the installed store
    as :func:`derived` keeps its values, keyed by the paths and stamped with the files' (mtime, size), so a later
    run reads it back without loading the profiles (a file added, removed or edited is a miss)."""
    store = _STORE
    stamps = [_stamp(p) for p in paths]
    if store is None or None in stamps:
        return compute()
    return _kept(store, (name, *map(str, paths)), tuple(stamps), compute)


def _kept(store: ValidatedStore, key: tuple[Any, ...], stamp: tuple[Any, ...], compute: Callable[[], R]) -> R:
    hit: R | None = store.get(key, stamp)
    if hit is None:
        hit = compute()
        store.put(key, stamp, hit)
    return hit


def _stamp(path: Path) -> tuple[int, int] | None:
    """The file's (mtime, size) that stamps what the store keeps of it; None when it does not stat."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _files(kind: str) -> dict[str, Path]:
    """id -> path for one kind; user files override built-ins."""
    out: dict[str, Path] = {}
    roots = [builtin_dir()]
    u = user_dir()
    if u is not None:
        roots.append(u)
    for root in roots:
        folder = root / kind
        if folder.is_dir():
            for p in yaml_files(folder):
                out[p.stem] = p
    return out


def yaml_files(folder: Path) -> list[Path]:
    """``sorted(folder.rglob("*.yaml"))`` read with os.scandir: the same paths in the same order (symlinked
    folders are not entered, unreadable ones are skipped), without a Path object per directory entry
    (5x cheaper on the start-up path)."""
    found: list[tuple[str, ...]] = []

    def walk(d: str, rel: tuple[str, ...]) -> None:
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except PermissionError:
            return
        for e in entries:
            if e.name.endswith(".yaml"):
                found.append((*rel, e.name))
            if e.is_dir(follow_symlinks=False):
                walk(e.path, (*rel, e.name))

    walk(str(folder), ())
    return [folder.joinpath(*parts) for parts in sorted(found)]


@functools.cache
def _index(kind: str) -> dict[str, Path]:
    return _files(kind)


@functools.cache
def _loaded(kind: str, id_: str, cls: type[BaseModel] | RuntimeForm) -> BaseModel:
    return load_file(_index(kind)[id_], cls)


@overload
def _load(kind: str, id_: str, cls: type[T]) -> T: ...
@overload
def _load(kind: str, id_: str, cls: RuntimeForm) -> Runtime: ...
def _load(kind: str, id_: str, cls: type[BaseModel] | RuntimeForm) -> BaseModel:
    """Profile ``id_`` of ``kind`` validated as ``cls``, once per process (:func:`clear_cache` forgets)."""
    return _loaded(kind, id_, cls)


def _all(kind: str, cls: type[T]) -> list[T]:
    return [_load(kind, i, cls) for i in sorted(_index(kind))]


def clear_cache() -> None:
    _index.cache_clear()
    ram_sizes.cache_clear()
    _quant_stems.cache_clear()
    _loaded.cache_clear()
    _alias_map.cache_clear()
    _ollama_libraries.cache_clear()
    _calibration_files.cache_clear()
    _speed_constants.cache_clear()
    _finetune.cache_clear()


def norm(s: str) -> str:
    """Canonical spelling for id matching: lowercase, '_'/' ' -> '-'."""
    return re.sub(r"[\s_]+", "-", s.strip().lower())


# --------------------------------------------------------------------------- models
@functools.cache
def _alias_map() -> dict[str, str]:
    m: dict[str, str] = {}
    for model in _all("models", ModelProfile):
        names = [model.id, model.name, *model.aliases]
        if model.hf_repo:
            names.append(model.hf_repo)
        for n in names:
            m.setdefault(norm(n), model.id)
            m.setdefault(norm(n.split("/")[-1]), model.id)
    return m


# Ollama's library names. A catalog alias <library>:<tag> (nemotron-3-nano:30b) is an Ollama name of that entry; the
# bare <library> (or <library>:latest: Ollama's default tag, types/model/name.go) is what `ollama run <library>`
# pulls. It names the entry that declares <library>:latest, else the only entry with a tag of <library>.
@functools.cache
def _ollama_libraries() -> dict[str, dict[str, str]]:
    """Ollama library name (normalised) -> {model id: the first tag alias it declares}."""
    out: dict[str, dict[str, str]] = {}
    for model in _all("models", ModelProfile):
        for a in model.aliases:
            if ":" in a and "/" not in a:
                out.setdefault(norm(a.split(":", 1)[0]), {}).setdefault(model.id, a)
    return out


def ollama_library(name: str) -> tuple[str, str] | None:
    """-> (model id, the tag it is read as) for a bare Ollama library name (``nemotron-3-nano``, or with ``:latest``)
    when one catalog entry declares ``<name>:latest``, else when exactly one declares any tag of it; None otherwise
    (also for every name with another tag, an org or a path)."""
    s = _bare_library(name)
    if s is None:
        return None
    hits = _ollama_libraries().get(norm(s), {})
    latest = [(i, a) for i, a in hits.items() if _declares_latest(i, s)]
    if len(latest) == 1:
        return latest[0][0], f"{s}:latest"
    return next(iter(hits.items())) if len(hits) == 1 else None


def _bare_library(name: str) -> str | None:
    """``name`` as a bare Ollama library name (``deepseek-r1``, ``deepseek-r1:latest`` -> ``deepseek-r1``), None for
    a name with another tag, an org or a path: the one reading of ollama_library and _library_sizes_note."""
    s = name.strip()
    s = s[:-len(":latest")] if s.lower().endswith(":latest") else s
    return None if not s or ":" in s or "/" in s else s


def _declares_latest(model_id: str, library: str) -> bool:
    """Whether the entry declares ``<library>:latest`` among its aliases: what `ollama pull <library>` fetches."""
    return any(norm(x) == norm(f"{library}:latest") for x in _aliases_of(model_id))


def _aliases_of(model_id: str) -> list[str]:
    return list(_load("models", model_id, ModelProfile).aliases)


def library_note(name: str) -> str | None:
    """The note of a bare Ollama library name: answered by the only catalog entry of that library, which size it was
    read as; an alias of one entry whose library holds others, which one and the others' tags
    (:func:`_library_sizes_note`); None for every other name, and when the entry declares the library's latest tag."""
    key = norm(name)
    if key in _index("models"):  # an id names its size (no id is a library with other entries: test_model_names)
        return None
    bare = _bare_library(name)
    alias = _alias_map().get(key) or (None if bare is None else _alias_map().get(norm(bare)))
    if alias is not None:  # deepseek-r1 or deepseek-r1:latest, an alias of one entry
        return _library_sizes_note(name, alias)
    hit = ollama_library(name)
    if hit is None or hit[1].endswith(":latest"):
        return None
    return (f"{name}: Ollama's library name, read as {hit[1]} ({hit[0]}), the catalog's only size of it; give "
            f"[[model]] with the tag for another")


def _library_sizes_note(name: str, model_id: str) -> str | None:
    """A catalog name that is also a bare Ollama library name whose library holds other catalog entries
    (``deepseek-r1``: the 671B model here, while ``ollama pull deepseek-r1`` fetches a distill): the note names the
    entry it was read as and the library's other tags, so a user who meant Ollama's default is not answered for
    another model silently. None for every other name."""
    s = _bare_library(name)
    if s is None or (s != name.strip() and _declares_latest(model_id, s)):
        return None  # the library's latest tag asked for, and the entry is it: what `ollama pull` fetches
    others = {i: a for i, a in _ollama_libraries().get(norm(s), {}).items() if i != model_id}
    if not others:
        return None
    tags = ", ".join(sorted(others.values(), key=_tag_order))
    return (f"{name.strip()}: read as {_load('models', model_id, ModelProfile).name} ({model_id}); Ollama's library of that name "
            f"also holds {tags} in the catalog: give [[model]] with the tag for one of those")


def _tag_order(alias: str) -> tuple[float, str]:
    """Ollama tags by size (``deepseek-r1:1.5b`` before ``deepseek-r1:14b``), the rest after them by name."""
    m = re.match(r"[^:]+:(\d+(?:\.\d+)?)b", alias, re.IGNORECASE)
    return (float(m.group(1)) if m else float("inf"), alias)


def _strip_decorations(s: str) -> str:
    """Drop what names add around a model: an org prefix, 'meta-', an instruct/chat suffix, a format or quant suffix.
    A dated or versioned suffix (-2507, -2512, -0905) is never dropped: those checkpoints differ from the base
    (Qwen3-30B-A3B-Instruct-2507 has 262,144 tokens of context, Qwen3-30B-A3B 40,960), so they resolve to their own
    profile or not at all, never silently to the base."""
    s = norm(s.split("/")[-1])
    s = re.sub(r"^(meta-)", "", s)
    s = re.sub(r"-(gguf|mlx|\d+bit|q\d.*)$", "", s)
    s = re.sub(r"-(instruct|chat|it|base|hf)$", "", s)
    return s


# --------------------------------------------------------------------------- names that pin a format and a quant
# GGUF presets an unsloth "UD-" (dynamic) quant is sized like: unsloth keeps some tensors at higher precision than
# the preset it is named after, so the published file is somewhat larger than the preset (unsloth's Dynamic 2.0
# naming: UD-Q4_K_XL is a Q4_K_M recipe with selected layers upcast).
UD_NEAREST = {"Q2_K_XL": "Q2_K", "Q3_K_XL": "Q3_K_M", "Q4_K_XL": "Q4_K_M", "Q5_K_XL": "Q5_K_M", "Q6_K_XL": "Q6_K",
              "Q8_K_XL": "Q8_0", "IQ1_M": "IQ1_S", "IQ2_M": "IQ2_M", "IQ2_XXS": "IQ2_XXS", "IQ3_XXS": "IQ3_XXS",
              "IQ4_XS": "IQ4_XS", "IQ4_NL": "IQ4_NL", "Q4_K_M": "Q4_K_M", "Q2_K": "Q2_K"}
# MLX repo suffixes (mlx-community/<Model>-4bit, lmstudio-community/<Model>-MLX-4bit, unsloth/<Model>-UD-MLX-4bit):
# mlx_lm.convert writes affine weights with group size 64 unless told otherwise (mlx_lm/utils.py quantize_model,
# defaults_for_mode: "affine": (64, 4)), so "-4bit" is the mlx-4bit-g64 preset.
# "-8bit-gs32" / "-4bit-g32": the group size the repo was converted with (mlx_lm.convert --q-group-size)
# The expressions of names (all case-insensitive) are compiled on first use (re's cache), and searched only in a
# name holding one of the words each needs (_holds): a catalog id holds none, and compiling the five was ~4.9 M
# instructions of the plain question's start-up.
_MLX_SUFFIX = r"[-_](?:(ud)[-_])?(?:mlx[-_])?(?:(\d)bit(?:[-_]gs?(\d+))?|(bf16|fp16|mxfp4|mxfp8|nvfp4))$"
_MLX_FOLDER = r"[-_](?:ud[-_])?mlx$"
_GGUF_SUFFIX = r"[-_.]gguf$"
_FORMAT_WORDS = ("bit", "bf16", "fp16", "mxfp", "nvfp", "mlx", "gguf")  # one is in every match of the three above
_HF_PREFIX = r"^(?:https?://)?(?:www\.)?(?:hf\.co|huggingface\.co)/"
# an Ollama library tag's quant suffix: gemma3:27b-it-q4_K_M, qwen3:8b-fp16
_OLLAMA_QUANT = r"-((?:i?q\d[a-z0-9_]*)|fp16|bf16)$"


def _holds(text: str, words: tuple[str, ...]) -> bool:
    """Whether ``text`` holds one of ``words`` in any case, as a match of the expressions above needs (a non-ASCII
    text always counts: re.I folds ı and İ to i, which lower() keeps)."""
    low = text.lower()
    return not text.isascii() or any(w in low for w in words)


class NameSpec(BaseModel):
    """What a model name pins besides the model: the weight format of the repo it names and, when the name says,
    the preset (``hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M`` -> gguf, Q4_K_M; ``mlx-community/Qwen3-8B-4bit`` -> mlx,
    mlx-4bit-g64). ``candidates`` are the spellings to look the model up by, most specific first."""

    model_config = {"frozen": True, "defer_build": True}
    name: str
    candidates: list[str]
    weight_format: str | None = None
    quant: str | None = None
    notes: list[str] = []


def _gguf_tag(tag: str) -> tuple[str | None, list[str]]:
    """A GGUF file tag (Q4_K_M, q8_0, UD-Q4_K_XL, BF16) -> our preset id and notes."""
    t = tag.strip().upper().replace("-", "_") if not tag.upper().startswith("UD-") else tag.strip().upper()
    if t.startswith("UD-") or t.startswith("UD_"):
        base = t[3:].replace("-", "_")
        near = UD_NEAREST.get(base) or (base if _known_quant(base, "gguf") else None)
        if near is None:
            return None, [f"{tag}: an unsloth dynamic quant with no preset of that size; all GGUF presets shown"]
        return near, [f"{tag} is an unsloth dynamic (UD) quant: sized as {near}, the preset it is built on; "
                      "UD files keep some tensors at higher precision and are somewhat larger"]
    if _known_quant(t, "gguf"):
        return load_quant(t, "gguf").id, []
    return None, [f"{tag}: not a GGUF preset the planner sizes; all GGUF presets shown"]


def _known_quant(q: str, kind: str) -> bool:
    try:
        load_quant(q, kind)
    except (InputError, KeyError):
        return False
    return True


def _repo_format(s: str, hf_tagged: bool) -> tuple[str | None, str | None, list[str], str | None]:
    """(weight format, preset, notes, the model's name without the format suffix) of a repo name."""
    repo, last = (s.rsplit("/", 1) if "/" in s else ("", s))
    if hf_tagged or _holds(last, _FORMAT_WORDS):  # else no suffix expression can match
        found = _suffix_format(s, last, hf_tagged)
        if found is not None:
            return found
    if repo.lower() == "mlx-community":  # mlx-community/gpt-oss-20b-MXFP4-Q8: MLX weights, a recipe of its own
        return "mlx", None, [], None
    return None, None, [], None


def _suffix_format(s: str, last: str, hf_tagged: bool) -> tuple[str | None, str | None, list[str], str | None] | None:
    """_repo_format's answer from the format suffix of the repo name's ``last`` part, or None when it has none."""
    if hf_tagged or re.search(_GGUF_SUFFIX, last, re.I):  # Ollama's hf.co form pulls GGUF files only
        bare = re.sub(_GGUF_SUFFIX, "", last, flags=re.I)
        m = re.search(r"[-_.]((?:I?Q\d|BF16|F16)[A-Z0-9_]*)$", bare, re.I)  # ggml-org/<Model>-Q8_0-GGUF: one preset
        if m is not None and _known_quant(m.group(1).upper(), "gguf"):
            return "gguf", load_quant(m.group(1).upper(), "gguf").id, [], bare[:m.start()]
        return "gguf", None, [], bare
    m = re.search(_MLX_SUFFIX, last, re.I)
    # "-BF16" alone is a safetensors repo (nvidia/...-BF16), "-bnb-4bit" a bitsandbytes one: neither is MLX
    if m is not None and "bnb" not in last.lower() and (m.group(2) or "mlx" in s.lower()):
        ud, bits, group, named = m.groups()
        quant = f"mlx-{bits}bit-g{group or 64}" if bits else (
            "mlx-bf16" if named.lower() in ("bf16", "fp16") else f"mlx-{named.lower()}")
        known = quant if _known_quant(quant, "mlx") else None
        notes = [f"{last}: an unsloth dynamic MLX quant (mixed bit widths); sized as {known}"] if ud else []
        return "mlx", known, notes, last[:m.start()]
    if re.search(_MLX_FOLDER, last, re.I):
        return "mlx", None, [], re.sub(_MLX_FOLDER, "", last, flags=re.I)
    return None


def parse_name(name: str) -> NameSpec:
    """Split a typed model name into lookup spellings, a weight format and a preset. Pure string work plus the
    quant profiles; the model itself is found by :func:`load_model`."""
    s = name.strip()
    hf = _holds(s, ("co/",)) and re.match(_HF_PREFIX, s, re.I) is not None
    s = re.sub(_HF_PREFIX, "", s, flags=re.I) if hf else s
    if s.lower().startswith("ollama.com/library/"):
        s = s[len("ollama.com/library/"):]
    tag = None
    if ("/" in s or hf) and ":" in s.rsplit("/", 1)[-1]:
        s, tag = s.rsplit(":", 1)  # Ollama's hf.co/<org>/<repo>:<quant>, or <org>/<repo>-GGUF:<quant>
    cands = [name.strip(), s]
    if tag is None and "/" not in s and s.lower().endswith(":latest"):
        cands.append(s[:-len(":latest")])  # `ollama list` shows glm-4.7-flash:latest for glm-4.7-flash
    fmt, quant, notes, bare = _repo_format(s, hf and tag is not None)
    cands.append(bare or "")
    if tag is not None and tag.lower() != "latest" and fmt == "gguf":  # Ollama's "latest" names no quant
        quant, more = _gguf_tag(tag)
        notes += more
    elif tag is None and "/" not in s and ":" in s and (m := re.search(_OLLAMA_QUANT, s, re.I)) is not None:
        q, more = _gguf_tag(m.group(1))
        if q is not None:  # gemma3:27b-it-q4_K_M: the tag without its quant names the model
            fmt, quant = "gguf", q
            cands.append(s[:m.start()])
            notes += more
    if "/" in s:  # bartowski/Qwen_Qwen3-8B-GGUF: the repo name repeats the maker's org
        cands += [c.split("_", 1)[1] for c in cands[2:] if "_" in c and "/" not in c]
    return assemble(NameSpec, name=name, candidates=list(dict.fromkeys(c for c in cands if c)), weight_format=fmt,
                    quant=quant, notes=notes)


def model_ids() -> list[str]:
    return sorted(_index("models"))


def load_model(name: str) -> ModelProfile:
    """A catalog model by id, alias, HF repo id or Ollama tag (case-insensitive), also inside the names that pin a
    format or quant: ``hf.co/<org>/<repo>:<quant>``, ``<org>/<Model>-GGUF:<quant>``, ``mlx-community/<Model>-4bit``."""
    if not name or not name.strip():
        raise InputError("[[model]] is empty; give a catalog id such as llama-3.1-8b (see `plan models`)")
    idx = _index("models")
    key = norm(name)
    if key in idx:
        return _load("models", key, ModelProfile)
    amap = _alias_map()
    spec = parse_name(name)
    for spelling in spec.candidates:
        for cand in (norm(spelling), norm(spelling.split("/")[-1])):
            if cand in idx:
                return _load("models", cand, ModelProfile)
            if cand in amap:
                return _load("models", amap[cand], ModelProfile)
    for spelling in spec.candidates:
        cand = _strip_decorations(spelling)
        if cand in amap:
            return _load("models", amap[cand], ModelProfile)
    library = ollama_library(name)
    if library is not None:
        return _load("models", library[0], ModelProfile)
    from .arch_attention import refused_name  # architectures refused by name (llama3.2-vision, bge-m3, ...)
    why = refused_name(name)
    if why:
        raise UnsupportedArchitectureError(f"[[model]] {name[:80]!r} is not supported yet: {why}")
    # the commands that come here take catalog ids only (plan and plan serve read local files and the Hub first)
    local = name.lower().endswith((".gguf", ".safetensors")) or os.path.exists(os.path.expanduser(name))
    raise UnknownProfileError("model", name, list(idx), flag="[[model]]",
                              hint="this command takes a catalog id (see `plan models`); a local file or folder "
                                   "works with `plan [[model]]` and `plan serve`" if local else "see `plan models`")


def all_models() -> list[ModelProfile]:
    return _all("models", ModelProfile)


# --------------------------------------------------------------------------- hardware
def all_chips() -> list[Chip]:
    return _all("chips", Chip)


def builtin_chips() -> list[Chip]:
    """The shipped chip profiles only: the speed fit must not depend on a user's custom chips."""
    return [load_file(p, Chip) for p in sorted((builtin_dir() / "chips").glob("*.yaml"))]


def chip_names() -> list[str]:
    return sorted({c.name for c in all_chips()})


def resolve_chip(name: str, gpu_cores: int | None = None) -> Chip:
    """'M3 Max' + 40 -> m3-max-40gpu. A binned chip without its GPU cores is ambiguous."""
    idx = _index("chips")
    key = norm(name)
    if key in idx:
        chip = _load("chips", key, Chip)
        if gpu_cores is not None and gpu_cores != chip.gpu_cores:
            raise InputError(f"[[gpu_cores]] {gpu_cores} contradicts [[chip]] {name} ({chip.gpu_cores} GPU cores)")
        return chip
    key = re.sub(r"^apple-", "", key)
    matches = [c for c in all_chips() if norm(c.name) == key]
    if not matches:
        raise UnknownProfileError("chip", name, chip_names(), flag="[[chip]]")
    if gpu_cores is not None:
        exact = [c for c in matches if c.gpu_cores == gpu_cores]
        if not exact:
            bins = ", ".join(str(c.gpu_cores) for c in matches)
            raise InputError(f"[[gpu_cores]] {gpu_cores} does not exist for {matches[0].name}; it comes with {bins}")
        return exact[0]
    if len(matches) > 1:
        bins = " or ".join(str(c.gpu_cores) for c in matches)
        raise InputError(f"[[chip]] {matches[0].name} is ambiguous: it comes with {bins} GPU cores; add [[gpu_cores]]")
    return matches[0]


def all_macs() -> "list[MacProduct]":
    from .schema_extra import MacProduct  # on first use, as the three below: the plain question reads none

    return _all("macs", MacProduct)


from ._model import DEFAULT_MACOS as DEFAULT_MACOS  # noqa: E402  (re-exported: profiles.DEFAULT_MACOS)


def load_macos(name: str) -> MacOS:
    idx = _index("macos")
    key = norm(name)
    key = key if key.startswith("macos") else f"macos-{key}"
    key = {"macos-sequoia": "macos-15", "macos-tahoe": "macos-26", "macos-14": "macos-15", "macos-13": "macos-15"}.get(key, key)
    if key not in idx:
        raise UnknownProfileError("macOS version", name, [k.removeprefix("macos-") for k in idx], flag="[[macos]]")
    return _load("macos", key, MacOS)


# --------------------------------------------------------------------------- runtimes and quants
def load_runtime(name: str) -> Runtime:
    idx = _index("runtimes")
    key = norm(name).replace("llamacpp", "llama.cpp").replace("llama-cpp", "llama.cpp")
    key = {"mlx": "mlx-lm", "mlx_lm": "mlx-lm", "mlxlm": "mlx-lm", "llama": "llama.cpp"}.get(key, key)
    if key not in idx:
        raise UnknownProfileError("runtime", name, list(idx), flag="[[runtime]]")
    return _load("runtimes", key, Runtime)


def load_serving_app(name: str) -> ServingApp:
    """A wrapper app (ollama, lmstudio) by id."""
    idx = _index("serving")
    key = norm(name).replace("lm-studio", "lmstudio").replace("lm studio", "lmstudio")
    if key not in idx:
        raise UnknownProfileError("serving app", name, list(idx), flag="[[runtime]]")
    return _load("serving", key, ServingApp)


def vision_family(model_id: str) -> "VisionFamily | None":
    """The image-token rule of a vision model (profiles/vision/*.yaml), None for a text-only model."""
    from .schema_extra import VisionFamily

    for key in _index("vision"):
        fam = _load("vision", key, VisionFamily)
        if model_id in fam.models:
            return fam
    return None


def speculative_pairs() -> "SpeculativePairs":
    """Draft lengths and acceptance rates (profiles/speculative/pairs.yaml)."""
    from .schema_extra import SpeculativePairs

    return _load("speculative", "pairs", SpeculativePairs)


def cpu_memory() -> "CpuMemory":
    """The CPU-side memory bandwidth share (profiles/hardware/cpu-memory.yaml)."""
    from .schema_extra import CpuMemory

    return _load("hardware", "cpu-memory", CpuMemory)


def expand_runtimes(names: list[str]) -> list[str]:
    """Runtime names (the runtime input) with an app that runs several engines expanded (lmstudio -> its GGUF and MLX runtimes)."""
    out: list[str] = []
    apps = _index("serving")
    for n in names:
        key = norm(n).replace("lm-studio", "lmstudio")
        out += _load("serving", key, ServingApp).runtimes if key in apps else [n]
    return list(dict.fromkeys(out))


def serving_app_of(runtime_id: str) -> ServingApp | None:
    """The wrapper app that serves with this runtime profile, if any."""
    for key in _index("serving"):
        app = _load("serving", key, ServingApp)
        if runtime_id in app.runtimes:
            return app
    return None


def all_runtimes() -> list[Runtime]:
    return [_load("runtimes", i, Runtime) for i in sorted(_index("runtimes"))]


@functools.cache
def ggml_types() -> GgmlTypeTable:
    return load_file(builtin_dir() / "quants" / "ggml-types.yaml", GgmlTypeTable)


def all_quants() -> list[QuantFormat]:
    return [_load("quants", i, QuantFormat) for i in sorted(_index("quants")) if i != "ggml-types"]


@functools.cache
def _quant_stems() -> dict[str, str]:
    return {i.lower(): i for i in _index("quants")}


def load_quant(name: str, kind: str | None = None) -> QuantFormat:
    """A quant format by id or alias: Q4_K_M, q4_k_m, 4bit, 4bit-g32, mlx-8bit-g64, mxfp4, bf16..."""
    key = name.strip()
    by_stem = _quant_stems()
    stem = by_stem.get(key.lower()) or by_stem.get(f"mlx-{key.lower()}")
    if stem and stem != "ggml-types":
        q = _load("quants", stem, QuantFormat)
        if kind is None or q.kind == kind:
            return q
    cands = [q for q in all_quants() if kind is None or q.kind == kind]
    for q in cands:
        if key == q.id or key.lower() == q.id.lower():
            return q
    for q in cands:
        if key.lower() in (a.lower() for a in q.aliases):
            return q
    if kind == "mlx" and key.lower() in ("bf16", "f16", "fp16", "float16", "bfloat16"):
        return load_quant("mlx-bf16", "mlx")
    raise UnknownProfileError("quantization", name, [q.id for q in cands], flag="[[quant]]")


@functools.cache
def ram_sizes() -> list[int]:
    """Every RAM size a Mac comes in (the chips' ram_options_gb), sorted: kept beside the chip profiles
    (:func:`derived_from_files`), so checking a RAM size does not load all of them (~2.7 M instructions)."""
    return derived_from_files("ram_sizes", list(_index("chips").values()),
                              lambda: sorted({r for c in all_chips() for r in c.ram_options_gb}))


def ram_gb_valid(ram_gb: float) -> None:
    """Reject RAM sizes no Mac comes in."""
    if not 0 < ram_gb < float("inf"):
        raise InputError(f"[[ram]] {ram_gb:g} must be a positive size in GB, e.g. [[ram]] 64")
    sizes = ram_sizes()
    if sizes and int(ram_gb) != ram_gb or sizes and int(ram_gb) not in sizes:
        raise InputError(f"[[ram]] {ram_gb:g} GB: no Mac comes with that; valid sizes are {', '.join(map(str, sizes))}")


# --------------------------------------------------------------------------- speed calibration
@functools.cache
def _calibration_files(root: Path | None) -> dict[str, Path]:
    folder = root / "calibration" if root is not None else None
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))} if folder is not None and folder.is_dir() else {}


def load_speed_constants(chip: Chip, runtime: str, include_user: bool = True) -> "ResolvedSpeedConstants":
    """Merged calibration constants for (chip, runtime), generic to specific:
    runtime default -> tier -> generation (or the newest earlier one) -> chip id -> user calibration dir
    (``user_dir()/calibration``). ollama starts from llama.cpp's chain and applies its own files on top.
    A user calibration file that does not load (corrupt, another schema, another chip or runtime) is skipped
    with a note in the source string: the shipped constants are used. ``include_user=False``: shipped only.

    Cached per (chip id, generation, tier, matrix units, runtime, profile-dir env vars): the YAML files and the
    user calibration dir are read once per process; :func:`clear_cache` forgets them (store.py calls it after
    writing a user calibration)."""
    env = os.environ.get
    return _speed_constants(chip.id, chip.generation, chip.tier, bool(chip.gpu_matrix_units), runtime, include_user,
                            env("MAC_LLM_PLANNER_PROFILES"), env("MAC_LLM_PLANNER_USER_PROFILES"))


def _generation_scope(builtin: dict[str, Path], r: str, generation: str, notes: list[str]) -> str:
    """``gen-M4``, or the newest earlier generation with a file for runtime ``r`` (noted)."""
    gens = sorted({p.split("__")[0] for p in builtin if p.endswith(f"__{r}") and p.startswith("gen-")})
    gen_scope = f"gen-{generation}"
    older = [g for g in gens if g < gen_scope]
    if gen_scope not in gens and older:
        notes.append(f"{r} per-generation constants from generation {older[-1][4:]} (no {generation} data)")
        return older[-1]
    return gen_scope


def _calibration_profile(p: Path, scope: str, r: str, origin: str, notes: list[str]) -> "CalibrationProfile | None":
    """The calibration file at ``p`` if it is what its name says; a broken user file is noted and skipped."""
    from .speed_schema import CalibrationProfile

    try:
        prof = load_file(p, CalibrationProfile)
        if (prof.scope, prof.runtime) != (scope, r):
            raise ProfileError(f"{p}: calibration of {prof.scope} / {prof.runtime}, not of this file's "
                               f"{scope} / {r}; re-run `plan calibrate` or delete the file")
    except ProfileError as e:
        if origin != "user":
            raise
        notes.append(f"user calibration ignored ({e.template}); shipped constants used")
        return None
    return prof


def _engine(rt: Runtime) -> str:
    """The engine whose speed constants a runtime starts from: its own family (wrappers: the engine they wrap)."""
    from .engines import engine_for  # planner/engines imports the schema this module loads into

    return engine_for(rt).name


@functools.cache
def _speed_constants(chip_id: str, generation: str, tier: str, matrix_units: bool, runtime: str, include_user: bool,
                     _builtin_env: str | None, _user_env: str | None) -> "ResolvedSpeedConstants":
    from .speed_schema import ResolvedSpeedConstants

    rt = load_runtime(runtime).id
    builtin, user = _calibration_files(builtin_dir()), _calibration_files(user_dir() if include_user else None)
    engine = _engine(load_runtime(runtime))  # a wrapper (Ollama, LM Studio) starts from its engine's constants
    chain = [engine] if rt == engine else [engine, rt]
    merged = None
    scopes: list[str] = []
    parts: list[str] = []
    notes: list[str] = []
    for r in chain:
        gen_scope = _generation_scope(builtin, r, generation, notes)
        # tier before generation: a generation's own bandwidth efficiency (none shipped: calibration.fit.GEN_ETA_BW) refines
        # its tier's; today's gen files otherwise carry eta_c and t_layer_s, tier files eta_bw, and chip files their
        # family's eta_bw (calibration.fit.FAMILY_ETA_BW: the tier's times the family's factor)
        for scope in ("default", f"tier-{tier}", gen_scope, chip_id):
            for files, origin in ((builtin, "shipped"), (user, "user")):
                p = files.get(f"{scope}__{r}")
                prof = None if p is None else _calibration_profile(p, scope, r, origin, notes)
                if prof is None:
                    continue
                merged = prof.constants if merged is None else merged.merged(prof.constants)
                scopes.append(prof.id)
                pv = prof.provenance
                when = pv.fitted_on.isoformat() if pv.fitted_on else "undated"
                if origin == "user":
                    res = pv.residuals.get("mape", pv.residuals.get("decode_mape"))
                    where = "this machine" if chip_id.startswith("custom-") else "this Mac"
                    parts.append(f"calibrated on {where} on {when}" + (f", residual {res:.0f}%" if res is not None else ""))
                elif scope == "default":
                    parts.append(f"{r} default ({pv.rows} rows, all chips, {when})")
                else:
                    parts.append(f"{r} × {scope} ({pv.rows} rows, {when})")
    if rt != engine and not any(sc.endswith(f"__{rt}") for sc in scopes):
        notes.append(f"{rt} runs at its engine's speed: no published measurement of the app's own cost")
    if merged is None or merged.missing():
        raise ProfileError(f"no complete speed calibration for {rt}: add profiles/calibration/default__{rt}.yaml "
                           "(python -m calibration.fit)")
    source = "fitted: " + " + ".join(parts) + ("; " + "; ".join(notes) if notes else "")
    if matrix_units:
        source += "; matrix-unit factor applied"
    return ResolvedSpeedConstants(constants=merged.resolved(), source=source, scopes=scopes)


def load_finetune(runtime: str = "mlx-lm", include_user: bool = True) -> "FinetuneConstants":
    """Fine-tuning constants: a user calibration (``user_dir()/calibration/finetune__<runtime>.yaml``, written by
    the fine-tuning calibration, ``plan calibrate``) when one loads, else the shipped ``profiles/finetune/<runtime>.yaml``."""
    env = os.environ.get
    return _finetune(runtime, include_user, env("MAC_LLM_PLANNER_PROFILES"), env("MAC_LLM_PLANNER_USER_PROFILES"))


@functools.cache
def _finetune(runtime: str, include_user: bool, _builtin_env: str | None, _user_env: str | None) -> "FinetuneConstants":
    from .speed_schema import FinetuneConstants

    user = user_dir() if include_user else None
    if user is not None:
        path = user / "calibration" / f"finetune__{runtime}.yaml"
        if path.is_file():
            try:
                return FinetuneConstants.model_validate(_read_yaml(path))
            except (ProfileError, ValidationError):
                pass  # a broken user file never hides the shipped constants
    path = builtin_dir() / "finetune" / f"{runtime}.yaml"
    if not path.is_file():
        raise InputError(f"fine-tuning is planned for mlx-lm only (no {path.name} profile)")
    try:
        return FinetuneConstants.model_validate(_read_yaml(path))
    except ValidationError as e:
        raise ProfileError(render_validation_error(str(path), e)) from None


@functools.cache
def ssd_speeds() -> "SSDTable":
    """Measured SSD read speeds by chip and capacity (profiles/hardware/ssd-read.yaml; planner/streaming.py)."""
    from .streaming import SSDTable

    return _validate_file(_index("hardware")["ssd-read"], SSDTable)


@functools.cache
def fanless_table() -> "FanlessTable":
    """Sustained runs measured on fanless Macs (profiles/hardware/fanless.yaml; planner/fanless.py)."""
    from .fanless import FanlessTable

    return _validate_file(_index("hardware")["fanless"], FanlessTable)


@functools.cache
def bf16_table() -> "Bf16Table":
    """Public bfloat16 / float16 A/B runs on GPUs that emulate bfloat16 (profiles/hardware/bf16.yaml; planner/bf16.py)."""
    from .bf16 import Bf16Table

    return _validate_file(_index("hardware")["bf16"], Bf16Table)


@functools.cache
def power_table() -> "PowerTable":
    """Measured wall power under LLM load, batteries (profiles/hardware/power.yaml; planner/power.py)."""
    from .power import PowerTable

    return _validate_file(_index("hardware")["power"], PowerTable)
