"""The guaranteed method and the new auto beside BB and BC on every cell of the method comparison.

For each stored run of ``reproduce_ji2020_methods.py`` (``results/ji2020_methods_runs.jsonl``,
BCR at the default rectifier scale), the run's seed redraws its labeled rows
(``labeled_draw``) and this script computes:

- **guaranteed**: ``method="guaranteed"`` with the run's unlabeled scores
  (prediction-powered, no weights), its estimate (the labeled frequencies' Δ) and its
  95% interval of the signed Δ (group 1 - group 0). The estimate is undefined in a run
  where a group has no labeled row in the rate's denominator; the interval is not (that
  group's rate then spans [0, 1]);
- **auto (new)**: what ``posterior()`` reports now, decided per run by the library's own
  rules (``skfair_measures.bayes._auto``) on the run's redrawn rows: the interval is the
  guaranteed one whenever some group has fewer than ``INTERVAL_MIN_LABELS`` labeled rows
  in a rate's denominator (``auto_interval``: every run here, at most 200 labels in
  all), and then the estimate is the calibration model's (``auto_estimate``): BC's
  posterior mean from the run's MCMC fit (the stored ``bc`` estimate, the one
  ``posterior(method="auto")`` computes from the same fit without the rectifier), the
  guaranteed interval widened to hold it. ``auto_method`` is the method of auto's draws
  (BCR, or BB where the calibration checks failed), which sets only its probabilities.

BB and BC are read from the stored run. Each run is one JSON line in ``--out``;
a rerun computes the guaranteed interval of the runs not in it yet and decides auto
again for every run (no MCMC: the estimates are the stored ones); ``--report-only`` writes the tables into
docs/reproduction_ji2020.md between the ``guaranteed`` markers and the per-cell summary
to ``results/ji2020_guaranteed_cells.csv``.

    python benchmarks/reproduce_ji2020_guaranteed.py                # every stored run, then the report
    python benchmarks/reproduce_ji2020_guaranteed.py --report-only
    python benchmarks/reproduce_ji2020_guaranteed.py --powering    # what the scores narrow
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

import skfair_measures as sfm
from skfair_measures.bayes._auto import auto_estimate, auto_interval, auto_method
from skfair_measures.bayes._guaranteed import Guaranteed
from skfair_measures.bayes._method import FitData, Rows

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reproduce_ji2020 as base  # noqa: E402
import reproduce_ji2020_methods as methods  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "ji2020_guaranteed_runs.jsonl"
CELLS_CSV = HERE / "results" / "ji2020_guaranteed_cells.csv"
METRICS = ("acc", "tpr")
MARKERS = ("<!-- guaranteed:start -->", "<!-- guaranteed:end -->")
BASES = tuple(sfm.msr(f"fairness.{m}").base for m in METRICS)


def guaranteed(y, s, codes, mask) -> dict[str, list]:
    """Per metric: [estimate, lower, upper] of the signed Δ by ``method="guaranteed"`` (95%)."""
    data = methods.fit_data(y, s, codes, mask)
    ms = [sfm.msr(f"fairness.{m}", operation="diff_to_reference", reference=0) for m in METRICS]
    gd = Guaranteed().group_draws(
        data, tuple(m.base for m in ms), chains=1, draws=1, rng=np.random.default_rng(0), seed=0
    )
    out = {}
    for metric, m in zip(METRICS, ms, strict=True):
        point = gd.point[m.base.name]
        est = float(point[1] - point[0])  # NaN when a group has no labeled row in the rate's denominator
        lo, hi = gd.confidence.measure_interval(m, data.groups, 0.95)  # then that group's rate spans [0, 1]
        out[metric] = [est if np.isfinite(est) else None, float(lo), float(hi)]
    return out


def auto_of(run: dict, gu: dict[str, list], data: FitData) -> tuple[dict[str, list], str]:
    """auto's [estimate, lower, upper] per metric in a stored run as it was with the guaranteed interval below
    200 labels (auto now reports the labels' Jeffreys posterior there: ``reproduce_ji2020_sharper.py``)."""
    rules, _ = auto_method({"unlabeled_scores": data.unlabeled.scores})  # unlabeled scores, no weights: bcr
    guaranteed_interval = auto_interval(data, BASES)[0] != "own"
    from_calibration = auto_estimate(rules, "jeffreys" if guaranteed_interval else "own")[0] == "calibration"
    draws = run.get("auto_method", rules)  # rule 4, decided in the run: the method of the draws
    source = "bc" if from_calibration else draws
    out = {}
    for m in METRICS:
        est = run[source][m][0]
        if est is None:
            out[m] = [None, None, None]
        elif guaranteed_interval:
            out[m] = [est, min(gu[m][1], est), max(gu[m][2], est)]
        else:
            out[m] = list(run[draws][m])
    return out, source


def compute(out: Path, cache: Path) -> None:
    """The guaranteed interval of every stored run not in ``out`` yet, and auto decided again for every run."""
    rows = methods.at_scale(base.read_cache(cache), methods.RECTIFIER_SCALE)
    done = {(r["dataset"], r["model"], r["n_l"], r["run"]): r for r in base.read_cache(out)}
    loaded: dict = {}
    start, n, lines = time.perf_counter(), 0, []
    for r in rows:
        key = (r["dataset"], r["model"], r["n_l"], r["run"])
        if r["run"] >= 100:
            continue
        y, s, codes, mask = methods.run_rows(r, loaded)
        t0 = time.perf_counter()
        if key in done:
            gu, seconds = done[key]["guaranteed"], done[key]["seconds"]
        else:
            gu = guaranteed(y, s, codes, mask)
            seconds, n = time.perf_counter() - t0, n + 1
        auto, source = auto_of(r, gu, methods.fit_data(y, s, codes, mask))
        row = {
            "dataset": key[0],
            "model": key[1],
            "n_l": key[2],
            "run": key[3],
            "truth": r["truth"],
            "bb": r["bb"],
            "bc": r["bc"],
            "guaranteed": gu,
            "auto": auto,
            "auto_method": r.get("auto_method"),
            "auto_estimate": source,
            "seconds": seconds,
        }
        lines.append(json.dumps(base._round(row)) + "\n")
    out.write_text("".join(lines))
    print(f"{len(lines)} runs, {n} new guaranteed intervals, in {time.perf_counter() - start:.0f} s", flush=True)


def powering_gain(pairs: list[tuple[str, str]], n_ls: tuple[int, ...], runs: int) -> pd.DataFrame:
    """Mean width of the guaranteed interval of each signed Δ, prediction-powered and labels only."""
    ms = [sfm.msr(f"fairness.{m}", operation="diff_to_reference", reference=0) for m in METRICS]

    def widths(data: FitData) -> list[float]:
        box = (
            Guaranteed()
            .group_draws(data, tuple(m.base for m in ms), chains=1, draws=1, rng=np.random.default_rng(0), seed=0)
            .confidence
        )
        return [float(np.subtract(*box.measure_interval(m, data.groups, 0.95)[::-1])) for m in ms]

    recs = []
    for dataset, model in pairs:
        y, s, g, priv = base.load(dataset, model)
        codes = (g != priv).astype(np.intp)
        for n_l in n_ls:
            for i in range(runs):
                mask = np.zeros(y.size, dtype=bool)
                mask[methods.labeled_draw(g, n_l, zlib.crc32(f"{dataset}:{model}:{n_l}:{i}".encode()))] = True
                powered = methods.fit_data(y, s, codes, mask)
                labels = FitData(powered.y_true, powered.labeled, Rows.empty(), powered.groups, powered.threshold)
                for metric, wp, wl in zip(METRICS, widths(powered), widths(labels), strict=True):
                    recs.append(
                        {
                            "dataset": dataset,
                            "model": model,
                            "n_l": n_l,
                            "metric": metric,
                            "powered": wp,
                            "labels_only": wl,
                        }
                    )
    return pd.DataFrame(recs).groupby(["dataset", "model", "n_l", "metric"]).mean()


def summarise(rows: list[dict]) -> pd.DataFrame:
    recs = []
    for r in rows:
        for m in METRICS:
            t = r["truth"][m]
            rec = {"dataset": r["dataset"], "model": r["model"], "n_l": r["n_l"], "metric": m, "truth": t}
            bcr = r.get("bcr", {}).get(m, [None])[0]
            rec["bcr_err"] = abs(bcr - t) if bcr is not None else np.nan
            # the previous rule's estimate: BCR's, or BB's where the calibration checks failed
            before = r["bb"][m][0] if r.get("auto_method") == "bb" else bcr
            rec["before_err"] = abs(before - t) if before is not None else np.nan
            rec["from_bc"] = float(r.get("auto_estimate") == "bc")
            for meth in ("bb", "bc", "guaranteed", "auto"):
                est, lo, hi = r[meth][m]
                rec[f"{meth}_err"] = abs(est - t) if est is not None else np.nan
                ok = lo is not None  # guaranteed's interval exists without its estimate (a group's rate: [0, 1])
                rec[f"{meth}_cover"] = float(lo <= t <= hi) if ok else np.nan
                rec[f"{meth}_width"] = hi - lo if ok else np.nan
            recs.append(rec)
    df = pd.DataFrame(recs)
    agg = (
        df.groupby(["dataset", "model", "n_l", "metric"], sort=False)
        .agg(
            runs=("truth", "size"),
            truth=("truth", "first"),
            bcr_err=("bcr_err", "mean"),
            before_err=("before_err", "mean"),
            from_bc=("from_bc", "mean"),
            **{
                f"{meth}_{k}": (f"{meth}_{k}", "mean")
                for meth in ("bb", "bc", "guaranteed", "auto")
                for k in ("err", "cover", "width")
            },
            **{f"{meth}_defined": (f"{meth}_err", "count") for meth in ("bb", "bc", "guaranteed", "auto")},
        )
        .reset_index()
    )
    for c in agg.columns:
        if c.endswith(("_err", "_cover")):
            agg[c] = 100 * agg[c]
    agg["truth"] = 100 * agg["truth"]
    agg["cover_target"] = np.where(agg["n_l"] >= 40, 93.0, 90.0)
    agg["cover_ok"] = agg["auto_cover"] >= agg["cover_target"]
    agg["mae_ok"] = agg["auto_err"] <= np.fmin(agg["bb_err"], agg["bc_err"]) + 1.0
    agg["bcr_mae_ok"] = agg["bcr_err"] <= np.fmin(agg["bb_err"], agg["bc_err"]) + 1.0
    agg["before_mae_ok"] = agg["before_err"] <= np.fmin(agg["bb_err"], agg["bc_err"]) + 1.0
    return agg


def table(agg: pd.DataFrame, metric: str) -> str:
    lines = [
        "| Dataset, attribute | Model | n_L | true Δ | runs | BB | BC | guaranteed | auto | "
        "width BB / guaranteed / auto | auto: coverage / MAE target |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    sub = agg[agg.metric == metric].sort_values(["dataset", "model", "n_l"])
    for _, a in sub.iterrows():
        cells = [f"{a[f'{m}_err']:.1f} ({a[f'{m}_cover']:.0f})" for m in ("bb", "bc", "guaranteed", "auto")]
        label = {**base.DATASETS}[a.dataset][4]
        lines.append(
            f"| {label} | {a.model} | {a.n_l} | {a.truth:+.1f} | {int(a.runs)} | {' | '.join(cells)} | "
            f"{a.bb_width:.2f} / {a.guaranteed_width:.2f} / {a.auto_width:.2f} | "
            f"{'yes' if a.cover_ok else '**no**'} / {'yes' if a.mae_ok else '**no**'} |"
        )
    return "\n".join(lines)


def overview(agg: pd.DataFrame) -> str:
    lines = [
        "| metric | n_L | cells | runs < 100 | auto coverage ok | auto MAE ok | min coverage auto / guaranteed | "
        "mean coverage BB / BC / guaranteed / auto | mean MAE BB / BC / guaranteed / auto | "
        "mean width BB / guaranteed / auto |",
        "|---|---:|---:|---:|---:|---:|---|---|---|---|",
    ]
    for (metric, n_l), a in agg.groupby(["metric", "n_l"]):
        lines.append(
            f"| Δ {metric} | {n_l} | {len(a)} | {int((a.runs < 100).sum())} | {int(a.cover_ok.sum())} | "
            f"{int(a.mae_ok.sum())} | {a.auto_cover.min():.0f} / {a.guaranteed_cover.min():.0f} | "
            + " / ".join(f"{a[f'{m}_cover'].mean():.1f}" for m in ("bb", "bc", "guaranteed", "auto"))
            + " | "
            + " / ".join(f"{a[f'{m}_err'].mean():.1f}" for m in ("bb", "bc", "guaranteed", "auto"))
            + " | "
            + " / ".join(f"{a[f'{m}_width'].mean():.2f}" for m in ("bb", "guaranteed", "auto"))
            + " |"
        )
    return "\n".join(lines)


def report(out: Path, doc: Path, cache: Path) -> str:
    bcr = {
        (r["dataset"], r["model"], r["n_l"], r["run"]): r["bcr"]
        for r in methods.at_scale(base.read_cache(cache), methods.RECTIFIER_SCALE)
    }
    rows = [{**r, "bcr": bcr.get((r["dataset"], r["model"], r["n_l"], r["run"]), {})} for r in base.read_cache(out)]
    agg = summarise(rows)
    agg.to_csv(CELLS_CSV, index=False, float_format="%.4g")
    short = agg[agg.runs < 100]
    text = [
        f"Runs: {len(rows)} in {len(agg) // len(METRICS)} cells (x {len(METRICS)} measures); cells with fewer "
        f"than 100 runs: {len(short) // len(METRICS)}"
        + (
            " ("
            + ", ".join(
                f"{a.dataset} {a.model} n_L={a.n_l} ({int(a.runs)})" for _, a in short[short.metric == "acc"].iterrows()
            )
            + ")"
            if len(short)
            else ""
        )
        + f". Over the {len(agg)} (cell, measure) rows: auto's coverage target met in "
        f"{int(agg.cover_ok.sum())}; auto's estimate was BC's posterior mean (the calibration model's) in "
        f"{100 * float((agg.from_bc * agg.runs).sum() / agg.runs.sum()):.0f}% of the runs, and its MAE is "
        f"within 1 point of min(BB, BC) in {int(agg.mae_ok.sum())} ({100 * agg.mae_ok.mean():.0f}%; "
        f"BCR's estimate in every run would meet it in {int(agg.bcr_mae_ok.sum())}, the previous rule's, "
        f"BCR or BB where the calibration checks failed, in {int(agg.before_mae_ok.sum())}). "
        f"The guaranteed interval is no wider than BB's in {int((agg.guaranteed_width <= agg.bb_width).sum())}.",
        "",
        "### Overview",
        "",
        overview(agg),
        "",
        "### Δ accuracy: MAE x 100 (coverage % of the 95% interval)",
        "",
        table(agg, "acc"),
        "",
        "### Δ TPR: MAE x 100 (coverage % of the 95% interval)",
        "",
        table(agg, "tpr"),
    ]
    body = "\n".join(text)
    src = doc.read_text()
    start, end = MARKERS
    if start in src and end in src:
        src = src[: src.index(start) + len(start)] + "\n" + body + "\n" + src[src.index(end) :]
        doc.write_text(src)
    return body


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", type=Path, default=methods.DEFAULT_CACHE, help="the method comparison's runs")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--doc", type=Path, default=base.DOC)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument(
        "--powering",
        action="store_true",
        help="only the width of the powered against the labels-only interval (MLP on Adult Gender and "
        "Compas-R Race, n_L = 40 and 200, 10 runs)",
    )
    args = ap.parse_args(argv)
    if args.powering:
        print(powering_gain([("adult_sex", "MLP"), ("compas_r_race", "MLP")], (40, 200), 10).round(2))
        return 0
    if not args.report_only:
        compute(args.out, args.cache)
    print(report(args.out, args.doc, args.cache)[:3000])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
