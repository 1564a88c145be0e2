"""Plots of fairness measures (matplotlib), imported explicitly.

``import skfair_measures`` does not load matplotlib; use
``from skfair_measures import plots``. Every function draws on the Axes given as
``ax=`` (or on a new figure) and returns that Axes, so plots compose into subplots
and save with ``ax.figure.savefig(...)``. Nothing calls ``plt.show()``; the
functions work with the non-interactive Agg backend.

=================================  ==================================================
Function                           Shows
=================================  ==================================================
:func:`fairness_accuracy_tradeoff`  a fairness measure against a performance measure,
                                   one point per fold and the mean, per learner
:func:`compare_measures`           mean (and sd) over folds, per measure and learner
:func:`prediction_density`         density of the predicted scores, per group
:func:`posterior_density`          posterior of a disparity, its credible interval and
                                   the +-eps band of practical equivalence
:func:`reliability_diagram`        binned calibration curve, per group
:func:`groupwise_bars`             base-metric value per group of measure results
=================================  ==================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from ._stats import encode_groups
from .benchmark import BenchmarkResult, _draws_of

if TYPE_CHECKING:  # pragma: no cover
    from .measures import MeasureResult

__all__ = [
    "compare_measures",
    "fairness_accuracy_tradeoff",
    "groupwise_bars",
    "posterior_density",
    "prediction_density",
    "reliability_diagram",
]


def _axes(ax: Axes | None, figsize: tuple[float, float] = (6.0, 4.0)) -> Axes:
    if ax is not None:
        return ax
    _, new = plt.subplots(figsize=figsize, layout="constrained")
    return new


def _colors(n: int) -> list[Any]:
    cmap = plt.get_cmap("tab10")
    return [cmap(i % 10) for i in range(n)]


def _group_label(label: Any, names: Sequence[Any]) -> str:
    if isinstance(label, tuple):
        return ", ".join(f"{n}={v}" for n, v in zip(names, label, strict=False))
    return str(label)


def _groups(sensitive_features: Any, n: int) -> tuple[np.ndarray, list[str]]:
    codes, index = encode_groups(sensitive_features, n)
    names = list(index.names)
    return codes, [_group_label(g, names) for g in index]


def _direction(result: BenchmarkResult, key: str) -> str:
    minimize = result.measures[key].minimize
    return {True: "lower is better", False: "higher is better", None: "closer to 0 is better"}[minimize]


# -- benchmark plots ---------------------------------------------------------------
def fairness_accuracy_tradeoff(
    result: BenchmarkResult,
    fairness_measure: str | None = None,
    accuracy_measure: str | None = None,
    *,
    show_folds: bool = True,
    ax: Axes | None = None,
) -> Axes:
    """Fairness against performance: one point per fold and the mean, per learner.

    Parameters
    ----------
    result : BenchmarkResult
        From :func:`skfair_measures.benchmark.benchmark`.
    fairness_measure : str, optional
        Key on the x axis; default the first benchmarked measure that compares groups.
    accuracy_measure : str, optional
        Key on the y axis; default the first benchmarked measure that does not.
    show_folds : bool, default=True
        Draw the per-fold values (small, translucent) besides the means (large).
    ax : matplotlib Axes, optional
        Where to draw; a new figure if None.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skfair_measures.benchmark import benchmark
    >>> rng = np.random.default_rng(0)
    >>> X, A = rng.normal(size=(120, 2)), rng.choice(["a", "b"], 120)
    >>> y = (X[:, 0] + rng.normal(size=120) > 0).astype(int)
    >>> bmr = benchmark([LogisticRegression()], X, y, A,
    ...                 measures=["fairness.eod", "classif.acc"], random_state=0)
    >>> ax = fairness_accuracy_tradeoff(bmr)
    >>> ax.get_xlabel()
    'fairness.eod (lower is better)'
    """
    keys = list(result.measures)
    if fairness_measure is None:
        fair = [k for k in keys if result.measures[k].requires_sensitive]
        if not fair:
            raise ValueError("the benchmark has no fairness measure; pass fairness_measure=.")
        fairness_measure = fair[0]
    if accuracy_measure is None:
        perf = [k for k in keys if not result.measures[k].requires_sensitive]
        if not perf:
            raise ValueError("the benchmark has no performance measure (such as classif.acc); pass accuracy_measure=.")
        accuracy_measure = perf[0]
    result._keys([fairness_measure, accuracy_measure])
    ax = _axes(ax)
    wide = result.scores.pivot_table(index=["learner", "fold"], columns="measure", values="value", dropna=False)
    for learner, color in zip(result.learners, _colors(len(result.learners)), strict=True):
        sub = wide.loc[learner]
        x, y = sub[fairness_measure].to_numpy(), sub[accuracy_measure].to_numpy()
        if show_folds:
            ax.scatter(x, y, color=color, alpha=0.4, s=25, edgecolor="none")
        ax.scatter(np.mean(x), np.mean(y), color=color, s=110, marker="D", edgecolor="black", label=learner)
    ax.set_xlabel(f"{fairness_measure} ({_direction(result, fairness_measure)})")
    ax.set_ylabel(f"{accuracy_measure} ({_direction(result, accuracy_measure)})")
    ax.set_title("Fairness-accuracy trade-off" + (" (dots: folds, diamonds: mean)" if show_folds else ""))
    ax.grid(alpha=0.3)
    ax.legend(title="learner", frameon=False)
    return ax


def compare_measures(
    result: BenchmarkResult,
    measures: Sequence[str] | None = None,
    *,
    error_bars: bool = True,
    ax: Axes | None = None,
) -> Axes:
    r"""Bars of the mean over folds, one group of bars per measure, one bar per learner.

    Parameters
    ----------
    result : BenchmarkResult
        From :func:`skfair_measures.benchmark.benchmark`.
    measures : list of str, optional
        Keys to show; default all.
    error_bars : bool, default=True
        Draw +-1 standard deviation over folds.
    ax : matplotlib Axes, optional
        Where to draw; a new figure if None.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.dummy import DummyClassifier
    >>> from skfair_measures.benchmark import benchmark
    >>> rng = np.random.default_rng(0)
    >>> X, A = rng.normal(size=(90, 2)), rng.choice(["a", "b"], 90)
    >>> y = rng.integers(0, 2, 90)
    >>> bmr = benchmark([DummyClassifier()], X, y, A,
    ...                 measures=["fairness.cv", "classif.acc"], random_state=0)
    >>> [t.get_text() for t in compare_measures(bmr).get_xticklabels()]
    ['fairness.cv\n(lower is better)', 'classif.acc\n(higher is better)']
    """
    keys = result._keys(measures)
    agg = result.aggregate(keys, sd=True).set_index("learner")
    ax = _axes(ax, (max(5.0, 1.6 * len(keys) + 2.0), 4.0))
    n_learners = len(result.learners)
    width = 0.8 / n_learners
    pos = np.arange(len(keys))
    for i, (learner, color) in enumerate(zip(result.learners, _colors(n_learners), strict=True)):
        means = agg.loc[learner, keys].to_numpy(dtype=float)
        sds = agg.loc[learner, [f"{k}_sd" for k in keys]].to_numpy(dtype=float)
        ax.bar(
            pos + (i - (n_learners - 1) / 2) * width,
            means,
            width,
            yerr=sds if error_bars else None,
            capsize=3,
            color=color,
            label=learner,
        )
    ax.set_xticks(pos, [f"{k}\n({_direction(result, k)})" for k in keys])
    ax.set_ylabel("mean over folds" + (" (+-1 sd)" if error_bars else ""))
    ax.set_title(f"Measures by learner ({result.n_folds}-fold CV)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(title="learner", frameon=False)
    return ax


# -- predictions ---------------------------------------------------------------------
def prediction_density(
    y_score: Any,
    sensitive_features: Any,
    *,
    kind: str = "kde",
    bins: int = 20,
    ax: Axes | None = None,
) -> Axes:
    """Density of the predicted scores in each group.

    Parameters
    ----------
    y_score : array-like of shape (n_samples,)
        Predicted probability of the positive class.
    sensitive_features : array-like of shape (n_samples,) or DataFrame
        Group of each sample; several columns give intersectional groups.
    kind : {"kde", "hist"}, default="kde"
        Gaussian kernel density (on [0, 1]) or a step histogram. Groups with fewer
        than two distinct scores are drawn as histograms.
    bins : int, default=20
        Number of histogram bins.
    ax : matplotlib Axes, optional
        Where to draw; a new figure if None.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> ax = prediction_density([0.1, 0.2, 0.3, 0.7, 0.8, 0.9], list("aaabbb"))
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['a (n=3)', 'b (n=3)']
    """
    from scipy.stats import gaussian_kde

    from ._stats import check_scores

    if kind not in ("kde", "hist"):
        raise ValueError(f"kind={kind!r}; pass 'kde' or 'hist'.")
    s = check_scores(y_score)
    codes, labels = _groups(sensitive_features, s.size)
    ax = _axes(ax)
    grid = np.linspace(0.0, 1.0, 201)
    for g, (label, color) in enumerate(zip(labels, _colors(len(labels)), strict=True)):
        sg = s[codes == g]
        if sg.size == 0:
            continue
        name = f"{label} (n={sg.size})"
        if kind == "kde" and np.unique(sg).size > 1:
            dens = gaussian_kde(sg)(grid)
            ax.plot(grid, dens, color=color, label=name)
            ax.fill_between(grid, dens, color=color, alpha=0.3 / len(labels))
        else:
            ax.hist(sg, bins=bins, range=(0, 1), density=True, histtype="step", color=color, label=name)
    ax.set_xlim(0, 1)
    ax.set_xlabel("predicted probability of the positive class")
    ax.set_ylabel("density")
    ax.set_title("Prediction density by group")
    ax.legend(title="group", frameon=False)
    return ax


def reliability_diagram(
    y_true: Any,
    y_score: Any,
    sensitive_features: Any,
    *,
    n_bins: int = 10,
    strategy: str = "uniform",
    pos_label: Any = None,
    ax: Axes | None = None,
) -> Axes:
    """Binned calibration curve in each group: observed positive rate per score bin.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True binary labels.
    y_score : array-like of shape (n_samples,)
        Predicted probability of the positive class.
    sensitive_features : array-like of shape (n_samples,) or DataFrame
        Group of each sample.
    n_bins : int, default=10
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width bins on [0, 1], or bins with equal counts (over all groups).
    pos_label : optional
        The positive label; default 1 for 0/1, -1/1 and boolean labels.
    ax : matplotlib Axes, optional
        Where to draw; a new figure if None.

    Returns
    -------
    matplotlib.axes.Axes
        Marker area grows with the number of samples in a bin.

    Examples
    --------
    >>> ax = reliability_diagram([0, 1, 0, 1, 1, 0], [0.2, 0.8, 0.3, 0.6, 0.9, 0.1], list("aabbab"))
    >>> ax.get_xlabel()
    'mean predicted probability'
    """
    from ._stats import _to_1d, binarize_labels, check_scores

    s = check_scores(y_score)
    t_raw = _to_1d(y_true, "y_true")
    if t_raw.size != s.size:
        raise ValueError(f"y_score has {s.size} samples but y_true has {t_raw.size}.")
    t, _, _ = binarize_labels(t_raw, t_raw, pos_label)
    codes, labels = _groups(sensitive_features, s.size)
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    elif strategy == "quantile":
        edges = np.unique(np.quantile(s, np.linspace(0.0, 1.0, n_bins + 1)))
    else:
        raise ValueError(f"strategy={strategy!r}; pass 'uniform' or 'quantile'.")
    bin_of = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, len(edges) - 2)
    ax = _axes(ax, (5.5, 5.0))
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="perfect calibration")
    n_cells = len(edges) - 1
    for g, (label, color) in enumerate(zip(labels, _colors(len(labels)), strict=True)):
        mask = codes == g
        if not mask.any():
            continue
        cnt = np.bincount(bin_of[mask], minlength=n_cells)
        ssum = np.bincount(bin_of[mask], weights=s[mask], minlength=n_cells)
        tsum = np.bincount(bin_of[mask], weights=t[mask], minlength=n_cells)
        ok = cnt > 0
        mean_s, frac = ssum[ok] / cnt[ok], tsum[ok] / cnt[ok]
        ax.plot(mean_s, frac, color=color, lw=1.5, label=f"{label} (n={int(mask.sum())})")
        ax.scatter(mean_s, frac, s=15 + 200 * cnt[ok] / cnt.max(), color=color, alpha=0.7, zorder=3)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("mean predicted probability")
    ax.set_ylabel("observed fraction of positives")
    ax.set_title("Reliability diagram by group")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, loc="upper left", fontsize="small")
    return ax


# -- uncertainty -------------------------------------------------------------------
def _interval_of(post: Any, draws: np.ndarray, prob: float) -> tuple[float, float]:
    if hasattr(post, "interval"):
        try:
            lo, hi = post.interval(prob)
            return float(lo), float(hi)
        except (TypeError, ValueError):
            pass
    a = (1.0 - prob) / 2.0
    lo, hi = np.quantile(draws, [a, 1.0 - a])
    return float(lo), float(hi)


def posterior_density(
    posterior: Any,
    *,
    eps: float | None = None,
    prob: float = 0.95,
    label: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Posterior density of a disparity, its credible interval and the +-eps band.

    Parameters
    ----------
    posterior : posterior object, array-like of draws, or dict of them
        A posterior of :mod:`skfair_measures.bayes` (its draws and, if it has one,
        its ``interval(prob)`` are used) or raw draws of the measure; a dict
        ``{label: posterior}`` overlays several (e.g. two learners).
    eps : float, optional
        Half-width of the region of practical equivalence around perfect fairness
        (0, or 1 for a ratio posterior with ``center == 1``): the band is shaded and
        the posterior probability that the measure lies in it is shown in the legend.
    prob : float, default=0.95
        Mass of the shaded equal-tailed credible interval (or the posterior's own
        interval, if it has ``interval()``).
    label : str, optional
        Legend label (a single posterior); default "posterior".
    ax : matplotlib Axes, optional
        Where to draw; a new figure if None.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> draws = np.random.default_rng(0).normal(0.03, 0.02, size=2000)
    >>> ax = posterior_density(draws, eps=0.05)
    >>> ax.get_xlabel()
    'value of the measure'
    """
    from scipy.stats import gaussian_kde

    if not 0.0 < prob < 1.0:
        raise ValueError(f"prob={prob}; pass a probability in (0, 1), e.g. 0.95.")
    items = dict(posterior) if isinstance(posterior, Mapping) else {label or "posterior": posterior}
    ax = _axes(ax)
    # perfect fairness: 0 for differences, 1 for ratios (a posterior object knows its own)
    center = float(getattr(next(iter(items.values())), "center", 0.0))
    band = ""
    if eps is not None:
        band = f"|value| < {eps:g}" if center == 0 else f"|value - {center:g}| < {eps:g}"
        ax.axvspan(center - eps, center + eps, color="grey", alpha=0.15, label=band)
    xlabel = "value of the measure"
    for (name, post), color in zip(items.items(), _colors(len(items)), strict=True):
        draws = _draws_of(post)
        draws = draws[np.isfinite(draws)]
        if draws.size < 2:
            raise ValueError(f"posterior {name!r} has fewer than two finite draws.")
        key = getattr(post, "key", None) or getattr(getattr(post, "measure", None), "key", None)
        if key:
            xlabel = str(key)
        lo, hi = _interval_of(post, draws, prob)
        pad = 0.1 * (draws.max() - draws.min() + 1e-12)
        grid = np.linspace(draws.min() - pad, draws.max() + pad, 400)
        if np.ptp(draws) > 0:
            dens = gaussian_kde(draws)(grid)
        else:  # a point mass
            dens = np.where(np.isclose(grid, draws[0]), 1.0, 0.0)
        text = f"{name}: mean {draws.mean():.3g}, {prob:.0%} CI [{lo:.3g}, {hi:.3g}]"
        if eps is not None:
            text += f", P({band}) = {np.mean(np.abs(draws - center) < eps):.2f}"
        ax.plot(grid, dens, color=color, label=text)
        inside = (grid >= lo) & (grid <= hi)
        ax.fill_between(grid[inside], dens[inside], color=color, alpha=0.3)
        ax.axvline(draws.mean(), color=color, lw=1, ls=":")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("posterior density")
    ax.set_title("Posterior of the measure (shaded: credible interval)")
    ax.set_ylim(bottom=0)
    ax.legend(frameon=False, fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.15))
    return ax


