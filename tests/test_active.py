"""Active assessment (seed 002, chapter 3): ask/tell invariants, tasks, priors, CLI."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from skfair_measures.active import MAX_PRIOR_STRENGTH, ActiveAssessment, beta_prior
from skfair_measures.active._policy import rope_masses


def _simulated(rates, n_per_group=400, seed=0):
    """Binary predictions whose accuracy in group g is rates[g] (exactly, up to rounding)."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(len(rates)), n_per_group)
    y_pred = rng.integers(0, 2, groups.size)
    wrong = np.zeros(groups.size, dtype=bool)
    for g, r in enumerate(rates):
        idx = np.flatnonzero(groups == g)
        wrong[rng.choice(idx, int(round((1 - r) * idx.size)), replace=False)] = True
    y_true = np.where(wrong, 1 - y_pred, y_pred)
    scores = np.where(y_pred == 1, 0.7, 0.3)
    return y_pred, scores, groups, y_true


def _run(aa, y_true, batch=1, max_labels=None, until=None):
    while max_labels is None or aa.n_labels < max_labels:
        if until is not None and until(aa):
            break
        rows = aa.ask(batch)
        if rows.size == 0:
            break
        aa.tell(rows, y_true[rows])
    return aa


# -- ask / tell invariants -------------------------------------------------------------


@pytest.mark.parametrize(
    "strategy,task", [("ts", "estimate"), ("ts", "identify"), ("ttts", "identify"), ("random", "estimate")]
)
def test_no_row_is_asked_twice_and_the_pool_runs_out(strategy, task):
    y_pred, scores, groups, y_true = _simulated([0.9, 0.7, 0.8], n_per_group=40)
    aa = ActiveAssessment(y_pred, scores, sensitive_features=groups, task=task, strategy=strategy, random_state=1)
    asked = []
    while (rows := aa.ask(7)).size:
        asked.extend(rows.tolist())
        aa.tell(rows, y_true[rows])
    assert sorted(asked) == list(range(y_pred.size))
    assert aa.ask(3).size == 0
    gw = aa.groupwise()
    assert gw["labels"].tolist() == [40, 40, 40]


def test_asked_but_untold_rows_are_not_asked_again():
    y_pred, scores, groups, _ = _simulated([0.9, 0.7], n_per_group=10)
    aa = ActiveAssessment(y_pred, scores, sensitive_features=groups, random_state=0)
    first = aa.ask(15)
    second = aa.ask(15)
    assert len(set(first) | set(second)) == 20 and first.size == 15 and second.size == 5


def test_same_seed_same_asks_and_another_seed_differs():
    y_pred, scores, groups, y_true = _simulated([0.9, 0.7, 0.8, 0.6])

    def asks(seed):
        aa = ActiveAssessment(y_pred, scores, sensitive_features=groups, task="identify", random_state=seed)
        out = []
        for _ in range(30):
            rows = aa.ask(2)
            out.extend(rows.tolist())
            aa.tell(rows, y_true[rows])
            aa.worst_group()  # summaries must not move the ask stream
        return out

    assert asks(3) == asks(3)
    assert asks(3) != asks(4)


def test_batch_ask_returns_distinct_rows_and_multiple_play_spreads_over_groups():
    y_pred, scores, groups, _ = _simulated([0.9, 0.7, 0.8, 0.6, 0.95])
    aa = ActiveAssessment(y_pred, scores, sensitive_features=groups, task="identify", m=3, random_state=0)
    rows = aa.ask(3)
    assert np.unique(rows).size == 3
    assert np.unique(groups[rows]).size == 3  # MP-TS: one row from each of the 3 sampled-worst groups
    more = aa.ask(50)
    assert more.size == 50 and not set(more) & set(rows)


def test_tell_errors_name_the_problem():
    y_pred, scores, groups, y_true = _simulated([0.9, 0.7], n_per_group=10)
    aa = ActiveAssessment(y_pred, scores, sensitive_features=groups, random_state=0)
    rows = aa.ask(2)
    not_asked = np.setdiff1d(np.arange(20), rows)[0]
    with pytest.raises(ValueError, match="not asked"):
        aa.tell([not_asked], [1])
    with pytest.raises(ValueError, match="not among the classes"):
        aa.tell(rows, [0, 7])
    with pytest.raises(ValueError, match="not among the classes"):
        aa.tell(rows, ["0", "1"])  # "1" is not the class 1
    with pytest.raises(ValueError, match="same length"):
        aa.tell(rows, [0])
    with pytest.raises(ValueError, match="repeats"):
        aa.tell([rows[0], rows[0]], [0, 0])
    aa.tell(rows, y_true[rows])
    with pytest.raises(ValueError, match="told already"):
        aa.tell(rows[:1], y_true[rows[:1]])
    with pytest.raises(ValueError, match="row positions"):
        aa.tell([99], [0])
    assert aa.n_labels == 2  # the failed calls changed nothing


