"""Turn results into MLflow metrics, params, tags and artifacts, without touching MLflow.

Everything that can fail because of the *data* happens here, before anything is
logged: :func:`collect` returns a :class:`Payload` (plain dictionaries, tables and
in-memory files), and ``_tracking`` then sends it in a few requests.

Results are read through the one interface of :class:`skfair_measures.results.Result`
(``key``, ``kind``, ``value``, ``reason``, ``by_group``, ``counts``, ``draws``,
``interval(prob)``, ``to_dict()``, ``measure``); what a number means (its ideal value,
whether it is signed) comes from the measure (``measure.ideal``, ``measure.signed``).

The layout, for people (``{p}`` is the prefix, ``{N}`` a result's name): a name says what a
number is (a disparity, one group's rate, the rate over all rows) and which rows it came from.

- headline values first, at plain keys: ``{p}{N}`` (for a ``fairness.*`` measure, a disparity
  between groups);
- the rate over all rows, not a disparity: ``{p}{N}.overall_{base}`` (``fairness.tpr.overall_tpr``;
  one per base for composites; none for a measure that reads no groups, whose value is it);
- the group sizes once per run, named after the rows they count: ``{p}groups.n_rows/{group}``
  (every row given) or ``{p}groups.n_labeled/{group}`` (the labelled rows a posterior was fitted
  on); a result whose sizes differ from those gets its own ``{p}{N}.{kind}/n_labeled/{group}``
  (or ``n_rows``), for the :data:`MAX_METRIC_GROUPS` largest groups; with more groups, one
  warning and the tag ``skfair.groups_as_metrics`` say how many were left out of the metrics
  (the table artifact and ``results.json`` keep every group);
- sampled results: ``{p}{N}.posterior/mean, sd, interval_lower, interval_upper, prob_within,
  prob_greater`` (posterior probabilities) and ``{p}{N}.bootstrap/mean, sd, interval_lower,
  interval_upper, share_within, share_greater`` (shares of bootstrap replicates, not
  probabilities); ``*_within`` only when the measure has an ideal value, ``*_greater`` only when it
  is signed (for an absolute difference it would be trivially 1); estimates with an interval give
  ``{p}{N}.interval_lower`` / ``_upper``;
- per-group values in one table artifact per run, ``fairness/groupwise.json`` (one row per result,
  kind and quantity; groups as columns; every call in the run appends to it, so the
  ``mlflow.loggedArtifacts`` tag holds one entry whatever the number of measures), and one chart
  per call, not as metrics (``group_metrics=True`` adds them as ``{p}{N}.group_{column}/{group}``,
  ``{p}{N}.{kind}/group_{column}/{group}`` for sampled results);
- params only for what a person chose: the options of a measure that differ from their defaults
  (``{p}{N}.config/threshold``, ...) and, once, ``{p}fairness.interval_prob`` and
  ``{p}fairness.eps`` when sampled results are logged; the full configuration of each measure
  is in ``results.json``;
- tags ``skfair.sensitive`` (the sensitive attributes) and ``skfair.groups`` (the group
  set), and ``{p}{N}.undefined`` with the reason when a value is undefined (NaN);
- simultaneous verdicts of the sampled results (``_verdicts``): counts
  ``{p}fairness.verdicts/{exceeds, inconclusive, within, undefined}``, the tag
  ``{p}fairness.verdicts`` (eps, family-wise level, construction) and the run's one table
  ``fairness/verdicts.json`` (every call appends its rows).
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from skfair_measures.measures import MeasureBase
from skfair_measures.results import DEFAULT_EPS, MeasureResult, NoIntervalError, Result, plain

from ._keys import KeySpace, fit_length, group_label, sanitize_key, sanitize_segment, subkey, unique_segments
from ._verdicts import add_verdicts

__all__ = [
    "RUN_TABLE",
    "Artifact",
    "Payload",
    "chosen_params",
    "collect",
    "count_rows",
    "groupwise_chart",
    "groupwise_table",
    "measure_params",
    "name_results",
]

#: MLflow's limit on a param value, and on a tag value.
MAX_PARAM_LENGTH = 6000
MAX_TAG_LENGTH = 8000
#: The groupwise chart shows at most this many groups, the largest; its title says how many were left out.
MAX_CHART_GROUPS = 40
#: Per-group metrics (sizes, and values with ``group_metrics=True``) for at most this many groups, the largest;
#: as the report's table. Every group stays in the groupwise table artifact and in ``results.json``.
MAX_METRIC_GROUPS = 50
#: Which result of a name owns the plain key ``{N}`` when several kinds share the name.
_HEADLINE_ORDER = ("point", "estimate", "bootstrap", "posterior")
#: Kinds whose draws get their own section of summaries.
_SAMPLED = ("bootstrap", "posterior")

#: The one table artifact of a run (``mlflow.log_table`` appends the rows of every call to it).
RUN_TABLE = "fairness/groupwise.json"

POSTERIOR_DEFAULTS = {"prob": 0.95, "eps": DEFAULT_EPS}


@dataclass
class Artifact:
    """One file to log: its path inside the run's artifacts and its content."""

    path: str
    content: bytes | str


