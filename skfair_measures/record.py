"""The record of a run: every number, name, table and file a sink writes, computed once and sink-neutral.

A sink (the MLflow plugin, a file, a dashboard) writes a :class:`Record` as it is and decides
nothing: which results, which keys, which verdicts, which tables and files are all chosen here,
from the results' own summaries (:func:`skfair_measures.report.summary_table`). Keys are valid for
key-value stores such as MLflow: word characters, ``_ - . /`` and space, at most 250 characters,
and no key is a directory (a ``/``-prefix) of another, so a file-based store can hold every run.

The layout of :func:`record`, with ``{p}`` the prefix and ``{N}`` a result's name:

- metrics, headline values first: ``{p}{N}`` (for a ``fairness.*`` measure, a disparity between
  groups); ``{p}{N}.overall_{base}`` the base rate over all rows (not a disparity); for a result
  with an interval ``{p}{N}.{kind}/lower`` and ``/upper`` (``kind`` is ``bootstrap``, ``posterior``
  or ``estimate``), and ``/prob_within`` (and ``/prob_greater`` for a signed measure) where the
  construction defines a probability; ``{p}fairness.verdicts/{exceeds, inconclusive, within,
  undefined}``: counts of group pairs of the simultaneous verdicts (:func:`skfair_measures.verdicts`);
  with ``group_metrics=True`` also the group sizes ``{p}groups.n_rows/{g}`` (``n_labeled`` for a
  posterior's labelled rows) and every per-group value ``{p}{N}.group_{column}/{g}``;
- params only for what a person chose: the options of a measure that differ from their defaults
  (``{p}{N}.config/threshold``) and, once, ``{p}fairness.interval_prob`` and ``{p}fairness.eps``;
- tags ``skfair.sensitive``, ``skfair.groups``, ``skfair.n_groups``, ``{p}fairness.headline`` (the
  verdict in words), ``{p}{N}.undefined`` (why a value is NaN), ``{p}{N}.{kind}.note`` (why a
  probability or interval is not available), ``{p}fairness.verdicts`` (level, eps, construction);
- tables a run keeps one of, every call appending its rows with its ``prefix`` and ``step``:
  :data:`SUMMARY_TABLE` (one summary row per result), :data:`RUN_TABLE` (per-group values, groups as
  columns) and :data:`VERDICT_TABLE` (every pair of groups);
- files under ``fairness/`` (``fairness/{prefix}/step_{step}/`` when given): ``results.json``,
  ``report.html``, ``groupwise.png``, ``intervals.png`` (each interval, the eps band and the verdict)
  and, per sampled result, ``{N}/{kind}_density.png`` and ``{N}/{kind}_draws.csv``.

It also holds what a run evaluates (:func:`resolve_measures`, :func:`evaluate_all`,
:func:`compute_posteriors`) and the records of a fairness monitor (:func:`monitor_record`) and of an
active assessment (:func:`trajectory_record`).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import functools
import hashlib
import json
import math
import re
import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ._verdicts import verdict_tables
from .benchmark import _small_groups, _split_params, _values_without, _warn_small_groups, fold_splits
from .groups import SmallGroupWarning, encode_groups, resolve_sensitive
from .measures import MeasureBase
from .registry import as_measures, msr
from .report import (
    DEFAULT_MEASURES,
    _largest,
    figure_png,
    fit_each_if_joint_fails,
    headline,
    results_report,
    summary_table,
)
from .results import DEFAULT_EPS, Result, plain
from .uncertainty import Estimate

__all__ = [
    "RUN_TABLE",
    "CrossValidation",
    "cross_validate",
    "cv_record",
    "SUMMARY_TABLE",
    "VERDICT_TABLE",
    "KeySpace",
    "Record",
    "chosen_params",
    "compute_posteriors",
    "declare_groups",
    "evaluate_all",
    "group_label",
    "groupwise_table",
    "measure_params",
    "monitor_record",
    "name_results",
    "needs_scores",
    "positive_scores",
    "record",
    "resolve_measures",
    "sanitize_key",
    "sanitize_segment",
    "score_label",
    "trajectory_record",
    "unique_segments",
]

#: Limits of MLflow (and most key-value stores): key length, param value, tag value.
MAX_KEY_LENGTH, MAX_PARAM_LENGTH, MAX_TAG_LENGTH = 250, 6000, 8000
#: Per-group metrics (``group_metrics=True``) for at most this many groups, the largest.
MAX_METRIC_GROUPS = 50
#: The tables of a run: every call appends its rows.
RUN_TABLE, SUMMARY_TABLE, VERDICT_TABLE = "fairness/groupwise.json", "fairness/summary.json", "fairness/verdicts.json"
#: Which result of a name owns the plain key ``{N}`` when several kinds share the name.
_HEADLINE_ORDER = ("point", "estimate", "bootstrap", "posterior")
_SAMPLED = ("bootstrap", "posterior")
#: Verdicts counted as metrics, each always logged (0 when absent) so a search can rely on it.
VERDICTS = ("exceeds", "inconclusive", "within", "undefined")


# -- keys --------------------------------------------------------------------------------
_BAD_SEGMENT, _BAD_KEY = re.compile(r"[^\w.\- ]"), re.compile(r"[^\w.\- /]")


def _digest(obj: Any) -> str:
    """A short hash of ``repr(obj)``, stable across runs and processes."""
    return hashlib.sha1(repr(obj).encode("utf-8")).hexdigest()[:6]


def _fix_dots(segment: str) -> str:
    return "_" * len(segment) if segment and set(segment) == {"."} else segment  # "." and ".." are not key segments


def sanitize_segment(text: Any) -> str:
    """Any label as one valid key segment (no ``/``).

    Examples
    --------
    >>> sanitize_segment("sex=F"), sanitize_segment("a/b: c"), sanitize_segment("..")
    ('sex_F', 'a_b_ c', '__')
    """
    return _fix_dots(_BAD_SEGMENT.sub("_", str(text)).strip()) or "_"


def sanitize_key(key: str) -> str:
    """A whole key (``/`` separates segments) made valid; a key over 250 characters ends with a hash of it.

    Examples
    --------
    >>> sanitize_key("fairness.acc_eod=.05"), sanitize_key("/fairness.tpr.count//sex=F/")
    ('fairness.acc_eod_.05', 'fairness.tpr.count/sex_F')
    >>> len(sanitize_key("x" * 300))
    250
    """
    segments = [_fix_dots(s.strip()) for s in _BAD_KEY.sub("_", str(key)).split("/")]
    return _fit("/".join(s for s in segments if s) or "_", key)


def _fit(key: str, original: Any = None) -> str:
    if len(key) <= MAX_KEY_LENGTH:
        return key
    return f"{key[: MAX_KEY_LENGTH - 7].rstrip('/ ')}-{_digest(key if original is None else original)}"


def _prefix_key(prefix: str) -> str:
    return sanitize_key(prefix) + ("/" if prefix.endswith("/") else "") if prefix else ""


def group_label(label: Any, names: Sequence[Hashable | None] | None = None) -> str:
    """Readable text of a group label: ``sex=F,race=Black``; unnamed levels show their value only.

    Examples
    --------
    >>> group_label(("F", "Black"), ["sex", "race"]), group_label(1)
    ('sex=F,race=Black', '1')
    """
    values = label if isinstance(label, tuple) else (label,)
    names = list(names) if names is not None and len(names) == len(values) else [None] * len(values)
    return ",".join(f"{v}" if n is None else f"{n}={v}" for n, v in zip(names, values, strict=True))


def unique_segments(labels: Iterable[Any], texts: Iterable[str] | None = None) -> dict[Any, str]:
    """``{label: segment}``: sanitised, and distinct (labels that sanitise alike get a hash of the label).

    Examples
    --------
    >>> seg = unique_segments(["F?", "F!", "M"])
    >>> seg["M"], seg["F?"] != seg["F!"], seg["F?"].startswith("F__")
    ('M', True, True)
    """
    labels = list(labels)
    first = dict(zip(labels, map(sanitize_segment, map(str, labels) if texts is None else texts), strict=True))
    shared = pd.Series(list(first.values())).value_counts()
    taken, out = set(first.values()), {}
    for lab, seg in first.items():
        if shared[seg] > 1:
            seg = f"{seg}_{_digest(lab)}"
            while seg in taken:  # practically never: a label that looks like a hash
                seg = f"{seg}_{_digest(seg)}"
            taken.add(seg)
        out[lab] = seg
    return out


def _dirs(key: str) -> list[str]:
    segs = key.split("/")
    return ["/".join(segs[:i]) for i in range(1, len(segs))]


class KeySpace:
    """Keys of which none is a directory of another (a file store writes ``a/b`` as file ``b`` in folder ``a``).

    Examples
    --------
    >>> ks = KeySpace()
    >>> ks.claim("fairness.tpr"), ks.claim("fairness.tpr/x", salt="abc123")
    ('fairness.tpr', 'fairness.tpr_abc123/x')
    """

    def __init__(self) -> None:
        self.leaves: set[str] = set()
        self.dirs: set[str] = set()

    def claim(self, key: str, salt: str | None = None) -> str:
        """``key``, or a variant with ``_{salt}`` on the clashing segment; then taken."""
        salt = _digest(key) if salt is None else salt
        while key in self.dirs or any(d in self.leaves for d in _dirs(key)):
            segs, dirs = key.split("/"), _dirs(key)
            i = next((i for i, d in enumerate(dirs) if d in self.leaves), len(segs) - 1)
            segs[i] = f"{segs[i]}_{salt}"
            key, salt = _fit("/".join(segs)), _digest(salt)
        self.leaves.add(key)
        self.dirs.update(_dirs(key))
        return key


# -- the record ----------------------------------------------------------------------------
@dataclass
class Record:
    """What one call writes: metrics (headline values first), params, tags, tables and files.

    ``key_map`` says what each metric key stands for (result, quantity, original group label):
    the way back from a sanitised key. ``series`` holds ``(key, value, step)`` metrics logged at
    their own steps; ``times`` the time (milliseconds since the epoch) of a step, where known.
    """

    metrics: dict[str, float] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    files: dict[str, bytes | str] = field(default_factory=dict)
    key_map: dict[str, dict[str, Any]] = field(default_factory=dict)
    series: list[tuple[str, float, int]] = field(default_factory=list)
    times: dict[int, int] = field(default_factory=dict)
    _keys: KeySpace = field(default_factory=KeySpace, repr=False, compare=False)
    _param_keys: KeySpace = field(default_factory=KeySpace, repr=False, compare=False)

    def _key(self, key: str, meaning: dict[str, Any]) -> str:
        key = _fit(key)
        if key in self._keys.leaves:
            if self.key_map.get(key) == meaning:
                return key  # the same quantity again (one more step of a series)
            key = _fit(f"{key}_{_digest(_jsonable(meaning))}")  # two quantities, one key: keep both
        key = self._keys.claim(key, _digest(_jsonable(meaning)))
        self.key_map[key] = meaning
        return key

    def add_metric(self, key: str, value: float, **meaning: Any) -> str:
        """Add a metric (NaN allowed); ``meaning`` goes to ``key_map``."""
        key = self._key(key, meaning)
        self.metrics[key] = float(value)
        return key

    def add_series(self, key: str, value: float, step: int, **meaning: Any) -> None:
        """Add one step of a metric logged at several steps."""
        self.series.append((self._key(key, meaning), float(value), int(step)))

    def add_param(self, key: str, value: Any) -> None:
        """Add a param (None is skipped; other values as JSON)."""
        if value is not None:
            key = _fit(key)
            key = key if key in self._param_keys.leaves else self._param_keys.claim(key)
            self.params[key] = (value if isinstance(value, str) else json.dumps(_jsonable(value)))[:MAX_PARAM_LENGTH]

    def add_tag(self, key: str, value: str) -> None:
        """Add a tag, cut to the store's limit saying so."""
        if len(value) > MAX_TAG_LENGTH:
            value = value[: MAX_TAG_LENGTH - 40] + f" ... ({len(value):,} characters in all)"
        self.tags[sanitize_key(key)] = value


