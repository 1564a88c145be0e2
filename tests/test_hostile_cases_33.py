"""Issue 33's leftover hostile cases of the measure core and the posteriors, one test each.

The right answer is scikit-learn's own behaviour where there is one (infinity refused,
``f1_score``'s error on a wrong ``pos_label``), the same rows spelled plainly otherwise.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score

import skfair_measures as sfm
from skfair_measures import bayes
from skfair_measures.base import MulticlassError
from skfair_measures.groupwise import groupwise_metrics
from skfair_measures.thresholds import _segments

G = np.array(["a", "b"] * 10)
Y = np.array([0, 1] * 10, dtype=float)
P = np.array([1, 1, 0, 0] * 5, dtype=float)


@pytest.mark.parametrize("where", ["y_true", "y_pred"])
@pytest.mark.parametrize("inf", [np.inf, -np.inf])
def test_infinity_is_refused_as_nan_is_not_taken_for_a_third_class(where, inf):
    y, p = Y.copy(), P.copy()
    (y if where == "y_true" else p)[7] = inf
    with pytest.raises(ValueError, match=rf"{where} has 1 infinite value\(s\), first at position 7"):
        sfm.msr("fairness.tpr")(y, p, sensitive_features=G)


def test_a_wrapped_sklearn_metric_gets_the_measures_pos_label_or_raises_its_own_error():
    ys, ps = np.where(Y == 1, "yes", "no"), np.where(P == 1, "yes", "no")
    m = sfm.FairnessMeasure(sfm.SklearnMetric(f1_score), pos_label="yes")
    want = abs(
        f1_score(ys[G == "a"], ps[G == "a"], pos_label="yes") - f1_score(ys[G == "b"], ps[G == "b"], pos_label="yes")
    )
    assert m(ys, ps, sensitive_features=G) == pytest.approx(want)
    with pytest.raises(ValueError, match=r"f1_score.*refused all rows: pos_label=1 is not a valid label"):
        sfm.FairnessMeasure(sfm.SklearnMetric(f1_score))(ys, ps, sensitive_features=G)


@pytest.mark.parametrize(
    "thresholds",
    [
        [0.0, 5e-324, 1e-323, 1.5e-323, 2e-323],
        [0.5, 0.5 + 1e-300, 0.5 + 2e-16, 0.5 + 3e-16],
        [1e-310 * i for i in range(9)],
    ],
)
def test_a_threshold_grid_with_a_subnormal_span_counts_right(thresholds):
    thr = np.unique(thresholds)
    scores = np.r_[np.random.default_rng(0).random(200), thr, 0.0, 1.0]
    np.testing.assert_array_equal(_segments(scores, thr), np.searchsorted(thr, scores, side="right"))
    curve = sfm.disparity_at_thresholds("fairness.tpr", Y, scores[:20], sensitive_features=G, thresholds=thr)
    assert len(curve.values) == thr.size


def test_an_infinite_prediction_in_distribution_parity_is_refused():
    pred = np.array([0.1, np.inf, 0.3, 0.4])
    for key in ("fairness.dp_wasserstein", "fairness.dp_ks"):
        with pytest.raises(ValueError, match="y_pred has 1 infinite value"):
            sfm.msr(key)([0.0, 1, 0, 1], pred, sensitive_features=list("aabb"))


def test_a_missing_control_feature_is_named_as_a_control_feature():
    control = np.array([1.0, np.nan] * 10)
    with pytest.raises(ValueError, match=r"control feature 'control_feature_0' has 10 missing value\(s\)"):
        groupwise_metrics(["tpr"], Y.astype(int), P.astype(int), sensitive_features=G, control_features=control)


def test_mixed_int_and_str_control_features_are_two_levels():
    control = np.array([1, "x", "x", 1] * 5, dtype=object)
    gm = groupwise_metrics(["acc"], Y.astype(int), P.astype(int), sensitive_features=G, control_features=control)
    got = gm.overall["acc"].to_dict()
    for level in (1, "x"):
        rows = np.array([c == level and type(c) is type(level) for c in control])
        assert got[level] == pytest.approx(np.mean(Y[rows] == P[rows]))


def test_a_multiclass_error_suggests_average_only_where_it_is_accepted_with_the_measure_called():
    y, p, g = np.array([0, 1, 2] * 6), np.array([0, 1, 2, 1] * 4 + [0, 0]), np.array(list("ab") * 9)
    with pytest.raises(MulticlassError, match=r"msr\('fairness.eod', average='macro'\)") as info:
        sfm.msr("fairness.eod")(y, p, sensitive_features=g)
    assert sfm.msr("fairness.eod", average="macro")(y, p, sensitive_features=g) >= 0  # the suggestion works
    with pytest.raises(MulticlassError) as info:
        sfm.msr("fairness.cv")(y, p, sensitive_features=g)
    assert "average=" not in str(info.value) and "selection_rate has no mean over classes" in str(info.value)


def _unlabeled_group():
    rng = np.random.default_rng(1)
    n = 300
    g, s = rng.choice(["a", "b", "c"], n), rng.random(n)
    y = (rng.random(n) < s).astype(float)
    return g, s, y, g != "c"


@pytest.mark.parametrize("method", ["ppi", "guaranteed"])
def test_a_group_with_only_unlabeled_rows_is_told_what_it_lacks_not_an_argument_posterior_has_not(method):
    g, s, y, lab = _unlabeled_group()
    with pytest.raises(ValueError, match=r"\['c'\], group\(s\) without a labeled row") as info:
        bayes.posterior(
            sfm.msr("fairness.tpr"),
            y[lab],
            s[lab],
            sensitive_features=g[lab],
            unlabeled_scores=s[~lab],
            unlabeled_sensitive=g[~lab],
            method=method,
        )
    assert "add them to groups=" not in str(info.value)


def test_the_posterior_of_a_performance_measure_takes_one_group_or_none_as_the_measure_does():
    g, s, y, _ = _unlabeled_group()
    p = (s >= 0.5).astype(int)
    one = np.full(y.size, "all")
    assert sfm.msr("classif.acc")(y, p, sensitive_features=one) == pytest.approx(np.mean(y == p))
    for groups in (one, None):
        post = bayes.posterior(sfm.msr("classif.acc"), y, s, sensitive_features=groups, method="guaranteed")
        lo, hi = post.interval()
        assert lo <= np.mean(y == p) <= hi


def test_bb_on_a_frame_ignores_the_unlabeled_rows_as_in_memory_duckdb_included():
    duckdb = pytest.importorskip("duckdb")
    import pandas as pd

    g, s, y, lab = _unlabeled_group()
    y = np.where(lab, y, np.nan)
    frame = pd.DataFrame({"y": y, "s": s, "g": g})
    want = bayes.posterior(
        sfm.msr("fairness.tpr"), y[lab], s[lab], sensitive_features=g[lab], method="bb", random_state=0
    )
    for data in (frame, duckdb.from_df(frame)):
        got = bayes.posterior(
            sfm.msr("fairness.tpr"), "y", "s", sensitive_features="g", data=data, method="bb", random_state=0
        )
        assert got.interval() == pytest.approx(want.interval())
