"""The ``skfair`` command line: ``skfair audit``, ``skfair measures``, ``label-next``, ``monitor`` and ``plan``.

``skfair audit predictions.csv --sensitive sex`` reads a CSV or Parquet file with
one row per prediction, prints the fairness measures and their per-group values,
and optionally writes a self-contained HTML report (``--html``) and logs to MLflow
(``--mlflow-uri``, needs the ``skfair-measures-mlflow`` plugin). See
:func:`skfair_measures.report.audit` for what is computed. Run ``skfair audit -h``
for every flag; ``skfair measures`` lists the measure keys.

Errors speak in flags: a message of the library that names a Python argument
(``pos_label=``, ``undefined='drop'``) is printed with the flag that sets it
(``--pos-label``, ``--undefined drop``); the table of these names is built from the
parser itself, so a new flag is translated as soon as it exists.

Exit status: one table for every command (:data:`._cli_contract.EXIT_CODES`, printed
by ``skfair --help``): 0 success, 1 an alarm or failed verdict under ``--fail-on-*``,
2 bad usage or input, 3 a missing optional dependency, 4 an outside service or a write
failed. The report is printed and written before MLflow is contacted, so a failure
there loses nothing.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import _cli_bias_audit, _cli_label, _cli_monitor, _cli_plan
from ._cli_contract import _SEPARATORS, EPILOG, MISSING, OUTSIDE, CLIError, _cause, mlflow_modules, read, writing
from ._optional import MissingDependencyError

__all__ = ["main"]

#: Library argument names that differ from the flag's destination, and spellings
#: that map to a flag without a value. Everything else comes from the parser.
_ALIASES = {
    "sensitive_features": "sensitive",
    "method": "posterior",
    "metric": "proxy_metric",
    "mode": "proxy_mode",
    "n_boot": "proxy_boot",
    "n_draws": "draws",
    "random_state": "seed",
}
_SPELLED = {"label=None": "--no-labels", "msrs()": "`skfair measures`"}

#: MLflow's own settings for its HTTP requests (read at request time); the CLI
#: bounds them so that a dead tracking server costs seconds, not minutes of retries.
_MLFLOW_TIMEOUT_ENV = "MLFLOW_HTTP_REQUEST_TIMEOUT"
_MLFLOW_RETRIES_ENV = "MLFLOW_HTTP_REQUEST_MAX_RETRIES"


# -- the parser ---------------------------------------------------------------------
def _add_columns(a: argparse.ArgumentParser) -> None:
    cols = a.add_argument_group("columns")
    cols.add_argument(
        "--sensitive",
        nargs="+",
        metavar="COL",
        help='sensitive column(s), read as text ("01" and "1" are two groups, "NA" is a group); '
        "several give intersectional groups",
    )
    cols.add_argument(
        "--label",
        default="label",
        metavar="COL",
        help="true labels; an empty cell marks an unlabeled row (default: label)",
    )
    cols.add_argument(
        "--no-labels",
        dest="label",
        action="store_const",
        const=None,
        help="the file has no label column: every row is unlabeled (only --proxies --proxy-metric dp applies)",
    )
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
    cols.add_argument(
        "--pos-label",
        metavar="VALUE",
        help="the positive label, as written in the file (default: 1 / True for 0/1 and boolean labels)",
    )
    cols.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="predicted label = score >= THRESHOLD, when there is no prediction column (default: 0.5)",
    )
    cols.add_argument(
        "--sep",
        metavar="CHAR",
        help="field delimiter of a .csv/.tsv file, e.g. ';' (default: guessed from the first lines among "
        "comma, semicolon, tab and |)",
    )


def _add_measures(a: argparse.ArgumentParser) -> None:
    from .report import DEFAULT_MEASURES

    m = a.add_argument_group("measures")
    m.add_argument(
        "--measures",
        nargs="+",
        metavar="KEY",
        help=f"measure keys (default: {' '.join(DEFAULT_MEASURES)}); `skfair measures` lists them all",
    )
    m.add_argument(
        "--undefined",
        choices=("propagate", "drop", "raise"),
        help="a group whose rate is undefined (0/0): propagate = the measure is undefined, drop = compare "
        "the other groups, raise = stop with an error (default: propagate)",
    )


def _add_posterior(a: argparse.ArgumentParser) -> None:
    p = a.add_argument_group("posteriors")
    from .bayes import METHODS  # the one table of estimation methods: names, summaries, options

    p.add_argument(
        "--posterior",
        choices=tuple(METHODS),
        help="posteriors of the fairness measures: "
        + "; ".join(f"{name} = {spec.summary}" for name, spec in METHODS.items())
        + " (the methods that read unlabeled scores need --score and rows without a label)",
    )
    from .results import DEFAULT_EPS

    p.add_argument(
        "--eps",
        type=float,
        default=DEFAULT_EPS,
        help=f"half-width of practical fairness around a measure's ideal value, and the tolerance of the "
        f"verdicts on each rate's difference between two groups (default: {DEFAULT_EPS})",
    )
    p.add_argument(
        "--prob", type=float, default=0.95, help="interval mass, and the verdicts' family-wise level (default: 0.95)"
    )
    p.add_argument(
        "--boot",
        type=int,
        default=0,
        metavar="N",
        help="bootstrap replicates of the fairness measures, drawn jointly: intervals and verdicts (default: 0, none)",
    )
    p.add_argument("--prior", help="bb prior: uniform, jeffreys or scores (default: uniform)")
    p.add_argument("--draws", type=int, metavar="N", help="posterior draws (per chain for bc)")
    p.add_argument("--chains", type=int, metavar="N", help="chains (MCMC chains for bc and bcr; default: 4)")
    p.add_argument("--tune", type=int, metavar="N", help="bc, bcr: tuning steps per chain (default: 1500)")
    p.add_argument("--target-accept", type=float, metavar="X", help="bc, bcr: the sampler's target acceptance rate")


def _add_proxies(a: argparse.ArgumentParser) -> None:
    p = a.add_argument_group("without the sensitive attribute")
    p.add_argument(
        "--proxies",
        nargs="+",
        metavar="COL",
        help="three or more columns of guesses of the sensitive attribute (read as text): HOC-calibrated estimate",
    )
    p.add_argument(
        "--proxy-metric",
        choices=("dp", "eod", "eop"),
        default="dp",
        help="disparity estimated from the proxies: dp = demographic parity, eod = equalised odds (mean of the TPR "
        "and FPR gaps), eop = equal opportunity (default: dp)",
    )
    p.add_argument(
        "--proxy-mode",
        choices=("global", "local", "base"),
        default="global",
        help="calibration of the proxies: global = one noise transition matrix for all rows, local = one per "
        "prediction cell, base = none (the first proxy taken as the attribute) (default: global)",
    )
    p.add_argument("--proxy-boot", type=int, default=0, metavar="N", help="bootstrap replicates for an interval")
    p.add_argument("--seed", type=int, default=0, help="random seed of posteriors and bootstraps (default: 0)")


def _add_output(a: argparse.ArgumentParser) -> None:
    o = a.add_argument_group("output")
    o.add_argument("--html", metavar="PATH", help="write a self-contained HTML report")
    o.add_argument("--title", help="report title (default: Fairness audit of FILE)")
    o.add_argument("--mlflow-uri", metavar="URI", help="log the results to this MLflow tracking URI")
    o.add_argument("--mlflow-experiment", metavar="NAME", help="MLflow experiment name")
    o.add_argument("--mlflow-run-name", metavar="NAME", help="MLflow run name")
    o.add_argument(
        "--mlflow-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="give up on an unreachable tracking server after this long per request, without retries (default: 10)",
    )
    o.add_argument("--no-progress", action="store_true", help="no progress bar")
    o.add_argument("--quiet", action="store_true", help="do not print the tables")


def _add_audit_parser(sub: Any, full: bool = True) -> None:
    if not full:  # ``skfair --help`` lists the command without importing what its flags describe
        sub.add_parser("audit", help=_AUDIT_HELP)
        return
    a = sub.add_parser(
        "audit",
        help=_AUDIT_HELP,
        description=(
            "Compute fairness measures on a CSV or Parquet file of predictions (one row per "
            "prediction: label, prediction and/or score, sensitive columns), print them, and "
            "optionally write an HTML report and log to MLflow. Rows with an empty label are "
            "the unlabeled part (used by --posterior bc and the proxy estimate)."
        ),
    )
    a.add_argument("file", help="CSV (.csv, .tsv, .txt, optionally compressed) or Parquet (.parquet, .pq) file")
    for add in (_add_columns, _add_measures, _add_posterior, _add_proxies, _add_output):
        add(a)


_AUDIT_HELP = "audit a file of predictions"


def _add_measures_parser(sub: Any) -> None:
    sub.add_parser("measures", help="list the measure keys", description="List the measure keys of the registry.")


def _parser(command: str | None = "all") -> argparse.ArgumentParser:
    """The parser; only ``command``'s flags are built in full ("all": every command's)."""
    parser = argparse.ArgumentParser(
        prog="skfair",
        description="Fairness measures for predictions (skfair-measures).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (add, _) in _COMMANDS.items():
        if add is _add_audit_parser:
            add(sub, full=command in ("all", name))
        else:
            add(sub)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    """The command named in ``argv`` (the first argument that is not an option), if any."""
    return next((a for a in argv if not a.startswith("-")), None)


# -- messages in flags ----------------------------------------------------------------
@functools.cache
def _flag_table() -> dict[str, str]:
    """``{python argument: flag}`` for every flag of every command, plus the aliases."""
    table: dict[str, str] = {}
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    for command in sub.choices.values():
        for action in command._actions:  # the first long flag of a destination names it
            longs = [s for s in action.option_strings if s.startswith("--")]
            if longs and action.dest not in table:
                table[action.dest] = longs[0]
    table.update({alias: table[dest] for alias, dest in _ALIASES.items() if dest in table})
    return table


_ARGUMENT = re.compile(r"""(?<![\w.-])(?P<name>[a-z][a-z_]*)=(?P<value>'[^']*'|"[^"]*"|[\w+-](?:[\w.+-]*\w)?)?""")
_ROLE = re.compile(r"\((?P<name>[a-z][a-z_]*)\)")


