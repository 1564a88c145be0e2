"""Log a bias audit (:func:`skfair_measures.audits.bias_audit`) to MLflow: tables, verdict counts, the page.

The audit decides everything; this module only writes what its ``write`` and
``verdict_counts`` prepare: the three CSV tables, ``summary.json`` and the HTML page as
artifacts under ``bias_audit/``, the verdict counts and row counts as metrics, and the
audit's facts (rate, level, construction, date, data source) as params.
"""

from __future__ import annotations

import contextlib
import tempfile
from typing import Any

__all__ = ["log_bias_audit"]


def log_bias_audit(audit: Any, *, tracking_uri: str | None = None, run_id: str | None = None) -> str:
    """Log ``audit`` to the active MLflow run, the run ``run_id``, or a new run; returns the run's id.

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
    active = mlflow.active_run()
    use_active = active is not None and run_id in (None, active.info.run_id)
    with contextlib.nullcontext(active) if use_active else mlflow.start_run(run_id=run_id) as run:
        s = audit.summary
        metrics = {f"bias_audit/{t}/{k}": v for t, c in audit.verdict_counts().items() for k, v in c.items()}
        metrics |= {"bias_audit/rows": s["rows"], **{f"bias_audit/{t}/unknown": v for t, v in s["unknown"].items()}}
        mlflow.log_metrics(metrics)
        keys = ("rate", "prob", "construction", "date", "data_source", "exclude_below")
        mlflow.log_params({f"bias_audit/{k}": str(s.get(k))[:500] for k in keys})
        with tempfile.TemporaryDirectory() as folder:
            audit.write(folder)
            mlflow.log_artifacts(folder, artifact_path="bias_audit")
        return run.info.run_id