@dataclass
class Payload:
    """What one call to ``log_fairness`` sends to MLflow.

    Metric keys go through a :class:`~skfair_measures_mlflow._keys.KeySpace` (one for
    metrics, one for params), so no key is a directory of another and the payload
    can be written to MLflow's file store as well. ``metrics`` keeps insertion
    order: the headline values come first.
    """

    metrics: dict[str, float] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    artifacts: list[Artifact] = field(default_factory=list)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    key_map: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``(key, value, step)`` metrics logged at their own steps (e.g. one per fold).
    series: list[tuple[str, float, int]] = field(default_factory=list)
    _metric_keys: KeySpace = field(default_factory=KeySpace, repr=False, compare=False)
    _param_keys: KeySpace = field(default_factory=KeySpace, repr=False, compare=False)

    def _metric_key(self, key: str, meaning: dict[str, Any]) -> str:
        key = fit_length(key)
        if key in self._metric_keys.leaves:
            if self.key_map.get(key) == meaning:
                return key  # the same quantity again (for a series: one more step)
            key = fit_length(f"{key}_{_short_hash(meaning)}")  # two quantities, one key: keep both
        return self._metric_keys.claim(key, _short_hash(meaning))

    def add_metric(self, key: str, value: float, **meaning: Any) -> str:
        """Add a metric (NaN allowed: MLflow shows it as NaN); ``meaning`` goes to ``key_map``."""
        key = self._metric_key(key, meaning)
        self.metrics[key] = float(value)
        self.key_map[key] = meaning
        return key

    def add_series(self, key: str, value: float, step: int, **meaning: Any) -> None:
        """Add one step of a metric logged at several steps (e.g. one value per fold)."""
        key = self._metric_key(key, meaning)
        self.series.append((key, float(value), int(step)))
        self.key_map[key] = meaning

    def add_param(self, key: str, value: Any) -> None:
        """Add a param (skipped when ``value`` is None)."""
        if value is None:
            return
        text = value if isinstance(value, str) else json.dumps(_jsonable(value))
        key = fit_length(key)
        if key not in self._param_keys.leaves:
            key = self._param_keys.claim(key, _short_hash(key))
        self.params[key] = text[:MAX_PARAM_LENGTH]

    def add_tag(self, key: str, value: str) -> None:
        """Add a run tag (cut to MLflow's limit, saying so)."""
        if len(value) > MAX_TAG_LENGTH:
            value = value[: MAX_TAG_LENGTH - 40] + f" ... ({len(value):,} characters in all)"
        self.tags[sanitize_key(key)] = value


def _short_hash(obj: Any) -> str:
    import hashlib

    return hashlib.sha1(json.dumps(_jsonable(obj), sort_keys=True).encode()).hexdigest()[:6]


def _jsonable(obj: Any) -> Any:
    """Plain JSON types; group labels keep their type (tuples become lists, NaN becomes None)."""
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, pd.Index):
        return [plain(v) for v in obj]
    if isinstance(obj, (list, tuple, set, frozenset, np.ndarray)):
        return [_jsonable(v) for v in obj]
    value = plain(obj)
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"  # strict JSON has no infinity
    return value if value is None or isinstance(value, (str, int, float, bool, list)) else str(value)


def _json(obj: Any) -> str:
    return json.dumps(_jsonable(obj), indent=2, allow_nan=False)


# -- which results -----------------------------------------------------------------------
def name_results(results: Any) -> list[tuple[str, Result]]:
    """Normalise the first argument of ``log_fairness`` to ``[(name, result)]``.

    Accepts one result, a mapping ``{name: result}`` (the output of
    ``evaluate_measures``), or a sequence of results or ``(name, result)`` pairs.
    Results of different kinds may share a name (a point value and its posterior);
    two of the same kind may not.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> res = sfm.msr("fairness.tpr").evaluate([1, 1], [1, 0], sensitive_features=["a", "b"])
    >>> name_results([res])
    [('fairness.tpr', MeasureResult(key='fairness.tpr', value=1.0))]
    >>> name_results("fairness.tpr")
    Traceback (most recent call last):
    ...
    TypeError: cannot log a str: pass results of skfair-measures ...
    """
    if isinstance(results, Mapping):
        items = [(str(k), v) for k, v in results.items()]
    else:
        seq = results if isinstance(results, (list, tuple)) else [results]
        items = [r if _is_pair(r) else (None, r) for r in seq]
    out = []
    for name, res in items:
        if not isinstance(res, Result):
            raise TypeError(
                f"cannot log a {type(res).__name__}: pass results of skfair-measures (Measure.evaluate, "
                "evaluate_measures, bootstrap, posterior, the estimates of skfair_measures.unaware), "
                "or a dict / list of them."
            )
        out.append((name or res.key, res))
    seen: set[tuple[str, str]] = set()
    for name, res in out:
        if (name, res.kind) in seen:
            raise ValueError(
                f"two {res.kind} results are both named {name!r}; pass a dict {{name: result}} with "
                "distinct names, or log them in separate calls with prefix=."
            )
        seen.add((name, res.kind))
    if not out:
        raise ValueError("nothing to log: results is empty.")
    return out


