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
:func:`pareto_front`               objective against disparity under a bound: every
                                   candidate, the Pareto front, the chosen one
:func:`interval_chart`             every interval of a summary table, the eps band and
                                   the verdict
=================================  ==================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ._groups import encode_groups
from ._optional import require
from .benchmark import BenchmarkResult
from .results import Result, check_prob, percentile_interval

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

    from .measures import Measure

plt = require("matplotlib.pyplot", "skfair_measures.plots")

__all__ = [
    "LEGEND_INSIDE_MAX",
    "MAX_GROUPS_SHOWN",
    "MIN_GROUP_SIZE",
    "compare_measures",
    "fairness_accuracy_tradeoff",
    "groupwise_bars",
    "interval_chart",
    "pareto_front",
    "posterior_density",
    "prediction_density",
    "reliability_diagram",
]


#: Up to this many entries a legend sits inside the axes; more go to the right of it.
LEGEND_INSIDE_MAX = 6
#: Groups with fewer labeled rows are not drawn in a reliability diagram (their curve is noise).
MIN_GROUP_SIZE = 30
#: A figure of groups shows at most this many, the largest; its title says how many others were left out.
MAX_GROUPS_SHOWN = 20
#: Longer group labels are cut to this many characters (with an ellipsis) in a figure.
MAX_LABEL_CHARS = 40


def _plain(text: Any) -> str:
    r"""Text drawn as written: a ``$`` never opens matplotlib's mathtext, and a very long label is cut.

    Matplotlib reads text with an even number of unescaped ``$`` as math, and a group
    named ``cost $10^$`` would fail to draw; an escaped ``\$`` is drawn as ``$``.
    """
    text = str(text)
    if len(text) > MAX_LABEL_CHARS:
        text = text[: MAX_LABEL_CHARS - 1] + "\u2026"
    return text.replace("$", r"\$")


def _largest(sizes: Any, limit: int = MAX_GROUPS_SHOWN) -> tuple[np.ndarray, str]:
    """Positions of the ``limit`` largest groups (ties: the first), in their own order; a title's note on the others."""
    sizes = np.nan_to_num(np.asarray(sizes, dtype=float), nan=-1.0)
    n_out = sizes.size - limit
    note = f"\n(the {limit} largest of {sizes.size:,} groups; {n_out:,} others not shown)" if n_out > 0 else ""
    return np.sort(np.argsort(-sizes, kind="stable")[:limit]), note


def _axes(ax: Axes | None, figsize: tuple[float, float] = (6.0, 4.0)) -> Axes:
    return ax if ax is not None else plt.subplots(figsize=figsize, layout="constrained")[1]


def _colors(n: int) -> list[Any]:
    """``n`` distinct colours: tab10, tab20 for up to 20, then evenly spaced on a perceptual map."""
    if n <= 20:
        return [plt.get_cmap("tab10" if n <= 10 else "tab20")(i) for i in range(n)]
    return [plt.get_cmap("turbo")(x) for x in np.linspace(0.05, 0.95, n)]


def _legend(ax: Axes, n_entries: int, **kwargs: Any) -> None:
    """A legend inside the axes for a few entries, to the right of the axes (outside the data) for many."""
    kwargs.setdefault("frameon", False)
    if n_entries <= LEGEND_INSIDE_MAX:
        ax.legend(**kwargs)
        return
    kwargs.pop("loc", None)
    ncols = 1 if n_entries <= 16 else 2
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, ncols=ncols, **kwargs)


def _size_for(labels: Sequence[str], base: tuple[float, float]) -> tuple[float, float]:
    """A new figure's size, wider by the legend's width when the legend goes outside the axes."""
    if len(labels) <= LEGEND_INSIDE_MAX:
        return base
    longest = max(len(label) for label in labels)
    ncols = 1 if len(labels) <= 16 else 2
    return (base[0] + ncols * min(6.0, 0.07 * longest + 0.6), base[1])  # ~0.07 in per character, small font


def _group_label(label: Any, names: Sequence[Any]) -> str:
    if isinstance(label, tuple):
        return _plain(", ".join(f"{n}={v}" for n, v in zip(names, label, strict=False)))
    return _plain(label)


def _groups(
    sensitive_features: Any, n: int, ax: Axes | None, base: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray, dict[int, str], Axes, str]:
    """Rows' group codes, group sizes, the largest groups' legend names ``label (n=size)``, the axes, a title's note."""
    codes, index = encode_groups(sensitive_features, n)
    sizes = np.bincount(codes, minlength=len(index))
    shown, left_out = _largest(sizes)
    names = {g: f"{_group_label(index[g], list(index.names))} (n={sizes[g]})" for g in shown}
    return codes, sizes, names, _axes(ax, _size_for(list(names.values()), base)), left_out


