"""Disagreements between doors and unclear messages found by the differential suite and hostile testing.

One test per defect: the same input reaches the same outcome through every entry point,
and a refusal names the argument, where the fault is and the fix.
"""

from __future__ import annotations

import numpy as np
import pytest

import skfair_measures as sfm


def test_bad_sample_weight_says_how_many_and_where():
    w = [1.0, -2.0, 1.0, float("nan")]
    with pytest.raises(ValueError, match=r"sample_weight has 2 value\(s\) .* first at position 1 \(-2\.0\)"):
        sfm.msr("fairness.tpr")([1, 0, 1, 0], [1, 0, 0, 0], sensitive_features=list("aabb"), sample_weight=w)
    with pytest.raises(ValueError, match=r"sample_weight has 1 value\(s\) .* first at position 2 \(inf\)"):
        sfm.msr("fairness.tpr")([1, 0, 1], [1, 0, 0], sensitive_features=list("aab"), sample_weight=[1, 1, np.inf])
