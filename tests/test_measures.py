"""Behaviour of measures: operations, composites, constraints, inputs and clear errors."""

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import f1_score, make_scorer, roc_auc_score

import skfair_measures as sfm
from skfair_measures import operations as ops

Y = np.array([1, 1, 1, 1, 0, 0, 0, 0])
P = np.array([1, 1, 1, 0, 0, 1, 0, 0])
A = np.array(["F", "F", "M", "M", "F", "M", "F", "M"])
# F: tpr 1.0, fpr 0.0; M: tpr 0.5, fpr 0.5


# --- operations --------------------------------------------------------------------
def test_operations_on_vectors():
    v = np.array([0.2, 0.5, 0.9])
    assert ops.absdiff(v) == pytest.approx(0.7)
    assert ops.diff(v) == pytest.approx(-0.7)  # earlier (0.2) minus later (0.9)
    assert ops.diff([0.9, 0.2]) == pytest.approx(0.7)
    assert ops.ratio(v) == pytest.approx(0.2 / 0.9)
    assert ops.ratio([0.0, 0.0]) == 1.0
    assert ops.mean_pairwise_absdiff(v) == pytest.approx((0.3 + 0.7 + 0.4) / 3)
    g = pd.Index(["a", "b", "c"])
    assert ops.diff_to_reference("b")(v, groups=g) == pytest.approx(0.4)  # c - b has the largest magnitude
    assert ops.diff_to_reference("c")(v, groups=g) == pytest.approx(-0.7)
    assert ops.ratio_to_reference("c")(v, groups=g) == pytest.approx(0.2 / 0.9)
    assert ops.diff_to_overall(v, groups=g, overall=0.5) == pytest.approx(0.4)
    assert ops.ratio_to_overall(v, groups=g, overall=0.5) == pytest.approx(0.4)


def test_operations_vectorise_over_leading_axes_and_propagate_nan():
    draws = np.array([[0.1, 0.3], [0.5, 0.2], [np.nan, 0.1]])
    np.testing.assert_allclose(ops.absdiff(draws), [0.2, 0.3, np.nan])
    np.testing.assert_allclose(ops.diff_to_reference(0)(draws, groups=pd.RangeIndex(2)), [0.2, -0.3, np.nan])
    assert ops.absdiff(np.zeros((2, 3, 4))).shape == (2, 3)


def test_user_callable_operation_sees_labeled_groups():
    m = sfm.msr("fairness.tpr", operation=lambda x: x["F"])
    assert m(Y, P, sensitive_features=A) == 1.0
    assert m.minimize is True


def test_unknown_operation_and_reference_errors():
    with pytest.raises(ValueError, match="Did you mean 'ratio'"):
        sfm.msr("fairness.tpr", operation="ration")
    with pytest.raises(ValueError, match="needs reference="):
        sfm.msr("fairness.tpr", operation="diff_to_reference")
    m = sfm.msr("fairness.tpr", operation="diff_to_reference", reference="X")
    with pytest.raises(ValueError, match="reference='X' is not one of the groups"):
        m(Y, P, sensitive_features=A)


# --- measures ----------------------------------------------------------------------
def test_fairness_measure_values_and_metadata():
    assert sfm.msr("fairness.tpr")(Y, P, sensitive_features=A) == 0.5
    assert sfm.msr("fairness.eod")(Y, P, sensitive_features=A) == 0.5
    signed = sfm.msr("fairness.tpr", operation="diff_to_reference", reference="M")
    assert signed(Y, P, sensitive_features=A) == 0.5
    assert signed.minimize is None and signed.greater_is_better
    ratio = sfm.msr("fairness", base="tpr", operation="ratio")
    assert ratio(Y, P, sensitive_features=A) == 0.5
    assert ratio.minimize is False and ratio.range == (0.0, 1.0)
    assert isinstance(sfm.msr("fairness.tpr")(Y, P, sensitive_features=A), float)


