"""The integer fast path of ``check_inputs`` gives exactly what the general path gives.

Integer (and boolean) groups and labels are counted by one bincount over their value
ranges, which also finds the groups and labels present (``_stats._integer_sample``).
Every test here computes the same sample twice, with that path and with it switched
off (factorise, then count), and compares codes, group and class tables (values and
dtypes), counts, measure values and error messages: negative and non-contiguous
values, every integer width, ``uint64`` beyond the ``int64`` range, booleans, and
ranges that widen from one block of rows to the next. Large inputs are counted by a
compiled kernel when numba is installed (``_count_kernel``): the same comparisons run
with it (its row threshold lowered) and without it (as if numba were not installed).
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import skfair_measures as sfm
from skfair_measures import _groups, _reuse, _stats

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
MEASURES = [
    sfm.msr("fairness.acc"),
    sfm.msr("fairness", base="balanced_accuracy"),
    sfm.msr("fairness.tpr", average="macro"),
    sfm.msr("fairness.ppv", average="weighted"),
    sfm.msr("fairness.eod"),
    sfm.msr("fairness.cv"),
]


def _bases(dtype: str) -> list[int]:
    """Smallest values to start from: zero, the dtype's ends, negatives where the dtype has them."""
    info = np.iinfo(dtype)
    out = [0, 3, int(info.max) - 40]
    if info.min < 0:
        out += [-7, int(info.min)]
    return out


@st.composite
def int_arrays(draw, n: int, max_levels: int) -> np.ndarray:
    dtype = draw(st.sampled_from(INT_DTYPES + ["bool"]))
    if dtype == "bool":
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    base = draw(st.sampled_from(_bases(dtype)))
    offsets = draw(st.lists(st.integers(0, 40), min_size=1, max_size=max_levels, unique=True))
    levels = np.array([base + o for o in offsets], dtype=object)
    picks = draw(st.lists(st.integers(0, len(levels) - 1), min_size=n, max_size=n))
    return np.array([levels[i] for i in picks], dtype=dtype)


def _general(func, *args):
    """``func(*args)`` with the integer fast path switched off."""
    with mock.patch.object(_stats, "_integer_sample", lambda *a: None):
        return func(*args)


def _outcome(func, *args):
    """A result, or the type and message of the error it raised."""
    _reuse.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return func(*args)
        except (ValueError, TypeError) as err:
            return (type(err), str(err))


def _sample_view(t, p, g):
    s = _stats.check_inputs(t, p, g)
    view = {
        "codes": s.group_codes.tolist(),
        "groups": (s.groups.tolist(), s.groups.dtype, s.groups.name),
        "distinct": [[(type(v), v) for v in u] for u in s._distinct_labels()],
        "classes": (s.classes().tolist(), s.classes().dtype),
        "counts": (s.counts_per_group().tolist(), s.counts_per_group().dtype),
        "sizes": s.group_sizes().tolist(),
        "multiclass": _outcome(lambda: s.multiclass().counts.tolist()),
    }
    for pos in [None, *s.classes()]:
        view[("confusion", pos)] = _outcome(lambda pos=pos: s.confusion(pos).counts.tolist())
    return view


def _measures(t, p, g):
    res = sfm.evaluate_measures(MEASURES, t, p, sensitive_features=g)
    return {k: (r.value, list(np.asarray(r.by_group, dtype=float))) for k, r in res.items()}


def _assert_same(fast, general):
    assert type(fast) is type(general)
    if isinstance(fast, dict):
        assert fast.keys() == general.keys()
        for key in fast:
            _assert_same(fast[key], general[key])
    else:
        np.testing.assert_equal(fast, general)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), n=st.integers(1, 40), block=st.sampled_from([1, 3, 7, 1 << 17]))
def test_integer_path_equals_the_general_path(data, n, block):
    g = data.draw(int_arrays(n, 4))
    t = data.draw(int_arrays(n, 5))
    p = data.draw(int_arrays(n, 5)) if data.draw(st.booleans()) else t.copy()
    with mock.patch.object(_stats, "_BLOCK", block):
        fast = _outcome(_sample_view, t, p, g)
        fast_measures = _outcome(_measures, t, p, g)
    _assert_same(fast, _general(_outcome, _sample_view, t, p, g))
    _assert_same(fast_measures, _general(_outcome, _measures, t, p, g))


