import subprocess
import sys
import time
import warnings

import matplotlib
import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import skfair_measures as sfm  # noqa: E402
from skfair_measures import plots  # noqa: E402
from skfair_measures.benchmark import benchmark  # noqa: E402
from skfair_measures.results import Result  # noqa: E402


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
        learners,
        X,
        y,
        A,
        measures=["fairness.eod", "fairness.tpr", "classif.acc"],
        cv=5,
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


class _Posterior(Result):
    """A hand-made result with draws and an interval unlike the draws' quantiles."""

    key = "fairness.tpr"
    value = 0.0

    def __init__(self, draws, measure=None):
        self._draws = np.asarray(draws, dtype=float)
        self.measure = measure

    @property
    def draws(self):
        return self._draws

    def interval(self, prob=0.95):
        return (-0.5, 0.5)


def test_posterior_density_uses_the_objects_interval(tmp_path):
    ax = plots.posterior_density(_Posterior(np.random.default_rng(1).normal(0.0, 0.01, 1000)))
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
    within = np.mean(np.abs(np.ravel(posts["logreg"].draws)) < 0.05)
    assert f"P(|value| < 0.05) = {within:.2f}" in texts[1]
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
        oof["y_true"],
        oof["y_pred"],
        sensitive_features=oof["sensitive_feature_0"],
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


# -- many groups, small groups, point masses -----------------------------------------------
@pytest.fixture(scope="module")
def twelve_groups():
    """Predictions with 12 intersectional groups (sex x race), long labels, two of them tiny."""
    rng = np.random.default_rng(3)
    races = ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Hispanic"]
    n = 3000
    A = pd.DataFrame({"sex": rng.choice(["Female", "Male"], n), "race": rng.choice(races, n)})
    tiny = (A["race"] == "Other").to_numpy()
    keep = ~tiny | (np.cumsum(tiny) <= 4)  # "Other" keeps 4 rows: 2 groups below MIN_GROUP_SIZE
    A = A[keep].reset_index(drop=True)
    y = rng.integers(0, 2, len(A))
    score = np.clip(0.3 + 0.4 * y + rng.normal(0, 0.2, len(A)), 0.01, 0.99)
    return y, score, A


def _overlaps(ax, artist):
    """Whether a legend (or any artist) covers part of the axes' data area (in display pixels)."""
    ax.figure.canvas.draw()
    box, area = artist.get_window_extent(), ax.get_window_extent()
    return box.x0 < area.x1 - 1 and box.x1 > area.x0 + 1 and box.y0 < area.y1 - 1 and box.y1 > area.y0 + 1


def test_groupwise_bars_with_twelve_intersectional_groups(twelve_groups, tmp_path):
    y, score, A = twelve_groups
    with pytest.warns(UserWarning, match="undefined for group"):  # the tiny groups
        res = sfm.evaluate_measures(
            [sfm.msr("fairness.eod"), sfm.msr("fairness.ppv")], y, (score > 0.5).astype(int), sensitive_features=A
        )
    groups = res["fairness.eod"].by_group.index
    assert len(groups) == 12
    ax = plots.groupwise_bars(res)
    # one labeled row of bars per group, first group on top; metrics as colours in a legend beside the axes
    labels = [t.get_text() for t in ax.get_yticklabels()]
    sizes = res["fairness.eod"].counts
    assert labels == [f"sex={s}, race={r} (n={sizes[(s, r)]:g})" for s, r in groups]
    assert list(ax.get_yticks()) == list(range(11, -1, -1))
    assert len(ax.patches) == 12 * 3
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["tpr", "fpr", "ppv"]
    assert not _overlaps(ax, legend)
    # the tick labels do not overlap each other
    ax.figure.canvas.draw()
    boxes = sorted((t.get_window_extent() for t in ax.get_yticklabels()), key=lambda b: b.y0)
    assert all(lower.y1 <= upper.y0 + 0.5 for lower, upper in zip(boxes, boxes[1:], strict=False))
    _save(ax, tmp_path / "groups12.png")


def test_density_and_reliability_legends_stay_outside_with_twelve_groups(twelve_groups, tmp_path):
    y, score, A = twelve_groups
    ax = plots.prediction_density(score, A)
    assert len(ax.get_lines()) == 12
    assert len({line.get_color() for line in ax.get_lines()}) == 12  # no colour repeats (tab10 would)
    assert not _overlaps(ax, ax.get_legend())
    _save(ax, tmp_path / "density12.png")
    ax = plots.reliability_diagram(y, score, A)
    assert not _overlaps(ax, ax.get_legend())
    _save(ax, tmp_path / "reliability12.png")