def test_evaluate_returns_groupwise_values_and_counts():
    res = sfm.msr("fairness.tpr").evaluate(Y, P, sensitive_features=A)
    assert res.by_group.to_dict() == {"F": 1.0, "M": 0.5}
    assert res.counts.to_dict() == {"F": 4, "M": 4}
    assert res.overall == 0.75
    as_dict = res.to_dict()
    assert as_dict["groups"] == ["F", "M"] and as_dict["by_group"] == [1.0, 0.5]
    comp = sfm.msr("fairness.eod").groupwise(Y, P, sensitive_features=A)
    assert list(comp.columns) == ["fairness.tpr", "fairness.fpr"]


def test_constraint_semantics_follow_mlr3fairness():
    m = sfm.msr("fairness.acc_eod=.05")
    # eod = 0.5 > 0.05: value = min(acc range) - eod = -0.5
    assert m(Y, P, sensitive_features=A) == -0.5
    fair = sfm.msr("fairness.acc_eod=.05", epsilon=0.6)
    assert fair(Y, P, sensitive_features=A) == pytest.approx(0.75)
    assert m.minimize is False
    with pytest.raises(ValueError, match="no ideal value"):
        sfm.ConstraintMeasure(sfm.msr("classif.acc"), sfm.msr("fairness.tpr", operation=lambda x: x.iloc[0]))
    # a ratio's ideal is 1: within epsilon of it means min/max >= 1 - epsilon
    ratio = sfm.ConstraintMeasure(sfm.msr("classif.acc"), sfm.msr("fairness.dp_ratio"), epsilon=0.2)
    dp_ratio = sfm.msr("fairness.dp_ratio")(Y, P, sensitive_features=A)
    expected = 0.75 if 1 - dp_ratio <= 0.2 else 0.0 - (1 - dp_ratio)
    assert ratio(Y, P, sensitive_features=A) == pytest.approx(expected)


def test_composite_directions_must_agree():
    with pytest.raises(ValueError, match="mix directions"):
        sfm.CompositeMeasure([sfm.msr("fairness.tpr"), sfm.msr("fairness.dp_ratio")])
    m = sfm.CompositeMeasure([sfm.msr("fairness.fnr"), sfm.msr("fairness.tnr")], aggregate=np.max)
    assert m(Y, P, sensitive_features=A) == 0.5


def test_intersectional_groups_are_the_observed_combinations():
    sf = pd.DataFrame({"sex": ["F", "F", "M", "M"] * 2, "race": ["a", "b", "a", "a"] * 2})
    y = [1, 1, 1, 1, 0, 0, 0, 0]
    res = sfm.msr("fairness.acc").evaluate(y, y, sensitive_features=sf)
    assert res.value == 0.0
    assert isinstance(res.by_group.index, pd.MultiIndex)
    assert list(res.by_group.index) == [("F", "a"), ("F", "b"), ("M", "a")]
    # declaring the full product keeps the absent cell, as undefined
    full = pd.MultiIndex.from_product([["F", "M"], ["a", "b"]], names=["sex", "race"])
    with pytest.warns(sfm.UndefinedGroupWarning, match=r"\('M', 'b'\)"):
        res = sfm.msr("fairness.acc", groups=full).evaluate(y, y, sensitive_features=sf)
    assert np.isnan(res.value) and len(res.by_group) == 4
    with pytest.warns(sfm.UndefinedGroupWarning, match="dropped"):
        assert sfm.msr("fairness.acc", undefined="drop", groups=full)(y, y, sensitive_features=sf) == 0.0


def test_intersections_of_many_levels_do_not_allocate_the_product():
    rng = np.random.default_rng(0)
    sf = pd.DataFrame({"a": rng.integers(0, 20_000, 40_000), "b": rng.integers(0, 20_000, 40_000)})
    y = rng.integers(0, 2, 40_000)
    res = sfm.msr("fairness.acc", undefined="drop").evaluate(y, y, sensitive_features=sf)
    assert len(res.by_group) == len(sf.drop_duplicates())


