"""Estimates without the sensitive attribute that say when they cannot be trusted (issue 10, items 5-6).

Refusals that name the argument, reliability checks that fire on proxies breaking
HOC's assumptions and stay silent on proxies that meet them, values that never leave
[0, 1], the labeled calibration, seeded quantification, the one-hot default
classifier, and pickle round trips of measures, results and scorers.
"""

from __future__ import annotations

import pickle
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

import skfair_measures as sfm
from skfair_measures import datasets, unaware
from skfair_measures.measures import MeasureBase, UndefinedGroupWarning
from skfair_measures.results import NoIntervalError, Result
from skfair_measures.unaware import (
    ProxyReliabilityWarning,
    labeled_proxy_disparity,
    proxy_disparity,
    quantified_disparity,
)

FAST = unaware.HOCEstimator(n_init=1)


def _population(n=20_000, seed=0, p1=0.35):
    rng = np.random.default_rng(seed)
    a = (rng.random(n) < p1).astype(int)
    y_pred = (rng.random(n) < np.where(a == 1, 0.5, 0.2)).astype(int)
    return rng, a, y_pred


def _true_dp(a, y_pred):
    return abs(y_pred[a == 1].mean() - y_pred[a == 0].mean())


def _iid_proxies(rng, a, accuracy=0.8):
    return np.where(rng.random((a.size, 3)) < accuracy, a[:, None], 1 - a[:, None])


def _unlike_proxies(rng, a):
    """Conditionally independent but not identically distributed: the third rarely guesses group 1."""
    Ts = [[[0.9, 0.1], [0.3, 0.7]], [[0.8, 0.2], [0.25, 0.75]], [[0.99, 0.01], [0.85, 0.15]]]
    return np.stack([(rng.random(a.size) < np.asarray(T)[a, 1]).astype(int) for T in Ts], axis=1)


def _shared_error_proxies(rng, a):
    """Errors that move together: one shared flip for all proxies on 20% of the rows."""
    flip = (rng.random(a.size) < 0.2)[:, None] | (rng.random((a.size, 3)) < 0.1)
    return np.where(flip, 1 - a[:, None], a[:, None])


# ------------------------------------------------------------------ refusals
def test_refusals_name_the_argument():
    rng, a, y_pred = _population(2_000)
    proxies = _iid_proxies(rng, a)
    with pytest.raises(ValueError, match=r"y_pred holds non-integer numbers \(e.g. 0.\d+"):
        proxy_disparity(rng.random(a.size), proxies)
    with pytest.raises(ValueError, match="proxies column 'proxy_1' holds non-integer numbers"):
        proxy_disparity(y_pred, np.column_stack([proxies[:, 0], rng.random(a.size), proxies[:, 2]]))
    with pytest.raises(ValueError, match="proxies column 'proxy_2' guesses the same group \\(0\\) for every row"):
        proxy_disparity(y_pred, np.column_stack([proxies[:, :2], np.zeros(a.size, int)]))
    with pytest.raises(ValueError, match=r"proxies column 'proxy_2' guesses \[5, 6\] but the other columns guess"):
        proxy_disparity(y_pred, np.column_stack([proxies[:, :2], proxies[:, 2] + 5]))
    outside = proxies.copy()
    outside[3, 0] = 5
    with pytest.raises(ValueError, match=r"column 'proxy_0' holds value\(s\) \[5\], not one of the declared"):
        proxy_disparity(y_pred, outside, groups=[0, 1])
    # the same coding everywhere is fine (5/6 for both groups)
    assert 0 <= proxy_disparity(y_pred, proxies + 5, n_check=0, estimator=FAST).value <= 1
    with pytest.raises(ValueError, match=r"sensitive holds value\(s\) \['x'\], not one of the declared groups"):
        labeled_proxy_disparity(y_pred, proxies, np.where(np.arange(a.size) < 5, "x", None))
    with pytest.raises(ValueError, match="sensitive has no known value"):
        labeled_proxy_disparity(y_pred, proxies, [None] * a.size)
    with pytest.raises(ValueError, match="n_check must be an integer >= 0"):
        proxy_disparity(y_pred, proxies, n_check=-1)


