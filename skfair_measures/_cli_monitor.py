"""``skfair monitor``: run a fairness monitor over a folder of Parquet files or a DuckDB table, resuming from its state.

Batches: each Parquet file of the folder (in name order), or, with ``--time-column``,
each period (``--every day``) of the rows of all files or of a DuckDB table. The counts
are computed by DuckDB. The state file holds the counts, the sequences and the batches
already done; it is written after every batch (atomically), so a run that stops loses
nothing it printed, and the next run goes on from there. Prints one line per batch and
the alarms. Exit status (:mod:`._cli_contract`): 0, or 1 with ``--fail-on-alarm`` when a
measure is in alarm; 2 for a file that cannot be read (a corrupt Parquet file, a state
file that is not one) or a batch refused; 3 without DuckDB; 4 when the state cannot be
written (the batches before it are saved).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ._cli_contract import CLIError, reading, writing
from ._optional import require

__all__ = ["add_parser", "run"]

_PERIODS = ("hour", "day", "week", "month")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``monitor`` command to the ``skfair`` parser's subparsers."""
    p = subparsers.add_parser(
        "monitor",
        help="monitor disparities over batches of a prediction log (anytime-valid alarms)",
        description=(
            "Feed the batches of a prediction log (the Parquet files of a folder, or the periods of a time column) "
            "to a fairness monitor saved in --state, and print its running table and alarms."
        ),
    )
    p.add_argument("source", help="a folder of Parquet files, or a DuckDB database file with --table")
    p.add_argument("--state", required=True, metavar="FILE", help="the monitor's state (JSON); created if absent")
    p.add_argument("--measures", nargs="+", metavar="KEY", help="measure keys (needed to create the state)")
    p.add_argument("--eps", type=float, help="the tolerance (needed to create the state)")
    p.add_argument(
        "--prob", type=float, default=0.95, help="level: false alarms have probability at most 1 - PROB (default: 0.95)"
    )
    p.add_argument("--alpha", type=float, help=argparse.SUPPRESS)  # the level's old name, refused naming the fix
    p.add_argument("--window", default="10", help="windowed value: steps, or a span such as 7D (default: 10)")
    p.add_argument("--sensitive", nargs="+", required=True, metavar="COL", help="group column(s)")
    p.add_argument("--prediction", default="prediction", metavar="COL", help="predictions (default: prediction)")
    p.add_argument("--label", metavar="COL", help="true labels (without it: label-free measures only)")
    p.add_argument("--time-column", metavar="COL", help="batch by periods of this column instead of by file")
    p.add_argument(
        "--missing-time",
        choices=("error", "skip"),
        default="error",
        help="rows whose --time-column is empty: error (default) or skip them with a warning giving their count",
    )
    p.add_argument("--every", choices=_PERIODS, default="day", help="the period with --time-column (default: day)")
    p.add_argument("--table", metavar="NAME", help="a table of the DuckDB database SOURCE (needs --time-column)")
    p.add_argument("--fail-on-alarm", action="store_true", help="exit 1 when a measure is in alarm")
    return p


def _open_monitor(args: argparse.Namespace) -> Any:
    from .monitor import FairnessMonitor

    if args.alpha is not None:
        raise CLIError(f"--alpha is now --prob, the level: pass --prob {1 - args.alpha:g} (1 - ALPHA).")
    if os.path.exists(args.state):
        with reading(args.state, "--state"):
            try:
                return FairnessMonitor.load(args.state)
            except ValueError as exc:  # names the file and what is wrong with it
                raise CLIError(f"--state: {exc}") from None
    if not args.measures or args.eps is None:
        raise CLIError(f"--state {args.state} does not exist yet; pass --measures and --eps to start a monitor.")
    window = int(args.window) if args.window.isdigit() else args.window
    try:
        return FairnessMonitor(args.measures, eps=args.eps, prob=args.prob, window=window)
    except (TypeError, ValueError, KeyError) as exc:
        raise CLIError(str(exc)) from None