def test_constructor_errors():
    y_pred, scores, groups, _ = _simulated([0.9, 0.7], n_per_group=10)
    with pytest.raises(ValueError, match="task="):
        ActiveAssessment(y_pred, scores, sensitive_features=groups, task="rank")
    with pytest.raises(ValueError, match="pair="):
        ActiveAssessment(y_pred, scores, sensitive_features=groups, task="compare")
    with pytest.raises(ValueError, match="not a group"):
        ActiveAssessment(y_pred, scores, sensitive_features=groups, task="compare", pair=(0, 5))
    with pytest.raises(ValueError, match="prior_strength"):
        ActiveAssessment(y_pred, scores, sensitive_features=groups, prior_strength=MAX_PRIOR_STRENGTH + 1)
    with pytest.raises(ValueError, match="classes"):
        ActiveAssessment(np.array([0, 1, 2] * 4), np.full(12, 0.5), sensitive_features=groups[:12])
    with pytest.raises(ValueError, match="missing value"):
        ActiveAssessment([0, 1, 0], [0.2, 0.8, 0.3], sensitive_features=["a", None, "b"])
    with pytest.raises(ValueError, match="ttts"):
        ActiveAssessment(y_pred, scores, sensitive_features=groups, strategy="ttts")


def test_labels_given_up_front_enter_the_posterior_and_are_never_asked():
    y_pred, scores, groups, y_true = _simulated([0.9, 0.7], n_per_group=10)
    known = pd.Series(y_true, dtype=object)
    known[5:] = None
    aa = ActiveAssessment(y_pred, scores, sensitive_features=groups, y_true=known, random_state=0)
    assert aa.n_labels == 5
    asked = []
    while (rows := aa.ask(4)).size:
        asked.extend(rows.tolist())
    assert sorted(asked) == list(range(5, 20))


# -- posteriors --------------------------------------------------------------------------


def test_accuracy_posterior_is_the_beta_binomial_update():
    y_pred, scores, groups, y_true = _simulated([0.9, 0.6], n_per_group=50)
    aa = _run(ActiveAssessment(y_pred, scores, sensitive_features=groups, prior="uniform", random_state=0), y_true)
    gw = aa.groupwise(0.9)
    for g in (0, 1):
        k = int((y_true == y_pred)[groups == g].sum())
        assert gw.loc[g, "estimate"] == pytest.approx((k + 1) / 52)
        assert gw.loc[g, "lower"] == pytest.approx(stats.beta.ppf(0.05, k + 1, 51 - k))
    assert gw["counted"].tolist() == [50, 50]


def test_tpr_counts_only_true_positives_and_ppv_asks_only_predicted_positives():
    rng = np.random.default_rng(0)
    n = 300
    groups = rng.choice(["a", "b"], n)
    y_pred = rng.integers(0, 2, n)
    y_true = rng.integers(0, 2, n)
    scores = rng.uniform(0.05, 0.95, n)
    tpr = _run(ActiveAssessment(y_pred, scores, sensitive_features=groups, metric="tpr", prior="uniform"), y_true)
    gw = tpr.groupwise()
    for g in ("a", "b"):
        pos = (groups == g) & (y_true == 1)
        assert gw.loc[g, "counted"] == pos.sum()
        assert gw.loc[g, "estimate"] == pytest.approx((((y_pred == 1) & pos).sum() + 1) / (pos.sum() + 2))
    ppv = ActiveAssessment(y_pred, scores, sensitive_features=groups, metric="ppv", random_state=0)
    asked = np.concatenate([ppv.ask(50) for _ in range(10)])
    assert (y_pred[asked] == 1).all() and asked.size == (y_pred == 1).sum()