@pytest.mark.parametrize("bad", [95, "0.9", True, float("nan"), 0.0])
def test_every_unaware_estimate_checks_prob_through_the_one_level_check(bad):
    """The level is ``prob``, as in the rest of the API, with results.check_prob's rule and message."""
    rng, a, y_pred = _population(400)
    proxies = _iid_proxies(rng, a)
    sensitive = np.where(np.arange(a.size) < 100, a, None)
    X = rng.normal(size=(a.size, 2)) + a[:, None]
    model = LogisticRegression().fit(X, y_pred)
    message = re.escape(f"prob={bad!r}; pass a probability in (0, 1)")
    calls = {
        "proxy_disparity": lambda **kw: proxy_disparity(y_pred, proxies, **kw),
        "labeled_proxy_disparity": lambda **kw: labeled_proxy_disparity(y_pred, proxies, sensitive, **kw),
        "quantified_disparity": lambda **kw: quantified_disparity(model, X, a, X, **kw),
    }
    for call in calls.values():
        with pytest.raises(ValueError, match=message):
            call(prob=bad)
        with pytest.raises(TypeError, match="confidence_level"):  # one name for a level
            call(confidence_level=0.9)


@pytest.mark.parametrize("seed", range(6))
def test_proxy_dp_never_leaves_the_unit_interval(seed):
    # random proxies used to give 2112.6 or 10^5; now a value in [0, 1] or NaN with the reason
    rng, _, y_pred = _population(3_000, seed=seed)
    random = rng.integers(0, 2, (y_pred.size, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = proxy_disparity(y_pred, random, random_state=seed, n_check=30, estimator=FAST)
    if np.isnan(res.value):
        assert "outside [0, 1]" in res.reason and not res.reliable
        assert any(issubclass(w.category, UndefinedGroupWarning) for w in caught)
    else:
        assert 0.0 <= res.value <= 1.0 and res.reason is None
    assert ((res.by_group.to_numpy() >= 0) & (res.by_group.to_numpy() <= 1) | res.by_group.isna().to_numpy()).all()
    assert not res.reliable  # random guesses never pass the checks
    assert any(issubclass(w.category, ProxyReliabilityWarning) for w in caught)


# ------------------------------------------------------------------ reliability checks
def test_checks_fire_on_proxies_that_break_hoc_assumptions():
    rng, a, y_pred = _population()
    with pytest.warns(ProxyReliabilityWarning, match="labeled_proxy_disparity") as caught:
        res = proxy_disparity(y_pred, _unlike_proxies(rng, a), random_state=0)
    assert not res.reliable and len(res.reasons) >= 2
    checks = res.diagnostics["reliability"]["global"]
    assert not checks["moments"]["passed"] and checks["moments"]["p_value"] < 0.01
    assert not checks["diagonal"]["passed"] and not checks["prior"]["passed"]
    assert "not diagonally dominant" in str(caught[0].message)
    assert res.to_dict()["reliable"] is False and res.to_dict()["reasons"] == res.reasons
    with pytest.warns(ProxyReliabilityWarning, match="HOCEstimator: the fitted T_ and p_ are unreliable"):
        hoc = unaware.HOCEstimator(random_state=0).fit(_unlike_proxies(rng, a))
    assert not hoc.reliability_["passed"] and not hoc.reliability_["moments"]["passed"]


def test_checks_are_silent_on_independent_identical_proxies():
    rng, a, y_pred = _population()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProxyReliabilityWarning)
        res = proxy_disparity(y_pred, _iid_proxies(rng, a), random_state=0)
    assert res.reliable and res.reasons == []
    assert res.diagnostics["reliability"]["global"]["moments"]["passed"]
    assert res.value == pytest.approx(_true_dp(a, y_pred), abs=0.02)
    assert unaware.HOCEstimator(random_state=0).fit(_iid_proxies(rng, a)).reliability_["passed"]


@pytest.mark.parametrize("metric", ["eod", "eop"])
def test_checks_cover_the_fits_of_the_priors(metric):
    rng, a, y_pred = _population(30_000, seed=3)
    y_true = (rng.random(a.size) < 0.5).astype(int)
    with pytest.warns(ProxyReliabilityWarning, match="y_true=1"):
        res = proxy_disparity(y_pred, _unlike_proxies(rng, a), metric, y_true=y_true, random_state=0, n_check=30)
    names = set(res.diagnostics["reliability"])
    assert {"global", "y_true=0", "y_true=1"} <= names and not res.reliable
    assert set(res.diagnostics["reliability"]["y_true=0"]) >= {"moments", "prior"}


def test_shared_errors_fool_hoc_but_not_the_labeled_calibration():
    # with three proxies of two groups HOC's fit is exact whatever the dependence:
    # independence cannot be tested there, and the labeled sample is the way out
    rng, a, y_pred = _population(30_000, seed=4)
    proxies = _shared_error_proxies(rng, a)
    truth = _true_dp(a, y_pred)
    hoc = proxy_disparity(y_pred, proxies, random_state=0, n_check=30)
    assert abs(hoc.value - truth) > 0.08
    sensitive = pd.Series(np.where(rng.random(a.size) < 0.03, a, None))
    res = labeled_proxy_disparity(y_pred, proxies, sensitive, n_boot=300, random_state=0)
    assert res.mode == "labeled" and res.reliable
    assert res.value == pytest.approx(truth, abs=0.05)
    lo, hi = res.interval()
    assert lo < truth < hi
    assert res.diagnostics["n_labeled"] == int(sensitive.notna().sum())


def test_labeled_calibration_covers_in_repeated_runs():
    hits = []
    for seed in range(40):
        rng, a, y_pred = _population(5_000, seed=100 + seed)
        proxies = _shared_error_proxies(rng, a)
        sensitive = np.where(rng.random(a.size) < 0.1, a, None)
        res = labeled_proxy_disparity(y_pred, proxies, sensitive, n_boot=200, random_state=seed)
        lo, hi = res.interval()
        hits.append(lo <= _true_dp(a, y_pred) <= hi)
    assert 0.85 <= np.mean(hits) <= 1.0


def test_labeled_eod_and_undefined_cell():
    rng, a, y_pred = _population(20_000, seed=5)
    y_true = (rng.random(a.size) < 0.4).astype(int)
    proxies = _shared_error_proxies(rng, a)
    sensitive = np.where(rng.random(a.size) < 0.1, a, None)
    res = labeled_proxy_disparity(y_pred, proxies, sensitive, "eod", y_true)
    rates = [[y_pred[(a == g) & (y_true == y)].mean() for y in (0, 1)] for g in (0, 1)]
    truth = (abs(rates[1][0] - rates[0][0]) + abs(rates[1][1] - rates[0][1])) / 2
    assert res.value == pytest.approx(truth, abs=0.05)
    # no labeled row among the predicted positives: the shares there are unknown
    only_negatives = np.where(y_pred == 0, sensitive, None)
    with pytest.warns(UndefinedGroupWarning, match="no labeled row has y_pred=1"):
        undefined = labeled_proxy_disparity(y_pred, proxies, only_negatives)
    assert np.isnan(undefined.value) and "label more rows" in undefined.reason


def test_too_few_labels_per_group_is_unreliable():
    rng, a, y_pred = _population(5_000, seed=6)
    sensitive = np.where(np.arange(a.size) < 40, a, None)
    with pytest.warns(ProxyReliabilityWarning, match="labeled row"):
        res = labeled_proxy_disparity(y_pred, _iid_proxies(rng, a), sensitive)
    assert not res.reliable


# ------------------------------------------------------------------ result interface
def test_proxy_result_is_a_result():
    rng, a, y_pred = _population(5_000)
    res = proxy_disparity(y_pred, _iid_proxies(rng, a), n_boot=40, random_state=1, estimator=FAST)
    assert isinstance(res, Result) and res.kind == "estimate"
    assert res.draws.shape == (40,)
    lo, hi = res.interval(0.9)
    assert lo <= res.value <= hi and res.interval(0.5)[0] >= lo
    assert res.key == "unaware.proxy_dp" and res.reason is None
    with pytest.raises(NoIntervalError):
        proxy_disparity(y_pred, _iid_proxies(rng, a), n_check=0, estimator=FAST).interval()


def test_measures_follow_the_protocol():
    pm = sfm.msr("unaware.proxy_eod")
    assert isinstance(pm, MeasureBase)
    assert pm.inputs.needs_sensitive is False and pm.minimize is True and pm.ideal == 0.0 and not pm.signed
    assert pm.range == (0.0, 1.0) and pm.leaves() == [pm]
    assert unaware.ProxyMeasure("dp", "local").key == "unaware.proxy_dp(mode=local)"
    qm = sfm.msr("unaware.quantified_dp", absolute=False)
    assert qm.signed and qm.minimize is None and qm.range == (-1.0, 1.0) and qm.ideal == 0.0
    assert qm.key != sfm.msr("unaware.quantified_dp").key


# ------------------------------------------------------------------ quantification
def _quant_setting(seed=0, n=3_000):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    X = rng.normal(s[:, None] * [1.0, 0.7], 1.0, size=(n, 2))
    y = (X.sum(1) + rng.normal(0, 1, n) > 1).astype(int)
    model = LogisticRegression().fit(X[:1000], y[:1000])
    return model, X[1000:1600], s[1000:1600], X[1600:]


@pytest.mark.parametrize("quantifier", ["PACC", "HDy", "ACC"])
def test_quantification_same_data_same_answer(quantifier):
    model, X_aux, s_aux, X_dep = _quant_setting()
    first = quantified_disparity(model, X_aux, s_aux, X_dep, quantifier=quantifier)
    again = quantified_disparity(model, X_aux, s_aux, X_dep, quantifier=quantifier)
    assert first.value == again.value  # the default random_state=0 seeds every split
    seeded = {
        quantified_disparity(model, X_aux, s_aux, X_dep, quantifier=quantifier, random_state=r).value for r in range(5)
    }
    assert len(seeded) > 1  # the splits do depend on the seed


def test_seed_reaches_the_classifier_inside_the_quantifier():
    from sklearn.ensemble import RandomForestClassifier

    model, X_aux, s_aux, X_dep = _quant_setting(1)
    forest = RandomForestClassifier(n_estimators=10)  # random_state=None
    a = quantified_disparity(model, X_aux, s_aux, X_dep, quantifier="PCC", classifier=forest)
    b = quantified_disparity(model, X_aux, s_aux, X_dep, quantifier="PCC", classifier=forest)
    assert a.value == b.value
    a = quantified_disparity(model, X_aux, s_aux, X_dep, n_boot=5)
    b = quantified_disparity(model, X_aux, s_aux, X_dep, n_boot=5)
    np.testing.assert_array_equal(a.draws, b.draws)


def test_default_classifier_one_hot_encodes_adult_strings():
    X, y, A = datasets.load_adult(return_X_y_A=True)
    X = X.drop(columns=["sex"]).iloc[:9_000]
    y, sex = y.iloc[:9_000], A["sex"].iloc[:9_000]
    numeric = X.select_dtypes("number")
    model = LogisticRegression(max_iter=1000).fit(numeric.iloc[:3_000], y.iloc[:3_000])

    class OnNumeric:  # the audited model sees the numeric columns of the same frame
        classes_ = model.classes_

        def predict(self, frame):
            return model.predict(frame[numeric.columns])

    audited = OnNumeric()
    res = quantified_disparity(
        audited, X.iloc[3_000:5_000], sex.iloc[3_000:5_000], X.iloc[5_000:], quantifier="PACC", reference="Male"
    )
    pred = audited.predict(X.iloc[5_000:])
    s = sex.iloc[5_000:].to_numpy()
    truth = pred[s == "Female"].mean() - pred[s == "Male"].mean()
    assert res.value == pytest.approx(truth, abs=0.05)
    # a classifier without an encoder gets an error that says what to pass
    with pytest.raises(ValueError, match="pass classifier= a pipeline that encodes them"):
        quantified_disparity(
            audited, X.iloc[3_000:5_000], sex.iloc[3_000:5_000], X.iloc[5_000:], classifier=LogisticRegression()
        )


# ------------------------------------------------------------------ pickling
def test_pickle_round_trips_of_measures_results_and_scorers():
    rng, a, y_pred = _population(4_000, seed=7)
    proxies = _iid_proxies(rng, a)
    frame = pd.DataFrame(proxies, columns=["p1", "p2", "p3"]).assign(x=rng.normal(size=a.size))
    pm = sfm.msr("unaware.proxy_dp", estimator=FAST, n_check=0, random_state=0)
    res = pm.bootstrap(None, y_pred, proxies=proxies, n_boot=20)
    model, X_aux, s_aux, X_dep = _quant_setting(2)
    qm = sfm.msr("unaware.quantified_dp", X_aux=X_aux, s_aux=s_aux, quantifier="CC")
    qres = qm.bootstrap(model, X_dep, n_boot=5)
    lab = labeled_proxy_disparity(y_pred, proxies, np.where(rng.random(a.size) < 0.2, a, None), n_boot=20)

    class Fixed:
        def predict(self, X):
            return y_pred

    for obj in (pm, qm, res, qres, lab, sfm.fairness_scorer(pm, ["p1", "p2", "p3"]), sfm.fairness_scorer(qm)):
        back = pickle.loads(pickle.dumps(obj))
        assert type(back) is type(obj)
    assert pickle.loads(pickle.dumps(pm))(None, y_pred, proxies=proxies) == pytest.approx(res.value)
    back = pickle.loads(pickle.dumps(res))
    assert back.interval() == res.interval() and back.to_dict() == res.to_dict()
    assert pickle.loads(pickle.dumps(qres)).interval() == qres.interval()
    scorer = pickle.loads(pickle.dumps(sfm.fairness_scorer(pm, ["p1", "p2", "p3"])))
    assert scorer(Fixed(), frame, None) == pytest.approx(-res.value)
    assert pickle.loads(pickle.dumps(sfm.fairness_scorer(qm)))(model, X_dep) == pytest.approx(-qm(model, X_dep))


# -- proxies that are one proxy counted twice -------------------------------------------------


def _copied_proxies(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    y_pred = (rng.random(n) < np.where(a == 1, 0.6, 0.3)).astype(int)
    guess = np.where(rng.random(n) < 0.75, a, 1 - a)
    return rng, a, y_pred, guess


def test_identical_proxy_columns_are_unreliable_naming_the_columns():
    _, _, y_pred, guess = _copied_proxies()
    proxies = pd.DataFrame({"zip": guess, "name": guess, "zip_copy": guess})
    with pytest.warns(ProxyReliabilityWarning, match=r"'zip' and 'name'.*same guess on every row"):
        res = unaware.proxy_disparity(y_pred, proxies, metric="dp", n_check=0, random_state=0)
    assert not res.reliable
    assert res.diagnostics["proxy_dependence"]["pairs"] == [("zip", "name"), ("zip", "zip_copy"), ("name", "zip_copy")]
    # the same guesses under swapped names are as dependent; a third, independent column is not
    third = np.random.default_rng(1).integers(0, 2, guess.size)
    codes = np.column_stack([guess, 1 - guess, third])
    assert unaware._reliability.dependent_proxies(codes, ["a", "b", "c"])["pairs"] == [("a", "b")]


def test_independent_proxies_pass_the_dependence_check():
    rng, a, y_pred, _ = _copied_proxies()
    proxies = np.column_stack([np.where(rng.random(a.size) < 0.75, a, 1 - a) for _ in range(3)])
    res = unaware.proxy_disparity(y_pred, proxies, metric="dp", n_check=0, random_state=0)
    assert res.diagnostics["proxy_dependence"] == {"passed": True, "pairs": []}
    assert not any("same guess" in r for r in res.reasons)