@pytest.mark.parametrize(
    ("dtype", "values"),
    [
        ("int8", [-128, 127, -128, 0]),
        ("int64", [-(2**63), -(2**63) + 5, -(2**63)]),
        ("int64", [2**63 - 1, 2**63 - 9, 2**63 - 1]),
        ("uint64", [2**64 - 1, 2**64 - 3, 2**64 - 1]),
        ("uint8", [255, 0, 17]),
        ("bool", [True, False, True]),
    ],
)
def test_extreme_values_of_every_width(dtype, values):
    g = np.array(values * 4, dtype=dtype)
    t = np.array(([values[0], values[1]] * 6)[: g.size], dtype=dtype)
    p = t[::-1].copy()
    _assert_same(_outcome(_sample_view, t, p, g), _general(_outcome, _sample_view, t, p, g))


def test_the_fast_path_is_taken_for_integer_inputs_and_not_for_others():
    rng = np.random.default_rng(0)
    t, p, g = rng.integers(0, 5, 500), rng.integers(0, 5, 500), rng.integers(0, 3, 500)
    _reuse.clear()
    assert "class_counts" in _stats.check_inputs(t, p, g)._cache
    assert "class_counts" in _stats.check_inputs(t.astype(np.int8), p.astype(np.uint64), g.astype(bool))._cache
    for other in (
        dict(y_true=t.astype(float), y_pred=p, sensitive_features=g),  # float labels
        dict(y_true=t, y_pred=p, sensitive_features=g.astype(str)),  # string groups
        dict(y_true=t, y_pred=p, sensitive_features=g, sample_weight=np.ones(500)),  # weights
        dict(y_true=t, y_pred=p, sensitive_features=pd.DataFrame({"a": g, "b": t})),  # two columns
        dict(y_true=t, y_pred=p.astype(bool), sensitive_features=g),  # bool against int labels
        dict(y_true=t * 10**6, y_pred=p, sensitive_features=g),  # a range too wide to count
    ):
        _reuse.clear()
        assert "class_counts" not in _stats.check_inputs(**other)._cache


def test_pandas_integer_series_take_the_fast_path_with_the_same_results():
    rng = np.random.default_rng(1)
    t, p = pd.Series(rng.integers(-3, 4, 300)), pd.Series(rng.integers(-3, 4, 300))
    g = pd.Series(rng.integers(10, 14, 300), name="region")
    _reuse.clear()
    assert "class_counts" in _stats.check_inputs(t, p, g)._cache
    _assert_same(_outcome(_measures, t, p, g), _general(_outcome, _measures, t, p, g))
    _assert_same(_outcome(_sample_view, t, p, g), _general(_outcome, _sample_view, t, p, g))


def test_single_group_and_wide_values_keep_their_messages():
    t = np.array([0, 1, 2, 1])
    one_group = np.array([5, 5, 5, 5])
    fast = _outcome(_stats.check_inputs, t, t, one_group)
    assert fast == _general(_outcome, _stats.check_inputs, t, t, one_group)
    assert fast[0] is _groups.SingleGroupError


# --- the compiled kernel (numba, large inputs) and its NumPy fallback ----------------------------------------

#: dtypes of (groups, y_true, y_pred) given to the compiled kernel: a few combinations, each compiled once
KERNEL_DTYPES = [
    ("int64", "int64", "int64"),
    ("int8", "int16", "uint32"),
    ("bool", "bool", "bool"),
    ("uint16", "uint8", "int8"),
]


@st.composite
def int_arrays_of(draw, n: int, max_levels: int, dtype: str) -> np.ndarray:
    if dtype == "bool":
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    base = draw(st.sampled_from(_bases(dtype)))
    offsets = draw(st.lists(st.integers(0, 40), min_size=1, max_size=max_levels, unique=True))
    picks = draw(st.lists(st.sampled_from(offsets), min_size=n, max_size=n))
    return np.array([base + o for o in picks], dtype=object).astype(dtype)


def _compiled_counts(rows: int):
    """Count with the compiled kernel from ``rows`` rows on, and spy on its use."""
    pytest.importorskip("numba")
    return (
        mock.patch.object(_stats, "_COMPILED_ROWS", rows),
        mock.patch.object(_stats._RawCounts, "_compiled", wraps=_stats._RawCounts._compiled),
    )


@settings(max_examples=200, deadline=None)
@given(data=st.data(), n=st.integers(1, 40), dtypes=st.sampled_from(KERNEL_DTYPES))
def test_compiled_kernel_equals_the_general_path(data, n, dtypes):
    g, t, p = (data.draw(int_arrays_of(n, levels, dtype)) for levels, dtype in zip((4, 5, 5), dtypes, strict=True))
    rows, spy = _compiled_counts(1)
    with rows, spy as compiled:
        fast = _outcome(_sample_view, t, p, g)
        fast_measures = _outcome(_measures, t, p, g)
    assert compiled.called
    _assert_same(fast, _general(_outcome, _sample_view, t, p, g))
    _assert_same(fast_measures, _general(_outcome, _measures, t, p, g))


