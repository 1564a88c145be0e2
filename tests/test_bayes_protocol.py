"""Posteriors and the measure protocol: NaN discipline, inputs from the measure, errors, pickling."""

import ast
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest

import skfair_measures as sfm
from skfair_measures import bayes
from skfair_measures.bayes import DEFAULT_EPS, BayesianScorer, MeasurePosterior, SamplingWarning
from skfair_measures.measures import UndefinedGroupWarning
from skfair_measures.results import Result

BAYES = Path(sfm.__file__).parent / "bayes"


def _no_positive_predictions(seed=0, n_l=60, n_u=2000):
    """Group 'F' never gets a positive prediction, so its PPV is undefined in every draw."""
    rng = np.random.default_rng(seed)
    a = rng.choice(["F", "M"], n_l + n_u)
    s = np.where(a == "F", rng.uniform(0.0, 0.4, a.size), rng.uniform(size=a.size))
    y = (rng.uniform(size=a.size) < s).astype(int)
    lab = dict(y_true=y[:n_l], y_score=s[:n_l], sensitive_features=a[:n_l])
    return lab, dict(unlabeled_scores=s[n_l:], unlabeled_sensitive=a[n_l:])


def _check_undefined(post):
    assert isinstance(post, Result) and post.kind == "posterior"
    assert not post.defined and np.isnan(post.value)
    assert "F" in post.reason
    for v in (
        post.mean(),
        post.median(),
        post.sd(),
        post.prob_greater(0.0),
        post.prob_less(0.0),
        post.prob_within(),
        post.prob_within(0.5),
        post.upper_bound(),
    ):
        assert np.isnan(v)
    assert np.isnan(post.interval(0.95)).all() and np.isnan(post.interval(0.9, kind="hdi")).all()
    r = post.rope()
    assert r.verdict is None and np.isnan(r.probability) and str(r).startswith("no verdict")
    assert "practically fair" not in str(r)
    table = post.table()
    assert table.iloc[0].isna().all()
    assert table.loc["ppv[F]"].isna().all()
    assert np.isnan(post.group_summary().loc["F"]).all()
    assert np.isnan(post.by_group.loc["F"])
    d = post.to_dict()
    assert d["value"] is None and d["reason"] == post.reason
    assert d["lower"] is None and d["prob_within"] is None and d["prob_greater"] is None
    assert d["groups"] == ["F", "M"] and d["by_group"][0] is None
    assert "undefined" in repr(post)


def test_undefined_ppi_posterior_gives_no_number_anywhere():
    lab, unl = _no_positive_predictions()
    with pytest.warns(UndefinedGroupWarning, match=r"ppv in group\(s\) \['F'\]"):
        post = bayes.posterior(sfm.msr("fairness.ppv"), **lab, method="ppi", random_state=0, **unl)
    _check_undefined(post)


def test_undefined_bc_posterior_is_not_practically_fair():
    """The issue's example: an all-NaN BC posterior for fairness.ppv said 'practically fair with probability 1'."""
    pytest.importorskip("nutpie")
    lab, unl = _no_positive_predictions()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        with pytest.warns(UndefinedGroupWarning, match="4000 of 4000|200 of 200"):
            post = bayes.posterior(
                sfm.msr("fairness.ppv"), **lab, method="bc", chains=2, tune=100, n_draws=100, random_state=0, **unl
            )
    assert np.isnan(post.chain_draws).all()
    _check_undefined(post)
    assert pickle.loads(pickle.dumps(post)).reason == post.reason


def test_scorer_of_an_undefined_posterior_is_nan():
    pd = pytest.importorskip("pandas")
    from sklearn.dummy import DummyClassifier

    lab, unl = _no_positive_predictions()
    X = pd.DataFrame({"x": lab["y_score"], "sex": lab["sensitive_features"]})
    clf = DummyClassifier(strategy="stratified", random_state=0).fit(X, lab["y_true"])
    Xu = pd.DataFrame({"x": unl["unlabeled_scores"], "sex": unl["unlabeled_sensitive"]})

    class Scores:  # an estimator whose probabilities are the simulated scores
        classes_ = np.array([0, 1])

        def predict_proba(self, X):
            return np.c_[1 - X["x"].to_numpy(), X["x"].to_numpy()]

    for rule in ("mean", "upper", "prob_fair"):
        scorer = BayesianScorer("fairness.ppv", method="ppi", rule=rule, sensitive="sex", unlabeled_X=Xu)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedGroupWarning)
            assert np.isnan(scorer(Scores(), X, lab["y_true"]))
    assert clf is not None
    assert BayesianScorer("fairness.acc").eps == DEFAULT_EPS