def _is_pair(item: Any) -> bool:
    return isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)


# -- measure configuration ---------------------------------------------------------------
def measure_params(measure: MeasureBase) -> dict[str, Any]:
    """The configuration of a measure as a flat dictionary, read through the measure protocol.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> p = measure_params(sfm.msr("fairness.tpr", operation="diff_to_reference", reference="F"))
    >>> p["signed"], p["ideal"], p["bases"], p["minimize"]
    (True, 0.0, 'tpr', 'signed')
    """
    inputs = {k: v for k, v in dataclasses.asdict(measure.inputs).items() if v is not None}
    out: dict[str, Any] = {
        "key": measure.key,
        "description": measure.description,
        "bases": ", ".join(b.name for b in measure.bases) or None,
        "minimize": "signed" if measure.minimize is None else measure.minimize,
        "ideal": measure.ideal,
        "signed": measure.signed,
        "range": [float(x) for x in measure.range] if measure.range is not None else None,
        "components": ", ".join(c.key for c in measure.children) or None,
    }
    out.update(inputs)
    return out


#: Options a measure carries by nature, not by choice: never params.
_INTRINSIC = ("response_method", "needs_sensitive")


def chosen_params(measure: MeasureBase) -> dict[str, Any]:
    """The options of a measure that differ from their defaults: what a person chose, as params.

    The measure's fixed description (bases, ideal value, range, ...) is in ``results.json``
    (see :func:`measure_params`), not in the params.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> chosen_params(sfm.msr("fairness.tpr"))
    {}
    >>> chosen_params(sfm.msr("fairness.tpr", threshold=0.3, min_group_size=30))
    {'threshold': 0.3, 'min_group_size': 30, 'small_groups': 'drop'}
    """
    inputs = measure.inputs
    out: dict[str, Any] = {}
    for f in dataclasses.fields(inputs):
        value = getattr(inputs, f.name)
        if f.name in _INTRINSIC or value is None:
            continue
        if f.name == "small_groups" and inputs.min_group_size is None:
            continue  # what happens to small groups only matters when there is a size
        if f.name == "small_groups" or f.default is None or value != f.default:
            out[f.name] = value
    return out


# -- group labels -------------------------------------------------------------------------
#: The names skfair-measures gives to unnamed sensitive inputs: not worth repeating in every label.
_PLACEHOLDER_NAME = re.compile(r"sensitive_feature_\d+")


def _group_names(index: pd.Index) -> list[str | None]:
    return [None if n is None or _PLACEHOLDER_NAME.fullmatch(str(n)) else str(n) for n in index.names]


def _group_texts(index: pd.Index) -> dict[Any, str]:
    """Readable text of each group: ``sex=F,race=Black`` (``F`` when the index is unnamed)."""
    names = _group_names(index)
    return {g: group_label(g, names) for g in index}


def _group_segments(index: pd.Index) -> dict[Any, str]:
    texts = _group_texts(index)
    return unique_segments(list(texts), list(texts.values()))


# -- the parts of one call -------------------------------------------------------------------
@dataclass
class _Context:
    prefix: str
    artifact_dir: str
    by_key: dict[str, MeasureBase]
    options: dict[str, Any]
    group_metrics: bool
    #: The first group sizes of each kind of rows (``n_rows``, ``n_labeled``).
    counts: dict[str, pd.Series] = field(default_factory=dict)
    #: The groups whose per-group quantities are metrics (all, or the largest MAX_METRIC_GROUPS).
    metric_groups: pd.Index | None = None


def _measure_of(res: Result, ctx: _Context) -> MeasureBase | None:
    return ctx.by_key.get(res.key) or res.measure


def _interval(res: Result, prob: float) -> tuple[float, float] | None:
    try:
        return res.interval(prob)
    except NoIntervalError:
        return None


def _interval_refusal(res: Result, prob: float) -> str | None:
    """Why the result refuses its interval (results with replicates say so; others have no reason)."""
    reason = getattr(res, "interval_reason", None)
    return reason(prob) if callable(reason) else None


def _headlines(p: Payload, items: list[tuple[str, Result]], keys: dict[str, str]) -> set[int]:
    """The value of each name at its plain key; returns the ids of the results that got one."""
    owners: dict[str, Result] = {}
    for name, res in sorted(items, key=lambda it: _HEADLINE_ORDER.index(it[1].kind)):
        owners.setdefault(name, res)
    for name, res in items:  # in the caller's order
        if owners.get(name) is res:
            p.add_metric(keys[name], res.value, result=name, kind=res.kind, quantity="value")
    return {id(r) for r in owners.values()}


