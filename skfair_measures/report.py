"""Fairness audit of a table of predictions, and its self-contained HTML report.

:func:`audit` takes a DataFrame with one row per prediction (label, predicted label
and/or score, sensitive columns), computes the chosen measures with their
per-group values and, on request, their Bayesian posteriors (rows with a missing
label form the unlabeled part) and a proxy-based estimate for when the sensitive
attribute is missing. :func:`render_html` turns the :class:`AuditReport` into a
single HTML page: inline CSS, plots embedded as base64 PNG, no external files,
scripts or fonts. The command line ``skfair audit`` (:mod:`skfair_measures.cli`)
is a thin layer over these two functions.

matplotlib is imported only when figures are drawn.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import __version__
from ._progress import progress_bar
from ._stats import binarize_labels
from .measures import Measure, MeasureResult, evaluate_measures
from .registry import msr

__all__ = ["DEFAULT_MEASURES", "AuditReport", "audit", "render_html", "write_html"]

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

_MISSING_COLUMN = "column {col!r} ({role}) is not in the data; its columns are {columns}."


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
        One row per measure: ``measure``, ``value``, ``direction``, ``description``,
        and, with a posterior, ``post_mean``, ``ci_low``, ``ci_high``, ``p_within_eps``.
    by_group : pandas.DataFrame
        Per group: ``n`` (labeled rows) and every base metric of the measures.
    proxy : pandas.DataFrame or None
        The proxy-based estimates (``--proxies``): value, interval, method.
    figures : list of (str, str)
        ``(caption, base64 PNG)`` pairs.
    notes : list of str
        Warnings raised along the way (undefined groups, skipped parts, ...).
    results : dict
        The :class:`MeasureResult` objects, by key.
    posteriors : dict
        The posterior objects, by measure key.
    proxy_results : dict
        The proxy estimate objects, by name.
    measures : dict
        The :class:`Measure` objects, by key.
    """

    title: str
    summary: dict[str, Any]
    table: pd.DataFrame
    by_group: pd.DataFrame
    proxy: pd.DataFrame | None = None
    figures: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    results: dict[str, MeasureResult] = field(default_factory=dict)
    posteriors: dict[str, Any] = field(default_factory=dict)
    proxy_results: dict[str, Any] = field(default_factory=dict)
    measures: dict[str, Measure] = field(default_factory=dict)

    def to_text(self) -> str:
        """The tables as plain text, as ``skfair audit`` prints them."""
        parts = [self.title, "=" * len(self.title), _summary_text(self.summary), ""]
        if not self.table.empty:
            cols = [c for c in self.table.columns if c != "description"]
            parts += [self.table[cols].to_string(index=False, float_format=_fmt), ""]
        if not self.by_group.empty:
            parts += ["Per group:", self.by_group.to_string(float_format=_fmt), ""]
        if self.proxy is not None:
            parts += ["Without the sensitive attribute (proxies):"]
            parts += [self.proxy.to_string(index=False, float_format=_fmt), ""]
        if self.notes:
            parts += ["Notes:"] + [f"- {n}" for n in self.notes]
        return "\n".join(parts).rstrip() + "\n"


def _fmt(x: float) -> str:
    return f"{x:.4f}"


def _summary_text(summary: dict[str, Any]) -> str:
    return "\n".join(f"{k}: {v}" for k, v in summary.items())


# -- helpers -------------------------------------------------------------------------
def _column(data: pd.DataFrame, col: str | None, role: str, *, required: bool) -> str | None:
    if col is None:
        return None
    if col not in data.columns:
        if required:
            raise KeyError(_MISSING_COLUMN.format(col=col, role=role, columns=list(data.columns)))
        return None
    return col


def _coerce_label(value: Any, series: pd.Series) -> Any:
    """Cast a pos_label given as text (command line) to the column's type."""
    if value is None or not isinstance(value, str):
        return value
    if pd.api.types.is_bool_dtype(series):
        return value.lower() in ("1", "true", "yes")
    if pd.api.types.is_numeric_dtype(series):
        try:
            num = float(value)
        except ValueError:
            return value
        return int(num) if num.is_integer() else num
    return value


