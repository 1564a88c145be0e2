"""``log_fairness``: compute first, then send metrics, params and tags in batches.

Every MLflow call goes through a :class:`~skfair_measures_mlflow._session.TrackingSession`,
so an unreachable or failing tracking server costs a bounded time and one warning, and
the returned :class:`LoggedFairness` always holds everything computed.
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._collect import Artifact, Payload, collect, name_results
from ._session import FairnessLoggingWarning, TrackingSession

__all__ = ["FairnessLoggingWarning", "LoggedFairness", "log_fairness", "log_payload"]

#: MLflow's limits for one ``log_batch`` request.
MAX_METRICS_PER_BATCH = 1000
MAX_PARAMS_PER_BATCH = 100
MAX_ENTITIES_PER_BATCH = 1000


@dataclass
class LoggedFairness:
    """What :func:`log_fairness` computed and logged.

    Attributes
    ----------
    run_id : str or None
        The run logged to (None if no run could be resolved).
    metrics : dict
        ``{metric key: value}``: everything computed, logged or not; headline values first.
    params, tags : dict
        ``{key: value}``.
    artifacts : list of str
        Artifact paths inside the run (only those actually logged; tables included).
    series : list of (str, float, int)
        Metrics logged at their own steps, ``(key, value, step)``.
    key_map : dict
        ``{metric key: meaning}``: which result, quantity and group (original label)
        each key stands for, the way back from a sanitised key.
    results : dict
        ``{name: result}``: the results that were passed in (a result that shares its
        name with one of another kind is stored as ``"<name> (<kind>)"``).
    step : int
    logged : bool
        True if every metric, param, tag and artifact reached the tracking server.
    error : BaseException or None
        The exception that stopped logging, if any.
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


