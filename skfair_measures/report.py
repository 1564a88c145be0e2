"""Fairness audit of a table of predictions, and its self-contained HTML report.

:func:`audit` takes a DataFrame with one row per prediction (label, predicted label
and/or score, sensitive columns), computes the chosen measures with their
per-group values and, on request, their Bayesian posteriors (rows with a missing
label form the unlabeled part) and a proxy-based estimate for when the sensitive
attribute is missing. :func:`render_html` turns the :class:`AuditReport` into a
single HTML page: inline CSS, plots embedded as base64 PNG, no external files,
scripts or fonts. The command line ``skfair audit`` (:mod:`skfair_measures.cli`)
is a thin layer over these two functions.

Every result is read through the one :class:`~skfair_measures.results.Result`
interface (``value``, ``reason``, ``by_group``, ``draws``, ``interval``), and what a
measure means (its direction, its ideal value) comes from the measure itself. An
undefined value is shown as "undefined (reason)", never as a number.

matplotlib is imported only when figures are drawn.
"""

from __future__ import annotations

import base64
import datetime as _dt
import functools
import html
import io
import math
import re
import textwrap
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from . import __version__
from ._bootstrap import bootstraps
from ._files import write_atomically
from ._optional import require
from ._progress import progress_bar
from ._stats import binarize_labels, check_scores, resolve_sensitive
from ._verdicts import verdict_tables
from .base import ratio_roles
from .bayes import METHODS
from .engines import evaluate_measures
from .measures import Measure
from .registry import as_measures, msr
from .results import DEFAULT_EPS, Result, check_prob
from .uncertainty import SUMMARY_COLUMNS, Estimate

__all__ = [
    "DEFAULT_MEASURES",
    "SUMMARY_COLUMNS",
    "AuditReport",
    "audit",
    "headline",
    "render_html",
    "results_report",
    "summary_table",
    "write_html",
]

#: Measures computed when none are named: demographic parity, equalised odds and
#: its two parts, predictive parity's ppv, accuracy parity, and overall accuracy.
DEFAULT_MEASURES: tuple[str, ...] = (
    "fairness.cv",
    "fairness.eod",
    "fairness.tpr",
    "fairness.fpr",
    "fairness.ppv",
    "fairness.acc",
    "classif.acc",
)

# Messages name the audit's arguments; the command line shows them as its flags.
_MISSING_COLUMN = "column {col!r} ({role}) is not in the data; its columns are {columns}."
_NO_LABEL_COLUMN = (
    "the data has no label column {col!r} (label); its columns are {columns}. Name the column of "
    "true labels with label=, or pass label=None for predictions without labels."
)
_NO_PREDICTION = (
    "the data has neither a prediction nor a score column (looked for {pred!r} and {score!r}); its "
    "columns are {columns}. Name them with prediction= or score=."
)
_NO_SENSITIVE = (
    "name the sensitive column(s) with sensitive=, or give proxies of the sensitive attribute with proxies=."
)
_NO_LABELED_ROWS = (
    "no row has a true label{where}: the measures need them. Fill in labels, or estimate demographic "
    "parity from proxies of the sensitive attribute without them (proxies= with proxy_metric='dp')."
)
_NO_ROWS = "the data has no rows (columns {columns}); pass one row per prediction."
_COMPARE_WITHOUT_SENSITIVE = "the measures {keys} compare groups: name the sensitive column(s) with sensitive=."

#: What each proxy calibration mode computes, for the report.
_PROXY_METHODS = {
    "global": "HOC-calibrated proxies (one transition matrix)",
    "local": "HOC-calibrated proxies (one matrix per prediction cell)",
    "base": "first proxy taken as the attribute",
}
#: The measure with the sensitive column that each proxy estimate stands for.
_PROXY_TRUTH = {"dp": "fairness.cv", "eod": "fairness.eod", "eop": "fairness.tpr"}
#: Errors by which a posterior method says it cannot do a measure (the report, and the record of a
#: cross-validation, note them and go on). A missing optional package (``_optional.MissingDependencyError``)
#: is not one of them: the method asked for cannot run at all, so it propagates (``skfair audit`` exits 3
#: naming the extra).
POSTERIOR_ERRORS = (NotImplementedError, ValueError, TypeError)

T = TypeVar("T")


@dataclass
class AuditReport:
    """Everything :func:`audit` computed, ready to print or render.

    Attributes
    ----------
    title : str
        Report title.
    summary : dict
        Data description: rows, labeled and unlabeled rows, column roles, source.
    table : pandas.DataFrame
        One row per measure: ``measure``, ``value`` (NaN when undefined), ``reason``
        (why it is undefined; missing when defined), ``direction``, ``description``.
    by_group : pandas.DataFrame
        Per group: ``n`` (labeled rows), ``n (all rows)`` where a rate needs no label
        (the selection rate reads every row's prediction, labeled or not), and every base
        metric of the measures (NaN where a rate is undefined in that group).
    proxy : pandas.DataFrame or None
        The proxy-based estimates (``proxies=``), one summary row each with the columns of
        :attr:`intervals` (``measure``: the estimate's name; ``construction``: the proxy
        method, and the interval's when ``proxy_boot`` is given). The value with the
        sensitive column, when the proxies guess it, is in :attr:`summary`.
    figures : list of (str, str)
        ``(caption, base64 PNG)`` pairs.
    notes : list of str
        Warnings raised along the way (undefined groups, skipped parts, ...).
    results : dict
        The measure results (:class:`~skfair_measures.results.Result`), by key.
    posteriors : dict
        The posteriors (:class:`~skfair_measures.results.Result`), by measure key.
    proxy_results : dict
        The proxy estimates (:class:`~skfair_measures.results.Result`), by name.
    measures : dict
        The :class:`Measure` objects, by key.
    bootstraps : dict
        The joint bootstrap results of the fairness measures (``boot=``), by key.
    verdicts : list of pandas.DataFrame
        Per base rate and pair of groups, whether the difference is ``within`` ``eps``,
        ``exceeds`` it or is ``inconclusive`` (:func:`skfair_measures.verdicts`): one table
        per joint fit (the posteriors, the bootstrap), its family-wise level, ``eps`` and
        construction in ``attrs``.
    headline : str
        The verdict in words (:func:`headline`), shown first.
    intervals : pandas.DataFrame
        The summary row of every bootstrap and posterior (``kind`` and :data:`SUMMARY_COLUMNS`):
        value, interval, construction, rows, probability where defined, verdict, note.
    """

    title: str
    summary: dict[str, Any]
    table: pd.DataFrame
    by_group: pd.DataFrame
    proxy: pd.DataFrame | None = None
    figures: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    results: dict[str, Result] = field(default_factory=dict)
    posteriors: dict[str, Result] = field(default_factory=dict)
    proxy_results: dict[str, Result] = field(default_factory=dict)
    measures: dict[str, Measure] = field(default_factory=dict)
    bootstraps: dict[str, Result] = field(default_factory=dict)
    verdicts: list[pd.DataFrame] = field(default_factory=list)
    headline: str = ""
    intervals: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["kind", *SUMMARY_COLUMNS]))

    def to_text(self) -> str:
        """The tables as plain text, as ``skfair audit`` prints them."""
        parts = [self.title, "=" * len(self.title), *([self.headline, ""] if self.headline else [])]
        parts += [*(f"{k}: {v}" for k, v in self.summary.items()), ""]
        if not self.table.empty:
            shown, reasons = _shown_measures(self.table, inline=False)
            parts += [_int_text(shown).to_string(index=False, na_rep=""), *reasons, ""]
        if not self.intervals.empty:
            shown, notes = _shown_intervals(self.intervals)
            parts += [_intervals_heading(self.intervals), shown.to_string(index=False, float_format=_fmt, na_rep="")]
            parts += [*notes, ""]
        if not self.by_group.empty:
            shown, left_out = _largest_groups(self.by_group)
            parts += ["Per group:" + left_out, shown.to_string(float_format=_fmt, na_rep="undefined"), ""]
        for table in self.verdicts:
            parts += [_verdict_heading(table), *_verdict_lines(table), ""]
        if self.proxy is not None:
            shown, notes = _shown_intervals(self.proxy)
            parts += [
                "Without the sensitive attribute (proxies):",
                shown.to_string(index=False, float_format=_fmt, na_rep=""),
            ]
            parts += [*notes, ""]
        if self.notes:
            parts += ["Notes:"] + [f"- {_shorter(n)}" for n in self.notes]
        return "\n".join(parts).rstrip() + "\n"