def _direction(m: Measure) -> str:
    return {True: "lower is fairer/better", False: "higher is better", None: "0 is fair"}[m.minimize]


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _posterior_summary(post: Any, prob: float, eps: float) -> dict[str, float]:
    from .benchmark import _draws_of

    draws = None
    try:
        draws = _draws_of(post)
    except TypeError:
        pass

    def call(name: str, *args: Any) -> Any:
        f = getattr(post, name, None)
        if callable(f):
            try:
                return f(*args)
            except TypeError:
                return None
        return None

    mean = call("mean")
    interval = call("interval", prob)
    within = call("prob_within", eps)
    if mean is None and draws is not None:
        mean = float(np.mean(draws))
    if interval is None and draws is not None:
        a = (1 - prob) / 2
        interval = tuple(np.quantile(draws, [a, 1 - a]))
    if within is None and draws is not None:
        within = float(np.mean(np.abs(draws) <= eps))
    lo, hi = (np.nan, np.nan) if interval is None else (float(interval[0]), float(interval[1]))
    return {
        "post_mean": float(np.nan if mean is None else np.asarray(mean, dtype=float).mean()),
        "ci_low": lo,
        "ci_high": hi,
        "p_within_eps": float(np.nan if within is None else within),
    }


def _proxy_disparity() -> Any:
    from .unaware import proxy_disparity

    return proxy_disparity


