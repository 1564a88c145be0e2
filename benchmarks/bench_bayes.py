"""Time one Bayesian-calibration fit: n_L = 100 labelled, n_U = 10,000 unlabelled.

4 chains x (1500 warm-up + 200 draws), the paper's settings (seed 000 section 2.4:
"about 30 seconds" with JAGS). Three situations:

- cold, empty cache: a new process whose compile caches (numba's and PyTensor's)
  are empty (first use ever on a machine);
- cold, persistent cache: a new process reusing the compile caches on disk
  (every later session);
- warm: a fit in a process that has fitted before (every fit after the first).

Each cold time is wall time of the whole call in a fresh interpreter (imports,
model build, compile, sampling, post-processing of the unlabelled data). The warm
time is the median over ``--repeats`` fits on new data.

Usage::

    python benchmarks/bench_bayes.py                        # nutpie on the cached density, all three
    python benchmarks/bench_bayes.py --sampler nutpie-pymc  # nutpie on the PyMC graph
    python benchmarks/bench_bayes.py --sampler pymc         # PyMC's own NUTS
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
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


def one_fit(seed: int, sampler: str) -> dict:
    t0 = time.perf_counter()
    import skfair_measures as sfm

    y, s, a = simulate(100, seed)
    _, s_u, a_u = simulate(10_000, seed + 1000)
    t1 = time.perf_counter()
    post = sfm.msr("fairness.acc").posterior(
        y, s, sensitive_features=a, method="bc", unlabeled_scores=s_u, unlabeled_sensitive=a_u,
        reference="M", random_state=seed, sampler=sampler, warn=False,
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
    }


def child(args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    res = one_fit(args.seed, args.sampler)
    res["total_seconds"] = time.perf_counter() - t0
    print("RESULT " + json.dumps(res))


def fresh_process(sampler: str, seed: int, compiledir: str | None) -> dict:
    env = dict(os.environ)
    if compiledir is not None:
        env["PYTENSOR_FLAGS"] = f"base_compiledir={compiledir}"
        env["NUMBA_CACHE_DIR"] = compiledir
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--sampler", sampler, "--seed", str(seed)],
        capture_output=True, text=True, env=env, check=True,
    )
    wall = time.perf_counter() - t0
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT "))
    res = json.loads(line[len("RESULT "):])
    res["wall_seconds"] = wall
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sampler", default="nutpie", choices=["nutpie", "nutpie-pymc", "pymc", "numpyro", "blackjax"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--skip-empty", action="store_true", help="skip the empty-cache cold run")
    args = ap.parse_args()
    if args.child:
        child(args)
        return

    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    rows = []
    if not args.skip_empty:
        with tempfile.TemporaryDirectory() as tmp:
            r = fresh_process(args.sampler, args.seed, tmp)
        rows.append(("cold, empty compile cache (new process)", r["wall_seconds"], r))
    fresh_process(args.sampler, args.seed, None)  # make sure the persistent cache is filled
    r = fresh_process(args.sampler, args.seed + 1, None)
    rows.append(("cold, persistent compile cache (new process)", r["wall_seconds"], r))

    first = one_fit(args.seed, args.sampler)
    warm = [one_fit(args.seed + 10 + i, args.sampler) for i in range(args.repeats)]
    med = float(np.median([w["seconds"] for w in warm]))
    rows.append((f"warm, compiled model reused (median of {args.repeats})", med, warm[0]))
    divergences = sum(w["divergences"] for w in warm) + first["divergences"]

    print(f"\nOne BC fit, n_L = 100, n_U = 10,000, 4 chains x (1500 + 200), sampler={args.sampler}")
    print(f"{'situation':52s} {'seconds':>8s}  {'vs paper (JAGS ~30 s)':>22s}")
    for name, sec, _ in rows:
        print(f"{name:52s} {sec:8.2f}  {PAPER_SECONDS / sec:20.1f}x")
    print(f"\nwarm fits: {[round(w['seconds'], 2) for w in warm]} s (sampling only: "
          f"{[round(w['sampling_seconds'], 2) for w in warm]})")
    print(f"divergences over the {args.repeats + 1} in-process fits: {divergences}; "
          f"largest R-hat: {max(w['max_r_hat'] for w in warm + [first]):.3f}")
    for name, _, r in rows[:-1]:
        print(f"{name}: import {r['import_seconds']:.1f} s, compile {r['compile_seconds']:.1f} s, "
              f"sampling {r['sampling_seconds']:.1f} s, divergences {r['divergences']}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"compile cache: {os.environ.get('PYTENSOR_FLAGS', 'default (see skfair_measures.bayes._bc)')}; "
          f"python {sys.version.split()[0]}, {Path(sys.executable).name}")


if __name__ == "__main__":
    main()