#: ``posterior=`` values: the methods of :func:`skfair_measures.bayes.posterior`, from its one table.
POSTERIOR_METHODS = tuple(METHODS)


def _fmt(x: float) -> str:
    return f"{x:.4f}"


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "~"


#: Verdict rows printed by ``to_text`` (the HTML report shows them all); the others are counted.
MAX_TEXT_VERDICTS = 30
_VERDICT_ORDER = {"exceeds": 0, "inconclusive": 1, "undefined": 2, "within": 3}


def _verdict_heading(table: pd.DataFrame) -> str:
    a = table.attrs  # the verdict module counts; the report prints its sentence
    return (
        f"Verdicts ({a['source']}): is |rate in group a - rate in group b| <= eps = {a['eps']:g}?\n"
        f"Jointly at family-wise level {a['family_wise_level']:g} {a['tally']}"
    )


def _verdict_lines(table: pd.DataFrame) -> list[str]:
    """The verdicts, exceeding first, one short line each (< 120 characters)."""
    order = table.assign(_o=table["verdict"].map(_VERDICT_ORDER)).sort_values("_o", kind="stable")
    shown = order.head(MAX_TEXT_VERDICTS)
    lines = [
        f"  {_cut(r.measure, 22):<22} {_cut(r.base, 8):<8} {_cut(r.group_a, 18):>18} - {_cut(r.group_b, 18):<18} "
        f"{_signed(r.estimate)} [{_signed(r.lower)}, {_signed(r.upper)}]  {r.verdict}"
        for r in shown.itertuples()
    ]
    if len(order) > len(shown):
        lines.append(
            f"  ... {len(order) - len(shown)} more ({', '.join(sorted(set(order['verdict'][len(shown) :])))})"
            "; every pair is in the HTML report (--html)"
        )
    lines += textwrap.wrap(f"({table.attrs['construction']})", width=116, initial_indent="  ", subsequent_indent="   ")
    return lines


def _signed(x: float) -> str:
    return "    nan" if not np.isfinite(x) else f"{x:+.3f}"


#: The per-group table of the printed and HTML report shows at most this many groups, the largest.
MAX_GROUPS_LISTED = 50


def _largest(sizes: Any, limit: int) -> np.ndarray:
    """Positions of the ``limit`` largest of ``sizes`` (NaN smallest; ties: the first), in their own order."""
    sizes = np.nan_to_num(np.asarray(sizes, dtype=float), nan=-1.0)
    return np.sort(np.argsort(-sizes, kind="stable")[:limit])