def _direction(measure: Measure) -> str:
    if measure.minimize is not None:
        return "lower is better" if measure.minimize else "higher is better"
    return f"closer to {measure.ideal:g} is better" if measure.ideal is not None else "signed"


# -- benchmark plots ---------------------------------------------------------------
def fairness_accuracy_tradeoff(
    result: BenchmarkResult,
    fairness_measure: str | None = None,
    accuracy_measure: str | None = None,
    *,
    show_folds: bool = True,
    aggregate: str = "auto",
    ax: Axes | None = None,
) -> Axes:
    """Fairness against performance: one point per fold and the aggregate, per learner.

    The large marker is the aggregate :meth:`BenchmarkResult.choose` ranks by
    (:meth:`BenchmarkResult.aggregated`: pooled out-of-fold counts for measures of counts,
    the mean over folds otherwise), so the plot and the decision agree.

    Parameters
    ----------
    result : BenchmarkResult
        From :func:`skfair_measures.benchmark.benchmark`.
    fairness_measure : str, optional
        Key on the x axis; default the first benchmarked measure that compares groups.
    accuracy_measure : str, optional
        Key on the y axis; default the first benchmarked measure that does not.
    show_folds : bool, default=True
        Draw the per-fold values (small, translucent) besides the aggregates (large).
    aggregate : {"auto", "pooled", "mean"}, default="auto"
        As in :meth:`BenchmarkResult.choose`.
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
    'fairness.eod, pooled (lower is better)'
    """
    fair = [k for k, m in result.measures.items() if m.inputs.needs_sensitive]  # the measures that compare groups
    other = [k for k in result.measures if k not in fair]
    if fairness_measure is None and not fair:
        raise ValueError("the benchmark has no fairness measure; pass fairness_measure=.")
    if accuracy_measure is None and not other:
        raise ValueError("the benchmark has no performance measure (such as classif.acc); pass accuracy_measure=.")
    fairness_measure, accuracy_measure = fairness_measure or fair[0], accuracy_measure or other[0]
    result._keys([fairness_measure, accuracy_measure])
    ax = _axes(ax)
    wide = result.scores.pivot_table(index=["learner", "fold"], columns="measure", values="value", dropna=False)
    agg = result.aggregated([fairness_measure, accuracy_measure], aggregate)
    for learner, color in zip(result.learners, _colors(len(result.learners)), strict=True):
        sub = wide.loc[learner]
        if show_folds:
            ax.scatter(sub[fairness_measure], sub[accuracy_measure], color=color, alpha=0.4, s=25, edgecolor="none")
        x, y = agg.loc[learner, fairness_measure], agg.loc[learner, accuracy_measure]
        ax.scatter(x, y, color=color, s=110, marker="D", edgecolor="black", label=learner)
    how = agg.attrs["aggregate"]
    ax.set_xlabel(f"{fairness_measure}, {how[fairness_measure]} ({_direction(result.measures[fairness_measure])})")
    ax.set_ylabel(f"{accuracy_measure}, {how[accuracy_measure]} ({_direction(result.measures[accuracy_measure])})")
    ax.set_title("Fairness-accuracy trade-off" + (" (dots: folds, diamonds: aggregate)" if show_folds else ""))
    ax.grid(alpha=0.3)
    _legend(ax, len(result.learners), title="learner")
    return ax


