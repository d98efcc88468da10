"""Every shipped profile validates; corrupt or hostile user profiles give one clear line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cli.main import main
from planner import profiles as P
from planner.errors import ProfileError
from planner.schema import (
    Chip,
    CpuMemory,
    GgmlTypeTable,
    MacOS,
    MacProduct,
    ModelProfile,
    QuantFormat,
    Runtime,
    ServingApp,
    SpeculativePairs,
    VisionFamily,
)

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ROOT / "profiles"
ALL_FILES = sorted(PROFILES.rglob("*.yaml"))
CLASSES = {"chips": Chip, "macs": MacProduct, "macos": MacOS, "models": ModelProfile, "quants": QuantFormat,
           "runtimes": Runtime, "serving": ServingApp,
           "hardware": CpuMemory, "speculative": SpeculativePairs,
           "vision": VisionFamily}


try:  # speed calibration constants (planner/schema.py, added by the speed work)
    from planner.schema import CalibrationProfile

    CLASSES["calibration"] = CalibrationProfile
except ImportError:  # pragma: no cover
    pass
try:  # workload presets (planner/workload.py)
    from planner.workload import WorkloadProfile

    CLASSES["workloads"] = WorkloadProfile
except ImportError:  # pragma: no cover
    pass


def _cls(path: Path):
    if path.name == "ggml-types.yaml":
        return GgmlTypeTable
    if path.name == "ssd-read.yaml":  # planner/streaming.py
        from planner.streaming import SSDTable

        return SSDTable
    if path.name == "power.yaml":  # planner/power.py
        from planner.power import PowerTable

        return PowerTable
    if path.name == "fanless.yaml":  # planner/fanless.py
        from planner.fanless import FanlessTable

        return FanlessTable
    if path.name == "bf16.yaml":  # planner/bf16.py
        from planner.bf16 import Bf16Table

        return Bf16Table
    return CLASSES.get(path.relative_to(PROFILES).parts[0])


def test_profile_tree_is_not_empty():
    kinds = {p.relative_to(PROFILES).parts[0] for p in ALL_FILES}
    assert {"chips", "macs", "macos", "models", "quants", "runtimes"} <= kinds
    assert len(ALL_FILES) > 150


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: str(p.relative_to(PROFILES)))
def test_every_profile_validates(path):
    cls = _cls(path)
    if cls is None:  # a kind whose schema is not in planner yet: at least a mapping with id == file name
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert isinstance(doc, dict) and doc.get("id") == path.stem, path
        return
    obj = P.load_file(path, cls)
    assert obj.id == path.stem


def test_loader_api_sees_every_profile():
    assert len(P.all_models()) == len(list((PROFILES / "models").rglob("*.yaml")))
    assert len(P.all_chips()) == len(list((PROFILES / "chips").rglob("*.yaml")))
    assert len(P.all_macs()) == len(list((PROFILES / "macs").rglob("*.yaml")))
    assert len(P.all_runtimes()) == len(list((PROFILES / "runtimes").rglob("*.yaml")))
    assert P.ggml_types().types


# --------------------------------------------------------------------------- hostile user profiles
GOOD_MODEL = yaml.safe_load((PROFILES / "models" / "llama-3.1-8b.yaml").read_text())
GOOD_CHIP = yaml.safe_load((PROFILES / "chips" / "m3-max-40gpu.yaml").read_text())


def _model(**over) -> str:
    d = {**GOOD_MODEL, "id": "mine", "aliases": [], "hf_repo": None}
    cfg = {**d["config"], **over.pop("config", {})}
    d.update(over)
    d["config"] = cfg
    return yaml.safe_dump(d, sort_keys=False)


def _bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


HOSTILE_MODELS: dict[str, bytes | str] = {
    "bad-yaml": "id: mine\nname: [unclosed\n",
    "bad-yaml-tabs": "id: mine\n\tname: x\n",
    "empty": "",
    "just-null": "null\n",
    "a-list": "- 1\n- 2\n",
    "a-scalar": "42\n",
    "wrong-type-hidden": _model(config={"hidden_size": "big"}),
    "wrong-type-layers-list": _model(config={"num_hidden_layers": [1, 2]}),
    "wrong-type-params": _model(params_b={"a": 1}),
    "wrong-type-date": _model(verified="yesterday"),
    "negative-heads": _model(config={"num_attention_heads": -8}),
    "zero-vocab": _model(config={"vocab_size": 0}),
    "extra-top-key": _model(evil="rm -rf /"),
    "extra-config-key": _model(config={"rope_scaling_nonsense": 3}),
    "missing-config": yaml.safe_dump({k: v for k, v in GOOD_MODEL.items() if k != "config"} | {"id": "missing-config"}),
    "missing-sources": yaml.safe_dump({k: v for k, v in GOOD_MODEL.items() if k != "sources"}
                                      | {"id": "missing-sources"}),
    "id-not-filename": _model(id="someone-else"),
    "huge-layers": _model(config={"num_hidden_layers": 10**12}),
    "huge-hidden": _model(config={"hidden_size": 10**30}),
    "huge-vocab": _model(config={"vocab_size": 10**40}),
    "huge-context": _model(config={"max_position_embeddings": 10**300}),
    "huge-params": _model(params_b=1e400),
    "nan-params": _model(params_b=float("nan")),
    "inf-window": _model(config={"sliding_window": float("inf")}),
    "huge-experts": _model(config={"num_experts": 10**9, "num_experts_per_tok": 8}),
    "huge-mlp-only-layers": _model(config={"mlp_only_layers": [10**15]}),
    "layer-types-mismatch": _model(config={"layer_types": ["full_attention"] * 3}),
    "unknown-arch": _model(config={"model_type": "totally_new_arch"}),
    "moe-without-topk": _model(config={"num_experts": 8}),
    "yaml-bomb": _bomb(),
    "yaml-bomb-in-field": _bomb() + _model().replace("aliases: []", "aliases: *a8"),
    "deep-nesting": "id: " + "[" * 5000 + "]" * 5000 + "\n",
    "deep-mapping": "id: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n",
    "python-tag": "!!python/object/apply:os.system ['echo pwned']\n",
    "binary-junk": bytes(range(256)) * 8,
    "invalid-utf8": b"id: mine\nname: \xff\xfe\xfa\n",
    "nul-bytes": b"id: mine\x00\x00\nname: x\n",
    "utf16-bom": "id: mine\n".encode("utf-16"),
    "long-line": "id: " + "x" * 2_000_000 + "\n",
    "unicode-garbage": "id: 💣\nname: \u202e\u0000\n",
    "duplicate-keys": "id: mine\nid: other\n",
    "anchor-cycle": "&a [*a]\n",
}


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    d = tmp_path / "user-profiles"
    (d / "models").mkdir(parents=True)
    (d / "chips").mkdir()
    monkeypatch.setenv("MAC_LLM_PLANNER_USER_PROFILES", str(d))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    P.clear_cache()
    yield d
    P.clear_cache()


def _write(path: Path, content: bytes | str) -> None:
    # hostile files are written with id 'mine'; make the id match the file name so the content itself is tested
    if isinstance(content, str):
        content = content.replace("id: mine\n", f"id: {path.stem}\n")
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)


def _assert_one_line_exit_2(capsys, argv, needle: str):
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, (argv, rc, out[-300:], err[-300:])
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err[:500]
    assert needle in lines[0], lines[0][:300]
    assert len(lines[0]) < 2000  # never echo a whole hostile file
    return lines[0]


@pytest.mark.parametrize("name", sorted(HOSTILE_MODELS))
def test_hostile_user_model_file(user_dir, capsys, name):
    _write(user_dir / "models" / f"{name}.yaml", HOSTILE_MODELS[name])
    if name == "unknown-arch":  # a valid file; the architecture is refused when planning, never treated as a Llama
        assert P.load_model(name).config.model_type == "totally_new_arch"
    else:
        with pytest.raises(ProfileError):
            P.load_model(name)
    P.clear_cache()
    line = _assert_one_line_exit_2(capsys, ["--model", name, "--ram", "64"], "plan: error:")
    if name != "unknown-arch":
        assert f"{name}.yaml" in line


@pytest.mark.parametrize("name", ["bad-yaml", "huge-gpu", "extra", "id-mismatch", "binary", "bomb", "neg-ram"])
def test_hostile_user_chip_file(user_dir, capsys, name):
    content = {
        "bad-yaml": "id: {\n",
        "huge-gpu": yaml.safe_dump({**GOOD_CHIP, "id": "huge-gpu", "gpu_cores": 10**9}),
        "extra": yaml.safe_dump({**GOOD_CHIP, "id": "extra", "backdoor": True}),
        "id-mismatch": yaml.safe_dump({**GOOD_CHIP, "id": "m3-max-40gpu"}),
        "binary": bytes(range(255, -1, -1)) * 4,
        "bomb": _bomb(),
        "neg-ram": yaml.safe_dump({**GOOD_CHIP, "id": "neg-ram", "ram_options_gb": [-64]}),
    }[name]
    _write(user_dir / "chips" / f"{name}.yaml", content)
    _assert_one_line_exit_2(capsys, ["--model", "llama-3.1-8b", "--chip", name], f"{name}.yaml")


def test_valid_user_model_is_used(user_dir, capsys):
    _write(user_dir / "models" / "mine.yaml", _model())
    assert P.load_model("mine").id == "mine"
    P.clear_cache()
    assert main(["--model", "mine", "--ram", "64", "--json"]) == 0
    assert '"id": "mine"' in capsys.readouterr().out


def test_a_directory_named_like_a_profile(user_dir, capsys):
    (user_dir / "models" / "adir.yaml").mkdir()
    _assert_one_line_exit_2(capsys, ["--model", "adir", "--ram", "64"], "adir.yaml")


N_CORRUPT_FILES = len(HOSTILE_MODELS) + 7 + 1  # reported in docs/invariants.md


# --------------------------------------------------------------------------- runtime union
def _runtime_doc(name: str) -> dict:
    return yaml.safe_load((PROFILES / "runtimes" / f"{name}.yaml").read_text(encoding="utf-8"))


def test_runtime_kind_picks_the_schema():
    from planner.schema import LlamaCppFamily, LlamaCppRuntime, MlxRuntime, MlxWrapperRuntime, WrapperRuntime

    kinds = {r.id: type(r) for r in P.all_runtimes()}
    assert kinds == {"llama.cpp": LlamaCppRuntime, "mlx-lm": MlxRuntime, "ollama": WrapperRuntime,
                     "lmstudio-llama.cpp": WrapperRuntime, "lmstudio-mlx": MlxWrapperRuntime,
                     "mlx-vlm": MlxWrapperRuntime}
    lms_mlx = P.load_runtime("lmstudio-mlx")
    assert isinstance(lms_mlx, MlxRuntime) and lms_mlx.family == "mlx-lm" and lms_mlx.wraps == "mlx-lm"
    ollama = P.load_runtime("ollama")
    assert isinstance(ollama, LlamaCppFamily) and ollama.family == "llama.cpp" and ollama.wraps == "llama.cpp"
    # the chunk rule reads the engine's own field: -ub for llama.cpp, prefill_step_size for mlx-lm
    assert P.load_runtime("llama.cpp").prefill_chunk == 512 and P.load_runtime("mlx-lm").prefill_chunk == 2048


@pytest.mark.parametrize("name,drop", [("llama.cpp", "n_ubatch"), ("llama.cpp", "ctx_pad"), ("ollama", "wraps"),
                                       ("lmstudio-mlx", "wraps"),
                                       ("mlx-lm", "kv_step"), ("mlx-lm", "activation_bytes")])
def test_runtime_fields_are_required_for_their_kind(tmp_path, name, drop):
    doc = _runtime_doc(name)
    del doc[drop]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(ProfileError, match=drop):
        P.load_file(path, Runtime)


def test_runtime_rejects_fields_of_another_kind(tmp_path):
    doc = _runtime_doc("mlx-lm") | {"n_ubatch": 512}
    path = tmp_path / "mlx-lm.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(ProfileError, match="n_ubatch"):
        P.load_file(path, Runtime)


def test_yaml_files_is_sorted_rglob(tmp_path):
    """The scandir walk finds what ``sorted(folder.rglob('*.yaml'))`` finds, in its order (which file wins when
    two share a stem): nested folders, a folder named *.yaml, hidden files, case, and a symlinked folder."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.yaml").write_text("")
    (tmp_path / "a-b.yaml").write_text("")
    (tmp_path / "a.yaml").mkdir()
    (tmp_path / "a.yaml" / "x.yaml").write_text("")
    (tmp_path / ".hidden.yaml").write_text("")
    (tmp_path / "B.yaml").write_text("")
    (tmp_path / "c.YAML").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "a", target_is_directory=True)
    found = P.yaml_files(tmp_path)
    assert found == sorted(tmp_path.rglob("*.yaml"))
    assert [p.relative_to(tmp_path).as_posix() for p in found] == [
        ".hidden.yaml", "B.yaml", "a/x.yaml", "a-b.yaml", "a.yaml", "a.yaml/x.yaml"]
    for kind in ("models", "quants", "chips"):
        assert P.yaml_files(PROFILES / kind) == sorted((PROFILES / kind).rglob("*.yaml"))


