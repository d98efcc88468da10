"""cli/profile_cache.py: the validated profiles kept between runs in the user's cache dir (the core keeps none)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli import profile_cache as C
from planner import profiles as P
from planner.schema import Runtime

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "profiles"


def _fresh(monkeypatch) -> C.DiskStore:
    store = C.DiskStore()
    monkeypatch.setattr(P, "_STORE", store)
    return store


def test_the_core_keeps_no_cache_of_its_own(monkeypatch):
    """Without an installed store every read validates the file (nothing pickled, nothing written at exit)."""
    monkeypatch.setattr(P, "_STORE", None)
    calls = []
    real = P._validate_file
    monkeypatch.setattr(P, "_validate_file", lambda path, cls: calls.append(path) or real(path, cls))
    f = PROFILES / "runtimes" / "llama.cpp.yaml"
    assert P.load_file(f, Runtime) == P.load_file(f, Runtime)
    assert calls == [f, f]
    src = (ROOT / "planner" / "profiles.py").read_text(encoding="utf-8")
    assert "import pickle" not in src and "atexit" not in src


def test_install_is_once_per_process(monkeypatch):
    monkeypatch.setattr(P, "_STORE", None)
    first = C.install()
    assert C.install() is first and P._STORE is first


def test_validated_cache_round_trips_and_sees_edits(tmp_path, monkeypatch):
    monkeypatch.setenv("MAC_LLM_PLANNER_CACHE", str(tmp_path / "cache"))
    _fresh(monkeypatch)
    src = PROFILES / "runtimes" / "mlx-lm.yaml"
    f = tmp_path / "mlx-lm.yaml"
    f.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    first = P.load_file(f, Runtime)
    stale = tmp_path / "cache" / "profiles-0000000000000000.pickle"  # a cache written by other code
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    P._STORE.save()
    assert [p.name for p in (tmp_path / "cache").glob("profiles-*.pickle")] == [P._STORE.file().name]
    _fresh(monkeypatch)  # a new process: reads the pickle
    monkeypatch.setattr(P, "_validate_file", lambda *a: pytest.fail("validated again despite the cache"))
    assert P.load_file(f, Runtime) == first
    monkeypatch.undo()
    monkeypatch.setenv("MAC_LLM_PLANNER_CACHE", str(tmp_path / "cache"))
    # an edit (new size) is a miss: the file is validated again and the new value wins
    f.write_text(f.read_text(encoding="utf-8").replace("kv_step: 256", "kv_step: 512"), encoding="utf-8")
    assert P.load_file(f, Runtime).kv_step == 512


def test_corrupt_cache_is_only_a_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("MAC_LLM_PLANNER_CACHE", str(tmp_path))
    store = C.DiskStore()
    store.file().write_bytes(b"not a pickle")
    monkeypatch.setattr(P, "_STORE", store)
    assert P.load_file(PROFILES / "runtimes" / "llama.cpp.yaml", Runtime).n_ubatch == 512


def _runtime_copies(tmp_path: Path, n: int) -> list[Path]:
    out = []
    for i in range(n):
        f = tmp_path / "profiles" / str(i) / "llama.cpp.yaml"
        f.parent.mkdir(parents=True)
        f.write_text((PROFILES / "runtimes" / "llama.cpp.yaml").read_text(encoding="utf-8"), encoding="utf-8")
        out.append(f)
    return out


def test_a_corrupt_cache_entry_is_only_a_miss(tmp_path, monkeypatch):
    """One entry that does not unpickle is validated again; the other entries still come from the cache."""
    import pickle

    monkeypatch.setenv("MAC_LLM_PLANNER_CACHE", str(tmp_path / "cache"))
    _fresh(monkeypatch)
    good, bad = _runtime_copies(tmp_path, 2)
    want = P.load_file(bad, Runtime)
    P.load_file(good, Runtime)
    P._STORE.save()
    f = P._STORE.file()
    data = pickle.loads(f.read_bytes())
    key = next(k for k in data if k[0] == str(bad))
    data[key] = (data[key][0], b"not a pickle")
    f.write_bytes(pickle.dumps(data))
    _fresh(monkeypatch)  # a new process
    assert len(P._STORE._load()) == 2 and P._STORE.objects == {}  # read, nothing unpickled yet
    validated = []
    real = P._validate_file
    monkeypatch.setattr(P, "_validate_file", lambda path, cls: validated.append(path) or real(path, cls))
    assert P.load_file(bad, Runtime) == want
    assert P.load_file(good, Runtime).n_ubatch == want.n_ubatch
    assert validated == [bad]
    assert [k[0] for k in P._STORE.objects] == [str(bad), str(good)]  # unpickled when read, in that order


def test_concurrent_writers_leave_a_cache_that_reads(tmp_path):
    """Processes that save at once (each writes a private temporary file, then renames it): the cache is one
    writer's whole file, and every entry in it loads."""
    import pickle
    import subprocess
    import sys

    files = _runtime_copies(tmp_path, 4)
    code = ("import sys\n"
            "from planner import profiles as P\n"
            "from cli.profile_cache import install\n"
            "install()\n"
            "from planner.schema import Runtime\n"
            "for _ in range(10):\n"
            "    P.load_file(P.Path(sys.argv[1]), Runtime)\n"
            "    P._STORE.dirty = True\n"
            "    P._STORE.save()\n")
    env = {**__import__("os").environ, "MAC_LLM_PLANNER_CACHE": str(tmp_path / "cache")}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(f)], cwd=ROOT, env=env) for f in files]
    assert [p.wait(timeout=120) for p in procs] == [0] * len(files)
    caches = list((tmp_path / "cache").glob("profiles-*"))
    assert len(caches) == 1  # no temporary file left behind
    entries = pickle.loads(caches[0].read_bytes())
    assert entries and {k[0] for k in entries} <= {str(f) for f in files}
    for _, blob in entries.values():
        assert pickle.loads(blob).n_ubatch == 512