def test_ece_posterior_mean_matches_monte_carlo():
    rng = np.random.default_rng(0)
    n = 2000
    scores = rng.uniform(0, 1, n)
    y_pred = (scores >= 0.5).astype(int)
    y_true = (rng.uniform(0, 1, n) < scores**1.5).astype(int)
    groups = rng.choice(["a", "b"], n)
    aa = ActiveAssessment(y_pred, scores, sensitive_features=groups, metric="ece", random_state=0)
    _run(aa, y_true, 20, 400)
    mc = np.nanmean(aa.draws(40000), axis=0)
    assert aa.groupwise()["estimate"].to_numpy() == pytest.approx(mc, abs=2e-3)


def test_informative_prior_has_a_uniform_floor_and_a_capped_strength():
    a, b = beta_prior(np.array([1.0, 0.5]), strength=2.0)
    assert a.tolist() == [3.0, 2.0] and b.tolist() == [1.0, 2.0]
    a0, b0 = beta_prior(np.array([1.0]), strength=2.0, base=0.0)  # the chapter's face value
    assert b0[0] < 1e-5
    with pytest.raises(ValueError, match="at most"):
        beta_prior(np.array([0.5]), strength=MAX_PRIOR_STRENGTH * 2)


def test_rope_masses_agree_with_monte_carlo():
    rng = np.random.default_rng(0)
    d = rng.beta(30, 10, 400_000) - rng.beta(20, 12, 400_000)
    mc = [(d < -0.05).mean(), (abs(d) <= 0.05).mean(), (d > 0.05).mean()]
    assert rope_masses(30, 10, 20, 12, 0.05) == pytest.approx(mc, abs=3e-3)


# -- tasks ---------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["ts", "ttts"])
def test_identifies_the_worst_group_of_simulated_groups(strategy):
    rates = [0.92, 0.85, 0.7, 0.88, 0.95]
    y_pred, scores, groups, y_true = _simulated(rates, n_per_group=400)
    found, used = [], []
    for seed in range(4):
        aa = ActiveAssessment(
            y_pred, scores, sensitive_features=groups, task="identify", strategy=strategy, random_state=seed
        )
        _run(aa, y_true, batch=5, until=lambda a: a.worst_group(0.95) is not None)
        found.append(aa.worst_group(0.95))
        used.append(aa.n_labels)
    assert found == [2] * 4
    assert max(used) < 0.5 * y_pred.size


def test_identifies_the_top_m_groups():
    rates = [0.92, 0.7, 0.9, 0.75, 0.95, 0.93]
    y_pred, scores, groups, y_true = _simulated(rates, n_per_group=800)
    aa = ActiveAssessment(y_pred, scores, sensitive_features=groups, task="identify", m=2, random_state=0)
    _run(aa, y_true, batch=4, until=lambda a: a.decided(0.95))
    assert aa.worst_groups(2, 0.95) == [1, 3]
    assert aa.prob_worst(2)[[1, 3]].min() >= 0.95


@pytest.mark.parametrize("rates,verdict", [([0.9, 0.6], "above"), ([0.6, 0.9], "below"), ([0.8, 0.8], "equivalent")])
def test_rope_comparison_verdicts(rates, verdict):
    y_pred, scores, groups, y_true = _simulated([*rates, 0.5], n_per_group=3000)
    aa = ActiveAssessment(y_pred, scores, sensitive_features=groups, task="compare", pair=(0, 1), random_state=0)
    _run(aa, y_true, batch=10, max_labels=1500)
    result = aa.compare()
    assert result.verdict == verdict and result.probability >= 0.95
    used = aa.groupwise()["labels"]
    assert used[2] == 0 and min(used[0], used[1]) >= 100  # only the pair is asked, both of it
    assert aa.compare(1, 0).verdict == {"above": "below", "below": "above"}.get(verdict, verdict)


def test_estimation_beats_random_on_rmse_with_unequal_groups():
    rates = [0.97, 0.55, 0.9, 0.6]
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(4), [2000, 2000, 300, 300])
    y_pred = rng.integers(0, 2, groups.size)
    y_true = np.where(rng.random(groups.size) < np.take(rates, groups), y_pred, 1 - y_pred)
    truth = np.array([(y_true == y_pred)[groups == g].mean() for g in range(4)])
    share = np.bincount(groups) / groups.size

    def rmse(strategy, seed):
        aa = ActiveAssessment(
            y_pred,
            np.full(groups.size, 0.5),
            sensitive_features=groups,
            strategy=strategy,
            prior="uniform",
            random_state=seed,
            keep_trajectory=False,
        )
        _run(aa, y_true, max_labels=80)
        return np.sqrt(np.sum(share * (aa.groupwise()["estimate"].to_numpy() - truth) ** 2))

    ts = np.mean([rmse("ts", s) for s in range(25)])
    rnd = np.mean([rmse("random", s) for s in range(25)])
    assert ts < rnd


