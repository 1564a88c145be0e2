"""Plots of posteriors (matplotlib, imported when a plot is drawn)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._posterior import MeasurePosterior, group_labels
from ._reliability import ReliabilityPosterior

__all__ = ["plot_posterior", "plot_reliability"]


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(5, 4))[1]


def plot_reliability(rel: ReliabilityPosterior, ax: Any = None, prob: float = 0.95) -> Any:
    """Bayesian reliability diagram: posterior mean and credible interval per bin and group.

    Seed 002 figure 2.4: markers at the posterior mean of each bin's outcome
    frequency, bars for the ``prob`` credible interval, the diagonal for perfect
    calibration; the legend gives each group's ECE posterior mean and interval.

    Parameters
    ----------
    rel : ReliabilityPosterior
    ax : matplotlib Axes, optional
    prob : float, default=0.95

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np, matplotlib
    >>> matplotlib.use("Agg")
    >>> from skfair_measures.bayes import reliability_posterior
    >>> rng = np.random.default_rng(0); s = rng.uniform(size=300)
    >>> rel = reliability_posterior((rng.uniform(size=300) < s).astype(int), s, random_state=0)
    >>> ax = plot_reliability(rel)
    >>> ax.get_xlabel()
    'mean score in bin'
    """
    ax = _axes(ax)
    lo, hi = np.quantile(rel.theta, [(1 - prob) / 2, (1 + prob) / 2], axis=0)
    mean = rel.theta.mean(0)
    ece = rel.ece_summary(prob)
    width = rel.edges[1] - rel.edges[0]
    labels = group_labels(rel.groups)
    for j, lab in enumerate(labels):
        x = np.where(np.isnan(rel.mean_score[j]), (rel.edges[:-1] + rel.edges[1:]) / 2, rel.mean_score[j])
        x = x + (j - (len(labels) - 1) / 2) * 0.12 * width  # keep groups apart
        seen = rel.n[j] > 0
        e = ece.iloc[j]
        line = ax.errorbar(
            x[seen], mean[j][seen], yerr=[mean[j][seen] - lo[j][seen], hi[j][seen] - mean[j][seen]],
            fmt="o", capsize=2, label=f"{lab}: ECE {e['mean']:.3f} [{e['lower']:.3f}, {e['upper']:.3f}]",
        )
        if (~seen).any():  # bins without labels show their prior, hollow
            ax.errorbar(
                x[~seen], mean[j][~seen], yerr=[mean[j][~seen] - lo[j][~seen], hi[j][~seen] - mean[j][~seen]],
                fmt="o", mfc="none", capsize=2, color=line.lines[0].get_color(), alpha=0.5,
            )
    ax.plot([rel.edges[0], 1], [rel.edges[0], 1], color="grey", lw=1, ls="--")
    what = "accuracy" if rel.kind == "confidence" else "fraction of positives"
    ax.set_xlabel("mean score in bin")
    ax.set_ylabel(f"{what} (posterior mean, {prob:.0%} interval)")
    ax.set_xlim(rel.edges[0], 1)
    ax.set_ylim(0 if rel.kind == "positive" else rel.edges[0] - 0.1, 1)
    ax.legend(fontsize="small", loc="upper left")
    return ax


def plot_posterior(post: MeasurePosterior, eps: float = 0.02, ax: Any = None, bins: int = 50) -> Any:
    """Histogram of a measure's draws with the region of practical fairness shaded.

    Seed 000 figure 3 / seed 002 figure 2.8: the posterior of Delta, its mean, the
    95% interval and ``[center - eps, center + eps]``; the title gives
    ``P(Delta > center)`` and ``P(|Delta - center| < eps)``.

    Parameters
    ----------
    post : MeasurePosterior
    eps : float, default=0.02
    ax : matplotlib Axes, optional
    bins : int, default=50

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import skfair_measures as sfm
    >>> post = sfm.msr("fairness.acc").posterior([1, 0, 1, 0], [0.9, 0.2, 0.4, 0.6],
    ...     sensitive_features=list("aabb"), reference="a", random_state=0)
    >>> plot_posterior(post).get_xlabel()
    'fairness.acc(operation=diff_to_reference, reference=a)'
    """
    ax = _axes(ax)
    x = post.draws.ravel()
    c = post.center
    ax.hist(x[~np.isnan(x)], bins=bins, color="tab:red", alpha=0.6, density=True)
    ax.axvspan(c - eps, c + eps, color="gold", alpha=0.3, lw=0)
    lo, hi = post.interval()
    ax.axvline(post.mean(), color="black")
    for v in (lo, hi):
        ax.axvline(v, color="black", ls=":")
    ax.set_xlabel(post.key)
    ax.set_ylabel("posterior density")
    ax.set_title(
        f"{post.method.upper()}: P(>{c:g}) = {post.prob_greater(c):.2f}, "
        f"P(|.-{c:g}|<{eps:g}) = {post.prob_within(eps):.2f}",
        fontsize="small",
    )
    return ax
