"""Writing records to MLflow: ``log_fairness``, ``log_monitor``, ``log_active_trajectory``.

What is written is computed first, by :mod:`skfair_measures.record`; this module only sends it,
in as few requests as MLflow's limits allow, through one :class:`~._session.TrackingSession`,
so a failing tracking service costs a bounded time and one warning, and the values come back.
"""

from __future__ import annotations

import pathlib
import tempfile
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from skfair_measures.record import Record, name_results, record
from skfair_measures.record import sanitize_key as sanitize_key  # re-exported by the package
from skfair_measures.record import sanitize_segment as sanitize_segment  # re-exported by the package

from ._session import FairnessLoggingWarning, TrackingSession

__all__ = ["LoggedFairness", "log_active_trajectory", "log_fairness", "log_monitor", "write"]

#: MLflow's limits for one ``log_batch`` request: metrics, params, all entities.
MAX_METRICS, MAX_PARAMS, MAX_ENTITIES = 1000, 100, 1000


@dataclass
class LoggedFairness:
    """What a logging call computed and logged.

    Attributes
    ----------
    run_id : str or None
        The run logged to (None if no run could be resolved).
    metrics, params, tags : dict
        Everything computed, logged or not; metrics with the headline values first.
    artifacts : list of str
        Artifact paths inside the run that were logged (tables included).
    series : list of (str, float, int)
        Metrics logged at their own steps, ``(key, value, step)``.
    key_map : dict
        ``{metric key: meaning}``: which result, quantity and group (original label) a key stands for.
    results : dict
        ``{name: result}`` as passed in (a name shared by two kinds is stored as ``"<name> (<kind>)"``).
    step : int
    logged : bool
        True if everything reached the tracking server.
    error : BaseException or None
        Why logging stopped, if it did.
    artifact_uri : str or None
        Where the run keeps its artifacts.
    """

    run_id: str | None
    metrics: dict[str, float]
    params: dict[str, str]
    tags: dict[str, str] = field(default_factory=dict)
    artifacts: list[str] = field(default_factory=list)
    series: list[tuple[str, float, int]] = field(default_factory=list)
    key_map: dict[str, dict[str, Any]] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    step: int = 0
    logged: bool = False
    error: BaseException | None = None
    artifact_uri: str | None = None


def log_fairness(
    result_or_results: Any,
    *,
    run_id: str | None = None,
    prefix: str = "",
    step: int | None = None,
    log_params: bool = True,
    artifacts: bool = True,
    report: bool = True,
    measures: Any = None,
    posterior_options: Mapping[str, Any] | None = None,
    group_metrics: bool = False,
    model_id: str | None = None,
    dataset: Any = None,
    timeout: float | None = None,
) -> LoggedFairness:
    """Log fairness results to an MLflow run, laid out for people.

    Everything is computed before anything is logged (:func:`skfair_measures.record.record`,
    whose docstring lists every key, table and file). If logging fails (no server, a server
    that hangs or dies half-way, a read-only store), one :class:`FairnessLoggingWarning` is
    issued within about twice ``timeout`` and the returned object holds every computed value.

    Parameters
    ----------
    result_or_results : Result, dict or list of results
        Results of skfair-measures (``Measure.evaluate``, ``evaluate_measures``, ``bootstrap``,
        ``posterior``, the estimates of ``skfair_measures.unaware``), a dict ``{name: result}``,
        or a list of results or ``(name, result)`` pairs.
    run_id : str, optional
        The run; default the active run (one is started, and left active, if there is none).
    prefix : str, default=""
        Prepended to every metric and param key (``"test/"``, ``"val_"``).
    step : int, optional
        Metric step (default 0), e.g. an epoch or a fold.
    log_params : bool, default=True
        The options you chose for each measure, and the interval level and eps once; a param
        already in the run with another value is skipped with a warning (params are immutable).
    artifacts : bool, default=True
        The run's tables (``fairness/summary.json``, ``groupwise.json``, ``verdicts.json``; every
        call appends) and files (``results.json``, charts, draws).
    report : bool, default=True
        Also the HTML report (``fairness/report.html``), with the headline verdict in words.
    measures : Measure or list/dict of Measure, optional
        Measures to read the configuration from, by key (default: each result's own).
    posterior_options : dict, optional
        ``prob`` (interval level, 0.95) and ``eps`` (practical fairness around the ideal value,
        ``skfair_measures.results.DEFAULT_EPS``).
    group_metrics : bool, default=False
        Also log group sizes and per-group values as metrics (they are always in the table).
    model_id : str, optional
        The id of a logged model (``ModelInfo.model_id``) the metrics belong to.
    dataset : mlflow.data.Dataset, optional
        The evaluation dataset the metrics were computed on.
    timeout : float, optional
        Seconds per request to the tracking server (default 10).

    Returns
    -------
    LoggedFairness

    Examples
    --------
    >>> import mlflow, skfair_measures as sfm
    >>> res = sfm.msr("fairness.tpr").evaluate(
    ...     [1, 1, 0, 1], [1, 0, 0, 1], sensitive_features=["F", "M", "F", "M"])
    >>> with mlflow.start_run():                                  # doctest: +SKIP
    ...     logged = log_fairness(res)
    >>> logged.metrics["fairness.tpr"]                            # doctest: +SKIP
    0.5
    """
    level = {k: v for k, v in (posterior_options or {}).items() if k in ("prob", "eps") and v is not None}
    rec = record(
        result_or_results,
        prefix=prefix,
        measures=measures,
        log_params=log_params,
        artifacts=artifacts,
        html=report,
        step=step,
        group_metrics=group_metrics,
        **level,
    )
    results: dict[str, Any] = {}
    for name, res in name_results(result_or_results):
        results[name if name not in results else f"{name} ({res.kind})"] = res
    session = TrackingSession("log_fairness", timeout=timeout)
    return write(rec, session, run_id=run_id, step=step, results=results, model_id=model_id, dataset=dataset)


