"""Images of boxes of group values: every point of the box maps inside the measure's bounds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import skfair_measures as sfm
from skfair_measures import operations as ops

GROUPS = pd.Index(["a", "b", "c"])
OPERATIONS = [
    ops.absdiff,
    ops.diff,
    ops.ratio,
    ops.mean_pairwise_absdiff,
    ops.diff_to_overall,
    ops.ratio_to_overall,
    ops.diff_to_reference("b"),
    ops.ratio_to_reference("b"),
]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 3), st.integers(0, 2**31 - 1))
@pytest.mark.parametrize("op", OPERATIONS, ids=lambda o: o.name)
def test_every_point_of_the_box_maps_inside(op, k, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(size=(2, k + 1))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    groups = GROUPS[:k]
    overall = (float(lo[k]), float(hi[k]))
    low, high = op.bounds(lo[:k], hi[:k], groups=groups, overall=overall)
    points = rng.uniform(lo, hi, size=(400, k + 1))
    corners = np.where(rng.integers(0, 2, size=(100, k + 1)).astype(bool), lo, hi)
    for v in np.concatenate([points, corners]):
        with np.errstate(invalid="ignore", divide="ignore"):
            value = op(v[:k], groups=groups, overall=v[k])
        assert low - 1e-12 <= value <= high + 1e-12 or np.isnan(value)


def test_absdiff_bounds_are_the_exact_image_with_two_groups():
    assert ops.absdiff.bounds([0.2, 0.5], [0.4, 0.6], groups=pd.RangeIndex(2)) == pytest.approx((0.1, 0.4))
    assert ops.absdiff.bounds([0.2, 0.3], [0.4, 0.6], groups=pd.RangeIndex(2)) == (0.0, pytest.approx(0.4))


def test_composite_and_user_operations():
    eod = sfm.msr("fairness.eod")
    box = eod.bounds_from_group_values(
        {"tpr": [0.5, 0.6], "fpr": [0.1, 0.1]}, {"tpr": [0.7, 0.9], "fpr": [0.3, 0.2]}, groups=pd.Index(["a", "b"])
    )
    assert box == pytest.approx((0.0, 0.3))  # mean of (0, 0.4) and (0, 0.2)
    custom = sfm.msr("fairness.tpr", operation=lambda x: x.iloc[0])
    with pytest.raises(TypeError, match="no interval propagation"):
        custom.bounds_from_group_values({"tpr": [0.5, 0.6]}, {"tpr": [0.7, 0.9]}, groups=pd.Index(["a", "b"]))
