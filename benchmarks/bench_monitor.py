"""The monitor over a long log: rows in batches through Dask, time per batch against counting the batch alone.

1e8 rows (``--rows``) in batches of 1e6 (``--batch``): each batch is a lazy Dask frame
whose partitions (2 of 5e5 rows) are made inside the tasks, so no process ever holds
more than a partition. For each batch we time

- ``count``: ``engines.grouped_stats`` on the batch (the engine's counting alone);
- ``monitor``: ``FairnessMonitor.update(..., data=batch)`` with two measures
  (``fairness.tpr`` and ``fairness.cv``, one engine pass: they share the counts) and
  the reading of ``status()``, the betting sequences included.

Both run in one process, alternating batch by batch, so load from other jobs hits both
alike; the peak resident memory of the process (``ru_maxrss``) is printed, with what it
held after imports. The machine has 2 cores shared with other people's jobs: times vary
by tens of percent between runs.

Usage: ``python benchmarks/bench_monitor.py [--rows 1e8] [--batch 1e6] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import numpy as np
import pandas as pd

N_GROUPS = 5
PART_ROWS = 500_000
_BLOCK: dict[int, pd.DataFrame] = {}


def make_partition(i: int, rows: int) -> pd.DataFrame:
    """Partition ``i``: a rotation of one random block (cheap to make, so the pass dominates)."""
    if rows not in _BLOCK:
        rng = np.random.default_rng(0)
        y = rng.integers(0, 2, rows, dtype=np.int8)
        _BLOCK[rows] = pd.DataFrame(
            {
                "y": y,
                "yhat": (rng.random(rows) < 0.3 + 0.4 * y).astype(np.int8),
                "s": rng.integers(0, N_GROUPS, rows, dtype=np.int8),
            }
        )
    shift = (i * 7919) % rows
    return pd.DataFrame({k: np.roll(v.to_numpy(), shift) for k, v in _BLOCK[rows].items()})


def batch_frame(b: int, rows: int):
    import dask.dataframe as dd

    n_parts = max(1, rows // PART_ROWS)
    meta = pd.DataFrame({"y": np.int8([]), "yhat": np.int8([]), "s": np.int8([])})
    return dd.from_map(
        make_partition, range(b * n_parts, (b + 1) * n_parts), rows=rows // n_parts, meta=meta, enforce_metadata=False
    )


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(n_rows: int, batch_rows: int) -> dict:
    import dask

    from skfair_measures import engines
    from skfair_measures.monitor import FairnessMonitor

    dask.config.set(scheduler="threads", num_workers=2)
    start_rss = _rss_mb()
    mon = FairnessMonitor(["fairness.tpr", "fairness.cv"], eps=0.1)
    t_count, t_mon = [], []
    for b in range(n_rows // batch_rows):
        frame = batch_frame(b, batch_rows)
        t0 = time.perf_counter()
        engines.grouped_stats(frame, "y", "yhat", "s")
        t1 = time.perf_counter()
        mon.update("yhat", sensitive_features="s", y_true="y", data=frame)
        mon.status()
        t2 = time.perf_counter()
        t_count.append(t1 - t0)
        t_mon.append(t2 - t1)
    c, m = np.median(t_count), np.median(t_mon)
    return {
        "rows": n_rows,
        "batch_rows": batch_rows,
        "batches": len(t_mon),
        "engine": "dask (threads, 2 workers)",
        "median_seconds_per_batch": {"count": round(float(c), 4), "monitor": round(float(m), 4)},
        "ratio_monitor_over_count": round(float(m / c), 3),
        "total_seconds": {"count": round(float(np.sum(t_count)), 1), "monitor": round(float(np.sum(t_mon)), 1)},
        "rss_mb_after_imports": round(start_rss, 1),
        "peak_rss_mb": round(_rss_mb(), 1),
        "state_kb": round(len(json.dumps(mon.to_dict())) / 1024, 1),
        "load_average": os.getloadavg(),
        "alarm": bool(mon.status()["alarm"].any()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=float, default=1e8)
    ap.add_argument("--batch", type=float, default=1e6)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    res = run(int(args.rows), int(args.batch))
    text = json.dumps(res, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