def _batches(metrics: list[Any], params: list[Any], tags: list[Any] = ()) -> list[tuple[list[Any], ...]]:
    """Requests within MLflow's limits (<= 1000 metrics, <= 100 params, <= 1000 in all)."""
    out, tags = [], list(tags)
    while True:
        ps, params = params[:MAX_PARAMS], params[MAX_PARAMS:]
        ts, tags = tags[: MAX_ENTITIES - len(ps)], tags[MAX_ENTITIES - len(ps) :]
        room = min(MAX_METRICS, MAX_ENTITIES - len(ps) - len(ts))
        ms, metrics = metrics[:room], metrics[room:]
        out.append((ms, ps, ts))
        if not params and not metrics and not tags:
            return out


def _new_params(run: Any, params: dict[str, str]) -> dict[str, str]:
    """Params not yet in the run; one warning for those already there with another value."""
    existing = run.data.params
    conflicts = {k: (existing[k], v) for k, v in params.items() if k in existing and existing[k] != v}
    if conflicts:
        shown = ", ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in list(conflicts.items())[:5])
        warnings.warn(
            f"run {run.info.run_id} already has param(s) with other values ({shown}); MLflow params "
            "cannot change, so these are not logged. Log into a new run, or use prefix= to "
            "keep configurations apart.",
            FairnessLoggingWarning,
            stacklevel=4,
        )
    return {k: v for k, v in params.items() if k not in existing}