def compare_measures(
    result: BenchmarkResult, measures: Sequence[str] | None = None, *, error_bars: bool = True, ax: Axes | None = None
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
    agg = result.aggregate(keys, sd=True).set_index("learner").loc[result.learners]
    ax = _axes(ax, (max(5.0, 1.6 * len(keys) + 2.0), 4.0))
    sds = agg[[f"{k}_sd" for k in keys]].to_numpy(float) if error_bars else [None] * len(agg)
    ticks = [f"{k}\n({_direction(result.measures[k])})" for k in keys]
    _clustered_bars(ax, agg[keys].to_numpy(float), sds, result.learners, ticks)
    ax.set_ylabel("mean over folds" + (" (+-1 sd)" if error_bars else ""))
    ax.set_title(f"Measures by learner ({result.n_folds}-fold CV)")
    ax.grid(axis="y", alpha=0.3)
    _legend(ax, len(result.learners), title="learner")
    return ax


def _clustered_bars(ax: Axes, values: np.ndarray, errors: Sequence[Any], labels: Sequence[str], ticks: list) -> None:
    """One cluster of bars per tick (a column of ``values``), one bar per label (a row), with its error bar."""
    n = len(labels)
    pos, width = np.arange(values.shape[1]), 0.8 / n
    for i, (label, color) in enumerate(zip(labels, _colors(n), strict=True)):
        ax.bar(pos + (i - (n - 1) / 2) * width, values[i], width, yerr=errors[i], capsize=3, color=color, label=label)
    ax.set_xticks(pos, ticks)


# -- predictions ---------------------------------------------------------------------
def prediction_density(
    y_score: Any, sensitive_features: Any, *, kind: str = "kde", bins: int = 20, ax: Axes | None = None
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
        Where to draw; a new figure if None. With more than
        :data:`LEGEND_INSIDE_MAX` groups the legend goes to the right of the axes.

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

    from ._arrays import check_scores

    if kind not in ("kde", "hist"):
        raise ValueError(f"kind={kind!r}; pass 'kde' or 'hist'.")
    s = check_scores(y_score)
    codes, sizes, names, ax, left_out = _groups(sensitive_features, s.size, ax, (6.0, 4.0))
    grid = np.linspace(0.0, 1.0, 201)
    order = np.argsort(codes, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)])
    for (g, name), color in zip(names.items(), _colors(len(names)), strict=True):
        sg = s[order[starts[g] : starts[g + 1]]]
        if sg.size == 0:
            continue
        style = "-" if sg.size >= MIN_GROUP_SIZE else ":"  # a density from a handful of scores is a guess
        if kind == "kde" and np.unique(sg).size > 1:
            dens = gaussian_kde(sg)(grid)
            ax.plot(grid, dens, color=color, ls=style, label=name)
            ax.fill_between(grid, dens, color=color, alpha=0.3 / len(names))
        else:
            ax.hist(sg, bins=bins, range=(0, 1), density=True, histtype="step", color=color, ls=style, label=name)
    ax.set(xlim=(0, 1), xlabel="predicted probability of the positive class", ylabel="density")
    ax.set_title("Prediction density by group" + left_out)
    _legend(ax, len(names), title="group", fontsize="small")
    return ax


def _bin_edges(s: np.ndarray, n_bins: int, strategy: str) -> np.ndarray:
    if strategy == "uniform":
        return np.linspace(0.0, 1.0, n_bins + 1)
    if strategy == "quantile":
        return np.unique(np.quantile(s, np.linspace(0.0, 1.0, n_bins + 1)))
    raise ValueError(f"strategy={strategy!r}; pass 'uniform' or 'quantile'.")