# -- the audit -----------------------------------------------------------------------
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
    posterior: str | None = None,
    posterior_options: dict[str, Any] | None = None,
    eps: float = 0.05,
    prob: float = 0.95,
    proxies: Sequence[str] | None = None,
    proxy_metric: str = "dp",
    proxy_mode: str = "global",
    proxy_boot: int = 0,
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
        ``posterior="bc"`` and the demographic-parity proxy estimate). If the
        default column is absent, every row is unlabeled.
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
    posterior : {"bb", "bc"}, optional
        Also compute the posterior of every fairness measure (:mod:`skfair_measures.bayes`):
        Beta-Binomial on the labeled rows, or Bayesian calibration that adds the
        unlabeled rows' scores.
    posterior_options : dict, optional
        More arguments of :func:`skfair_measures.bayes.posterior`, e.g.
        ``{"chains": 2, "tune": 500}`` or ``{"prior": "jeffreys"}``.
    eps : float, default=0.05
        Margin of practical fairness: the report gives ``P(|measure| <= eps)``.
    prob : float, default=0.95
        Mass of the credible intervals.
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
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data must be a pandas DataFrame; got {type(data).__name__}.")
    if posterior not in (None, "bb", "bc"):
        raise ValueError(f"posterior={posterior!r}; pass 'bb', 'bc' or None.")
    sens_cols = [] if sensitive is None else ([sensitive] if isinstance(sensitive, str) else list(sensitive))
    proxy_cols = list(proxies or [])
    for c in sens_cols:
        _column(data, c, "sensitive", required=True)
    for c in proxy_cols:
        _column(data, c, "proxies", required=True)
    label_col = _column(data, label, "label", required=label != "label")
    pred_col = _column(data, prediction or "prediction", "prediction", required=prediction is not None)
    score_col = _column(data, score or "score", "score", required=score is not None)
    if pred_col is None and score_col is None:
        raise KeyError(
            "the data has neither a prediction nor a score column (looked for "
            f"{prediction or 'prediction'!r} and {score or 'score'!r}); its columns are "
            f"{list(data.columns)}. Name them with prediction= / score= (--prediction / --score)."
        )
    if not sens_cols and not proxy_cols:
        raise ValueError(
            "name the sensitive column(s) (sensitive= / --sensitive), or give proxies of "
            "the sensitive attribute (proxies= / --proxies)."
        )

    ms = [msr(m) if isinstance(m, str) else m for m in (measures or DEFAULT_MEASURES)]
    notes: list[str] = []
    if not sens_cols:
        skipped = [m.key for m in ms if m.requires_sensitive]
        if measures is not None and skipped:
            raise ValueError(f"the measures {skipped} compare groups: name the sensitive column(s).")
        ms = [m for m in ms if not m.requires_sensitive]

    # labels, predictions, scores on every row; the labeled part for the measures
    labeled = data[label_col].notna().to_numpy() if label_col else np.zeros(len(data), bool)
    y_score = None
    if score_col is not None:
        from ._stats import check_scores

        y_score = check_scores(data[score_col], f"score column {score_col!r}")
    if label_col is not None and labeled.any():
        pos = _coerce_label(pos_label, data[label_col])
        y_lab = data.loc[labeled, label_col].to_numpy()
        if pred_col is not None:
            p_all = data[pred_col].to_numpy()
            t, _, pos = binarize_labels(y_lab, p_all[labeled], pos)
            _, y_pred, _ = binarize_labels(p_all, p_all, pos)
        else:
            t, _, pos = binarize_labels(y_lab, y_lab, pos)
            y_pred = (y_score >= threshold).astype(np.intp)
        y_true = np.full(len(data), np.nan)
        y_true[labeled] = t
    else:
        y_true = np.full(len(data), np.nan)
        if pred_col is not None:
            p_all = data[pred_col].to_numpy()
            pos = _coerce_label(pos_label, data[pred_col])
            _, y_pred, _ = binarize_labels(p_all, p_all, pos)
        else:
            y_pred = (y_score >= threshold).astype(np.intp)
        if ms:
            notes.append("no labeled rows: measures that need true labels were skipped.")
        ms = []
    A = None
    if sens_cols:
        A = data[sens_cols[0]] if len(sens_cols) == 1 else data[sens_cols]
        A = A.reset_index(drop=True)
    n_lab = int(labeled.sum())

    summary = {
        "source": source or "(DataFrame)",
        "rows": len(data),
        "labeled rows": n_lab,
        "unlabeled rows": len(data) - n_lab,
        "sensitive": ", ".join(sens_cols) or "(none)",
        "label": label_col or "(none)",
        "prediction": pred_col or f"score >= {threshold:g}",
        "score": score_col or "(none)",
    }

    # measures, one pass of counts for all
    results: dict[str, MeasureResult] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if ms:
            A_lab = None if A is None else A[labeled].reset_index(drop=True)
            results = evaluate_measures(ms, y_true[labeled].astype(np.intp), y_pred[labeled], sensitive_features=A_lab)
    notes += _unique_messages(caught)
    table = pd.DataFrame(
        [
            {
                "measure": m.key,
                "value": results[m.key].value,
                "direction": _direction(m),
                "description": m.description,
            }
            for m in ms
        ],
        columns=["measure", "value", "direction", "description"],
    )
    by_group = _by_group_table(results, A[labeled] if A is not None else None)

    # posteriors of the fairness measures
    posteriors: dict[str, Any] = {}
    if posterior is not None and A is not None:
        fair = [m for m in ms if m.requires_sensitive]
        if posterior == "bc":
            if y_score is None:
                raise ValueError("posterior='bc' calibrates scores: give a score column (score= / --score).")
            if labeled.all():
                raise ValueError(
                    "posterior='bc' adds the unlabeled rows (rows with a missing label) to the "
                    "labeled ones, and every row here has a label; use posterior='bb'."
                )
            differ = int(((y_score >= threshold).astype(np.intp) != y_pred).sum())
            if differ:
                notes.append(
                    f"the bc posteriors take score >= {threshold:g} as the prediction, which "
                    f"differs from the prediction column in {differ} row(s)."
                )
        seed = np.random.SeedSequence(random_state)
        args = (y_true, y_pred, y_score, A, labeled, posterior, threshold, seed, dict(posterior_options or {}))
        errors = (NotImplementedError, ValueError, TypeError, ImportError)
        # one fit (one MCMC run for bc) serves every measure; one by one only if some measure cannot have one
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                posteriors.update(_posteriors_of(fair, *args) if fair else {})
                joint = True
            except errors:
                joint = False
        if joint:
            notes += _unique_messages(caught)
        else:
            for m in progress_bar(fair, desc=f"posterior ({posterior})", progress=progress):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        posteriors.update(_posteriors_of([m], *args))
                    except errors as exc:
                        notes.append(f"no posterior for {m.key}: {exc}")
                notes += _unique_messages(caught)
        if posteriors:
            rows = {k: _posterior_summary(p, prob, eps) for k, p in posteriors.items()}
            post_tab = pd.DataFrame.from_dict(rows, orient="index")
            table = table.join(post_tab, on="measure")
            summary["posterior"] = f"{posterior} ({prob:.0%} credible intervals, eps = {eps:g})"

    # proxies of the sensitive attribute
    proxy_tab, proxy_results = None, {}
    if proxy_cols:
        proxy_tab, proxy_results, pnotes = _proxy_estimates(
            data,
            proxy_cols,
            y_true,
            y_pred,
            labeled,
            proxy_metric,
            proxy_mode,
            proxy_boot,
            prob,
            random_state,
            results,
            A,
        )
        notes += pnotes

    figs: list[tuple[str, str]] = []
    if figures:
        figs = _figures(results, y_true, y_score, A, labeled, posteriors, eps, prob)

    return AuditReport(
        title=title,
        summary=summary,
        table=table,
        by_group=by_group,
        proxy=proxy_tab,
        figures=figs,
        notes=notes,
        results=results,
        posteriors=posteriors,
        proxy_results=proxy_results,
        measures={m.key: m for m in ms},
    )


