"""The ``skfair`` command's contract: its exit codes, and how every read and write of a user's file fails.

Every subcommand raises :class:`CLIError` with one of the statuses below, reads a
user's file inside :func:`reading` and writes inside :func:`writing`; ``skfair``'s
``main`` prints the message as one line and exits with its status. A failure never
ends in a traceback, and what was printed before it stays printed.
"""

from __future__ import annotations

import contextlib
import csv
import importlib
import os
import shlex
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ._files import write_atomically
from ._optional import MissingDependencyError, require

__all__ = [
    "ALARM",
    "EXIT_CODES",
    "INPUT",
    "MISSING",
    "OK",
    "OUTSIDE",
    "CLIError",
    "mlflow_modules",
    "read",
    "reading",
    "write_output",
    "writing",
]

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

_READERS = {".csv": "csv", ".txt": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet"}
_COMPRESSED = (".gz", ".bz2", ".xz", ".zip", ".zst")


class CLIError(Exception):
    """An error reported to the user as one line, with an exit status (:data:`EXIT_CODES`)."""

    def __init__(self, message: str, status: int = INPUT):
        super().__init__(message)
        self.status = status


def _cause(exc: BaseException) -> str:
    """An exception's message in one line of at most 200 characters (an OSError's reason alone; else its type)."""
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


def mlflow_modules() -> tuple[Any, Any]:
    """Import MLflow and the plugin for ``--mlflow-uri``, or fail with the install hint (status 3), before any work."""
    try:
        # the plugin first: it is light (its names load lazily), MLflow takes seconds; by name, for the
        # library never imports MLflow itself, only the plugin does
        plugin = importlib.import_module("skfair_measures_mlflow")
        mlflow = importlib.import_module("mlflow")
    except ImportError as exc:
        raise CLIError(
            f"--mlflow-uri needs MLflow and the skfair-measures-mlflow plugin ({exc}); install "
            "them with `pip install skfair-measures-mlflow`.",
            MISSING,
        ) from exc
    return mlflow, plugin


# -- reading a user's file of predictions --------------------------------------------
def _format(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in _COMPRESSED:
        suffixes = suffixes[:-1]
    kind = _READERS.get(suffixes[-1] if suffixes else "")
    if kind is None:
        raise CLIError(f"cannot tell the format of {path}: use a .csv, .tsv or .parquet file.")
    return kind


def _read_csv(path: Path, sep: str, text_columns: Sequence[str]) -> Any:
    """Read a CSV; the sensitive and proxy columns as text, with only an empty cell missing.

    pandas would read a zip-code column "01", "1", "02" as the integers 1, 1, 2 (two
    groups instead of three) and a group literally named "NA" or "None" as missing.
    Those columns are therefore read on their own with ``dtype=str`` and without
    pandas' list of missing-value spellings; the other columns keep the defaults (an
    empty or "NA" label marks an unlabeled row).
    """
    import pandas as pd

    try:
        header = pd.read_csv(path, sep=sep, nrows=0).columns
    except pd.errors.EmptyDataError as exc:
        raise CLIError(
            f"{path} is empty: expected a header row naming the columns, then one row per prediction."
        ) from exc
    text = [c for c in dict.fromkeys(text_columns) if c in header]
    data = pd.read_csv(path, sep=sep, usecols=lambda c: c not in text)
    if text:
        groups = pd.read_csv(path, sep=sep, usecols=text, dtype=str, keep_default_na=False, na_values=[""])
        data = pd.concat([data, groups], axis=1)[list(header)]
    return data


#: Delimiters a CSV is sniffed for, and how many bytes of it are read to guess.
_SEPARATORS = ",;\t|"
_SNIFF_BYTES = 64 * 1024


def _sniff_sep(path: Path, default: str) -> str:
    """The delimiter of a CSV, guessed from its first lines (``default`` when no guess is consistent)."""
    with path.open(encoding="utf-8", errors="replace", newline="") as f:
        sample = f.read(_SNIFF_BYTES)
    if len(sample) == _SNIFF_BYTES and "\n" in sample:
        sample = sample[: sample.rindex("\n")]  # whole lines only
    try:
        return csv.Sniffer().sniff(sample, delimiters=_SEPARATORS).delimiter
    except csv.Error:
        return default


def read(path: str, text_columns: Sequence[str] = (), sep: str | None = None) -> Any:
    """Read a CSV, TSV or Parquet file; a CSV's delimiter is ``sep``, or else sniffed."""
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise CLIError(f"no such file: {path}")
    kind = _format(p)
    if sep is not None and len(sep.encode()) != 1 and sep != r"\t":
        raise CLIError(f"--sep {shlex.quote(sep)}: pass one character, e.g. --sep ';' (or --sep '\\t' for a tab).")
    if kind == "parquet":
        require("pyarrow", f"reading the Parquet file {path}")
    with reading(path):
        if kind == "parquet":
            data = pd.read_parquet(p)
        else:
            default = "\t" if kind == "tsv" else ","
            delimiter = "\t" if sep == r"\t" else sep or _sniff_sep(p, default)
            data = _read_csv(p, delimiter, text_columns)
    if data.empty:
        raise CLIError(f"{path} has a header ({', '.join(map(str, data.columns))}) but no rows.")
    return data
