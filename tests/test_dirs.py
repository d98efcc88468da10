"""planner.dirs.user_app_dir gives the folder platformdirs gives, without importing it on the plain question's path:
checked against platformdirs' own Unix and macOS classes (both are path rules, so both run on Linux), with the XDG
variable absolute, relative (ignored) and unset."""

from __future__ import annotations

import subprocess
import sys

import pytest
from platformdirs.macos import MacOS
from platformdirs.unix import Unix

from planner import dirs


@pytest.mark.parametrize("kind", ["cache", "config"])
@pytest.mark.parametrize("xdg", [None, "/srv/xdg-{kind}", "relative/xdg"])
@pytest.mark.parametrize("platform", ["linux", "darwin"])
def test_the_user_folder_is_platformdirs_one(monkeypatch, tmp_path, kind, xdg, platform):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    var = f"XDG_{kind.upper()}_HOME"
    if xdg is None:
        monkeypatch.delenv(var, raising=False)
    else:
        monkeypatch.setenv(var, xdg.format(kind=kind))
    monkeypatch.setattr(sys, "platform", platform)
    theirs = (MacOS if platform == "darwin" else Unix)(dirs.APP)
    expected = getattr(theirs, f"user_{kind}_dir")
    assert str(dirs.user_app_dir(kind)) == expected
    assert not (tmp_path / "home").exists()  # a path is computed, nothing is created


def test_the_plain_question_does_not_import_platformdirs(tmp_path):
    """`plan --model llama-3.3-70b --ram 64` answers without importing platformdirs or tempfile (the start-up cost
    this module avoids); the profile cache still lands in the user cache folder."""
    code = ("import sys, io, contextlib\n"
            "sys.argv = ['plan', '--model', 'llama-3.3-70b', '--ram', '64']\n"
            "from cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): rc = main()\n"
            "print(rc, 'platformdirs' in sys.modules, 'tempfile' in sys.modules)\n")
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.split() == ["0", "False", "False"], out.stderr
    assert (tmp_path / "cache" / dirs.APP).is_dir()