def test_reliability_diagram_leaves_out_and_names_small_groups(twelve_groups):
    y, score, A = twelve_groups
    sizes = A.value_counts()
    small = sizes[sizes < plots.MIN_GROUP_SIZE]
    assert len(small) == 2
    ax = plots.reliability_diagram(y, score, A)
    assert len(ax.get_lines()) == 1 + 10 + 1  # diagonal, ten groups, the entry naming the left-out ones
    note = ax.get_legend().get_texts()[-1].get_text()
    assert note.startswith(f"not drawn (n < {plots.MIN_GROUP_SIZE}):\n")
    for (sex, race), n in small.items():
        assert f"sex={sex}, race={race} (n={n})" in note
    plt.close(ax.figure)
    ax = plots.reliability_diagram(y, score, A, min_size=1)  # every group drawn
    assert len(ax.get_lines()) == 1 + 12
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="min_size=0"):
        plots.reliability_diagram(y, score, A, min_size=0)


def test_point_mass_posterior_is_a_line_not_a_spike(tmp_path):
    ax = plots.posterior_density(np.full(4000, 0.125), eps=0.05, label="degenerate")
    assert ax.get_ylim() == (0.0, 1.05)  # no density axis reaching 1e7
    assert ax.get_yticks().size == 0
    text = ax.get_legend().get_texts()[1].get_text()
    assert "point mass" in text and "P(|value| < 0.05) = 0.00" in text
    lo, hi = ax.get_xlim()
    assert lo < 0.125 < hi and hi - lo > 0.05
    _save(ax, tmp_path / "point_mass.png")
    # numerical noise around a fixed value (as MCMC gives for a disparity the data fix) is a point mass too
    noisy = 0.24196786 + np.random.default_rng(1).uniform(0, 8.6e-8, 400)
    ax = plots.posterior_density(noisy, eps=0.05)
    assert ax.get_ylim() == (0.0, 1.05)
    assert "point mass, all draws within 9e-08" in ax.get_legend().get_texts()[1].get_text()
    plt.close(ax.figure)
    # next to a real posterior, the point mass is a line and the density keeps its own scale
    rng = np.random.default_rng(0)
    ax = plots.posterior_density({"mass": np.full(500, 0.1), "spread": rng.normal(0.05, 0.02, 4000)})
    assert ax.get_ylim()[1] < 100
    plt.close(ax.figure)


def test_posterior_density_band_is_centred_on_the_measures_ideal():
    ratio = sfm.msr("fairness.tpr", operation="ratio")
    assert ratio.ideal == 1.0
    post = _Posterior(np.random.default_rng(0).normal(0.97, 0.01, 2000), measure=ratio)
    ax = plots.posterior_density(post, eps=0.05)
    band = ax.patches[0]
    assert band.get_x() == pytest.approx(0.95) and band.get_x() + band.get_width() == pytest.approx(1.05)
    within = np.mean(np.abs(post.draws - 1.0) < 0.05)
    assert 0.9 < within < 1.0
    assert f"P(|value - 1| < 0.05) = {within:.2f}" in ax.get_legend().get_texts()[1].get_text()
    plt.close(ax.figure)
    point = sfm.msr("fairness.tpr").evaluate([1, 1, 0, 0], [1, 0, 0, 1], sensitive_features=list("abab"))
    with pytest.raises(ValueError, match="has no draws"):
        plots.posterior_density(point)


# -- any group name, many groups -------------------------------------------------------------

ODD_NAMES = ["cost $10^$", "a\\b", "100%", "{x}", "日本語 ü", " ", "x" * 500, "$", "\\$", "_"]


