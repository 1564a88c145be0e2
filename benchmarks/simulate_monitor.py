"""The monitor beside the naive daily interval and a Bonferroni schedule, on the same simulated streams.

Streams: batches of 1,000 rows, two groups of equal size, half positives; the TPR of
group a is 0.6, of group b ``0.6 - gap``; the FPR is 0.3 in both. The measure is
``fairness.tpr`` (|TPR_a - TPR_b|) and the tolerance ``eps = 0.1``.

- **fair**: ``gap = 0.1`` at every batch, the edge of the tolerance (the hardest fair
  stream: any smaller gap alarms less);
- **jump**: ``gap = 0.05`` for 50 batches, then ``0.3``; the delay is the number of
  batches after the jump until the first alarm;
- **drift**: both TPRs move together from 0.4 to 0.8 (group a) over the 200 batches with
  the gap at ``0.1`` at every batch: fair at every batch, and the stream that broke the
  constant-rate alarm.

Every method looks after every batch and alarms the first time its interval for the gap
lies above ``eps``:

- ``monitor``: :class:`skfair_measures.monitor.FairnessMonitor` (defaults, prob 0.95: false alarms at most 0.05),
  fed each batch's counts;
- ``naive batch``: the 95% Wald interval of that batch alone, read every day;
- ``naive cumulative``: the 95% Wald interval of all rows so far, read every day;
- ``Bonferroni``: the cumulative Wald interval at level ``1 - 0.05 / 200`` (a union
  bound over the 200 planned looks; it needs the horizon in advance).

Usage: ``python benchmarks/simulate_monitor.py [--fair 500] [--jump 100] [--drift 100] [--steps 200]
[--json benchmarks/results/monitor_simulation.json]``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd
from scipy.stats import norm

from skfair_measures._counts import ConfusionStats
from skfair_measures.monitor import FairnessMonitor

EPS, ALPHA, N, JUMP = 0.1, 0.05, 1000, 50


def stream_counts(
    rng: np.random.Generator, steps: int, gap: float, jump_gap: float | None = None, drift: bool = False
) -> np.ndarray:
    """Counts ``(steps, 2 groups, 2, 2)`` of one stream (``drift``: TPR of group a from 0.4 to 0.8)."""
    d = np.full(steps, gap)
    if jump_gap is not None:
        d[JUMP:] = jump_gap
    base = np.linspace(0.4, 0.8, steps) if drift else np.full(steps, 0.6)
    pos = rng.binomial(N // 2, 0.5, (steps, 2))
    neg = N // 2 - pos
    tp = rng.binomial(pos, np.stack([base, base - d], -1))
    fp = rng.binomial(neg, 0.3)
    return np.stack([np.stack([neg - fp, fp], -1), np.stack([pos - tp, tp], -1)], -2).astype(float)


def monitor_alarm(counts: np.ndarray) -> int | None:
    """The step (1-based) of the monitor's first alarm, or None."""
    mon = FairnessMonitor("fairness.tpr", eps=EPS, prob=1 - ALPHA)
    idx = pd.Index(["a", "b"], name="group")
    for c in counts:
        mon.update(stats=ConfusionStats(c, idx))
        step = mon.status().loc["fairness.tpr", "alarm_step"] if mon._alarms["fairness.tpr"]["step"] else None
        if step is not None:
            return int(step)
    return None


def wald_alarm(counts: np.ndarray, z: float, cumulative: bool) -> int | None:
    """The first step at which the Wald interval of TPR_a - TPR_b lies beyond +-eps."""
    c = np.cumsum(counts, axis=0) if cumulative else counts
    tp, pos = c[:, :, 1, 1], c[:, :, 1, :].sum(-1)
    p = tp / pos
    d = p[:, 0] - p[:, 1]
    se = np.sqrt((p * (1 - p) / pos).sum(-1))
    hit = np.flatnonzero((d - z * se > EPS) | (d + z * se < -EPS))
    return int(hit[0]) + 1 if hit.size else None


def run(n_fair: int, n_jump: int, steps: int, n_drift: int = 100, seed: int = 20261124) -> dict:
    rng = np.random.default_rng(seed)
    methods = {
        "monitor": monitor_alarm,
        "naive batch": lambda c: wald_alarm(c, norm.ppf(0.975), False),
        "naive cumulative": lambda c: wald_alarm(c, norm.ppf(0.975), True),
        "Bonferroni": lambda c: wald_alarm(c, norm.ppf(1 - ALPHA / 2 / steps), True),
    }
    t0 = time.time()
    fair = {k: 0 for k in methods}
    for _ in range(n_fair):
        counts = stream_counts(rng, steps, EPS)
        for k, f in methods.items():
            fair[k] += f(counts) is not None
    drift = {k: 0 for k in methods}
    for _ in range(n_drift):
        counts = stream_counts(rng, steps, EPS, drift=True)
        for k, f in methods.items():
            drift[k] += f(counts) is not None
    delays: dict[str, list[float]] = {k: [] for k in methods}
    for _ in range(n_jump):
        counts = stream_counts(rng, steps, 0.05, 0.3)
        for k, f in methods.items():
            step = f(counts)
            delays[k].append(np.inf if step is None else step - JUMP)  # negative: a false alarm before the jump
    out = {
        "setup": {
            "fair_streams": n_fair,
            "jump_streams": n_jump,
            "steps": steps,
            "rows_per_batch": N,
            "eps": EPS,
            "alpha": ALPHA,
            "fair_gap": EPS,
            "jump": f"0.05 -> 0.3 at batch {JUMP}",
            "drift_streams": n_drift,
            "drift": "TPR of group a 0.4 -> 0.8, gap 0.1 at every batch",
            "seed": seed,
        },
        "seconds": round(time.time() - t0, 1),
        "methods": {},
    }
    sd = np.sqrt(ALPHA * (1 - ALPHA) / max(n_fair, 1))
    for k in methods:
        d = np.array(delays[k])
        out["methods"][k] = {
            "false_alarm_rate": fair[k] / max(n_fair, 1),
            "false_alarm_rate_drift": drift[k] / max(n_drift, 1),
            "two_sd_of_alpha": float(ALPHA + 2 * sd),
            "median_delay": float(np.median(d)) if d.size else None,
            "delay_q10_q90": [float(np.quantile(d, 0.1)), float(np.quantile(d, 0.9))] if d.size else None,
            "alarmed_before_jump": int((d <= 0).sum()),
            "never": int(np.isinf(d).sum()),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fair", type=int, default=500)
    ap.add_argument("--jump", type=int, default=100)
    ap.add_argument("--drift", type=int, default=100)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    res = run(args.fair, args.jump, args.steps, args.drift)
    text = json.dumps(res, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