def test_intersections_and_trajectory():
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "race": rng.choice(["x", "y"], n)})
    y_pred = rng.integers(0, 2, n)
    aa = ActiveAssessment(y_pred, np.full(n, 0.8), sensitive_features=frame, random_state=0)
    assert isinstance(aa.groups, pd.MultiIndex) and len(aa.groups) == 4
    for _ in range(3):
        rows = aa.ask(5)
        aa.tell(rows, y_pred[rows])
    traj = aa.trajectory()
    assert traj["labels"].unique().tolist() == [0, 5, 10, 15]
    assert len(traj) == 16 and traj["lower"].le(traj["estimate"]).all()
    cmp = ActiveAssessment(
        y_pred, np.full(n, 0.8), sensitive_features=frame, task="compare", pair=(("F", "x"), ("M", "y"))
    )
    r = cmp.compare()  # no labels yet: the priors' masses
    assert r.below + r.within + r.above == pytest.approx(1.0) and min(r.below, r.within, r.above) > 0


def test_plot_trajectory_draws_one_line_per_group():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    y_pred, scores, groups, y_true = _simulated([0.9, 0.7, 0.8], n_per_group=30)
    aa = _run(ActiveAssessment(y_pred, scores, sensitive_features=groups, random_state=0), y_true, 3, 30)
    ax = aa.plot()
    assert len(ax.get_lines()) == 3


# -- the command line ------------------------------------------------------------------------


