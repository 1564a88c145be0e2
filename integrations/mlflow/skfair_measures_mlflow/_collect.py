"""Turn results into MLflow metrics, params and artifacts, without touching MLflow.

Everything that can fail because of the *data* happens here, before anything is
logged: :func:`collect` returns a :class:`Payload` (plain dictionaries plus
in-memory artifact contents), and ``_tracking`` then writes it in a few batches.

Three kinds of results are understood, by duck typing so that this package needs
no import of the optional parts of skfair-measures:

- a measure result (``key``, ``value``, ``by_group``, ``counts``, ``overall``), as
  returned by ``Measure.evaluate`` and ``evaluate_measures``;
- a posterior (``mean``, ``interval``, ``prob_greater``, ``to_inference_data``),
  as returned by ``Measure.posterior``;
- an estimate without the sensitive attribute (``value``, ``by_group``,
  ``diagnostics``, ``interval``), as returned by ``skfair_measures.unaware``.
"""

from __future__ import annotations

import io
import json
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._keys import KeySpace, fit_length, group_label, sanitize_key, sanitize_segment, subkey, unique_segments

__all__ = ["Payload", "collect", "measure_params", "name_results", "result_kind"]

#: At most this many metrics come out of one result's ``diagnostics``.
MAX_DIAGNOSTIC_METRICS = 500
#: Longer arrays in ``diagnostics`` go to the JSON artifact only.
MAX_DIAGNOSTIC_ARRAY = 16
#: Diagnostics entries that hold labels or raw replicates, not summaries: JSON only.
_NOT_METRICS = frozenset({"groups", "classes", "labels", "proxy_columns", "values", "replicates", "draws"})
#: MLflow's limit on a param value.
MAX_PARAM_LENGTH = 6000

_POSTERIOR_DEFAULTS = {"prob": 0.95, "eps": 0.02, "greater_than": 0.0}


@dataclass
class Artifact:
    """One file to log: its path inside the run's artifacts and its content.

    ``content`` is ``bytes`` or ``str``, or a callable that writes the file at the
    path it receives (used for netCDF, which xarray writes to disk itself).
    """

    path: str
    content: bytes | str | Callable[[str], None]
    kind: str = "json"


@dataclass
class Payload:
    """What one call to ``log_fairness`` logs.

    Keys go through :class:`~skfair_measures_mlflow._keys.KeySpace` (one for the
    metrics and series, one for the params), so no key is a directory of another
    and the payload can be written to MLflow's file store as well.
    """

    metrics: dict[str, float] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    artifacts: list[Artifact] = field(default_factory=list)
    key_map: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``(key, value, step)`` metrics logged at their own steps (e.g. one per fold).
    series: list[tuple[str, float, int]] = field(default_factory=list)
    _metric_keys: KeySpace = field(default_factory=KeySpace, repr=False, compare=False)
    _param_keys: KeySpace = field(default_factory=KeySpace, repr=False, compare=False)

    def _metric_key(self, key: str, meaning: dict[str, Any]) -> str:
        key = fit_length(key)
        if key in self._metric_keys.leaves:
            if self.key_map.get(key) == meaning:
                return key  # the same quantity again: overwrite (or, for a series, one more step)
            # Two different quantities, one key: make the second one distinct.
            key = fit_length(f"{key}_{_short_hash(meaning)}")
        return self._metric_keys.claim(key, _short_hash(meaning))

    def add_metric(self, key: str, value: Any, **meaning: Any) -> None:
        """Add a metric; ``meaning`` says what it is (stored in ``key_map``)."""
        v = _as_float(value)
        if v is None:
            return
        key = self._metric_key(key, meaning)
        self.metrics[key] = v
        self.key_map[key] = meaning

    def add_series(self, key: str, value: Any, step: int, **meaning: Any) -> None:
        """Add one step of a metric logged at several steps (e.g. one value per fold)."""
        v = _as_float(value)
        if v is None:
            return
        key = self._metric_key(key, meaning)
        self.series.append((key, v, int(step)))
        self.key_map[key] = meaning

    def add_param(self, key: str, value: Any) -> None:
        """Add a param (skipped when ``value`` is None; a repeated key keeps the last value)."""
        if value is None:
            return
        text = value if isinstance(value, str) else json.dumps(_plain(value), default=str)
        key = fit_length(key)
        if key not in self._param_keys.leaves:
            key = self._param_keys.claim(key, _short_hash(key))
        self.params[key] = text[:MAX_PARAM_LENGTH]


