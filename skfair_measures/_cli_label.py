"""``skfair label-next``: which rows of a predictions file to label next.

The file has one row per prediction; the label column is empty for rows not yet
labeled. The command builds an :class:`~skfair_measures.active.ActiveAssessment`
from the labeled rows, prints the ids of the ``--budget`` rows to label next, one
per line, and the current estimates per group. Label them, fill the column, run it
again.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._cli_contract import CLIError, read

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``label-next`` command to the ``skfair`` parser's subparsers."""
    p = subparsers.add_parser(
        "label-next",
        help="which rows to label next (active assessment)",
        description=(
            "Read a CSV or Parquet file of predictions whose label column is empty for unlabeled rows, and print "
            "the rows to label next (Thompson sampling over groupwise Beta posteriors) and the current estimates."
        ),
    )
    p.add_argument("file", help="CSV (.csv, .tsv, .txt) or Parquet file")
    p.add_argument("--budget", type=int, default=10, help="rows to ask for (default: 10)")
    p.add_argument("--sensitive", nargs="+", required=True, metavar="COL", help="group column(s)")
    p.add_argument("--label", default="label", metavar="COL", help="true labels, empty if unknown (default: label)")
    p.add_argument("--prediction", default="prediction", metavar="COL", help="predicted labels (default: prediction)")
    p.add_argument(
        "--score",
        nargs="+",
        default=["score"],
        metavar="COL",
        help="P(positive) (one column) or one probability column per class (default: score)",
    )
    p.add_argument("--classes", nargs="+", metavar="VALUE", help="class of each score column, in order")
    p.add_argument("--pos-label", default="1", metavar="VALUE", help="the positive class (default: 1)")
    p.add_argument("--id", metavar="COL", help="row id column to print (default: the row number, from 0)")
    p.add_argument("--metric", default="acc", help="acc, tpr, fpr, fnr, tnr, ppv, npv, fdr, for, ece (default: acc)")
    p.add_argument("--task", choices=("estimate", "identify", "compare"), default="estimate")
    p.add_argument("--m", type=int, default=1, help="number of worst groups (task identify)")
    p.add_argument("--pair", nargs=2, metavar="GROUP", help="the two groups to compare (task compare)")
    p.add_argument("--eps", type=float, default=0.05, help="ROPE half-width (default: 0.05)")
    p.add_argument("--prior", choices=("informative", "uniform"), default="informative")
    p.add_argument("--strategy", choices=("ts", "ttts", "random"), default="ts")
    p.add_argument("--prob", type=float, default=0.95, help="interval mass and decision level (default: 0.95)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    return p


def _typed(values: list[str], like: Any) -> list[Any]:
    """Command-line strings as values of the dtype of ``like`` (a pandas Series), as ``skfair audit`` reads them."""
    from .report import _coerce_label

    return [_coerce_label(v, like) for v in values]


def _assessment(data: Any, args: argparse.Namespace) -> Any:
    import pandas as pd

    from .active import ActiveAssessment

    for col in [args.label, args.prediction, *args.score, *args.sensitive, *([args.id] if args.id else [])]:
        if col not in data.columns:
            raise KeyError(f"no column {col!r} in {args.file}; the columns are {list(data.columns)!r}.")
    pred, label = data[args.prediction], data[args.label]
    y_true = (pd.to_numeric(label) if pd.api.types.is_numeric_dtype(pred) else label).astype(object)
    scores = data[args.score[0]] if len(args.score) == 1 else data[args.score].to_numpy()
    sensitive = data[args.sensitive[0]] if len(args.sensitive) == 1 else data[args.sensitive]
    if args.pair and len(args.sensitive) != 1:
        raise ValueError("--pair compares two groups of one --sensitive column.")
    return ActiveAssessment(
        pred,
        scores,
        sensitive_features=sensitive,
        **{k: getattr(args, k) for k in ("metric", "task", "prior", "strategy", "m", "eps")},
        pos_label=_typed([args.pos_label], pred)[0],
        classes=_typed(args.classes, pred) if args.classes else None,
        y_true=y_true.where(label.notna(), None),
        pair=tuple(_typed(args.pair, sensitive)) if args.pair else None,
        random_state=args.seed,
    )


def _summary(aa: Any, args: argparse.Namespace) -> str:
    lines = [f"current estimates ({aa.metric.description}, {args.prob:.0%} intervals, {aa.n_labels} labels):"]
    lines.append(aa.groupwise(args.prob).round(4).to_string())
    if args.task == "identify":
        found = aa.worst_groups(args.m, args.prob)
        lines.append(f"worst group(s) at P >= {args.prob:g}: {found if found is not None else 'not yet decided'}")
    elif args.task == "compare":
        lines.append(f"{args.pair[0]} - {args.pair[1]}: {aa.compare()}")
    else:
        lines.append(f"posterior RMSE: {aa.posterior_rmse():.4f}")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    """Run ``skfair label-next``; errors become one line and exit status 2."""
    if args.budget < 1:
        raise CLIError("--budget must be a positive integer.")
    data = read(args.file, args.sensitive)  # group columns as text, as in `skfair audit`
    try:
        aa = _assessment(data, args)
    except KeyError as exc:
        raise CLIError(exc.args[0] if exc.args else str(exc)) from exc
    except (ValueError, TypeError) as exc:
        raise CLIError(str(exc)) from exc
    rows = aa.ask(args.budget)
    ids = data[args.id].to_numpy()[rows] if args.id else rows
    sys.stdout.write(f"rows to label next ({rows.size}{' (pool exhausted)' if rows.size < args.budget else ''}):\n")
    sys.stdout.write("".join(f"{i}\n" for i in ids))
    sys.stdout.write(_summary(aa, args))
    return 0
