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
from skfair_measures._groups import SingleGroupError
from skfair_measures._undefined import UndefinedGroupWarning as UndefinedWarning


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


def test_audit_takes_a_pos_label_that_only_y_true_holds_as_the_measure_does(tmp_path, capsys):
    from skfair_measures.cli import main

    # 3 classes; the positive class 1 is in y_true only: the measure is one class against the rest
    y, p, s = (0, 1), (0, 2), ("a", "b")
    with pytest.warns(UndefinedWarning):
        res = sfm.msr("fairness.tpr", pos_label=1).evaluate(y, p, sensitive_features=list(s))
    path = tmp_path / "case.csv"
    _frame(y, p, s).to_csv(path, index=False)
    argv = [
        "audit",
        str(path),
        "--sensitive",
        "s",
        "--label",
        "y",
        "--prediction",
        "p",
        "--measures",
        "fairness.tpr",
        "--pos-label",
        "1",
        "--no-progress",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert np.isnan(res.value) and "fairness.tpr undefined [1]" in out and f"[1] fairness.tpr: {res.reason}" in out
    # a pos_label absent from two classes is refused by both, as scikit-learn refuses it
    _frame((0, 1), (0, 1), s).to_csv(path, index=False)
    with pytest.raises(ValueError, match="pos_label=2 is not one of the labels"):
        sfm.msr("fairness.tpr", pos_label=2)((0, 1), (0, 1), sensitive_features=list(s))
    argv[argv.index("1")] = "2"
    assert main(argv) == 2
    assert "--pos-label 2 is not one of the labels" in capsys.readouterr().err


def test_each_measure_in_a_joint_evaluation_gives_what_it_gives_alone():
    y, p, a = [1, 0, 1, 0], [1, 0, 0, 0], ["a"] * 4
    tpr = sfm.msr("fairness.tpr", groups=["a", "absent"])
    acc = sfm.msr("classif.acc")
    with pytest.warns(UndefinedWarning, match=r"\['absent'\]"):
        alone = tpr.evaluate(y, p, sensitive_features=a)
    assert acc(y, p, sensitive_features=a) == 0.75  # compares no groups: a single group is fine
    for order in ([tpr, acc], [acc, tpr]):
        with pytest.warns(UndefinedWarning):
            res = sfm.evaluate_measures(order, y, p, sensitive_features=a)
        assert np.isnan(res[tpr.key].value) and res[tpr.key].reason == alone.reason
        assert res[acc.key].value == 0.75
    # a measure that compares groups still refuses one group, also beside one that compares none
    for order in (["classif.acc", "fairness.tpr"], ["fairness.tpr", "classif.acc"]):
        with pytest.raises(SingleGroupError):
            sfm.evaluate_measures(order, y, p, sensitive_features=a)
        with pytest.raises(SingleGroupError):
            sfm.evaluate_measures(order, np.asarray(y), np.asarray(p), sensitive_features=np.zeros(4, int))


@pytest.mark.parametrize("convert", ["pandas", "polars"])
def test_engines_take_one_group_for_a_measure_that_compares_none(convert):
    data = _frame([1, 0, 1, 0], [1, 0, 0, 0], "aaaa")
    if convert == "polars":
        data = pytest.importorskip("polars").from_pandas(data)
    assert engines.compute_metrics(data, "y", "p", "s", ["classif.acc"])["classif.acc"] == 0.75
    for keys in (["classif.acc", "fairness.tpr"], ["fairness.tpr", "classif.acc"]):
        with pytest.raises(SingleGroupError):
            engines.compute_metrics(data, "y", "p", "s", keys)


def test_bb_refuses_unlabeled_scores_it_would_not_read():
    pytest.importorskip("arviz")
    from skfair_measures.bayes import posterior

    y, s, a = [1, 0, 1, 0, 1, 0], [0.9, 0.2, 0.7, 0.4, 0.6, 0.1], list("aaabbb")
    pool = {"unlabeled_scores": [0.3, 0.8], "unlabeled_sensitive": ["a", "b"]}
    m = sfm.msr("fairness.tpr")
    with pytest.raises(ValueError, match=r"method='bb' does not read unlabeled_scores .* prior='scores'.*'bcr'"):
        posterior(m, y, s, sensitive_features=a, method="bb", random_state=0, **pool)
    post = posterior(m, y, s, sensitive_features=a, method="bb", prior="scores", random_state=0, **pool)
    assert "options_unused" not in post.attrs  # read by the prior


def _many_groups_without_positives(n_groups: int = 30):
    """Two groups with labels of both kinds, then ``n_groups`` groups whose y_true holds no positive."""
    groups = ["g0"] * 40 + ["g1"] * 40 + [f"z{k:02d}" for k in range(n_groups) for _ in range(2)]
    y = np.array([1, 0] * 40 + [0] * (2 * n_groups))
    scores = np.where(y == 1, 0.8, 0.3)
    return y, scores, np.array(groups)


@pytest.mark.parametrize("method", ["bb", "ppi"])
def test_bayes_reasons_name_ten_groups_and_count_the_rest(method):
    pytest.importorskip("arviz")
    from skfair_measures.bayes import posterior

    y, s, a = _many_groups_without_positives()
    unl = {} if method == "bb" else {"unlabeled_scores": s, "unlabeled_sensitive": a}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        post = posterior(sfm.msr("fairness.tpr"), y, s, sensitive_features=a, method=method, random_state=0, **unl)
    assert "and 20 more" in post.reason and "'z29'" not in post.reason
    for w in caught:  # the undefined warning and PPI's asymptotic warning name ten groups at most
        assert "'z29'" not in str(w.message), str(w.message)
    assert any("and 20 more" in str(w.message) for w in caught)
    if method == "ppi":
        assert any("labeled rows" in str(w.message) and "more" in str(w.message) for w in caught)


def test_multiclass_posterior_reason_names_ten_groups_and_counts_the_rest():
    pytest.importorskip("arviz")
    from skfair_measures.bayes import posterior

    y, a = np.array([0, 1, 2] * 20), np.array(["g0", "g1"] * 30)  # three classes: the Dirichlet posterior
    m = sfm.msr("fairness.acc", groups=["g0", "g1", *(f"z{k:02d}" for k in range(30))])  # 30 absent groups
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = posterior(m, y, y, sensitive_features=a, method="bb", random_state=0)
    assert "and 20 more" in post.reason and "'z29'" not in post.reason, post.reason
