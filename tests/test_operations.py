"""Operations: what an undefined comparison says."""

import numpy as np
import pandas as pd
import pytest

import skfair_measures as sfm
from skfair_measures import operations as ops
from skfair_measures.measures import UndefinedGroupWarning


def test_ratio_to_reference_with_a_zero_reference_rate_names_the_ratio_the_group_and_the_fix():
    y_true = np.array([1, 0, 1, 0, 1, 0, 1, 0])
    y_pred = np.array([0, 0, 0, 0, 1, 0, 1, 1])
    groups = np.array(["m"] * 4 + ["f"] * 4)
    m = sfm.msr("fairness.dp_ratio").against("m")
    with pytest.warns(UndefinedGroupWarning, match=r"ratio to the reference group 'm' is undefined.*rate is 0"):
        res = m.evaluate(y_true, y_pred, sensitive_features=groups)
    assert np.isnan(res.value)
    assert "reference group's selection_rate is 0" in res.reason
    assert "diff_to_reference" in res.reason
    assert "undefined on these samples" not in res.reason


def test_ratio_to_reference_reason_only_when_the_reference_is_zero():
    op = ops.ratio_to_reference("m")
    g = pd.Index(["f", "m"])
    assert op.undefined_reason([0.4, 0.5], groups=g) is None
    assert "'m'" in op.undefined_reason([0.4, 0.0], groups=g)
    assert ops.absdiff.undefined_reason([0.4, 0.0], groups=g) is None
