"""``skfair plan``: how many rows to label per group, by :func:`skfair_measures.plan_labels`.

The file has one row per audited prediction and a group column. With ``--score`` the
plan is prediction-powered (labels are simulated from the scores, read as calibrated);
without it, ``--rates`` guesses the measure's rate per group and the group sizes are
counted in the file. Prints the plan per group and in total, with the power, the
expected decision and the level; ``--json`` writes the same to a file.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from typing import Any

from ._cli_contract import CLIError, read, write_output

__all__ = ["add_parser", "run"]


#: plan_labels' advice in words, said in this command's flags (a message without them is kept as it is)
_ADVICE = {
    "raise eps, lower power or prob, or give scores": "raise --eps, lower --power or --prob, or give --score",
    "raise eps, lower power or prob": "raise --eps, lower --power or --prob",
}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``plan`` command to the ``skfair`` parser's subparsers."""
    p = subparsers.add_parser(
        "plan",
        help="how many rows to label per group to decide |measure| <= eps",
        description=(
            "Plan the labels of an audit: how many rows of each group to label so that the interval the audit "
            "will read (auto's) decides |value| <= --eps at level --prob with probability --power (a simulation "
            "of the audit). The guess comes from a --score column, or from --rates per group."
        ),
    )
    p.add_argument("file", help="CSV (.csv, .tsv, .txt) or Parquet file, one row per audited prediction")
    p.add_argument("--sensitive", required=True, metavar="COL", help="the group column (read as text)")
    p.add_argument(
        "--measure",
        required=True,
        metavar="KEY",
        help="a difference measure, e.g. fairness.tpr; `skfair measures` lists the keys",
    )
    p.add_argument("--eps", type=float, required=True, help="the tolerance: decide whether |value| <= EPS")
    p.add_argument("--score", metavar="COL", help="P(positive label) per row: a prediction-powered plan")
    p.add_argument(
        "--label",
        metavar="COL",
        help="with --score: the labels known so far (empty where unlabeled); the plan checks the scores' "
        "calibration on them and recalibrates the guess when they disagree",
    )
    p.add_argument(
        "--threshold", type=float, default=0.5, help="predicted label = score >= THRESHOLD, with --score (default: 0.5)"
    )
    p.add_argument(
        "--rates",
        nargs="+",
        metavar="GROUP=RATE",
        help="without --score: the guessed rate of the measure per group, e.g. --rates a=0.9 b=0.8",
    )
    p.add_argument(
        "--denominator-share",
        nargs="+",
        metavar="SHARE",
        help="with --rates: the guessed share of each group's rows in the rate's denominator (TPR: "
        "the positive rate), one number or GROUP=SHARE pairs (needed unless the rate reads every row)",
    )
    p.add_argument("--prob", type=float, default=0.95, help="the interval's probability content (default: 0.95)")
    p.add_argument("--alpha", type=float, help=argparse.SUPPRESS)  # the old flag: refused, naming --prob
    p.add_argument("--power", type=float, default=0.8, help="probability of the right decision (default: 0.8)")
    p.add_argument(
        "--allocation",
        choices=("equal", "proportional"),
        default="equal",
        help="as many labels in every group, or in proportion to their sizes (default: equal)",
    )
    p.add_argument(
        "--n-sim",
        type=int,
        default=200,
        help="simulated audits per candidate (default: 200; fewer is faster and rougher)",
    )
    p.add_argument("--seed", "--random-state", type=int, default=0, help="seed of the simulation (default: 0)")
    p.add_argument("--json", metavar="FILE", help="also write the plan and its attributes to FILE as JSON")
    return p


def _pairs(values: list[str], flag: str, groups: list[str]) -> dict[str, float]:
    """``GROUP=NUMBER`` pairs as a dict, every group of the file given once."""
    out: dict[str, float] = {}
    for item in values:
        group, sep, number = item.rpartition("=")
        try:
            value = float(number)
        except ValueError:
            value = math.nan
        if not sep or not math.isfinite(value):
            raise CLIError(f"{flag} {item}: write GROUP=NUMBER, e.g. {flag} {groups[0]}=0.8")
        out[group] = value
    unknown, missing = sorted(set(out) - set(groups)), [g for g in groups if g not in out]
    if unknown or missing:
        raise CLIError(
            f"{flag} names the groups {sorted(out)}; the file's groups are {groups}: give one value per "
            "group of the file" + (f" (no group {unknown})" if unknown else "")
        )
    return out