def _details(p: Payload, base: str, name: str, res: Result, ctx: _Context) -> None:
    measure = _measure_of(res, ctx)
    reads_groups = measure is None or measure.inputs.needs_sensitive
    if isinstance(res, MeasureResult) and reads_groups:  # the base metric on all rows, a property of point results
        overall = res.overall
        if isinstance(overall, pd.Series):
            names = _overall_names(measure, list(overall.index))
            for k, v in overall.items():
                p.add_metric(f"{base}.{names[k]}", v, result=name, quantity="overall", part=str(k), rows="all")
        elif overall is not None:
            p.add_metric(
                f"{base}.{_overall_names(measure, [None])[None]}", overall, result=name, quantity="overall", rows="all"
            )
    if res.kind not in _SAMPLED:
        interval = _interval(res, ctx.options["prob"])
        if interval is not None:
            p.add_metric(subkey(base, "interval_lower"), interval[0], result=name, quantity="interval_lower")
            p.add_metric(subkey(base, "interval_upper"), interval[1], result=name, quantity="interval_upper")
            refused = _interval_refusal(res, ctx.options["prob"])
            if refused is not None:  # NaN bounds: say why next to them
                p.add_tag(subkey(base, "interval_refused"), refused)
    if res.reason is not None:
        p.add_tag(subkey(base, "undefined"), res.reason)


def _overall_names(measure: MeasureBase | None, parts: list[Any]) -> dict[Any, str]:
    """``overall_{base}`` for each part of an overall value: the rate over all rows, named by its base metric.

    A single value is named after the measure's one base (``overall_tpr``); the parts of a
    composite after their component's one base (``fairness.eod`` gives ``overall_tpr`` and
    ``overall_fpr``); anything else after the part's own label.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> _overall_names(sfm.msr("fairness.tpr"), [None])
    {None: 'overall_tpr'}
    >>> _overall_names(sfm.msr("fairness.eod"), ["fairness.tpr", "fairness.fpr"])
    {'fairness.tpr': 'overall_tpr', 'fairness.fpr': 'overall_fpr'}
    """

    def one_base(m: MeasureBase | None) -> str | None:
        bases = [] if m is None else list(m.bases)
        return bases[0].name if len(bases) == 1 else None

    children = {} if measure is None else {c.key: c for c in measure.children}
    texts = [
        (one_base(measure) if part is None else one_base(children.get(part)) or str(part)) or "value" for part in parts
    ]
    segs = unique_segments(list(range(len(parts))), texts)
    return {part: f"overall_{segs[i]}" for i, part in enumerate(parts)}


#: Summaries of draws: a posterior gives probabilities, a bootstrap the share of its replicates.
_SHARE_WORD = {"posterior": "prob", "bootstrap": "share"}


def _draw_summaries(p: Payload, base: str, name: str, res: Result, ctx: _Context) -> None:
    """Summaries of a bootstrap or posterior that carry information, given the measure's meaning."""
    draws = np.asarray(res.draws, dtype=float).ravel()
    prob, eps = float(ctx.options["prob"]), ctx.options.get("eps")
    measure = _measure_of(res, ctx)
    pre = subkey(base, res.kind)
    meaning = {"result": name, "kind": res.kind}
    if draws.size == 0 or np.isnan(draws).any():
        why = "no draws" if draws.size == 0 else f"{int(np.isnan(draws).sum())} of {draws.size} draws are undefined"
        p.add_tag(f"{pre}.undefined", f"{why}; the summaries are undefined (NaN). {res.reason or ''}".strip())
        p.add_metric(f"{pre}/mean", math.nan, **meaning, quantity="mean")
        return
    _posterior_rows(p, pre, res, meaning)
    lo, hi = res.interval(prob)
    p.add_metric(f"{pre}/mean", draws.mean(), **meaning, quantity="mean")
    p.add_metric(f"{pre}/sd", draws.std(ddof=1) if draws.size > 1 else math.nan, **meaning, quantity="sd")
    p.add_metric(f"{pre}/interval_lower", lo, **meaning, quantity="interval_lower", prob=prob)
    p.add_metric(f"{pre}/interval_upper", hi, **meaning, quantity="interval_upper", prob=prob)
    p.add_param(f"{ctx.prefix}fairness.interval_prob", prob)
    word = _SHARE_WORD.get(res.kind, "prob")
    ideal = None if measure is None else measure.ideal
    if ideal is not None and eps is not None:
        within = float(np.mean(np.abs(draws - ideal) <= eps))
        p.add_metric(f"{pre}/{word}_within", within, **meaning, quantity=f"{word}_within", eps=eps, ideal=ideal)
        p.add_param(f"{ctx.prefix}fairness.eps", eps)
    if ideal is not None and measure.signed:  # an unsigned measure is never below its ideal: no information
        p.add_metric(
            f"{pre}/{word}_greater",
            float(np.mean(draws > ideal)),
            **meaning,
            quantity=f"{word}_greater",
            threshold=ideal,
        )


def count_rows(res: Result) -> str:
    """Which rows a result's group sizes count: ``"n_labeled"`` (a posterior's labelled rows) or ``"n_rows"``.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> count_rows(sfm.msr("fairness.cv").evaluate([1, 0], [1, 0], sensitive_features=["a", "b"]))
    'n_rows'
    """
    name = None if res.counts is None else res.counts.name
    return "n_labeled" if name == "n_labeled" else "n_rows"