def test_the_index_is_the_paths_by_stem(tmp_path, monkeypatch):
    """_files gives Path objects: the id -> path mapping of the stems of yaml_files (a later file with the same stem
    wins, user files after built-ins)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.yaml").write_text("")
    (tmp_path / "x.yaml").write_text("")
    (tmp_path / "v1.2.yaml").write_text("")
    (tmp_path / ".yaml").write_text("")
    monkeypatch.setenv("MAC_LLM_PLANNER_PROFILES", str(tmp_path.parent))
    monkeypatch.delenv("MAC_LLM_PLANNER_USER_PROFILES", raising=False)
    monkeypatch.setattr(P, "user_dir", lambda: None)
    idx = P._files(tmp_path.name)
    want = {p.stem: p for p in P.yaml_files(tmp_path)}
    assert dict(idx) == want and list(idx) == list(want) and len(idx) == len(want)
    assert idx["x"] == tmp_path / "x.yaml" and isinstance(idx["v1.2"], Path) and ".yaml" in idx
    assert "nope" not in idx and idx.get("nope") is None
    for kind in ("models", "quants", "chips"):
        monkeypatch.setenv("MAC_LLM_PLANNER_PROFILES", str(PROFILES))
        assert dict(P._files(kind)) == {p.stem: p for p in P.yaml_files(PROFILES / kind)}