def _guess(args: argparse.Namespace, data: Any, measure: Any) -> dict[str, Any]:
    """The keywords of ``plan_labels`` that describe the guess: scores, or rates and sizes."""
    from .base import ratio_roles

    for flag, column in (("--sensitive", args.sensitive), ("--score", args.score), ("--label", args.label)):
        if column is not None and column not in data.columns:
            raise CLIError(f"{flag} {column}: no such column in {args.file}; the columns are {list(data.columns)}")
    groups = data[args.sensitive]
    if groups.isna().any():  # what skfair audit refuses, the plan refuses: a row without a group is no group's
        rows = groups.index[groups.isna()]
        raise CLIError(
            f"--sensitive {args.sensitive}: {rows.size} row(s) of {args.file} have an empty group cell (the first "
            f"is data row {int(rows[0]) + 1}); fill them (e.g. 'unknown') or drop those rows"
        )
    if args.score is not None:
        if args.rates or args.denominator_share:
            raise CLIError(
                "--score plans from the scores; --rates and --denominator-share are for a plan without "
                "scores: pass one or the other"
            )
        return {
            "scores": data[args.score].to_numpy(dtype=float),
            "sensitive_features": groups.to_numpy(),
            "threshold": args.threshold,
            "y_true": None if args.label is None else data[args.label].to_numpy(dtype=object),
        }
    if not args.rates:
        raise CLIError(
            "pass --score COL (a prediction-powered plan from the scores) or --rates GROUP=RATE ... "
            "(guessed rates per group; the group sizes are counted in the file)"
        )
    sizes = groups.value_counts(sort=False)
    names = [str(g) for g in sizes.index]
    guess: dict[str, Any] = {
        "group_sizes": dict(zip(names, sizes.tolist(), strict=True)),
        "rates": _pairs(args.rates, "--rates", names),
    }
    if args.denominator_share:
        share = args.denominator_share
        if len(share) == 1 and "=" not in share[0]:
            try:
                guess["denominator_share"] = float(share[0])
            except ValueError:
                raise CLIError(
                    f"--denominator-share {share[0]}: pass a number in (0, 1] or GROUP=SHARE pairs"
                ) from None
        else:
            guess["denominator_share"] = _pairs(share, "--denominator-share", names)
    elif len(measure.bases) == 1 and not ratio_roles(measure.bases[0]).den.all():
        raise CLIError(
            f"--measure {args.measure}: its rate {measure.bases[0].name!r} counts only some rows in its "
            "denominator; pass --denominator-share, the guessed share of those rows (e.g. "
            "--denominator-share 0.3, or a=0.3 b=0.4)"
        )
    return guess


def _text(plan: Any) -> str:
    a = plan.attrs
    lines = [
        f"label plan for {a['measure']}: decide |value| <= {a['eps']:g} at level {a['prob']:.0%} with power "
        f"{a['target_power']:g}",
        (
            f"simulated power {a['power']:.2f} (sd {a['power_sd']:.2f}, {a['n_sim']} audits)"
            if a["method"] != "bb"
            else f"power {a['power']:.2f} by the normal approximation"
        )
        + f"; guessed value {a['guess']:.4f}, so the expected decision is {a['decision']!r}",
        f"interval: {a['interval']}; allocation {a['allocation']}",
        f"a normal approximation would ask {a['normal_labels']} labels" if a["normal_labels"] is not None else "",
        f"calibration check: {a['calibration']}" if a["calibration"] else "",
        f"WARNING: {a['shortfall']}" if a["shortfall"] else "",
    ]
    lines = [line for line in lines if line]
    table = plan.copy()
    if table["rate"].isna().all():
        table = table.drop(columns="rate")
    else:
        table["rate"] = table["rate"].map(lambda r: "" if math.isnan(r) else f"{r:.4g}")
    lines.append(table.to_string())
    return "\n".join(lines) + "\n"


def _json(plan: Any) -> dict[str, Any]:
    groups = {
        str(g): {
            "rows": int(r["rows"]),
            "labels": int(r["labels"]),
            "rate": None if math.isnan(r["rate"]) else float(r["rate"]),
        }
        for g, r in plan.iterrows()
    }
    attrs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in plan.attrs.items()}
    return {"plan": groups, **attrs}


def run(args: argparse.Namespace, *, flagged: Callable[[str], str]) -> int:
    """Run ``skfair plan``; errors become one line and exit status 2.

    ``flagged`` is the ``skfair`` command's translation of a library message into flags (given by
    :mod:`skfair_measures.cli`, which imports this module).
    """
    if not args.eps > 0:
        raise CLIError(f"--eps {args.eps:g}: pass a positive tolerance, e.g. --eps 0.05")
    if args.alpha is not None:
        raise CLIError(f"--alpha is now --prob, the interval's probability content: pass --prob {1 - args.alpha:g}")
    for flag, value in (("--prob", args.prob), ("--power", args.power)):
        if not 0 < value < 1:
            raise CLIError(f"{flag} {value:g}: pass a probability strictly between 0 and 1")
    if args.n_sim < 10:
        raise CLIError(f"--n-sim {args.n_sim}: pass at least 10 simulated audits (the default is 200)")
    from .bayes import plan_labels
    from .registry import msr

    try:
        measure = msr(args.measure)
    except (KeyError, ValueError, TypeError) as exc:
        raise CLIError(
            f"--measure {args.measure}: {exc.args[0] if exc.args else exc}; `skfair measures` lists the keys"
        ) from exc
    guess = _guess(args, read(args.file, [args.sensitive]), measure)
    try:
        options = {k: getattr(args, k) for k in ("eps", "prob", "power", "allocation", "n_sim")}
        plan = plan_labels(measure, **options, random_state=args.seed, **guess)
    except (ValueError, TypeError) as exc:
        message = flagged(str(exc))
        for words, flags in _ADVICE.items():
            message = message.replace(words, flags)
        raise CLIError(message) from exc
    sys.stdout.write(_text(plan))
    if args.json:
        write_output(args.json, "--json", json.dumps(_json(plan), indent=2))
        sys.stdout.write(f"plan written to {args.json}\n")
    return 0