def _unique_messages(caught: list[warnings.WarningMessage]) -> list[str]:
    out: list[str] = []
    for w in caught:
        msg = str(w.message)
        if msg not in out:
            out.append(msg)
    return out


def _by_group_table(results: dict[str, MeasureResult], A: Any) -> pd.DataFrame:
    cols: dict[str, pd.Series] = {}
    counts = None
    for r in results.values():
        if r.by_group is None or r.counts is None or r.key.startswith(("classif.", "regr.")):
            continue
        counts = r.counts if counts is None else counts
        frame = r.by_group.to_frame() if isinstance(r.by_group, pd.Series) else r.by_group
        for c in frame.columns:
            cols.setdefault(str(c).removeprefix("fairness."), frame[c])
    if counts is None:
        return pd.DataFrame()
    n = counts.to_numpy(dtype=float)
    n_col = n.astype(np.int64) if np.all(n == np.round(n)) else n
    table = pd.DataFrame({"n": pd.Series(n_col, index=counts.index), **cols})
    table.index.name = table.index.name or "group"
    return table


def _posteriors_of(
    measures: list[Measure],
    y_true: np.ndarray,
    y_pred: np.ndarray,
    y_score: np.ndarray | None,
    A: Any,
    labeled: np.ndarray,
    method: str,
    threshold: float,
    seed: np.random.SeedSequence,
    options: dict[str, Any],
) -> dict[str, Any]:
    """Posteriors of the measures from one fit; the rows without a label are the unlabeled part."""
    from .bayes import posteriors

    rng = np.random.default_rng(seed)
    t = y_true[labeled].astype(np.intp)
    A_lab = A[labeled].reset_index(drop=True)
    if method == "bb":  # the predictions of the table, as 0/1 scores
        return posteriors(
            measures, t, y_pred[labeled].astype(float), sensitive_features=A_lab, method="bb", random_state=rng,
            **options,
        )
    return posteriors(
        measures,
        t,
        y_score[labeled],
        sensitive_features=A_lab,
        method="bc",
        unlabeled_scores=y_score[~labeled],
        unlabeled_sensitive=A[~labeled].reset_index(drop=True),
        threshold=threshold,
        random_state=rng,
        **options,
    )