def _jsonable(obj: Any) -> Any:
    """Plain JSON types; group labels keep their type (tuples become lists, NaN None, infinity a string)."""
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, pd.Index | list | tuple | set | frozenset | np.ndarray):
        return [_jsonable(v) for v in obj]
    value = plain(obj)
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value if value is None or isinstance(value, str | int | float | bool | list) else str(value)


def name_results(results: Any) -> list[tuple[str, Result]]:
    """``[(name, result)]`` from a result, a dict ``{name: result}``, or a list of results or pairs.

    Results of different kinds may share a name (a point value and its posterior); two of one kind may not.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> name_results([sfm.msr("fairness.tpr").evaluate([1, 1], [1, 0], sensitive_features=["a", "b"])])
    [('fairness.tpr', MeasureResult(key='fairness.tpr', value=1.0))]
    """
    if isinstance(results, Mapping):
        items = [(str(k), v) for k, v in results.items()]
    else:
        seq = results if isinstance(results, list | tuple) else [results]
        items = [r if isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], str) else (None, r) for r in seq]
    out: list[tuple[str, Result]] = []
    for name, res in items:
        if not isinstance(res, Result):
            raise TypeError(
                f"cannot log a {type(res).__name__}: pass results of skfair-measures (Measure.evaluate, "
                "evaluate_measures, bootstrap, posterior, the estimates of skfair_measures.unaware), "
                "or a dict / list of them."
            )
        name = name or res.key
        if (name, res.kind) in {(n, r.kind) for n, r in out}:
            raise ValueError(
                f"two {res.kind} results are both named {name!r}; pass a dict {{name: result}} with "
                "distinct names, or log them in separate calls with prefix=."
            )
        out.append((name, res))
    if not out:
        raise ValueError("nothing to log: results is empty.")
    return out


