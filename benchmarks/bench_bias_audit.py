"""Coverage of the bias audit's impact-ratio intervals: a seeded simulation of audits.

A held-out scenario of the kind the rule describes (not in the tests): an applicant pool
of ``--rows`` people in the rule's seven race/ethnicity categories x two sexes, one race
under 2% of the pool (excluded from the impact ratios with ``exclude_below=0.02``),
intersectional cells from about 0.7% to 19% of the pool, 5% of the sex and 4% of the
race/ethnicity values unknown (at random), and rates per cell from 0.12 to 0.55.

Each simulated audit draws the pool afresh, then:

- *selection*: every person is selected with their cell's probability;
- *scoring*: every person gets a score ~ Normal(mean of their cell, 1); the true scoring
  rate of a category is the chance to score above the population's median score.

The true impact ratio of a category is its true rate over the highest true rate of the
categories the audit kept (the excluded ones are never the reference); an interval covers
when it holds it. The table gives, per table and per category, the share of the audits whose
interval covered, for both kinds, and the first audit's tables are checked against the
rule's definitions computed directly (counts, rates, ratio to the highest kept rate).

Usage::

    python benchmarks/bench_bias_audit.py --reps 1000 --seed 20261127
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy import optimize, stats

from skfair_measures.audits import bias_audit

RACES = ["Hispanic or Latino", "White", "Black", "NHPI", "Asian", "Native American", "Two or More"]
RACE_SHARE = np.array([0.17, 0.38, 0.16, 0.015, 0.19, 0.04, 0.045])  # Native Hawaiian or Pacific Islander: 1.5%
FEMALE = np.array([0.48, 0.5, 0.42, 0.5, 0.47, 0.45, 0.55])  # share of women per race
# selection probability and score mean per (sex, race) cell
SELECT = {"Male": [0.40, 0.50, 0.30, 0.35, 0.55, 0.25, 0.45], "Female": [0.35, 0.45, 0.20, 0.30, 0.40, 0.12, 0.42]}
MEAN = {"Male": [0.0, 0.2, -0.4, -0.1, 0.3, -0.5, 0.1], "Female": [-0.1, 0.1, -0.6, 0.0, 0.0, -0.8, 0.2]}


def cells() -> pd.DataFrame:
    rows = [
        (s, r, RACE_SHARE[i] * (FEMALE[i] if s == "Female" else 1 - FEMALE[i]), SELECT[s][i], MEAN[s][i])
        for s in ("Male", "Female")
        for i, r in enumerate(RACES)
    ]
    return pd.DataFrame(rows, columns=["sex", "race", "share", "select", "mean"])


def true_rates(c: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The true rate of every cell and its share, for the selection or the scoring rate."""
    if kind == "selected":
        return c.assign(rate=c["select"])
    median = optimize.brentq(lambda m: (c["share"] * stats.norm.cdf(m - c["mean"])).sum() - 0.5, -5, 5)
    return c.assign(rate=stats.norm.sf(median - c["mean"]))


def truth(c: pd.DataFrame) -> dict[str, pd.Series]:
    """True rate per category of each table (a category's rate is its cells' share-weighted rate)."""

    def by(keys):
        g = c.assign(w=c["share"] * c["rate"]).groupby(keys)
        return g["w"].sum() / g["share"].sum()

    inter = by(["sex", "race"])
    inter.index = [f"{s} × {r}" for s, r in inter.index]
    return {"sex": by("sex"), "race_ethnicity": by("race"), "intersectional": inter}


def draw(c: pd.DataFrame, rows: int, rng: np.random.Generator) -> pd.DataFrame:
    cell = rng.choice(len(c), rows, p=(c["share"] / c["share"].sum()).to_numpy())
    frame = pd.DataFrame({"sex": c["sex"].to_numpy()[cell], "race": c["race"].to_numpy()[cell]})
    frame["selected"] = (rng.random(rows) < c["select"].to_numpy()[cell]).astype(int)
    frame["score"] = rng.normal(c["mean"].to_numpy()[cell], 1.0)
    frame.loc[rng.random(rows) < 0.05, "sex"] = None
    frame.loc[rng.random(rows) < 0.04, "race"] = None
    return frame