def reliability_diagram(
    y_true: Any,
    y_score: Any,
    sensitive_features: Any,
    *,
    n_bins: int = 10,
    strategy: str = "uniform",
    pos_label: Any = None,
    min_size: int = MIN_GROUP_SIZE,
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
    min_size : int, default=MIN_GROUP_SIZE (30)
        Groups with fewer samples are not drawn (a curve through a handful of
        points says nothing about calibration); the legend names them and their
        sizes. Pass 1 to draw every group.
    ax : matplotlib Axes, optional
        Where to draw; a new figure if None.

    Returns
    -------
    matplotlib.axes.Axes
        Marker area grows with the number of samples in a bin.

    Examples
    --------
    >>> ax = reliability_diagram([0, 1, 0, 1, 1, 0], [0.2, 0.8, 0.3, 0.6, 0.9, 0.1], list("aabbab"), min_size=1)
    >>> ax.get_xlabel()
    'mean predicted probability'
    >>> ax = reliability_diagram([0, 1, 0, 1, 1, 0], [0.2, 0.8, 0.3, 0.6, 0.9, 0.1], list("aabbab"))
    >>> print(ax.get_legend().get_texts()[-1].get_text())
    not drawn (n < 30):
    a (n=3)
    b (n=3)
    """
    from ._arrays import _to_1d, check_scores
    from ._labels import binarize_labels

    if min_size < 1:
        raise ValueError(f"min_size={min_size}; pass a number of samples >= 1.")
    s = check_scores(y_score)
    t_raw = _to_1d(y_true, "y_true")
    if t_raw.size != s.size:
        raise ValueError(f"y_score has {s.size} samples but y_true has {t_raw.size}.")
    t, _, _ = binarize_labels(t_raw, t_raw, pos_label)
    edges = _bin_edges(s, n_bins, strategy)
    bin_of = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, len(edges) - 2)
    codes, sizes, names, ax, left_out = _groups(sensitive_features, s.size, ax, (5.5, 5.0))
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="perfect calibration")
    n_cells = len(edges) - 1
    # counts, score sums and label sums per (group, bin) in one pass each
    cell = codes * n_cells + bin_of
    sums = [np.bincount(cell, weights=w, minlength=len(sizes) * n_cells).reshape(-1, n_cells) for w in (None, s, t)]
    for (g, name), color in zip(names.items(), _colors(len(names)), strict=True):
        if sizes[g] < min_size:
            continue
        cnt, score_sum, label_sum = (x[g] for x in sums)
        ok = cnt > 0
        mean_s, frac = score_sum[ok] / cnt[ok], label_sum[ok] / cnt[ok]
        ax.plot(mean_s, frac, color=color, lw=1.5, label=name)
        ax.scatter(mean_s, frac, s=15 + 200 * cnt[ok] / cnt.max(), color=color, alpha=0.7, zorder=3)
    small = [name for g, name in names.items() if 0 < sizes[g] < min_size]
    if small:  # an entry without a line: the groups left out, so that no group vanishes silently
        ax.plot([], [], ls="none", label="\n".join([f"not drawn (n < {min_size}):", *small]))
    ax.set(xlim=(0, 1), ylim=(0, 1), aspect="equal", title="Reliability diagram by group" + left_out)
    ax.set(xlabel="mean predicted probability", ylabel="observed fraction of positives")
    ax.grid(alpha=0.3)
    _legend(ax, len(names) + 1, loc="upper left", fontsize="small")
    return ax


# -- uncertainty -------------------------------------------------------------------
def _draws(name: Any, post: Result | Any) -> np.ndarray:
    """The finite draws of a result, or of raw draws."""
    if isinstance(post, Result) and post.draws is None:
        raise ValueError(f"{name!r} ({post.key}) has no draws; pass a posterior or bootstrap result, or raw draws.")
    draws = np.ravel(np.asarray(post.draws if isinstance(post, Result) else post, dtype=float))
    if not np.isfinite(draws).any():
        raise ValueError(f"{name!r} has no finite draw: the measure is undefined in every draw.")
    return draws[np.isfinite(draws)]


#: Draws spread over less than this (relative to max(1, |value|)) are drawn as a point mass.
_POINT_MASS_SPREAD = 1e-6


def posterior_density(
    posterior: Result | Any,
    *,
    eps: float | None = None,
    prob: float = 0.95,
    ideal: float | None = None,
    label: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Posterior density of a disparity, its credible interval and the +-eps band.

    Parameters
    ----------
    posterior : Result, array-like of draws, or dict of them
        A posterior (or bootstrap) :class:`~skfair_measures.results.Result`, whose
        ``draws`` and ``interval(prob)`` are used, or raw draws of the measure; a
        dict ``{label: posterior}`` overlays several (e.g. two learners). A
        posterior whose draws are all equal (a point mass) is drawn as a vertical
        line, not as a density.
    eps : float, optional
        Half-width of the region of practical equivalence around the ideal value:
        the band is shaded and the posterior probability that the measure lies in
        it is shown in the legend.
    prob : float, default=0.95
        Mass of the shaded credible interval (the result's own ``interval(prob)``;
        equal-tailed quantiles for raw draws).
    ideal : float, optional
        The perfectly fair value at the centre of the band; default the measure's
        own (``result.measure.ideal``: 0 for a difference, 1 for a ratio), and 0
        for raw draws.
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
    >>> ax = posterior_density(np.full(100, 0.25))  # a point mass
    >>> [float(v) for v in ax.get_ylim()]
    [0.0, 1.05]
    """
    check_prob(prob)
    items = dict(posterior) if isinstance(posterior, Mapping) else {label or "posterior": posterior}
    draws = {name: _draws(name, post) for name, post in items.items()}
    first = next(iter(items.values()))
    # default: the measure's ideal value; raw draws are a difference
    center = ideal if ideal is not None else getattr(first.measure, "ideal", None) if isinstance(first, Result) else 0.0
    if eps is not None and center is None:
        raise ValueError(f"eps={eps:g} needs the measure's ideal value, and it has none; pass ideal=.")
    ax = _axes(ax)
    if eps is not None:
        band = f"|value| < {eps:g}" if center == 0 else f"|value - {center:g}| < {eps:g}"
        ax.axvspan(center - eps, center + eps, color="grey", alpha=0.15, label=band)
    # all draws equal up to numerical noise (the data fix the measure): a point mass, not a density spike of ~1e7
    masses = {k: float(np.ptp(d)) <= _POINT_MASS_SPREAD * max(1.0, float(np.max(np.abs(d)))) for k, d in draws.items()}
    support = tuple(map(float, getattr(getattr(first, "measure", None), "range", (-np.inf, np.inf))))
    for (name, post), color in zip(items.items(), _colors(len(items)), strict=True):
        d = draws[name]
        lo, hi = post.interval(prob) if isinstance(post, Result) else np.quantile(d, [(1 - prob) / 2, (1 + prob) / 2])
        text = f"{name}: mean {d.mean():.3g}, {prob:.0%} CI [{lo:.3g}, {hi:.3g}]"
        if eps is not None and not np.isnan(within := _prob_within(post, d, center, eps, ideal)):
            text += f", P({band}) = {within:.2f}"
        if masses[name]:
            spread = float(np.ptp(d))
            mass = f"point mass, all draws within {spread:.1g}" if spread else "point mass"
            at = float(np.median(d))
            ax.axvline(at, ymax=1.0 / 1.05, color=color, lw=2.5, label=f"{text}\n({mass})")
            ax.plot([at], [1.0], marker="o", color=color, transform=ax.get_xaxis_transform(), clip_on=False)
        else:
            _draw_density(ax, d, support, color, text, (lo, hi))
    _label_posterior_axes(ax, items, all(masses.values()))
    if np.isfinite(support).any():  # nothing outside the measure's range (an absolute gap): the eps band is cut there
        low, high = ax.get_xlim()
        ax.set_xlim(max(low, support[0]), min(high, support[1]))
    return ax


def _draw_density(
    ax: Axes, draws: np.ndarray, support: tuple[float, float], color: Any, text: str, shade: tuple[float, float]
) -> None:
    """The density reflected at the ends of the measure's range (bayes' ``density_curve``), shaded over ``shade``.

    No mass falls below 0 for an absolute gap, none outside [0, 1] for a rate; a value many draws share exactly is a
    stem (the legend names the first stem only when there is no curve).
    """
    from .bayes import density_curve

    grid, dens, atoms = density_curve(draws, support)
    top = float(dens.max()) if dens.size else 1.0
    for v, p in atoms.items():
        ax.vlines(v, 0, top, color=color, lw=2.5, label=None if grid.size else text)
        if p >= 0.05:  # a share worth reading; a bootstrap's discrete values make many small ones
            ax.annotate(f"P(= {v:.3g}) = {p:.2f}", (v, top), fontsize="x-small", ha="center", va="bottom", color=color)
        text = text if grid.size else "_"
    if grid.size:
        ax.plot(grid, dens, color=color, label=text)
        inside = (grid >= shade[0]) & (grid <= shade[1])
        ax.fill_between(grid[inside], dens[inside], color=color, alpha=0.3)
    ax.axvline(draws.mean(), color=color, lw=1, ls=":")


def _prob_within(post: Any, draws: np.ndarray, center: float, eps: float, ideal: float | None) -> float:
    """P(|value - center| < eps): the result's own, else the share of the draws (raw draws, or an ``ideal`` given).

    A result whose construction gives no probability (a bootstrap's) says NaN, and the legend shows none.
    """
    own = getattr(post, "prob_within", None) if ideal is None else None
    return float(own(eps)) if callable(own) else float(np.mean(np.abs(draws - center) < eps))


def _label_posterior_axes(ax: Axes, items: Mapping[str, Any], only_masses: bool) -> None:
    keys = {post.key for post in items.values() if isinstance(post, Result)}
    ax.set_xlabel(keys.pop() if len(keys) == 1 else "value of the measure")
    ax.margins(x=0.08)  # a point mass at the edge of the data stays visible
    if only_masses:  # no density to show: the y axis carries no number
        ax.set(ylim=(0.0, 1.05), yticks=[], ylabel="point mass")
        x = ax.get_xlim()
        if x[1] - x[0] < 1e-6:  # matplotlib would zoom into rounding noise
            ax.set_xlim(x[0] - 0.05, x[1] + 0.05)
        ax.set_title("Posterior of the measure")
    elif all(getattr(post, "kind", None) == "bootstrap" for post in items.values()):
        ax.set(ylabel="density of the replicates", ylim=(0, None))
        ax.set_title("Bootstrap distribution of the measure (shaded: percentile interval)")
    else:
        ax.set(ylabel="posterior density", ylim=(0, None))
        ax.set_title("Posterior of the measure (shaded: credible interval)")
    ax.legend(frameon=False, fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.15))