def measure_params(measure: MeasureBase) -> dict[str, Any]:
    """A measure's whole configuration, flat (for ``results.json``).

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> p = measure_params(sfm.msr("fairness.tpr", operation="diff_to_reference", reference="F"))
    >>> p["signed"], p["ideal"], p["bases"], p["minimize"]
    (True, 0.0, 'tpr', 'signed')
    """
    return {
        "key": measure.key,
        "description": measure.description,
        "bases": ", ".join(b.name for b in measure.bases) or None,
        "minimize": "signed" if measure.minimize is None else measure.minimize,
        "ideal": measure.ideal,
        "signed": measure.signed,
        "range": None if measure.range is None else [float(x) for x in measure.range],
        "components": ", ".join(c.key for c in measure.children) or None,
        **{k: v for k, v in dataclasses.asdict(measure.inputs).items() if v is not None},
    }


def chosen_params(measure: MeasureBase) -> dict[str, Any]:
    """The options of a measure that differ from their defaults: what a person chose.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> chosen_params(sfm.msr("fairness.tpr")), chosen_params(sfm.msr("fairness.tpr", threshold=0.3))
    ({}, {'threshold': 0.3})
    """
    inputs, out = measure.inputs, {}
    for f in dataclasses.fields(inputs):
        value = getattr(inputs, f.name)
        if f.name in ("response_method", "needs_sensitive") or value is None:
            continue  # options a measure has by nature, not by choice
        if f.name == "small_groups" and inputs.min_group_size is None:
            continue  # only matters when there is a size
        if f.name == "small_groups" or f.default is None or value != f.default:
            out[f.name] = value
    return out


#: The names given to unnamed sensitive inputs: not worth repeating in every label.
_PLACEHOLDER = re.compile(r"sensitive_feature_\d+")


def _group_names(index: pd.Index) -> list[str | None]:
    return [None if n is None or _PLACEHOLDER.fullmatch(str(n)) else str(n) for n in index.names]


def _group_texts(index: pd.Index) -> dict[Any, str]:
    names = _group_names(index)
    return {g: group_label(g, names) for g in index}


def _frame(by_group: pd.Series | pd.DataFrame | None) -> pd.DataFrame | None:
    if by_group is None or isinstance(by_group, pd.DataFrame):
        return by_group
    return by_group.to_frame(name=by_group.name if by_group.name is not None else "value")


def _rows_counted(res: Result) -> str:
    return "n_labeled" if res.counts is not None and res.counts.name == "n_labeled" else "n_rows"


def _same(a: pd.Series, b: pd.Series) -> bool:
    return a.index.equals(b.index) and np.array_equal(a.to_numpy(dtype=float), b.to_numpy(dtype=float))


def groupwise_table(items: list[tuple[str, Result]]) -> pd.DataFrame | None:
    """One row per (result, kind, per-group quantity), one column per group; group sizes last.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> res = sfm.msr("fairness.tpr").evaluate([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=list("FFMM"))
    >>> groupwise_table([("fairness.tpr", res)])
             result   kind quantity    F    M
    0  fairness.tpr  point      tpr  0.5  1.0
    1        groups  point   n_rows  2.0  2.0
    """
    rows, sizes = [], []
    for name, res in items:
        frame = _frame(res.by_group)
        rows += [] if frame is None else [((name, res.kind, str(c)), frame[c]) for c in frame.columns]
        if res.counts is not None and not any(_same(res.counts, c) for _, c in sizes):
            sizes.append((("groups", res.kind, _rows_counted(res)), res.counts))
    rows += sizes
    if not rows:
        return None
    index = rows[0][1].index
    for _, s in rows[1:]:
        index = index.union(s.index, sort=False)
    body = pd.DataFrame(
        np.vstack([s.reindex(index).to_numpy(dtype=float) for _, s in rows]),
        columns=pd.Index(list(_group_texts(index).values()), dtype=object),
    )
    head = pd.DataFrame([label for label, _ in rows], columns=pd.Index(["result", "kind", "quantity"], dtype=object))
    return pd.concat([head.astype(object), body], axis=1)


def _overall_names(measure: MeasureBase | None, parts: list[Any]) -> dict[Any, str]:
    """``overall_{base}`` for each part of an overall value, named by its (component's) one base metric.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> _overall_names(sfm.msr("fairness.eod"), ["fairness.tpr", "fairness.fpr"])
    {'fairness.tpr': 'overall_tpr', 'fairness.fpr': 'overall_fpr'}
    """

    def one_base(m: MeasureBase | None) -> str | None:
        bases = [] if m is None else list(m.bases)
        return bases[0].name if len(bases) == 1 else None

    children = {} if measure is None else {c.key: c for c in measure.children}
    texts = [(one_base(measure) if p is None else one_base(children.get(p)) or str(p)) or "value" for p in parts]
    segs = unique_segments(range(len(parts)), texts)
    return {p: f"overall_{segs[i]}" for i, p in enumerate(parts)}


def _fitting_json(values: list[Any], limit: int) -> str:
    """The JSON list of the first ``values`` whose text fits in ``limit`` characters."""
    lengths = np.cumsum([len(json.dumps(v)) + 2 for v in values])
    return json.dumps(values[: int(np.searchsorted(lengths, limit - 2, side="right"))])


@dataclass
class _Call:
    """What every part of one :func:`record` call reads."""

    rec: Record
    keys: dict[str, str]
    prefix: str
    by_key: dict[str, MeasureBase]
    prob: float
    eps: float

    def measure(self, res: Result) -> MeasureBase | None:
        return self.by_key.get(res.key) or res.measure