def test_input_types_agree():
    expected = sfm.msr("fairness.tpr")(Y, P, sensitive_features=A)
    for sf in (list(A), pd.Series(A, name="sex"), pd.Categorical(A), pd.DataFrame({"sex": A}), A.reshape(-1, 1)):
        assert sfm.msr("fairness.tpr")(list(Y), pd.Series(P), sensitive_features=sf) == expected


def test_pos_label_strings_and_minus_one():
    yt = np.where(Y == 1, ">50K", "<=50K")
    yp = np.where(P == 1, ">50K", "<=50K")
    assert sfm.msr("fairness.tpr", pos_label=">50K")(yt, yp, sensitive_features=A) == 0.5
    assert sfm.msr("fairness.tpr")(2 * Y - 1, 2 * P - 1, sensitive_features=A) == 0.5
    assert sfm.msr("fairness.tpr")(Y.astype(bool), P.astype(bool), sensitive_features=A) == 0.5


def test_metrics_on_the_classes_need_no_pos_label_rates_do():
    """Accuracy does not depend on which class is positive; a one-vs-rest rate names pos_label= and its fix."""
    yt = np.where(Y == 1, "yes", "no")
    yp = np.where(P == 1, "yes", "no")
    for key in ("classif.acc", "fairness.acc", "classif.ce"):
        assert sfm.msr(key)(yt, yp, sensitive_features=A) == sfm.msr(key)(Y, P, sensitive_features=A)
        assert sfm.msr(key)(yt, yp, sensitive_features=A) == sfm.msr(key, pos_label="no")(yt, yp, sensitive_features=A)
    macro = sfm.msr("fairness.tpr", average="macro")
    assert macro(yt, yp, sensitive_features=A) == macro(Y, P, sensitive_features=A)
    with pytest.raises(ValueError, match=r"fairness.tpr: the labels are \['no', 'yes'\]; pass pos_label="):
        sfm.msr("fairness.tpr")(yt, yp, sensitive_features=A)
    with pytest.raises(ValueError, match="pass pos_label="):  # one class seen: still no positive one implied
        sfm.msr("fairness.tpr")(np.full(Y.size, "no"), np.full(Y.size, "no"), sensitive_features=A)


def test_threshold_measures_take_scores():
    scores = np.array([0.9, 0.8, 0.7, 0.2, 0.1, 0.6, 0.3, 0.4])
    m = sfm.msr("fairness.tpr", threshold=0.5)
    assert m(Y, scores, sensitive_features=A) == 0.5
    assert m.response_method == "predict_proba"


def test_wrapped_sklearn_metrics_per_group():
    rng = np.random.default_rng(0)
    s = rng.random(400)
    y = (rng.random(400) < s).astype(int)
    a = rng.choice(["x", "y"], 400)
    auc = sfm.FairnessMeasure(roc_auc_score)
    expected = abs(roc_auc_score(y[a == "x"], s[a == "x"]) - roc_auc_score(y[a == "y"], s[a == "y"]))
    assert auc(y, s, sensitive_features=a) == pytest.approx(expected)
    assert auc.response_method == "predict_proba"
    f1 = sfm.FairnessMeasure(make_scorer(f1_score))
    yp = (s > 0.5).astype(int)
    expected = abs(f1_score(y[a == "x"], yp[a == "x"]) - f1_score(y[a == "y"], yp[a == "y"]))
    assert f1(y, yp, sensitive_features=a) == pytest.approx(expected)
    assert sfm.PerformanceMeasure(sfm.SklearnMetric(f1_score))(y, yp) == pytest.approx(f1_score(y, yp))