def _groupwise_table(items: list[Result], prob: float) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Value, lower and upper bound per group (rows) and base metric (columns).

    A base metric shared by several results is one column (``fairness.eod`` and ``fairness.tpr`` read the same TPR);
    a posterior's group values (posterior means) are a column of their own, ``tpr (posterior)``. The bounds are the
    ``prob`` interval of that rate in each group as its result constructs it: a posterior's equal-tailed credible
    interval (``group_summary``), a bootstrap's percentile interval under the one rule for undefined replicates
    (``results.percentile_interval``); NaN where a result has no draws or refuses the interval.
    """
    columns: dict[str, pd.Series] = {}
    bounds: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for r in items:
        if r.by_group is None:
            continue
        if isinstance(r.by_group, pd.Series):  # a leaf: the Series is named after its base metric
            frame = r.by_group.to_frame()
        else:  # a composite names its columns by its children's keys; show their base metrics
            bases = {} if r.measure is None else {leaf.key: leaf.base_label for leaf in r.measure.leaves()}
            frame = r.by_group.rename(columns={c: bases.get(c, str(c)) for c in r.by_group.columns})
        draws = getattr(r, "group_draws", None) or {}
        for base in frame.columns:
            name = f"{base} ({r.kind})" if r.kind == "posterior" else str(base)
            columns.setdefault(name, frame[base])
            if name in bounds or base not in draws:
                continue
            if r.kind == "posterior":
                ci = r.group_summary(base, prob).reindex(frame.index)
                bounds[name] = (ci["lower"].to_numpy(float), ci["upper"].to_numpy(float))
            else:
                d = pd.DataFrame(np.asarray(draws[base], float).reshape(-1, len(r.groups)), columns=r.groups)
                ci = [
                    percentile_interval(d[g], prob, estimate=v, key=f"{r.key}: {base}[{g}]", warn=False)
                    for g, v in frame[base].items()
                ]
                bounds[name] = tuple(np.array(ci).reshape(-1, 2).T)
    if not columns:
        raise ValueError("none of the results has per-group values (performance measures only).")
    table = pd.DataFrame(columns)
    nan = np.full(len(table), np.nan)
    low, high = (pd.DataFrame({c: bounds.get(c, (nan, nan))[i] for c in table}, index=table.index) for i in (0, 1))
    return table, low, high


def _whiskers(values: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray | None:
    """Error-bar lengths below and above each value (NaN, no whisker, where the interval is undefined), or None."""
    if np.isnan(low).all():
        return None
    return np.vstack([values - low, high - values]).clip(min=0.0)


def groupwise_bars(
    results: Result | Sequence[Result] | Mapping[str, Result], *, prob: float = 0.95, ax: Axes | None = None
) -> Axes:
    """Base-metric value per group, from measure results.

    With a few groups, each base metric (``tpr``, ``fpr``, ...) gets one cluster of
    bars, one bar per group, and a legend of the groups. With more than
    :data:`LEGEND_INSIDE_MAX` groups the bars turn horizontal: one row of bars per
    group, labeled on the axis (long intersectional labels stay readable), one
    colour per metric. A metric shared by several measures is drawn once; an
    undefined value (NaN) leaves its bar out. Bootstrap results and posteriors draw
    every group's rate with its ``prob`` interval as a whisker.

    Parameters
    ----------
    results : Result, list or dict of them
        From :meth:`Measure.evaluate`, :func:`skfair_measures.evaluate_measures`,
        :func:`skfair_measures.bootstrap` or :func:`skfair_measures.bayes.posterior`.
    prob : float, default=0.95
        Probability of the whiskers' intervals (results with draws).
    ax : matplotlib Axes, optional
        Where to draw; a new figure (sized for the number of groups) if None.

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
    items = list(results.values()) if isinstance(results, Mapping) else results
    items = [items] if isinstance(items, Result) else list(items)
    table, low, high = _groupwise_table(items, check_prob(prob))
    names, n_groups = list(table.index.names), len(table)
    sizes = next((r.counts.reindex(table.index) for r in items if r.counts is not None), None)
    shown, left_out = _largest(np.ones(n_groups) if sizes is None else sizes.to_numpy(float))
    table, low, high = table.iloc[shown], low.iloc[shown], high.iloc[shown]
    labels = [_group_label(g, names) for g in table.index]
    if sizes is not None:  # the group size tells why a bar is missing or jumpy
        labels = [f"{label} (n={n:g})" for label, n in zip(labels, sizes.iloc[shown], strict=True)]
    title = _plain(" x ".join(str(n) for n in names if n is not None) or "group")
    heading = "Base metrics by group" + left_out
    if not np.isnan(low.to_numpy(float)).all():
        heading += f"\n(whiskers: {prob:.0%} interval of each group's rate"
        heading += "; none: undefined)" if np.isnan(low.to_numpy(float)[table.notna().to_numpy()]).any() else ")"
    if len(labels) > LEGEND_INSIDE_MAX:
        return _bars_by_group(table, (low, high), labels, title, heading, ax)
    ax = _axes(ax, (max(5.0, 1.3 * table.shape[1] + 2.0), 4.0))
    values, (lows, highs) = table.to_numpy(float), (b.to_numpy(float) for b in (low, high))
    errors = [_whiskers(*rows) for rows in zip(values, lows, highs, strict=True)]
    _clustered_bars(ax, values, errors, labels, [_plain(c) for c in table.columns])
    ax.set(ylabel="value in group", title=heading)
    ax.grid(axis="y", alpha=0.3)
    _legend(ax, len(labels), title=title, fontsize="small")
    return ax


