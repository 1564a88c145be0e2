"""Measures computed where the data lives: time and peak memory against a hand-written pass.

1. **The bar**: 2e8 rows in lazy Dask partitions (generated inside the tasks, never held
   whole) through ``engines.compute_metrics`` (4 measures, one pass), against a
   hand-written per-partition ``np.bincount`` over the same partitions (which knows the
   group codes in advance, the floor for any implementation), and against materialising
   the partitions and doing nothing (the cost of the data itself). Each runs in a fresh
   process, so its peak resident memory (``ru_maxrss``) is its own; the first number is
   what the process holds after imports and before any work.
2. **Growth**: the same two from 1e7 to 2e8 rows.
3. **Throughput per core**: 1e7 rows in one Parquet file read by Dask, polars (lazy),
   DuckDB and Spark local[2]; pandas in memory for reference. Rows per second per core
   in use; every engine's table is asserted equal to the in-memory one, to the last bit.
4. **A projection** to 1e10 rows on a cluster, from the measured per-core throughput of
   Dask, assuming linear scaling and no I/O limit: stated as a projection, not measured.
5. **The weighted Poisson bootstrap** (``fairness.eod``, continuous weights, 1,000
   replicates) on 1e7 rows in one Parquet file, per engine, against the same engine's
   weighted point value (``compute_metrics``) in the same run: the ratio is the cost of
   the interval over the point value. polars, DuckDB and Spark draw per cell (compound
   Poisson from sums of w and w^2); pandas and Dask draw an exact multiplicity per row
   (n_boot reweighted passes: 2,900x and 240x their point value on 5e5 rows, --quick,
   load 2.2), so they are left out of this section.

6. **Posteriors where the data lives**: a Beta-Binomial posterior and a PPI interval of
   ``fairness.tpr`` (threshold 0.5) from lazy Dask partitions whose labels are missing on
   99% of the rows (``bayes.posterior(..., data=ddf)``: one engine pass of counts and score
   moments), against the point value of the same measure on the same partitions
   (``engines.evaluate_measures`` on the fully labeled column). Fresh process each. The
   partitions rotate one block of rows, so the labeled rows repeat from partition to
   partition and the posteriors treat the repeats as new rows: the intervals printed are
   too narrow for these data (they may miss the point value); the section times the
   work, coverage is checked in the tests and docs/bayes.md.

``--only weighted-bootstrap`` or ``--only posteriors`` runs that section alone.

The machine has 2 cores shared with other people's jobs, so times vary between runs by
tens of percent; the load average is printed with each run. ``--quick`` divides every
size by 20 (a few minutes instead of about half an hour).

Usage: ``python benchmarks/bench_engines.py [--quick] [--json results.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from functools import reduce

import numpy as np
import pandas as pd

MEASURES = ["fairness.tpr", "fairness.fpr", "fairness.eod", "classif.acc"]
N_GROUPS = 5
CORES = 2


# -- data: lazy Dask partitions made inside the tasks -------------------------------------


def _block(rows: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, rows, dtype=np.int8)
    return {
        "y": y,
        "yhat": (rng.random(rows) < 0.3 + 0.4 * y).astype(np.int8),
        "s": rng.integers(0, N_GROUPS, rows, dtype=np.int8),
    }


def _scored_block(rows: int) -> dict[str, np.ndarray]:
    """Scores, the full labels, and the labels as an audit sees them: 1% labeled, NaN elsewhere."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, rows, dtype=np.int8)
    score = np.clip(0.3 * y + 0.7 * rng.random(rows, dtype=np.float32), 0, 1)
    labeled = np.where(rng.random(rows) < 0.01, y.astype(np.float32), np.float32(np.nan))
    return {"y": y, "y_l": labeled, "score": score, "s": rng.integers(0, N_GROUPS, rows, dtype=np.int8)}


_BLOCKS: dict[tuple[int, bool], dict[str, np.ndarray]] = {}


def make_partition(i: int, rows: int, scored: bool = False) -> pd.DataFrame:
    """Partition ``i``: a rotation of one random block (cheap to make, so the pass dominates)."""
    if (rows, scored) not in _BLOCKS:
        _BLOCKS[rows, scored] = (_scored_block if scored else _block)(rows)
    shift = (i * 7919) % rows
    return pd.DataFrame({k: np.roll(v, shift) for k, v in _BLOCKS[rows, scored].items()})


