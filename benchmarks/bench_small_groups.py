"""Small groups covered: coverage of the bootstrap's interval and family-wise error of its verdicts, seeded.

Cells (each ``--runs`` seeded draws, default 1,000):

- a selection-rate difference (``fairness.cv``) and ratio (``fairness.dp_ratio``) of a
  group of 20 or 50 rows at rate 0.05 against 2,000 rows at rate 0.10 or 0.30: the
  coverage of what ``sfm.bootstrap(...).interval()`` reports now (a score interval,
  ``construction``) beside the percentile interval of the same replicates;
- the family-wise error of ``sfm.verdicts(sfm.bootstraps(...))`` with 10 groups x 5
  rates at 60 rows per group (``--fw-runs``, default 200; tests/test_verdicts.py's data);
- 1,000-row groups with about 10 positives each (TPR 0.9 and 0.78, a true gap of 0.12):
  the share of runs with a zero-width interval or a "within" verdict at eps 0.05.

    python benchmarks/bench_small_groups.py [--runs 1000] [--fw-runs 200]

Prints one JSON object per cell; docs/small_groups.md quotes them.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

import skfair_measures as sfm
from skfair_measures.results import percentile_interval


def coverage(key: str, n_small: int, p_large: float, runs: int) -> dict:
    rng = np.random.default_rng(n_small * 1000 + int(p_large * 100))
    g = np.repeat(["small", "large"], [n_small, 2000])
    p = np.where(g == "small", 0.05, p_large)
    truth = abs(0.05 - p_large) if key == "fairness.cv" else min(0.05, p_large) / max(0.05, p_large)
    now = percentile = 0
    widths = []
    for seed in range(runs):
        pred = (rng.uniform(size=g.size) < p).astype(int)
        res = sfm.bootstrap(key, np.zeros(g.size, int), pred, sensitive_features=g, n_boot=1000, random_state=seed)
        lo, hi = res.interval()
        now += lo <= truth <= hi
        widths.append(hi - lo)
        plo, phi = percentile_interval(res.draws, 0.95, estimate=res.value, key=key)
        percentile += plo <= truth <= phi
    return {
        "cell": f"{key}: {n_small} rows at 0.05 vs 2,000 at {p_large}",
        "construction": res.construction,
        "coverage": now / runs,
        "median_width": float(np.median(widths)),
        "percentile_coverage": percentile / runs,
        "runs": runs,
    }


def family_error(runs: int) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from test_verdicts import _family_error

    return {"cell": "verdicts, 10 groups x 5 rates, 60 rows per group", "family_wise_error": _family_error(runs, 60, 7)}


def small_denominator(runs: int) -> dict:
    rng = np.random.default_rng(5)
    g = np.repeat([0, 1], 1000)
    zero = within = 0
    for seed in range(runs):
        y = (rng.uniform(size=g.size) < 0.01).astype(int)
        pred = np.where(y == 1, rng.uniform(size=g.size) < np.where(g == 0, 0.9, 0.78), rng.uniform(size=g.size) < 0.1)
        res = sfm.bootstrap("fairness.tpr", y, pred.astype(int), sensitive_features=g, random_state=seed)
        table = res.pair_verdicts(0.05)
        zero += bool((table["upper"] == table["lower"]).any())
        within += bool((table["verdict"] == "within").any())
    return {"cell": "1,000-row groups, ~10 positives, TPR gap 0.12", "zero_width": zero / runs, "within": within / runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--fw-runs", type=int, default=200)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    for key in ("fairness.cv", "fairness.dp_ratio"):
        for n_small in (20, 50):
            for p_large in (0.1, 0.3):
                print(json.dumps(coverage(key, n_small, p_large, args.runs)), flush=True)
    print(json.dumps(small_denominator(args.runs)), flush=True)
    print(json.dumps(family_error(args.fw_runs)), flush=True)


if __name__ == "__main__":
    main()
