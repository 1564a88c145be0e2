"""Estimates against labels used (matplotlib is imported here only, when called)."""

from __future__ import annotations

from typing import Any

from .._optional import require

__all__ = ["plot_trajectory"]


def plot_trajectory(assessment: Any, ax: Any = None, prob: float = 0.95, groups: Any = None):
    """Plot each group's posterior mean and central interval against the labels used.

    Parameters
    ----------
    assessment : ActiveAssessment
        An assessment built with ``keep_trajectory=True`` (the default).
    ax : matplotlib Axes, optional
        Where to draw; a new figure when None.
    prob : float, default=0.95
        Interval mass.
    groups : list, optional
        Groups to draw (default: all).

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import numpy as np
    >>> from skfair_measures.active import ActiveAssessment
    >>> aa = ActiveAssessment([0, 1, 1, 0], [0.2, 0.9, 0.7, 0.4], sensitive_features=list("aabb"),
    ...                       random_state=0)
    >>> rows = aa.ask(2)
    >>> aa.tell(rows, [0, 1])
    >>> ax = plot_trajectory(aa)
    >>> ax.get_xlabel()
    'labels used'
    """
    plt = require("matplotlib.pyplot", "plots")

    traj = assessment.trajectory(prob)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    wanted = list(assessment.groups) if groups is None else list(groups)
    for label in wanted:
        part = traj[traj["group"].map(lambda g, label=label: g == label)]
        (line,) = ax.step(part["labels"], part["estimate"], where="post", label=str(label))
        ax.fill_between(part["labels"], part["lower"], part["upper"], step="post", alpha=0.15, color=line.get_color())
    ax.set_xlabel("labels used")
    ax.set_ylabel(f"{assessment.metric.description} (posterior mean, {prob:.0%} interval)")
    ax.legend(title="group", fontsize="small")
    return ax
