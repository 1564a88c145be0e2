"""Reuse of validated inputs across repeated measure calls on the same arrays.

Calling eighteen measures one by one on the same arrays used to validate the inputs,
factorise the groups and count the confusion cells eighteen times. :func:`lookup` and
:func:`store` let :func:`skfair_measures._stats.check_inputs` hand back the sample
(group codes, labels table and its cached counts) it validated before, when, and only
when, all of the following hold:

- ``y_true``, ``y_pred``, ``sensitive_features`` and ``sample_weight`` are the very same
  objects (identity, held through weak references) as in an earlier call, and each is a
  NumPy array of numbers, booleans or Python strings, a pandas Series (numeric,
  categorical, or string/Arrow-backed), a pandas Categorical, a DataFrame of such
  columns, or None; lists, tuples and other objects are validated on every call;
- the declared ``groups=`` and the name of the prediction argument are the same;
- the inputs were already seen once: the second call with the same objects keeps a
  private snapshot of their contents (a copy of numeric, string and category-code
  arrays; Arrow arrays, being immutable, by reference), the third and later calls are
  served from the cache;
- every input still equals its snapshot, compared element by element (no hashing, so
  no collision can return a stale result). Mutating an array in place, or passing an
  equal but different object, validates again.

At most :data:`MAX_ENTRIES` input sets are kept (least recently used first out), and
:func:`clear` empties the cache. Comparing costs one pass over the inputs, far less
than factorising strings and counting again.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MAX_ENTRIES", "clear", "lookup", "store"]

#: How many validated input sets are kept.
MAX_ENTRIES = 2

_lock = threading.Lock()
_seen: OrderedDict[tuple, tuple] = OrderedDict()  # inputs seen once: key -> weak references
_entries: OrderedDict[tuple, tuple[tuple, list[Callable[[Any], bool]], pd.Index | None, Any]] = OrderedDict()

Check = Callable[[Any], bool]


def clear() -> None:
    """Forget every cached input set (e.g. before timing a cold call)."""
    with _lock:
        _seen.clear()
        _entries.clear()


def _refs(inputs: tuple[Any, ...]) -> tuple | None:
    """Weak references to the inputs (None stays None); None if one cannot be referenced weakly."""
    try:
        return tuple(None if x is None else weakref.ref(x) for x in inputs)
    except TypeError:  # lists, tuples, dicts: no weak references, so no reuse
        return None


def _alive(refs: tuple, inputs: tuple[Any, ...]) -> bool:
    return all((r is None and x is None) or (r is not None and r() is x) for r, x in zip(refs, inputs, strict=True))


def lookup(inputs: tuple[Any, ...], extra: tuple[Any, ...], groups: pd.Index | None) -> Any:
    """The sample stored for these very inputs if they are unchanged, else None."""
    key = tuple(map(id, inputs)) + extra
    with _lock:
        entry = _entries.get(key)
        if entry is not None:
            _entries.move_to_end(key)
    if entry is None:
        return None
    refs, checks, declared, sample = entry
    unchanged = _alive(refs, inputs) and _same_groups(declared, groups)
    return sample if unchanged and all(check(x) for check, x in zip(checks, inputs, strict=True)) else None


def _same_groups(stored: pd.Index | None, declared: pd.Index | None) -> bool:
    if stored is None or declared is None:
        return stored is declared
    return stored is declared or (stored.equals(declared) and stored.dtype == declared.dtype)


def store(inputs: tuple[Any, ...], extra: tuple[Any, ...], groups: pd.Index | None, compute: Callable[[], Any]) -> Any:
    """Compute the sample; keep it (with snapshots of the inputs) from the second sighting on."""
    key, refs = tuple(map(id, inputs)) + extra, _refs(inputs)
    if refs is None:
        return compute()
    with _lock:
        seen = _seen.get(key)
        second = seen is not None and _alive(seen, inputs)
        if not second:
            _seen[key] = refs
            while len(_seen) > 2 * MAX_ENTRIES:  # least recently used first out
                _seen.popitem(last=False)
    checks = [_snapshot(x) for x in inputs] if second else None
    sample = compute()
    if checks is not None and all(c is not None for c in checks):
        with _lock:
            _entries[key] = (refs, checks, groups, sample)
            while len(_entries) > MAX_ENTRIES:
                _entries.popitem(last=False)
    return sample


# --- snapshots: one exact equality check per input ------------------------------------


def _snapshot(obj: Any) -> Check | None:
    """A function telling whether ``obj`` still holds what it holds now; None if unsupported."""
    if obj is None:
        return lambda x: x is None
    if isinstance(obj, pd.DataFrame):
        columns = list(obj.columns)
        checks = [_snapshot(obj[c]) for c in columns]
        if any(c is None for c in checks):
            return None
        return lambda f: list(f.columns) == columns and all(c(f[col]) for c, col in zip(checks, columns, strict=True))
    if isinstance(obj, pd.Series):
        values = _series_snapshot(obj.array)
        if values is None:
            return None
        name, dtype = obj.name, obj.dtype
        return lambda s: s.name == name and s.dtype == dtype and values(s.array)
    if isinstance(obj, pd.Categorical | np.ndarray):
        return _series_snapshot(obj)
    return None


def _series_snapshot(values: Any) -> Check | None:
    """Snapshots of the value arrays we know how to compare exactly."""
    if isinstance(values, pd.Categorical):
        codes, categories = values.codes.copy(), values.categories
        # categories cannot change in place: a new set means a new Index object
        return lambda c: isinstance(c, pd.Categorical) and c.categories is categories and np.array_equal(c.codes, codes)
    if hasattr(values, "__arrow_array__"):  # Arrow-backed (pandas' str dtype, ArrowDtype): immutable buffers
        arrow = values.__arrow_array__()
        return lambda a: hasattr(a, "__arrow_array__") and a.__arrow_array__().equals(arrow)
    if not isinstance(values, pd.arrays.NumpyExtensionArray | np.ndarray):
        return None
    arr = np.asarray(values)  # NumPy values, or those behind a Series (no copy)
    # numbers, or Python strings only: == on two strings is exact, and a non-string never equals one
    strings = arr.dtype.kind == "O" and pd.api.types.infer_dtype(arr, skipna=False) == "string"
    if arr.dtype.kind not in "biuf" and not strings:
        return None
    copy = arr.copy()
    return lambda a: np.asarray(a).dtype == copy.dtype and np.array_equal(a, copy)