def _quant_copies(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A model, a GGUF preset and the ggml type table copied out of the catalog (files a test may edit)."""
    out = []
    for rel in ("models/llama-3.1-8b.yaml", "quants/Q4_K_M.yaml", "quants/ggml-types.yaml"):
        src = next(PROFILES.glob(f"**/{Path(rel).name}"))
        f = tmp_path / "p" / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
        out.append(f)
    return out[0], out[1], out[2]


def _inputs(files):
    from planner.schema import GgmlTypeTable, ModelProfile, QuantFormat

    m, q, t = files
    return P.load_file(m, ModelProfile), P.load_file(q, QuantFormat), P.load_file(t, GgmlTypeTable)


def test_derived_values_are_kept_beside_their_profiles(tmp_path, monkeypatch):
    """A value derived from profiles read through the store is computed once, then read back by a later process;
    an edit of any of its profiles is a miss (computed again)."""
    monkeypatch.setenv("MAC_LLM_PLANNER_CACHE", str(tmp_path / "cache"))
    _fresh(monkeypatch)
    files = _quant_copies(tmp_path)
    calls = []

    def compute(tag):
        calls.append(tag)
        return {"value": tag}

    ins = _inputs(files)
    assert P.derived("x", ins, lambda: compute(1)) == {"value": 1}
    assert P.derived("x", ins, lambda: compute(2)) == {"value": 1}  # the same process: kept
    assert P.derived("y", ins, lambda: compute(3)) == {"value": 3}  # another name: its own value
    P._STORE.save()
    _fresh(monkeypatch)  # a new process
    assert P.derived("x", _inputs(files), lambda: compute(4)) == {"value": 1}
    assert calls == [1, 3]
    files[1].write_text(files[1].read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    _fresh(monkeypatch)
    assert P.derived("x", _inputs(files), lambda: compute(5)) == {"value": 5}


def test_derived_values_are_computed_without_a_store_or_a_file(tmp_path, monkeypatch):
    """No store installed, or an input that was not read from a profile file (a copy, a model resolved from a
    GGUF): computed every time, nothing kept."""
    monkeypatch.setenv("MAC_LLM_PLANNER_CACHE", str(tmp_path / "cache"))
    _fresh(monkeypatch)
    m, q, t = _inputs(_quant_copies(tmp_path))
    n = iter(range(10))
    assert P.derived("x", (m.model_copy(), q, t), lambda: next(n)) == 0
    assert P.derived("x", (m.model_copy(), q, t), lambda: next(n)) == 1
    monkeypatch.setattr(P, "_STORE", None)
    assert P.derived("x", (m, q, t), lambda: next(n)) == 2
    assert P.derived("x", (m, q, t), lambda: next(n)) == 3


def test_gguf_sizes_from_the_store_are_the_computed_sizes(tmp_path, monkeypatch):
    """The preset sizes a later process reads back are the ones sizing the tensors gives (not recomputed)."""
    from planner import memory

    monkeypatch.setenv("MAC_LLM_PLANNER_CACHE", str(tmp_path / "cache"))
    _fresh(monkeypatch)
    files = _quant_copies(tmp_path)
    m, q, t = _inputs(files)
    want = memory._gguf_weights(m, q, t)
    assert memory.gguf_weights(m, q, t) == want
    P._STORE.save()
    _fresh(monkeypatch)
    monkeypatch.setattr(memory, "_gguf_weights", lambda *a: pytest.fail("sized again despite the store"))
    got = memory.gguf_weights(*_inputs(files))
    assert got == want and got.by_type == want.by_type and 4e9 < got.total_bytes < 6e9  # 8B at ~4.9 bits


def test_the_cache_file_changes_with_any_module_of_the_core(tmp_path, monkeypatch):
    """The fingerprint naming the cache file covers every module of planner/ (values derived by planner/memory.py
    or planner/architecture.py are kept beside the profiles), subpackages included."""
    import types

    core = tmp_path / "planner"
    (core / "engines").mkdir(parents=True)
    for name in ("profiles.py", "memory.py", "architecture.py", "engines/llamacpp.py"):
        (core / name).write_text("x = 1\n", encoding="utf-8")
    monkeypatch.setattr(C, "profiles", types.SimpleNamespace(__file__=str(core / "profiles.py")))
    prints = [C.schema_fingerprint.__wrapped__()]
    for name in ("memory.py", "architecture.py", "engines/llamacpp.py"):
        (core / name).write_text("x = 22\n", encoding="utf-8")
        prints.append(C.schema_fingerprint.__wrapped__())
    assert len(set(prints)) == len(prints)


def test_values_derived_from_files_are_kept_and_see_edits_and_new_files(tmp_path, monkeypatch):
    """A value derived from profile files is read back by a later process without calling compute; an edited,
    added or missing file is a miss."""
    monkeypatch.setenv("MAC_LLM_PLANNER_CACHE", str(tmp_path / "cache"))
    _fresh(monkeypatch)
    files = list(_quant_copies(tmp_path))
    n = iter(range(10))
    assert P.derived_from_files("x", files, lambda: next(n)) == 0
    P._STORE.save()
    _fresh(monkeypatch)  # a new process
    assert P.derived_from_files("x", files, lambda: next(n)) == 0
    files[2].write_text(files[2].read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert P.derived_from_files("x", files, lambda: next(n)) == 1
    assert P.derived_from_files("x", files[:2], lambda: next(n)) == 2  # a file fewer: another key
    assert P.derived_from_files("x", [*files, tmp_path / "gone.yaml"], lambda: next(n)) == 3  # does not stat
    assert P.derived_from_files("x", [*files, tmp_path / "gone.yaml"], lambda: next(n)) == 4


def test_ram_sizes_are_the_chips_sizes_read_back_without_the_chips(tmp_path, monkeypatch):
    """The RAM sizes Macs come in: every chip's ram_options_gb, sorted; a later process reads them from the store
    without loading a chip profile; a user's chip with a new size is counted."""
    monkeypatch.setenv("MAC_LLM_PLANNER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MAC_LLM_PLANNER_USER_PROFILES", str(tmp_path / "user"))
    P.clear_cache()
    _fresh(monkeypatch)
    want = sorted({r for c in P.all_chips() for r in c.ram_options_gb})
    assert P.ram_sizes() == want and {8, 16, 64, 128, 512} <= set(want) and 40 not in want
    P._STORE.save()
    P.clear_cache()
    _fresh(monkeypatch)
    with monkeypatch.context() as m:
        m.setattr(P, "all_chips", lambda: pytest.fail("chips loaded despite the store"))
        assert P.ram_sizes() == want
    chips = tmp_path / "user" / "chips"
    chips.mkdir(parents=True)
    mine = P.load_file(next((PROFILES / "chips").glob("m4-pro*.yaml")), P.Chip)
    (chips / "mine.yaml").write_text(f"id: mine\n{_chip_yaml(mine)}", encoding="utf-8")
    P.clear_cache()
    assert P.ram_sizes() == sorted({*want, 40})
    P.clear_cache()


def _chip_yaml(chip) -> str:
    """The chip's fields as YAML, its RAM options 40 GB only (a size no Mac comes with)."""
    import yaml

    return yaml.safe_dump({**chip.model_dump(mode="json", exclude={"id"}), "ram_options_gb": [40]})
