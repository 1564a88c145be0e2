"""Time one Bayesian-calibration fit: n_L = 100 labeled, n_U = 10,000 unlabeled.

4 chains x (1500 warm-up + 200 draws), the paper's settings (seed 000 section 2.4:
"about 30 seconds" with JAGS). Three situations:

- cold, empty cache: a new process whose compile caches (numba's and PyTensor's)
  are empty (first use ever on a machine);
- cold, persistent cache: a new process reusing the compile caches on disk
  (every later session);
- warm: a fit in a process that has fitted before (every fit after the first).

Each cold time is wall time of the whole call in a fresh interpreter (imports,
model build, compile, sampling, post-processing of the unlabeled data). The warm
time is the median over ``--repeats`` fits on new data.

``--method auto`` (or ``bcr``) times the default of ``posterior()`` with unlabeled
scores, the rectified calibration: BC's fit plus the rectifier.
``--method ppi`` times prediction-powered inference on the same data (no MCMC):
a new process (imports included) and warm fits; ``--coverage`` runs the coverage
simulation of docs/bayes.md (PPI's 95% intervals of signed TPR / accuracy / PPV
differences over seeded runs at several n_L).

``--method guaranteed`` times the guaranteed interval (one-look betting intervals of
every group rate, union bound, through the operation) on the same data, labels only and
prediction-powered by the 10,000 unlabeled scores: warm, median of ``--repeats``. With
``--method auto`` the warm time includes auto's Jeffreys draws (100 labels are below its
row count, so auto reports the labels' Jeffreys interval) besides the calibration fit.

Usage::

    python benchmarks/bench_bayes.py                        # nutpie on the cached density, all three
    python benchmarks/bench_bayes.py --sampler nutpie-pymc  # nutpie on the PyMC graph
    python benchmarks/bench_bayes.py --sampler pymc         # PyMC's own NUTS
    python benchmarks/bench_bayes.py --method ppi           # PPI, n_L = 100, n_U = 10,000
    python benchmarks/bench_bayes.py --method auto --skip-empty  # the default of posterior() (bcr here)
    python benchmarks/bench_bayes.py --coverage --runs 400  # PPI coverage table
    python benchmarks/bench_bayes.py --method guaranteed    # the guaranteed interval, warm
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

PAPER_SECONDS = 30.0


def simulate(n: int, seed: int):
    """Two groups, scores miscalibrated differently in each (known truth)."""
    rng = np.random.default_rng(seed)
    a = rng.choice(["F", "M"], n, p=[0.35, 0.65])
    s = rng.beta(2, 2, n)
    p = np.where(a == "F", s**2, np.sqrt(s))
    y = (rng.uniform(size=n) < p).astype(int)
    return y, s, a


def one_fit(seed: int, sampler: str, method: str = "bc") -> dict:
    t0 = time.perf_counter()
    import skfair_measures as sfm
    from skfair_measures import bayes

    y, s, a = simulate(100, seed)
    _, s_u, a_u = simulate(10_000, seed + 1000)
    t1 = time.perf_counter()
    post = bayes.posterior(
        sfm.msr("fairness.acc"),
        y,
        s,
        sensitive_features=a,
        method=method,
        unlabeled_scores=s_u,
        unlabeled_sensitive=a_u,
        reference="M",
        random_state=seed,
        sampler=sampler,
        warn=False,
    )
    t2 = time.perf_counter()
    d = post.diagnostics()
    return {
        "seconds": t2 - t1,
        "import_seconds": t1 - t0,
        "compile_seconds": post.attrs["compile_seconds"],
        "sampling_seconds": d.get("seconds", float("nan")),
        "divergences": d.get("divergences", -1),
        "max_r_hat": d.get("max_r_hat", float("nan")),
        "mean": post.mean(),
        "method": post.method,
    }


def one_ppi_fit(seed: int) -> dict:
    """PPI of the signed accuracy difference and of fairness.eod (one call each), n_L = 100, n_U = 10,000."""
    t0 = time.perf_counter()
    import skfair_measures as sfm
    from skfair_measures import bayes
    from skfair_measures.bayes import AsymptoticWarning

    y, s, a = simulate(100, seed)
    _, s_u, a_u = simulate(10_000, seed + 1000)
    t1 = time.perf_counter()
    kw = dict(sensitive_features=a, method="ppi", unlabeled_scores=s_u, unlabeled_sensitive=a_u, random_state=seed)
    with warnings.catch_warnings():  # 100 labels: some groups' denominators are below 30 rows (timed anyway)
        warnings.simplefilter("ignore", AsymptoticWarning)
        post = bayes.posterior(sfm.msr("fairness.acc"), y, s, reference="M", **kw)
        t2 = time.perf_counter()
        bayes.posterior(sfm.msr("fairness.eod"), y, s, **kw)
        t3 = time.perf_counter()
    return {"seconds": t2 - t1, "eod_seconds": t3 - t2, "import_seconds": t1 - t0, "mean": post.value}


def ppi_timing(args: argparse.Namespace) -> None:
    env = dict(os.environ)
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--method", "ppi", "--seed", str(args.seed)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    wall = time.perf_counter() - t0
    cold = json.loads(next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT "))[len("RESULT ") :])
    one_ppi_fit(args.seed)  # imports ppi_py, scipy's t quantiles
    warm = [one_ppi_fit(args.seed + 10 + i) for i in range(args.repeats)]
    print(f"PPI, n_L = 100, n_U = 10,000, 4 x 1000 draws; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()}")
    print(
        f"new process, whole call incl. interpreter start: {wall:.2f} s "
        f"(import skfair_measures {cold['import_seconds']:.2f} s, first fit incl. ppi_py import "
        f"{cold['seconds']:.2f} s)"
    )
    print(
        f"warm, fairness.acc with reference (median of {args.repeats}): "
        f"{1000 * np.median([w['seconds'] for w in warm]):.1f} ms"
    )
    print(
        f"warm, fairness.eod (tpr and fpr, median of {args.repeats}): "
        f"{1000 * np.median([w['eod_seconds'] for w in warm]):.1f} ms"
    )


def guaranteed_timing(args: argparse.Namespace) -> None:
    """The guaranteed 95% interval of the signed accuracy difference and of fairness.eod, warm."""
    import skfair_measures as sfm
    from skfair_measures import bayes

    def one(seed: int, powered: bool, key: str) -> float:
        y, s, a = simulate(100, seed)
        _, s_u, a_u = simulate(10_000, seed + 1000)
        extra = dict(unlabeled_scores=s_u, unlabeled_sensitive=a_u) if powered else {}
        kw = dict(reference="M") if key == "fairness.acc" else {}
        t0 = time.perf_counter()
        post = bayes.posterior(sfm.msr(key), y, s, sensitive_features=a, method="guaranteed", **extra, **kw)
        post.interval(0.95)
        return time.perf_counter() - t0

    print(
        f"guaranteed interval, n_L = 100, n_U = 10,000; load average {os.getloadavg()[0]:.2f} on "
        f"{os.cpu_count()} cores; warm, median of {args.repeats} (target 50 ms)"
    )
    for key in ("fairness.acc", "fairness.eod"):
        for powered in (False, True):
            one(args.seed, powered, key)
            times = [one(args.seed + 10 + i, powered, key) for i in range(args.repeats)]
            form = "prediction-powered" if powered else "labels only"
            print(f"{key:14s} {form:20s} {1000 * np.median(times):7.1f} ms")


def ppi_coverage(args: argparse.Namespace) -> None:
    """Coverage of PPI's 95% intervals on the simulation of tests/test_bayes_ppi.py."""
    import warnings

    from scipy.special import expit

    import skfair_measures as sfm
    from skfair_measures.bayes import posteriors

    def draw(n, rng):
        g = (rng.uniform(size=n) < 0.3).astype(int)
        x = rng.normal(size=n)
        return g, expit(1.2 * x + 0.2), expit(1.5 * x + 0.5 * g - 0.3)

    g, s, p = draw(2_000_000, np.random.default_rng(0))
    pred = s >= 0.5
    rate = {
        "tpr": lambda m: (p[m] * pred[m]).sum() / p[m].sum(),
        "acc": lambda m: (p[m] * pred[m] + (1 - p[m]) * ~pred[m]).mean(),
        "ppv": lambda m: (p[m] * pred[m]).sum() / pred[m].sum(),
    }
    truth = {k: f(g == 1) - f(g == 0) for k, f in rate.items()}
    ms = [sfm.msr(f"fairness.{k}").against(0) for k in truth]
    print(f"| n_L | runs | {' | '.join(f'{k} coverage | {k} width' for k in truth)} |")
    print("|" + "---|" * (2 + 2 * len(truth)))
    for n_l in (100, 200, 400, 1000):
        hits, width = np.zeros(len(truth)), np.zeros(len(truth))
        for r in range(args.runs):
            rng = np.random.default_rng(10_000 + r)
            g, s, p = draw(n_l + 5000, rng)
            y = (rng.uniform(size=g.size) < p).astype(int)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = posteriors(
                    ms,
                    y[:n_l],
                    s[:n_l],
                    sensitive_features=g[:n_l],
                    method="ppi",
                    unlabeled_scores=s[n_l:],
                    unlabeled_sensitive=g[n_l:],
                    n_draws=500,
                    random_state=r,
                )
            for j, (post, t) in enumerate(zip(res.values(), truth.values(), strict=True)):
                lo, hi = post.interval(0.95)
                hits[j] += lo <= t <= hi
                width[j] += hi - lo
        pairs = zip(hits / args.runs, width / args.runs, strict=True)
        cells = " | ".join(f"{100 * h:.1f}% | {w:.3f}" for h, w in pairs)
        print(f"| {n_l} | {args.runs} | {cells} |", flush=True)