def _bars_by_group(
    table: pd.DataFrame, bounds: tuple[pd.DataFrame, pd.DataFrame], labels: list[str], title: str, heading: str, ax: Any
) -> Axes:
    """Horizontal bars: one row per group (top to bottom in table order), one colour per metric."""
    (low, high), (n_groups, n_metrics) = bounds, table.shape
    ax = _axes(ax, (9.0, max(4.0, 0.1 * n_groups * max(2, n_metrics) + 1.5)))  # ~0.1 in per bar
    height = 0.8 / n_metrics
    pos, yaxis = np.arange(n_groups)[::-1], ax.get_yaxis_transform()  # the first group on top
    for j, (metric, color) in enumerate(zip(table.columns, _colors(n_metrics), strict=True)):
        offset = ((n_metrics - 1) / 2 - j) * height
        values = table[metric].to_numpy(float)
        err = _whiskers(values, low[metric].to_numpy(float), high[metric].to_numpy(float))
        ax.barh(pos + offset, values, height, color=color, label=metric, xerr=err, capsize=2)
        for y in (pos + offset)[np.isnan(values)]:  # say so where a bar is missing because the rate is undefined
            ax.text(0.005, y, f"{metric} undefined", transform=yaxis, va="center", fontsize="x-small", color="dimgrey")
    ax.set_yticks(pos, labels, fontsize="small")
    ax.set(ylim=(-0.6, n_groups - 0.4), xlabel="value in group", ylabel=title, title=heading)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False, title="metric")
    return ax


