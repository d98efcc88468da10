"""app.uploads: hostile uploads stay bounded, never raise, and never write outside the private upload folder."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from bounded import EXTRA_BYTES, ROOT, baseline

from app.uploads import MAX_NAME, config_folder, upload_root
from planner.errors import PlannerError
from sources import resolve_model

GOOD = {"model_type": "mistral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000, "max_position_embeddings": 32768}

_CHILD = """
import sys
from pathlib import Path
from app.uploads import config_folder
from planner.errors import PlannerError
from sources import resolve_model
folder = config_folder(Path(sys.argv[1]).read_bytes(), root=Path(sys.argv[2]))
try:
    resolve_model(folder)
except PlannerError as e:
    print(e, file=sys.stderr)
    sys.exit(2)
"""


def _resolve_in_capped_child(data: bytes, tmp_path: Path) -> str:
    src = tmp_path / "upload.json"
    src.write_bytes(data)
    cap = baseline() + EXTRA_BYTES

    def pre():
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    p = subprocess.run([sys.executable, "-c", _CHILD, str(src), str(tmp_path / "up")], cwd=ROOT, capture_output=True,
                       text=True, timeout=60, preexec_fn=pre, check=False)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr
    return p.stderr


def test_billion_layer_upload_is_one_line_within_the_memory_cap(tmp_path):
    bomb = json.dumps({**GOOD, "num_hidden_layers": 10**9, "sliding_window": 4096}).encode()
    assert "num_hidden_layers is 1000000000" in _resolve_in_capped_child(bomb, tmp_path)


def test_deeply_nested_upload(tmp_path):
    deep = b'{"_name_or_path": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert "nested deeper than" in _resolve_in_capped_child(deep, tmp_path)


def test_huge_upload_is_stored_truncated_and_refused(tmp_path):
    big = b'{"model_type": "' + b"x" * (10 * 2**20) + b'"}'
    folder = Path(config_folder(big, root=tmp_path))
    assert (folder / "config.json").stat().st_size == 4 * 2**20 + 1
    with pytest.raises(PlannerError, match="larger than 4 MiB"):
        resolve_model(str(folder))


@pytest.mark.parametrize("name", ["a" * 300, "x/" + "é" * 200, "../../etc", ["list"], {"d": 1}, 12])
def test_odd_names_never_raise(tmp_path, name):
    folder = Path(config_folder(json.dumps({**GOOD, "_name_or_path": name}).encode(), root=tmp_path))
    assert folder.parent.parent == tmp_path and len(folder.name) <= MAX_NAME
    assert resolve_model(str(folder)).source == "folder"


def test_planted_link_does_not_redirect_the_write(tmp_path):
    data = json.dumps({**GOOD, "_name_or_path": "org/model"}).encode()
    root, elsewhere = tmp_path / "up", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (root / hashlib.sha256(data).hexdigest()[:16]).symlink_to(elsewhere)
    config_folder(data, root=root)
    assert list(elsewhere.rglob("*")) == []


def test_default_folder_is_private_and_not_the_shared_temp(tmp_path, monkeypatch):
    monkeypatch.delenv("MAC_LLM_PLANNER_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = upload_root()
    assert not str(root).startswith(tempfile.gettempdir() + os.sep + "mac-llm-planner-uploads")
    folder = Path(config_folder(json.dumps(GOOD).encode()))
    assert folder.is_relative_to(tmp_path / "xdg")
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "config.json").stat().st_mode) == 0o600


def test_uploads_are_pruned(tmp_path):
    from app import uploads

    for i in range(uploads.MAX_UPLOADS + 5):
        config_folder(json.dumps({**GOOD, "vocab_size": 1000 + i}).encode(), root=tmp_path)
    assert len(list(tmp_path.iterdir())) == uploads.MAX_UPLOADS
