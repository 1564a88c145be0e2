"""``log_fairness``: compute first, then log metrics and params in batches."""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._collect import Artifact, Payload, collect

__all__ = ["FairnessLoggingWarning", "LoggedFairness", "log_fairness", "log_payload"]

#: MLflow's limits for one ``log_batch`` request.
MAX_METRICS_PER_BATCH = 1000
MAX_PARAMS_PER_BATCH = 100
MAX_ENTITIES_PER_BATCH = 1000


class FairnessLoggingWarning(UserWarning):
    """Logging to MLflow failed (or was partial); the computed values are kept."""


@dataclass
class LoggedFairness:
    """What :func:`log_fairness` computed and logged.

    Attributes
    ----------
    run_id : str or None
        The run logged to (None if no run could be resolved).
    metrics : dict
        ``{metric key: value}``: everything computed, logged or not.
    params : dict
        ``{param key: value}``.
    artifacts : list of str
        Artifact paths inside the run (only those actually logged).
    series : list of (str, float, int)
        Metrics logged at their own steps, ``(key, value, step)``.
    key_map : dict
        ``{metric key: meaning}``: which result, quantity, group (original label)
        each key stands for, the way back from a sanitised key.
    results : dict
        ``{name: result}``: the results that were passed in (a posterior that shares
        its measure's name is stored as ``"<name> (posterior)"``).
    step : int
    logged : bool
        True if every metric and param reached the tracking server.
    error : BaseException or None
        The exception that stopped logging, if any.
    """

    run_id: str | None
    metrics: dict[str, float]
    params: dict[str, str]
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
) -> LoggedFairness:
    """Log fairness results to an MLflow run: metrics and params in one batch.

    Everything is computed before anything is logged. If logging fails (no server,
    a conflicting param, a full disk), a :class:`FairnessLoggingWarning` is issued and
    the returned object still holds every computed value.

    Parameters
    ----------
    result_or_results : result, dict or list of results
        A ``MeasureResult`` (``Measure.evaluate``), the dict returned by
        ``evaluate_measures``, a posterior (``Measure.posterior``), an estimate from
        ``skfair_measures.unaware``, or a dict ``{name: result}`` / list of these.
    run_id : str, optional
        The run to log to; default the active run (one is started, and left
        active, if there is none, as ``mlflow.log_metric`` does).
    prefix : str, default=""
        Prepended to every metric and param key (``"test/"``, ``"val_"``).
    step : int, optional
        Metric step (default 0), e.g. an epoch or a fold.
    log_params : bool, default=True
        Log the measure configuration (key, base, operation, minimize, reference,
        epsilon, ...) as params. A param that already exists in the run with a
        different value is skipped with a warning (MLflow params are immutable).
    artifacts : bool, default=True
        Log a JSON file with all results and the key map; for posteriors, the
        draws (ArviZ netCDF), a summary CSV and a density plot; for unawareness
        estimates, their diagnostics as JSON.
    measures : Measure or list/dict of Measure, optional
        The measures behind measure results, so that their configuration is logged
        (a ``MeasureResult`` carries only its key and direction).
    posterior_options : dict, optional
        ``prob`` (interval coverage, default 0.95), ``eps`` (practical-fairness
        margin for ``prob_within``, default 0.02), ``greater_than`` (default: the
        posterior's ``center``, 0 for differences and 1 for ratios).

    Returns
    -------
    LoggedFairness

    Notes
    -----
    Key scheme (``{p}`` is the prefix, ``{key}`` the measure key, ``{g}`` a
    sanitised group label such as ``sex_F`` or ``sex_F,race_B`` -> ``sex_F_race_B``).
    The value sits at the plain key; everything else hangs off ``{key}.<field>``, so
    no key is a directory of another and every store, including MLflow's file
    store, accepts the run:

    - ``{p}{key}``: the value; ``{p}{key}.overall``: the base metric on all rows;
    - ``{p}{key}.by_group/{base}/{g}``: the base metric per group (composites: one
      ``{component}`` per base); ``{p}{key}.count/{g}``: group sizes;
    - ``{p}{key}.posterior/{mean, interval_lower, interval_upper, prob_greater,
      prob_within}`` and ``{p}{key}.posterior/diagnostics/...``;
    - ``{p}{name}``, ``{p}{name}.interval_{lower,upper}``, ``{p}{name}.by_group/{g}``,
      ``{p}{name}.diagnostics/...`` for unawareness estimates;
    - params ``{p}{key}.config/{key, base, operation, minimize, reference, epsilon,
      ...}``, ``{p}{key}.posterior/{method, eps, ...}``, ``{p}{name}.config/...``.

    Examples
    --------
    >>> import mlflow, skfair_measures as sfm
    >>> res = sfm.msr("fairness.tpr").evaluate(
    ...     [1, 1, 0, 1], [1, 0, 0, 1], sensitive_features=["F", "M", "F", "M"])
    >>> with mlflow.start_run():                                  # doctest: +SKIP
    ...     logged = log_fairness(res)
    >>> logged.metrics["fairness.tpr.by_group/tpr/M"]            # doctest: +SKIP
    0.5
    """
    payload = collect(
        result_or_results,
        prefix=prefix,
        measures=measures,
        log_params=log_params,
        artifacts=artifacts,
        posterior_options=posterior_options,
        step=step,
    )
    from ._collect import name_results

    results: dict[str, Any] = {}
    for name, kind, res in name_results(result_or_results):
        results[name if name not in results else f"{name} ({kind})"] = res
    return log_payload(payload, run_id=run_id, step=step, results=results)