def _posterior_rows(p: Payload, pre: str, res: Result, meaning: dict[str, Any]) -> None:
    """Which rows a posterior describes, when it read unlabeled rows as well: the value beside it did not."""
    attrs = getattr(res, "attrs", None)
    if not isinstance(attrs, Mapping) or not attrs.get("n_unlabeled"):
        return
    n_lab, n_unl = int(attrs.get("n_labeled", 0)), int(attrs["n_unlabeled"])
    p.add_metric(f"{pre}/n_rows", n_lab + n_unl, **meaning, quantity="n_rows")
    p.add_metric(f"{pre}/n_labeled", n_lab, **meaning, quantity="n_labeled")
    p.add_tag(
        f"{pre}.rows",
        f"fitted on {n_lab:,} labeled rows and the scores of {n_unl:,} unlabeled rows: it "
        f"describes all {n_lab + n_unl:,} rows; a point value computed on the labeled rows alone may lie "
        "outside its interval",
    )


def _counts(p: Payload, base: str, name: str, res: Result, ctx: _Context) -> None:
    """Group sizes once per run, named after their rows; again under the result only where they differ."""
    counts = res.counts
    if counts is None:
        return
    rows = count_rows(res)
    if rows not in ctx.counts:
        ctx.counts[rows] = counts
        where = f"{ctx.prefix}groups.{rows}"
    elif _same_counts(counts, ctx.counts[rows]):
        return
    else:
        where = subkey(base, res.kind, rows)
    counts = counts[counts.index.isin(_metric_groups(counts, ctx))]
    segs = _group_segments(counts.index)
    for g, v in counts.items():
        p.add_metric(f"{where}/{segs[g]}", v, result=name, kind=res.kind, quantity=rows, group=plain(g))


def _metric_groups(counts: pd.Series, ctx: _Context) -> pd.Index:
    """The groups logged as metrics: all, or the largest ``MAX_METRIC_GROUPS`` of the run's first counts."""
    if ctx.metric_groups is None:
        first = next(iter(ctx.counts.values()), counts)
        ctx.metric_groups = _largest(first, MAX_METRIC_GROUPS)
    return ctx.metric_groups


def _largest(counts: pd.Series, limit: int) -> pd.Index:
    """The ``limit`` largest groups (ties and missing sizes: the first ones), in the index's order."""
    if len(counts) <= limit:
        return counts.index
    size = np.nan_to_num(counts.to_numpy(dtype=float), nan=-1.0)
    return counts.index[np.sort(np.argsort(-size, kind="stable")[:limit])]


def _warn_left_out(p: Payload, ctx: _Context, items: list[tuple[str, Result]]) -> None:
    """One warning and one tag when groups were left out of the per-group metrics."""
    index = _run_groups(items)
    if ctx.metric_groups is None or index is None or len(ctx.metric_groups) >= len(index):
        return
    shown, n = len(ctx.metric_groups), len(index)
    what = "sizes and values" if ctx.group_metrics else "sizes"
    text = (
        f"the group {what} of the {shown} largest of {n:,} groups are metrics, {n - shown:,} groups are "
        f"left out of the metrics (MAX_METRIC_GROUPS = {MAX_METRIC_GROUPS}); the groupwise.json table "
        "artifact and results.json hold every group"
    )
    p.add_tag("skfair.groups_as_metrics", text)
    warnings.warn(f"log_fairness: {text}.", UserWarning, stacklevel=4)


def _same_counts(a: pd.Series, b: pd.Series) -> bool:
    """Same groups and sizes (an integer and a float count of 137 are the same size)."""
    return a.index.equals(b.index) and np.array_equal(a.to_numpy(dtype=float), b.to_numpy(dtype=float))


def _group_values(p: Payload, base: str, name: str, res: Result, ctx: _Context) -> None:
    frame = _frame(res.by_group)
    if frame is None:
        return
    if ctx.metric_groups is None and res.counts is not None:
        _metric_groups(res.counts, ctx)
    if ctx.metric_groups is not None:
        frame = frame[frame.index.isin(ctx.metric_groups)]
    elif len(frame) > MAX_METRIC_GROUPS:  # no sizes to rank by: the first ones
        ctx.metric_groups = frame.index[:MAX_METRIC_GROUPS]
        frame = frame.iloc[:MAX_METRIC_GROUPS]
    groups = _group_segments(frame.index)
    columns = unique_segments(list(frame.columns))
    where = base if res.kind not in _SAMPLED else f"{base}.{res.kind}"
    for col in frame.columns:
        for g, v in frame[col].items():
            p.add_metric(
                f"{where}{'.' if where == base else '/'}group_{columns[col]}/{groups[g]}",
                v,
                result=name,
                kind=res.kind,
                quantity="by_group",
                column=str(col),
                group=plain(g),
            )


def _frame(by_group: pd.Series | pd.DataFrame | None) -> pd.DataFrame | None:
    if by_group is None:
        return None
    if isinstance(by_group, pd.DataFrame):
        return by_group
    return by_group.to_frame(name=by_group.name if by_group.name is not None else "value")