def test_cli_label_next_round_trip(tmp_path, capsys):
    from skfair_measures.cli import main

    y_pred, scores, groups, y_true = _simulated([0.9, 0.6], n_per_group=30)
    frame = pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(60)],
            "group": np.where(groups == 0, "F", "M"),
            "prediction": y_pred,
            "score": scores,
            "label": pd.array([pd.NA] * 60, dtype="Int64"),
        }
    )
    frame.loc[:9, "label"] = y_true[:10]
    path = tmp_path / "preds.csv"
    frame.to_csv(path, index=False)
    args = [str(path), "--budget", "5", "--sensitive", "group", "--id", "id", "--seed", "3"]
    assert main(["label-next", *args]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "rows to label next (5):"
    ids = out[1:6]
    assert len(set(ids)) == 5 and all(int(i[1:]) >= 10 for i in ids)
    expected = ActiveAssessment(
        y_pred,
        scores,
        sensitive_features=frame["group"],
        y_true=frame["label"].astype(object).where(frame["label"].notna(), None),
        random_state=3,
    )
    assert [f"r{i}" for i in expected.ask(5)] == ids
    gw = expected.groupwise().round(4)
    assert any(line.split()[:2] == ["F", f"{gw.loc['F', 'estimate']:g}"] for line in out)
    # same file, same seed, same rows; then label them and ask again: no row comes back
    assert main(["label-next", *args]) == 0
    assert capsys.readouterr().out.splitlines()[1:6] == ids
    frame.loc[[int(i[1:]) for i in ids], "label"] = y_true[[int(i[1:]) for i in ids]]
    frame.to_csv(path, index=False)
    assert main(["label-next", *args]) == 0
    out = capsys.readouterr().out
    again = out.splitlines()[1:6]
    assert not set(again) & set(ids) and "15 labels" in out


def test_cli_label_next_errors_are_one_line(tmp_path, capsys):
    from skfair_measures.cli import main

    path = tmp_path / "preds.csv"
    pd.DataFrame({"group": ["a", "b"], "prediction": [0, 1], "score": [0.2, 0.9], "label": [None, 7]}).to_csv(
        path, index=False
    )
    assert main(["label-next", str(path), "--sensitive", "group"]) == 2
    err = capsys.readouterr().err
    assert "label-next" in err and "not among the classes" in err
    assert main(["label-next", str(path), "--sensitive", "nope"]) == 2
    assert "no column 'nope'" in capsys.readouterr().err


def test_mlflow_logs_the_trajectory_step_indexed(tmp_path):
    mlflow = pytest.importorskip("mlflow")
    skfair_measures_mlflow = pytest.importorskip("skfair_measures_mlflow")
    y_pred, scores, groups, y_true = _simulated([0.9, 0.7], n_per_group=20)
    aa = _run(ActiveAssessment(y_pred, scores, sensitive_features=groups, random_state=0), y_true, 4, 12)
    old = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    try:
        mlflow.set_experiment("active")  # not an experiment id another test left active in its own store
        with mlflow.start_run() as run:
            n = skfair_measures_mlflow.log_active_trajectory(aa)
        history = mlflow.MlflowClient().get_metric_history(run.info.run_id, "active/acc/1/estimate")
    finally:
        mlflow.set_tracking_uri(old)
    assert n == 4 * 2 * 3  # 4 states (0, 4, 8, 12 labels) x 2 groups x (estimate, lower, upper)
    traj = aa.trajectory()
    expected = traj[traj["group"] == 1].set_index("labels")["estimate"]
    assert {m.step: m.value for m in history} == pytest.approx(expected.to_dict())


def test_mlflow_dead_server_costs_a_warning_not_the_assessment():
    mlflow = pytest.importorskip("mlflow")
    skfair_measures_mlflow = pytest.importorskip("skfair_measures_mlflow")
    y_pred, scores, groups, y_true = _simulated([0.9, 0.7], n_per_group=20)
    aa = _run(ActiveAssessment(y_pred, scores, sensitive_features=groups, random_state=0), y_true, 4, 8)
    before = aa.trajectory()
    old = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri("http://127.0.0.1:9")
    try:
        t0 = time.monotonic()
        with pytest.warns(skfair_measures_mlflow.FairnessLoggingWarning):
            n = skfair_measures_mlflow.log_active_trajectory(aa, timeout=1.0)
        elapsed = time.monotonic() - t0
    finally:
        mlflow.set_tracking_uri(old)
    assert n == 0 and elapsed < 15
    pd.testing.assert_frame_equal(aa.trajectory(), before)


# -- one definition of the rates, one rule for the positive class -------------------------


@pytest.mark.parametrize("key", ["acc", "tpr", "fnr", "fpr", "tnr", "ppv", "fdr", "npv", "for", "selection_rate"])
def test_every_rate_counts_what_the_base_metric_of_the_core_counts(key):
    from skfair_measures.active import ActiveMetric
    from skfair_measures.base import get_base

    rng = np.random.default_rng(1)
    n = 120
    groups = rng.choice(["a", "b"], n)
    y_pred, y_true = rng.integers(0, 2, n), rng.integers(0, 2, n)
    aa = ActiveAssessment(
        y_pred,
        rng.uniform(0.05, 0.95, n),
        sensitive_features=groups,
        metric=ActiveMetric(key),
        prior="uniform",
        y_true=y_true,
    )
    gw = aa.groupwise()
    for g in ("a", "b"):
        c = np.zeros((2, 2))
        np.add.at(c, (y_true[groups == g], y_pred[groups == g]), 1)
        assert gw.loc[g, "estimate"] == pytest.approx(
            (get_base(key).from_counts(c) * gw.loc[g, "counted"] + 1) / (gw.loc[g, "counted"] + 2)
        )


def test_string_predictions_without_pos_label_name_pos_label_and_the_fix():
    rng = np.random.default_rng(0)
    n = 40
    y_pred = rng.choice(["no", "yes"], n)
    scores = rng.uniform(0.05, 0.95, n)
    groups = rng.choice(["f", "m"], n)
    for metric, s in (("acc", scores), ("tpr", np.column_stack([1 - scores, scores]))):
        with pytest.raises(ValueError, match=r"pos_label is not given.*pass pos_label=.*e\.g\. pos_label='yes'"):
            ActiveAssessment(y_pred, s, sensitive_features=groups, metric=metric)
    # accuracy with the predict_proba matrix needs no positive class; a named one is used as given
    ActiveAssessment(y_pred, np.column_stack([1 - scores, scores]), sensitive_features=groups)
    aa = ActiveAssessment(y_pred, scores, sensitive_features=groups, metric="tpr", pos_label="yes")
    assert aa.classes[aa._pool.pos_code] == "yes"