def _resolve_run_id(run_id: str | None) -> str:
    import mlflow

    if run_id is not None:
        return run_id
    run = mlflow.active_run()
    if run is None:
        run = mlflow.start_run()
    return run.info.run_id


def _batches(metrics: list[Any], params: list[Any]) -> list[tuple[list[Any], list[Any]]]:
    """Split into requests within MLflow's limits (<= 1000 metrics, <= 100 params)."""
    out: list[tuple[list[Any], list[Any]]] = []
    while True:
        ps, params = params[:MAX_PARAMS_PER_BATCH], params[MAX_PARAMS_PER_BATCH:]
        room = min(MAX_METRICS_PER_BATCH, MAX_ENTITIES_PER_BATCH - len(ps))
        ms, metrics = metrics[:room], metrics[room:]
        out.append((ms, ps))
        if not params and not metrics:
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
            stacklevel=4,
        )
    return {k: v for k, v in params.items() if k not in existing}


def _write_artifact(art: Artifact, root: str) -> None:
    path = os.path.join(root, *art.path.split("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if callable(art.content):
        art.content(path)
    elif isinstance(art.content, bytes):
        with open(path, "wb") as fh:
            fh.write(art.content)
    else:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(art.content)


def log_payload(
    payload: Payload,
    *,
    run_id: str | None = None,
    step: int | None = None,
    results: dict[str, Any] | None = None,
) -> LoggedFairness:
    """Log a computed :class:`~skfair_measures_mlflow._collect.Payload`; never raise."""
    out = LoggedFairness(
        run_id=run_id,
        metrics=dict(payload.metrics),
        params=dict(payload.params),
        series=list(payload.series),
        key_map=payload.key_map,
        results=results or {},
        step=0 if step is None else int(step),
    )
    stage = "resolve the run"
    try:
        from mlflow.entities import Metric, Param
        from mlflow.tracking import MlflowClient

        out.run_id = _resolve_run_id(run_id)
        client = MlflowClient()
        stage = "read the run's params"
        params = _new_params(client, out.run_id, payload.params) if payload.params else {}
        now = int(time.time() * 1000)
        metric_objs = [Metric(k, v, now, out.step) for k, v in payload.metrics.items()]
        metric_objs += [Metric(k, v, now, int(st)) for k, v, st in payload.series]
        param_objs = [Param(k, v) for k, v in params.items()]
        stage = "log metrics and params"
        for ms, ps in _batches(metric_objs, param_objs):
            if ms or ps:
                client.log_batch(out.run_id, metrics=ms, params=ps)
        out.logged = True
        if payload.artifacts:
            stage = "log artifacts"
            written, failed = [], []
            with tempfile.TemporaryDirectory(prefix="skfair-mlflow-") as tmp:
                for art in payload.artifacts:
                    try:
                        _write_artifact(art, tmp)
                        written.append(art.path)
                    except Exception as exc:  # noqa: BLE001 - one file must not cost the others
                        failed.append(f"{art.path} ({type(exc).__name__}: {exc})")
                if written:
                    client.log_artifacts(out.run_id, tmp)
            out.artifacts = written
            if failed:
                warnings.warn(
                    f"could not write artifact(s) {', '.join(failed)}; the metrics and the other "
                    "artifacts are logged.",
                    FairnessLoggingWarning,
                    stacklevel=3,
                )
    except Exception as exc:  # noqa: BLE001 - logging must never lose the computed result
        out.error = exc
        out.logged = out.logged and stage == "log artifacts"
        warnings.warn(
            f"could not {stage} in MLflow run {out.run_id}: {type(exc).__name__}: {exc}. "
            "The computed values are kept in the returned object (.metrics, .params).",
            FairnessLoggingWarning,
            stacklevel=3,
        )
    return out