def _flagged(message: str) -> str:
    """Say ``--pos-label yes`` where the library says ``pos_label='yes'``.

    Examples
    --------
    >>> _flagged("pass undefined='drop'; column 'x' (sensitive) is absent; see msrs()")
    "pass --undefined drop; column 'x' (--sensitive) is absent; see `skfair measures`"
    """
    table = _flag_table()
    for spelled, flag in _SPELLED.items():
        message = message.replace(spelled, flag)

    def argument(match: re.Match[str]) -> str:
        flag = table.get(match["name"])
        if flag is None:
            return match[0]
        value = (match["value"] or "").strip("'\"")
        return f"{flag} {shlex.quote(value)}" if value else flag

    def role(match: re.Match[str]) -> str:
        flag = table.get(match["name"])
        return f"({flag})" if flag else match[0]

    return _ROLE.sub(role, _ARGUMENT.sub(argument, message))


# -- skfair audit ---------------------------------------------------------------------
#: Flags passed to :func:`skfair_measures.report.audit` as they are (the flag's destination is the argument's name).
_AUDIT_ARGUMENTS = (
    "sensitive label prediction score measures threshold pos_label undefined posterior eps prob proxies proxy_metric "
    "proxy_mode proxy_boot boot"
).split()
#: ``posterior_options`` of the audit, by their library names (a flag's destination: ``_ALIASES.get(name, name)``).
_POSTERIOR_OPTIONS = ("prior", "n_draws", "chains", "tune", "target_accept")