def _proxy_estimates(
    data: pd.DataFrame,
    proxy_cols: list[str],
    y_true: np.ndarray,
    y_pred: np.ndarray,
    labeled: np.ndarray,
    metric: str,
    mode: str,
    n_boot: int,
    prob: float,
    random_state: Any,
    results: dict[str, MeasureResult],
    A: Any,
) -> tuple[pd.DataFrame, dict[str, Any], list[str]]:
    proxy_disparity = _proxy_disparity()
    notes: list[str] = []
    rows = slice(None) if metric == "dp" else labeled
    if metric != "dp" and not labeled.any():
        raise ValueError(f"proxy_metric={metric!r} needs true labels; the data has no labeled row.")
    kwargs: dict[str, Any] = {"n_boot": n_boot, "confidence_level": prob, "random_state": random_state}
    if metric != "dp":
        kwargs["y_true"] = y_true[rows].astype(np.intp)
    proxies = data.loc[rows, proxy_cols].reset_index(drop=True) if metric != "dp" else data[proxy_cols]
    out: dict[str, Any] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for m in dict.fromkeys([mode, "base"]):
            out[f"unaware.{metric}.{m}"] = proxy_disparity(y_pred[rows], proxies, metric=metric, mode=m, **kwargs)
    notes += _unique_messages(caught)
    # the same disparity with the sensitive column, when the proxies guess that column
    truth = np.nan
    sens_values = set(pd.unique(A)) if isinstance(A, pd.Series) else set()
    proxy_values = set(pd.unique(data[proxy_cols].to_numpy().ravel()))
    if sens_values and proxy_values <= sens_values:
        key = {"dp": "fairness.cv", "eod": "fairness.eod", "eop": "fairness.tpr"}[metric]
        if metric == "dp":  # selection rates only: the predictions stand in for the labels
            truth = msr(key)(y_pred, y_pred, sensitive_features=A)
        elif labeled.any():
            truth = msr(key)(
                y_true[labeled].astype(np.intp),
                y_pred[labeled],
                sensitive_features=A[labeled].reset_index(drop=True),
            )
    table = pd.DataFrame(
        [
            {
                "estimate": name,
                "value": float(r.value),
                "ci_low": np.nan if r.interval is None else float(r.interval[0]),
                "ci_high": np.nan if r.interval is None else float(r.interval[1]),
                "method": "HOC-calibrated proxies" if r.mode != "base" else "first proxy as attribute",
                "with the sensitive column": truth,
            }
            for name, r in out.items()
        ]
    )
    if table[["ci_low", "ci_high"]].isna().all().all():
        table = table.drop(columns=["ci_low", "ci_high"])
    if table["with the sensitive column"].isna().all():
        table = table.drop(columns="with the sensitive column")
    return table, out, notes


