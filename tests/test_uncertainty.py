"""The one result type of an estimate with its uncertainty: interval, probabilities, verdict, summary row."""

import math

import numpy as np
import pandas as pd
import pytest

import skfair_measures as sfm
from skfair_measures.results import DEFAULT_EPS, DEFAULT_PROB
from skfair_measures.uncertainty import SUMMARY_COLUMNS, Estimate, summarize


def _posterior(draws, value=None, center=0.0):
    draws = np.asarray(draws, dtype=float)
    value = float(np.mean(draws)) if value is None else value
    return Estimate(
        "fairness.tpr", value, construction="Beta-Binomial posterior", draws=draws, posterior=True, center=center
    )


def test_public_names():
    assert sfm.Estimate is Estimate and sfm.summarize is summarize
    assert DEFAULT_PROB == 0.95 and Estimate.prob == DEFAULT_PROB


def test_posterior_draws_give_interval_probabilities_and_verdict():
    draws = np.random.default_rng(0).normal(0.1, 0.01, 4000)
    est = _posterior(draws)
    lo, hi = est.interval()
    assert lo == pytest.approx(np.quantile(draws, 0.025)) and hi == pytest.approx(np.quantile(draws, 0.975))
    assert est.prob_within(0.05) == pytest.approx(np.mean(np.abs(draws) <= 0.05))
    assert est.prob_greater(0.1) == pytest.approx(np.mean(draws > 0.1))
    assert est.verdict(0.05) == "exceeds" and est.verdict(0.2) == "within" and est.verdict(0.1) == "inconclusive"
    assert est.no_prob_reason is None


def test_a_ratio_is_judged_around_its_center():
    est = _posterior(np.random.default_rng(1).normal(0.97, 0.005, 2000), center=1.0)
    assert est.verdict(0.05) == "within" and est.prob_within(0.05) > 0.99


def test_a_confidence_interval_gives_no_probability_and_says_why():
    est = Estimate("fairness.fpr", 0.03, construction="betting, without replacement", interval=lambda p: (0.0, p / 10))
    assert est.interval(0.5) == (0.0, 0.05)
    assert math.isnan(est.prob_within(0.05)) and math.isnan(est.prob_greater(0.0))
    assert "betting, without replacement" in est.no_prob_reason and "no probabilities" in est.no_prob_reason
    row = est.summary(prob=0.5)
    assert math.isnan(row.loc[0, "prob_within"]) and "no probabilities" in row.loc[0, "note"]
    assert row.loc[0, "verdict"] == "within"


def test_fixed_bounds_are_valid_at_their_level_only():
    est = Estimate("fairness.tpr", 0.1, construction="Wilson score", interval=(0.05, 0.2), prob=0.9)
    assert est.interval() == est.interval(0.9) == (0.05, 0.2)
    with pytest.raises(ValueError, match=r"prob=0\.95.*prob=0\.9 only"):
        est.interval(0.95)


def test_bad_levels_and_tolerances_are_refused_by_name():
    est = _posterior([0.0, 0.1, 0.2])
    with pytest.raises(ValueError, match="prob=95"):
        est.interval(95)
    with pytest.raises(ValueError, match="eps=-0.1"):
        est.verdict(-0.1)
    with pytest.raises(ValueError, match="eps=nan"):
        est.prob_within(float("nan"))
    with pytest.raises(ValueError, match="interval="):
        Estimate("fairness.tpr", 0.1, construction="Wilson score")


def test_an_undefined_value_has_nan_everything_and_a_reason():
    est = Estimate(
        "fairness.ppv",
        float("nan"),
        construction="percentile bootstrap",
        draws=[0.1, 0.2],
        reason="ppv undefined for group 'b'",
    )
    assert all(math.isnan(b) for b in est.interval())
    assert est.verdict(0.05) == "inconclusive"
    row = est.summary().iloc[0]
    assert "ppv undefined" in row["note"] and math.isnan(row["value"])


def test_too_many_undefined_replicates_refuse_the_interval_and_say_so():
    est = Estimate("fairness.tpr", 0.1, construction="percentile bootstrap", draws=[0.1, np.nan, 0.2, 0.3])
    assert all(math.isnan(b) for b in est.interval())
    assert "1 of 4 bootstrap replicates" in est.note()


def test_summary_row_and_table_have_the_one_schema():
    a = _posterior(np.linspace(0.0, 0.02, 101))
    b = Estimate(
        "fairness.fpr", 0.2, construction="Wilson score", interval=(0.15, 0.3), n=50, target="population", prob=0.9
    )
    row = a.summary()
    assert tuple(row.columns) == SUMMARY_COLUMNS and len(row) == 1
    assert row.loc[0, "eps"] == DEFAULT_EPS and row.loc[0, "prob"] == DEFAULT_PROB
    table = summarize({"a": a, "b": b}, prob=0.9, eps=0.1)
    assert tuple(table.columns) == SUMMARY_COLUMNS
    assert table["measure"].tolist() == ["fairness.tpr", "fairness.fpr"]
    assert table["verdict"].tolist() == ["within", "exceeds"] and table.loc[1, "target"] == "population"
    assert summarize([table.iloc[[0]], b]).shape == (2, len(SUMMARY_COLUMNS))
    assert tuple(summarize([]).columns) == SUMMARY_COLUMNS


def test_to_dict_is_json_friendly():
    import json

    est = Estimate("fairness.fpr", 0.2, construction="Wilson score", interval=(0.1, 0.3), n=50)
    out = est.to_dict()
    json.dumps(out)
    assert out["lower"] == 0.1 and out["prob_within"] is None and out["construction"] == "Wilson score"
    assert "fairness.fpr" in repr(est) and isinstance(est.summary(), pd.DataFrame)