def _params(p: Payload, base: str, res: Result, ctx: _Context) -> None:
    measure = _measure_of(res, ctx)
    if measure is not None:
        for k, v in chosen_params(measure).items():
            p.add_param(subkey(base, "config", k), v)


# -- tags, table, chart, JSON -------------------------------------------------------------------
def _run_groups(items: list[tuple[str, Result]]) -> pd.Index | None:
    """The run's groups: those of the first result with sizes, else of the first with per-group values."""
    index = next((r.counts.index for _, r in items if r.counts is not None), None)
    if index is None:
        index = next((r.by_group.index for _, r in items if r.by_group is not None), None)
    return index


def _group_tags(p: Payload, items: list[tuple[str, Result]]) -> None:
    index = _run_groups(items)
    if index is None:
        return
    names = [n for n in _group_names(index) if n is not None]
    if names:
        p.add_tag("skfair.sensitive", ", ".join(names))
    listed = _fitting_json([plain(g) for g in index], MAX_TAG_LENGTH)
    p.add_tag("skfair.groups", listed)
    p.add_tag("skfair.n_groups", str(len(index)))
    if len(json.loads(listed)) < len(index):
        p.add_tag(
            "skfair.groups_listed",
            f"the first {len(json.loads(listed))} of {len(index)} groups "
            "(a tag holds at most 8000 characters); the groupwise.json artifact holds them all",
        )


def _fitting_json(values: list[Any], limit: int) -> str:
    """The JSON list of the first ``values`` whose text fits in ``limit`` characters."""
    text = json.dumps(values)
    if len(text) <= limit:
        return text
    lengths = np.cumsum([len(json.dumps(v)) + 2 for v in values])  # each item and its ", "
    return json.dumps(values[: int(np.searchsorted(lengths, limit - 2, side="right"))])


#: The columns of the groupwise table before the groups.
TABLE_HEAD = ("result", "kind", "quantity")


def groupwise_table(items: list[tuple[str, Result]]) -> pd.DataFrame | None:
    """One row per (result, kind, per-group quantity), one column per group; group sizes last.

    Columns are ``result``, ``kind`` (``point``, ``bootstrap``, ``posterior``, ``estimate``:
    a point value, the bootstrap's and the posterior's are distinct rows), ``quantity`` and
    one readable label per group (``sex=F,race=Black``). Group sizes are rows of result
    ``groups``, quantity ``n_rows`` (every row given) or ``n_labeled`` (the labelled rows a
    posterior was fitted on), once per distinct set of sizes. Undefined values are NaN (null in
    the JSON artifact). Text columns have the ``object`` dtype, which MLflow's ``log_table``
    reads without a deprecation warning under pandas 3.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> res = sfm.msr("fairness.tpr").evaluate([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=list("FFMM"))
    >>> groupwise_table([("fairness.tpr", res)])
             result   kind quantity    F    M
    0  fairness.tpr  point      tpr  0.5  1.0
    1        groups  point   n_rows  2.0  2.0
    """
    rows, index, sizes = [], None, []
    for name, res in items:
        frame = _frame(res.by_group)
        if frame is not None:
            index = frame.index if index is None else index.union(frame.index, sort=False)
            for col in frame.columns:
                rows.append(((name, res.kind, str(col)), frame[col]))
        counts = res.counts
        if counts is not None and not any(_same_counts(counts, c) for _, c in sizes):
            sizes.append((("groups", res.kind, count_rows(res)), counts))
    for label, counts in sizes:
        index = counts.index if index is None else index.union(counts.index, sort=False)
        rows.append((label, counts))
    if not rows:
        return None
    texts = _group_texts(index)
    values = np.vstack([s.reindex(index).to_numpy(dtype=float) for _, s in rows])  # one block: 100,000 groups in ms
    body = pd.DataFrame(values, columns=pd.Index(list(texts.values()), dtype=object))
    head = pd.DataFrame([label for label, _ in rows], columns=pd.Index(TABLE_HEAD, dtype=object), dtype=object)
    return pd.concat([head, body], axis=1)