def _figures(
    results: dict[str, MeasureResult],
    y_true: np.ndarray,
    y_score: np.ndarray | None,
    A: Any,
    labeled: np.ndarray,
    posteriors: dict[str, Any],
    eps: float,
    prob: float,
) -> list[tuple[str, str]]:
    from matplotlib.figure import Figure

    from . import plots

    out: list[tuple[str, str]] = []

    def draw(caption: str, fn: Any, size: tuple[float, float] = (6.4, 4.0)) -> None:
        fig = Figure(figsize=size, layout="constrained")
        fn(fig.add_subplot())
        out.append((caption, _png(fig)))

    if any(r.by_group is not None for r in results.values()) and A is not None:
        draw("Base metrics by group", lambda ax: plots.groupwise_bars(results, ax=ax))
    if y_score is not None and A is not None:
        draw(
            "Predicted scores by group (all rows)",
            lambda ax: plots.prediction_density(y_score, A, ax=ax),
        )
        if labeled.sum() >= 2:
            draw(
                "Calibration by group (labeled rows)",
                lambda ax: plots.reliability_diagram(
                    y_true[labeled].astype(np.intp),
                    y_score[labeled],
                    A[labeled].reset_index(drop=True),
                    ax=ax,
                ),
                (5.6, 5.0),
            )
    for key, post in posteriors.items():
        try:
            draw(
                f"Posterior of {key}",
                lambda ax, post=post, key=key: plots.posterior_density(post, eps=eps, prob=prob, label=key, ax=ax),
                (6.4, 3.8),
            )
        except (TypeError, ValueError):
            continue
    return out


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
figure { display: inline-block; width: 48%; margin: .8em 1% .8em 0; vertical-align: top; }
figure img { width: 100%; border: 1px solid #e3e6ea; }
figcaption { font-size: .9em; color: #555; text-align: center; }
.footer { margin-top: 3em; font-size: .8em; color: #777; }
"""


def _cell(value: Any) -> tuple[str, str]:
    """Text and CSS class of one table cell (numbers right-aligned)."""
    if isinstance(value, bool | np.bool_) or value is None:
        return str(value), "txt"
    if isinstance(value, int | np.integer):
        return str(value), "num"
    if isinstance(value, float | np.floating):
        if np.isnan(value):
            return "NaN", "num"
        return (str(int(value)) if value.is_integer() and abs(value) >= 1 else _fmt(value)), "num"
    return str(value), "txt"


def _table_html(df: pd.DataFrame, *, index: bool = False) -> str:
    esc = html.escape
    names = [n for n in df.index.names if n is not None] if index else []
    head = ([" x ".join(map(str, names)) or "group"] if index else []) + [str(c) for c in df.columns]
    rows = []
    for label, (_, row) in zip(df.index, df.iterrows(), strict=True):
        cells = []
        if index:
            text = ", ".join(map(str, label)) if isinstance(label, tuple) else str(label)
            cells.append(f'<th class="txt">{esc(text)}</th>')
        for v in row.tolist():
            text, cls = _cell(v)
            cells.append(f'<td class="{cls}">{esc(text)}</td>')
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
        "<h2>Data</h2>",
        '<table class="summary">'
        + "".join(f"<tr><th>{esc(str(k))}</th><td>{esc(str(v))}</td></tr>" for k, v in report.summary.items())
        + "</table>",
    ]
    if not report.table.empty:
        parts += ["<h2>Measures</h2>", _table_html(report.table)]
    if not report.by_group.empty:
        parts += ["<h2>Per group</h2>", _table_html(report.by_group, index=True)]
    if report.proxy is not None:
        parts += [
            "<h2>Without the sensitive attribute</h2>",
            "<p>Disparity estimated from proxies of the sensitive attribute "
            "(HOC calibration, Zhu et al. 2023), next to the naive estimate that uses the first "
            "proxy as if it were the attribute.</p>",
            _table_html(report.proxy),
        ]
    if report.figures:
        parts.append("<h2>Figures</h2>")
        for caption, b64 in report.figures:
            parts.append(
                f'<figure><img src="data:image/png;base64,{b64}" alt="{esc(caption)}">'
                f"<figcaption>{esc(caption)}</figcaption></figure>"
            )
    if report.notes:
        parts += ['<h2>Notes</h2><ul class="notes">']
        parts += [f"<li>{esc(n)}</li>" for n in report.notes]
        parts.append("</ul>")
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts.append(f'<p class="footer">skfair-measures {esc(__version__)}, {stamp}</p>')
    parts.append("</body></html>")
    return "\n".join(parts)


def write_html(report: AuditReport, path: str | Path) -> Path:
    """Write :func:`render_html` of ``report`` to ``path`` (UTF-8) and return the path."""
    path = Path(path)
    path.write_text(render_html(report), encoding="utf-8")
    return path