def lazy_frame(n_rows: int, part_rows: int, scored: bool = False):
    import dask.dataframe as dd

    n_parts = max(1, n_rows // part_rows)
    rows = n_rows // n_parts
    meta = make_partition(0, 1, scored).iloc[:0]
    return dd.from_map(make_partition, range(n_parts), rows=rows, scored=scored, meta=meta, enforce_metadata=False)


def hand_counts(pdf: pd.DataFrame) -> np.ndarray:
    """The hand-written pass: group codes known in advance, one bincount over the flat cell."""
    cell = (pdf["s"].to_numpy().astype(np.intp) * 2 + pdf["y"].to_numpy()) * 2 + pdf["yhat"].to_numpy()
    return np.bincount(cell, minlength=4 * N_GROUPS)


# -- one measurement in a fresh process ------------------------------------------------------


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(mode: str, n_rows: int, part_rows: int) -> dict:
    import dask

    from skfair_measures import engines

    dask.config.set(scheduler="threads", num_workers=CORES)
    scored = mode in POSTERIOR_MODES
    ddf = lazy_frame(n_rows, part_rows, scored)
    make_partition(0, n_rows // max(1, n_rows // part_rows), scored)  # the block, made once, outside the timing
    before = _peak_mib()
    t0 = time.perf_counter()
    if scored:
        out = _posterior_mode(mode, ddf)
    elif mode == "ours":
        results = engines.evaluate_measures(MEASURES, "y", "yhat", sensitive_features="s", data=ddf)
        total = float(results["fairness.tpr"].counts.sum())  # the rows the one pass counted
        out = {"values": {k: round(r.value, 6) for k, r in results.items()}, "total": total}
    elif mode == "hand":
        parts = [dask.delayed(hand_counts)(p) for p in ddf.to_delayed()]
        counts = reduce(np.add, dask.compute(*parts))
        out = {"total": float(counts.sum())}
    elif mode == "materialise":
        parts = [dask.delayed(len)(p) for p in ddf.to_delayed()]
        out = {"total": float(sum(dask.compute(*parts)))}
    else:
        raise ValueError(mode)
    out |= {"seconds": time.perf_counter() - t0, "peak_mib": _peak_mib(), "before_mib": before}
    return out


POSTERIOR_MODES = ("point-scores", "bb", "ppi")


def _posterior_mode(mode: str, ddf) -> dict:
    import skfair_measures as sfm
    from skfair_measures import bayes, engines

    m = sfm.msr("fairness.tpr", threshold=0.5)
    if mode == "point-scores":
        r = engines.evaluate_measures([m], "y", "score", sensitive_features="s", data=ddf)[m.key]
        return {"value": round(r.value, 6), "total": float(r.counts.sum())}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PPI's small-sample notice does not apply at these sizes
        post = bayes.posterior(m, "y_l", "score", sensitive_features="s", method=mode, data=ddf, random_state=0)
    lo, hi = post.interval(0.95)
    return {
        "value": round(float(post.value), 6),
        "interval": [round(float(lo), 6), round(float(hi), 6)],
        "total": post.attrs["n_labeled"] + post.attrs["n_unlabeled"],
    }


def run_in_process(mode: str, n_rows: int, part_rows: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", mode, "--rows", str(n_rows), "--part", str(part_rows)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{mode} at {n_rows:.0e} rows failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- throughput per engine on one Parquet file -----------------------------------------------


def _engine_frames(path: str, spark) -> dict:
    import dask.dataframe as dd
    import duckdb
    import polars as pl

    frames = {
        "pandas (numpy pass, 1 core)": (pd.read_parquet(path), 1),
        "Dask, threads": (dd.read_parquet(path, split_row_groups=True), CORES),
        "polars, lazy": (pl.scan_parquet(path), CORES),
        "DuckDB": (duckdb.read_parquet(path), CORES),
    }
    if spark is not None:
        frames["Spark local[2]"] = (spark.read.parquet(path), CORES)
    return frames


def _start_spark():
    try:
        from pyspark.sql import SparkSession

        from skfair_measures.engines import use_bundled_java
    except ImportError:
        return None
    use_bundled_java(override=True)
    spark = (
        SparkSession.builder.master(f"local[{CORES}]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(CORES))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def throughput(n_rows: int, repeats: int = 3) -> list[dict]:
    import dask
    import pyarrow as pa
    import pyarrow.parquet as pq

    from skfair_measures import engines

    dask.config.set(scheduler="threads", num_workers=CORES)
    block = _block(n_rows)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "predictions.parquet")
        pq.write_table(pa.table(block), path, row_group_size=max(1, n_rows // 8))
        spark = _start_spark()
        reference = None
        try:
            for name, (frame, cores) in _engine_frames(path, spark).items():
                # the warm-up (JIT, caches, JVM) is also the check: every engine's table equals the in-memory one
                table = engines.compute_metrics(frame, "y", "yhat", "s", MEASURES)
                reference = table if reference is None else reference
                pd.testing.assert_series_equal(table, reference, check_exact=True)
                times = []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    engines.compute_metrics(frame, "y", "yhat", "s", MEASURES)
                    times.append(time.perf_counter() - t0)
                best = min(times)
                rows.append(
                    {
                        "engine": name,
                        "rows": n_rows,
                        "seconds": best,
                        "cores": cores,
                        "rows_per_s_per_core": n_rows / best / cores,
                        "equal_to_in_memory": True,  # asserted above, to the last bit
                    }
                )
        finally:
            if spark is not None:
                spark.stop()
    return rows


def weighted_bootstrap(n_rows: int, n_boot: int = 1000, repeats: int = 2) -> list[dict]:
    """Per engine: the weighted Poisson bootstrap of fairness.eod against the weighted point value."""
    import dask
    import pyarrow as pa
    import pyarrow.parquet as pq

    from skfair_measures import engines

    dask.config.set(scheduler="threads", num_workers=CORES)
    block = _block(n_rows) | {"w": np.random.default_rng(1).random(n_rows) + 0.5}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "predictions.parquet")
        pq.write_table(pa.table(block), path, row_group_size=max(1, n_rows // 8))
        spark = _start_spark()
        try:
            for name, (frame, _) in _engine_frames(path, spark).items():
                if name.startswith(("pandas", "Dask")):  # exact per-row draws: see the module docstring
                    continue

                def point(frame=frame):
                    return engines.compute_metrics(frame, "y", "yhat", "s", ["fairness.eod"], sample_weight="w")

                def boot(frame=frame):
                    return engines.poisson_bootstrap(
                        frame, "y", "yhat", "s", "fairness.eod", sample_weight="w", n_boot=n_boot, random_state=0
                    )

                point()  # warm-up (JIT, caches, JVM)
                t_point = min(_timed(point) for _ in range(repeats))
                t_boot = min(_timed(boot) for _ in range(repeats))
                rows.append(
                    {
                        "engine": name,
                        "rows": n_rows,
                        "point_s": t_point,
                        "bootstrap_s": t_boot,
                        "ratio": t_boot / t_point,
                    }
                )
        finally:
            if spark is not None:
                spark.stop()
    return rows


def _timed(func) -> float:
    t0 = time.perf_counter()
    func()
    return time.perf_counter() - t0


# -- the report ------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every size divided by 20")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--only", choices=["weighted-bootstrap", "posteriors"], help="run this section alone")
    parser.add_argument("--rows-posteriors", type=float, help="rows of section 6 (default 2e8, /20 with --quick)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--rows", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--part", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=FutureWarning)
    if args.worker:
        print(json.dumps(worker(args.worker, int(args.rows), int(args.part))))
        return

    scale = 20 if args.quick else 1
    part = 5_000_000 // scale
    big = int(2e8) // scale
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average at start {os.getloadavg()[0]:.1f} (other jobs share the machine)"
    )
    report: dict = {"rows": big, "partition_rows": part, "loadavg_start": os.getloadavg()}
    n_post = int(args.rows_posteriors or int(2e8) // scale)
    if args.only:
        if args.only == "posteriors":
            _section_posteriors(report, n_post, part)
        else:
            _section_weighted_bootstrap(report, scale)
        _write(report, args.json)
        return

    print(f"\n1. {big:.0e} rows in lazy Dask partitions of {part:.0e} rows, threads scheduler, {CORES} workers")
    bar = {mode: run_in_process(mode, big, part) for mode in ("materialise", "hand", "ours")}
    assert bar["hand"]["total"] == bar["ours"]["total"] == big, bar
    for mode, r in bar.items():
        print(
            f"   {mode:12s} {r['seconds']:7.2f} s   peak {r['peak_mib']:7.0f} MiB (after imports {r['before_mib']:.0f})"
        )
    ratio = bar["ours"]["seconds"] / bar["hand"]["seconds"]
    print(
        f"   ours / hand-written = {ratio:.2f} (bar: within 2x); ours peak {bar['ours']['peak_mib']:.0f} MiB "
        "(bar: under 1,536 MiB)"
    )
    report["bar"] = bar | {"ratio": ratio}

    print("\n2. growth (fresh process each)")
    growth = []
    for n in [int(x) // scale for x in (1e7, 2e7, 5e7, 1e8, 2e8)]:
        ours = run_in_process("ours", n, part) if n != big else bar["ours"]
        hand = run_in_process("hand", n, part) if n != big else bar["hand"]
        growth.append(
            {"rows": n, "ours_s": ours["seconds"], "hand_s": hand["seconds"], "ours_peak_mib": ours["peak_mib"]}
        )
        print(
            f"   {n:9.0e} rows: ours {ours['seconds']:6.2f} s, hand {hand['seconds']:6.2f} s, "
            f"ours peak {ours['peak_mib']:.0f} MiB"
        )
    report["growth"] = growth

    n_tp = int(1e7) // scale
    print(f"\n3. throughput per core, {n_tp:.0e} rows in one Parquet file (best of 3 after a warm-up)")
    tp = throughput(n_tp)
    for r in tp:
        print(
            f"   {r['engine']:28s} {r['seconds']:6.2f} s  {r['rows_per_s_per_core'] / 1e6:6.1f} M rows/s/core"
            "  (table equal to pandas in memory)"
        )
    report["throughput"] = tp

    dask_rate = next(r for r in tp if r["engine"].startswith("Dask"))["rows_per_s_per_core"]
    print("\n4. projection (not measured): 1e10 rows at the Dask rate above, linear scaling, no I/O limit")
    report["projection"] = []
    for cores in (64, 256, 1024):
        secs = 1e10 / (dask_rate * cores)
        report["projection"].append({"cores": cores, "seconds": secs})
        print(f"   {cores:5d} cores: about {secs:6.0f} s")
    _section_weighted_bootstrap(report, scale)
    _section_posteriors(report, n_post, part)
    _write(report, args.json)


def _section_posteriors(report: dict, n_rows: int, part: int) -> None:
    print(
        f"\n6. posteriors of fairness.tpr from {n_rows:.0e} lazy Dask rows (1% labeled), partitions of {part:.0e}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    runs = {mode: run_in_process(mode, n_rows, part) for mode in POSTERIOR_MODES}
    point = runs["point-scores"]["seconds"]
    for mode, r in runs.items():
        assert r["total"] == n_rows, (mode, r)
        extra = "" if mode == "point-scores" else f"  / point {r['seconds'] / point:5.2f}  interval {r['interval']}"
        print(f"   {mode:12s} {r['seconds']:7.2f} s   peak {r['peak_mib']:7.0f} MiB{extra}")
    print("   (bar: within 2x the point value, under 1,536 MiB)")
    print(
        "   (every partition is a rotation of one block, so its labeled rows repeat 1/n_partitions-fold: the\n"
        "   intervals here time the work; they are too narrow for these data and are no coverage check)"
    )
    report["posteriors"] = runs | {"rows": n_rows, "loadavg_end": os.getloadavg()}


def _section_weighted_bootstrap(report: dict, scale: int) -> None:
    n_wb = int(1e7) // scale
    print(
        f"\n5. weighted Poisson bootstrap, fairness.eod, 1,000 replicates, {n_wb:.0e} rows in one Parquet file "
        "(best of 2 after a warm-up)"
    )
    wb = weighted_bootstrap(n_wb)
    for r in wb:
        print(
            f"   {r['engine']:28s} point {r['point_s']:6.2f} s  bootstrap {r['bootstrap_s']:6.2f} s  "
            f"bootstrap / point {r['ratio']:5.2f}"
        )
    report["weighted_bootstrap"] = wb


def _write(report: dict, path: str | None) -> None:
    report["loadavg_end"] = os.getloadavg()
    if path:
        with open(path, "w") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
