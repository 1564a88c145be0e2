"""A refused interval is logged as NaN bounds with its reason next to them."""

import math

from skfair_measures_mlflow._collect import collect

import skfair_measures as sfm
from skfair_measures.results import Result


class _Refused(Result):
    """An estimate whose bootstrap left too many replicates undefined (stand-in for a proxy result)."""

    key = "fairness.pp"
    value = 0.12
    kind = "estimate"
    measure = sfm.msr("fairness.pp")

    def interval(self, prob=0.95):
        return (math.nan, math.nan)

    def interval_reason(self, prob=0.95):
        return "6 of 100 replicates are undefined, more than the 2.5% tail"


class _Given(_Refused):
    def interval(self, prob=0.95):
        return (0.1, 0.14)

    def interval_reason(self, prob=0.95):
        return None


def test_refused_interval_carries_its_reason():
    p = collect({"proxy": _Refused()}, artifacts=False)
    lower = [k for k in p.metrics if k.endswith("interval_lower")]
    assert lower and math.isnan(p.metrics[lower[0]])
    (tag,) = [k for k in p.tags if k.endswith("interval_refused")]
    assert "6 of 100" in p.tags[tag]


def test_given_interval_has_no_refusal_tag():
    p = collect({"proxy": _Given()}, artifacts=False)
    assert not [k for k in p.tags if k.endswith("interval_refused")]