def _values(c: _Call, items: list[tuple[str, Result]], summary: pd.DataFrame) -> None:
    """Headline values, rates over all rows, and each interval and probability as its summary gives it."""
    owners: dict[str, Result] = {}
    for name, res in sorted(items, key=lambda it: _HEADLINE_ORDER.index(it[1].kind)):
        owners.setdefault(name, res)
    for name, res in items:
        if owners[name] is res:
            c.rec.add_metric(c.keys[name], res.value, result=name, kind=res.kind, quantity="value")
    for (name, res), row in zip(items, summary.itertuples(index=False), strict=True):
        base, m = c.keys[name], c.measure(res)
        overall = getattr(res, "overall", None) if res.kind == "point" else None
        if overall is not None and (m is None or m.inputs.needs_sensitive):
            parts = overall if isinstance(overall, pd.Series) else pd.Series([overall], index=[None])
            names = _overall_names(m, list(parts.index))
            for k, v in parts.items():
                c.rec.add_metric(f"{base}.{names[k]}", v, result=name, quantity="overall", part=str(k), rows="all")
        if res.reason is not None:
            c.rec.add_tag(f"{base}.undefined", res.reason)
        if res.kind == "point":
            continue
        where, meaning = f"{base}.{res.kind}", {"result": name, "kind": res.kind, "prob": c.prob}
        if not (math.isnan(row.lower) and math.isnan(row.upper) and res.kind in _SAMPLED and res.draws is None):
            c.rec.add_metric(f"{where}/lower", row.lower, **meaning, quantity="lower")
            c.rec.add_metric(f"{where}/upper", row.upper, **meaning, quantity="upper")
        if not math.isnan(row.prob_within):
            c.rec.add_metric(f"{where}/prob_within", row.prob_within, **meaning, quantity="prob_within", eps=c.eps)
        if res.kind == "posterior" and isinstance(res, Estimate) and m is not None and m.signed and m.ideal is not None:
            c.rec.add_metric(f"{where}/prob_greater", res.prob_greater(m.ideal), **meaning, quantity="prob_greater")
        if isinstance(row.note, str) and row.note:
            c.rec.add_tag(f"{where}.note", row.note)
        c.rec.add_tag(f"{where}.verdict", f"{row.verdict} ({row.construction}, eps = {c.eps:g}, prob = {c.prob:g})")
        if res.kind in _SAMPLED:
            c.rec.add_param(f"{c.prefix}fairness.interval_prob", c.prob)
            c.rec.add_param(f"{c.prefix}fairness.eps", c.eps)


def _group_metrics(c: _Call, items: list[tuple[str, Result]], first: pd.Series) -> None:
    """Group sizes (once per distinct set) and per-group values of the largest groups (by ``first``), as metrics."""
    shown, seen = first.index[_largest(first, MAX_METRIC_GROUPS)], {}
    for name, res in items:
        if res.counts is not None:
            rows = _rows_counted(res)
            where = f"{c.prefix}groups.{rows}" if rows not in seen else f"{c.keys[name]}.{res.kind}/{rows}"
            if rows not in seen or not _same(res.counts, seen[rows]):
                seen.setdefault(rows, res.counts)
                counts = res.counts[res.counts.index.isin(shown)]
                segs = unique_segments(counts.index, _group_texts(counts.index).values())
                for g, v in counts.items():
                    c.rec.add_metric(f"{where}/{segs[g]}", v, result=name, quantity=rows, group=plain(g))
        frame = _frame(res.by_group)
        if frame is not None:
            frame = frame[frame.index.isin(shown)]
            groups = unique_segments(frame.index, _group_texts(frame.index).values())
            columns = unique_segments(frame.columns)
            where = c.keys[name] + ("." if res.kind not in _SAMPLED else f".{res.kind}/")
            for col in frame.columns:
                for g, v in frame[col].items():
                    key = f"{where}group_{columns[col]}/{groups[g]}"
                    c.rec.add_metric(key, v, result=name, kind=res.kind, column=str(col), group=plain(g))
    if len(shown) < len(first):
        text = (
            f"the group metrics of the {len(shown)} largest of {len(first):,} groups are logged, "
            f"{len(first) - len(shown):,} groups are left out of the metrics (MAX_METRIC_GROUPS = "
            f"{MAX_METRIC_GROUPS}); the groupwise.json table and results.json hold every group"
        )
        c.rec.add_tag("skfair.groups_as_metrics", text)
        warnings.warn(f"log_fairness: {text}.", UserWarning, stacklevel=4)


def _group_tags(rec: Record, index: pd.Index) -> None:
    """The tags ``skfair.sensitive``, ``skfair.groups`` (as JSON, within a tag's limit) and ``skfair.n_groups``."""
    names = [n for n in _group_names(index) if n is not None]
    if names:
        rec.add_tag("skfair.sensitive", ", ".join(names))
    listed = _fitting_json([plain(g) for g in index], MAX_TAG_LENGTH)
    rec.add_tag("skfair.groups", listed)
    rec.add_tag("skfair.n_groups", str(len(index)))
    if len(json.loads(listed)) < len(index):
        rec.add_tag(
            "skfair.groups_listed",
            f"the first {len(json.loads(listed))} of {len(index)} groups (a tag holds at most "
            f"{MAX_TAG_LENGTH} characters); the groupwise.json table holds them all",
        )


def _verdicts(c: _Call, tables: list[pd.DataFrame], head: dict[str, Any]) -> None:
    if not tables:
        return
    level = ("family_wise_level", "eps")
    rows = pd.concat(
        [t.assign(source=t.attrs["source"], fit=i, **{k: t.attrs[k] for k in level}) for i, t in enumerate(tables)]
    )
    counts = rows["verdict"].value_counts()
    for v in VERDICTS:
        c.rec.add_metric(f"{c.prefix}fairness.verdicts/{v}", counts.get(v, 0), quantity="verdict count", verdict=v)
    how = "; ".join(
        f"table {i} ({t.attrs['source']}, {t.attrs['family_size']} distinct differences): {t.attrs['construction']}"
        for i, t in enumerate(tables)
    )
    c.rec.add_tag(
        f"{c.prefix}fairness.verdicts",
        f"|rate_a - rate_b| <= eps = {c.eps:g}, jointly at family-wise level {c.prob:g} per table; {how}",
    )
    c.rec.tables[VERDICT_TABLE] = _table(rows.reset_index(drop=True), head)


def _table(frame: pd.DataFrame, head: dict[str, Any]) -> pd.DataFrame:
    """A run table's rows with the call's columns first; text as ``object`` (what ``log_table`` reads)."""
    frame = pd.concat([pd.DataFrame({k: [v] * len(frame) for k, v in head.items()}, dtype=object), frame], axis=1)
    return frame.astype({k: object for k in frame.columns if frame[k].dtype.kind in "OTU"})