def check_definitions(audit, frame: pd.DataFrame, kind: str) -> None:
    """The audit's tables equal the rule's definitions, computed here directly."""
    hit = frame["selected"] == 1 if kind == "selected" else frame["score"] > frame["score"].median()
    both = frame["sex"] + " × " + frame["race"]
    for table, cats in zip(audit.tables, (frame["sex"], frame["race"], both), strict=True):
        t = audit.tables[table].set_index("category")
        n = cats.value_counts()
        x = hit.groupby(cats).sum()
        kept = n[n / len(frame) >= 0.02].index
        rate = x / n
        assert (t["n"] == n[t.index]).all() and (t.iloc[:, 1] == x[t.index]).all(), table
        np.testing.assert_allclose(t["rate"], rate[t.index])
        np.testing.assert_allclose(t.loc[kept, "impact_ratio"], rate[kept] / rate[kept].max())
        assert t.loc[~t.index.isin(kept), "impact_ratio"].isna().all()
        assert audit.summary["unknown"][table] == cats.isna().sum()


def simulate(kind: str, reps: int, rows: int, seed: int, prob: float) -> pd.DataFrame:
    c = true_rates(cells(), kind)
    true = truth(c)
    rng = np.random.default_rng(seed)
    hits: dict[tuple[str, str], list[bool]] = {}
    for rep in range(reps):
        frame = draw(c, rows, rng)
        audit = bias_audit(frame, sex="sex", race_ethnicity="race", exclude_below=0.02, prob=prob, **{kind: kind})
        if rep == 0:
            check_definitions(audit, frame, kind)
        for table, t in audit.tables.items():
            kept = t[~t["excluded"]].set_index("category")
            ratio = true[table][kept.index] / true[table][kept.index].max()
            covered = (kept["impact_ratio_lower"] <= ratio) & (ratio <= kept["impact_ratio_upper"])
            for cat, ok in covered.items():
                hits.setdefault((table, cat), []).append(bool(ok))
    out = pd.DataFrame(
        [(table, cat, len(v), np.mean(v)) for (table, cat), v in hits.items()],
        columns=["table", "category", "audits", "coverage"],
    )
    return out.assign(kind=kind)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=1000)
    p.add_argument("--rows", type=int, default=2000)
    p.add_argument("--seed", type=int, default=20261127)
    p.add_argument("--prob", type=float, default=0.95)
    args = p.parse_args()
    started = time.perf_counter()
    res = pd.concat([simulate(k, args.reps, args.rows, args.seed, args.prob) for k in ("selected", "score")])
    wide = res.pivot_table(index=["table", "category"], columns="kind", values="coverage", sort=False)
    counts = res.pivot_table(index=["table", "category"], columns="kind", values="audits", sort=False)
    shares = cells().assign(cat=lambda d: d["sex"] + " × " + d["race"]).set_index("cat")["share"]
    print(f"{args.reps} audits of {args.rows} rows per kind, seed {args.seed}, prob {args.prob}")
    print("| table | category | share of rows | audits (sel/score) | coverage, selection | coverage, scoring |")
    print("|---|---|---:|---:|---:|---:|")
    for (table, cat), row in wide.iterrows():
        share = (
            shares.get(cat)
            if table == "intersectional"
            else shares.groupby(lambda k: k.split(" × ")[0 if table == "sex" else 1]).sum().get(cat)
        )
        n = counts.loc[(table, cat)]
        print(
            f"| {table} | {cat} | {share:.1%} | {int(n['selected'])}/{int(n['score'])} "
            f"| {row['selected']:.3f} | {row['score']:.3f} |"
        )
    for kind in ("selected", "score"):
        r = res[res["kind"] == kind]
        overall = (r["coverage"] * r["audits"]).sum() / r["audits"].sum()
        print(f"{kind}: overall {overall:.3f}, lowest category {r['coverage'].min():.3f}")
    print(f"time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
