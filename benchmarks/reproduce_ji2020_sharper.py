"""Auto's interval on the papers' score files at 20 and 100 labels: coverage and width per cell, old and new.

For each stored run of ``reproduce_ji2020_methods.py`` with ``n_L`` in {20, 100} and run
index below ``--runs``, the run's seed redraws its labeled rows and this script computes
auto's 95% interval of the signed Δ (group 1 - group 0) of accuracy and TPR as the library
reports it, "new" by its own rule (``auto_interval``: below 200 labels per rate and group,
every run here) and construction (``labels_box``): the labels' Jeffreys posterior (both
rates fitted together, as ``posteriors()`` does), widened to hold BC's estimate (the
run's stored BC posterior mean, the estimate auto reports). "old" is auto's interval before
this change, computed on the same rows (``reproduce_ji2020_guaranteed.guaranteed``: the
guaranteed betting interval, prediction-powered, about the audited rows, widened to hold
the same estimate); BB's
interval is the stored one (Beta-Binomial, uniform Dirichlet prior on the confusion cells,
accuracy, TPR and FPR fitted together). Per (dataset, model, n_L, measure) cell: coverage
of the truth (the Δ on all rows of the score file) and the median width, as a ratio of
BB's median width over the same runs. A run where BB is undefined (no labeled positive
in a group; auto's interval then holds that group's prior) counts for auto's coverage
and not for the widths.

    python benchmarks/reproduce_ji2020_sharper.py --runs 30     # writes results/ji2020_sharper_cells.csv
    python benchmarks/reproduce_ji2020_sharper.py --report-only # the table into docs/bayes.md
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import skfair_measures as sfm
from skfair_measures.bayes._auto import auto_interval
from skfair_measures.bayes._bb import BetaBinomial
from skfair_measures.bayes._guaranteed import labels_box

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reproduce_ji2020 as base  # noqa: E402
import reproduce_ji2020_guaranteed as gmod  # noqa: E402
import reproduce_ji2020_methods as methods  # noqa: E402

HERE = Path(__file__).resolve().parent
CELLS = HERE / "results" / "ji2020_sharper_cells.csv"
MARKERS = ("<!-- sharper:start -->", "<!-- sharper:end -->")
DOC = HERE.parent / "docs" / "bayes.md"
MEASURES = [sfm.msr(f"fairness.{m}", operation="diff_to_reference", reference=0) for m in gmod.METRICS]


def auto_now(run: dict, data) -> dict[str, tuple[float, float]]:
    """auto's 95% interval of each signed Δ in a stored run, by the library's rule and construction."""
    kind, why = auto_interval(data, gmod.BASES)
    assert kind == "jeffreys", why
    fit = BetaBinomial(prior="jeffreys").group_draws(
        data, gmod.BASES, chains=4, draws=1000, rng=np.random.default_rng(run["seed"]), seed=run["seed"]
    )
    box = labels_box(data, gmod.BASES, fit, run["seed"])
    out = {}
    for metric, m in zip(gmod.METRICS, MEASURES, strict=True):
        lo, hi = box.measure_interval(m, data.groups, 0.95)
        est = run["bc"][metric][0]
        out[metric] = (lo, hi) if est is None else (min(lo, est), max(hi, est))
    return out


def auto_before(run: dict, y, s, codes, mask) -> dict[str, tuple[float, float]]:
    """auto's 95% interval before this change: the guaranteed one (betting, prediction-powered), widened to BC's."""
    gu = gmod.guaranteed(y, s, codes, mask)
    est = {m: run["bc"][m][0] for m in gmod.METRICS}
    return {m: (gu[m][1], gu[m][2]) if est[m] is None else (min(gu[m][1], est[m]), max(gu[m][2], est[m])) for m in est}


def compute(runs: int) -> pd.DataFrame:
    rows = [r for r in methods.at_scale(base.read_cache(methods.DEFAULT_CACHE), methods.RECTIFIER_SCALE)]
    loaded: dict = {}
    recs, start = [], time.perf_counter()
    for r in rows:
        key = (r["dataset"], r["model"], r["n_l"], r["run"])
        if r["n_l"] not in (20, 100) or r["run"] >= runs:
            continue
        y, s, codes, mask = methods.run_rows(r, loaded)
        new, old = auto_now(r, methods.fit_data(y, s, codes, mask)), auto_before(r, y, s, codes, mask)
        for m in gmod.METRICS:
            t = r["truth"][m]
            rec = {"dataset": key[0], "model": key[1], "n_l": key[2], "metric": m}
            for name, (lo, hi) in (("bb", r["bb"][m][1:]), ("old", old[m]), ("new", new[m])):
                ok = lo is not None
                rec[f"{name}_cover"] = float(lo <= t <= hi) if ok else np.nan
                rec[f"{name}_width"] = hi - lo if ok and r["bb"][m][1] is not None else np.nan  # BB's runs
            recs.append(rec)
    print(f"{len(recs)} (run, measure) rows in {time.perf_counter() - start:.0f} s", flush=True)
    df = pd.DataFrame(recs)
    cells = df.groupby(["dataset", "model", "n_l", "metric"], sort=False).agg(
        runs=("bb_cover", "size"),
        bb_cover=("bb_cover", "mean"),
        bb_width=("bb_width", "median"),
        old_cover=("old_cover", "mean"),
        old_width=("old_width", "median"),
        new_cover=("new_cover", "mean"),
        new_width=("new_width", "median"),
    )
    cells["old_ratio"] = cells["old_width"] / cells["bb_width"]
    cells["new_ratio"] = cells["new_width"] / cells["bb_width"]
    return cells.reset_index()


def markdown(cells: pd.DataFrame) -> str:
    lines = [
        f"{int(cells['runs'].min())}-{int(cells['runs'].max())} runs per cell; coverage of the 95% interval and "
        "median width / BB's median width (auto below 200 labels, old: the guaranteed betting interval, new: the "
        "labels' Jeffreys posterior, each widened to hold BC's estimate; `benchmarks/reproduce_ji2020_sharper.py`).",
        "",
        "| dataset | model | n_L | Δ | BB cover | auto cover old / new | auto width / BB old / new |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in cells.itertuples():
        lines.append(
            f"| {c.dataset} | {c.model} | {c.n_l} | {c.metric} | {c.bb_cover:.2f} | {c.old_cover:.2f} / "
            f"{c.new_cover:.2f} | {c.old_ratio:.2f} / {c.new_ratio:.2f} |"
        )
    for n_l in (20, 100):
        sub = cells[cells["n_l"] == n_l]
        lines.append(
            f"| **all, n_L = {n_l}** | | | | min {sub['bb_cover'].min():.2f} | min {sub['old_cover'].min():.2f} / "
            f"{sub['new_cover'].min():.2f} | median {sub['old_ratio'].median():.2f} / {sub['new_ratio'].median():.2f}"
            f", max {sub['old_ratio'].max():.2f} / {sub['new_ratio'].max():.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100, help="runs per cell (the first ones stored)")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    if not args.report_only:
        compute(args.runs).to_csv(CELLS, index=False)
    cells = pd.read_csv(CELLS)
    text = DOC.read_text()
    a, b = text.index(MARKERS[0]) + len(MARKERS[0]), text.index(MARKERS[1])
    DOC.write_text(text[:a] + "\n" + markdown(cells) + "\n" + text[b:])
    print(json.dumps({"cells": len(cells), "min_new_cover": float(cells["new_cover"].min())}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