def _batches(args: argparse.Namespace, mon: Any) -> Any:
    """``(name, time, relation)`` of every batch not done yet, in order."""
    duckdb = require("duckdb", "skfair monitor (it reads the batches with DuckDB)")

    done = mon.meta.setdefault("done", [])
    source = Path(args.source)
    if args.table:
        if args.time_column is None:
            raise CLIError("--table needs --time-column: a table is batched by the periods of a time column.")
        with reading(source):
            rel = duckdb.connect(str(source), read_only=True).table(args.table)
    elif source.is_dir():
        files = sorted(str(f) for f in source.glob("*.parquet"))
        if not files:
            raise CLIError(f"{args.source} holds no .parquet file.")
        if args.time_column is None:
            for f in files:
                if Path(f).name not in done:
                    with reading(f):
                        rel = duckdb.read_parquet(f)
                    yield f, None, rel
            return
        with reading(args.source):
            rel = duckdb.read_parquet(files)
    else:
        raise CLIError(f"{args.source} is not a folder (for a DuckDB database, pass --table).")
    col = args.time_column
    if col not in rel.columns:
        raise CLIError(f"--time-column {col!r} is not a column; the columns are {rel.columns}.")
    period = f"date_trunc('{args.every}', \"{col}\")"
    last = mon.meta.get("last_period")
    with reading(args.source):
        bounds = rel.aggregate(f"{period} AS p, count(*) AS n").order("p").fetchall()
    empty = sum(n for start, n in bounds if start is None)
    if empty and args.missing_time == "error":
        raise CLIError(
            f"--time-column {col}: {empty} of {sum(n for _, n in bounds)} rows have no time; fill them, or pass "
            "--missing-time skip to leave them out."
        )
    if empty:
        sys.stderr.write(f"skfair monitor: warning: --time-column {col}: {empty} rows have no time; left out.\n")
    counted = mon.meta.setdefault("period_rows", {})
    late = {str(p): n - counted[str(p)] for p, n in bounds if str(p) in counted and n > counted[str(p)]}
    if late:  # rows of a period done already: the monitor's batches come in time order, so they stay out
        sys.stderr.write(
            f"skfair monitor: warning: {sum(late.values())} rows arrived for periods monitored already "
            f"({', '.join(list(late)[:3])}{' ...' if len(late) > 3 else ''}); left out (batches come in time order).\n"
        )
    for start, n in bounds:
        if start is None or (last is not None and str(start) <= last):
            continue
        counted[str(start)] = n
        yield str(start), start, rel.filter(f"{period} = TIMESTAMP '{start}'")


def _line(step: int, name: str, status: Any) -> str:
    parts = [
        f"{key}={row['value']:.3f} [{row['lower']:.3f}, {row['upper']:.3f}]{' ALARM' if row['alarm'] else ''}"
        for key, row in status.iterrows()
    ]
    return f"{step:>5}  {name}  " + "  ".join(parts)


def run(args: argparse.Namespace) -> int:
    """Run ``skfair monitor``."""
    mon = _open_monitor(args)
    n = 0
    for name, start, rel in _batches(args, mon):
        with reading(name if start is None else args.source):  # a corrupt file fails here, in DuckDB
            try:
                mon.update(args.prediction, sensitive_features=args.sensitive, y_true=args.label, data=rel, time=start)
            except (TypeError, ValueError, KeyError) as exc:
                raise CLIError(f"batch {name}: {exc}") from None
        if start is None:
            name = Path(name).name
            mon.meta["done"].append(name)
        else:
            mon.meta["last_period"] = name
        with writing(args.state, "--state"):
            mon.save(args.state)
        sys.stdout.write(_line(mon.step, name, mon.status()) + "\n")
        n += 1
    status = mon.status()
    sys.stdout.write(f"{n} new batch(es); {mon.step} in all; state in {args.state}\n")
    alarms = status[status["alarm"].fillna(False).astype(bool)]
    for key, row in alarms.iterrows():
        e = row.get("alarm_e_value")
        evidence = "" if e is None or e != e else f" with e-value {e:.3g}, now {row['e_value']:.3g}"
        sys.stdout.write(
            f"ALARM {key}: beyond eps={row['eps']:g} since step {int(row['changed_since'])} "
            f"(raised at step {int(row['alarm_step'])}{evidence}; an alarm stays raised)\n"
        )
    return 1 if args.fail_on_alarm and len(alarms) else 0