def _run_audit(args: argparse.Namespace, data: Any) -> Any:
    from .report import audit

    options = {k: getattr(args, _ALIASES.get(k, k)) for k in _POSTERIOR_OPTIONS}
    try:
        return audit(
            data,
            **{k: getattr(args, k) for k in _AUDIT_ARGUMENTS},
            posterior_options={k: v for k, v in options.items() if v is not None},
            random_state=args.seed,
            figures=args.html is not None,
            progress=False if args.no_progress else None,
            title=args.title or f"Fairness audit of {Path(args.file).name}",
            source=str(args.file),
        )
    except KeyError as exc:  # a KeyError's message is its first argument (str() would quote it)
        raise CLIError(_flagged(str(exc.args[0]) if exc.args else "") + _one_column_hint(data)) from exc
    except (ValueError, TypeError) as exc:
        raise CLIError(_flagged(str(exc))) from exc


def _one_column_hint(data: Any) -> str:
    """When a file was read as one column, say that its delimiter was probably not the one used."""
    if data.shape[1] != 1:
        return ""
    found = [c for c in _SEPARATORS if c in str(data.columns[0])]
    example = shlex.quote(found[0]) if found else "';'"
    return f" The file was read as one column: pass its delimiter with --sep (e.g. --sep {example})."


def _bound_mlflow_requests(timeout: float) -> None:
    """One request of at most ``timeout`` seconds, no retries (a user's own settings win)."""
    if timeout <= 0:
        raise CLIError(f"--mlflow-timeout {timeout:g}: pass a positive number of seconds.")
    os.environ.setdefault(_MLFLOW_TIMEOUT_ENV, str(max(1, round(timeout))))
    os.environ.setdefault(_MLFLOW_RETRIES_ENV, "0")


