"""Log a bias audit (:func:`skfair_measures.audits.bias_audit`) to MLflow: tables, verdict counts, the page.

The audit decides everything; this module only writes what its ``write`` and
``verdict_counts`` prepare: the three CSV tables, ``summary.json`` and the HTML page as
artifacts under ``bias_audit/``, the verdict counts and row counts as metrics, and the
audit's facts (rate, level, construction, date, data source) as params.
"""

from __future__ import annotations

import tempfile
from typing import Any

from ._session import TrackingSession

__all__ = ["log_bias_audit"]


def log_bias_audit(
    audit: Any, *, tracking_uri: str | None = None, run_id: str | None = None, timeout: float | None = None
) -> str | None:
    """Log ``audit`` to the active MLflow run, the run ``run_id``, or a new run; returns the run's id.

    The calls go through the package's one tracking policy (:class:`~._session.TrackingSession`):
    a dead or hanging server costs about ``timeout`` seconds, warns once
    (:class:`FairnessLoggingWarning`) and returns None; the audit itself is never touched.

    Examples
    --------
    >>> import mlflow, pandas as pd, skfair_measures as sfm                     # doctest: +SKIP
    >>> audit = sfm.bias_audit(df, sex="sex", race_ethnicity="race", selected="hired")  # doctest: +SKIP
    >>> with mlflow.start_run():                                                # doctest: +SKIP
    ...     log_bias_audit(audit)
    """
    import mlflow

    if tracking_uri is not None:
        mlflow.set_tracking_uri(tracking_uri)
    session = TrackingSession("log_bias_audit", timeout=timeout)
    started = run_id is None and mlflow.active_run() is None  # a run of our own is ended when done
    run = session.run(run_id)
    if run is None:
        return None
    s, rid = audit.summary, run.info.run_id
    metrics = {f"bias_audit/{t}/{k}": v for t, c in audit.verdict_counts().items() for k, v in c.items()}
    metrics |= {"bias_audit/rows": s["rows"], **{f"bias_audit/{t}/unknown": v for t, v in s["unknown"].items()}}
    session.call("log the metrics", mlflow.log_metrics, metrics, run_id=rid)
    keys = ("rate", "prob", "construction", "date", "data_source", "exclude_below")
    params = {f"bias_audit/{k}": str(s.get(k))[:500] for k in keys}
    session.call("log the params", mlflow.log_params, params, run_id=rid)
    with tempfile.TemporaryDirectory() as folder:
        audit.write(folder)
        session.call("log the tables and page", mlflow.log_artifacts, folder, artifact_path="bias_audit", run_id=rid)
    if started:
        session.call("end the run", mlflow.end_run)
    return rid if session.ok else None