def _short_hash(obj: Any) -> str:
    import hashlib

    return hashlib.sha1(json.dumps(_plain(obj), default=str, sort_keys=True).encode()).hexdigest()[:6]


# -- small converters ----------------------------------------------------------------
def _as_float(value: Any) -> float | None:
    """A float for MLflow, or None for anything that is not a real number (bools too)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        import numpy as np

        if isinstance(value, np.bool_):
            return None
        if np.ndim(value) != 0:
            return None
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out


def _plain(obj: Any) -> Any:
    """Plain JSON types (NaN stays NaN; json writes it as ``NaN``)."""
    import numpy as np

    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    if hasattr(obj, "to_dict") and hasattr(obj, "index"):  # pandas objects
        return _plain(obj.to_dict())
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return str(obj)


def _json(obj: Any) -> str:
    return json.dumps(_plain(obj), indent=2, default=str)


def _snake(name: str) -> str:
    """``"ProxyDisparity"`` -> ``"proxy_disparity"``, ``"HOC"`` -> ``"hoc"``.

    Examples
    --------
    >>> _snake("ProxyDisparity"), _snake("HOC"), _snake("HOCEstimate")
    ('proxy_disparity', 'hoc', 'hoc_estimate')
    """
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


# -- what is this result? --------------------------------------------------------------
def result_kind(result: Any) -> str:
    """``"measure"``, ``"posterior"`` or ``"unaware"``; TypeError for anything else.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> res = sfm.msr("fairness.tpr").evaluate([1, 1], [1, 0], sensitive_features=["a", "b"])
    >>> result_kind(res)
    'measure'
    """
    if hasattr(result, "to_inference_data") and hasattr(result, "prob_greater"):
        return "posterior"
    if hasattr(result, "diagnostics") and hasattr(result, "value"):
        return "unaware"
    if hasattr(result, "value") and hasattr(result, "by_group") and hasattr(result, "key"):
        return "measure"
    raise TypeError(
        f"cannot log a {type(result).__name__}: pass a MeasureResult (Measure.evaluate, "
        "evaluate_measures), a posterior (Measure.posterior) or an estimate from "
        "skfair_measures.unaware, or a dict/list of them."
    )


def _default_name(result: Any, kind: str) -> str:
    for attr in ("key", "name"):
        v = getattr(result, attr, None)
        if isinstance(v, str) and v:
            return v
    measure = getattr(result, "measure", None)
    if isinstance(getattr(measure, "key", None), str):
        return measure.key
    if kind == "unaware":
        stem = type(result).__name__.removesuffix("Result") or "estimate"
        return f"unaware.{_snake(stem)}"
    if kind == "posterior":
        return "posterior"
    return type(result).__name__


def name_results(results: Any) -> list[tuple[str, str, Any]]:
    """Normalise the first argument of ``log_fairness`` to ``[(name, kind, result)]``.

    Accepts one result, a mapping ``{name: result}`` (e.g. the output of
    ``evaluate_measures``), or a sequence of results or ``(name, result)`` pairs. A measure result and the
    posterior of the same measure may share a name (they log different keys); two
    results of the same kind may not.
    """
    if isinstance(results, Mapping):
        items = [(str(k), v) for k, v in results.items()]
        items = [(k, result_kind(v), v) for k, v in items]
    else:
        if isinstance(results, (list, tuple)):
            seq: Iterable[Any] = results
        else:
            seq = [results]
        items = []
        for r in seq:
            if isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], str):
                name, r = r  # a (name, result) pair
            else:
                name = None
            kind = result_kind(r)
            items.append((name or _default_name(r, kind), kind, r))
    seen: set[tuple[str, str]] = set()
    for name, kind, _ in items:
        if (name, kind) in seen:
            raise ValueError(
                f"two {kind} results are both named {name!r}; pass a dict {{name: result}} "
                "with distinct names, or log them in separate calls with prefix=."
            )
        seen.add((name, kind))
    if not items:
        raise ValueError("nothing to log: results is empty.")
    return items


# -- measure configuration ---------------------------------------------------------------
def _operation_name(measure: Any) -> str | None:
    op = getattr(measure, "operation", None)
    if op is not None:
        return getattr(op, "name", str(op))
    if hasattr(measure, "measures"):  # composite
        ops = sorted({_operation_name(m) or "?" for m in measure.measures})
        return f"{getattr(measure, 'aggregate_name', 'aggregate')}({', '.join(ops)})"
    if hasattr(measure, "epsilon") and hasattr(measure, "fairness"):
        return "constraint"
    return "overall" if getattr(measure, "requires_sensitive", True) is False else None


def _direction(minimize: Any) -> Any:
    return "signed" if minimize is None else minimize


def measure_params(measure: Any) -> dict[str, Any]:
    """The configuration of a measure as a flat dictionary (values still Python objects).

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> p = measure_params(sfm.msr("fairness.tpr", operation="diff_to_reference", reference="F"))
    >>> p["base"], p["operation"], p["reference"], p["minimize"]
    ('tpr', 'diff_to_reference', 'F', 'signed')
    >>> measure_params(sfm.msr("fairness.acc_eod=.05"))["epsilon"]
    0.05
    """
    out: dict[str, Any] = {
        "key": getattr(measure, "key", None),
        "class": type(measure).__name__,
        "base": ", ".join(b.name for b in getattr(measure, "bases", ())) or None,
        "operation": _operation_name(measure),
        "minimize": _direction(getattr(measure, "minimize", None)),
    }
    reference = getattr(measure, "reference", None)
    if reference is None and hasattr(measure, "operation"):
        reference = getattr(measure.operation, "params", {}).get("reference")
    out["reference"] = reference
    if hasattr(measure, "epsilon"):
        out["epsilon"] = measure.epsilon
        out["performance"] = getattr(getattr(measure, "performance", None), "key", None)
        out["fairness"] = getattr(getattr(measure, "fairness", None), "key", None)
    if hasattr(measure, "measures"):
        out["aggregate"] = getattr(measure, "aggregate_name", None)
        out["components"] = ", ".join(m.key for m in measure.measures)
    for attr in ("threshold", "pos_label"):
        out[attr] = getattr(measure, attr, None)
    undefined = getattr(measure, "undefined", None)
    if undefined not in (None, "propagate"):
        out["undefined"] = undefined
    rng = getattr(measure, "range", None)
    if rng is not None:
        out["range"] = [float(x) for x in rng]
    return out


# -- group labels -------------------------------------------------------------------------
#: Names skfair-measures gives to unnamed sensitive inputs; not worth a key.
_PLACEHOLDER_NAME = re.compile(r"sensitive_feature_\d+")


def _group_segments(index: Any) -> dict[Any, str]:
    names = [None if n is None or _PLACEHOLDER_NAME.fullmatch(str(n)) else n for n in getattr(index, "names", [None])]
    labels = list(index)
    texts = [group_label(lab, names) for lab in labels]
    return unique_segments(labels, texts)


def _label_json(label: Any) -> Any:
    return _plain(list(label)) if isinstance(label, tuple) else _plain(label)


# -- one collector per kind -------------------------------------------------------------------
def _collect_measure(p: Payload, base: str, name: str, res: Any) -> dict[str, Any]:
    import pandas as pd

    p.add_metric(base, res.value, result=name, quantity="value")
    overall = getattr(res, "overall", None)
    if isinstance(overall, pd.Series):
        segs = unique_segments(list(overall.index))
        for k, v in overall.items():
            p.add_metric(subkey(base, "overall", segs[k]), v, result=name, quantity="overall", part=str(k))
    else:
        p.add_metric(subkey(base, "overall"), overall, result=name, quantity="overall")

    by_group = getattr(res, "by_group", None)
    counts = getattr(res, "counts", None)
    index = by_group.index if by_group is not None else (counts.index if counts is not None else None)
    groups = _group_segments(index) if index is not None else {}
    if by_group is not None:
        frame = by_group.to_frame() if isinstance(by_group, pd.Series) else by_group
        columns = unique_segments(list(frame.columns), [str(c) if c is not None else "value" for c in frame.columns])
        for col in frame.columns:
            for g, v in frame[col].items():
                p.add_metric(
                    subkey(base, "by_group", columns[col], groups[g]),
                    v,
                    result=name,
                    quantity="by_group",
                    column=str(col),
                    group=_label_json(g),
                )
    if counts is not None:
        csegs = groups if set(counts.index) <= set(groups) else _group_segments(counts.index)
        for g, v in counts.items():
            p.add_metric(subkey(base, "count", csegs[g]), v, result=name, quantity="count", group=_label_json(g))
    return res.to_dict() if hasattr(res, "to_dict") else {"value": res.value}


def _posterior_draws(post: Any, idata: Any, key: str) -> Any:
    """Draws of the measure itself, flattened; None if they cannot be found."""
    import numpy as np

    for attr in ("draws", "samples"):
        arr = getattr(post, attr, None)
        if callable(arr):
            try:
                arr = arr()
            except TypeError:
                arr = None
        if arr is not None:
            arr = np.asarray(arr, dtype=float)
            if arr.ndim >= 1:
                return arr.ravel()
    posterior = getattr(idata, "posterior", None)
    if posterior is None:
        return None
    names = list(getattr(posterior, "data_vars", []))
    for cand in (key, sanitize_segment(key), "delta", "measure", "value"):
        if cand in names:
            return np.asarray(posterior[cand], dtype=float).ravel()
    scalar = [n for n in names if set(posterior[n].dims) <= {"chain", "draw"}]
    if len(scalar) == 1:
        return np.asarray(posterior[scalar[0]], dtype=float).ravel()
    return None


def _density_png(
    draws: Any, *, key: str, lower: float | None, upper: float | None, eps: float | None, center: float = 0.0
) -> bytes:
    """A posterior density plot, drawn without pyplot (no global backend change)."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    draws = np.asarray(draws, dtype=float)
    draws = draws[np.isfinite(draws)]
    fig = Figure(figsize=(5.5, 3.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    if draws.size:
        ax.hist(draws, bins=min(60, max(10, draws.size // 20)), density=True, color="C0", alpha=0.35)
        if draws.size > 2 and np.ptp(draws) > 0:
            from scipy.stats import gaussian_kde

            xs = np.linspace(draws.min(), draws.max(), 200)
            ax.plot(xs, gaussian_kde(draws)(xs), color="C0")
        ax.axvline(float(draws.mean()), color="C1", label="mean")
    if lower is not None and upper is not None and np.isfinite([lower, upper]).all():
        ax.axvspan(lower, upper, color="C1", alpha=0.12, label="interval")
    if eps is not None:
        ax.axvspan(center - eps, center + eps, color="C2", alpha=0.15, label=f"within {eps:g} of {center:g}")
    ax.set_xlabel(key)
    ax.set_ylabel("posterior density")
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def _collect_posterior(
    p: Payload,
    base: str,
    name: str,
    post: Any,
    options: Mapping[str, Any],
    artifact_dir: str,
    artifacts: bool,
) -> dict[str, Any]:
    opts = {**_POSTERIOR_DEFAULTS, **{k: v for k, v in options.items() if v is not None}}
    if options.get("greater_than") is None and _as_float(getattr(post, "center", None)) is not None:
        opts["greater_than"] = post.center  # perfect fairness: 0 for differences, 1 for ratios
    prob, eps, above = float(opts["prob"]), opts.get("eps"), float(opts["greater_than"])
    problems: list[str] = []

    def call(method: str, *args: Any) -> Any:
        # One failing summary must not cost the others (the posterior API may differ).
        f = getattr(post, method, None)
        if not callable(f):
            problems.append(f"it has no {method}()")
            return None
        try:
            return f(*args)
        except Exception as exc:  # noqa: BLE001 - reported below, by name
            problems.append(f"{method}{args!r} raised {type(exc).__name__}: {exc}")
            return None

    mean = call("mean")
    interval = call("interval", prob)
    lo, hi = (None, None) if interval is None else interval
    p_greater = call("prob_greater", above)
    p_within = call("prob_within", eps) if eps is not None else None
    pre = subkey(base, "posterior")
    p.add_metric(f"{pre}/mean", mean, result=name, quantity="posterior_mean")
    p.add_metric(f"{pre}/interval_lower", lo, result=name, quantity="posterior_interval_lower", prob=prob)
    p.add_metric(f"{pre}/interval_upper", hi, result=name, quantity="posterior_interval_upper", prob=prob)
    p.add_metric(f"{pre}/prob_greater", p_greater, result=name, quantity="prob_greater", threshold=above)
    p.add_metric(f"{pre}/prob_within", p_within, result=name, quantity="prob_within", eps=eps)
    p.add_param(f"{pre}/interval_prob", prob)
    p.add_param(f"{pre}/greater_than", above)
    p.add_param(f"{pre}/eps", eps)
    for attr in ("method", "reference", "random_state"):
        v = getattr(post, attr, None)
        if v is not None and not callable(v):
            p.add_param(f"{pre}/{attr}", v)
    attrs = getattr(post, "attrs", None)
    if isinstance(attrs, Mapping):  # settings of the fit: prior, sampler, seed, ...
        for k, v in attrs.items():
            if isinstance(v, (str, int, float, bool)) and k != "seconds" and v != "":
                p.add_param(f"{pre}/{sanitize_segment(k)}", v)
    if callable(getattr(post, "diagnostics", None)):  # MCMC: divergences, max_r_hat, ...
        for k, v in (call("diagnostics") or {}).items():
            key = f"{pre}/diagnostics/{sanitize_segment(k)}"
            p.add_metric(key, v, result=name, quantity="posterior_diagnostics")
    summary = None
    if hasattr(post, "summary"):
        try:
            summary = post.summary(prob, eps) if eps is not None else post.summary(prob)
        except TypeError:  # a summary() without these options
            summary = call("summary")
        except Exception as exc:  # noqa: BLE001 - reported with the others
            problems.append(f"summary() raised {type(exc).__name__}: {exc}")
    info = {
        "mean": mean,
        "interval": [lo, hi],
        "interval_prob": prob,
        "prob_greater": {"threshold": above, "value": p_greater},
        "prob_within": {"eps": eps, "value": p_within},
        "summary": _plain(summary) if summary is not None else None,
    }
    idata = None
    if artifacts:
        adir = f"{artifact_dir}/{sanitize_segment(name)}"
        if summary is not None and hasattr(summary, "to_csv"):
            p.artifacts.append(Artifact(f"{adir}/posterior_summary.csv", summary.to_csv(), "csv"))
        idata = call("to_inference_data")
        if idata is not None:
            p.artifacts.append(
                Artifact(f"{adir}/posterior.nc", lambda path: _netcdf_safe(idata).to_netcdf(path), "netcdf")
            )
    if problems:
        warnings.warn(
            f"posterior of {name!r}: {'; '.join(problems)}. Those summaries are not logged; the others are.",
            RuntimeWarning,
            stacklevel=4,
        )
    if not artifacts:
        return info
    draws = _posterior_draws(post, idata, getattr(post, "key", name))
    if draws is None:
        warnings.warn(
            f"posterior of {name!r}: found no draws of the measure itself (no .draws and no "
            "single scalar variable in the InferenceData); the density plot is skipped.",
            RuntimeWarning,
            stacklevel=4,
        )
    else:
        center = _as_float(getattr(post, "center", None)) or 0.0
        png = _density_png(draws, key=name, lower=_as_float(lo), upper=_as_float(hi), eps=eps, center=center)
        p.artifacts.append(Artifact(f"{adir}/posterior_density.png", png, "image"))
    return info


def _flatten_numbers(obj: Any, path: list[str], out: list[tuple[list[str], Any, Any]], limit: int) -> None:
    """Numeric leaves of nested dicts/lists/arrays, with their key segments."""
    import numpy as np

    if len(out) >= limit:
        return
    if isinstance(obj, Mapping):
        keys = [k for k in obj if not (isinstance(k, str) and k in _NOT_METRICS)]
        segs = unique_segments(keys, [group_label(k) for k in keys])
        for k in keys:
            _flatten_numbers(obj[k], [*path, segs[k]], out, limit)
    elif isinstance(obj, (list, tuple, np.ndarray)) and not isinstance(obj, str):
        if len(obj) > MAX_DIAGNOSTIC_ARRAY:
            return
        for i, v in enumerate(obj):
            _flatten_numbers(v, [*path, str(i)], out, limit)
    elif hasattr(obj, "to_dict") and hasattr(obj, "index"):
        _flatten_numbers(obj.to_dict(), path, out, limit)
    else:
        v = _as_float(obj)
        if v is not None:
            out.append((path, v, obj))


def _collect_unaware(p: Payload, base: str, name: str, res: Any, artifact_dir: str, artifacts: bool) -> Any:
    p.add_metric(base, res.value, result=name, quantity="value")
    interval = getattr(res, "interval", None)
    if interval is not None:
        lo, hi = interval
        p.add_metric(subkey(base, "interval_lower"), lo, result=name, quantity="interval_lower")
        p.add_metric(subkey(base, "interval_upper"), hi, result=name, quantity="interval_upper")
    by_group = getattr(res, "by_group", None)
    if by_group is not None:
        segs = _group_segments(by_group.index)
        if hasattr(by_group, "columns"):  # e.g. rates per predicted class, or per (y_true, y_pred)
            columns = list(by_group.columns)
            csegs = _group_segments(by_group.columns)
            for c in columns:
                for g, v in by_group[c].items():
                    p.add_metric(
                        subkey(base, "by_group", csegs[c], segs[g]),
                        v,
                        result=name,
                        quantity="by_group",
                        column=_label_json(c),
                        group=_label_json(g),
                    )
        else:
            for g, v in by_group.items():
                p.add_metric(
                    subkey(base, "by_group", segs[g]), v, result=name, quantity="by_group", group=_label_json(g)
                )
    for attr in ("metric", "mode", "method", "quantifier"):
        v = getattr(res, attr, None)
        if isinstance(v, str):
            p.add_param(subkey(base, "config", attr), v)
    diagnostics = getattr(res, "diagnostics", None) or {}
    leaves: list[tuple[list[str], Any, Any]] = []
    _flatten_numbers(diagnostics, [], leaves, MAX_DIAGNOSTIC_METRICS + 1)
    if len(leaves) > MAX_DIAGNOSTIC_METRICS:
        warnings.warn(
            f"{name!r}: diagnostics hold more than {MAX_DIAGNOSTIC_METRICS} numbers; only the "
            "first ones are logged as metrics, all of them are in the JSON artifact.",
            RuntimeWarning,
            stacklevel=4,
        )
        leaves = leaves[:MAX_DIAGNOSTIC_METRICS]
    for path, v, _ in leaves:
        p.add_metric(subkey(base, "diagnostics", *path), v, result=name, quantity="diagnostics", path=path)
    if isinstance(diagnostics, Mapping):
        for k, v in diagnostics.items():
            if isinstance(v, (str, bool)) or (v is not None and _as_float(v) is None and _is_scalar(v)):
                p.add_param(subkey(base, "config", sanitize_segment(k)), v)
    content = (
        res.to_dict()
        if hasattr(res, "to_dict")
        else {
            "value": res.value,
            "interval": interval,
            "by_group": by_group,
            "diagnostics": diagnostics,
        }
    )
    if artifacts:
        p.artifacts.append(
            Artifact(f"{artifact_dir}/{sanitize_segment(name)}/diagnostics.json", _json(content), "json")
        )
    return content


def _is_scalar(v: Any) -> bool:
    return not isinstance(v, (Mapping, list, tuple, set)) and not hasattr(v, "__len__")


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
) -> Payload:
    """Compute everything ``log_fairness`` logs, without logging it.

    Parameters
    ----------
    results : result, mapping or sequence
        See :func:`name_results`.
    prefix : str, default=""
        Prepended to every metric and param key, e.g. ``"test/"`` or ``"val_"``.
    measures : Measure, sequence or mapping of Measure, optional
        The measures behind the measure results (matched by key), so that their
        configuration is logged as params; measures also come from a result's
        ``measure`` attribute.
    log_params : bool, default=True
    artifacts : bool, default=True
    posterior_options : mapping, optional
        ``prob`` (interval coverage, 0.95), ``eps`` (practical-fairness margin,
        0.02) and ``greater_than`` (default: the posterior's ``center``, the value of
        perfect fairness, 0 for differences and 1 for ratios) for posterior summaries.
    step : int, optional
        Artifacts of a step go to ``fairness/step_<step>/`` so steps do not overwrite
        each other.

    Returns
    -------
    Payload

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> res = sfm.evaluate_measures([sfm.msr("fairness.tpr")], [1, 1, 0, 1], [1, 0, 0, 1],
    ...                             sensitive_features=["F", "M", "F", "M"])
    >>> p = collect(res, artifacts=False)
    >>> sorted(p.metrics)  # doctest: +NORMALIZE_WHITESPACE
    ['fairness.tpr', 'fairness.tpr.by_group/tpr/F', 'fairness.tpr.by_group/tpr/M',
     'fairness.tpr.count/F', 'fairness.tpr.count/M', 'fairness.tpr.overall']
    >>> sorted(p.params)[:3]
    ['fairness.tpr.config/base', 'fairness.tpr.config/class', 'fairness.tpr.config/key']
    >>> p.metrics["fairness.tpr"]
    0.5
    """
    items = name_results(results)
    by_key = _measures_by_key(measures)
    names = unique_segments(list(dict.fromkeys(n for n, _, _ in items)))
    clean_prefix = sanitize_key(prefix) + ("/" if prefix.endswith("/") else "") if prefix else ""
    artifact_dir = "fairness" + (f"/{sanitize_segment(prefix.strip('/_. '))}" if prefix.strip("/_. ") else "")
    if step is not None:
        artifact_dir += f"/step_{int(step)}"
    payload = Payload()
    record: dict[str, Any] = {}
    for name, kind, res in items:
        base = f"{clean_prefix}{names[name]}"
        if kind == "measure":
            record.setdefault(name, {})["result"] = _collect_measure(payload, base, name, res)
            measure = by_key.get(getattr(res, "key", name)) or getattr(res, "measure", None)
            if log_params:
                params = (
                    measure_params(measure)
                    if measure is not None
                    else {
                        "key": getattr(res, "key", name),
                        "minimize": _direction(getattr(res, "minimize", None)),
                    }
                )
                for k, v in params.items():
                    payload.add_param(subkey(base, "config", k), v)
        elif kind == "posterior":
            record.setdefault(name, {})["posterior"] = _collect_posterior(
                payload, base, name, res, posterior_options or {}, artifact_dir, artifacts
            )
        else:
            record.setdefault(name, {})["estimate"] = _collect_unaware(
                payload, base, name, res, artifact_dir, artifacts
            )
    if not log_params:
        payload.params.clear()
    if artifacts:
        payload.artifacts.insert(
            0,
            Artifact(
                f"{artifact_dir}/results.json",
                _json({"prefix": prefix, "step": step, "results": record, "metric_keys": payload.key_map}),
                "json",
            ),
        )
    return payload


def _measures_by_key(measures: Any) -> dict[str, Any]:
    if measures is None:
        return {}
    if isinstance(measures, Mapping):
        return {str(k): v for k, v in measures.items()}
    if hasattr(measures, "key"):
        return {measures.key: measures}
    if isinstance(measures, Sequence):
        return {m.key: m for m in measures}
    raise TypeError(f"measures must be a Measure, a list or a dict of them; got {type(measures).__name__}.")


def _netcdf_safe(idata: Any) -> Any:
    """A copy of ``idata`` without booleans (variables such as ``diverging``, attributes).

    NetCDF has no boolean type; without netCDF4 installed, ArviZ writes with h5netcdf,
    which refuses booleans. Boolean variables become int8 and boolean attributes 0/1,
    which read back the same in ArviZ.
    """
    import arviz as az
    import numpy as np

    groups = {}
    for group in idata.groups():
        ds = getattr(idata, group)
        ds = ds.assign({name: var.astype("int8") for name, var in ds.data_vars.items() if var.dtype == bool})
        ds.attrs = {k: int(v) if isinstance(v, (bool, np.bool_)) else v for k, v in ds.attrs.items()}
        groups[group] = ds
    return az.InferenceData(**groups)
