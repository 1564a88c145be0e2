"""The one table of estimation methods and their options records (issue 18, items 1 and 4)."""

import dataclasses
import math

import numpy as np
import pytest

import skfair_measures as sfm
from skfair_measures import bayes, report
from skfair_measures.bayes._auto import AUTO_RULES, auto_candidates
from skfair_measures.bayes._table import METHODS, method_options, option_names
from skfair_measures.cli import _parser
from skfair_measures.results import check_prob


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.uniform(size=n)
    return (rng.uniform(size=n) < s).astype(int), s, rng.choice(["F", "M"], n)


def test_an_option_the_method_does_not_take_is_refused_by_name():
    y, s, a = _data()
    with pytest.raises(ValueError, match=r"sampler= is an option of method 'bc', 'bcr', not of method='bb'"):
        bayes.posterior(sfm.msr("fairness.tpr"), y, s, sensitive_features=a, method="bb", sampler="nonsense")
    with pytest.raises(ValueError, match=r"rectifier_scale= is an option of method 'bcr'"):
        bayes.posterior(sfm.msr("fairness.tpr"), y, s, sensitive_features=a, method="bb", rectifier_scale=-3)
    with pytest.raises(TypeError, match="unknown option.*smapler"):
        bayes.posterior(sfm.msr("fairness.tpr"), y, s, sensitive_features=a, smapler="pymc")


@pytest.mark.parametrize(
    ("method", "option", "value", "valid"),
    [
        ("bcr", "rectifier_scale", -3, "pass a positive number"),
        ("bc", "sampler", "nonsense", "pass one of 'nutpie'"),
        ("bc", "target_accept", 1.5, "in (0, 1)"),
        ("bc", "tune", 2.5, "an integer >= 0"),
        ("ppi", "lam", 2.0, "in [0, 1]"),
        ("bb", "prior", (1.0, -1.0), "two positive numbers"),
        ("bb", "prior_strength", 0, "pass a positive number"),
    ],
)
def test_a_bad_value_is_refused_by_name_before_any_fit(method, option, value, valid):
    y, s, a = _data()
    unlabeled = {} if method == "bb" else {"unlabeled_scores": s, "unlabeled_sensitive": a}
    with pytest.raises(ValueError) as err:
        bayes.posterior(
            sfm.msr("fairness.tpr"), y, s, sensitive_features=a, method=method, **unlabeled, **{option: value}
        )
    assert str(err.value).startswith(f"{option}={value!r}; ") and valid in str(err.value)


def test_auto_takes_the_options_of_the_methods_it_may_use_and_says_which_it_left():
    y, s, a = _data()
    post = bayes.posterior(
        sfm.msr("fairness.acc"), y, s, sensitive_features=a, tune=10, prior="jeffreys", random_state=0
    )
    assert post.method == "bb" and post.attrs["options_unused"] == ["tune"] and post.attrs["prior"] == "jeffreys"
    with pytest.raises(ValueError, match="rectifier_scale=-3"):  # checked even when auto chooses bb
        bayes.posterior(sfm.msr("fairness.acc"), y, s, sensitive_features=a, rectifier_scale=-3)


def test_every_place_reads_the_one_table():
    assert list(METHODS) == ["auto", "bb", "bc", "bcr", "ppi", "guaranteed"]
    assert all(m in METHODS and METHODS[m].options is not None for _, m, _ in AUTO_RULES)
    assert set(auto_candidates()) == {"bb", "ppi", "bcr"}
    assert report.POSTERIOR_METHODS == tuple(METHODS)
    audit = _parser()._subparsers._group_actions[0].choices["audit"]
    (action,) = [x for x in audit._actions if "--posterior" in x.option_strings]
    assert tuple(action.choices) == tuple(METHODS)
    for name, spec in METHODS.items():
        assert spec.summary in action.help
        assert name != "auto" or spec.options is None
    # the capabilities the entry points check are the table's
    assert [m for m, spec in METHODS.items() if spec.weights and spec.options] == ["ppi", "guaranteed"]
    assert [m for m, spec in METHODS.items() if spec.multiclass] == ["bb"]


def test_posterior_documents_every_option_of_every_method():
    for option, methods in option_names().items():
        assert f"``{option}``" in bayes.posterior.__doc__, (option, methods)
    for spec in METHODS.values():
        for record in (spec.options, spec.multiclass):
            if record is not None:
                assert dataclasses.is_dataclass(record) and record.__dataclass_params__.frozen


def test_k_class_form_takes_only_its_options_and_a_group_without_rows_is_undefined():
    y = np.array([0, 1, 2] * 20)
    a = np.array(["F", "M"] * 30)
    with pytest.raises(ValueError, match="prior_strength= is an option of method 'bb', not of method='bb' on K"):
        bayes.posterior(sfm.msr("fairness.acc"), y, y, sensitive_features=a, method="bb", prior_strength=3.0)
    assert method_options("bb", {"prior": "jeffreys"}, multiclass=True).prior == "jeffreys"
    with pytest.warns(sfm.UndefinedGroupWarning):
        post = bayes.posterior(
            sfm.msr("fairness.acc", groups=["F", "M", "X"]), y, y, sensitive_features=a, method="bb", random_state=0
        )
    assert math.isnan(post.value) and "group(s) ['X']" in post.reason and post.rope().verdict is None


def test_ppi_group_with_zero_weights_is_undefined_naming_the_weights():
    """Issue 18: a group whose weights are all zero raised numpy's ZeroDivisionError."""
    rng = np.random.default_rng(0)
    g, s = rng.integers(0, 2, 300), rng.uniform(size=300)
    y = (rng.uniform(size=300) < s).astype(int)
    w = np.where(g == 1, 0.0, 1.0)
    lab = dict(
        sensitive_features=g[:100], method="ppi", unlabeled_scores=s[100:], unlabeled_sensitive=g[100:], random_state=0
    )
    for weights, name in (
        ({"sample_weight": w[:100]}, "sample_weight"),
        ({"unlabeled_sample_weight": w[100:]}, "unlabeled_sample_weight"),
    ):
        with pytest.warns(sfm.UndefinedGroupWarning):
            post = bayes.posterior(sfm.msr("fairness.acc"), y[:100], s[:100], **lab, **weights)
        assert math.isnan(post.value) and post.rope().verdict is None
        assert f"acc in group(s) [1] is undefined: its {name} sums to 0" in post.reason


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.1, float("nan"), True, "0.95", None])
def test_one_level_check(bad):
    with pytest.raises(ValueError, match=r"prob=.*; pass a probability in \(0, 1\)"):
        check_prob(bad)
    assert check_prob(np.float32(0.5)) == 0.5


def test_docs_method_table_is_the_method_table():
    """docs/bayes.md shows METHODS as methods_markdown() renders it (regenerate the block when the table changes)."""
    from pathlib import Path

    from skfair_measures.bayes._table import METHODS, methods_markdown

    doc = (Path(__file__).parents[1] / "docs" / "bayes.md").read_text()
    start = doc.index("<!-- methods table: generated by skfair_measures.bayes._table.methods_markdown -->")
    block = doc[start : doc.index("<!-- end of methods table -->")].splitlines()[1:]
    assert "\n".join(block).strip() == methods_markdown()
    assert [line.split("|")[1].strip().strip('`"') for line in block[2:] if line] == list(METHODS)
