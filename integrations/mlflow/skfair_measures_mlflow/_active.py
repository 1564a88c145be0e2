"""Log an active assessment's trajectory to MLflow as step-indexed metrics.

The step of each value is the number of labels used, so MLflow's metric charts
show every group's estimate (and interval bounds) against labeling effort.
"""

from __future__ import annotations

import time
from typing import Any

from ._keys import sanitize_segment
from ._session import TrackingSession

__all__ = ["log_active_trajectory"]

_BATCH = 1000  # MLflow's limit of metrics per log_batch call


def _group_segments(groups: Any) -> list[str]:
    segments = [sanitize_segment("_".join(map(str, g)) if isinstance(g, tuple) else g) for g in groups]
    if len(set(segments)) != len(segments):
        raise ValueError(
            f"the groups {list(groups)!r} give clashing MLflow keys {segments!r} once sanitised; rename the groups."
        )
    return segments


def log_active_trajectory(
    assessment: Any,
    *,
    prefix: str = "active",
    prob: float = 0.95,
    run_id: str | None = None,
    timeout: float | None = None,
) -> int:
    """Log every group's estimate and interval after each ``tell`` as step-indexed metrics.

    Keys are ``{prefix}/{metric}/{group}/estimate`` (and ``/lower``, ``/upper``),
    with ``step`` = labels used; NaN values (groups without rows) are skipped.

    Parameters
    ----------
    assessment : skfair_measures.active.ActiveAssessment
        Built with ``keep_trajectory=True`` (the default).
    prefix : str, default="active"
        First segment of every key.
    prob : float, default=0.95
        Interval mass.
    run_id : str, optional
        Run to log to; default the active run (one is started if there is none).
    timeout : float, optional
        Seconds per request to the tracking server. An unreachable or failing server
        gives one warning; the assessment and its trajectory are untouched.

    Returns
    -------
    int
        Number of metric values logged (0 when MLflow failed).
    """
    import mlflow
    from mlflow.entities import Metric

    traj = assessment.trajectory(prob)
    segments = dict(zip(assessment.groups, _group_segments(assessment.groups), strict=True))
    base = f"{sanitize_segment(prefix)}/{assessment.metric.key}"
    now = int(time.time() * 1000)
    metrics = [
        Metric(f"{base}/{segments[row.group]}/{col}", float(getattr(row, col)), now, int(row.labels))
        for row in traj.itertuples(index=False)
        for col in ("estimate", "lower", "upper")
        if getattr(row, col) == getattr(row, col)  # not NaN
    ]
    session = TrackingSession("log_active_trajectory", timeout=timeout)
    if run_id is None:
        run = session.call("start_run", lambda: mlflow.active_run() or mlflow.start_run())
        run_id = None if run is None else run.info.run_id
    client = mlflow.MlflowClient()
    for start in range(0, len(metrics), _BATCH):
        session.call("log_batch", client.log_batch, run_id, metrics=metrics[start : start + _BATCH])
    return len(metrics) if session.ok else 0
