"""Disagreements between doors and unclear messages found by the differential suite and hostile testing.

One test per defect: the same input reaches the same outcome through every entry point,
and a refusal names the argument, where the fault is and the fix.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import skfair_measures as sfm
from skfair_measures import engines
from skfair_measures._stats import SingleGroupError


def test_bad_sample_weight_says_how_many_and_where():
    w = [1.0, -2.0, 1.0, float("nan")]
    with pytest.raises(ValueError, match=r"sample_weight has 2 value\(s\) .* first at position 1 \(-2\.0\)"):
        sfm.msr("fairness.tpr")([1, 0, 1, 0], [1, 0, 0, 0], sensitive_features=list("aabb"), sample_weight=w)
    with pytest.raises(ValueError, match=r"sample_weight has 1 value\(s\) .* first at position 2 \(inf\)"):
        sfm.msr("fairness.tpr")([1, 0, 1], [1, 0, 0], sensitive_features=list("aab"), sample_weight=[1, 1, np.inf])


def _frame(y, p, s):
    import pandas as pd

    return pd.DataFrame({"y": list(y), "p": list(p), "s": list(s)})


@pytest.mark.parametrize("convert", ["pandas", "polars"])
@pytest.mark.parametrize(
    ("measure", "y", "p", "s"),
    [
        # multiclass labels without pos_label, and fewer than two groups of min_group_size rows
        (sfm.msr("fairness.tpr", groups=["a", "absent"]).with_inputs(min_group_size=2), (2, 2), (0, 0), "aa"),
        # string labels without pos_label, scores with a threshold, and a single group
        (sfm.msr("fairness.tpr", threshold=0.5), ("no", "yes"), (0.25, 0.75), "aa"),
    ],
)
def test_two_faults_give_the_cores_error_in_the_engines(convert, measure, y, p, s):
    with pytest.raises(SingleGroupError), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the small-group warning
        measure.evaluate(np.asarray(y), np.asarray(p), sensitive_features=np.asarray(list(s)))
    data = _frame(y, p, s)
    if convert == "polars":
        data = pytest.importorskip("polars").from_pandas(data)
    with pytest.raises(SingleGroupError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engines.compute_metrics(data, "y", "p", "s", [measure])
