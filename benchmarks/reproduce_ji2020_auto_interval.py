"""auto's interval before and after the guaranteed-interval rule, on the stored runs of the method comparison.

Each stored run of ``reproduce_ji2020_methods.py`` (``results/ji2020_methods_runs.jsonl``)
keeps its seed, so its labeled rows are drawn again (``labeled_draw``). Before: the
interval auto reported then (BCR at the default rectifier scale, or BB where the
calibration checks failed). After: what ``posterior()`` now reports below
``INTERVAL_MIN_LABELS`` labeled rows per group and rate, the guaranteed interval
(prediction-powered by the run's unlabeled scores) widened to hold the same estimate.
The estimate is unchanged, so the error column does not move.

    python benchmarks/reproduce_ji2020_auto_interval.py --cells "german_age:LR:10,compas_vr_sex:*:40"
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import skfair_measures as sfm
from skfair_measures.bayes._auto import checked_method
from skfair_measures.bayes._guaranteed import Guaranteed

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reproduce_ji2020 as base  # noqa: E402
import reproduce_ji2020_methods as methods  # noqa: E402

METRICS = ("acc", "tpr")


def guaranteed_interval(y, s, codes, mask, estimate: dict[str, float]) -> dict[str, tuple[float, float]]:
    """The guaranteed 95% interval of each signed Delta (group 1 - group 0), widened to hold ``estimate``."""
    data = methods.fit_data(y, s, codes, mask)
    ms = [sfm.msr(f"fairness.{m}", operation="diff_to_reference", reference=0) for m in METRICS]
    bases = tuple(m.base for m in ms)
    box = Guaranteed().group_draws(data, bases, chains=1, draws=1, rng=np.random.default_rng(0), seed=0).confidence
    out = {}
    for metric, m in zip(METRICS, ms, strict=True):
        lo, hi = box.measure_interval(m, data.groups, 0.95)
        est = estimate.get(metric)
        if est is not None:
            lo, hi = min(lo, est), max(hi, est)
        out[metric] = (float(lo), float(hi))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", required=True, help="comma-separated dataset:model:n_L patterns")
    ap.add_argument("--runs", type=int, default=100, help="stored runs per cell to use (the first ones)")
    ap.add_argument("--cache", type=Path, default=methods.DEFAULT_CACHE)
    args = ap.parse_args(argv)
    pats = [p.strip() for p in args.cells.split(",") if p.strip()]
    rows = methods.at_scale(base.read_cache(args.cache), methods.RECTIFIER_SCALE)
    rows = [
        r
        for r in rows
        if r["run"] < args.runs and any(fnmatch.fnmatch(f"{r['dataset']}:{r['model']}:{r['n_l']}", p) for p in pats)
    ]
    out, loaded = [], {}
    for r in rows:
        y, s, codes, mask = methods.run_rows(r, loaded)
        name, _ = checked_method("bcr", methods.fit_data(y, s, codes, mask))
        before = r[name]
        after = guaranteed_interval(y, s, codes, mask, {m: before[m][0] for m in METRICS if before[m][0] is not None})
        for m in METRICS:
            if before[m][0] is None:
                continue
            t = r["truth"][m]
            out.append(
                {
                    "dataset": r["dataset"],
                    "model": r["model"],
                    "n_l": r["n_l"],
                    "metric": m,
                    "bb": r["bb"][m][1] <= t <= r["bb"][m][2],
                    "bb_w": r["bb"][m][2] - r["bb"][m][1],
                    "before": before[m][1] <= t <= before[m][2],
                    "before_w": before[m][2] - before[m][1],
                    "after": after[m][0] <= t <= after[m][1],
                    "after_w": after[m][1] - after[m][0],
                }
            )
    df = pd.DataFrame(out)
    agg = df.groupby(["dataset", "model", "n_l", "metric"]).agg(
        runs=("after", "size"),
        bb=("bb", "mean"),
        before=("before", "mean"),
        after=("after", "mean"),
        bb_w=("bb_w", "mean"),
        before_w=("before_w", "mean"),
        after_w=("after_w", "mean"),
    )
    print("| cell | metric | runs | coverage BB / auto before / auto after (%) | mean width BB / before / after |")
    print("|---|---|---|---|---|")
    for (d, mo, n, m), a in agg.iterrows():
        print(
            f"| {d} {mo} n_L={n} | Δ {m} | {int(a.runs)} | {100 * a.bb:.0f} / {100 * a.before:.0f} / "
            f"**{100 * a.after:.0f}** | {a.bb_w:.2f} / {a.before_w:.2f} / {a.after_w:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
