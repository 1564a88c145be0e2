"""The ``skfair`` command's contract: its exit codes, and how every read and write of a user's file fails.

Every subcommand raises :class:`CLIError` with one of the statuses below, reads a
user's file inside :func:`reading` and writes inside :func:`writing`; ``skfair``'s
``main`` prints the message as one line and exits with its status. A failure never
ends in a traceback, and what was printed before it stays printed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from ._files import write_atomically
from ._optional import MissingDependencyError

__all__ = ["ALARM", "EXIT_CODES", "INPUT", "MISSING", "OK", "OUTSIDE", "CLIError", "reading", "write_output", "writing"]

OK, ALARM, INPUT, MISSING, OUTSIDE = 0, 1, 2, 3, 4

#: The one table of exit codes, as ``skfair --help`` and docs/cli.md state it.
EXIT_CODES = {
    OK: "success",
    ALARM: "an alarm or a failed verdict, only under a --fail-on-* flag",
    INPUT: "bad usage or bad input (a flag, a column, a file that cannot be read)",
    MISSING: "a missing optional dependency (the message names the extra to install)",
    OUTSIDE: "an outside service failed (MLflow) or an output could not be written (--html, --json, --state, --out)",
}
EPILOG = "exit status:\n" + "\n".join(f"  {code}  {text}" for code, text in EXIT_CODES.items())


class CLIError(Exception):
    """An error reported to the user as one line, with an exit status (:data:`EXIT_CODES`)."""

    def __init__(self, message: str, status: int = INPUT):
        super().__init__(message)
        self.status = status


def _cause(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


@contextlib.contextmanager
def _failing(path: str | os.PathLike, flag: str, verb: str, caught: type[Exception], status: int) -> Iterator[None]:
    """Turn a ``caught`` error into one line naming the flag, the path and the cause; ours pass through."""
    try:
        yield
    except (CLIError, MissingDependencyError):
        raise
    except caught as exc:  # any reader's error (pandas, pyarrow, DuckDB, json), or a writer's OSError: one line
        where = f"{flag} {os.fspath(path)}" if flag else os.fspath(path)
        raise CLIError(f"{where}: cannot {verb} it ({_cause(exc)})", status) from exc


def reading(path: str | os.PathLike, flag: str = "") -> contextlib.AbstractContextManager[None]:
    r"""Turn any failure to read a user's file into one line naming the flag, the path and the cause (status 2).

    A :class:`CLIError` or a missing optional dependency passes through unchanged.

    Examples
    --------
    >>> try:
    ...     with reading("x.csv", "--state"):
    ...         raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
    ... except CLIError as exc:
    ...     print(exc, exc.status)
    --state x.csv: cannot read it ('utf-8' codec can't decode byte 0xff in position 0: invalid start byte) 2
    """
    return _failing(path, flag, "read", Exception, INPUT)


def writing(path: str | os.PathLike, flag: str) -> contextlib.AbstractContextManager[None]:
    """Turn a failure to write an output into one line naming the flag, the path and the cause (status 4).

    Examples
    --------
    >>> try:
    ...     with writing("/dev/full", "--json"), open("/dev/full", "w") as f:
    ...         _ = f.write("x")
    ... except CLIError as exc:
    ...     print(exc, exc.status)
    --json /dev/full: cannot write it (No space left on device) 4
    """
    return _failing(path, flag, "write", OSError, OUTSIDE)


def write_output(path: str | os.PathLike, flag: str, data: str | bytes) -> None:
    """Write an output whole or not at all (:func:`write_atomically`); a failure is one line naming ``flag`` (status 4).

    Examples
    --------
    >>> try:
    ...     write_output("/dev/full", "--json", "{}")
    ... except CLIError as exc:
    ...     print(exc, exc.status)
    --json /dev/full: cannot write it (No space left on device) 4
    """
    with writing(path, flag):
        write_atomically(path, data)