def log_fairness(
    result_or_results: Any,
    *,
    run_id: str | None = None,
    prefix: str = "",
    step: int | None = None,
    log_params: bool = True,
    artifacts: bool = True,
    measures: Any = None,
    posterior_options: Mapping[str, Any] | None = None,
    group_metrics: bool = False,
    model_id: str | None = None,
    dataset: Any = None,
    timeout: float | None = None,
) -> LoggedFairness:
    """Log fairness results to an MLflow run, laid out for people.

    Everything is computed before anything is logged. If logging fails (no server,
    a server that dies half-way, a full disk), one :class:`FairnessLoggingWarning`
    is issued and the returned object still holds every computed value.

    Parameters
    ----------
    result_or_results : Result, dict or list of results
        A result of skfair-measures (``Measure.evaluate``, ``bootstrap``,
        ``posterior``, an estimate of ``skfair_measures.unaware``), the dict returned
        by ``evaluate_measures``, or a dict ``{name: result}`` / list of results or
        ``(name, result)`` pairs.
    run_id : str, optional
        The run to log to; default the active run (one is started, and left
        active, if there is none, as ``mlflow.log_metric`` does).
    prefix : str, default=""
        Prepended to every metric and param key (``"test/"``, ``"val_"``).
    step : int, optional
        Metric step (default 0), e.g. an epoch or a fold.
    log_params : bool, default=True
        Log the options you chose for each measure (those that differ from their
        defaults) as params ``{key}.config/...``, and the interval probability and
        ``eps`` of sampled summaries once. A param that
        already exists in the run with a different value is skipped with a warning
        (MLflow params are immutable).
    artifacts : bool, default=True
        Log ``results.json`` (every result, groups as lists, each measure's full
        configuration), the run's one groupwise table (``fairness/groupwise.json``, groups
        as columns, a ``kind`` column; every call appends to it, see ``mlflow.log_table``),
        a chart of the call's rows (``groupwise.png``), and for bootstrap results and posteriors a
        density plot and the draws (CSV).
    measures : Measure or list/dict of Measure, optional
        Measures to read the configuration and meaning from, by key (default: each
        result's own ``measure``).
    posterior_options : dict, optional
        ``prob`` (interval coverage, default 0.95) and ``eps`` (half-width of the
        region of practical fairness around the measure's ideal value; default
        ``skfair_measures.results.DEFAULT_EPS``, 0.05).
    group_metrics : bool, default=False
        Also log each per-group value as a metric (they are always in the table).
    model_id : str, optional
        With MLflow 3: the id of a logged model (``ModelInfo.model_id``) the metrics
        belong to; they then show on the model's page too.
    dataset : mlflow.data.Dataset, optional
        The evaluation dataset the metrics were computed on (linked by name and digest).
    timeout : float, optional
        Seconds to wait for the tracking server, per request (default 10). An HTTP
        server that does not accept a connection within it is given up at once.

    Returns
    -------
    LoggedFairness

    Notes
    -----
    Keys (``{p}`` the prefix, ``{N}`` the result's name, ``{g}`` a sanitised group
    label such as ``sex_F_race_Black``): ``{p}{N}`` the value (a disparity, for a ``fairness.*`` measure);
    ``{p}groups.n_rows/{g}`` the rows of each group, once (``groups.n_labeled/{g}``: the
    labelled rows a posterior used); ``{p}{N}.overall_{base}`` the base metric over all
    rows; ``{p}{N}.posterior/{mean, sd, interval_lower, interval_upper, prob_within,
    prob_greater}`` (``.bootstrap/`` gives ``share_within``, ``share_greater``: shares of
    replicates); params ``{p}{N}.config/...`` for the options you chose; tags
    ``skfair.sensitive``, ``skfair.groups``, and ``{p}{N}.undefined`` (the reason) for
    an undefined value. Bootstrap results and posteriors also give simultaneous verdicts
    (:func:`skfair_measures.verdicts`, at level ``prob`` with tolerance ``eps``): metrics
    ``{p}fairness.verdicts/{exceeds, inconclusive, within, undefined}`` (counts of
    group pairs), the tag ``{p}fairness.verdicts`` (level, eps, construction) and the
    table ``fairness/verdicts.json``. No key is a directory of another, so MLflow's file
    store accepts every run.

    Examples
    --------
    >>> import mlflow, skfair_measures as sfm
    >>> res = sfm.msr("fairness.tpr").evaluate(
    ...     [1, 1, 0, 1], [1, 0, 0, 1], sensitive_features=["F", "M", "F", "M"])
    >>> with mlflow.start_run():                                  # doctest: +SKIP
    ...     logged = log_fairness(res)
    >>> logged.metrics["groups.n_rows/M"]                         # doctest: +SKIP
    2.0
    """
    payload = collect(
        result_or_results,
        prefix=prefix,
        measures=measures,
        log_params=log_params,
        artifacts=artifacts,
        posterior_options=posterior_options,
        step=step,
        group_metrics=group_metrics,
    )
    results: dict[str, Any] = {}
    for name, res in name_results(result_or_results):
        results[name if name not in results else f"{name} ({res.kind})"] = res
    session = TrackingSession("log_fairness", timeout=timeout)
    return log_payload(payload, session, run_id=run_id, step=step, results=results, model_id=model_id, dataset=dataset)


def _resolve_run_id(run_id: str | None) -> str:
    import mlflow

    if run_id is not None:
        return run_id
    run = mlflow.active_run()
    if run is None:
        run = mlflow.start_run()
    return run.info.run_id


def _batches(metrics: list[Any], params: list[Any], tags: list[Any] = ()) -> list[tuple[list[Any], ...]]:
    """Split into requests within MLflow's limits (<= 1000 metrics, <= 100 params, <= 1000 in all)."""
    out: list[tuple[list[Any], ...]] = []
    tags = list(tags)
    while True:
        ps, params = params[:MAX_PARAMS_PER_BATCH], params[MAX_PARAMS_PER_BATCH:]
        room = MAX_ENTITIES_PER_BATCH - len(ps)
        ts, tags = tags[:room], tags[room:]
        room = min(MAX_METRICS_PER_BATCH, room - len(ts))
        ms, metrics = metrics[:room], metrics[room:]
        out.append((ms, ps, ts))
        if not params and not metrics and not tags:
            return out