def test_compute_metrics_like_mlr3fairness():
    df = pd.DataFrame({"target": Y, "sex": A})
    out = sfm.compute_metrics(
        df,
        target="target",
        prediction=P,
        sensitive="sex",
        measures=["fairness.acc", "fairness.tpr", sfm.msr("classif.acc")],
    )
    assert out.to_dict() == {"fairness.acc": 0.5, "fairness.tpr": 0.5, "classif.acc": 0.75}


def test_msr_returns_fresh_copies_and_msrs_table():
    a, b = sfm.msr("fairness.tpr"), sfm.msr("fairness.tpr")
    assert a is not b
    tab = sfm.msrs()
    assert list(tab.columns) == ["key", "description", "base", "operation", "minimize", "range"]
    mlr3 = [
        "fairness.acc",
        "fairness.mse",
        "fairness.fnr",
        "fairness.fpr",
        "fairness.tnr",
        "fairness.tpr",
        "fairness.npv",
        "fairness.ppv",
        "fairness.fomr",
        "fairness.fp",
        "fairness.tp",
        "fairness.tn",
        "fairness.fn",
        "fairness.cv",
        "fairness.eod",
        "fairness.pp",
        "fairness.acc_eod=.05",
        "fairness.acc_ppv=.05",
    ]
    assert set(mlr3) <= set(tab.key)
    with pytest.raises(KeyError, match="Did you mean"):
        sfm.msr("fairness.tprr")


# --- bad input: clear errors naming the argument ------------------------------------
def test_mismatched_lengths_name_both_arguments():
    with pytest.raises(ValueError, match="y_pred has 7 samples but y_true has 8"):
        sfm.msr("fairness.tpr")(Y, P[:7], sensitive_features=A)
    with pytest.raises(ValueError, match="sensitive_features has 7 samples but y_true has 8"):
        sfm.msr("fairness.tpr")(Y, P, sensitive_features=A[:7])
    with pytest.raises(ValueError, match="sample_weight has 3 samples"):
        sfm.msr("fairness.tpr")(Y, P, sensitive_features=A, sample_weight=[1, 2, 3])


@pytest.mark.parametrize("missing", [None, np.nan, pd.NA])
def test_missing_sensitive_values_fail_loudly(missing):
    sf = pd.Series(list(A[:-1]) + [missing], name="sex", dtype=object)
    with pytest.raises(ValueError, match="sensitive feature 'sex' has 1 missing value"):
        sfm.msr("fairness.tpr")(Y, P, sensitive_features=sf)


def test_single_group_is_an_error():
    with pytest.raises(ValueError, match="single group"):
        sfm.msr("fairness.tpr")(Y, P, sensitive_features=["F"] * 8)


def test_labels_outside_binary_classes():
    with pytest.raises(ValueError, match=r"y_true and y_pred hold 3 distinct labels \(\[0, 1, 2\]\)"):
        sfm.msr("fairness.tpr")(Y, np.where(P == 1, 2, P), sensitive_features=A)
    with pytest.raises(ValueError, match="3 distinct labels"):
        sfm.msr("fairness.tpr")(Y + (np.arange(8) == 0), P, sensitive_features=A)
    with pytest.raises(ValueError, match="pass pos_label="):
        sfm.msr("fairness.tpr")(np.where(Y == 1, "y", "n"), np.where(P == 1, "y", "n"), sensitive_features=A)
    with pytest.raises(ValueError, match="y_pred holds non-label values"):
        sfm.msr("fairness.tpr")(Y, P * 0.7, sensitive_features=A)
    with pytest.raises(ValueError, match="y_true has 1 missing"):
        sfm.msr("fairness.tpr")(np.where(np.arange(8) == 2, np.nan, Y), P, sensitive_features=A)


def test_scores_outside_unit_interval():
    m = sfm.msr("fairness.tpr", threshold=0.5)
    with pytest.raises(ValueError, match=r"outside \[0, 1\]"):
        m(Y, np.linspace(-1, 1, 8), sensitive_features=A)