def _largest_groups(by_group: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The rows of the largest groups (by ``n``, in table order), and a note on the others, if any."""
    n_groups = len(by_group)
    if n_groups <= MAX_GROUPS_LISTED:
        return by_group, ""
    note = (
        f" the {MAX_GROUPS_LISTED} largest of {n_groups:,} groups ({n_groups - MAX_GROUPS_LISTED:,} others are "
        "left out here; AuditReport.by_group holds them all)"
    )
    return by_group.iloc[_largest(by_group["n"] if "n" in by_group else np.ones(n_groups), MAX_GROUPS_LISTED)], note


def _shown_measures(table: pd.DataFrame, inline: bool = True) -> tuple[pd.DataFrame, list[str]]:
    """The measure table as shown: values as text, no description; and the reasons of undefined values.

    ``inline``: an undefined value reads "undefined (reason)" in its cell (HTML, which wraps);
    otherwise "undefined [1]", with the reasons as lines ``[1] key: reason`` to print below the
    table, so a terminal table stays as narrow as its numbers.
    """
    shown, texts, reasons = table.drop(columns=["reason", "description"], errors="ignore"), [], []
    for key, v, r in zip(table["measure"], table["value"], table["reason"], strict=True):
        if not math.isnan(v) or not (isinstance(r, str) and r):
            texts.append("undefined" if math.isnan(v) else _fmt(v))
        elif inline:
            texts.append(_shorter(f"undefined ({r})"))
        else:
            reasons.append(f"[{len(reasons) + 1}] {key}: {_shorter(r)}")
            texts.append(f"undefined [{len(reasons)}]")
    shown["value"] = texts
    return shown, reasons


def _intervals_heading(table: pd.DataFrame) -> str:
    first = table.iloc[0]
    return (
        f"Intervals ({first['prob']:.0%}) and verdicts against eps = {first['eps']:g}, each from its result's summary\n"
        "(prob_within: the probability that |value - ideal| <= eps, where the construction gives one):"
    )


def _shown_intervals(table: pd.DataFrame, inline: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """The summary rows as shown: an undefined probability is n.a. (never 0); the notes numbered below (or inline)."""
    order = ["measure", "kind", "value", "lower", "upper", "construction", "target", "n", "prob_within", "verdict"]
    shown = table[order].copy()
    shown["n"] = [f"{v:,.0f}" if pd.notna(v) else "" for v in shown["n"]]
    shown["construction"] = [_cut(str(c), 40) for c in shown["construction"]]
    shown["prob_within"] = [_fmt(v) if pd.notna(v) else "n.a." for v in table["prob_within"]]
    notes: dict[str, int] = {}
    if inline:
        shown["note"] = table["note"].fillna("")
    else:
        shown["note"] = [f"[{notes.setdefault(n, len(notes) + 1)}]" if n else "" for n in table["note"].fillna("")]
    return shown, [f"[{i}] {_shorter(str(note))}" for note, i in notes.items()]


def _int_text(table: pd.DataFrame) -> pd.DataFrame:
    """Integer columns with a missing cell as text ("" where missing), so they print without decimals."""
    ints = [c for c in table.columns if isinstance(table[c].dtype, pd.Int64Dtype)]
    return table.assign(**{c: [f"{v:,}" if not pd.isna(v) else "" for v in table[c]] for c in ints})


#: A reason or note longer than this (e.g. one naming thousands of groups) is cut where it is shown.
MAX_NOTE_CHARS = 1000


def _shorter(text: str) -> str:
    """``text``, cut at :data:`MAX_NOTE_CHARS` with a count of what was left out."""
    if len(text) <= MAX_NOTE_CHARS:
        return text
    return f"{text[:MAX_NOTE_CHARS]}... ({len(text) - MAX_NOTE_CHARS:,} more characters)"


# -- the summary every table reads -----------------------------------------------------
def _summary_row(res: Result, prob: float, eps: float) -> dict[str, Any]:
    """An estimate's own summary row; any other result is a point value: no interval, probability or verdict."""
    if isinstance(res, Estimate):
        try:
            return res.summary(prob, eps).iloc[0].to_dict()
        except ValueError:  # bounds made at one level only: the row at that level (its prob column says which)
            return res.summary(None, eps).iloc[0].to_dict()
    n = float(res.counts.sum()) if res.counts is not None else math.nan
    row = (res.key, float(res.value), math.nan, math.nan, prob, "none (a point value)", "audited rows", n, eps)
    return dict(zip(SUMMARY_COLUMNS, (*row, math.nan, "no interval", res.reason), strict=True))


def summary_table(
    results: Sequence[tuple[str, Result]], *, prob: float = 0.95, eps: float = DEFAULT_EPS
) -> pd.DataFrame:
    """One summary row per ``(name, result)``: ``result``, ``kind``, ``ideal``, then :data:`SUMMARY_COLUMNS`.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> res = sfm.msr("fairness.tpr").evaluate([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=list("FFMM"))
    >>> summary_table([("fairness.tpr", res)])[["result", "value", "verdict"]]
             result  value      verdict
    0  fairness.tpr    0.5  no interval
    """
    rows = [
        {"result": name, "kind": res.kind, "ideal": None if res.measure is None else res.measure.ideal}
        | _summary_row(res, prob, eps)
        for name, res in results
    ]
    return pd.DataFrame(rows, columns=["result", "kind", "ideal", *SUMMARY_COLUMNS])


#: Which summary row the headline speaks of: the first verdict of this order, then the largest gap.
_HEADLINE_RANK = {"exceeds": 0, "inconclusive": 1, "within": 2}


def _extremes(res: Result) -> str:
    """The text ' between A and B': the groups with the highest and the lowest base rate (the widest column)."""
    frame = res.by_group.to_frame() if isinstance(res.by_group, pd.Series) else res.by_group
    if frame is None or frame.empty or frame.notna().sum().max() < 2:
        return ""
    col = (frame.max() - frame.min()).idxmax()
    names = [n for n in frame.index.names if n is not None and not str(n).startswith("sensitive_feature_")]
    text = [
        ", ".join(map(str, g)) if isinstance(g, tuple) else str(g) for g in (frame[col].idxmax(), frame[col].idxmin())
    ]
    return f" between {text[0]} and {text[1]}" + (f" ({', '.join(map(str, names))})" if names else "")


def headline(summary: pd.DataFrame, results: Sequence[tuple[str, Result]], tables: Sequence[Any] = ()) -> str:
    """The verdict in words, from a :func:`summary_table`: the measure that matters most, its groups, its interval.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> res = sfm.msr("fairness.tpr").evaluate([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=list("FFMM"))
    >>> headline(summary_table([("fairness.tpr", res)]), [("fairness.tpr", res)])
    'fairness.tpr is 0.50 between M and F; no interval, so no verdict (add a bootstrap or a posterior)'
    """
    fair = summary[summary["measure"].str.startswith("fairness.") & summary["value"].notna()]
    if fair.empty:
        return ""
    gap = (fair["value"] - fair["ideal"].astype(float).fillna(0.0)).abs()
    rank = fair["verdict"].map(_HEADLINE_RANK).fillna(3)
    row = fair.loc[pd.DataFrame({"r": rank, "g": -gap}).sort_values(["r", "g"], kind="stable").index[0]]
    between = _extremes(results[int(row.name)][1])
    if row["verdict"] not in _HEADLINE_RANK:
        no = "no interval, so no verdict (add a bootstrap or a posterior)"
        return f"{row['measure']} is {row['value']:.2f}{between}; {no}"
    verb = {"exceeds": "exceeds", "within": "is within", "inconclusive": "is inconclusive against"}[row["verdict"]]
    return (
        f"{row['measure']} {verb} {row['eps']:g}{between}: interval {row['lower']:.2f} to {row['upper']:.2f} "
        f"({row['prob']:.0%}, {row['construction']})"
    )


# -- the audit, step by step -----------------------------------------------------------
def audit(
    data: pd.DataFrame,
    *,
    sensitive: str | Sequence[str] | None = None,
    label: str | None = "label",
    prediction: str | None = None,
    score: str | None = None,
    measures: Sequence[str | Measure] | None = None,
    threshold: float = 0.5,
    pos_label: Any = None,
    undefined: str | None = None,
    posterior: str | None = None,
    posterior_options: dict[str, Any] | None = None,
    eps: float = DEFAULT_EPS,
    prob: float = 0.95,
    proxies: Sequence[str] | None = None,
    proxy_metric: str = "dp",
    proxy_mode: str = "global",
    proxy_boot: int = 0,
    boot: int = 0,
    random_state: int | None = 0,
    figures: bool = True,
    progress: bool | None = None,
    title: str = "Fairness audit",
    source: str | None = None,
) -> AuditReport:
    """Audit a table of predictions: measures, groups, posteriors, proxy estimates.

    Parameters
    ----------
    data : pandas.DataFrame
        One row per prediction.
    sensitive : str or list of str, optional
        Sensitive column(s); several give intersectional groups. Required unless
        ``proxies`` are given (then only performance measures and the proxy
        estimate are computed).
    label : str or None, default="label"
        Column of true labels; a missing value marks an unlabeled row (used only by
        ``posterior="bc"`` and the demographic-parity proxy estimate). The column
        must exist; pass None for predictions without any labels.
    prediction : str, optional
        Column of predicted labels; default the column ``"prediction"`` if present,
        else the score thresholded at ``threshold``.
    score : str, optional
        Column of predicted probabilities of the positive class; default the column
        ``"score"`` if present. Needed for ``posterior="bc"`` and the score plots.
    measures : list of str or Measure, optional
        Measures or registry keys; default :data:`DEFAULT_MEASURES`.
    threshold : float, default=0.5
        Threshold turning scores into predicted labels, when there is no prediction column.
    pos_label : optional
        The positive label; default 1 for 0/1, -1/1 and boolean labels.
    undefined : {"propagate", "drop", "raise"}, optional
        What a group with an undefined rate (0/0) does to every measure
        (``measure.with_inputs(undefined=...)``); default each measure's own setting.
    posterior : {"auto", "bb", "bc", "bcr", "ppi"}, optional
        Also compute the posterior of every fairness measure (:mod:`skfair_measures.bayes`):
        Beta-Binomial on the labeled rows, or Bayesian calibration that adds the
        unlabeled rows' scores.
    posterior_options : dict, optional
        More arguments of :func:`skfair_measures.bayes.posteriors`, e.g.
        ``{"chains": 2, "tune": 500}`` or ``{"prior": "jeffreys"}``.
    eps : float, default=DEFAULT_EPS
        Margin of practical fairness: the report gives the posterior probability
        that a measure lies within ``eps`` of its ideal value (0 for a difference,
        1 for a ratio), and, with a posterior or a bootstrap, the verdicts: which
        differences of a rate between two groups are within ``eps``, beyond it, or
        undecided, jointly (:func:`skfair_measures.verdicts`).
    prob : float, default=0.95
        Level of the intervals, and the family-wise level of the verdicts.
    proxies : list of str, optional
        Columns holding guesses of the sensitive attribute (three or more weak
        proxies): adds the HOC-calibrated estimate of
        :func:`skfair_measures.unaware.proxy_disparity`.
    proxy_metric : {"dp", "eod", "eop"}, default="dp"
        Disparity estimated from the proxies.
    proxy_mode : {"global", "local", "base"}, default="global"
        Calibration mode of the proxy estimate.
    proxy_boot : int, default=0
        Bootstrap replicates for an interval of the proxy estimate.
    boot : int, default=0
        Bootstrap replicates of the fairness measures, drawn jointly
        (:func:`skfair_measures.bootstraps`): percentile intervals (``boot_low``,
        ``boot_high``) and simultaneous verdicts.
    random_state : int or None, default=0
        Seed of posteriors and bootstraps.
    figures : bool, default=True
        Draw the figures (needs matplotlib).
    progress : bool or None, default=None
        Progress bar over posteriors (tqdm, if installed); None: only on a terminal.
    title : str, default="Fairness audit"
        Report title.
    source : str, optional
        Where the data came from (shown in the report).

    Returns
    -------
    AuditReport

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"label": [1, 0, 1, 0, 1, 0, 1, 0],
    ...                    "prediction": [1, 0, 0, 0, 1, 1, 1, 0],
    ...                    "sex": list("FFFFMMMM")})
    >>> rep = audit(df, sensitive="sex", measures=["fairness.tpr", "classif.acc"], figures=False)
    >>> rep.table[["measure", "value"]]
            measure  value
    0  fairness.tpr   0.50
    1   classif.acc   0.75
    """
    _check_arguments(data, posterior, boot)
    check_prob(prob)
    cols = _resolve_columns(data, sensitive, label, prediction, score, proxies)
    ms = _resolve_measures(measures, undefined, has_sensitive=bool(cols.sensitive))
    rows = _read_rows(data, cols, pos_label, threshold, any_class=not any(_needs_positive(m) for m in ms))
    run = _Run(rows, prob, eps, random_state, progress)
    notes = run.notes
    ms = _measurable(ms, rows, cols, notes)
    results = _noting(notes, _by_rows, ms, rows, evaluate_measures)  # point values, each on the rows it reads
    fair = [m for m in ms if m.inputs.needs_sensitive]
    posteriors = _posteriors(run, fair, posterior, dict(posterior_options or {})) if posterior and fair else {}
    draw = functools.partial(bootstraps, n_boot=boot, random_state=random_state)
    boots = _noting(notes, _by_rows, fair, rows, draw) if boot and fair else {}
    verdicts = _noting(notes, verdict_tables, [*posteriors.values(), *boots.values()], eps, prob)
    named = [*results.items(), *boots.items(), *posteriors.items()]
    summary = summary_table(named, prob=prob, eps=eps)
    about = _summary(cols, rows, source)
    if posteriors:
        how = ", ".join(dict.fromkeys(summary.loc[summary["kind"] == "posterior", "construction"]))
        about["posterior"] = f"{_method_used(posterior, posteriors)} ({prob:.0%} intervals: {how}; eps = {eps:g})"
    proxy, proxy_results = _proxy_estimates(run, proxy_metric, proxy_mode, proxy_boot) if cols.proxies else (None, {})
    if cols.proxies and not math.isnan(truth := _noting(notes, _proxy_truth, rows, proxy_metric)):
        about["with the sensitive column"] = f"{_PROXY_TRUTH[proxy_metric]} = {truth:.4f} (what the proxies estimate)"
    return AuditReport(
        title=title,
        summary=about,
        table=_measure_table(summary, ms),
        by_group=_by_group_table(fair, results),
        proxy=proxy,
        figures=_figures(run, ms, results, posteriors) if figures else [],
        notes=notes,
        results=results,
        posteriors=posteriors,
        proxy_results=proxy_results,
        measures={m.key: m for m in ms},
        bootstraps=boots,
        verdicts=verdicts,
        headline=headline(summary, named, verdicts),
        intervals=summary[summary["kind"] != "point"].drop(columns=["result", "ideal"]).reset_index(drop=True),
    )


def _noting(notes: list[str], fn: Callable[..., T], *args: Any) -> T:
    """Call ``fn``, adding the messages of the warnings it raises to ``notes`` (once each)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return fn(*args)
        finally:
            for w in caught:
                message = str(w.message)
                if message not in notes:
                    notes.append(message)


# -- step 1: which columns play which role ---------------------------------------------
@dataclass(frozen=True)
class _Columns:
    """The column of each role (None where the data has none)."""

    sensitive: tuple[str, ...]
    proxies: tuple[str, ...]
    label: str | None
    prediction: str | None
    score: str | None


def _method_used(requested: str | None, posteriors: dict[str, Result]) -> str | None:
    """The posterior method as the report states it: what auto chose, e.g. "auto: bcr"."""
    used = sorted({getattr(p, "method", requested) for p in posteriors.values()})
    return requested if used == [requested] else f"{requested}: {', '.join(used)}"


def _check_arguments(data: Any, posterior: str | None, boot: Any = 0) -> None:
    if not isinstance(boot, int | np.integer) or boot < 0 or boot == 1:
        raise ValueError(f"boot={boot!r}; pass 0 (no bootstrap) or at least 2 replicates (typically 1000).")
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data must be a pandas DataFrame; got {type(data).__name__}.")
    if data.empty:
        raise ValueError(_NO_ROWS.format(columns=list(data.columns)))
    if posterior not in (None, *POSTERIOR_METHODS):
        raise ValueError(f"posterior={posterior!r}; pass one of {', '.join(map(repr, POSTERIOR_METHODS))} or None.")


def _require(data: pd.DataFrame, col: str, role: str) -> str:
    if col not in data.columns:
        raise KeyError(_MISSING_COLUMN.format(col=col, role=role, columns=list(data.columns)))
    return col


def _resolve_columns(
    data: pd.DataFrame,
    sensitive: str | Sequence[str] | None,
    label: str | None,
    prediction: str | None,
    score: str | None,
    proxies: Sequence[str] | None,
) -> _Columns:
    sens, prox = (() if c is None else (c,) if isinstance(c, str) else tuple(c) for c in (sensitive, proxies))
    if not sens and not prox:
        raise ValueError(_NO_SENSITIVE)
    for role, c in [*(("sensitive", c) for c in sens), *(("proxies", c) for c in prox)]:
        _require(data, c, role)
    if label is not None and label not in data.columns:
        raise KeyError(_NO_LABEL_COLUMN.format(col=label, columns=list(data.columns)))
    # given columns must exist; the default names are used when present
    pred = _require(data, prediction, "prediction") if prediction else ("prediction" if "prediction" in data else None)
    sc = _require(data, score, "score") if score else ("score" if "score" in data else None)
    if pred is None and sc is None:
        raise KeyError(
            _NO_PREDICTION.format(pred=prediction or "prediction", score=score or "score", columns=list(data.columns))
        )
    return _Columns(sensitive=sens, proxies=prox, label=label, prediction=pred, score=sc)


# -- step 2: which measures --------------------------------------------------------------
def _resolve_measures(
    measures: Sequence[str | Measure] | None, undefined: str | None, *, has_sensitive: bool
) -> list[Measure]:
    ms = as_measures(list(DEFAULT_MEASURES if measures is None else measures))
    if undefined is not None:
        ms = [m.with_inputs(undefined=undefined) for m in ms]
    if has_sensitive:
        return ms
    compare = [m.key for m in ms if m.inputs.needs_sensitive]
    if measures is not None and compare:
        raise ValueError(_COMPARE_WITHOUT_SENSITIVE.format(keys=compare))
    return [m for m in ms if not m.inputs.needs_sensitive]


def _measurable(ms: list[Measure], rows: _Rows, cols: _Columns, notes: list[str]) -> list[Measure]:
    """The measures, or none (with a note) when no row has a label but proxies can still say something."""
    if rows.labeled.any():
        return ms
    if not cols.proxies:
        where = "" if cols.label is None else f" (the column {cols.label!r} is empty in every row)"
        raise ValueError(_NO_LABELED_ROWS.format(where=where))
    if ms:
        notes.append("no labeled rows: measures that need true labels were skipped.")
    return []


# -- step 3: labels, predictions, scores and groups of every row ------------------------
@dataclass(frozen=True)
class _Rows:
    """Every row's label (NaN where unlabeled), 0/1 prediction, score and group."""

    y_true: np.ndarray
    y_pred: np.ndarray
    y_score: np.ndarray | None
    labeled: np.ndarray
    groups: pd.Series | pd.DataFrame | None
    #: The predicted label is ``score >= threshold`` where the data has no prediction column.
    threshold: float
    #: The proxy columns of the sensitive attribute (no column without ``proxies=``).
    proxies: pd.DataFrame

    def true_labels(self) -> np.ndarray:
        return self.y_true[self.labeled].astype(np.intp)

    def groups_of(self, rows: np.ndarray) -> pd.Series | pd.DataFrame | None:
        return None if self.groups is None else self.groups[rows].reset_index(drop=True)


def _coerce_label(value: Any, series: pd.Series) -> Any:
    """Cast a pos_label given as text (command line) to the column's type."""
    if not isinstance(value, str) or not pd.api.types.is_numeric_dtype(series):  # (a boolean column is numeric)
        return value
    if pd.api.types.is_bool_dtype(series):
        return value.lower() in ("1", "true", "yes")
    try:
        num = float(value)
    except ValueError:
        return value
    return int(num) if num.is_integer() else num


def _needs_positive(measure: Measure) -> bool:
    """Whether the measure's value depends on which class is positive (a leaf without base metrics: assume so)."""
    return not measure.bases or any(b.needs_positive for b in measure.bases)


def _read_rows(data: pd.DataFrame, cols: _Columns, pos_label: Any, threshold: float, any_class: bool = False) -> _Rows:
    """The rows as 0/1 labels; ``any_class``: no measure depends on which class is positive."""
    n = len(data)
    labeled = data[cols.label].notna().to_numpy() if cols.label else np.zeros(n, bool)
    y_score = None if cols.score is None else check_scores(data[cols.score], f"score column {cols.score!r}")
    y_true = np.full(n, np.nan)
    typed_by = cols.label if labeled.any() else cols.prediction  # the column whose type pos_label takes
    pos = pos_label if typed_by is None else _coerce_label(pos_label, data[typed_by])
    if labeled.any():
        y_lab = data.loc[labeled, cols.label].to_numpy()
        both = data[cols.prediction].to_numpy()[labeled] if cols.prediction else y_lab
        y_true[labeled], _, pos = binarize_labels(y_lab, both, pos, any_class=any_class and y_score is None)
    if cols.prediction is not None:
        # the classes are those of the labels and the predictions together, as for a measure (the
        # predictions alone miss a positive class that only y_true holds)
        p_all = data[cols.prediction].to_numpy()
        y_lab = data.loc[labeled, cols.label].to_numpy() if labeled.any() else p_all
        _, y_pred, _ = binarize_labels(y_lab, p_all, pos)
    else:
        y_pred = (y_score >= threshold).astype(np.intp)
    groups = None
    if cols.sensitive:
        groups = resolve_sensitive(X=data, columns=list(cols.sensitive), argument="sensitive").reset_index(drop=True)
    return _Rows(y_true, y_pred, y_score, labeled, groups, threshold, proxies=data[list(cols.proxies)])


@dataclass
class _Run:
    """What the steps of one audit read, and the notes they add to."""

    rows: _Rows
    prob: float
    eps: float
    random_state: Any
    progress: bool | None
    notes: list[str] = field(default_factory=list)


def _summary(cols: _Columns, rows: _Rows, source: str | None) -> dict[str, Any]:
    n_lab = int(rows.labeled.sum())
    return {
        "source": source or "(DataFrame)",
        "rows": rows.labeled.size,
        "labeled rows": n_lab,
        "unlabeled rows": rows.labeled.size - n_lab,
        "sensitive": ", ".join(cols.sensitive) or "(none)",
        "label": cols.label or "(none)",
        "prediction": cols.prediction or f"score >= {rows.threshold:g}",
        "score": cols.score or "(none)",
    }


# -- step 4: the measures, one pass of counts for all ----------------------------------
def _label_free(m: Measure) -> bool:
    """Whether every rate of the measure reads predictions only (the selection rate), so every row counts."""
    try:
        return all(ratio_roles(b).label_free for b in m.bases)
    except (TypeError, ValueError):  # not a rate of confusion cells (a scikit-learn metric, an error)
        return False


def _by_rows(ms: list[Measure], rows: _Rows, compute: Callable[..., dict[str, Result]]) -> dict[str, Result]:
    """``compute(measures, y_true, y_pred, sensitive_features=...)`` on the rows each measure reads, in ``ms``'s order.

    The labeled rows; or every row's prediction for a measure that needs no label (the selection
    rate), when some rows are unlabeled. Each set is computed in one call (jointly, for a bootstrap).
    """
    free = [m for m in ms if _label_free(m)] if not rows.labeled.all() else []
    rest = [m for m in ms if m not in free]
    out: dict[str, Result] = {}
    if free:  # every row (the groups are indexed by row already)
        out |= compute(free, rows.y_pred, rows.y_pred, sensitive_features=rows.groups)
    if rest:
        lab = rows.labeled
        out |= compute(rest, rows.true_labels(), rows.y_pred[lab], sensitive_features=rows.groups_of(lab))
    return {m.key: out[m.key] for m in ms}


def _direction(m: Measure) -> str:
    if m.minimize is not None:
        return "lower is fairer/better" if m.minimize else "higher is better"
    return f"closer to {m.ideal:g} is fairer" if m.ideal is not None else "signed"


def _measure_table(summary: pd.DataFrame, measures: Sequence[Measure] | None = None) -> pd.DataFrame:
    """The point values of a summary: value, the rows it used, why it is undefined; what each measure means."""
    point = summary[summary["kind"] == "point"].reset_index(drop=True)
    table = point[["measure", "value"]].assign(n=pd.array(point["n"].round(), dtype="Int64"), reason=point["note"])
    if measures is not None:
        table["direction"] = [_direction(m) for m in measures]
        table["description"] = [m.description for m in measures]
    return table


def _whole(counts: pd.Series) -> pd.Series:
    """Counts as integers when they are whole (unweighted rows)."""
    n = counts.to_numpy(dtype=float)
    return pd.Series(n.astype(np.int64) if np.all(n == np.round(n)) else n, index=counts.index)


def _by_group_table(fair: list[Measure], results: dict[str, Result]) -> pd.DataFrame:
    """Group sizes and every base metric per group, read off the results of the fairness measures.

    A composite's parts are its columns; a base metric shows under its name (under its measure's key when two
    measures share the name). ``n`` counts the labeled rows, ``n (all rows)`` the rows a rate without labels read.
    """
    values: dict[str, pd.Series] = {}
    labels: dict[str, str] = {}
    sizes: dict[str, pd.Series] = {}
    for m in fair:
        res, parts = results[m.key], [leaf for leaf in m.leaves() if leaf.inputs.needs_sensitive]
        frame = res.by_group.to_frame(parts[0].key) if isinstance(res.by_group, pd.Series) else res.by_group
        for leaf in parts:
            if frame is not None and leaf.key in frame and leaf.key not in values:
                values[leaf.key], labels[leaf.key] = frame[leaf.key], leaf.base_label
        if res.counts is not None:
            sizes.setdefault("n (all rows)" if _label_free(m) else "n", res.counts)
    if not values:
        return pd.DataFrame()
    if "n" in sizes and sizes["n"].equals(sizes.get("n (all rows)")):
        del sizes["n (all rows)"]
    names = list(labels.values())
    columns = {(labels[k] if names.count(labels[k]) == 1 else k): v for k, v in values.items()}
    table = pd.DataFrame({k: _whole(sizes[k]) for k in ("n", "n (all rows)") if k in sizes}).join(pd.DataFrame(columns))
    table.index.name = table.index.name or "group"
    return table


# -- step 5: posteriors of the fairness measures ----------------------------------------
def fit_each_if_joint_fails(
    fit: Callable[[list[Any]], dict[str, Result]], measures: list[Any], progress: bool | None = False, desc: str = ""
) -> tuple[dict[str, Result], list[tuple[str, Exception]], Exception | None]:
    """``fit(measures)``, one joint fit; if it fails (:data:`POSTERIOR_ERRORS`), ``fit([m])`` for each measure.

    Returns the results by key, ``(key, error)`` of each measure that failed on its own, and the joint
    fit's error (None when it succeeded).
    """
    try:
        return fit(measures), [], None
    except POSTERIOR_ERRORS as joint:
        out: dict[str, Result] = {}
        failed = []
        for m in progress_bar(measures, desc=desc, progress=progress):
            try:
                out |= fit([m])
            except POSTERIOR_ERRORS as exc:
                failed.append((m.key, exc))
        return out, failed, joint


def _posteriors(run: _Run, fair: list[Measure], method: str, options: dict[str, Any]) -> dict[str, Result]:
    """One fit (one MCMC run for bc) for every measure; one by one only if the joint fit fails."""
    _check_posterior_rows(run, method)
    seed = np.random.SeedSequence(run.random_state)
    joint_notes: list[str] = []  # noted only if the joint fit stands
    each_notes: list[str] = []

    def fit(ms: list[Measure]) -> dict[str, Result]:
        return _noting(joint_notes if ms is fair else each_notes, _fit_posteriors, ms, run.rows, method, seed, options)

    out, failed, joint = fit_each_if_joint_fails(fit, fair, run.progress, f"posterior ({method})")
    run.notes += [n for n in (each_notes if joint else joint_notes) if n not in run.notes]
    run.notes += [f"no posterior for {key}: {exc}" for key, exc in failed]
    return out


def _uses_scores(rows: _Rows, method: str) -> bool:
    """Whether the posterior reads the scores of labeled and unlabeled rows (auto: when it can)."""
    if METHODS[method].unlabeled == "optional":  # auto
        return rows.y_score is not None and not rows.labeled.all()
    return METHODS[method].unlabeled == "required"


def _check_posterior_rows(run: _Run, method: str) -> None:
    rows = run.rows
    if not _uses_scores(rows, method):
        if method == "auto":
            run.notes.append("posterior='auto' uses the Beta-Binomial model: there are no scores or no unlabeled rows.")
        return
    if rows.y_score is None:
        raise ValueError(f"posterior={method!r} uses scores: name the score column with score=.")
    if rows.labeled.all():
        raise ValueError(
            f"posterior={method!r} adds the unlabeled rows (rows with a missing label) to the "
            "labeled ones, and every row here has a label; use posterior='bb'."
        )
    if differ := int(((rows.y_score >= rows.threshold).astype(np.intp) != rows.y_pred).sum()):
        run.notes.append(
            f"the {method} posteriors take score >= {rows.threshold:g} as the prediction, which "
            f"differs from the prediction column in {differ} row(s)."
        )


def _fit_posteriors(measures: list[Measure], rows: _Rows, method: str, seed: Any, options: dict[str, Any]) -> dict:
    """Posteriors of the measures from one fit; the rows without a label are the unlabeled part."""
    from .bayes import posteriors

    lab = rows.labeled
    fit = {"sensitive_features": rows.groups_of(lab), "method": method, "random_state": np.random.default_rng(seed)}
    if not _uses_scores(rows, method):  # the predictions of the table, as 0/1 scores
        return posteriors(measures, rows.true_labels(), rows.y_pred[lab].astype(float), **fit, **options)
    unlabeled = {"unlabeled_scores": rows.y_score[~lab], "unlabeled_sensitive": rows.groups_of(~lab)}
    return posteriors(
        measures, rows.true_labels(), rows.y_score[lab], **fit, **unlabeled, threshold=rows.threshold, **options
    )


# -- step 6: estimates from proxies of the sensitive attribute ---------------------------
def _proxy_estimates(run: _Run, metric: str, mode: str, n_boot: int) -> tuple[pd.DataFrame, dict[str, Result]]:
    """The calibrated estimate next to the naive one (``mode="base"``): summary rows named by estimate, and the fits."""
    from .unaware import proxy_disparity

    rows = run.rows
    if metric != "dp" and not rows.labeled.any():
        raise ValueError(f"proxy_metric={metric!r} needs true labels; the data has no labeled row.")
    kwargs: dict[str, Any] = {"metric": metric, "n_boot": n_boot, "prob": run.prob, "random_state": run.random_state}
    y_pred, proxies = rows.y_pred, rows.proxies
    if metric != "dp":  # selection rates need no labels, so every row counts; the other rates read the labeled rows
        y_pred, proxies = y_pred[rows.labeled], proxies[rows.labeled].reset_index(drop=True)
        kwargs["y_true"] = rows.true_labels()
    modes = list(dict.fromkeys([mode, "base"]))

    def fit() -> dict[str, Result]:
        return {f"unaware.{metric}.{m}": proxy_disparity(y_pred, proxies, mode=m, **kwargs) for m in modes}

    fits = _noting(run.notes, fit)
    table = summary_table(list(fits.items()), prob=run.prob, eps=run.eps)  # the intervals' rows and columns
    methods = [_PROXY_METHODS[m] for m in modes]
    how = [f"{m}, {c}" for m, c in zip(methods, table["construction"], strict=True)] if n_boot else methods
    table = table.assign(measure=table["result"], construction=how)  # two estimates of one measure: by name
    return table.drop(columns=["result", "ideal"]), fits


def _proxy_truth(rows: _Rows, metric: str) -> float:
    """The same disparity measured with the sensitive column, when the proxies guess that column."""
    if not isinstance(rows.groups, pd.Series):  # several sensitive columns: the proxies guess none of them
        return np.nan
    if not set(pd.unique(rows.proxies.to_numpy().ravel())) <= set(pd.unique(rows.groups)):
        return np.nan
    measure = msr(_PROXY_TRUTH[metric])
    if metric == "dp":  # selection rates only: the predictions stand in for the labels
        return measure(rows.y_pred, rows.y_pred, sensitive_features=rows.groups)
    lab = rows.labeled
    return measure(rows.true_labels(), rows.y_pred[lab], sensitive_features=rows.groups_of(lab))


# -- step 7: figures ---------------------------------------------------------------------
_DPI = 150  # PNG resolution; the page shows them at _SHOWN_DPI, so they stay sharp on a dense screen
_SHOWN_DPI = 80


def figure_png(
    draw: Callable[[], Any],
    what: str,
    *,
    dpi: int = _DPI,
    left: str = "it is left out",
    notes: list[str] | None = None,
    expected: tuple[type[Exception], ...] = (),
) -> bytes | None:
    """The PNG of the figure ``draw()`` makes (an Axes or a Figure); every figure it opened is closed after.

    One that fails (other than ``expected``, which propagates) gives None and a warning, also in ``notes``:
    ``what`` could not be drawn, and ``left`` (what follows).
    """
    plt = require("matplotlib.pyplot", "figures")
    before = set(plt.get_fignums())
    try:
        buf, fig = io.BytesIO(), draw()
        getattr(fig, "figure", fig).savefig(buf, format="png", dpi=dpi)
        return buf.getvalue()
    except expected:
        raise
    except Exception as exc:  # noqa: BLE001 - a figure must never cost the report or the metrics
        why = f"{what} could not be drawn ({type(exc).__name__}: {exc}); {left}"
        warnings.warn(why, RuntimeWarning, stacklevel=3)
        if notes is not None:
            notes.append(why)
        return None
    finally:
        for num in set(plt.get_fignums()) - before:
            plt.close(num)


def _figures(run: _Run, ms: list[Measure], results: dict[str, Result], posteriors: dict[str, Result]) -> list:
    """Each plot at the size its function picks for the number of groups (legends beside many groups)."""
    require("matplotlib.pyplot", "the report's figures")
    from . import plots

    out: list[tuple[str, str]] = []

    def draw(caption: str, fn: Callable[[], Any], expected: tuple[type[Exception], ...] = ()) -> None:
        png = figure_png(fn, f"the figure {caption!r}", notes=run.notes, expected=expected)
        out.extend([] if png is None else [(caption, base64.b64encode(png).decode("ascii"))])

    rows, eps, prob, notes = run.rows, run.eps, run.prob, run.notes
    if rows.groups is None:
        return out
    fair_results = [results[m.key] for m in ms if m.inputs.needs_sensitive]
    if fair_results:
        draw("Base metrics by group", lambda: plots.groupwise_bars(fair_results))
    if rows.y_score is not None:
        draw("Predicted scores by group (all rows)", lambda: plots.prediction_density(rows.y_score, rows.groups))
        if rows.labeled.sum() >= 2:
            lab = rows.labeled
            draw(
                "Calibration by group (labeled rows)",
                lambda: plots.reliability_diagram(rows.true_labels(), rows.y_score[lab], rows.groups_of(lab)),
            )
    for key, post in posteriors.items():
        density = functools.partial(plots.posterior_density, post, eps=eps, prob=prob, label=key)
        try:
            draw(f"Posterior of {key}", density, expected=(ValueError,))
        except ValueError as exc:  # e.g. no finite draw: the table says why
            notes.append(f"no figure for the posterior of {key}: {exc}")
    return out


def _shown_width(b64: str) -> int:
    """Width in CSS pixels at which a PNG of ours is shown (from the width in its IHDR header)."""
    head = base64.b64decode(b64[:32])  # the 8-byte signature, then IHDR: length, type, width (big-endian)
    return round(int.from_bytes(head[16:20], "big") * _SHOWN_DPI / _DPI)


# -- HTML ---------------------------------------------------------------------------
_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1100px; color: #222; line-height: 1.4; padding: 0 1em; }
h1 { border-bottom: 3px solid #1f77b4; padding-bottom: .2em; }
h2 { margin-top: 1.8em; color: #1f4e79; }
table { border-collapse: collapse; margin: .6em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccd; padding: .3em .7em; text-align: left; }
th { background: #eef2f8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr:nth-child(even) td { background: #fafbfd; }
.summary td { text-align: left; }
.notes li { color: #8a5300; }
figure { display: inline-block; max-width: 100%; margin: .8em 1em .8em 0; vertical-align: top; }
figure img { max-width: 100%; height: auto; border: 1px solid #e3e6ea; }
figcaption { font-size: .9em; color: #555; text-align: center; }
.headline { font-size: 1.2em; font-weight: 600; background: #eef2f8; padding: .5em .8em; }
.footer { margin-top: 3em; font-size: .8em; color: #777; }
"""


_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def _cell(value: Any, missing: str) -> tuple[str, str]:
    """Text and CSS class of one table cell (numbers right-aligned; NaN shown as ``missing``)."""
    if isinstance(value, bool | np.bool_) or value is None:
        return str(value), "txt"
    if isinstance(value, int | np.integer):
        return str(value), "num"
    if isinstance(value, float | np.floating):
        return (missing, "txt") if np.isnan(value) else (_fmt(value), "num")
    return str(value), ("num" if _NUMBER.fullmatch(str(value)) else "txt")


def _table_html(df: pd.DataFrame, *, index: bool = False, missing: str = "") -> str:
    esc = html.escape
    names = [n for n in df.index.names if n is not None] if index else []
    head = ([" x ".join(map(str, names)) or "group"] if index else []) + [str(c) for c in df.columns]
    rows = []
    for label, *values in df.itertuples(name=None):  # (iterrows would cast an int column to float)
        cells = [f'<td class="{cls}">{esc(text)}</td>' for text, cls in (_cell(v, missing) for v in values)]
        if index:
            text = ", ".join(map(str, label)) if isinstance(label, tuple) else str(label)
            cells.insert(0, f'<th class="txt">{esc(text)}</th>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    thead = "".join(f"<th>{esc(h)}</th>" for h in head)
    return f"<table><thead><tr>{thead}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def render_html(report: AuditReport) -> str:
    """Render an :class:`AuditReport` as one self-contained HTML page.

    Styles are inline and figures are embedded as base64 PNG, so the file opens
    anywhere and can be mailed or archived as is; it loads nothing from the network.

    Returns
    -------
    str
        The HTML document.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"label": [1, 0, 1, 0], "prediction": [1, 0, 0, 0], "g": list("aabb")})
    >>> page = render_html(audit(df, sensitive="g", measures=["fairness.tpr"], figures=False))
    >>> page.startswith("<!DOCTYPE html>"), "fairness.tpr" in page
    (True, True)
    """
    esc = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(report.title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{esc(report.title)}</h1>",
        *([f'<p class="headline">{esc(report.headline)}</p>'] if report.headline else []),
        "<h2>Data</h2>",
        '<table class="summary">'
        + "".join(f"<tr><th>{esc(str(k))}</th><td>{esc(str(v))}</td></tr>" for k, v in report.summary.items())
        + "</table>",
    ]
    if not report.table.empty:
        parts += ["<h2>Measures</h2>", _table_html(_int_text(_shown_measures(report.table)[0]))]
    if not report.intervals.empty:
        shown = _shown_intervals(report.intervals, inline=True)[0]
        parts += ["<h2>Intervals and verdicts</h2>", f"<p>{esc(_intervals_heading(report.intervals))}</p>"]
        parts += [_table_html(shown)]
    if not report.by_group.empty:
        shown, left_out = _largest_groups(report.by_group)
        parts += ["<h2>Per group</h2>"] + ([f"<p>{esc(left_out.strip())}</p>"] if left_out else [])
        parts += [_table_html(shown, index=True, missing="undefined")]
    for table in report.verdicts:
        a = table.attrs
        parts += [
            f"<h2>Verdicts ({esc(a['source'])})</h2>",
            f"<p>For every base rate and pair of groups: the difference of the rate between the two groups, "
            f"an interval, and the verdict: <b>within</b> when the interval lies in [-eps, eps] with "
            f"eps = {a['eps']:g}, <b>exceeds</b> when it lies wholly outside, <b>inconclusive</b> otherwise "
            f"(<b>undefined</b>: a rate without a value). The intervals of the {a['family_size']} distinct "
            f"differences hold <em>jointly</em> "
            f"with probability {a['family_wise_level']:g} (family-wise level): with that probability no verdict "
            f"of the table is wrong. Construction: {esc(a['construction'])}.</p>",
            _table_html(table),
        ]
    if report.proxy is not None:
        parts += [
            "<h2>Without the sensitive attribute</h2>",
            "<p>Disparity estimated from proxies of the sensitive attribute "
            "(HOC calibration, Zhu et al. 2023), next to the naive estimate that uses the first "
            "proxy as if it were the attribute.</p>",
            _table_html(_shown_intervals(report.proxy, inline=True)[0]),
        ]
    if report.figures:
        parts.append("<h2>Figures</h2>")
        for caption, b64 in report.figures:
            parts.append(
                f'<figure><img src="data:image/png;base64,{b64}" width="{_shown_width(b64)}" alt="{esc(caption)}">'
                f"<figcaption>{esc(caption)}</figcaption></figure>"
            )
    if report.notes:
        parts += ['<h2>Notes</h2><ul class="notes">', *(f"<li>{esc(_shorter(n))}</li>" for n in report.notes), "</ul>"]
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts += [f'<p class="footer">skfair-measures {esc(__version__)}, {stamp}</p>', "</body></html>"]
    return "\n".join(parts)


def write_html(report: AuditReport, path: str | Path) -> Path:
    """Write :func:`render_html` of ``report`` to ``path`` (UTF-8, whole or not at all) and return the path."""
    path = Path(path)
    write_atomically(path, render_html(report))
    return path


def results_report(
    results: Sequence[tuple[str, Result]],
    *,
    prob: float = 0.95,
    eps: float = DEFAULT_EPS,
    figures: Sequence[tuple[str, str]] = (),
    title: str = "Fairness results",
    summary: pd.DataFrame | None = None,
    verdicts: Sequence[pd.DataFrame] | None = None,
) -> str:
    """The HTML report of results already computed (what ``log_fairness`` puts in a run).

    The headline verdict, the summary of every result (:func:`summary_table`), the values per
    group, the simultaneous verdicts and the ``figures`` (``(caption, base64 PNG)`` pairs).
    ``summary`` and ``verdicts``, when the caller has them (:func:`summary_table` and
    :func:`skfair_measures.verdicts` of the same results, ``prob`` and ``eps``), are not computed again.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> res = sfm.msr("fairness.tpr").evaluate([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=list("FFMM"))
    >>> "fairness.tpr is 0.50 between M and F" in results_report([("fairness.tpr", res)])
    True
    """
    results = list(results)
    summary = summary_table(results, prob=prob, eps=eps) if summary is None else summary
    verdicts = verdict_tables([r for _, r in results], eps, prob) if verdicts is None else list(verdicts)
    columns = {}
    for name, res in results:
        frame = res.by_group.to_frame() if isinstance(res.by_group, pd.Series) else res.by_group
        for col in [] if frame is None else frame.columns:
            columns.setdefault(f"{name}: {col}" + ("" if res.kind == "point" else f" ({res.kind})"), frame[col])
    report = AuditReport(
        title=title,
        summary={"results": len(results), "interval level (prob)": prob, "eps": eps},
        table=_measure_table(summary),
        intervals=summary[summary["kind"] != "point"].drop(columns=["result", "ideal"]).reset_index(drop=True),
        by_group=pd.DataFrame(columns),
        figures=list(figures),
        verdicts=verdicts,
        headline=headline(summary, results, verdicts),
    )
    return render_html(report)
