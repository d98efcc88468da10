"""What is installed: the models on disk in the folders of Ollama, LM Studio, the Hugging Face cache, llama.cpp's
cache and folders the user names, each with its exact bytes and the command that runs it.

Layouts, as read in each project's code:

- **Ollama** (github.com/ollama/ollama @ fb30760996871fa9460115c753afd2c60d4ab0f7): the models folder is
  ``$OLLAMA_MODELS`` or ``~/.ollama/models`` (envconfig/config.go ``Models``); a model's manifest is
  ``manifests/<host>/<namespace>/<model>/<tag>`` (types/model/name.go ``Filepath``, ``ParseNameFromFilepath``:
  exactly 4 parts), a JSON ``{schemaVersion, mediaType, config, layers: [{mediaType, digest, size}]}``
  (manifest/manifest.go ``Manifest``, manifest/layer.go ``Layer``); a layer's file is
  ``blobs/sha256-<64 hex>`` (manifest/paths.go ``BlobsPath``: ``sha256:`` -> ``sha256-``); the weights are the layer
  of mediaType ``application/vnd.ollama.image.model`` (a GGUF), a vision projector
  ``application/vnd.ollama.image.projector`` (server/create.go). The model's size is the sum of its layers and config
  (manifest.go ``Size``: what ``ollama list`` shows). Its short name drops the default host
  ``registry.ollama.ai`` and namespace ``library`` (name.go ``DisplayShortest``).
- **LM Studio**: ``~/.lmstudio/models/<publisher>/<repo>/`` (older ``~/.cache/lm-studio/models``) holding GGUF
  files or a MLX folder (config.json + safetensors).
- **Hugging Face cache** (huggingface_hub 2.4 constants.py: ``HF_HUB_CACHE``, else ``HUGGINGFACE_HUB_CACHE``, else
  ``$HF_HOME/hub``, else ``$XDG_CACHE_HOME/huggingface/hub`` or ``~/.cache/huggingface/hub``):
  ``models--<org>--<name>/snapshots/<revision>/`` of symlinks into ``blobs/`` (file_download.py
  ``repo_folder_name``, ``_create_symlink``), ``refs/main`` naming the current revision.
- **llama.cpp's cache** (common/common.cpp ``fs_get_cache_directory``: ``$LLAMA_CACHE``, else
  ``~/Library/Caches/llama.cpp`` on macOS, ``$XDG_CACHE_HOME/llama.cpp`` or ``~/.cache/llama.cpp`` elsewhere): the
  flat ``-hf`` downloads of older builds; newer builds put ``-hf`` downloads in the HF cache layout under
  ``$LLAMA_CACHE`` when set, else in the HF cache itself (common/hf-cache.cpp ``get_cache_directory``), so both
  layouts are read there.

Only headers are read (sources/local.py: GGUF header, safetensors JSON header, config.json, each bounded by
sources/bounds.py); file sizes come from ``os.stat``. The walk is bounded in entries, depth and time.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .bounds import MiB, is_regular, loads_json, read_capped
from .errors import SourceError

Source = Literal["ollama", "lmstudio", "hf-cache", "llama.cpp-cache", "folder"]
MAX_ENTRIES = 50_000          # directory entries visited per root
MAX_DEPTH = 6                 # below the root (HF cache: models--x/snapshots/rev/sub/file is 4)
WALK_SECONDS = 10.0           # per root
MAX_MANIFEST_BYTES = 1 * MiB  # an Ollama manifest lists a few layers (~1 KB); tensor-layer ones a few hundred KB
MAX_MODELS = 2_000
OLLAMA_MODEL = "application/vnd.ollama.image.model"          # server/create.go
OLLAMA_PROJECTOR = "application/vnd.ollama.image.projector"  # server/create.go
OLLAMA_HOST, OLLAMA_NS = "registry.ollama.ai", "library"     # types/model/name.go defaultHost, defaultNamespace
DIGEST_RE = re.compile(r"^sha256[:-]([0-9a-fA-F]{64})$")     # manifest/paths.go BlobsPath
SPLIT_RE = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)


class Installed(BaseModel):
    """One model on disk."""

    model_config = ConfigDict(frozen=True)
    name: str = Field(description="Ollama name:tag, HF repo id, LM Studio publisher/repo, or the file/folder name")
    source: Source
    path: str = Field(description="The GGUF file (first shard) or the model folder")
    format: Literal["gguf", "mlx", "safetensors"]
    quant: str | None = Field(None, description="Q4_K_M, mlx-4bit-g64, ... as read from the file headers")
    bytes: int = Field(description="Exact bytes on disk of the files the model loads (os.stat) [bytes]")
    files: list[str] = Field(default_factory=list)
    run: str = Field(description="The command that serves it")
    error: str | None = Field(None, description="Why its headers could not be read (one line)")


class Scan(BaseModel):
    model_config = ConfigDict(frozen=True)
    models: list[Installed]
    roots: list[tuple[str, str]] = Field(description="(source, folder) pairs that exist and were read")
    notes: list[str] = []


# --------------------------------------------------------------------------- roots
def _env(name: str) -> Path | None:
    v = os.environ.get(name)
    return Path(v).expanduser() if v else None


def ollama_root() -> Path:
    """envconfig/config.go Models(): $OLLAMA_MODELS or ~/.ollama/models."""
    return _env("OLLAMA_MODELS") or Path.home() / ".ollama" / "models"


def lmstudio_roots() -> list[Path]:
    return [Path.home() / ".lmstudio" / "models", Path.home() / ".cache" / "lm-studio" / "models"]


def hf_cache_root() -> Path:
    """huggingface_hub/constants.py: HF_HUB_CACHE > HUGGINGFACE_HUB_CACHE > $HF_HOME/hub > XDG/~/.cache."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if (p := _env(var)) is not None:
            return p
    if (home := _env("HF_HOME")) is not None:
        return home / "hub"
    return (_env("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface" / "hub"


def llama_cache_root() -> Path:
    """common/common.cpp fs_get_cache_directory(): $LLAMA_CACHE, else the OS cache folder + llama.cpp."""
    if (p := _env("LLAMA_CACHE")) is not None:
        return p
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "llama.cpp"
    return (_env("XDG_CACHE_HOME") or Path.home() / ".cache") / "llama.cpp"


# --------------------------------------------------------------------------- bounded walk
class _Budget:
    def __init__(self, root: Path):
        self.root, self.entries, self.deadline, self.cut = root, 0, time.monotonic() + WALK_SECONDS, None

    def take(self) -> bool:
        self.entries += 1
        if self.entries > MAX_ENTRIES:
            self.cut = f"{self.root}: stopped after {MAX_ENTRIES:,} entries; name a smaller folder with --dir"
        elif time.monotonic() > self.deadline:
            self.cut = f"{self.root}: stopped after {WALK_SECONDS:g} s; name a smaller folder with --dir"
        return self.cut is None


def _listdir(folder: Path, budget: _Budget) -> tuple[list[Path], list[Path]]:
    """(sub-folders, regular files) of a folder, sorted; an unreadable folder is empty (symlinked folders are
    followed only inside the HF cache snapshots, where every entry is a symlink to a file)."""
    dirs, files = [], []
    try:
        with os.scandir(folder) as it:
            for e in it:
                if not budget.take():
                    break
                try:
                    if e.is_dir(follow_symlinks=False):
                        dirs.append(Path(e.path))
                    elif is_regular(Path(e.path)):
                        files.append(Path(e.path))
                except OSError:
                    continue
    except OSError:
        pass
    return sorted(dirs), sorted(files)


def _walk(root: Path, budget: _Budget, depth: int = MAX_DEPTH) -> Iterator[tuple[Path, list[Path]]]:
    """(folder, files) top-down, at most ``depth`` levels below root, within the budget."""
    stack = [(root, 0)]
    while stack and budget.cut is None:
        folder, d = stack.pop()
        dirs, files = _listdir(folder, budget)
        yield folder, files
        if d < depth:
            stack += [(x, d + 1) for x in reversed(dirs) if not x.name.startswith(".")]


def _size(paths: list[Path]) -> int:
    return sum(os.stat(p).st_size for p in paths)


# --------------------------------------------------------------------------- model folders and files
def _gguf_models(files: list[Path]) -> list[list[Path]]:
    """The GGUF models among a folder's files: each a list of its shards (a split model once, from part 1);
    vision projectors (mmproj-*) are attached to the models of their folder, not listed."""
    out = []
    for f in files:
        n = f.name.lower()
        if not n.endswith(".gguf") or "mmproj" in n:
            continue
        m = SPLIT_RE.search(f.name)
        if m is None:
            out.append([f])
        elif int(m.group(1)) == 1:
            total = int(m.group(2))
            stem = f.name[: m.start()]
            shards = [f.with_name(f"{stem}-{i:05d}-of-{total:05d}.gguf") for i in range(1, total + 1)]
            out.append([s for s in shards if is_regular(s)])
    return out


def _mmproj(files: list[Path]) -> list[Path]:
    return [f for f in files if f.name.lower().endswith(".gguf") and "mmproj" in f.name.lower()][:1]


def _is_weights_folder(files: list[Path]) -> bool:
    names = {f.name for f in files}
    return "config.json" in names and any(n.endswith(".safetensors") for n in names)


def gguf_entry(name: str, source: Source, shards: list[Path], extra: list[Path] = (), run: str | None = None,
               display_path: Path | None = None) -> Installed:
    """A GGUF model: exact bytes of its shards and projector; quant read from its header."""
    files = [*shards, *extra]
    quant, error = None, None
    try:
        quant = _gguf_quant(shards[0])
    except SourceError as e:
        error = str(e)
    return Installed(name=name, source=source, path=str(display_path or shards[0]), format="gguf", quant=quant,
                     bytes=_size(files), files=[str(f) for f in files],
                     run=run or f"llama-server -m {_q(shards[0])}", error=error)


def _gguf_quant(path: Path) -> str | None:
    from .ggufmeta import quant_from_gguf
    from .local import read_gguf

    kv, _ = read_gguf(path)
    return quant_from_gguf(kv, path.name)


def folder_entry(name: str, source: Source, folder: Path, files: list[Path]) -> Installed:
    """A MLX / HF folder: config.json's quantization block names the MLX format (sources.mlx_quant_id)."""
    from . import mlx_quant_id
    from .local import read_config_json

    weights = [f for f in files if f.name.endswith(".safetensors")]
    quant, error, fmt = None, None, "safetensors"
    try:
        raw = read_config_json(folder / "config.json")
        quant, _ = mlx_quant_id(raw)
        if quant is not None:
            fmt = "mlx"
    except SourceError as e:
        error = str(e)
    return Installed(name=name, source=source, path=str(folder), format=fmt, quant=quant, bytes=_size(weights),
                     files=[str(f) for f in weights], run=f"mlx_lm.server --model {_q(folder)}", error=error)


def _q(p: Path | str) -> str:
    import shlex

    return shlex.quote(str(p))


def scan_tree(root: Path, source: Source, label=None) -> tuple[list[Installed], str | None]:
    """Every GGUF and every MLX/HF folder under ``root`` (LM Studio, --dir, llama.cpp's flat cache).
    ``label(folder, file_or_None)`` names a model (default: its path relative to root)."""
    budget = _Budget(root)
    out: list[Installed] = []
    for folder, files in _walk(root, budget):
        if _is_weights_folder(files):
            out.append(folder_entry(label(folder, None) if label else _rel(root, folder), source, folder, files))
        mm = _mmproj(files)
        for shards in _gguf_models(files):
            name = label(folder, shards[0]) if label else _rel(root, shards[0])
            out.append(gguf_entry(name, source, shards, mm))
        if len(out) >= MAX_MODELS:
            break
    return out, budget.cut


def _rel(root: Path, p: Path) -> str:
    try:
        r = p.relative_to(root)
        return str(r) if str(r) != "." else p.name
    except ValueError:
        return str(p)


# --------------------------------------------------------------------------- Ollama
def scan_ollama(root: Path) -> tuple[list[Installed], str | None]:
    """manifests/<host>/<namespace>/<model>/<tag> -> the model layer's blob (a GGUF)."""
    mroot = root / "manifests"
    budget = _Budget(mroot)
    out = []
    for folder, files in _walk(mroot, budget, depth=3):
        parts = folder.relative_to(mroot).parts
        if len(parts) != 3:      # ParseNameFromFilepath: host/namespace/model/tag, exactly 4 parts
            continue
        host, ns, model = parts
        for f in files:
            out.append(_ollama_entry(root, host, ns, model, f.name, f))
    return out, budget.cut


def ollama_name(host: str, ns: str, model: str, tag: str) -> str:
    """types/model/name.go DisplayShortest."""
    if host.lower() != OLLAMA_HOST:
        return f"{host}/{ns}/{model}:{tag}"
    if ns.lower() != OLLAMA_NS:
        return f"{ns}/{model}:{tag}"
    return f"{model}:{tag}"


def _ollama_entry(root: Path, host: str, ns: str, model: str, tag: str, manifest: Path) -> Installed:
    name = ollama_name(host, ns, model, tag)
    run = f"ollama run {name}"
    src = str(manifest)

    def broken(why: str) -> Installed:
        return Installed(name=name, source="ollama", path=src, format="gguf", bytes=0, run=run, error=why)

    try:
        m = loads_json(read_capped(manifest, MAX_MANIFEST_BYTES, what="manifest"), src, cap=MAX_MANIFEST_BYTES,
                       what="manifest")
    except SourceError as e:
        return broken(str(e))
    layers = m.get("layers") if isinstance(m, dict) else None
    if not isinstance(layers, list):
        return broken(f"{src}: not an Ollama manifest (no layers list); `ollama pull {name}` again")
    size = 0
    for layer in [*layers, m.get("config") or {}]:   # manifest.go Size(): layers + config
        s = layer.get("size") if isinstance(layer, dict) else None
        size += s if isinstance(s, int) and not isinstance(s, bool) and s >= 0 else 0
    blobs = {}
    for layer in layers:
        if isinstance(layer, dict) and layer.get("mediaType") in (OLLAMA_MODEL, OLLAMA_PROJECTOR):
            d = DIGEST_RE.match(str(layer.get("digest", "")))
            if d is None:
                return broken(f"{src}: layer digest {str(layer.get('digest'))[:80]!r} is not sha256:<64 hex>; "
                              f"`ollama pull {name}` again")
            blobs.setdefault(layer["mediaType"], root / "blobs" / f"sha256-{d.group(1)}")
    weights = blobs.get(OLLAMA_MODEL)
    if weights is None:
        return broken(f"{src}: no GGUF model layer ({OLLAMA_MODEL}); a safetensors-based Ollama model is not read")
    missing = [p for p in blobs.values() if not is_regular(p)]
    if missing:
        return broken(f"{src}: blob {missing[0].name} is missing; `ollama pull {name}` again")
    extra = [blobs[OLLAMA_PROJECTOR]] if OLLAMA_PROJECTOR in blobs else []
    e = gguf_entry(name, "ollama", [weights], extra, run=run)
    return e.model_copy(update={"bytes": size or e.bytes})


# --------------------------------------------------------------------------- HF cache layout
def scan_hf_cache(root: Path, source: Source = "hf-cache") -> tuple[list[Installed], str | None]:
    """models--<org>--<name>/snapshots/<rev>/: the revision refs/main names (else the newest), its GGUFs (each a
    model) or its config.json + safetensors (one model)."""
    budget = _Budget(root)
    out: list[Installed] = []
    repos, _ = _listdir(root, budget)
    for repo in repos:
        if not repo.name.startswith("models--") or budget.cut:
            continue
        repo_id = repo.name.removeprefix("models--").replace("--", "/")   # file_download.py repo_folder_name
        snap = _snapshot(repo, budget)
        if snap is None:
            continue
        for folder, files in _walk(snap, budget, depth=3):
            label = repo_id if folder == snap else f"{repo_id}/{folder.relative_to(snap)}"
            if _is_weights_folder(files):
                out.append(folder_entry(label, source, folder, files))
            mm = _mmproj(files)
            for shards in _gguf_models(files):
                out.append(gguf_entry(f"{repo_id}:{_rel(snap, shards[0])}", source, shards, mm))
    return out, budget.cut


def _snapshot(repo: Path, budget: _Budget) -> Path | None:
    snaps, _ = _listdir(repo / "snapshots", budget)
    if not snaps:
        return None
    try:
        rev = read_capped(repo / "refs" / "main", 4096, what="ref").decode("ascii", "replace").strip()
        if (repo / "snapshots" / rev) in snaps:
            return repo / "snapshots" / rev
    except SourceError:
        pass
    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    return max(snaps, key=mtime)


# --------------------------------------------------------------------------- all
def scan(dirs: list[str] | None = None, *, include_default: bool = True) -> Scan:
    """Every installed model: the default folders (when ``include_default``) and the ``dirs`` the user names."""
    models: list[Installed] = []
    roots: list[tuple[str, str]] = []
    notes: list[str] = []

    def run(source: str, root: Path, fn) -> None:
        try:
            ok = root.is_dir()
        except OSError:
            ok = False
        if not ok:
            return
        roots.append((source, str(root)))
        found, cut = fn(root)
        models.extend(found)
        if cut:
            notes.append(cut)

    if include_default:
        run("ollama", ollama_root(), scan_ollama)
        for r in lmstudio_roots():
            run("lmstudio", r, lambda p: scan_tree(p, "lmstudio"))
        run("hf-cache", hf_cache_root(), scan_hf_cache)
        lc = llama_cache_root()
        run("llama.cpp-cache", lc, lambda p: _llama_cache(p))
    for d in dirs or []:
        p = Path(d).expanduser()
        if not p.is_dir():
            raise SourceError(f"--dir {d}: no such folder; name a folder that holds models")
        run("folder", p, lambda q: scan_tree(q, "folder"))
    seen, unique = set(), []
    for m in models:   # the same file reached from two roots (a --dir inside a cache, LLAMA_CACHE = HF cache)
        key = os.path.realpath(m.files[0]) if m.files else m.path
        if key not in seen or m.source == "ollama":
            seen.add(key)
            unique.append(m)
    return Scan(models=unique, roots=roots, notes=notes)


def _llama_cache(root: Path) -> tuple[list[Installed], str | None]:
    """Flat -hf downloads (older llama.cpp) plus the HF cache layout (newer, when LLAMA_CACHE is set)."""
    budget = _Budget(root)
    _, files = _listdir(root, budget)
    out = []
    mm = _mmproj(files)
    for shards in _gguf_models(files):
        out.append(gguf_entry(shards[0].name, "llama.cpp-cache", shards, mm))
    more, cut = scan_hf_cache(root, "llama.cpp-cache")
    return out + more, budget.cut or cut
