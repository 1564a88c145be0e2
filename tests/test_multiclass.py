"""Multiclass confusion tensor: every count measure against scikit-learn, per group."""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    confusion_matrix,
    precision_score,
    recall_score,
)

import skfair_measures as sfm
from skfair_measures._counts import MulticlassStats
from skfair_measures._stats import check_inputs
from skfair_measures.base import BASE_METRICS, MulticlassError
from skfair_measures.multiclass import confusion_tensor, dirichlet_draws


def _data(rng, n, k, n_groups, weighted):
    yt = rng.integers(0, k, n)
    yp = np.where(rng.random(n) < 0.6, yt, rng.integers(0, k, n))
    groups = rng.choice([f"g{i}" for i in range(n_groups)], n)
    w = rng.uniform(0.1, 3, n) if weighted else None
    return yt, yp, groups, w


def _per_group(func, yt, yp, groups, w):
    out = {}
    for g in sorted(pd.unique(groups)):
        rows = groups == g
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[g] = func(yt[rows], yp[rows], None if w is None else w[rows])
    return pd.Series(out, dtype=float)


def _ovr_rates(k):
    def rates(yt, yp, w):
        tn, fp, fn, tp = confusion_matrix(yt == k, yp == k, labels=[False, True], sample_weight=w).ravel()
        return {
            "tpr": tp / (tp + fn) if tp + fn else np.nan,
            "fpr": fp / (fp + tn) if fp + tn else np.nan,
            "ppv": tp / (tp + fp) if tp + fp else np.nan,
            "selection_rate": (tp + fp) / (tp + fp + tn + fn),
        }

    return rates


SKLEARN = {
    "acc": lambda yt, yp, w: accuracy_score(yt, yp, sample_weight=w),
    "error_rate": lambda yt, yp, w: 1 - accuracy_score(yt, yp, sample_weight=w),
    "balanced_accuracy": lambda yt, yp, w: balanced_accuracy_score(yt, yp, sample_weight=w),
    "tpr_macro": lambda yt, yp, w: recall_score(yt, yp, average="macro", zero_division=np.nan, sample_weight=w),
    "tpr_weighted": lambda yt, yp, w: recall_score(yt, yp, average="weighted", zero_division=np.nan, sample_weight=w),
    "ppv_macro": lambda yt, yp, w: precision_score(yt, yp, average="macro", zero_division=np.nan, sample_weight=w),
    "ppv_weighted": lambda yt, yp, w: _ppv_weighted(yt, yp, w),
}


def _ppv_weighted(yt, yp, w):
    """sklearn's weighted precision, NaN where no class that occurs in ``yt`` is ever predicted.

    Then every precision with a weight is 0/0; sklearn averages the defined ones (weight 0) and returns 0.0,
    where the measure is undefined (a group of true labels 1, 1, 2 all predicted 0: seed 3716, n=30, k=3).
    """
    if not np.isin(np.unique(yt), yp).any():
        return np.nan
    return precision_score(yt, yp, average="weighted", zero_division=np.nan, sample_weight=w)


def _measure(name):
    if name.endswith("_macro"):
        return sfm.msr("fairness", base=name.removesuffix("_macro"), average="macro")
    if name.endswith("_weighted"):
        return sfm.msr("fairness", base=name.removesuffix("_weighted"), average="weighted")
    return sfm.msr("fairness", base=name)


def _check(name, yt, yp, groups, w):
    want = _per_group(SKLEARN[name], yt, yp, groups, w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = _measure(name).groupwise(yt, yp, sensitive_features=groups, sample_weight=w)
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", list(SKLEARN))
@pytest.mark.parametrize("weighted", [False, True])
def test_multiclass_bases_match_sklearn_per_group(name, weighted):
    rng = np.random.default_rng(7)
    yt, yp, groups, w = _data(rng, 4000, 5, 3, weighted)
    _check(name, yt, yp, groups, w)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(30, 400),
    k=st.integers(3, 20),
    n_groups=st.integers(2, 4),
    weighted=st.booleans(),
    name=st.sampled_from(list(SKLEARN)),
)
@example(seed=3716, n=30, k=3, n_groups=3, weighted=True, name="ppv_weighted")  # a group with no precision
def test_multiclass_random_data_k_up_to_20(seed, n, k, n_groups, weighted, name):
    rng = np.random.default_rng(seed)
    yt, yp, groups, w = _data(rng, n, k, n_groups, weighted)
    if len(np.unique(yt)) < 3 or len(np.unique(groups)) < 2:
        return
    _check(name, yt, yp, groups, w)


@pytest.mark.parametrize("k", [0, 2, 4])
@pytest.mark.parametrize("base", ["tpr", "fpr", "ppv", "selection_rate"])
def test_one_vs_rest_rates_via_pos_label(k, base):
    rng = np.random.default_rng(k)
    yt, yp, groups, w = _data(rng, 3000, 5, 3, True)
    want = _per_group(lambda a, b, ww: _ovr_rates(k)(a, b, ww)[base], yt, yp, groups, w)
    got = sfm.msr("fairness", base=base, pos_label=k).groupwise(yt, yp, sensitive_features=groups, sample_weight=w)
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-12)