def _files(
    c: _Call, items: list[tuple[str, Result]], summary: pd.DataFrame, tables: list, folder: str, html: bool
) -> None:
    """results.json, the charts, each sampled result's density and draws, and the HTML report."""
    from . import plots

    figures: list[tuple[str, str]] = []

    def chart(path: str, caption: str, draw: Callable[[], Any]) -> None:
        png = figure_png(draw, f"the chart {path}", dpi=100, left="the metrics and tables are logged without it")
        if png is not None:
            c.rec.files[f"{folder}/{path}"] = png
            figures.append((caption, base64.b64encode(png).decode("ascii")))

    per_group = [r for _, r in items if r.by_group is not None]
    if per_group:
        chart("groupwise.png", "Base metrics by group", lambda: plots.groupwise_bars(per_group))
    if summary["lower"].notna().any():
        chart("intervals.png", "Intervals and verdicts", lambda: plots.interval_chart(summary))
    for name, res in items:
        draws = None if res.kind not in _SAMPLED or res.draws is None else np.ravel(res.draws).astype(float)
        if draws is None or draws.size == 0:
            continue
        sub = f"{sanitize_segment(name)}/{res.kind}"
        c.rec.files[f"{folder}/{sub}_draws.csv"] = pd.DataFrame({res.key: draws}).to_csv(index_label="draw")
        if np.isfinite(draws).any():
            density = functools.partial(plots.posterior_density, res, eps=c.eps, prob=c.prob, label=name)
            chart(f"{sub}_density.png", f"{res.kind} of {name}", density)
    entries = [
        {"name": n, **r.to_dict(), **({} if c.measure(r) is None else {"config": measure_params(c.measure(r))})}
        for n, r in items
    ]
    record_json = {"results": entries, "summary": summary.to_dict("records"), "metric_keys": c.rec.key_map}
    c.rec.files[f"{folder}/results.json"] = json.dumps(_jsonable(record_json), indent=2, allow_nan=False)
    if html:
        page = results_report(items, prob=c.prob, eps=c.eps, figures=figures, summary=summary, verdicts=tables)
        c.rec.files[f"{folder}/report.html"] = page


def record(
    results: Any,
    *,
    prefix: str = "",
    measures: Any = None,
    log_params: bool = True,
    artifacts: bool = True,
    html: bool = True,
    prob: float = 0.95,
    eps: float = DEFAULT_EPS,
    step: int | None = None,
    group_metrics: bool = False,
) -> Record:
    """The record of results: everything a sink writes, laid out as the module docstring says.

    Parameters
    ----------
    results : result, mapping or sequence
        See :func:`name_results`.
    prefix : str, default=""
        Prepended to every metric, param and tag key (``"test/"``, ``"val_"``).
    measures : Measure, sequence or mapping of Measure, optional
        Measures to read the configuration from, by key (default: each result's own).
    log_params : bool, default=True
        The options each measure was given (those that differ from their defaults).
    artifacts : bool, default=True
        The tables and files (``html=False`` leaves out the HTML report).
    html : bool, default=True
    prob : float, default=0.95
        Level of the intervals, and family-wise level of the verdicts.
    eps : float, default=DEFAULT_EPS
        Half-width of practical fairness around each measure's ideal value.
    step : int, optional
        The step of the call (an epoch, a fold): files go to ``fairness/step_<step>/``.
    group_metrics : bool, default=False
        Also give group sizes and per-group values as metrics (they are always in the table).

    Returns
    -------
    Record

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> res = sfm.evaluate_measures([sfm.msr("fairness.tpr")], [1, 1, 0, 1], [1, 0, 0, 1],
    ...                             sensitive_features=["F", "M", "F", "M"])
    >>> rec = record(res, artifacts=False)
    >>> list(rec.metrics), rec.tags["skfair.groups"]
    (['fairness.tpr', 'fairness.tpr.overall_tpr'], '["F", "M"]')
    """
    items = name_results(results)
    clean = _prefix_key(prefix)
    segments = unique_segments(dict.fromkeys(n for n, _ in items))
    c = _Call(Record(), {n: f"{clean}{s}" for n, s in segments.items()}, clean, _measures_by_key(measures), prob, eps)
    summary = summary_table(items, prob=prob, eps=eps)
    _values(c, items, summary)
    # the groups' sizes: the first result's counts, else (all equal) the groups of its per-group values
    sizes = [r.counts for _, r in items if r.counts is not None]
    sizes += [_frame(r.by_group).iloc[:, 0] * 0 for _, r in items if r.by_group is not None]
    if group_metrics and sizes:
        _group_metrics(c, items, sizes[0])
    if log_params:
        for name, res in items:
            for k, v in ({} if c.measure(res) is None else chosen_params(c.measure(res))).items():
                c.rec.add_param(f"{c.keys[name]}.config/{k}", v)
    if sizes:
        _group_tags(c.rec, sizes[0].index)
    tables = verdict_tables([r for _, r in items], eps, prob)
    if text := headline(summary, items, tables):
        c.rec.add_tag(f"{clean}fairness.headline", text)
    head = {"prefix": prefix, "step": 0 if step is None else int(step)}
    _verdicts(c, tables, head)
    if not artifacts:
        c.rec.tables.pop(VERDICT_TABLE, None)
        return c.rec
    c.rec.tables[SUMMARY_TABLE] = _table(summary, head)
    if (groupwise := groupwise_table(items)) is not None:
        c.rec.tables[RUN_TABLE] = _table(groupwise, head)
    folder = "fairness" + (f"/{sanitize_segment(prefix.strip('/_. '))}" if prefix.strip("/_. ") else "")
    _files(c, items, summary, tables, folder + ("" if step is None else f"/step_{int(step)}"), html)
    return c.rec


def _measures_by_key(measures: Any) -> dict[str, MeasureBase]:
    if isinstance(measures, Mapping):
        return {str(k): v for k, v in measures.items()}
    ms = [] if measures is None else [measures] if isinstance(measures, MeasureBase) else measures
    if not isinstance(ms, Sequence) or not all(isinstance(m, MeasureBase) for m in ms):
        raise TypeError(f"measures must be a Measure, a list or a dict of them; got {type(measures).__name__}.")
    return {m.key: m for m in ms}


# -- the records of a monitor and of an active assessment ------------------------------------------
#: A monitor's status columns logged as step series, ``{key}/{column}``; ``alarm`` as 0/1.
MONITOR_FIELDS = ("value", "lower", "upper", "e_value", "alarm", "overall_value", "window_value", "n_rows")