def _new_params(client: Any, run_id: str, params: dict[str, str]) -> dict[str, str]:
    """Drop params already logged with the same value; warn about conflicting ones."""
    existing = client.get_run(run_id).data.params
    conflicts = {k: (existing[k], v) for k, v in params.items() if k in existing and existing[k] != v}
    if conflicts:
        shown = ", ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in list(conflicts.items())[:5])
        warnings.warn(
            f"run {run_id} already has param(s) with other values ({shown}); MLflow params "
            "cannot change, so these are not logged. Log into a new run, or use prefix= to "
            "keep configurations apart.",
            FairnessLoggingWarning,
            stacklevel=5,
        )
    return {k: v for k, v in params.items() if k not in existing}


def _entities(payload: Payload, params: dict[str, str], step: int, model_id: str | None, dataset: Any) -> tuple:
    from mlflow.entities import Metric, Param, RunTag

    link = {"model_id": model_id}
    if dataset is not None:
        link.update(dataset_name=dataset.name, dataset_digest=dataset.digest)
    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, step, **link) for k, v in payload.metrics.items()]
    metrics += [Metric(k, v, now, int(st), **link) for k, v, st in payload.series]
    return metrics, [Param(k, v) for k, v in params.items()], [RunTag(k, v) for k, v in payload.tags.items()]


def _write(art: Artifact, root: str) -> None:
    path = os.path.join(root, *art.path.split("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    mode, encoding = ("wb", None) if isinstance(art.content, bytes) else ("w", "utf-8")
    with open(path, mode, encoding=encoding) as fh:
        fh.write(art.content)


def _send_files(session: TrackingSession, client: Any, out: LoggedFairness, payload: Payload) -> None:
    for path, table in payload.tables.items():
        session.call("log the table " + path, client.log_table, out.run_id, data=table, artifact_file=path)
        if not session.ok:
            return
        out.artifacts.append(path)
    if not payload.artifacts:
        return
    with tempfile.TemporaryDirectory(prefix="skfair-mlflow-") as tmp:
        for art in payload.artifacts:
            _write(art, tmp)
        session.call("log the artifacts", client.log_artifacts, out.run_id, tmp)
    if session.ok:
        out.artifacts += [a.path for a in payload.artifacts]


def log_payload(
    payload: Payload,
    session: TrackingSession | None = None,
    *,
    run_id: str | None = None,
    step: int | None = None,
    results: dict[str, Any] | None = None,
    model_id: str | None = None,
    dataset: Any = None,
) -> LoggedFairness:
    """Send a computed :class:`~skfair_measures_mlflow._collect.Payload` to MLflow; never raise.

    Pass the ``session`` of the surrounding call so that one failure stops all of its
    logging with one warning; by default a new session is opened.
    """
    from mlflow.tracking import MlflowClient

    session = TrackingSession("log_payload") if session is None else session

    out = LoggedFairness(
        run_id=run_id,
        metrics=dict(payload.metrics),
        params=dict(payload.params),
        tags=dict(payload.tags),
        series=list(payload.series),
        key_map=payload.key_map,
        results=results or {},
        step=0 if step is None else int(step),
    )
    out.run_id = session.call("start or find the run", _resolve_run_id, run_id)
    client = MlflowClient()
    params = payload.params
    if out.run_id is not None and params:
        params = session.call("read the run's params", _new_params, client, out.run_id, params) or {}
    if out.run_id is not None:
        metrics, param_objs, tags = _entities(payload, params, out.step, model_id, dataset)
        for ms, ps, ts in _batches(metrics, param_objs, tags):
            if ms or ps or ts:
                session.call(
                    "log metrics, params and tags", client.log_batch, out.run_id, metrics=ms, params=ps, tags=ts
                )
        _send_files(session, client, out, payload)
    out.logged, out.error = session.ok, session.error
    return out
