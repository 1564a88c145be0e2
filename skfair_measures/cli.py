"""The ``skfair`` command line: ``skfair audit`` and ``skfair measures``.

``skfair audit predictions.csv --sensitive sex`` reads a CSV or Parquet file with
one row per prediction, prints the fairness measures and their per-group values,
and optionally writes a self-contained HTML report (``--html``) and logs to MLflow
(``--mlflow-uri``, needs the ``skfair-measures-mlflow`` plugin). See
:func:`skfair_measures.report.audit` for what is computed. Run ``skfair audit -h``
for every flag.

Exit status: 0 on success, 2 for bad arguments or input (the message names the
flag or column), 1 when an optional part (MLflow plugin) is missing.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["main"]

_READERS = {".csv": "csv", ".txt": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet"}


class CLIError(Exception):
    """An error reported to the user as one line, with an exit status."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


def _parser() -> argparse.ArgumentParser:
    from .report import DEFAULT_MEASURES

    parser = argparse.ArgumentParser(prog="skfair", description="Fairness measures for predictions (skfair-measures).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    a = sub.add_parser(
        "audit",
        help="audit a file of predictions",
        description=(
            "Compute fairness measures on a CSV or Parquet file of predictions (one row per "
            "prediction: label, prediction and/or score, sensitive columns), print them, and "
            "optionally write an HTML report and log to MLflow. Rows with a missing label are "
            "the unlabeled part (used by --posterior bc and the proxy estimate)."
        ),
    )
    a.add_argument("file", help="CSV (.csv, .tsv, .txt, optionally .gz) or Parquet (.parquet, .pq) file")
    cols = a.add_argument_group("columns")
    cols.add_argument("--sensitive", nargs="+", metavar="COL", help="sensitive column(s)")
    cols.add_argument("--label", default="label", metavar="COL", help="true labels (default: label)")
    cols.add_argument(
        "--prediction",
        metavar="COL",
        help="predicted labels (default: the column 'prediction' if present, else score >= --threshold)",
    )
    cols.add_argument(
        "--score",
        metavar="COL",
        help="predicted probability of the positive class (default: the column 'score' if present)",
    )
    cols.add_argument("--pos-label", metavar="VALUE", help="the positive label (default: 1 / True)")
    cols.add_argument("--threshold", type=float, default=0.5, help="score threshold (default: 0.5)")
    m = a.add_argument_group("measures")
    m.add_argument(
        "--measures",
        nargs="+",
        metavar="KEY",
        help=f"measure keys (default: {' '.join(DEFAULT_MEASURES)}); see `skfair measures`",
    )
    m.add_argument(
        "--posterior",
        choices=("bb", "bc"),
        help="Bayesian posteriors: bb = Beta-Binomial, bc = Bayesian calibration with unlabeled rows",
    )
    m.add_argument("--eps", type=float, default=0.05, help="practical-fairness margin (default: 0.05)")
    m.add_argument("--prob", type=float, default=0.95, help="credible interval mass (default: 0.95)")
    m.add_argument(
        "--proxies",
        nargs="+",
        metavar="COL",
        help="columns with guesses of the sensitive attribute (3+): HOC-calibrated estimate",
    )
    m.add_argument("--proxy-metric", choices=("dp", "eod", "eop"), default="dp")
    m.add_argument("--proxy-mode", choices=("global", "local", "base"), default="global")
    m.add_argument("--proxy-boot", type=int, default=0, metavar="N", help="bootstrap replicates")
    m.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    o = a.add_argument_group("output")
    o.add_argument("--html", metavar="PATH", help="write a self-contained HTML report")
    o.add_argument("--title", default=None, help="report title")
    o.add_argument("--mlflow-uri", metavar="URI", help="log the results to this MLflow tracking URI")
    o.add_argument("--mlflow-experiment", metavar="NAME", help="MLflow experiment name")
    o.add_argument("--mlflow-run-name", metavar="NAME", help="MLflow run name")
    o.add_argument("--no-progress", action="store_true", help="no progress bar")
    o.add_argument("--quiet", action="store_true", help="do not print the tables")

    sub.add_parser("measures", help="list the measure keys")
    return parser