def monitor_record(monitor: Any, after_step: int = 0, *, first: bool = True) -> Record:
    """A fairness monitor's steps after ``after_step`` as step series, its alarms as tags.

    Each measure ``{key}`` gives the series ``{key}/value``, ``/lower``, ``/upper``, ``/e_value``,
    ``/alarm`` (0 or 1), ``/overall_value``, ``/window_value`` and ``/n_rows`` at the monitor's
    steps (NaN left out), with the batch's time; an alarm gives the tag ``alarm.{key}`` =
    ``"step S (since step C)"``; ``monitor.logged_step`` is the last step; ``first`` adds the
    monitor's settings as params ``monitor.{name}``.
    """
    rec = Record()
    trace = monitor.history()
    if not trace.empty:
        last = trace[trace["step"] > after_step].groupby(["step", "key"], sort=True).last().reset_index()
        for row in last.itertuples(index=False):
            if pd.notna(row.time):  # the batch's time, in milliseconds since the epoch
                ts = pd.Timestamp(row.time)
                rec.times[int(row.step)] = int((ts.tz_localize("UTC") if ts.tzinfo is None else ts).timestamp() * 1000)
            for name in MONITOR_FIELDS:
                if pd.notna(v := getattr(row, name)):
                    rec.add_series(sanitize_key(f"{row.key}/{name}"), v, int(row.step), measure=row.key, field=name)
    for key, row in monitor.status().iterrows():
        if bool(row["alarm"]):
            rec.add_tag(f"alarm.{key}", f"step {int(row['alarm_step'])} (since step {int(row['changed_since'])})")
    rec.add_tag("monitor.logged_step", str(monitor.step))
    if first:
        for k, v in monitor.settings.items():
            rec.add_param(sanitize_key(f"monitor.{k}"), str(v)[:500])
    return rec


def trajectory_record(assessment: Any, *, prefix: str = "active", prob: float = 0.95) -> Record:
    """An active assessment's trajectory: ``{prefix}/{metric}/{group}/estimate`` (``/lower``, ``/upper``)."""
    segments = [sanitize_segment("_".join(map(str, g)) if isinstance(g, tuple) else g) for g in assessment.groups]
    if len(set(segments)) != len(segments):
        raise ValueError(
            f"the groups {list(assessment.groups)!r} give clashing keys {segments!r} once sanitised; rename the groups."
        )
    seg = dict(zip(assessment.groups, segments, strict=True))
    rec, base = Record(), f"{sanitize_segment(prefix)}/{assessment.metric.key}"
    for row in assessment.trajectory(prob).itertuples(index=False):
        for col in ("estimate", "lower", "upper"):
            v = getattr(row, col)
            if v == v:  # not NaN
                rec.add_series(f"{base}/{seg[row.group]}/{col}", v, int(row.labels), group=plain(row.group), field=col)
    return rec


# -- what a run evaluates: measures in, results out ------------------------------------------------
def resolve_measures(spec: Any, *, pos_label: Any = None) -> list[MeasureBase]:
    """Measures from keys, measure objects or dicts ``{"key": ..., **overrides}``.

    The default is the audit's (:data:`skfair_measures.report.DEFAULT_MEASURES`), so a run logs what
    ``skfair audit`` reports; two measures may not share a key (:func:`skfair_measures.registry.as_measures`).

    Examples
    --------
    >>> [m.key for m in resolve_measures(["fairness.tpr", {"key": "fairness.cv", "operation": "ratio"}])]
    ['fairness.tpr', 'fairness.cv(operation=ratio)']
    """
    spec = DEFAULT_MEASURES if spec is None else [spec] if isinstance(spec, str | Mapping | MeasureBase) else spec
    kw = {} if pos_label is None else {"pos_label": pos_label}
    out = []
    for item in spec:
        if isinstance(item, Mapping) and "key" not in item:
            raise ValueError(f"a measure given as a dict needs 'key'; got {item!r}.")
        if isinstance(item, str | Mapping):
            item = dict(item) if isinstance(item, Mapping) else {"key": item}
            out.append(msr(item.pop("key"), **{**kw, **item}))
        elif isinstance(item, MeasureBase):
            out.append(item)
        else:
            raise TypeError(
                f"cannot use {item!r} as a measure: pass a registry key such as "
                "'fairness.tpr', a measure, or a dict {'key': ..., **overrides}."
            )
    return as_measures(out)


def needs_scores(measures: Sequence[MeasureBase]) -> bool:
    """Whether any measure reads probabilities."""
    return any(m.inputs.response_method == "predict_proba" for m in measures)


def score_label(measures: Sequence[MeasureBase], pos_label: Any) -> Any:
    """The positive class whose probability column is read: ``pos_label``, else the measures' own."""
    if pos_label is not None:
        return pos_label
    labels = {repr(m.inputs.pos_label): m.inputs.pos_label for m in measures if m.inputs.pos_label is not None}
    if len(labels) > 1:
        raise ValueError(
            f"the measures have different pos_label values {sorted(labels)}; pass pos_label= to say "
            "which probability column to read."
        )
    return next(iter(labels.values()), None)


def positive_scores(proba: Any, classes: Any, pos_label: Any) -> np.ndarray:
    """The positive-class column of ``predict_proba`` output (the last class by default).

    Examples
    --------
    >>> positive_scores([[0.2, 0.8], [0.6, 0.4]], ["no", "yes"], "no").tolist()
    [0.2, 0.6]
    """
    proba = np.asarray(proba, dtype=float)
    if proba.ndim == 1:
        return proba
    classes = list(range(proba.shape[1])) if classes is None else list(classes)
    pos = classes[-1] if pos_label is None else pos_label
    if pos not in classes:
        raise ValueError(f"pos_label={pos!r} is not one of the model's classes {classes}.")
    return proba[:, classes.index(pos)]


def declare_groups(measures: Sequence[MeasureBase], sensitive_features: Any) -> tuple[list[MeasureBase], pd.Index]:
    """Measures that expect every group of the data (a fold missing one shows it as undefined), and the groups."""
    groups = encode_groups(sensitive_features)[1]
    return [
        m.with_inputs(groups=groups) if m.inputs.needs_sensitive and m.inputs.groups is None else m for m in measures
    ], groups


def evaluate_all(
    measures: Sequence[MeasureBase],
    y_true: Any,
    y_pred: Any,
    *,
    y_score: Any = None,
    sensitive_features: Any,
    sample_weight: Any = None,
) -> dict[str, Result]:
    """``{key: result}``: one ``evaluate_measures`` call (one count pass) per kind of prediction."""
    from .engines import evaluate_measures

    by_method: dict[str, list[MeasureBase]] = {}
    for m in measures:
        by_method.setdefault(m.inputs.response_method, []).append(m)
    out: dict[str, Result] = {}
    for method, ms in by_method.items():
        pred = y_pred if method == "predict" else y_score
        if pred is None:
            raise ValueError(
                f"{[m.key for m in ms]} score probabilities ({method}), but no scores are "
                "available: use a model with predict_proba, or name a column of scores."
            )
        out |= evaluate_measures(ms, y_true, pred, sensitive_features=sensitive_features, sample_weight=sample_weight)
    return {m.key: out[m.key] for m in measures}