def _groupwise_figure(table: pd.DataFrame) -> Any:
    """The figure of :func:`groupwise_chart`: one panel per row of values, groups down its side.

    Each panel is one (result, kind, quantity) row, titled so; the groups are labelled on
    the vertical axis, so 2 or 40 groups read alike and no label meets another.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    values = table[table["result"] != "groups"].reset_index(drop=True)
    groups = [c for c in table.columns if c not in TABLE_HEAD]
    sizes = table.loc[table["result"] == "groups", groups]
    n_all = len(groups)
    if n_all > MAX_CHART_GROUPS:  # the largest groups (the first ones without sizes), in table order
        size = sizes.iloc[0].to_numpy(float) if len(sizes) else np.ones(n_all)
        top = np.sort(np.argsort(-np.nan_to_num(size, nan=-1.0), kind="stable")[:MAX_CHART_GROUPS])
        groups = [groups[i] for i in top]
    n_panels, n_groups = max(len(values), 1), len(groups)
    n_cols = min(n_panels, 2)  # narrow enough to stay legible where MLflow's artifact view scales it down
    n_rows = -(-n_panels // n_cols)
    panel_h = 1.1 + 0.26 * n_groups
    fig = Figure(figsize=(2.0 + 4.0 * n_cols, 0.4 + panel_h * n_rows))
    FigureCanvasAgg(fig)
    axes = fig.subplots(n_rows, n_cols, squeeze=False, sharey=True)
    y = np.arange(n_groups)
    for i, ax in enumerate(axes.ravel()):
        if i >= len(values):
            ax.set_visible(False)
            continue
        row = values.iloc[i]
        heights = row[groups].to_numpy(dtype=float)
        ax.barh(y, np.nan_to_num(heights, nan=0.0), 0.7, color=f"C{i % 10}")
        for yi in y[np.isnan(heights)]:
            ax.text(0, yi, " undefined", ha="left", va="center", fontsize=7, color="0.3")
        quantity = row["quantity"] if row["quantity"] not in ("value", row["result"]) else "value"
        ax.set_title(_no_math(f"{row['result']}: {quantity}\n({row['kind']})", limit=80), fontsize=10)
        ax.axvline(0, color="0.5", lw=0.6)
        ax.tick_params(labelsize=9)
        ax.set_xlabel("value per group", fontsize=9)
    axes[0, 0].set_yticks(y, [_no_math(g) for g in groups], fontsize=9)
    axes[0, 0].invert_yaxis()  # the table's first group on top
    if n_groups < n_all:
        fig.suptitle(f"the {n_groups} largest of {n_all:,} groups; {n_all - n_groups:,} others not shown", fontsize=9)
    fig.tight_layout()
    return fig


def groupwise_chart(table: pd.DataFrame) -> bytes:
    """A chart of a groupwise table: one panel of horizontal bars per (result, kind, quantity).

    Undefined values are marked "undefined" at zero length instead of being drawn as 0.
    Drawn on a ``Figure`` with the Agg canvas, so no global pyplot state changes.
    """
    fig = _groupwise_figure(table)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def _no_math(text: Any, limit: int = 40) -> str:
    """A label drawn as written (``$`` escaped, so matplotlib never reads it as math), cut at ``limit`` characters."""
    text = str(text)
    return (text if len(text) <= limit else text[: limit - 1] + "\u2026").replace("$", r"\$")


def _palette(n: int) -> list[Any]:
    from matplotlib import colormaps

    name = "tab10" if n <= 10 else "tab20"
    cmap = colormaps[name]
    return [cmap(i % cmap.N) for i in range(n)]


def density_chart(
    draws: np.ndarray,
    *,
    name: str,
    kind: str,
    interval: tuple[float, float] | None,
    ideal: float | None,
    eps: float | None,
) -> bytes:
    """Histogram of draws with the interval and the region of practical fairness around the ideal."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    draws = np.asarray(draws, dtype=float).ravel()
    fig = Figure(figsize=(5.5, 3.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.hist(draws, bins=min(60, max(10, draws.size // 20)), density=True, color="C0", alpha=0.5)
    ax.axvline(float(draws.mean()), color="C1", label="mean")
    if interval is not None:
        ax.axvspan(*interval, color="C1", alpha=0.12, label="interval")
    if ideal is not None and eps is not None:
        ax.axvspan(ideal - eps, ideal + eps, color="C2", alpha=0.15, label=f"within {eps:g} of {ideal:g}")
    ax.set_xlabel(name)
    ax.set_ylabel(f"{kind} density")
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def _sampled_artifacts(p: Payload, name: str, res: Result, ctx: _Context) -> None:
    draws = np.asarray(res.draws, dtype=float).ravel()
    if draws.size == 0 or np.isnan(draws).any():
        return
    measure = _measure_of(res, ctx)
    folder = f"{ctx.artifact_dir}/{sanitize_segment(name)}"
    png = density_chart(
        draws,
        name=name,
        kind=res.kind,
        interval=res.interval(ctx.options["prob"]),
        ideal=None if measure is None else measure.ideal,
        eps=ctx.options.get("eps"),
    )
    p.artifacts.append(Artifact(f"{folder}/{res.kind}_density.png", png))
    csv = pd.DataFrame({res.key: draws}).to_csv(index_label="draw")
    p.artifacts.append(Artifact(f"{folder}/{res.kind}_draws.csv", csv))


# -- entry point -------------------------------------------------------------------------------
def collect(
    results: Any,
    *,
    prefix: str = "",
    measures: Any = None,
    log_params: bool = True,
    artifacts: bool = True,
    posterior_options: Mapping[str, Any] | None = None,
    step: int | None = None,
    group_metrics: bool = False,
) -> Payload:
    """Compute everything ``log_fairness`` logs, without logging it.

    Parameters
    ----------
    results : result, mapping or sequence
        See :func:`name_results`.
    prefix : str, default=""
        Prepended to every metric and param key, e.g. ``"test/"`` or ``"val_"``.
    measures : Measure, sequence or mapping of Measure, optional
        Measures to read the configuration from (by key); by default each result's
        own ``measure``.
    log_params : bool, default=True
    artifacts : bool, default=True
    posterior_options : mapping, optional
        ``prob`` (interval coverage, 0.95) and ``eps`` (half-width of practical
        fairness around the measure's ideal value, DEFAULT_EPS = 0.05) for sampled results.
    step : int, optional
        Artifacts of a step go to ``fairness/step_<step>/`` so steps do not overwrite
        each other.
    group_metrics : bool, default=False
        Also log every per-group value as a metric (they are always in the table artifact).

    Returns
    -------
    Payload

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> res = sfm.evaluate_measures([sfm.msr("fairness.tpr")], [1, 1, 0, 1], [1, 0, 0, 1],
    ...                             sensitive_features=["F", "M", "F", "M"])
    >>> p = collect(res, artifacts=False)
    >>> list(p.metrics)
    ['fairness.tpr', 'fairness.tpr.overall_tpr', 'groups.n_rows/F', 'groups.n_rows/M']
    >>> p.metrics["fairness.tpr"], p.tags["skfair.groups"]
    (0.5, '["F", "M"]')
    """
    items = name_results(results)
    options = {**POSTERIOR_DEFAULTS, **{k: v for k, v in dict(posterior_options or {}).items() if v is not None}}
    clean_prefix = sanitize_key(prefix) + ("/" if prefix.endswith("/") else "") if prefix else ""
    folder = "fairness" + (f"/{sanitize_segment(prefix.strip('/_. '))}" if prefix.strip("/_. ") else "")
    if step is not None:
        folder += f"/step_{int(step)}"
    ctx = _Context(clean_prefix, folder, _measures_by_key(measures), options, group_metrics)
    segments = unique_segments(list(dict.fromkeys(n for n, _ in items)))
    keys = {name: f"{clean_prefix}{seg}" for name, seg in segments.items()}

    payload = Payload()
    _headlines(payload, items, keys)
    for name, res in items:
        base = keys[name]
        _details(payload, base, name, res, ctx)
        if res.kind in _SAMPLED and res.draws is not None:
            _draw_summaries(payload, base, name, res, ctx)
    for name, res in items:
        _counts(payload, keys[name], name, res, ctx)
        if group_metrics:
            _group_values(payload, keys[name], name, res, ctx)
        if log_params:
            _params(payload, keys[name], res, ctx)
    _group_tags(payload, items)
    add_verdicts(
        payload,
        [r for _, r in items],
        prefix=prefix,
        key_prefix=clean_prefix,
        step=step,
        prob=options["prob"],
        eps=options["eps"],
        artifacts=artifacts,
    )
    _warn_left_out(payload, ctx, items)
    if artifacts:
        _artifacts(payload, items, ctx, prefix=prefix, step=step)
    return payload


def _artifacts(p: Payload, items: list[tuple[str, Result]], ctx: _Context, *, prefix: str, step: int | None) -> None:
    table = groupwise_table(items)
    if table is not None:
        # one table per run: every call appends its rows (MLflow's log_table does), told apart by their columns
        run_table = table.copy()
        run_table.insert(0, "step", 0 if step is None else int(step))
        run_table.insert(0, "prefix", pd.Series([prefix] * len(table), dtype=object))
        p.tables[RUN_TABLE] = run_table
        if (table["result"] != "groups").any():
            try:
                p.artifacts.append(Artifact(f"{ctx.artifact_dir}/groupwise.png", groupwise_chart(table)))
            except Exception as exc:  # noqa: BLE001 - a chart must never cost the metrics
                warnings.warn(
                    f"the groupwise chart could not be drawn ({type(exc).__name__}: {exc}); the metrics "
                    "and the groupwise.json table are logged without it",
                    RuntimeWarning,
                    stacklevel=4,
                )
    for name, res in items:
        if res.kind in _SAMPLED and res.draws is not None:
            _sampled_artifacts(p, name, res, ctx)
    results = [{"name": n, **r.to_dict(), **_config(r, ctx)} for n, r in items]
    record = {"prefix": prefix, "step": step, "results": results, "metric_keys": p.key_map}
    p.artifacts.insert(0, Artifact(f"{ctx.artifact_dir}/results.json", _json(record)))


def _config(res: Result, ctx: _Context) -> dict[str, Any]:
    measure = _measure_of(res, ctx)
    return {} if measure is None else {"config": measure_params(measure)}


def _measures_by_key(measures: Any) -> dict[str, MeasureBase]:
    if measures is None:
        return {}
    if isinstance(measures, MeasureBase):
        return {measures.key: measures}
    if isinstance(measures, Mapping):
        return {str(k): v for k, v in measures.items()}
    if isinstance(measures, Sequence) and all(isinstance(m, MeasureBase) for m in measures):
        return {m.key: m for m in measures}
    raise TypeError(f"measures must be a Measure, a list or a dict of them; got {type(measures).__name__}.")