def _read(path: str) -> Any:
    import pandas as pd

    p = Path(path)
    if not p.exists():
        raise CLIError(f"no such file: {path}")
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".bz2", ".xz", ".zip"):
        suffixes = suffixes[:-1]
    kind = _READERS.get(suffixes[-1] if suffixes else "")
    if kind is None:
        raise CLIError(f"cannot tell the format of {path}: use a .csv, .tsv or .parquet file.")
    try:
        if kind == "parquet":
            return pd.read_parquet(p)
        return pd.read_csv(p, sep="\t" if kind == "tsv" else ",")
    except ImportError as exc:
        raise CLIError(f"reading {path} needs a Parquet engine (pyarrow): {exc}", 1) from exc
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        raise CLIError(f"cannot read {path}: {exc}") from exc


def _mlflow_modules() -> tuple[Any, Any]:
    """Import MLflow and the plugin, or fail with the install hint (before any work)."""
    try:
        # the plugin first: it is light (its names load lazily), MLflow takes seconds
        plugin = importlib.import_module("skfair_measures_mlflow")
        mlflow = importlib.import_module("mlflow")
    except ImportError as exc:
        raise CLIError(
            f"--mlflow-uri needs MLflow and the skfair-measures-mlflow plugin ({exc}); install "
            "them with `pip install skfair-measures-mlflow`.",
            1,
        ) from exc
    return mlflow, plugin


def _log_mlflow(report: Any, args: argparse.Namespace, html_path: Path | None) -> str:
    mlflow, skfair_measures_mlflow = _mlflow_modules()
    mlflow.set_tracking_uri(args.mlflow_uri)
    if args.mlflow_experiment:
        mlflow.set_experiment(args.mlflow_experiment)
    # a measure result and the posterior of the same measure may share a name
    results = [*report.results.items(), *report.posteriors.items(), *report.proxy_results.items()]
    with mlflow.start_run(run_name=args.mlflow_run_name) as run:
        skfair_measures_mlflow.log_fairness(
            results,
            measures=list(report.measures.values()),
            posterior_options={"prob": args.prob, "eps": args.eps},
        )
        mlflow.log_param("audit/source", str(args.file)[:500])
        if html_path is not None:
            mlflow.log_artifact(str(html_path))
        return run.info.run_id


def _audit(args: argparse.Namespace) -> int:
    from .report import audit, write_html

    if args.sensitive is None and args.proxies is None:
        raise CLIError("name the sensitive column(s) with --sensitive (or give --proxies).")
    if args.mlflow_uri:
        _mlflow_modules()
    data = _read(args.file)
    try:
        report = audit(
            data,
            sensitive=args.sensitive,
            label=args.label,
            prediction=args.prediction,
            score=args.score,
            measures=args.measures,
            threshold=args.threshold,
            pos_label=args.pos_label,
            posterior=args.posterior,
            eps=args.eps,
            prob=args.prob,
            proxies=args.proxies,
            proxy_metric=args.proxy_metric,
            proxy_mode=args.proxy_mode,
            proxy_boot=args.proxy_boot,
            random_state=args.seed,
            figures=args.html is not None,
            progress=False if args.no_progress else None,
            title=args.title or f"Fairness audit of {Path(args.file).name}",
            source=str(args.file),
        )
    except KeyError as exc:
        raise CLIError(_flagged(exc.args[0] if exc.args else str(exc))) from exc
    except (ValueError, TypeError) as exc:
        raise CLIError(_flagged(str(exc))) from exc
    if not args.quiet:
        sys.stdout.write(report.to_text())
    html_path = None
    if args.html:
        html_path = write_html(report, args.html)
        if not args.quiet:
            sys.stdout.write(f"HTML report written to {html_path}\n")
    if args.mlflow_uri:
        run_id = _log_mlflow(report, args, html_path)
        if not args.quiet:
            sys.stdout.write(f"logged to MLflow run {run_id}\n")
    return 0


_FLAGS = {
    "(sensitive)": "(--sensitive)",
    "(proxies)": "(--proxies)",
    "(label)": "(--label)",
    "(prediction)": "(--prediction)",
    "(score)": "(--score)",
}


def _flagged(message: str) -> str:
    """Name command-line flags instead of Python parameters in a message."""
    for role, flag in _FLAGS.items():
        message = message.replace(role, flag)
    return message


def _measures() -> int:
    from .registry import msrs

    tab = msrs()[["key", "description"]]
    sys.stdout.write(tab.to_string(index=False) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``skfair`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        Exit status.

    Examples
    --------
    >>> main(["measures"])  # doctest: +ELLIPSIS
    key ...
    fairness.acc ...
    0
    """
    args = _parser().parse_args(argv)
    try:
        if args.command == "audit":
            return _audit(args)
        return _measures()
    except CLIError as exc:
        sys.stderr.write(f"skfair {args.command}: error: {exc}\n")
        return exc.status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