def compute_posteriors(
    measures: Sequence[MeasureBase], y_true: Any, y_score: Any, *, sensitive_features: Any, options: Mapping[str, Any]
) -> dict[str, Result]:
    """``{key: posterior}`` of the fairness measures (or ``options["measures"]``) from one joint fit.

    If the joint fit fails, each measure is fitted on its own; one that still fails is skipped
    with a warning naming it, unless ``options["measures"]`` names it or none has a posterior.
    """
    from .bayes import posterior, posteriors

    kwargs = {k: v for k, v in options.items() if k not in ("prob", "eps", "measures")}
    wanted = options.get("measures")
    by_key = {m.key: m for m in measures}
    if wanted is None:
        chosen = [m for m in measures if m.inputs.needs_sensitive]
    else:
        wanted = [wanted] if isinstance(wanted, str) else list(wanted)
        if unknown := [k for k in wanted if k not in by_key]:
            raise ValueError(f"posterior measures {unknown} are not among the measures {list(by_key)}.")
        chosen = [by_key[k] for k in wanted]
    if not chosen:
        return {}

    def fit(ms: list[MeasureBase]) -> dict[str, Result]:
        if ms is chosen:
            return dict(posteriors(ms, y_true, y_score, sensitive_features=sensitive_features, **kwargs))
        return {ms[0].key: posterior(ms[0], y_true, y_score, sensitive_features=sensitive_features, **kwargs)}

    out, failed, joint = fit_each_if_joint_fails(fit, chosen)
    if joint is None:
        return out
    if failed and wanted is not None:
        raise failed[0][1]
    if not out:
        raise joint
    skipped = "; ".join(f"{key} ({type(exc).__name__}: {exc})" for key, exc in failed)
    warnings.warn(
        f"the joint posterior fit of {[m.key for m in chosen]} failed ({type(joint).__name__}: {joint}), so each "
        f"measure was fitted on its own.{f' No posterior for {skipped}.' if failed else ''} List the measures you "
        "want in posterior={'measures': [...]}.",
        RuntimeWarning,
        stacklevel=3,
    )
    return out


# -- cross-validation of fairness measures: every fold's results, no sink ----------------------------------------
@dataclass
class CrossValidation:
    """Per-fold results of :func:`cross_validate`.

    Attributes
    ----------
    scores : pandas.DataFrame
        One row per fold, one column per measure key (raw values, not negated).
    mean, std : pandas.Series
        Mean and standard deviation over folds (``ddof=0``, as scikit-learn's ``std_test_score``);
        NaN if any fold is NaN.
    folds, posteriors : list of dict
        ``{key: result}`` and ``{key: posterior}`` of each fold (empty dicts without ``posterior=``).
    estimators : list
        The fitted estimator of each fold.
    groups : pandas.Index
        Every group of the whole data; each fold's measures expect all of them.
    """

    scores: pd.DataFrame
    mean: pd.Series
    std: pd.Series
    folds: list[dict[str, Result]] = field(default_factory=list)
    posteriors: list[dict[str, Result]] = field(default_factory=list)
    estimators: list[Any] = field(default_factory=list)
    groups: pd.Index | None = None
    plan: Any = field(default=None, repr=False)


def cross_validate(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    measures: Any,
    sensitive_features: Any = None,
    sensitive: str | Sequence[str] | None = None,
    cv: Any = 5,
    groups: Any = None,
    sample_weight: Any = None,
    fit_params: Mapping[str, Any] | None = None,
    pos_label: Any = None,
    posterior: Mapping[str, Any] | None = None,
    n_jobs: int | None = None,
    random_state: Any = None,
    fit_context: Callable[[], Any] = contextlib.nullcontext,
) -> CrossValidation:
    """Fit every fold on a clone of ``estimator`` and evaluate its measures (and posteriors) on the test part.

    The measures expect every group of the whole data, so a fold that misses a group shows it as
    undefined instead of silently comparing fewer groups (``skfair_measures_mlflow.cross_validate_fairness``
    logs the result).

    Parameters
    ----------
    estimator : estimator
        Unfitted scikit-learn estimator (or pipeline).
    X : array-like or DataFrame of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    measures : list of str, Measure or dict
        Registry keys, measures, or dicts ``{"key": ..., **overrides}``.
    sensitive_features : array-like or DataFrame, optional
        Group of each sample, split along with ``X`` (like metadata routing).
    sensitive : str or list of str, optional
        Column(s) of ``X`` holding the sensitive attribute (column mode); the model
        sees them unless the pipeline drops them (``skfair_measures.DropColumns``).
        Exactly one of ``sensitive_features`` and ``sensitive`` is required.
    cv : int, splitter or iterable, default=5
        An int gives the folds of ``skfair_measures.benchmark.benchmark``, by the one rule of
        :func:`skfair_measures.benchmark.fold_splits`: shuffled ``StratifiedKFold`` on label x
        group strata. A splitter or iterable is used as in scikit-learn.
    groups : array-like, optional
        Group labels for group-aware splitters (``GroupKFold``).
    sample_weight : array-like, optional
        Weights for the measures (split per fold). To fit with weights, pass them in
        ``fit_params``.
    fit_params : dict, optional
        Passed to ``fit``; array-likes of length ``n_samples`` are split per fold.
    pos_label : object, optional
        Positive class for measures built from keys and for probability columns.
    posterior : dict, optional
        Also compute each fold's posteriors, in one joint fit per fold (options of
        ``skfair_measures.bayes.posteriors``: ``method``, ``reference``,
        ``random_state``, ...; plus ``prob``, ``eps`` and ``measures`` for the summaries).
    n_jobs : int, optional
        Fit and evaluate the folds in parallel with :class:`joblib.Parallel`; the
        logging happens afterwards, in this process, in fold order.
    random_state : int, optional
        Seed of the fold shuffling of an integer ``cv`` (as in ``benchmark``).

    fit_context : callable, default=contextlib.nullcontext
        What each fold's fit runs inside.

    Returns
    -------
    CrossValidation

    Warns
    -----
    SmallGroupWarning
        When a group has fewer than ``SMALL_GROUP_ROWS`` (30) rows in some test fold and a
        measure keeps it (``min_group_size`` unset): the warning names the groups and gives
        the fold mean of each such measure with and without them.
    """
    from sklearn.base import is_classifier

    A = resolve_sensitive(sensitive_features, X=X, columns=sensitive)
    ms, all_groups = declare_groups(resolve_measures(measures, pos_label=pos_label), A)
    codes, _ = encode_groups(A, len(y), name="sensitive_features", groups=all_groups)
    splits = fold_splits(
        cv, X, y, sensitive_codes=codes, groups=groups, random_state=random_state, classifier=is_classifier(estimator)
    )
    small, without = _small_groups(codes, splits, all_groups, ms)
    splitter = cv
    if isinstance(cv, int | np.integer) and not isinstance(cv, bool):
        splitter = (
            f"StratifiedKFold(n_splits={cv}, shuffle=True, random_state={random_state!r}) on label x group strata"
        )
    plan = _Plan(
        measures=ms,
        sensitive=A,
        splits=splits,
        splitter=splitter,
        fit_params=dict(fit_params or {}),
        pos_label=score_label(ms, pos_label),
        want_scores=needs_scores(ms) or posterior is not None,
        posterior=None if posterior is None else dict(posterior),
        without_small=without,
        fit_context=fit_context,
    )
    if n_jobs is None:
        fitted = [_fit_fold(estimator, X, y, sample_weight, tr, te, plan) for tr, te in splits]
    else:
        from joblib import Parallel, delayed

        fitted = Parallel(n_jobs=n_jobs)(delayed(_fit_fold)(estimator, X, y, sample_weight, *s, plan) for s in splits)
    estimators, folds, posts, withouts = (list(x) for x in zip(*fitted, strict=True))
    keys = [m.key for m in ms]
    scores = pd.DataFrame([{k: res[k].value for k in keys} for res in folds], columns=keys, dtype=float)
    if without:
        values = scores.to_dict("records")
        out = [{"learner": "", "values": v, "without_small": w} for v, w in zip(values, withouts, strict=True)]
        _warn_small_groups(out, small, [m.key for m in without], "cross_validate_fairness")
    mean, std = scores.mean(skipna=False), scores.std(ddof=0, skipna=False)
    return CrossValidation(scores.rename_axis("fold"), mean, std, folds, posts, estimators, all_groups, plan)