def test_one_eps_default_everywhere():
    import inspect

    from skfair_measures.bayes import _posterior

    for f in (
        MeasurePosterior.table,
        MeasurePosterior.prob_within,
        MeasurePosterior.rope,
        BayesianScorer.__init__,
    ):
        assert inspect.signature(f).parameters["eps"].default == DEFAULT_EPS == _posterior.DEFAULT_EPS == 0.05


# -------------------------------------------------------------- inputs come from the measure


def _sample(n=400, seed=1):
    rng = np.random.default_rng(seed)
    a = rng.choice(["F", "M"], n)
    s = rng.uniform(size=n)
    y = (rng.uniform(size=n) < s).astype(int)
    return y, s, a


@pytest.mark.parametrize("method", ["bb", "ppi"])
def test_threshold_of_the_measure_is_used(method):
    """Regression: msr('fairness.eod', threshold=0.3).posterior(...) sampled at 0.5."""
    y, s, a = _sample()
    unl = dict(unlabeled_scores=s[200:], unlabeled_sensitive=a[200:]) if method == "ppi" else {}
    at_03 = bayes.posterior(
        sfm.msr("fairness.eod", threshold=0.3),
        y[:200],
        s[:200],
        sensitive_features=a[:200],
        method=method,
        random_state=0,
        **unl,
    )
    explicit = bayes.posterior(
        sfm.msr("fairness.eod"),
        y[:200],
        s[:200],
        sensitive_features=a[:200],
        method=method,
        threshold=0.3,
        random_state=0,
        **unl,
    )
    at_05 = bayes.posterior(
        sfm.msr("fairness.eod"), y[:200], s[:200], sensitive_features=a[:200], method=method, random_state=0, **unl
    )
    assert at_03.attrs["threshold"] == 0.3 and at_05.attrs["threshold"] == 0.5
    assert np.allclose(at_03.draws, explicit.draws)
    assert not np.allclose(at_03.draws, at_05.draws)
    with pytest.warns(UserWarning, match="threshold=0.6 overrides the threshold of the measure"):
        over = bayes.posterior(
            sfm.msr("fairness.eod", threshold=0.3),
            y[:200],
            s[:200],
            sensitive_features=a[:200],
            method=method,
            threshold=0.6,
            random_state=0,
            **unl,
        )
    assert over.attrs["threshold"] == 0.6


def test_pos_label_of_the_measure_is_used():
    """Regression: posterior() ignored the measure's own pos_label."""
    y, s, a = _sample()
    labels = np.where(y == 1, "yes", "no")
    # "no" as the positive class: the score is P(no)
    own = bayes.posterior(sfm.msr("fairness.tpr", pos_label="no"), labels, 1 - s, sensitive_features=a, random_state=0)
    flipped = bayes.posterior(sfm.msr("fairness.tpr"), 1 - y, 1 - s, sensitive_features=a, random_state=0)
    assert np.allclose(own.draws, flipped.draws)
    with pytest.warns(UserWarning, match="pos_label='yes' overrides"):
        bayes.posterior(sfm.msr("fairness.tpr", pos_label="no"), labels, s, sensitive_features=a, pos_label="yes")
    comp = sfm.msr("fairness.eod").with_inputs(pos_label="no")
    c = bayes.posterior(comp, labels, 1 - s, sensitive_features=a, random_state=0)
    assert np.allclose(
        c.draws, bayes.posterior(sfm.msr("fairness.eod"), 1 - y, 1 - s, sensitive_features=a, random_state=0).draws
    )


def test_declared_groups_of_the_measure():
    y, s, a = _sample()
    post = bayes.posterior(sfm.msr("fairness.tpr", groups=["F", "M", "X"]), y, s, sensitive_features=a, random_state=0)
    assert list(post.groups) == ["F", "M", "X"]


def test_unlabeled_error_messages_name_the_right_arguments():
    y, s, a = _sample(100)
    m = sfm.msr("fairness.acc")
    with pytest.raises(ValueError, match="unlabeled_sensitive has 3 rows but unlabeled_scores has 2"):
        bayes.posterior(
            m, y, s, sensitive_features=a, method="bc", unlabeled_scores=[0.2, 0.3], unlabeled_sensitive=["F", "M", "F"]
        )
    with pytest.raises(ValueError, match="unlabeled_sensitive or unlabeled_sample_weight is given without"):
        bayes.posterior(m, y, s, sensitive_features=a, unlabeled_sensitive=["F"])
    with pytest.raises(ValueError, match="method='ppi' needs unlabeled data"):
        bayes.posterior(m, y, s, sensitive_features=a, method="ppi")


def test_reference_follows_the_operations_data():
    y, s, a = _sample()
    diff = bayes.posterior(sfm.msr("fairness.tpr"), y, s, sensitive_features=a, reference="M", random_state=0)
    ratio = bayes.posterior(
        sfm.msr("fairness.tpr", operation="ratio"), y, s, sensitive_features=a, reference="M", random_state=0
    )
    assert diff.measure.signed and diff.center == 0.0
    assert ratio.measure.ideal == 1.0 and ratio.center == 1.0
    with pytest.raises(ValueError, match="does not apply to classif.acc"):
        bayes.posterior(sfm.msr("classif.acc"), y, s, sensitive_features=a, reference="M")


