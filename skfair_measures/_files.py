"""Whole-or-nothing writes and bounded reads of a user's files, shared by the monitor's state and the CLI's outputs."""

from __future__ import annotations

import errno
import os
import stat
import tempfile

__all__ = ["read_text", "write_atomically"]


def _regular_or_absent(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True


def write_atomically(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all: a temporary file in the same folder, then renamed over it.

    A crash or a full disk leaves the previous file whole. A path that is not a regular file (``/dev/stdout``, a
    FIFO, ``/dev/full``) is written in place, never replaced. An ``OSError`` names ``path``, not the temporary file.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
    >>> write_atomically(path, "whole")
    >>> path.read_text()
    'whole'
    """
    path = os.fspath(path)
    mode, kw = ("wb", {}) if isinstance(data, bytes) else ("w", {"encoding": "utf-8"})
    tmp = None
    try:
        if not _regular_or_absent(path):
            with open(path, mode, **kw) as f:
                f.write(data)
            return
        folder = os.path.dirname(path) or "."
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}-", suffix=".tmp", dir=folder)
        with os.fdopen(fd, mode, **kw) as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        exc.filename, exc.filename2 = path, None
        raise
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def read_text(path: str | os.PathLike) -> str:
    """The text of the regular file ``path``; anything else (a device, a FIFO, a folder) is refused, never read.

    ``/dev/zero`` or ``/dev/full`` would otherwise be read without end.

    Examples
    --------
    >>> read_text("/dev/zero")
    Traceback (most recent call last):
    ...
    OSError: [Errno 22] not a regular file: '/dev/zero'
    """
    path = os.fspath(path)
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise OSError(errno.EINVAL, "not a regular file", path)
    with open(path, encoding="utf-8") as f:
        return f.read()