@dataclass
class _Plan:
    """Everything a fold needs, resolved once."""

    measures: list[MeasureBase]
    sensitive: Any
    splits: list[tuple[np.ndarray, np.ndarray]]
    splitter: Any
    fit_params: dict[str, Any]
    pos_label: Any
    want_scores: bool
    posterior: dict[str, Any] | None
    #: The measures with min_group_size set that give the values without the groups of fewer than
    #: SMALL_GROUP_ROWS rows in a test fold.
    without_small: list[MeasureBase]
    #: What each fold's fit runs inside (the MLflow plugin pauses autologging there).
    fit_context: Callable[[], Any] = contextlib.nullcontext


def _fit_fold(
    estimator: Any, X: Any, y: Any, sample_weight: Any, train: np.ndarray, test: np.ndarray, plan: _Plan
) -> tuple[Any, dict[str, Result], dict[str, Result], dict[str, float]]:
    """Fit one fold and compute its measures (and posteriors): no MLflow calls, so it can run anywhere."""
    from sklearn.base import clone
    from sklearn.utils import _safe_indexing

    X_tr, X_te = _safe_indexing(X, train), _safe_indexing(X, test)
    y_tr, y_te = _safe_indexing(y, train), _safe_indexing(y, test)
    with plan.fit_context():
        est = clone(estimator).fit(X_tr, y_tr, **_split_params(plan.fit_params, train, len(y)))
    y_pred = np.asarray(est.predict(X_te))
    y_score = None
    if plan.want_scores and hasattr(est, "predict_proba"):  # the estimator API, not a result or a measure
        y_score = positive_scores(est.predict_proba(X_te), getattr(est, "classes_", None), plan.pos_label)
    fold = {"sensitive_features": _safe_indexing(plan.sensitive, test), "y_score": y_score}
    fold["sample_weight"] = None if sample_weight is None else _safe_indexing(sample_weight, test)
    with warnings.catch_warnings():  # the summary's small-group warning says it once, for all folds
        warnings.filterwarnings("ignore", "(?s).*is decided by group", SmallGroupWarning)
        results = evaluate_all(plan.measures, y_te, y_pred, **fold)
    posts = {}
    if plan.posterior is not None:
        scores, A = y_score if y_score is not None else y_pred, fold["sensitive_features"]
        posts = compute_posteriors(plan.measures, y_te, scores, sensitive_features=A, options=plan.posterior)
    without = _values_without(
        plan.without_small, lambda ms: {k: r.value for k, r in evaluate_all(ms, y_te, y_pred, **fold).items()}
    )
    return est, results, posts, without


def cv_record(
    cv: CrossValidation, *, prefix: str = "", log_params: bool = True, artifacts: bool = True, estimator: Any = None
) -> Record:
    """The record of a cross-validation as a whole (its folds are each a :func:`record`).

    The mean over folds at each measure's plain key (headline values first) and the standard deviation
    at ``{key}.sd``; why a mean is undefined (tag ``{key}.undefined``); the options chosen and the
    folds' settings (``cv/n_splits``, ``cv/splitter``, ``cv/estimator``) as params; the group tags; and
    every fold's values, their mean and sd in the file ``fairness/cv_scores.csv``.
    """
    plan, pre, rec = cv.plan, _prefix_key(prefix), Record()
    segs = unique_segments(m.key for m in plan.measures)
    for m in plan.measures:
        rec.add_metric(f"{pre}{segs[m.key]}", cv.mean[m.key], result=m.key, quantity="cv_mean")
    for m in plan.measures:
        base = f"{pre}{segs[m.key]}"
        rec.add_metric(f"{base}.sd", cv.std[m.key], result=m.key, quantity="cv_sd")
        if math.isnan(cv.mean[m.key]):
            bad = [(i, f[m.key].reason) for i, f in enumerate(cv.folds) if math.isnan(f[m.key].value)]
            shown = "; ".join(f"fold {i}: {why}" for i, why in bad[:5])
            rec.add_tag(f"{base}.undefined", f"the mean is undefined because {len(bad)} fold(s) are: {shown}")
        for k, v in chosen_params(m).items() if log_params else ():
            rec.add_param(f"{base}.config/{k}", v)
    if log_params:
        rec.add_param(f"{pre}cv/n_splits", len(plan.splits))
        rec.add_param(f"{pre}cv/splitter", repr(plan.splitter))
        rec.add_param(f"{pre}cv/estimator", type(estimator).__name__)
    _group_tags(rec, cv.groups)
    if artifacts:
        table = pd.concat([cv.scores, cv.mean.to_frame("mean").T, cv.std.to_frame("sd").T]).rename_axis("fold")
        rec.files[f"fairness/{sanitize_key(prefix) + '/' if prefix else ''}cv_scores.csv"] = table.to_csv()
    return rec
