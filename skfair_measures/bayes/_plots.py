"""Plots of posteriors (matplotlib, imported when a plot is drawn)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._optional import require
from ..results import check_prob
from ._posterior import DEFAULT_EPS, MeasurePosterior, group_labels

if TYPE_CHECKING:  # an annotation only: _reliability draws its diagram with this module
    from ._reliability import ReliabilityPosterior

__all__ = ["density_curve", "plot_posterior", "plot_reliability"]

#: A value holding at least this share of the draws is drawn as a point mass.
ATOM_SHARE = 0.01


def _axes(ax: Any) -> Any:
    return ax if ax is not None else require("matplotlib.pyplot", "plots").subplots(figsize=(5, 4))[1]


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
    prob = check_prob(prob)
    ax = _axes(ax)
    lo, hi = np.quantile(rel.theta, [(1 - prob) / 2, (1 + prob) / 2], axis=0)
    mean = rel.theta.mean(0)
    ece = rel.ece_summary(prob)
    width = rel.edges[1] - rel.edges[0]
    labels = group_labels(rel.groups)
    for j, lab in enumerate(labels):
        x = np.where(np.isnan(rel.mean_score[j]), (rel.edges[:-1] + rel.edges[1:]) / 2, rel.mean_score[j])
        x = x + (j - (len(labels) - 1) / 2) * 0.12 * width  # keep groups apart
        e, seen = ece.iloc[j], rel.n[j] > 0
        style = {"label": f"{lab}: ECE {e['mean']:.3f} [{e['lower']:.3f}, {e['upper']:.3f}]"}
        for bins in (seen, ~seen) if (~seen).any() else (seen,):  # bins without labels show their prior, hollow
            m, err = mean[j][bins], [mean[j][bins] - lo[j][bins], hi[j][bins] - mean[j][bins]]
            line = ax.errorbar(x[bins], m, yerr=err, fmt="o", capsize=2, **style)
            style = {"mfc": "none", "color": line.lines[0].get_color(), "alpha": 0.5}
    ax.plot([rel.edges[0], 1], [rel.edges[0], 1], color="grey", lw=1, ls="--")
    what = "accuracy" if rel.kind == "confidence" else "fraction of positives"
    ax.set(xlabel="mean score in bin", ylabel=f"{what} (posterior mean, {prob:.0%} interval)", xlim=(rel.edges[0], 1))
    ax.set_ylim(0 if rel.kind == "positive" else rel.edges[0] - 0.1, 1)
    ax.legend(fontsize="small", loc="upper left")
    return ax


def density_curve(
    draws: np.ndarray, support: tuple[float, float] = (-np.inf, np.inf), grid_size: int = 400
) -> tuple[np.ndarray, np.ndarray, dict[float, float]]:
    """A density of posterior draws that respects the measure's support and its point masses.

    Values that hold at least :data:`ATOM_SHARE` of the draws (a ratio of exactly 1,
    rate draws clipped at 0) are point masses, returned apart with their
    probabilities. The rest gets a Gaussian kernel density reflected at the finite
    ends of ``support``, so that no mass leaks outside it (an absolute difference
    has none below 0), scaled by its share of the draws: the curve's integral plus
    the point masses is 1.

    Parameters
    ----------
    draws : array-like
        Draws of the measure (NaN draws are ignored; the caller says why they exist).
    support : tuple of float, default=(-inf, inf)
        The measure's range (``measure.range``).
    grid_size : int, default=400

    Returns
    -------
    grid, density : ndarray of shape (grid_size,)
        Empty when every draw is a point mass.
    atoms : dict of float to float
        Point masses and their probabilities.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = np.abs(rng.normal(0.0, 0.05, 4000))
    >>> grid, dens, atoms = density_curve(x, support=(0.0, 1.0))
    >>> bool(grid.min() >= 0.0), atoms
    (True, {})
    >>> round(float(np.sum(dens) * (grid[1] - grid[0])), 2)
    1.0
    """
    from scipy.stats import gaussian_kde

    x = np.asarray(draws, dtype=float).ravel()
    x = x[np.isfinite(x)]
    if x.size == 0:
        return np.zeros(0), np.zeros(0), {}
    values, counts = np.unique(x, return_counts=True)
    heavy = counts / x.size >= ATOM_SHARE
    rest = x[~np.isin(x, values[heavy])]
    atoms = {float(v): float(c / x.size) for v, c in zip(values[heavy], counts[heavy], strict=True)}
    if rest.size < 2 or np.ptp(rest) == 0:
        for v in np.unique(rest):
            atoms[float(v)] = atoms.get(float(v), 0.0) + float(np.mean(x == v))
        return np.zeros(0), np.zeros(0), atoms
    lo_s, hi_s = support
    pad = 0.1 * np.ptp(rest)
    grid = np.linspace(max(lo_s, rest.min() - pad), min(hi_s, rest.max() + pad), grid_size)
    kde = gaussian_kde(rest)
    dens = kde(grid)
    for edge in (lo_s, hi_s):  # reflection: the mass the kernel puts beyond an end comes back inside
        if np.isfinite(edge):
            dens = dens + kde(2.0 * edge - grid)
    return grid, dens * (rest.size / x.size), atoms


def plot_posterior(post: MeasurePosterior, eps: float = DEFAULT_EPS, ax: Any = None, prob: float = 0.95) -> Any:
    """Posterior density of a measure with the region of practical fairness shaded.

    Seed 000 figure 3 / seed 002 figure 2.8: the density of the measure's draws
    (:func:`density_curve`: inside the measure's range, point masses drawn as
    stems labeled with their probability), the value, the ``prob`` interval and
    ``[center - eps, center + eps]``; the title gives ``P(Delta > center)`` and
    ``P(|Delta - center| <= eps)``.

    Parameters
    ----------
    post : MeasurePosterior
    eps : float, default=DEFAULT_EPS
    ax : matplotlib Axes, optional
    prob : float, default=0.95

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ValueError
        If the posterior is undefined (the message gives the reason).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import skfair_measures as sfm
    >>> post = sfm.bayes.posterior(sfm.msr("fairness.acc"), [1, 0, 1, 0], [0.9, 0.2, 0.4, 0.6],
    ...     sensitive_features=list("aabb"), reference="a", random_state=0)
    >>> plot_posterior(post).get_xlabel()
    'fairness.acc(operation=diff_to_reference, reference=a)'
    """
    if not post.defined:
        raise ValueError(f"{post.key} has no posterior density to plot: {post.reason}.")
    ax = _axes(ax)
    c = post.center
    grid, dens, atoms = density_curve(post.draws, tuple(post.measure.range))
    if grid.size:
        ax.plot(grid, dens, color="tab:red")
        ax.fill_between(grid, dens, color="tab:red", alpha=0.3, lw=0)
    top = float(dens.max()) if dens.size else 1.0
    for v, p in atoms.items():  # a point mass is a stem, not a spike of the density
        ax.vlines(v, 0, top, color="tab:red", lw=3)
        ax.annotate(f"P(= {v:g}) = {p:.2f}", (v, top), fontsize="small", ha="center", va="bottom")
    ax.axvspan(c - eps, c + eps, color="gold", alpha=0.3, lw=0)
    ax.axvline(post.value, color="black")
    for v in post.interval(prob):
        ax.axvline(v, color="black", ls=":")
    lower = post.measure.range[0]
    if np.isfinite(lower):  # nothing is drawn below the support (the eps band is cut there)
        ax.set_xlim(left=lower)
    ax.set(ylim=(0, None), xlabel=post.key, ylabel="posterior density")
    ax.set_title(
        f"{post.method.upper()}: P(>{c:g}) = {post.prob_greater(c):.2f}, "
        f"P(|.-{c:g}|<={eps:g}) = {post.prob_within(eps):.2f}",
        fontsize="small",
    )
    return ax
