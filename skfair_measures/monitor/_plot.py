"""A monitor's disparities over time: value, confidence sequence, tolerance and alarm."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._optional import require

if TYPE_CHECKING:
    from ._monitor import FairnessMonitor

__all__ = ["plot_monitor"]


def plot_monitor(monitor: FairnessMonitor, key: str | None = None, ax: Any = None) -> Any:
    """Plot one measure of a monitor over its steps.

    The cumulative value and its anytime-valid sequence (shaded), the windowed value
    (dashed), the tolerance ``eps`` (a horizontal line) and the step of the alarm
    (a vertical line, with the step the change was dated from). Dates on the time axis
    are placed and shortened by matplotlib's automatic date locator and concise
    formatter, so 30 daily batches or a year of them read alike; the legend sits below
    the axes, outside the data.

    Parameters
    ----------
    monitor : FairnessMonitor
    key : str, optional
        The measure; by default the first one.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from skfair_measures.monitor import FairnessMonitor
    >>> mon = FairnessMonitor("fairness.cv", eps=0.2)
    >>> for _ in range(3):
    ...     _ = mon.update([1, 0, 1, 1, 0, 1], sensitive_features=list("aaabbb"))
    >>> plot_monitor(mon).get_ylabel()
    'fairness.cv'
    """
    plt = require("matplotlib.pyplot", "plots")

    keys = [m.key for m in monitor.measures]
    key = keys[0] if key is None else key
    if key not in keys:
        raise KeyError(f"key={key!r} is not monitored; the monitor has {keys}.")
    trace = monitor.history()
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.2), layout="constrained")
    ax.set_ylabel(key)
    if trace.empty:
        ax.set_xlabel("step")
        return ax
    rows = trace[trace["key"] == key].groupby("step").last()  # the state at the end of each step
    times = pd.to_datetime(rows["time"], errors="coerce") if rows["time"].notna().all() else None
    x = times.to_numpy() if times is not None else rows.index.to_numpy()
    ax.set_xlabel("time" if times is not None else "step")
    if times is not None:
        dates = require("matplotlib.dates", "plots")
        locator = dates.AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(dates.ConciseDateFormatter(locator))
    lower, upper = rows["lower"].to_numpy(dtype=float), rows["upper"].to_numpy(dtype=float)
    shown = monitor.estimates()[key]  # the level and construction of the sequence, as the monitor's result says
    ax.fill_between(x, lower, upper, alpha=0.25, step="post", label=f"{shown.prob:.3g} {shown.construction}")
    ax.step(x, rows["value"].to_numpy(dtype=float), where="post", label="value (rows since the last change, 'since')")
    ax.step(x, rows["window_value"].to_numpy(dtype=float), where="post", linestyle="--", label="windowed value")
    eps = monitor.eps[key]
    ax.axhline(eps, color="black", linewidth=1, label=f"tolerance eps={eps:g}")
    fired = rows[rows["alarm"].astype(bool)]
    if len(fired):
        first, since = fired.index[0], int(fired["changed_since"].iloc[0])
        ax.axvline(x[rows.index.get_loc(first)], color="red", label=f"alarm (step {first}; since step {since})")
    finite = np.isfinite(upper)
    if finite.any():
        ax.set_ylim(min(0.0, np.nanmin(lower[finite])), max(eps, np.nanmax(upper[finite])) * 1.05)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=2, fontsize="small", frameon=False)
    return ax
