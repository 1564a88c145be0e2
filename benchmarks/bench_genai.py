"""Coverage and speed of GenAI group disparities (docs/genai.md).

Three measurements, seeded:

1. judge + human labels: 2,000 traces of two groups (half each), a human outcome with
   rates 0.30 and 0.40 (the traffic's difference 0.10 is the target), an LLM judge
   that errs differently per group, 150 human labels on a random subset. The
   prediction-powered interval (``outcome_disparity(..., judge=)``) against intervals
   from the 150 human labels alone: Newcombe's hybrid score interval as statsmodels
   computes it (``confint_proportions_2indep(method="newcomb")``, uncorrected: the
   width reference) and the package's labels-only interval (continuity-corrected); and
   the judge's own difference (the package's interval of the judge's outcomes on all
   traces, which misses: the judge's errors differ by group). Judges: a good one (about
   89% agreement), a poor one (about 68%).
2. counterfactual pairs: binary outcomes of the two members of each pair, a
   difference of 0.10 in the traffic; Tango's interval over 60 and 200 pairs.
3. ``group_disparity`` on a frame of 10,000 traces shaped as ``mlflow.search_traces``
   returns it (labels only and with a judge), ``log=False``: median of 5 calls.

Usage::

    python benchmarks/bench_genai.py [--runs 1000]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from skfair_measures.outcomes import outcome_disparity, paired_disparity

JUDGES = {"good": ((0.10, 0.12), (0.08, 0.16)), "poor": ((0.30, 0.35), (0.25, 0.45))}


def traffic(rng, errors, n=2000, labels=150, rates=(0.30, 0.40)):
    """Human outcome, group, judge outcome; the human outcome is NaN off the labelled subset."""
    b = rng.random(n) < 0.5
    y = rng.random(n) < np.where(b, rates[1], rates[0])
    p_wrong = np.where(y, np.where(b, errors[1][1], errors[0][1]), np.where(b, errors[1][0], errors[0][0]))
    judge = np.where(rng.random(n) < p_wrong, ~y, y)
    labelled = np.zeros(n, bool)
    labelled[rng.choice(n, labels, replace=False)] = True
    return np.where(labelled, y, np.nan), np.where(b, "b", "a"), judge.astype(float), y


def newcombe_uncorrected(y: np.ndarray, g: np.ndarray) -> tuple[float, float]:
    """Newcombe's hybrid score interval (method 10) of ``rate_b - rate_a`` on the labelled items, by statsmodels."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    lab = ~np.isnan(y)
    yb, ya = y[lab & (g == "b")], y[lab & (g == "a")]
    return tuple(map(float, confint_proportions_2indep(yb.sum(), yb.size, ya.sum(), ya.size, method="newcomb")))


def judge_coverage(runs: int, seed: int = 0) -> pd.DataFrame:
    rows = []
    for name, errors in JUDGES.items():
        rng, out = np.random.default_rng(seed), {"ppi": [], "newcombe": [], "labels only (cc)": [], "judge only": []}
        agree, here = [], []  # the human-level difference on these 2,000 traces
        for _ in range(runs):
            y, g, judge, y_all = traffic(rng, errors)
            agree.append(np.mean(judge == y_all))
            here.append(y_all[g == "b"].mean() - y_all[g == "a"].mean())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out["ppi"].append(outcome_disparity(y, g, judge=judge).interval())
            out["newcombe"].append(newcombe_uncorrected(y, g))
            out["labels only (cc)"].append(outcome_disparity(y, g).interval())
            out["judge only"].append(outcome_disparity(judge, g).interval())
        ref = np.median(np.diff(np.array(out["newcombe"]), axis=1))
        for method, bounds in out.items():
            b = np.array(bounds)
            width = np.median(b[:, 1] - b[:, 0])
            rows.append(
                {
                    "judge": f"{name} ({np.mean(agree):.0%} agreement)",
                    "interval": method,
                    "coverage": np.mean((b[:, 0] <= 0.10) & (0.10 <= b[:, 1])),
                    "coverage (these traces)": np.mean((b[:, 0] <= here) & (here <= b[:, 1])),
                    "median width": width,
                    "width / Newcombe": width / ref,
                }
            )
    return pd.DataFrame(rows)


def pair_coverage(runs: int, seed: int = 1) -> pd.DataFrame:
    cells = np.array([0.25, 0.05, 0.15, 0.55])  # both, first only, second only, neither: difference 0.10
    rows = []
    for pairs in (60, 200):
        rng, hit, widths = np.random.default_rng(seed), 0, []
        for _ in range(runs):
            k = rng.choice(4, size=pairs, p=cells)
            lo, hi = paired_disparity(np.isin(k, (0, 1)), np.isin(k, (0, 2))).interval()
            hit += lo <= 0.10 <= hi
            widths.append(hi - lo)
        rows.append({"pairs": pairs, "coverage": hit / runs, "median width": np.median(widths)})
    return pd.DataFrame(rows)


def trace_frame(n: int = 10_000, seed: int = 2) -> pd.DataFrame:
    """A frame with search_traces' columns that group_disparity reads: trace_id, request, assessments."""
    rng = np.random.default_rng(seed)
    y, g, judge, _ = traffic(rng, JUDGES["good"], n=n, labels=750)

    def items(i):
        out = [{"assessment_name": "judge_refused", "feedback": {"value": bool(judge[i])}, "valid": True}]
        if not np.isnan(y[i]):
            out.append({"assessment_name": "refused", "feedback": {"value": bool(y[i])}, "valid": True})
        return out

    return pd.DataFrame(
        {
            "trace_id": [f"tr-{i}" for i in range(n)],
            "request": [{"question": "q", "dialect": d} for d in g],
            "assessments": [items(i) for i in range(n)],
        }
    )


def speed(repeats: int = 5) -> pd.DataFrame:
    from skfair_measures_mlflow.genai import group_disparity

    frame, rows = trace_frame(), []
    for label, kwargs in (
        ("labels only", {"assessment": "judge_refused"}),
        ("judge", {"assessment": "refused", "judge": "judge_refused"}),
    ):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                group_disparity(frame, group="dialect", log=False, **kwargs)
            times.append(time.perf_counter() - start)
        rows.append({"call": f"group_disparity, 10,000 traces, {label}", "median seconds": np.median(times)})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    for table in (judge_coverage(args.runs), pair_coverage(args.runs), speed()):
        print(table.to_string(index=False, float_format="%.3f"), end="\n\n")


if __name__ == "__main__":
    main()