def groupwise_bars(
    results: MeasureResult | Sequence[MeasureResult] | Mapping[str, MeasureResult],
    *,
    ax: Axes | None = None,
) -> Axes:
    """Base-metric value per group, from measure results (``Measure.evaluate``).

    Each base metric (``tpr``, ``fpr``, ...) gets one group of bars, one bar per
    group; a metric shared by several measures is drawn once.

    Parameters
    ----------
    results : MeasureResult, list or dict of them
        From :meth:`Measure.evaluate` or :func:`skfair_measures.evaluate_measures`.
    ax : matplotlib Axes, optional
        Where to draw; a new figure if None.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> res = sfm.evaluate_measures([sfm.msr("fairness.eod")], [1, 0, 1, 0], [1, 0, 0, 1],
    ...                             sensitive_features=list("aabb"))
    >>> [t.get_text() for t in groupwise_bars(res).get_xticklabels()]
    ['tpr', 'fpr']
    """
    if isinstance(results, Mapping):
        items = list(results.values())
    elif isinstance(results, Sequence):
        items = list(results)
    else:
        items = [results]
    columns: dict[str, pd.Series] = {}
    for r in items:
        bg = r.by_group
        if bg is None:
            continue
        frame = bg.to_frame() if isinstance(bg, pd.Series) else bg
        for c in frame.columns:  # composites name their columns by child key
            columns.setdefault(str(c).removeprefix("fairness."), frame[c])
    if not columns:
        raise ValueError("none of the results has per-group values (performance measures only).")
    table = pd.DataFrame(columns)
    names = list(table.index.names)
    labels = [_group_label(g, names) for g in table.index]
    ax = _axes(ax, (max(5.0, 1.3 * table.shape[1] + 2.0), 4.0))
    n_groups = len(labels)
    width = 0.8 / n_groups
    pos = np.arange(table.shape[1])
    for i, (label, color) in enumerate(zip(labels, _colors(n_groups), strict=True)):
        ax.bar(pos + (i - (n_groups - 1) / 2) * width, table.iloc[i].to_numpy(float), width, color=color, label=label)
    ax.set_xticks(pos, list(table.columns))
    ax.set_ylabel("value in group")
    ax.set_title("Base metrics by group")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(title=" x ".join(str(n) for n in names if n is not None) or "group", frameon=False, fontsize="small")
    return ax
