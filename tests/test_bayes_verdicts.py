"""Simultaneous verdicts: family-wise error with 10 groups x 5 measures, draws and guaranteed box."""

from __future__ import annotations

import numpy as np
import pytest
from test_verdicts import KEYS, family_error  # the simulation, shared with the bootstrap verdicts

import skfair_measures as sfm
from skfair_measures import bayes


def _family_error(method: str, runs: int, n: int, seed: int, joint: bool = True) -> float:
    measures = [sfm.msr(key) for key in KEYS]

    def fit(y, pred, scores, groups, random_state):
        return bayes.posteriors(
            measures, y, scores, sensitive_features=groups, method=method, random_state=random_state
        )

    return family_error(fit, runs, n, seed, joint)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_family_wise_error_of_the_max_type_band_with_10_groups_and_5_measures():
    runs = 60
    err = _family_error("bb", runs, n=150, seed=1)
    assert err <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / runs), err
    # the 225 separate 95% intervals miss somewhere in most runs: the test can fail
    assert _family_error("bb", 20, n=150, seed=2, joint=False) > 0.5


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_family_wise_error_of_the_guaranteed_box_with_10_groups_and_5_measures():
    runs = 30
    err = _family_error("guaranteed", runs, n=60, seed=3)
    assert err <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / runs), err


def test_verdicts_refuse_bad_arguments_by_name():
    res = bayes.posteriors(
        [sfm.msr("fairness.acc")],
        [1, 0] * 10,
        [0.8, 0.3] * 10,
        sensitive_features=list("ab") * 10,
        method="bb",
        random_state=0,
    )
    with pytest.raises(ValueError, match="eps="):
        bayes.verdicts(res, eps=-1)
    with pytest.raises(ValueError, match="results is empty"):
        bayes.verdicts({}, eps=0.05)