def child(args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    if args.method == "ppi":
        print("RESULT " + json.dumps(one_ppi_fit(args.seed)))
        return
    res = one_fit(args.seed, args.sampler, args.method)
    res["total_seconds"] = time.perf_counter() - t0
    print("RESULT " + json.dumps(res))


def fresh_process(sampler: str, seed: int, compiledir: str | None, method: str = "bc") -> dict:
    env = dict(os.environ)
    if compiledir is not None:
        env["PYTENSOR_FLAGS"] = f"base_compiledir={compiledir}"
        env["NUMBA_CACHE_DIR"] = compiledir
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--sampler", sampler, "--seed", str(seed), "--method", method],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    wall = time.perf_counter() - t0
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT "))
    res = json.loads(line[len("RESULT ") :])
    res["wall_seconds"] = wall
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sampler", default="nutpie", choices=["nutpie", "nutpie-pymc", "pymc", "numpyro", "blackjax"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--skip-empty", action="store_true", help="skip the empty-cache cold run")
    ap.add_argument("--method", default="bc", choices=["bc", "bcr", "auto", "ppi", "guaranteed"])
    ap.add_argument("--coverage", action="store_true", help="PPI coverage table instead of timings")
    ap.add_argument("--runs", type=int, default=400, help="runs per n_L of --coverage")
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    if args.coverage:
        ppi_coverage(args)
        return
    if args.method == "ppi":
        ppi_timing(args)
        return
    if args.method == "guaranteed":
        guaranteed_timing(args)
        return

    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    rows = []
    if not args.skip_empty:
        with tempfile.TemporaryDirectory() as tmp:
            r = fresh_process(args.sampler, args.seed, tmp, args.method)
        rows.append(("cold, empty compile cache (new process)", r["wall_seconds"], r))
    fresh_process(args.sampler, args.seed, None, args.method)  # make sure the persistent cache is filled
    r = fresh_process(args.sampler, args.seed + 1, None, args.method)
    rows.append(("cold, persistent compile cache (new process)", r["wall_seconds"], r))

    first = one_fit(args.seed, args.sampler, args.method)
    warm = [one_fit(args.seed + 10 + i, args.sampler, args.method) for i in range(args.repeats)]
    med = float(np.median([w["seconds"] for w in warm]))
    rows.append((f"warm, compiled model reused (median of {args.repeats})", med, warm[0]))
    divergences = sum(w["divergences"] for w in warm) + first["divergences"]

    print(
        f"\nOne fit of method={args.method!r} (used: {first['method']}), n_L = 100, n_U = 10,000, "
        f"4 chains x (1500 + 200), sampler={args.sampler}"
    )
    print(f"{'situation':52s} {'seconds':>8s}  {'vs paper (JAGS ~30 s)':>22s}")
    for name, sec, _ in rows:
        print(f"{name:52s} {sec:8.2f}  {PAPER_SECONDS / sec:20.1f}x")
    print(
        f"\nwarm fits: {[round(w['seconds'], 2) for w in warm]} s (sampling only: "
        f"{[round(w['sampling_seconds'], 2) for w in warm]})"
    )
    print(
        f"divergences over the {args.repeats + 1} in-process fits: {divergences}; "
        f"largest R-hat: {max(w['max_r_hat'] for w in warm + [first]):.3f}"
    )
    for name, _, r in rows[:-1]:
        print(
            f"{name}: import {r['import_seconds']:.1f} s, compile {r['compile_seconds']:.1f} s, "
            f"sampling {r['sampling_seconds']:.1f} s, divergences {r['divergences']}"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(
        f"compile cache: {os.environ.get('PYTENSOR_FLAGS', 'default (see skfair_measures.bayes._bc)')}; "
        f"python {sys.version.split()[0]}, {Path(sys.executable).name}"
    )


if __name__ == "__main__":
    main()
