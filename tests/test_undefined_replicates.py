"""One rule for undefined bootstrap replicates: results.percentile_interval and the bootstrap result."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import skfair_measures as sfm
from skfair_measures import BootstrapResult
from skfair_measures.results import interval_refusal, percentile_interval, replicate_se


def _draws(n: int, n_undefined: int) -> np.ndarray:
    """n evenly spread replicates in [0, 1], the first n_undefined of them NaN."""
    draws = np.linspace(0.0, 1.0, n)
    draws[:n_undefined] = np.nan
    return draws


# -- the rule ----------------------------------------------------------------------------
def test_no_undefined_replicate_gives_the_percentile_interval_silently():
    draws = np.random.default_rng(0).normal(size=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lo, hi = percentile_interval(draws, 0.9, estimate=0.0, key="k")
    assert (lo, hi) == tuple(np.quantile(draws, [0.05, 0.95]))


def test_share_within_one_tail_uses_the_defined_replicates_and_warns():
    draws = _draws(1000, 10)  # 1% undefined, a 95% interval's tail holds 2.5%
    with pytest.warns(sfm.UndefinedReplicatesWarning, match=r"10 of 1000 .* of k are undefined.*uses the other 990"):
        lo, hi = percentile_interval(draws, 0.95, estimate=0.5, key="k")
    assert (lo, hi) == pytest.approx(tuple(np.quantile(draws[10:], [0.025, 0.975])))
    assert interval_refusal(draws, 0.95) is None


def test_share_beyond_one_tail_refuses_the_interval_and_warns():
    draws = _draws(1000, 100)  # 10% undefined
    with pytest.warns(sfm.UndefinedReplicatesWarning, match=r"100 of 1000 .* of k are undefined.*refused \(NaN"):
        lo, hi = percentile_interval(draws, 0.95, estimate=0.5, key="k")
    assert np.isnan(lo) and np.isnan(hi)
    assert "100 of 1000" in interval_refusal(draws, 0.95)
    # the same replicates give an 80% interval: its tails hold 10% each
    with pytest.warns(sfm.UndefinedReplicatesWarning, match="uses the other 900"):
        assert np.isfinite(percentile_interval(draws, 0.8, estimate=0.5, key="k")).all()


def test_the_boundary_is_the_tail_mass_itself():
    assert interval_refusal(_draws(200, 5), 0.95) is None  # 2.5% exactly: given
    assert interval_refusal(_draws(200, 6), 0.95) is not None  # 3%: refused


def test_undefined_estimate_gives_nan_bounds_without_a_replicate_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lo, hi = percentile_interval(_draws(100, 50), 0.95, estimate=float("nan"), key="k")
    assert np.isnan(lo) and np.isnan(hi)


def test_cause_is_named_and_infinite_replicates_count_as_undefined():
    draws = np.r_[np.linspace(0, 1, 99), np.inf]
    with pytest.warns(sfm.UndefinedReplicatesWarning, match=r"1 of 100 .*undefined \(a reason\)"):
        percentile_interval(draws, 0.9, estimate=0.5, key="k", cause="a reason")


@pytest.mark.parametrize("prob", [0.0, 1.0, 95, "0.95"])
def test_bad_prob_is_refused_with_the_argument_named(prob):
    with pytest.raises(ValueError, match="prob=.*in \\(0, 1\\)"):
        percentile_interval(_draws(10, 0), prob, estimate=0.5, key="k")


def test_replicate_se_uses_the_defined_replicates():
    draws = np.array([1.0, 2.0, 3.0, np.nan])
    assert replicate_se(draws, estimate=2.0) == pytest.approx(1.0)
    assert np.isnan(replicate_se(draws, estimate=float("nan")))
    assert np.isnan(replicate_se([1.0, np.nan], estimate=1.0))


# -- bootstrap results ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def boot():
    rng = np.random.default_rng(0)
    y, p, a = rng.integers(0, 2, 2000), rng.integers(0, 2, 2000), rng.integers(0, 2, 2000)
    return sfm.bootstrap(sfm.msr("fairness.tpr"), y, p, sensitive_features=a, n_boot=1000, random_state=0)


def test_bootstrap_with_one_percent_undefined_gives_an_interval_and_warns(boot):
    draws = boot.draws.copy()
    draws[:10] = np.nan
    res = BootstrapResult(boot.point, draws)
    with pytest.warns(sfm.UndefinedReplicatesWarning, match=r"10 of 1000 bootstrap replicates of fairness.tpr"):
        lo, hi = res.interval()
    assert lo < res.value < hi
    assert res.interval_reason() is None


def test_bootstrap_with_ten_percent_undefined_refuses_the_interval(boot):
    draws = boot.draws.copy()
    draws[:100] = np.nan
    res = BootstrapResult(boot.point, draws)
    with pytest.warns(sfm.UndefinedReplicatesWarning, match=r"100 of 1000 .*fairness.tpr.*refused"):
        lo, hi = res.interval(0.95)
    assert np.isnan(lo) and np.isnan(hi)
    assert "100 of 1000" in res.interval_reason()
    with pytest.warns(sfm.UndefinedReplicatesWarning):
        out = json.loads(json.dumps(res.to_dict()))
    assert out["lower"] is None and out["upper"] is None and "100 of 1000" in out["interval_reason"]
    assert np.isfinite(res.se)  # the spread of the defined replicates; the interval is what is refused


def test_a_small_group_without_positives_in_some_replicates():
    # group "b": 40 rows with one positive, so about (39/40)^40 = 36% of replicates have no positive
    y = np.r_[np.tile([1, 0], 500), np.r_[1, np.zeros(39, int)]]
    p = np.r_[np.tile([1, 1, 0, 0], 250), np.r_[1, np.zeros(39, int)]]
    a = np.r_[np.full(1000, "a"), np.full(40, "b")]
    res = sfm.bootstrap(sfm.msr("fairness.tpr"), y, p, sensitive_features=a, n_boot=400, random_state=0)
    share = np.isnan(res.draws).mean()
    assert 0.25 < share < 0.5
    # the percentile interval of these replicates is refused ...
    with pytest.warns(sfm.UndefinedReplicatesWarning, match=r"of 400 .*zero denominator.*refused"):
        assert np.isnan(
            percentile_interval(res.draws, 0.95, estimate=res.value, key=res.key, cause="zero denominator")
        ).all()
    # ... so a rate whose denominator is this small reads a score interval (one positive of one: TPR in [0.03, 1])
    lo, hi = res.interval()
    assert res.construction.startswith("Newcombe") and lo <= res.value <= hi and hi - lo > 0.5
