"""Coverage and width of small-sample intervals of a two-group rate difference, on a seeded synthetic grid.

The candidates for ``method="auto"``'s interval below 200 labels (``bayes/_auto.py``), on
the protocol of the papers' audits: ``N`` labels drawn at random (20 or 100), a group
share ``pi1`` of the rows (3%, 15%, 50%; both groups present), a share ``rho`` of each
group's rows in the rate's denominator (1 for accuracy; 0.3/0.3 and 0.15/0.4 for a TPR),
and every pair of group rates from {0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.98}: 441 settings.

- ``jeffreys``: the equal-tailed interval of the Jeffreys posterior of the difference
  (``Beta(k + 1/2, n - k + 1/2)`` per group: auto's interval);
- ``uniform``: the same with the uniform prior (``method="bb"``'s default, the comparator);
- ``mover_j``: MOVER-Jeffreys (Laud 2017: Jeffreys intervals around their medians);
- ``newcombe``: Newcombe's hybrid score interval (uncorrected Wilson intervals).

The distribution of the labeled counts is enumerated exactly (terms above 1e-10); the
MOVER intervals' coverage is exact, the posteriors' is estimated on 1,000 draws of the
counts from it (2,000 posterior draws each; about 1 point of Monte Carlo error). Width:
the median, as a ratio of the uniform posterior's.

    python benchmarks/auto_interval_synthetic.py                # ~30 min: results/auto_interval_synthetic.csv
    python benchmarks/auto_interval_synthetic.py --report-only  # the summary into docs/bayes.md
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "auto_interval_synthetic.csv"
DOC = HERE.parent / "docs" / "bayes.md"
MARKERS = ("<!-- synthetic:start -->", "<!-- synthetic:end -->")
NAMES = ("jeffreys", "uniform", "mover_j", "newcombe")
RATES = (0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.98)
Z = float(stats.norm.ppf(0.975))


def counts(n_labels: int, pi1: float, rho: tuple[float, float], p: tuple[float, float], tol: float = 1e-10):
    """Every (k0, n0, k1, n1) of non-negligible probability, and its probability."""
    n1 = np.arange(1, n_labels)
    share = stats.binom.pmf(n1, n_labels, pi1)
    a = np.arange(n_labels + 1)
    den = sum(
        w * np.outer(stats.binom.pmf(a, n_labels - m, rho[0]), stats.binom.pmf(a, m, rho[1]))
        for m, w in zip(n1, share / share.sum(), strict=True)
    )
    rows, probs = [], []
    for d0, d1 in zip(*np.nonzero(den > tol), strict=True):
        k0, k1 = np.arange(d0 + 1), np.arange(d1 + 1)
        pk = np.outer(stats.binom.pmf(k0, d0, p[0]), stats.binom.pmf(k1, d1, p[1])) * den[d0, d1]
        i, j = np.nonzero(pk > tol)
        rows.append(np.c_[k0[i], np.full(i.size, d0), k1[j], np.full(i.size, d1)])
        probs.append(pk[i, j])
    return np.concatenate(rows).astype(float), np.concatenate(probs)


def _jeffreys_parts(k, n):
    a, b = k + 0.5, n - k + 0.5
    lo, mid, hi = (np.where(n > 0, stats.beta.ppf(q, a, b), e) for q, e in ((0.025, 0.0), (0.5, 0.5), (0.975, 1.0)))
    return lo, mid, hi


def _wilson_parts(k, n):
    m = np.maximum(n, 1.0)
    p = k / m
    centre, half = (
        (p + Z * Z / (2 * m)) / (1 + Z * Z / m),
        Z * np.sqrt(p * (1 - p) / m + Z * Z / (4 * m * m)) / (1 + Z * Z / m),
    )
    return np.where(n > 0, centre - half, 0.0), np.where(n > 0, p, 0.5), np.where(n > 0, centre + half, 1.0)


def mover(c: np.ndarray, parts) -> tuple[np.ndarray, np.ndarray]:
    l0, p0, u0 = parts(c[:, 0], c[:, 1])
    l1, p1, u1 = parts(c[:, 2], c[:, 3])
    d = p1 - p0
    return d - np.hypot(p1 - l1, u0 - p0), d + np.hypot(u1 - p1, p0 - l0)


def posterior(c: np.ndarray, prior: float, rng: np.random.Generator, draws: int = 2000):
    def beta(k, n):
        return rng.beta(k[:, None] + prior, n[:, None] - k[:, None] + prior, (k.size, draws))

    d = beta(c[:, 2], c[:, 3]) - beta(c[:, 0], c[:, 1])
    return np.quantile(d, 0.025, axis=1), np.quantile(d, 0.975, axis=1)


def compute() -> pd.DataFrame:
    rng, recs, start = np.random.default_rng(0), [], time.perf_counter()
    for n_labels, pi1, rho in itertools.product((20, 100), (0.03, 0.15, 0.5), ((1.0, 1.0), (0.3, 0.3), (0.15, 0.4))):
        for p in itertools.product(RATES, RATES):
            c, w = counts(n_labels, pi1, rho, p)
            truth = p[1] - p[0]
            rec = {"n_labels": n_labels, "pi1": pi1, "rho": f"{rho[0]}/{rho[1]}", "p0": p[0], "p1": p[1]}
            for name, parts in (("mover_j", _jeffreys_parts), ("newcombe", _wilson_parts)):
                lo, hi = mover(c, parts)
                rec[f"{name}_cover"] = float(w[(lo <= truth + 1e-12) & (truth - 1e-12 <= hi)].sum() / w.sum())
                order = np.argsort(hi - lo)
                rec[f"{name}_width"] = float((hi - lo)[order][np.searchsorted(np.cumsum(w[order]) / w.sum(), 0.5)])
            sample = c[rng.choice(w.size, size=1000, p=w / w.sum())]
            for name, prior in (("jeffreys", 0.5), ("uniform", 1.0)):
                lo, hi = posterior(sample, prior, rng)
                rec[f"{name}_cover"] = float(np.mean((lo <= truth) & (truth <= hi)))
                rec[f"{name}_width"] = float(np.median(hi - lo))
            recs.append(rec)
        print(f"N={n_labels} pi1={pi1} rho={rho}: {time.perf_counter() - start:.0f} s", flush=True)
    return pd.DataFrame(recs)


def markdown(df: pd.DataFrame) -> str:
    """Per number of labels and size of the gap: worst and mean coverage, largest width ratio, per construction."""
    gap = pd.cut((df.p1 - df.p0).abs(), [-0.01, 0.45, 1.0], labels=["<= 0.4", ">= 0.6"])
    lines = [
        "| labels | true gap | settings | " + " | ".join(f"{n}: cover min / mean, width max" for n in NAMES) + " |",
        "|---|---|---|" + "---|" * len(NAMES),
    ]
    for (n_labels, g), sub in df.groupby([df.n_labels, gap], observed=True):
        cells = [
            f"{sub[f'{n}_cover'].min():.2f} / {sub[f'{n}_cover'].mean():.3f}, "
            f"{(sub[f'{n}_width'] / sub['uniform_width']).max():.2f}"
            for n in NAMES
        ]
        lines.append(f"| {n_labels} | {g} | {len(sub)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    if not args.report_only:
        compute().to_csv(OUT, index=False)
    df = pd.read_csv(OUT)
    text = DOC.read_text()
    a, b = text.index(MARKERS[0]) + len(MARKERS[0]), text.index(MARKERS[1])
    DOC.write_text(text[:a] + "\n" + markdown(df) + "\n" + text[b:])
    print(markdown(df))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