def interval_chart(summary: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """Each interval of a summary table, its value, the eps band around the ideal value and the verdict in words.

    Parameters
    ----------
    summary : pandas.DataFrame
        A table of summary rows with ``result``, ``kind`` and ``ideal``
        (:func:`skfair_measures.report.summary_table`); rows without an interval are left out.
    ax : matplotlib Axes, optional
        Where to draw; a new figure (one row per interval) if None.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> from skfair_measures.report import summary_table
    >>> boot = sfm.bootstrap(sfm.msr("fairness.tpr"), [1, 1, 1, 1] * 10, [1, 0, 1, 1] * 10,
    ...                      sensitive_features=list("FFMM") * 10, n_boot=50, random_state=0)
    >>> interval_chart(summary_table([("tpr", boot)])).get_title(loc="left")
    '95% intervals and verdicts'
    """
    rows = summary[np.isfinite(summary["lower"].astype(float)) | np.isfinite(summary["upper"].astype(float))]
    ax = _axes(ax, (8.0, 1.2 + 0.45 * max(len(rows), 1)))
    colors = {"within": "C2", "exceeds": "C3", "inconclusive": "C1"}
    y = np.arange(len(rows))[::-1]
    for yi, r in zip(y, rows.itertuples(index=False), strict=True):
        ideal = 0.0 if r.ideal is None or pd.isna(r.ideal) else float(r.ideal)
        ax.fill_betweenx([yi - 0.35, yi + 0.35], ideal - r.eps, ideal + r.eps, color="0.85", lw=0)
        color = colors.get(r.verdict, "0.4")
        ax.plot([r.lower, r.upper], [yi, yi], color=color, lw=3, solid_capstyle="butt")
        ax.plot([r.value], [yi], "o", color="k", ms=4)
        ax.annotate(f" {r.verdict}", (1.0, yi), xycoords=("axes fraction", "data"), va="center", color=color)
    ax.set_yticks(y, [_plain(f"{r.result} ({r.kind})") for r in rows.itertuples(index=False)])
    ax.set_xlabel("value with its interval (grey: within eps of the ideal value; dot: the value)")
    ax.set_title(f"{rows['prob'].iloc[0] if len(rows) else 0.95:.0%} intervals and verdicts", loc="left")
    ax.grid(axis="x", alpha=0.3)
    return ax


# -- model selection -------------------------------------------------------------------
def pareto_front(
    table: pd.DataFrame,
    front: pd.DataFrame,
    *,
    fairness_measure: str | None = None,
    labels: Sequence[Any] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Objective against disparity: every candidate with its intervals, the Pareto front, the bound, the choice.

    Parameters
    ----------
    table : pandas.DataFrame
        Every candidate: ``rule.table(search.cv_results_)``, ``ThresholdChoice.table``
        or ``BenchmarkResult.choose(...).table``.
    front : pandas.DataFrame
        Its Pareto front with the chosen candidate (``rule.front(...)``,
        ``ThresholdChoice.front``, ``BenchmarkResult.choose(...).front``); its ``attrs`` name
        the objective, the bounds and the choice.
    fairness_measure : str, optional
        The constraint on the x axis; default the first bound.
    labels : sequence, optional
        A label per candidate of ``table`` (e.g. the searched parameter), written beside each point.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> from skfair_measures import constrained_refit
    >>> rule = constrained_refit("classif.acc", {"fairness.eod": 0.05}, aggregate="mean")
    >>> cv = {"params": [{"d": 1}, {"d": 2}, {"d": 3}],
    ...       "split0_test_classif.acc": np.array([0.80, 0.85, 0.84]),
    ...       "split0_test_fairness.eod": -np.array([0.01, 0.08, 0.09]),
    ...       "split1_test_classif.acc": np.array([0.81, 0.86, 0.84]),
    ...       "split1_test_fairness.eod": -np.array([0.03, 0.06, 0.09])}
    >>> pareto_front(rule.table(cv), rule.front(cv), labels=[1, 2, 3]).get_xlabel()
    'fairness.eod (lower is better), bound 0.05'
    """
    objective, bounds, chosen = front.attrs["objective"], front.attrs["bounds"], front.attrs["chosen"]
    x_key = fairness_measure or next(iter(bounds))
    if x_key not in bounds:
        raise ValueError(f"fairness_measure={x_key!r} is not one of the bounds {list(bounds)}.")
    ax = _axes(ax, (6.5, 4.5))

    def bars(rows: pd.DataFrame, **kw: Any) -> None:
        (x, xerr), (y, yerr) = (_with_whiskers(rows, key) for key in (x_key, objective))
        ax.errorbar(x, y, xerr=xerr, yerr=yerr, linestyle="none", capsize=2, **kw)

    bars(table, marker="o", color="0.6", alpha=0.7, label="candidate (interval)")
    on = front[front["on_front"]].sort_values(x_key)
    ax.plot(on[x_key], on[objective], color="tab:blue", linewidth=1, drawstyle="steps-post", zorder=1)
    bars(on, marker="o", color="tab:blue", label="Pareto front")
    ax.axvline(bounds[x_key], color="tab:red", linestyle="--", label=f"bound {bounds[x_key]:g}")
    x, y = table.loc[chosen, [x_key, objective]]
    ax.scatter([x], [y], marker="*", s=260, color="gold", edgecolor="black", zorder=3, label="chosen")
    if labels is not None:
        for (x, y), text in zip(table[[x_key, objective]].to_numpy(float), labels, strict=True):
            ax.annotate(_plain(text), (x, y), textcoords="offset points", xytext=(5, 4), fontsize="x-small")
    from .registry import msr  # the measures' directions for the axis labels

    def named(key: str, extra: str = "") -> str:
        try:
            return f"{key} ({_direction(msr(key))}){extra}"
        except (KeyError, ValueError):
            return key + extra

    ax.set(xlabel=named(x_key, f", bound {bounds[x_key]:g}"), ylabel=named(objective))
    ax.set_title("Choosing under a fairness bound")
    ax.grid(alpha=0.3)
    _legend(ax, 4, fontsize="small")
    return ax


def _with_whiskers(rows: pd.DataFrame, key: str) -> tuple[np.ndarray, np.ndarray]:
    """A column's values and the lengths of their whiskers to the interval ``{key} lo`` .. ``{key} hi`` (0 if none)."""
    v, lo, hi = (rows[c].to_numpy(float) for c in (key, f"{key} lo", f"{key} hi"))
    return v, np.nan_to_num(np.abs(np.vstack([v - lo, hi - v])))