def test_string_labels_and_registry_keys():
    rng = np.random.default_rng(1)
    yt, yp, groups, _ = _data(rng, 2000, 4, 2, False)
    names = np.array(["cat", "dog", "emu", "yak"])
    got = sfm.msr("fairness.acc")(names[yt], names[yp], sensitive_features=groups)
    assert got == sfm.msr("fairness.acc")(yt, yp, sensitive_features=groups)
    eod = sfm.msr("fairness.eod", average="macro")
    assert eod.key == "fairness.eod(average=macro)"
    assert eod(names[yt], names[yp], sensitive_features=groups) == pytest.approx(eod(yt, yp, sensitive_features=groups))


def test_rates_without_pos_label_or_average_name_the_key_and_the_fix():
    yt, yp = np.array([0, 1, 2, 2, 1, 0]), np.array([0, 2, 2, 1, 1, 0])
    with pytest.raises(MulticlassError, match=r"fairness\.tpr: .*3 distinct labels.*pos_label=.*average='macro'"):
        sfm.msr("fairness.tpr")(yt, yp, sensitive_features=list("aabbab"))
    with pytest.raises(MulticlassError, match=r"fairness\.cv: selection_rate"):
        sfm.msr("fairness.cv")(yt, yp, sensitive_features=list("aabbab"))
    with pytest.raises(ValueError, match="does not apply to 'acc'"):
        sfm.msr("fairness.acc", average="macro")
    with pytest.raises(ValueError, match="does not apply to 'selection_rate'"):
        sfm.msr("fairness.cv", average="macro")


def test_binary_data_is_unchanged_and_macro_on_two_classes_is_balanced_accuracy():
    rng = np.random.default_rng(3)
    yt, yp, groups, _ = _data(rng, 2000, 2, 3, False)
    assert isinstance(check_inputs(yt, yp, groups).confusion(), sfm.ConfusionStats)
    assert not isinstance(check_inputs(yt, yp, groups).confusion(), MulticlassStats)
    macro = sfm.msr("fairness", base="tpr", average="macro").groupwise(yt, yp, sensitive_features=groups)
    bacc = sfm.msr("fairness", base="balanced_accuracy").groupwise(yt, yp, sensitive_features=groups)
    np.testing.assert_allclose(macro.to_numpy(), bacc.to_numpy())


def test_tensor_is_additive_across_chunks_with_different_classes():
    a = confusion_tensor([0, 1, 2], [0, 1, 1], sensitive_features=["x", "y", "y"])
    b = confusion_tensor([3, 1, 2, 0], [3, 1, 2, 2], sensitive_features=["x", "z", "z", "x"])
    whole = confusion_tensor(
        [0, 1, 2, 3, 1, 2, 0], [0, 1, 1, 3, 1, 2, 2], sensitive_features=["x", "y", "y", "x", "z", "z", "x"]
    )
    merged = a + b
    order_g = merged.groups.get_indexer(whole.groups)
    order_c = merged.classes.get_indexer(whole.classes)
    np.testing.assert_array_equal(merged.counts[order_g][:, order_c][:, :, order_c], whole.counts)


def test_evaluate_stats_and_bootstrap_on_the_tensor():
    rng = np.random.default_rng(5)
    yt, yp, groups, w = _data(rng, 3000, 6, 3, False)
    m = sfm.msr("fairness.tpr", average="macro")
    stats = confusion_tensor(yt, yp, sensitive_features=groups)
    assert m.evaluate_stats(stats).value == pytest.approx(m(yt, yp, sensitive_features=groups))
    boot = sfm.bootstrap(m, yt, yp, sensitive_features=groups, n_boot=300, random_state=0)
    lo, hi = boot.interval()
    assert lo <= boot.value <= hi and np.isfinite(boot.draws).all()
    wboot = sfm.bootstrap(
        m, yt, yp, sensitive_features=groups, sample_weight=rng.uniform(0.5, 2, 3000), n_boot=30, random_state=0
    )
    assert np.isfinite(wboot.draws).all()


def test_dirichlet_posterior_centres_on_the_observed_rates():
    rng = np.random.default_rng(9)
    yt, yp, groups, _ = _data(rng, 20000, 4, 2, False)
    stats = confusion_tensor(yt, yp, sensitive_features=groups)
    draws = dirichlet_draws(stats, 2000, random_state=0)
    acc = sfm.msr("classif.acc")
    got = BASE_METRICS["acc"].from_stats(draws)[0].mean(axis=0)
    want = BASE_METRICS["acc"].from_stats(stats)[0]
    np.testing.assert_allclose(got, want, atol=0.01)
    assert acc.from_stats(draws).shape == (2000,)
    with pytest.raises(ValueError, match="prior="):
        dirichlet_draws(stats, 10, prior=0)
