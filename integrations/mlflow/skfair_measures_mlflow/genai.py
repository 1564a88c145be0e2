"""Group disparities of GenAI evaluations: read traces' assessments and groups, log the package's estimates.

Every statistic is :mod:`skfair_measures.outcomes`'s; this module only turns the
frame of ``mlflow.search_traces`` into arrays (an assessment's latest valid value per
trace, a group per trace) and writes the result to the run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import mlflow
import numpy as np
import pandas as pd

from skfair_measures.outcomes import OutcomeDisparity, outcome_disparity, paired_disparity
from skfair_measures.results import DEFAULT_EPS

from ._session import DEFAULT_TIMEOUT, bounded_http, probe

__all__ = ["counterfactual_disparity", "group_disparity", "group_scorer"]

_WORDS = {"yes": 1.0, "true": 1.0, "pass": 1.0, "no": 0.0, "false": 0.0, "fail": 0.0}


def _frame(traces: Any) -> pd.DataFrame:
    if isinstance(traces, pd.DataFrame):
        return traces
    if isinstance(traces, str):  # under the package's one timeout policy: a dead or hanging server fails in seconds
        with bounded_http(DEFAULT_TIMEOUT):
            probe(mlflow.get_tracking_uri(), DEFAULT_TIMEOUT)
            run = mlflow.MlflowClient().get_run(traces)
            return mlflow.search_traces(locations=[run.info.experiment_id], run_id=traces, return_type="pandas")
    raise TypeError(f"traces is a {type(traces).__name__}; pass a run id or the frame mlflow.search_traces returns.")


def _latest(frame: pd.DataFrame, name: str) -> list:
    """The latest valid value of assessment ``name`` on each trace (None where it has none)."""
    out = []
    for items in frame["assessments"] if "assessments" in frame else [None] * len(frame):
        found = [a if isinstance(a, dict) else a.to_dictionary() for a in ([] if items is None else items)]
        found = [a for a in found if a.get("assessment_name") == name and a.get("valid", True) is not False]
        latest = max(found, key=lambda a: str(a.get("last_update_time") or a.get("create_time") or ""), default={})
        out.append((latest.get("feedback") or latest.get("expectation") or {}).get("value"))
    return out


def _values(frame: pd.DataFrame, name: str, arg: str) -> np.ndarray:
    """Assessment ``name`` of each trace as a float in [0, 1] (NaN where it has none, or its scorer failed)."""
    out = np.full(len(frame), np.nan)
    for i, value in enumerate(_latest(frame, name)):
        value = _WORDS.get(value.strip().lower(), value) if isinstance(value, str) else value
        if value is None:
            continue
        if not isinstance(value, bool | int | float | np.bool_ | np.number) or not 0 <= value <= 1:
            raise ValueError(
                f"{arg}={name!r} is {value!r} on trace {frame['trace_id'].iloc[i]}; pass an assessment whose "
                "values are bools, yes/no or numbers in [0, 1]."
            )
        out[i] = float(value)
    if np.isnan(out).all():
        raise ValueError(f"{arg}={name!r}: no trace has this assessment; check its name.")
    return out


def _request(value: Any) -> dict:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _labels(frame: pd.DataFrame, by: str | Callable, arg: str) -> pd.Series:
    """Each trace's label: ``by(row)``, a key of the request's inputs, or an assessment named ``by``."""
    if callable(by):
        return frame.apply(by, axis=1).astype(object)
    requests = [_request(r) for r in frame.get("request", pd.Series([None] * len(frame)))]
    if any(by in r for r in requests):
        missing = [t for t, r in zip(frame["trace_id"], requests, strict=True) if by not in r]
        if missing:
            raise ValueError(f"{arg}={by!r} is not in the inputs of {len(missing)} trace(s), e.g. {missing[0]}.")
        return pd.Series([r[by] for r in requests], index=frame.index, dtype=object)
    values = _latest(frame, by)
    if all(v is None for v in values):
        raise ValueError(
            f"{arg}={by!r} is neither a key of the requests' inputs nor an assessment of the traces; pass an input "
            "key, a function of a trace row, or tag the traces with group_scorer."
        )
    return pd.Series(values, index=frame.index, dtype=object)


def _run_of(frame: pd.DataFrame) -> str:
    runs = {_request(m).get("mlflow.sourceRun") for m in frame.get("trace_metadata", [])} - {None}
    if len(runs) == 1:
        return runs.pop()
    if mlflow.active_run() is not None:
        return mlflow.active_run().info.run_id
    raise ValueError(
        f"log=True, but the traces come from {len(runs)} runs and no run is active; start a run or pass log=False."
    )


def _log(result: OutcomeDisparity, run_id: str, stem: str, eps: float) -> None:
    """Value, interval and p-value as metrics, verdict and note as tags, the tables; through the one fault policy."""
    from skfair_measures.record import Record, sanitize_key

    from ._session import TrackingSession
    from ._tracking import write

    rec, stem = Record(), sanitize_key(stem)
    lo, hi = result.interval()
    values = {stem: result.value, f"{stem}_lower": lo, f"{stem}_upper": hi}
    if result.test:
        values[f"{stem}_p_value"] = result.p_value
    for k, v in values.items():
        if np.isfinite(v):
            rec.add_metric(k, v)
    summary = result.summary(eps=eps)
    for field in ("verdict", "note"):
        rec.add_tag(f"fairness.{stem}.{field}", str(summary[field].iloc[0]))
    for table, kind in ((result.by_group.reset_index(), "by_group"), (summary, "summary")):
        text = [c for c, t in table.dtypes.items() if pd.api.types.is_string_dtype(t)]  # as object: no Pandas4Warning
        rec.tables[f"fairness/{stem.replace('/', '_')}_{kind}.json"] = table.astype(dict.fromkeys(text, object))
    write(rec, TrackingSession(f"log {stem} to run {run_id}"), run_id=run_id)


def group_disparity(
    traces: Any,
    *,
    assessment: str,
    group: str | Callable,
    judge: str | None = None,
    measure: str = "difference",
    prob: float = 0.95,
    reference: str | None = None,
    eps: float = DEFAULT_EPS,
    log: bool = True,
) -> OutcomeDisparity:
    """Disparity of an assessment between two groups of traces, logged as ``<assessment>/disparity_<measure>``.

    Parameters
    ----------
    traces : str or pandas.DataFrame
        A run id (its traces are read with ``mlflow.search_traces``) or that function's frame.
    assessment : str
        The per-trace outcome (bool, yes/no or a number in ``[0, 1]``); with ``judge=``, the
        human assessment present on a random subset of the traces.
    group : str or callable
        A key of the requests' inputs, an assessment (see :func:`group_scorer`), or a
        function of a trace row; two groups.
    judge : str, optional
        An assessment on every trace that predicts ``assessment`` (an LLM judge): the
        estimate is prediction-powered (:func:`skfair_measures.outcomes.outcome_disparity`).
    measure : {"difference", "ratio"}, default="difference"
        ``rate_b - rate_a`` or ``rate_b / rate_a``, ``a`` being ``reference``.
    prob : float, default=0.95
        The interval's level.
    reference : str, optional
        The group compared against (default: the first in sorted order).
    eps : float, default=0.05
        The tolerance of the logged verdict.
    log : bool, default=True
        Log the value and interval (metrics), the verdict and note (tags), and the
        per-group and summary tables (``fairness/*.json``) to the traces' run.

    Returns
    -------
    skfair_measures.outcomes.OutcomeDisparity
        Value, ``interval()``, ``verdict(eps)``, ``by_group``; the target is the traffic the traces are drawn from.

    Examples
    --------
    >>> frame = pd.DataFrame({"trace_id": ["t1", "t2", "t3", "t4"],
    ...     "request": [{"dialect": d} for d in "aabb"],
    ...     "assessments": [[{"assessment_name": "refused", "feedback": {"value": v}}] for v in (0, 0, 1, 0)]})
    >>> group_disparity(frame, assessment="refused", group="dialect", log=False).value
    0.5
    """
    frame = _frame(traces)
    y = _values(frame, assessment, "assessment")
    f = None if judge is None else _values(frame, judge, "judge")
    result = outcome_disparity(
        y, _labels(frame, group, "group"), judge=f, measure=measure, prob=prob, reference=reference, name=assessment
    )
    if log:
        _log(result, _run_of(frame), f"{assessment}/disparity_{measure}", eps)
    return result


def counterfactual_disparity(
    traces: Any,
    *,
    assessment: str,
    pair: str | Callable,
    group: str | Callable,
    prob: float = 0.95,
    reference: str | None = None,
    eps: float = DEFAULT_EPS,
    log: bool = True,
) -> OutcomeDisparity:
    """Paired disparity over counterfactual prompts, logged as ``<assessment>/counterfactual_difference``.

    ``pair`` (an input key or a function of a trace row) names the pair each trace
    belongs to, two prompts that differ only in a group term; ``group`` says which term
    (two values). Pairs that lack a member or its assessment are left out (the
    table's ``items`` counts the pairs used); Tango's interval and McNemar's exact test
    for binary outcomes, the paired t otherwise.

    Examples
    --------
    >>> frame = pd.DataFrame({"trace_id": list("abcd"),
    ...     "request": [{"id": i, "name": n} for i, n in ((1, "Ann"), (1, "Bob"), (2, "Ann"), (2, "Bob"))],
    ...     "assessments": [[{"assessment_name": "ok", "feedback": {"value": v}}] for v in (1, 0, 1, 1)]})
    >>> counterfactual_disparity(frame, assessment="ok", pair="id", group="name", log=False).value
    -0.5
    """
    frame = _frame(traces)
    rows = pd.DataFrame({"pair": _labels(frame, pair, "pair"), "group": _labels(frame, group, "group")}).astype(str)
    rows["y"] = _values(frame, assessment, "assessment")
    dup = rows.duplicated(["pair", "group"])
    if dup.any():
        raise ValueError(f"pair {rows['pair'][dup].iloc[0]!r} has two traces of group {rows['group'][dup].iloc[0]!r}.")
    wide = rows.pivot(index="pair", columns="group", values="y")
    if wide.shape[1] != 2:
        raise ValueError(f"group has {wide.shape[1]} value(s) {list(wide.columns)[:6]}; pairs compare two.")
    names = list(wide.columns) if reference is None else [str(reference), *(c for c in wide if c != str(reference))]
    if names[0] not in wide:
        raise ValueError(f"reference={reference!r} is not a group; pass one of {list(wide.columns)}.")
    wide = wide[names].dropna()
    result = paired_disparity(wide[names[0]], wide[names[1]], prob=prob, names=names, name=assessment)
    if log:
        _log(result, _run_of(frame), f"{assessment}/counterfactual_difference", eps)
    return result


def group_scorer(group: str | Callable[[dict], Any], *, name: str = "group") -> Any:
    """A code scorer that records each trace's group as an assessment at evaluation time.

    Pass it among ``mlflow.genai.evaluate``'s scorers, then ``group=name`` to
    :func:`group_disparity`: the group is derived from the inputs (``group(inputs)``, or
    the input ``group``) without editing the data set.

    Examples
    --------
    >>> tagger = group_scorer(lambda inputs: "formal" if "Dear" in inputs["question"] else "casual")
    >>> tagger.name
    'group'
    """
    from mlflow.genai.scorers import scorer

    def tag(inputs: dict) -> str:
        return str(group(inputs) if callable(group) else inputs[group])

    return scorer(tag, name=name)