def test_no_module_of_bayes_reads_an_operation_name():
    """Behaviour as data: nothing in bayes/ tests ``op.name`` or ``'ratio' in ...``."""
    for path in BAYES.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute):
                assert node.left.attr != "name", f"{path.name}:{node.lineno} compares a .name"
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant):
                assert node.left.value != "ratio", f"{path.name}:{node.lineno}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in ("hasattr", "getattr"), f"{path.name}:{node.lineno} sniffs an attribute"


# -------------------------------------------------------------- pickling


@pytest.mark.parametrize("method", ["bb", "ppi"])
def test_posteriors_and_measures_pickle(method):
    y, s, a = _sample()
    m = sfm.msr("fairness.eod", threshold=0.4)
    unl = dict(unlabeled_scores=s[200:], unlabeled_sensitive=a[200:]) if method == "ppi" else {}
    post = bayes.posterior(m, y[:200], s[:200], sensitive_features=a[:200], method=method, random_state=0, **unl)
    back = pickle.loads(pickle.dumps(post))
    assert np.array_equal(back.draws, post.draws) and back.value == post.value
    assert back.to_dict() == post.to_dict()
    assert back.measure.inputs.threshold == 0.4
    again = bayes.posterior(
        pickle.loads(pickle.dumps(m)),
        y[:200],
        s[:200],
        sensitive_features=a[:200],
        method=method,
        random_state=0,
        **unl,
    )
    assert np.array_equal(again.draws, post.draws)
    scorer = pickle.loads(pickle.dumps(BayesianScorer(m, sensitive="sex")))
    assert scorer.measure.key == m.key and scorer.measure.inputs.threshold == 0.4


# -------------------------------------------------------------- plots


def test_density_respects_the_support_and_draws_point_masses():
    from skfair_measures.bayes import density_curve

    rng = np.random.default_rng(0)
    x = np.abs(rng.normal(0.0, 0.03, 5000))  # an absolute difference near 0
    grid, dens, atoms = density_curve(x, support=(0.0, 1.0))
    assert grid.min() >= 0.0 and not atoms
    assert np.trapezoid(dens, grid) == pytest.approx(1.0, abs=0.02)
    clipped = np.clip(rng.normal(0.02, 0.05, 5000), 0.0, 1.0)  # a rate clipped at its range: a mass at 0
    grid, dens, atoms = density_curve(clipped, support=(0.0, 1.0))
    assert set(atoms) == {0.0} and atoms[0.0] == pytest.approx(np.mean(clipped == 0.0))
    assert np.trapezoid(dens, grid) + atoms[0.0] == pytest.approx(1.0, abs=0.02)
    assert density_curve(np.ones(100))[2] == {1.0: 1.0}


def test_plot_posterior_stays_in_the_support():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from skfair_measures.bayes import plot_posterior

    y, s, a = _sample(2000, 3)
    post = bayes.posterior(sfm.msr("fairness.acc"), y, s, sensitive_features=a, random_state=0)
    ax = plot_posterior(post)
    assert ax.get_xlim()[0] == 0.0
    assert all(line.get_xdata().min() >= 0.0 for line in ax.lines if len(line.get_xdata()) > 2)
    lab, unl = _no_positive_predictions()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedGroupWarning)
        bad = bayes.posterior(sfm.msr("fairness.ppv"), **lab, method="ppi", random_state=0, **unl)
    with pytest.raises(ValueError, match="no posterior density to plot: .*'F'"):
        plot_posterior(bad)


@pytest.mark.parametrize("bad", [1.0, 95, "0.9"])
def test_every_level_of_a_posterior_goes_through_check_prob(bad):
    """Bounds, summaries, reliability tables and plots refuse a bad prob by name (1.0 was the max, 95 numpy's error)."""
    import matplotlib

    matplotlib.use("Agg")
    rng = np.random.default_rng(0)
    s = rng.uniform(size=200)
    y = (rng.uniform(size=200) < s).astype(int)
    a = rng.choice(["F", "M"], 200)
    post = bayes.posterior(sfm.msr("fairness.tpr"), y, s, sensitive_features=a, method="bb", random_state=0)
    rel = bayes.reliability_posterior(y, s, sensitive_features=a, random_state=0)
    message = f"prob={bad!r}; pass a probability in"
    for call in (
        post.upper_bound,
        post.group_summary,
        post.summary,
        post.interval,
        rel.ece_summary,
        rel.table,
        lambda prob: bayes.plot_reliability(rel, prob=prob),
    ):
        with pytest.raises(ValueError, match=message):
            call(prob=bad)
