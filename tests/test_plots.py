import subprocess
import sys

import matplotlib
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import skfair_measures as sfm  # noqa: E402
from skfair_measures import plots  # noqa: E402
from skfair_measures.benchmark import benchmark  # noqa: E402


@pytest.fixture(scope="module")
def bmr():
    rng = np.random.default_rng(0)
    n = 400
    X = rng.normal(size=(n, 3))
    A = rng.choice(["Female", "Male"], size=n)
    y = (X[:, 0] + 0.8 * (A == "Male") + rng.normal(size=n) > 0.5).astype(int)
    learners = {
        "logreg": LogisticRegression(),
        "tree": DecisionTreeClassifier(max_depth=4, random_state=0),
    }
    return benchmark(
        learners, X, y, A, measures=["fairness.eod", "fairness.tpr", "classif.acc"], cv=5,
        random_state=0,
    )


def _save(ax, path):
    assert isinstance(ax, matplotlib.axes.Axes)
    ax.figure.savefig(path, dpi=80)
    plt.close(ax.figure)
    assert path.exists() and path.stat().st_size > 8_000  # a real picture, not an empty canvas
    return path


def test_tradeoff(bmr, tmp_path):
    ax = plots.fairness_accuracy_tradeoff(bmr, "fairness.eod", "classif.acc")
    # per learner: one point per fold plus the mean
    offsets = [c.get_offsets().shape[0] for c in ax.collections]
    assert offsets == [5, 1, 5, 1]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["logreg", "tree"]
    _save(ax, tmp_path / "tradeoff.png")


def test_tradeoff_defaults_and_given_ax(bmr, tmp_path):
    fig, (a1, a2) = plt.subplots(1, 2)
    out = plots.fairness_accuracy_tradeoff(bmr, ax=a2, show_folds=False)
    assert out is a2
    assert out.get_xlabel().startswith("fairness.eod")
    assert out.get_ylabel().startswith("classif.acc")
    with pytest.raises(KeyError, match="were not benchmarked"):
        plots.fairness_accuracy_tradeoff(bmr, "fairness.fpr", ax=a1)
    plt.close(fig)


def test_compare_measures(bmr, tmp_path):
    ax = plots.compare_measures(bmr)
    assert len(ax.patches) == 2 * 3  # learners x measures
    _save(ax, tmp_path / "compare.png")


def test_prediction_density(bmr, tmp_path):
    oof = bmr.oof_predictions("logreg")
    ax = plots.prediction_density(oof["y_score"], oof["sensitive_feature_0"])
    assert len(ax.get_lines()) == 2
    _save(ax, tmp_path / "density.png")
    ax = plots.prediction_density(oof["y_score"], oof["sensitive_feature_0"], kind="hist")
    _save(ax, tmp_path / "density_hist.png")
    with pytest.raises(ValueError, match="kind="):
        plots.prediction_density(oof["y_score"], oof["sensitive_feature_0"], kind="violin")


def test_posterior_density_raw_draws_and_overlay(tmp_path):
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.02, 0.02, 3000), rng.normal(0.09, 0.03, 3000)
    ax = plots.posterior_density(a, eps=0.05, label="logreg")
    text = ax.get_legend().get_texts()[1].get_text()
    assert "95% CI" in text and "P(|value| < 0.05)" in text
    _save(ax, tmp_path / "posterior.png")
    ax = plots.posterior_density({"logreg": a, "tree": b}, eps=0.05, prob=0.9)
    assert len(ax.get_legend().get_texts()) == 3
    _save(ax, tmp_path / "posterior_overlay.png")


def test_posterior_density_uses_the_objects_interval(tmp_path):
    class Post:
        key = "fairness.tpr"
        draws = np.random.default_rng(1).normal(0.0, 0.01, 1000)

        def interval(self, prob):
            return (-0.5, 0.5)  # deliberately unlike the draws' quantiles

    ax = plots.posterior_density(Post())
    assert "[-0.5, 0.5]" in ax.get_legend().get_texts()[0].get_text()
    assert ax.get_xlabel() == "fairness.tpr"
    plt.close(ax.figure)


def test_posterior_density_of_a_measure_posterior(bmr, tmp_path):
    pytest.importorskip("skfair_measures.bayes")
    posts = {name: bmr.posterior("fairness.tpr", name, random_state=0) for name in bmr.learners}
    ax = plots.posterior_density(posts, eps=0.05)
    assert ax.get_xlabel() == "fairness.tpr"
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    lo, hi = posts["logreg"].interval(0.95)
    assert f"[{lo:.3g}, {hi:.3g}]" in texts[1]
    assert f"P(|value| < 0.05) = {posts['logreg'].prob_within(0.05):.2f}" in texts[1]
    _save(ax, tmp_path / "posterior_bb.png")


def test_reliability_diagram(bmr, tmp_path):
    oof = bmr.oof_predictions("tree")
    ax = plots.reliability_diagram(oof["y_true"], oof["y_score"], oof["sensitive_feature_0"])
    assert len(ax.get_lines()) == 3  # diagonal + one curve per group
    _save(ax, tmp_path / "reliability.png")
    ax = plots.reliability_diagram(
        oof["y_true"], oof["y_score"], oof["sensitive_feature_0"], strategy="quantile", n_bins=5
    )
    _save(ax, tmp_path / "reliability_q.png")


def test_groupwise_bars(bmr, tmp_path):
    oof = bmr.oof_predictions("logreg")
    res = sfm.evaluate_measures(
        [sfm.msr("fairness.eod"), sfm.msr("fairness.tpr"), sfm.msr("classif.acc")],
        oof["y_true"], oof["y_pred"], sensitive_features=oof["sensitive_feature_0"],
    )
    ax = plots.groupwise_bars(res)
    # eod's tpr and fpr, tpr drawn once, and accuracy per group
    assert [t.get_text() for t in ax.get_xticklabels()] == ["tpr", "fpr", "acc"]
    assert len(ax.patches) == 3 * 2
    _save(ax, tmp_path / "groupwise.png")


def test_intersectional_group_labels(tmp_path):
    rng = np.random.default_rng(2)
    import pandas as pd

    A = pd.DataFrame({"sex": rng.choice(["F", "M"], 200), "race": rng.choice(["x", "y"], 200)})
    ax = plots.prediction_density(rng.uniform(size=200), A)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0].startswith("sex=F, race=x (n=")
    plt.close(ax.figure)


def test_import_skfair_measures_does_not_load_matplotlib():
    code = (
        "import sys, skfair_measures, skfair_measures.benchmark, skfair_measures.cli; "
        "bad = [m for m in ('matplotlib', 'mlflow', 'tqdm') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