@pytest.mark.parametrize(
    ("dtype", "values"),
    [
        ("int8", [-128, 127, -128, 0]),
        ("int64", [-(2**63), -(2**63) + 5, -(2**63)]),
        ("int64", [2**63 - 1, 2**63 - 9, 2**63 - 1]),
        ("int64", [-(2**63), 2**63 - 1, 0]),  # too wide to count: the general path decides
        ("uint32", [2**32 - 1, 2**32 - 3, 2**32 - 1]),
        ("bool", [True, False, True]),
    ],
)
def test_compiled_kernel_at_the_ends_of_every_width(dtype, values):
    g = np.array(values * 4, dtype=dtype)
    t = np.array(([values[0], values[1]] * g.size)[: g.size], dtype=dtype)
    p = t[::-1].copy()
    rows, spy = _compiled_counts(1)
    with rows, spy as compiled:
        fast = _outcome(_sample_view, t, p, g)
    assert compiled.called
    _assert_same(fast, _general(_outcome, _sample_view, t, p, g))


def test_uint64_and_small_inputs_are_counted_by_numpy():
    rng = np.random.default_rng(2)
    t, p, g = rng.integers(0, 4, 600), rng.integers(0, 4, 600), rng.integers(0, 3, 600)
    rows, spy = _compiled_counts(500)
    with rows, spy as compiled:
        _outcome(_sample_view, t[:400], p[:400], g[:400])  # fewer rows than the threshold
        _outcome(_sample_view, t.astype(np.uint64), p, g)  # uint64: its offsets would be floats in numba
        assert not compiled.called
        _outcome(_sample_view, t, p, g)
        assert compiled.called


def test_large_input_equals_the_general_path_with_and_without_the_kernel():
    rng = np.random.default_rng(3)
    n = 250_000  # above _COMPILED_ROWS, more than one NumPy block
    t = rng.integers(-2, 8, n).astype(np.int32)
    p = np.where(rng.random(n) < 0.6, t, rng.integers(-2, 8, n)).astype(np.int32)
    g = rng.integers(3, 9, n)
    general = _general(_outcome, _sample_view, t, p, g)
    with mock.patch.object(_stats, "_compiled_kernel", lambda: None):  # numba not installed
        _assert_same(_outcome(_sample_view, t, p, g), general)
    _assert_same(_outcome(_sample_view, t, p, g), general)


_FRESH = """
import sys
from unittest import mock
{block}
import numpy as np, skfair_measures as sfm
from skfair_measures import _groups, _reuse, _stats
rng = np.random.default_rng(0)
t, p, g = rng.integers(0, 10, 300_000), rng.integers(0, 10, 300_000), rng.integers(0, 5, 300_000)
m = sfm.msr("fairness.tpr", average="macro")
m(t[:1000], p[:1000], sensitive_features=g[:1000])
print(sys.modules.get("numba") is not None)
large = m(t, p, sensitive_features=g)
print(sys.modules.get("numba") is not None, "skfair_measures._count_kernel" in sys.modules)
_reuse.clear()
with mock.patch.object(_stats, "_integer_sample", lambda *a: None):
    print(m(t, p, sensitive_features=g) == large)
"""


_BROKEN_NUMBA = """
import types
def njit(**options):
    raise RuntimeError("cannot cache function: no locator available")
sys.modules["numba"] = types.SimpleNamespace(njit=njit)  # as if numba had nowhere to cache
"""


_NO_NUMBA = "sys.modules['numba'] = None  # as if numba were not installed"


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("", ["False", "True", "True", "True"]),  # numba imported by the large call only; the kernel counts
        (_NO_NUMBA, ["False", "False", "False", "True"]),  # NumPy counts
        (_BROKEN_NUMBA, ["True", "True", "False", "True"]),  # numba present but unusable: NumPy counts
    ],
    ids=["installed", "missing", "no cache"],
)
def test_numba_is_imported_only_for_large_inputs_and_is_optional(block, expected):
    if not block:
        pytest.importorskip("numba")
    out = subprocess.run([sys.executable, "-c", _FRESH.format(block=block)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == expected


def test_a_uint64_label_beside_boolean_labels_is_a_class_not_an_overflow():
    # found by the property test above: comparing a boolean array with a label beyond int64 raised OverflowError
    t = np.array([False] * 9 + [True])
    p = np.full(10, 2**64 - 41, dtype=np.uint64)
    g = np.array([0] * 9 + [1])
    s = _stats.check_inputs(t, p, g)
    assert s.classes().tolist() == [False, True, 2**64 - 41]
    counts = s.confusion(2**64 - 41).counts  # that class against the rest: every prediction, no true label
    np.testing.assert_array_equal(counts, [[[0, 9], [0, 0]], [[0, 1], [0, 0]]])
