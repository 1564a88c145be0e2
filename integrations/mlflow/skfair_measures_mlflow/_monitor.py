"""A :class:`~skfair_measures.monitor.FairnessMonitor` logged to one MLflow run: a step per batch, alarms as tags."""

from __future__ import annotations

import math
import time as _time
from typing import Any

import pandas as pd

from ._keys import sanitize_key
from ._tracking import _batches, _resolve_run_id

__all__ = ["log_monitor"]

#: The status columns logged as metrics, ``{measure key}.{column}``.
FIELDS = ("value", "lower", "upper", "overall_value", "window_value", "n_rows")


def _millis(stamp: Any) -> int:
    if stamp is None or (isinstance(stamp, float) and math.isnan(stamp)):
        return int(_time.time() * 1000)
    ts = pd.Timestamp(stamp)
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts
    return int(ts.timestamp() * 1000)


def log_monitor(monitor: Any, *, run_id: str | None = None, after_step: int | None = None) -> dict[str, Any]:
    """Log a monitor's status after every step to one MLflow run (one run per monitored model).

    Each step's last status becomes metrics ``<key>.value``, ``.lower``, ``.upper``,
    ``.overall_value``, ``.window_value`` and ``.n_rows`` with ``step`` = the monitor's
    step and the batch's time as timestamp (now, for a batch without a time); NaN
    values are left out. An alarm becomes the tag ``alarm.<key>`` = ``"step S (since
    step C)"``; the settings become params on the first call.

    Parameters
    ----------
    monitor : FairnessMonitor
    run_id : str, optional
        The run; by default the active run (or a new one).
    after_step : int, optional
        Log only the steps after this one (a daily job logs its new steps); by default
        the steps after the last one this function logged to the run (the tag
        ``monitor.logged_step``), so calling it after every batch logs each step once.

    Returns
    -------
    dict
        ``run_id`` and the ``steps`` logged.

    Examples
    --------
    >>> import mlflow  # doctest: +SKIP
    >>> with mlflow.start_run():  # doctest: +SKIP
    ...     log_monitor(mon)
    """
    import mlflow
    from mlflow.entities import Metric, Param, RunTag

    client = mlflow.MlflowClient()
    run_id = _resolve_run_id(run_id)
    tags_now = client.get_run(run_id).data.tags
    if after_step is None:
        after_step = int(tags_now.get("monitor.logged_step", 0))
    trace = monitor.history()
    metrics, tags, params = [], [], []
    steps: list[int] = []
    if not trace.empty:
        last = trace[trace["step"] > after_step].groupby(["step", "key"], sort=True).last().reset_index()
        for row in last.itertuples(index=False):
            ts = _millis(row.time)
            for name in FIELDS:
                v = getattr(row, name)
                if v is not None and not (isinstance(v, float) and math.isnan(v)):
                    metrics.append(Metric(sanitize_key(f"{row.key}.{name}"), float(v), ts, int(row.step)))
        steps = sorted(set(last["step"].astype(int)))
    status = monitor.status()
    for key, row in status.iterrows():
        if bool(row["alarm"]):
            text = f"step {int(row['alarm_step'])} (since step {int(row['changed_since'])})"
            tags.append(RunTag(sanitize_key(f"alarm.{key}"), text))
    tags.append(RunTag("monitor.logged_step", str(monitor.step)))
    if "monitor.logged_step" not in tags_now:
        settings = monitor.settings
        params = [Param(sanitize_key(f"monitor.{k}"), str(v)[:500]) for k, v in settings.items()]
    for ms, ps, ts in _batches(metrics, params, tags):
        client.log_batch(run_id, metrics=ms, params=ps, tags=ts)
    return {"run_id": run_id, "steps": steps}
