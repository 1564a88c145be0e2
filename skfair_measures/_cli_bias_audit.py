"""``skfair bias-audit``: the bias audit of NYC Local Law 144, by :func:`skfair_measures.audits.bias_audit`.

Reads a CSV/TSV/Parquet file, or a prediction log (a folder of Parquet files, or any of the
files with ``--time-column`` and a window ``--since``/``--until``), writes ``sex.csv``,
``race_ethnicity.csv``, ``intersectional.csv``, ``summary.json`` and ``bias_audit.html`` to
``--out``, and prints the categories whose impact ratio is under 0.8. Exit status: 0; 1 with
``--fail-on-below`` when a category's whole interval is under 0.8; 2 for bad flags or input;
3 when ``--mlflow-uri`` needs MLflow or the plugin and it is not installed; 4 when writing
``--out`` or logging to MLflow failed (the files written before MLflow are kept).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._cli_contract import OUTSIDE, CLIError, mlflow_modules, read, writing

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``bias-audit`` command to the ``skfair`` parser's subparsers."""
    p = subparsers.add_parser(
        "bias-audit",
        help="the NYC Local Law 144 bias audit: impact ratios by sex, race/ethnicity and both",
        description=(
            "Selection or scoring rates and impact ratios by sex, race/ethnicity and their intersection "
            "(6 RCNY 5-301), each impact ratio with an interval and a verdict against 0.8, Fisher's exact test, "
            "the two-standard-deviation rule and the practical-significance check; writes the tables, "
            "summary.json and a publishable HTML page to --out."
        ),
    )
    p.add_argument("data", help="CSV (.csv, .tsv, .txt) or Parquet file, or a folder of Parquet files (a log)")
    p.add_argument("--sex", required=True, metavar="COL", help="the sex column (empty: unknown)")
    p.add_argument("--race-ethnicity", required=True, metavar="COL", help="the race/ethnicity column (empty: unknown)")
    rate = p.add_mutually_exclusive_group(required=True)
    rate.add_argument("--selected", metavar="COL", help="0/1 column: selected to move forward (selection rates)")
    rate.add_argument("--score", metavar="COL", help="numeric score column (scoring rates: above the median)")
    p.add_argument("--exclude-below", type=float, metavar="SHARE", help="exclude categories under SHARE (<= 0.02)")
    p.add_argument("--groups", metavar="COL", help="repeat the tables per group of this column")
    p.add_argument("--unknown", nargs="+", default=[], metavar="VALUE", help="values meaning unknown")
    p.add_argument("--prob", type=float, default=0.95, help="level of the intervals (default: 0.95)")
    p.add_argument("--source", metavar="TEXT", help="the data source for the summary (default: DATA's name)")
    p.add_argument("--distribution-date", metavar="DATE", help="the date the tool was first distributed")
    p.add_argument("--time-column", metavar="COL", help="audit the rows of a window of this time column")
    p.add_argument("--since", metavar="TIME", help="the window's start (included), e.g. 2025-01-01")
    p.add_argument("--until", metavar="TIME", help="the window's end (excluded), e.g. 2026-01-01")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the CSV files, summary.json and the page")
    p.add_argument("--mlflow-uri", metavar="URI", help="also log the audit to this MLflow tracking server")
    p.add_argument("--fail-on-below", action="store_true", help="exit 1 when an impact ratio is surely under 0.8")
    return p


def run(args: argparse.Namespace, *, flagged: Callable[[str], str]) -> int:
    """Run ``skfair bias-audit`` (``flagged``: a library message said in flags, from :mod:`skfair_measures.cli`)."""
    from .audits import bias_audit, bias_audit_log

    log = mlflow_modules()[1].log_bias_audit if args.mlflow_uri else None  # fail before any work
    names = ("sex", "race_ethnicity", "selected", "score", "groups", "exclude_below", "prob", "unknown")
    kw = {k: getattr(args, k) for k in (*names, "distribution_date")} | {"source": args.source or Path(args.data).name}
    try:
        if args.time_column or Path(args.data).is_dir():
            audit = bias_audit_log(args.data, time=args.time_column, start=args.since, end=args.until, **kw)
        elif args.since or args.until:
            raise CLIError("--since and --until need --time-column: the column whose values make the window.")
        else:
            audit = bias_audit(read(args.data, [c for c in (args.sex, args.race_ethnicity, args.groups) if c]), **kw)
    except (KeyError, ValueError, TypeError, FileNotFoundError) as exc:
        raise CLIError(flagged(str(exc.args[0] if exc.args else exc))) from None
    with writing(args.out, "--out"):
        paths = audit.write(args.out)
    for name, t in audit.tables.items():
        below = t.loc[t["verdict"] == "below", "category"].tolist()
        flags = t.loc[t["four_fifths_flag"].fillna(False), "category"].tolist()
        sys.stdout.write(
            f"{name}: {len(t)} categories; four-fifths flags: {flags or 'none'}; below 0.8: {below or 'none'}\n"
        )
    sys.stdout.write(f"unknown: {audit.summary['unknown']}; wrote {', '.join(p.name for p in paths)} to {args.out}\n")
    if log is not None:
        with warnings.catch_warnings(record=True) as caught:  # the plugin warns once, bounded in time
            warnings.simplefilter("always")
            run_id = log(audit, tracking_uri=args.mlflow_uri)
        if run_id is None:
            why = "; ".join(str(w.message) for w in caught) or "the tracking server failed"
            message = f"--mlflow-uri {args.mlflow_uri}: could not log the audit ({why}); the files are kept."
            raise CLIError(message, OUTSIDE)
        sys.stdout.write(f"logged to MLflow run {run_id}\n")
    below = any((t["verdict"] == "below").any() for t in audit.tables.values())
    return 1 if args.fail_on_below and below else 0