def _log_mlflow(report: Any, args: argparse.Namespace, html_path: Path | None) -> str:
    mlflow, skfair_measures_mlflow = mlflow_modules()
    _bound_mlflow_requests(args.mlflow_timeout)
    mlflow.set_tracking_uri(args.mlflow_uri)
    if args.mlflow_experiment:
        mlflow.set_experiment(args.mlflow_experiment)
    # a measure result and the posterior of the same measure may share a name
    results = [*report.results.items(), *report.posteriors.items(), *report.bootstraps.items()]
    results += report.proxy_results.items()
    with mlflow.start_run(run_name=args.mlflow_run_name) as run:
        logged = skfair_measures_mlflow.log_fairness(
            results,
            measures=list(report.measures.values()),
            posterior_options={"prob": args.prob, "eps": args.eps},
            report=html_path is None,  # the audit's own report, when written, is the richer one
        )
        error = getattr(logged, "error", None)  # the plugin keeps going and reports a failure here
        if error is not None:
            raise error
        mlflow.log_param("audit/source", str(args.file)[:500])
        if html_path is not None:
            mlflow.log_artifact(str(html_path))
        return run.info.run_id


def _one_line(exc: BaseException) -> str:
    """The innermost cause of an exception, in one short line (MLflow wraps the connection error twice)."""
    seen = {id(exc)}
    while (inner := exc.__cause__ or exc.__context__) is not None and id(inner) not in seen:
        seen.add(id(inner))
        exc = inner
    text, name = _cause(exc), type(exc).__name__
    return text if text == name else f"{name}: {text}"


def _audit(args: argparse.Namespace) -> int:
    from .report import write_html

    if args.sensitive is None and args.proxies is None:
        raise CLIError("name the sensitive column(s) with --sensitive (or give --proxies).")
    if args.mlflow_uri:
        mlflow_modules()  # fail before any work if the plugin is missing
    data = read(args.file, [*(args.sensitive or ()), *(args.proxies or ())], args.sep)
    report = _run_audit(args, data)
    report.notes = [_flagged(n) for n in report.notes]
    if not args.quiet:
        sys.stdout.write(report.to_text())
    html_path = None
    if args.html:
        with writing(args.html, "--html"):
            html_path = write_html(report, args.html)
        if not args.quiet:
            sys.stdout.write(f"HTML report written to {html_path}\n")
    if not args.mlflow_uri:
        return 0
    try:
        run_id = _log_mlflow(report, args, html_path)
    except CLIError:
        raise
    except Exception as exc:  # noqa: BLE001 - any MLflow failure: the report above is kept, one line says why
        kept = f"; the report is kept in {html_path}" if html_path else "; the report above is kept"
        raise CLIError(f"could not log to MLflow at {args.mlflow_uri} ({_one_line(exc)}){kept}.", OUTSIDE) from exc
    if not args.quiet:
        sys.stdout.write(f"logged to MLflow run {run_id}\n")
    return 0


# -- skfair measures ------------------------------------------------------------------
def _measures(args: argparse.Namespace) -> int:
    from .registry import msr, msrs

    def usable(key: str) -> bool:
        try:  # a generic entry needs Python arguments (base=): not usable with --measures
            return msr(key) is not None
        except (TypeError, ValueError):
            return False

    tab = msrs()
    tab = tab[[usable(k) for k in tab["key"]]]
    direction = tab["minimize"].map({True: "lower is better", False: "higher is better"}).fillna("0 is fair")
    out = tab.assign(direction=direction)[["key", "base", "operation", "direction", "description"]]
    rows = [list(out.columns), *out.astype(str).to_numpy().tolist()]
    widths = [max(len(r[j]) for r in rows) for j in range(len(out.columns) - 1)]
    for r in rows:  # left-aligned columns, the description last and unpadded
        sys.stdout.write("  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]]) + "\n")
    return 0


#: ``{command: (add its subparser, run it)}``; ``main`` dispatches through this table.
_COMMANDS: dict[str, tuple[Callable[[Any], None], Callable[[argparse.Namespace], int]]] = {
    "audit": (_add_audit_parser, _audit),
    "measures": (_add_measures_parser, _measures),
    "label-next": (_cli_label.add_parser, _cli_label.run),
    "monitor": (_cli_monitor.add_parser, _cli_monitor.run),
    "plan": (_cli_plan.add_parser, functools.partial(_cli_plan.run, flagged=_flagged)),
    "bias-audit": (_cli_bias_audit.add_parser, functools.partial(_cli_bias_audit.run, flagged=_flagged)),
}


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
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser(_command_of(argv)).parse_args(argv)
    try:
        return _COMMANDS[args.command][1](args)
    except CLIError as exc:
        sys.stderr.write(f"skfair {args.command}: error: {exc}\n")
        return exc.status
    except MissingDependencyError as exc:
        sys.stderr.write(f"skfair {args.command}: error: {exc}\n")
        return MISSING


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