def write(
    rec: Record,
    session: TrackingSession,
    *,
    run_id: str | None = None,
    step: int | None = None,
    results: dict[str, Any] | None = None,
    model_id: str | None = None,
    dataset: Any = None,
) -> LoggedFairness:
    """Send a :class:`~skfair_measures.record.Record` to a run through ``session``; never raise."""
    from mlflow.entities import Metric, Param, RunTag

    out = LoggedFairness(None, dict(rec.metrics), dict(rec.params), dict(rec.tags), series=list(rec.series))
    out.key_map, out.results, out.step = rec.key_map, results or {}, 0 if step is None else int(step)
    run = session.run(run_id)
    if run is None:
        out.error = session.error
        return out
    out.run_id, out.artifact_uri = run.info.run_id, run.info.artifact_uri
    link: dict[str, Any] = {"model_id": model_id}
    if dataset is not None:
        link.update(dataset_name=dataset.name, dataset_digest=dataset.digest)
    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, out.step, **link) for k, v in rec.metrics.items()]
    metrics += [Metric(k, v, rec.times.get(st, now), st, **link) for k, v, st in rec.series]
    params = [Param(k, v) for k, v in _new_params(run, rec.params).items()]
    tags = dict(rec.tags)
    headline = next((v for k, v in tags.items() if k.endswith("fairness.headline")), None)
    if headline and "mlflow.note.content" not in run.data.tags:  # the run's description, unless it has one
        tags["mlflow.note.content"] = headline
    for ms, ps, ts in _batches(metrics, params, [RunTag(k, v) for k, v in tags.items()]):
        if ms or ps or ts:
            session.call("log metrics, params and tags", session.client.log_batch, out.run_id, ms, ps, ts)
    for path, table in rec.tables.items():
        session.call("log the table " + path, session.client.log_table, out.run_id, data=table, artifact_file=path)
        if session.ok:
            out.artifacts.append(path)
    if rec.files and session.ok:
        with tempfile.TemporaryDirectory(prefix="skfair-mlflow-") as tmp:
            for path, content in rec.files.items():
                target = pathlib.Path(tmp, *path.split("/"))
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
            session.call("log the artifacts", session.client.log_artifacts, out.run_id, tmp)
        if session.ok:
            out.artifacts += list(rec.files)
    out.logged, out.error = session.ok, session.error
    return out


def log_monitor(
    monitor: Any, *, run_id: str | None = None, after_step: int | None = None, timeout: float | None = None
) -> dict[str, Any]:
    """Log a fairness monitor's new steps to one MLflow run (one run per monitored model).

    Each measure ``{key}`` gives the step series ``{key}/value``, ``/lower``, ``/upper``,
    ``/e_value``, ``/alarm`` (0 or 1), ``/overall_value``, ``/window_value`` and ``/n_rows`` at
    the monitor's steps, timestamped with each batch's time
    (:func:`skfair_measures.record.monitor_record`); an alarm is also the tag ``alarm.{key}``.

    Parameters
    ----------
    monitor : FairnessMonitor
    run_id : str, optional
        The run; by default the active run (or a new one).
    after_step : int, optional
        Log only the steps after this one; by default those after the last step logged to the
        run (its tag ``monitor.logged_step``), so calling it after every batch logs each step once.
    timeout : float, optional
        Seconds per request to the tracking server (default 10); a failing server costs one
        :class:`FairnessLoggingWarning` and about twice the timeout.

    Returns
    -------
    dict
        ``run_id``, the ``steps`` logged, the ``series`` ``(key, value, step)`` computed, ``logged``
        and ``error``.

    Examples
    --------
    >>> with mlflow.start_run():  # doctest: +SKIP
    ...     log_monitor(mon)
    """
    from skfair_measures.record import monitor_record

    session = TrackingSession("log_monitor", timeout=timeout)
    run = session.run(run_id)
    tags = {} if run is None else run.data.tags
    done = int(tags.get("monitor.logged_step", 0)) if after_step is None else int(after_step)
    rec = monitor_record(monitor, done, first="monitor.logged_step" not in tags)
    logged = write(rec, session, run_id=None if run is None else run.info.run_id)
    keep = {"series": rec.series, "logged": logged.logged, "error": logged.error}
    return {"run_id": logged.run_id, "steps": sorted({st for _, _, st in rec.series}), **keep}


def log_active_trajectory(
    assessment: Any,
    *,
    prefix: str = "active",
    prob: float = 0.95,
    run_id: str | None = None,
    timeout: float | None = None,
) -> int:
    """Log every group's estimate and interval after each ``tell``, at step = labels used.

    Keys are ``{prefix}/{metric}/{group}/estimate`` (``/lower``, ``/upper``); NaN values are
    skipped. A failing tracking server gives one warning; the assessment is untouched.

    Returns
    -------
    int
        Number of metric values logged (0 when MLflow failed).
    """
    from skfair_measures.record import trajectory_record

    rec = trajectory_record(assessment, prefix=prefix, prob=prob)
    logged = write(rec, TrackingSession("log_active_trajectory", timeout=timeout), run_id=run_id)
    return len(rec.series) if logged.logged else 0