def test_undefined_rate_warns_with_group_and_reason():
    y = np.array([1, 1, 0, 0])
    p = np.array([1, 0, 0, 1])
    a = np.array(["F", "F", "M", "M"])  # M has no positives: its TPR is 0/0
    with pytest.warns(
        sfm.UndefinedGroupWarning, match=r"tpr is undefined for group\(s\) \['M'\] \(no positives in y_true\)"
    ):
        assert np.isnan(sfm.msr("fairness.tpr")(y, p, sensitive_features=a))
    with pytest.raises(ValueError, match="undefined for group"):
        sfm.msr("fairness.tpr", undefined="raise")(y, p, sensitive_features=a)
    assert issubclass(sfm.UndefinedGroupWarning, UndefinedMetricWarning)


def test_fold_missing_a_declared_group_is_reported():
    m = sfm.msr("fairness.tpr", groups=["F", "M", "X"])
    with pytest.warns(sfm.UndefinedGroupWarning, match="'X'"):
        assert np.isnan(m(Y, P, sensitive_features=A))
    with pytest.raises(ValueError, match="not one of the declared groups"):
        sfm.msr("fairness.tpr", groups=["F"])(Y, P, sensitive_features=A)


def test_missing_sensitive_features_says_how_to_fix():
    with pytest.raises(ValueError, match="pass sensitive_features="):
        sfm.msr("fairness.tpr")(Y, P)


def test_import_is_light():
    code = (
        "import sys, skfair_measures;"
        "bad = [m for m in ('pymc', 'arviz', 'matplotlib', 'mlflow', 'quapy', 'pytensor') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_no_warning_on_well_defined_input():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for key in ("fairness.tpr", "fairness.eod", "fairness.pp", "fairness.acc_ppv=.05"):
            sfm.msr(key)(Y, P, sensitive_features=A)


# --- bootstrap ----------------------------------------------------------------------
def test_bootstrap_interval_covers_truth_on_simulation():
    rng = np.random.default_rng(0)
    hits = 0
    for rep in range(40):
        n = 800
        a = rng.integers(0, 2, n)
        y = rng.integers(0, 2, n)
        p = np.where(y == 1, rng.random(n) < np.where(a == 1, 0.8, 0.7), rng.random(n) < 0.2).astype(int)
        res = sfm.bootstrap(
            sfm.msr("fairness.tpr", operation="diff_to_reference", reference=0),
            y,
            p,
            sensitive_features=a,
            n_boot=400,
            random_state=rep,
        )
        lo, hi = res.interval()
        hits += lo <= 0.1 <= hi
    assert hits >= 33  # nominal 95% of 40 = 38


def test_bootstrap_paths_agree_in_scale():
    rng = np.random.default_rng(1)
    n = 3000
    y, p, a = rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, 3, n)
    m = sfm.msr("fairness.eod")
    counts = sfm.bootstrap(m, y, p, sensitive_features=a, n_boot=300, random_state=0)
    rows = sfm.bootstrap(m, y, p, sensitive_features=a, sample_weight=np.ones(n), n_boot=300, random_state=0)
    assert counts.se == pytest.approx(rows.se, rel=0.25)
    reg = sfm.bootstrap(
        sfm.msr("fairness.mse"), rng.normal(size=n), rng.normal(size=n), sensitive_features=a, n_boot=50, random_state=0
    )
    assert np.isfinite(reg.draws).all()
    with pytest.raises(ValueError, match="n_boot"):
        sfm.bootstrap(m, y, p, sensitive_features=a, n_boot=1)


def test_key_override_and_result_knows_its_measure():
    for key in ("fairness.tpr", "fairness.eod", "fairness.acc_eod=.05", "classif.acc"):
        m = sfm.msr(key, key="custom")
        assert m.key == "custom"
        assert m.evaluate(Y, P, sensitive_features=A).measure is m