def _frame_of(groups, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.random(groups.size)
    return pd.DataFrame(
        {"label": rng.integers(0, 2, groups.size), "score": s, "prediction": (s > 0.5).astype(int), "grp": groups}
    )


def test_odd_group_names_are_drawn_as_written():
    from skfair_measures.report import audit, render_html

    groups = np.array(ODD_NAMES, dtype=object)[np.random.default_rng(1).integers(0, len(ODD_NAMES), 600)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no figure is lost
        rep = audit(_frame_of(groups), sensitive="grp", measures=["fairness.tpr"], progress=False)
    assert [c for c, _ in rep.figures] == [
        "Base metrics by group",
        "Predicted scores by group (all rows)",
        "Calibration by group (labeled rows)",
    ]
    assert "cost $10^$" in render_html(rep)
    ax = plots.prediction_density(_frame_of(groups).score, groups)
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith(r"cost \$10^\$ (n=") for t in texts)  # escaped: matplotlib draws a plain "$"
    assert max(len(t) for t in texts) < 60  # a 500-character name is cut
    ax.figure.canvas.draw()
    plt.close("all")


def test_many_groups_show_the_largest_and_name_the_rest():
    from skfair_measures.report import MAX_GROUPS_LISTED, audit, render_html

    rng = np.random.default_rng(0)
    groups = np.char.add("g", rng.integers(0, 100_000, 100_000).astype(str)).astype(object)
    groups[:300] = "big"  # the largest group is shown
    start = time.perf_counter()
    rep = audit(_frame_of(groups), sensitive="grp", measures=["fairness.tpr"], progress=False)
    page = render_html(rep)
    assert time.perf_counter() - start < 60  # was: no end after 300 s (3.4 GB)
    assert len(rep.figures) == 3 and len(rep.by_group) > 60_000
    assert page.count("<tr>") < MAX_GROUPS_LISTED + 20 and "largest of" in page
    ax = plots.prediction_density(_frame_of(groups).score, groups)
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(texts) == plots.MAX_GROUPS_SHOWN and any(t.startswith("big (n=300)") for t in texts)
    assert "others not shown" in ax.get_title()
    plt.close("all")


def test_a_figure_that_fails_costs_one_warning_not_the_report(monkeypatch):
    from skfair_measures.report import audit

    def broken(*args, **kwargs):
        raise RuntimeError("no display")

    monkeypatch.setattr(plots, "prediction_density", broken)
    groups, before = np.repeat(["a", "b"], 100), plt.get_fignums()  # (figures another test left open)
    with pytest.warns(RuntimeWarning, match="Predicted scores by group.*could not be drawn.*no display"):
        rep = audit(_frame_of(groups), sensitive="grp", measures=["fairness.tpr"], progress=False)
    assert len(rep.figures) == 2 and not np.isnan(rep.results["fairness.tpr"].value)
    assert any("could not be drawn" in n for n in rep.notes)
    assert plt.get_fignums() == before  # the audit closed every figure it opened


def _two_groups(n=400, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.choice(["F", "M"], n)
    y = rng.integers(0, 2, n)
    return y, np.where(rng.uniform(size=n) < 0.8, y, 1 - y), A


def test_groupwise_bars_draw_each_groups_bootstrap_interval():
    y, y_pred, A = _two_groups()
    boot = sfm.bootstrap(sfm.msr("fairness.tpr"), y, y_pred, sensitive_features=A, random_state=0)
    ax = plots.groupwise_bars(boot)
    # one bar container per group (F, M), each with its whisker from the 2.5% to the 97.5% quantile of its draws
    whiskers = [c.errorbar.lines[2][0].get_segments()[0] for c in ax.containers if hasattr(c, "errorbar")]
    expected = np.quantile(boot.group_draws["tpr"], [0.025, 0.975], axis=0).T
    np.testing.assert_allclose([(w[0][1], w[1][1]) for w in whiskers], expected)
    assert "95% interval" in ax.get_title()


def test_density_of_an_absolute_gap_stays_at_or_above_zero():
    y, y_pred, A = _two_groups(n=300, seed=3)  # a small gap: many replicates near 0
    boot = sfm.bootstrap(sfm.msr("fairness.tpr"), y, y_pred, sensitive_features=A, random_state=0)
    assert boot.draws.min() < 0.02
    ax = plots.posterior_density(boot, eps=0.05)
    xs = np.concatenate([line.get_xdata() for line in ax.get_lines() if len(line.get_xdata()) > 2])
    assert xs.min() >= 0.0 and ax.get_xlim()[0] >= 0.0
    assert "Bootstrap" in ax.get_title()


def test_monitor_plot_at_30_days_has_no_overlapping_dates_and_its_legend_beside_the_data():
    from skfair_measures.monitor import FairnessMonitor

    rng = np.random.default_rng(0)
    mon = FairnessMonitor(["fairness.tpr"], eps=0.1)
    groups = [f"g{i:02d}" for i in range(30)]
    for day in pd.date_range("2026-01-01", periods=30, freq="D"):
        A = rng.choice(groups, 3000)
        y = rng.integers(0, 2, 3000)
        mon.update(np.where(rng.uniform(size=3000) < 0.8, y, 1 - y), sensitive_features=A, y_true=y, time=day)
    ax = mon.plot("fairness.tpr")
    ax.figure.canvas.draw()
    boxes = [t.get_window_extent() for t in ax.get_xticklabels() if t.get_text()]
    assert len(boxes) >= 3
    assert all(a.x1 <= b.x0 for a, b in zip(boxes, boxes[1:], strict=False))
    assert not _overlaps(ax, ax.get_legend())
    plt.close("all")


def test_groupwise_whiskers_follow_the_one_rule_for_undefined_replicates():
    """A group whose replicates are undefined too often (2 positives in 10 rows) has no whisker: it has no interval."""
    from skfair_measures.plots import _groupwise_table

    y = np.r_[np.tile([1, 0], 100), [1, 1] + [0] * 8]
    y_pred = np.r_[np.tile([1, 1, 0, 0], 50), [1, 0] + [0] * 8]
    A = np.r_[["a"] * 200, ["b"] * 10]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        boot = sfm.bootstrap(sfm.msr("fairness.tpr"), y, y_pred, sensitive_features=A, random_state=0)
    _, low, high = _groupwise_table([boot], 0.95)
    assert np.isnan(low.loc["b", "tpr"]) and np.isnan(high.loc["b", "tpr"])
    assert low.loc["a", "tpr"] == pytest.approx(np.quantile(boot.group_draws["tpr"][:, 0], 0.025))
