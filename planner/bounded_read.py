"""The one bounded reader of files a user names or drops in their config folder (model files, profiles, price
lists, traces): a FIFO, device or folder is refused without blocking (opening a FIFO for reading waits for a
writer forever; /dev/zero never ends) and at most ``cap`` bytes are read. sources/bounds.py wraps it for model
files; planner.profiles for profile YAMLs; the CLI for the price list and the request trace. Standard library only.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO

from .errors import PlannerError

MiB = 2**20
MAX_PROFILE_BYTES = 4 * MiB    # the largest shipped profile YAML is under 40 KiB
MAX_TABLE_BYTES = 16 * MiB     # price list / request trace CSVs: ~300,000 rows of a trace


def open_regular(path: Path | str, source: str | None = None, error: type[PlannerError] = PlannerError,
                 fix: str = "point at a regular file") -> IO[bytes]:
    """Open a regular file for reading without blocking; anything else raises ``error`` (one line)."""
    src = source or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise error(f"{src}: cannot read ({e.strerror or e.__class__.__name__}); check the path") from None
    except ValueError:  # an embedded NUL
        raise error(f"{src}: cannot read (not a valid path); check the path") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{src}: not a regular file (a FIFO, device or folder); {fix}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(path: Path | str, cap: int, source: str | None = None, what: str = "file",
                error: type[PlannerError] = PlannerError, fix: str = "point at a regular file") -> bytes:
    """The bytes of a regular file of at most ``cap`` bytes; larger files are refused after reading cap + 1."""
    src = source or str(path)
    with open_regular(path, src, error, fix) as f:
        try:
            data = f.read(cap + 1)
        except OSError as e:
            raise error(f"{src}: cannot read ({e.strerror or e.__class__.__name__}); check the path") from None
    if len(data) > cap:
        raise error(f"{src}: {what} larger than {cap // MiB} MiB; is this the right file?")
    return data


def read_text_capped(path: Path | str, cap: int, source: str | None = None, what: str = "file",
                     error: type[PlannerError] = PlannerError, fix: str = "point at a regular file") -> str:
    """read_capped, decoded as UTF-8 (binary data is one line too)."""
    src = source or str(path)
    try:
        return read_capped(path, cap, src, what, error, fix).decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{src}: not a UTF-8 text {what} (binary data); is this the right file?") from None
