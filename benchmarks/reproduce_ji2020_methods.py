"""BB, BC, PPI, rectified BC (``bcr``) and ``auto`` side by side on every cell of Ji et al. (2020).

The protocol is that of ``reproduce_ji2020.py`` (same datasets, binarised groups,
signed Delta against the privileged group, threshold 0.5, labeled draws redrawn
until both groups are present, seeds ``crc32("dataset:model:n_L:run")``), over all
28 (dataset, model) pairs and ``n_L`` in {10, 20, 40, 100, 200}.

Per run, one BC fit (the paper's settings: 4 chains x (1500 warm-up + 200 draws),
nutpie) serves both BC and the rectified BC, exactly as ``posterior(method="bc")`` and
``posterior(method="bcr")`` would compute them with the same seed (the rectifier is
added to BC's draws; ``tests/test_bayes_bcr.py`` checks the two paths agree). BB and PPI
come from ``posteriors(method=...)``. ``auto`` is the rule of auto's draws
with unlabeled scores and no weights: ``bcr``, or ``bb`` when the calibration checks fail
on the run's data (``skfair_measures.bayes.AUTO_RULES``), decided per run with the
library's own ``checked_method``, with that method's estimate and interval (auto as it
was before its interval and estimate became separate decisions). What ``posterior()``
reports now (the guaranteed interval and BC's estimate below 200 labels) is computed
from these runs by ``reproduce_ji2020_guaranteed.py``.

The calibration draws of every run are kept in ``--params`` (local, not committed: about
20 kB per run) so that ``--rectify-only`` can recompute the rectified estimates (e.g. at
another ``--rectifier-scale``) without sampling again. Each run is one JSON line in
``--cache``; ``--report-only`` writes the side-by-side tables into
docs/reproduction_ji2020.md between the ``methods`` markers.

Usage::

    python benchmarks/reproduce_ji2020_methods.py --cells "compas_vr_sex:MLP:40" --draws 5   # smoke
    python benchmarks/reproduce_ji2020_methods.py --n-l 40,100 --draws 100                    # some cells
    python benchmarks/reproduce_ji2020_methods.py --report-only
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import time
import warnings
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

import skfair_measures as sfm
from skfair_measures.bayes import posteriors
from skfair_measures.bayes._auto import checked_method
from skfair_measures.bayes._bc import BayesianCalibration, CalibrationFit, calibrated_cells
from skfair_measures.bayes._bcr import RECTIFIER_SCALE, RectifiedCalibration
from skfair_measures.bayes._method import FitData, Rows

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reproduce_ji2020 as base  # noqa: E402  (the protocol and the data loading)

HERE = Path(__file__).resolve().parent
DEFAULT_CACHE = HERE / "results" / "ji2020_methods_runs.jsonl"
DEFAULT_PARAMS = HERE / "results" / "ji2020_params"  # local only (.gitignore)
METRICS = ("acc", "tpr")
N_LS = (10, 20, 40, 100, 200)
METHODS = ("bb", "bc", "ppi", "bcr", "auto")
#: BCR is also stored at these rectifier scales (``bcr_at``), to choose the default on the whole grid.
ALT_SCALES = (0.25, 0.5)


def cells(n_ls: tuple[int, ...], patterns: str | None) -> list[tuple[str, str, int]]:
    out = [(d, m, n) for n in n_ls for d in base.DATASETS for m in base.MODELS]
    if not patterns:
        return out
    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    return [c for c in out if any(fnmatch.fnmatch(f"{c[0]}:{c[1]}:{c[2]}", p) for p in pats)]


def labeled_draw(g: np.ndarray, n_l: int, seed: int) -> np.ndarray:
    """The protocol's labeled rows: ``n_l`` at random, redrawn until both groups are present."""
    rng = np.random.default_rng(seed)
    while True:
        lab = rng.choice(g.size, size=n_l, replace=False)
        if np.unique(g[lab]).size == 2:
            return lab


def run_rows(r: dict, loaded: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A stored run's rows again: labels, scores, 0/1 group codes and its labeled mask (each file loaded once)."""
    key = (r["dataset"], r["model"])
    if key not in loaded:
        loaded[key] = base.load(*key)
    y, s, g, priv = loaded[key]
    mask = np.zeros(y.size, dtype=bool)
    mask[labeled_draw(g, r["n_l"], r["seed"])] = True
    return y, s, (g != priv).astype(np.intp), mask


def fit_data(y, s, codes, mask) -> FitData:
    pred = (s >= 0.5).astype(np.intp)
    lab = Rows(s[mask], pred[mask], codes[mask])
    unl = Rows(s[~mask], pred[~mask], codes[~mask])
    return FitData(y[mask].astype(np.intp), lab, unl, pd.Index([0, 1]), 0.5)


def summary(values: dict[str, np.ndarray], point: dict | None = None) -> dict[str, list]:
    """Signed Delta (group 1 - group 0): [mean (or point estimate), 2.5%, 97.5%] per metric."""
    out = {}
    for metric in METRICS:
        d = (values[metric][..., 1] - values[metric][..., 0]).ravel()
        d = d[np.isfinite(d)]
        if d.size < 0.9 * values[metric][..., 0].size:  # undefined in many draws: no estimate
            out[metric] = [None, None, None]
            continue
        lo, hi = np.quantile(d, [0.025, 0.975])
        out[metric] = [float(d.mean()), float(lo), float(hi)]
    return out


def _bases():
    return tuple(sfm.msr(f"fairness.{m}").base for m in METRICS)


def rectified(fit: CalibrationFit, data: FitData, scale: float, seed: int) -> dict[str, list]:
    method = RectifiedCalibration(rectifier_scale=scale)
    draws = method.from_fit(fit, data, _bases(), np.random.default_rng(seed))
    return summary(draws.values)


def run_one(y, s, g, priv, n_l, seed, params_out: dict) -> dict:
    codes = (g != priv).astype(np.intp)  # 0: privileged, 1: the others
    lab = labeled_draw(g, n_l, seed)
    mask = np.zeros(y.size, dtype=bool)
    mask[lab] = True
    data = fit_data(y, s, codes, mask)
    ms = base.measures(priv)[:2]
    kw = dict(sensitive_features=g[mask], reference=priv, random_state=seed)
    out: dict = {"seed": seed}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("bb", "ppi"):
            extra = {} if name == "bb" else dict(unlabeled_scores=s[~mask], unlabeled_sensitive=g[~mask])
            post = posteriors(ms, y[mask], s[mask], method=name, **extra, **kw)
            out[name] = {p.measure.base.name: [p.value, *p.interval(0.95)] for p in post.values()}
        t0 = time.perf_counter()
        bc = BayesianCalibration(warn=False)
        fit = bc.fit(data, chains=4, draws=200, seed=seed % (2**31 - 1))
        out["seconds"] = time.perf_counter() - t0
    cells_ = data.counts + calibrated_cells(
        fit.params, data.unlabeled.scores, data.unlabeled.y_pred, data.unlabeled.codes, 2
    )
    out["bc"] = summary(bc.draws_from_cells(cells_, fit, _bases()).values)
    out["bcr_at"] = {str(sc): rectified(fit, data, sc, seed) for sc in ALT_SCALES}
    out["bcr"] = out["bcr_at"].get(str(RECTIFIER_SCALE)) or rectified(fit, data, RECTIFIER_SCALE, seed)
    out["auto_method"], _ = checked_method("bcr", data)  # what posterior(method="auto") would use
    out["auto"] = out[out["auto_method"]]
    out["divergences"] = int(fit.diagnostics.get("divergences", 0))
    out["max_r_hat"] = float(fit.diagnostics.get("max_r_hat", np.nan))
    params_out["lab"] = lab
    params_out.update({k: v.astype(np.float32) for k, v in fit.params.items()})
    return out


def run(todo_cells, n_runs: int, cache: Path, params_dir: Path) -> None:
    cache.parent.mkdir(parents=True, exist_ok=True)
    params_dir.mkdir(parents=True, exist_ok=True)
    done = {(r["dataset"], r["model"], r["n_l"], r["run"]) for r in base.read_cache(cache)}
    for dataset, model, n_l in todo_cells:
        todo = [i for i in range(n_runs) if (dataset, model, n_l, i) not in done]
        if not todo:
            continue
        y, s, g, priv = base.load(dataset, model)
        true = base.truth(y, s, g, priv)
        start = time.perf_counter()
        with cache.open("a") as fh:
            for i in todo:
                seed = zlib.crc32(f"{dataset}:{model}:{n_l}:{i}".encode())
                row = {
                    "dataset": dataset,
                    "model": model,
                    "n_l": n_l,
                    "run": i,
                    "truth": {m: true[m] for m in METRICS},
                    "rectifier_scale": RECTIFIER_SCALE,
                }
                params: dict = {}
                row.update(run_one(y, s, g, priv, n_l, seed, params))
                np.savez_compressed(params_dir / f"{dataset}_{model}_{n_l}_{i}.npz", **params)
                fh.write(json.dumps(base._round(row)) + "\n")
                fh.flush()
        print(
            f"{dataset:14s} {model:4s} n_L={n_l:<4d} {len(todo):3d} runs in {time.perf_counter() - start:7.1f} s",
            flush=True,
        )


def rectify_only(cache: Path, params_dir: Path, scale: float) -> None:
    """Recompute ``bcr``/``auto`` of every cached run from its stored calibration draws."""
    rows = base.read_cache(cache)
    loaded: dict = {}
    for r in rows:
        f = params_dir / f"{r['dataset']}_{r['model']}_{r['n_l']}_{r['run']}.npz"
        if not f.exists():
            continue
        key = (r["dataset"], r["model"])
        if key not in loaded:
            loaded[key] = base.load(*key)
        y, s, g, priv = loaded[key]
        z = np.load(f)
        mask = np.zeros(y.size, dtype=bool)
        mask[z["lab"]] = True
        fit = CalibrationFit({k: z[k].astype(float) for k in "abc"}, None)
        data = fit_data(y, s, (g != priv).astype(np.intp), mask)
        r["bcr"] = r["auto"] = rectified(fit, data, scale, r["seed"])
        r.setdefault("bcr_at", {})[str(scale)] = r["bcr"]
        r["rectifier_scale"] = scale
    cache.write_text("".join(json.dumps(base._round(r)) + "\n" for r in rows))


# -- report -------------------------------------------------------------------------------


def summarise(rows: list[dict]) -> pd.DataFrame:
    recs = []
    for r in rows:
        for metric in METRICS:
            t = r["truth"][metric]
            rec = {
                "dataset": r["dataset"],
                "model": r["model"],
                "n_l": r["n_l"],
                "metric": metric,
                "truth": t,
                "auto_bb": float(r.get("auto_method") == "bb"),
            }
            for meth in METHODS:
                est, lo, hi = (np.nan if v is None else v for v in r[meth][metric])
                rec[f"{meth}_err"] = abs(est - t)
                rec[f"{meth}_cover"] = float(lo <= t <= hi) if np.isfinite(est) else np.nan
            recs.append(rec)
    df = pd.DataFrame(recs)
    if df.empty:
        return df
    aggs = {"runs": ("bb_err", "size"), "truth": ("truth", "first"), "auto_bb": ("auto_bb", "mean")}
    for meth in METHODS:
        aggs[meth] = (f"{meth}_err", "mean")
        aggs[f"{meth}_cover"] = (f"{meth}_cover", "mean")
        aggs[f"{meth}_defined"] = (f"{meth}_err", "count")
    agg = df.groupby(["dataset", "model", "n_l", "metric"]).agg(**aggs).reset_index()
    for c in ["truth", *METHODS, *(f"{m}_cover" for m in METHODS)]:
        agg[c] = 100 * agg[c]
    return agg


def verdicts(agg: pd.DataFrame) -> pd.DataFrame:
    """Whether ``auto`` meets the issue's targets in each cell."""
    best = agg[["bb", "bc"]].min(axis=1)
    cov = agg.auto_cover
    agg = agg.assign(
        mae_ok=agg.auto <= best + 1.0,
        mae_at_or_below=agg.auto <= best,
        cover_ok=np.where(agg.n_l >= 40, (cov >= 93) & (cov <= 97), cov >= 90),
    )
    return agg


def why_missed(r) -> str:
    """A short reason for each target auto misses in a cell (empty when both are met)."""
    out = []
    sd = 100 * np.sqrt(0.95 * 0.05 / r.runs)  # binomial sd of a coverage at 95%
    if not r.cover_ok:
        if r.n_l >= 40 and r.auto_cover > 97:
            noise = r.auto_cover <= 97 + 2 * sd
            out.append(
                ("over, within 2 sd" if noise else "over-covers")
                + (", as BB and BC do" if min(r.bb_cover, r.bc_cover) > 97 else "")
            )
        elif r.auto_cover >= (93 if r.n_l >= 40 else 90) - 2 * sd:
            out.append(f"coverage within 2 sd ({2 * sd:.1f}) of the band")
        else:
            out.append("under-covers" + (", BC lower" if r.bc_cover < r.auto_cover else ""))
    if not r.mae_ok:
        if r.auto_bb >= 0.5:
            out.append(f"BB used in {100 * r.auto_bb:.0f}% of runs (checks failed)")
        else:
            out.append(f"MAE {r.auto - min(r.bb, r.bc):+.1f} over min")
    return "; ".join(out)


def _cell(r, meth) -> str:
    mae = "—" if not np.isfinite(getattr(r, meth)) else f"{getattr(r, meth):.1f}"
    cov = getattr(r, f"{meth}_cover")
    covtxt = "—" if not np.isfinite(cov) else f"{cov:.0f}"
    return f"{mae} ({covtxt})"


def table(agg: pd.DataFrame, metric: str) -> str:
    head = (
        "| Dataset, attribute | Model | n_L | true Δ | runs | BB | BC | PPI | BCR | auto |"
        " auto: MAE ≤ min(BB, BC) + 1 / coverage target | why missed |"
    )
    lines = [head, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    sub = agg[agg.metric == metric]
    for d, spec in base.DATASETS.items():
        for m in base.MODELS:
            for r in sub[(sub.dataset == d) & (sub.model == m)].sort_values("n_l").itertuples():
                flags = f"{'yes' if r.mae_ok else '**no**'} / {'yes' if r.cover_ok else '**no**'}"
                parts = " | ".join(_cell(r, meth) for meth in METHODS)
                lines.append(
                    f"| {spec[4]} | {m} | {r.n_l} | {r.truth:+.1f} | {int(r.runs)} | {parts} | {flags} "
                    f"| {why_missed(r)} |"
                )
    return "\n".join(lines)


def overview(agg: pd.DataFrame) -> str:
    lines = [
        "| metric | n_L | cells | auto MAE ok | auto MAE ≤ min | auto coverage ok "
        "| mean coverage BB / BC / PPI / BCR / auto | mean MAE BB / BC / PPI / BCR / auto |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for (metric, n_l), s in agg.groupby(["metric", "n_l"]):
        cov = " / ".join(f"{s[f'{m}_cover'].mean():.1f}" for m in METHODS)
        mae = " / ".join(f"{s[m].mean():.1f}" for m in METHODS)
        lines.append(
            f"| Δ {metric} | {n_l} | {len(s)} | {int(s.mae_ok.sum())} | {int(s.mae_at_or_below.sum())} | "
            f"{int(s.cover_ok.sum())} | {cov} | {mae} |"
        )
    return "\n".join(lines)


def at_scale(rows: list[dict], scale: float | None) -> list[dict]:
    """The runs with BCR (and auto) at ``scale`` where stored (all runs when ``scale`` is None)."""
    if scale is None:
        return rows
    out = []
    for r in rows:
        got = r.get("bcr_at", {}).get(str(scale))
        if got is None and r.get("rectifier_scale") == scale:
            got = r["bcr"]
        if got is not None:
            out.append({**r, "bcr": got, "auto": got, "rectifier_scale": scale})
    return out


def with_auto(rows: list[dict], params_dir: Path) -> list[dict]:
    """``auto`` per run as ``posterior()`` decides it: BCR, or BB when the calibration checks fail.

    The checks need the run's labeled rows, kept with its calibration draws in ``params_dir``;
    without them, the decision stored in the run (``auto_method``) is used.
    """
    loaded: dict = {}
    out = []
    for r in rows:
        f = params_dir / f"{r['dataset']}_{r['model']}_{r['n_l']}_{r['run']}.npz"
        if not f.exists():  # the decision stored with the run (the labeled rows are in the local draws only)
            name = r.get("auto_method", "bcr")
            out.append({**r, "auto": r[name], "auto_method": name})
            continue
        key = (r["dataset"], r["model"])
        if key not in loaded:
            loaded[key] = base.load(*key)
        y, s, g, priv = loaded[key]
        mask = np.zeros(y.size, dtype=bool)
        mask[np.load(f)["lab"]] = True
        name, _ = checked_method("bcr", fit_data(y, s, (g != priv).astype(np.intp), mask))
        out.append({**r, "auto": r[name], "auto_method": name})
    return out


def report(cache: Path, doc: Path, scale: float | None = None, params_dir: Path = DEFAULT_PARAMS) -> str:
    rows = with_auto(at_scale(base.read_cache(cache), scale), params_dir)
    agg = summarise(rows)
    if agg.empty:
        return "no runs cached yet"
    agg = verdicts(agg)
    agg.round(4).to_csv(HERE / "results" / "ji2020_methods_cells.csv", index=False)
    scale = sorted({r.get("rectifier_scale") for r in rows}, key=str)
    body = "\n\n".join(
        [
            f"Runs: {len(rows)} in {len(agg) // len(METRICS)} cells; rectifier scale {scale}; auto used BB "
            f"(calibration checks failed) in {sum(r['auto_method'] == 'bb' for r in rows)} runs; "
            f"BC fits with divergences after the retry: {sum(r['divergences'] > 0 for r in rows)}.",
            "### Overview: cells where auto meets each target",
            overview(agg),
            "### Δ accuracy: MAE x 100 (coverage % of the 95% interval)",
            table(agg, "acc"),
            "### Δ TPR: MAE x 100 (coverage % of the 95% interval)",
            table(agg, "tpr"),
        ]
    )
    start, end = "<!-- methods:start -->", "<!-- methods:end -->"
    text = doc.read_text() if doc.exists() else ""
    if start in text and end in text:
        doc.write_text(text[: text.index(start) + len(start)] + "\n" + body + "\n" + text[text.index(end) :])
    return body


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--draws", type=int, default=100, help="runs per cell")
    ap.add_argument("--n-l", default=",".join(map(str, N_LS)), help="comma-separated n_L values")
    ap.add_argument("--cells", default=None, help="comma-separated dataset:model:n_L patterns")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--params", type=Path, default=DEFAULT_PARAMS)
    ap.add_argument("--rectify-only", action="store_true")
    ap.add_argument("--rectifier-scale", type=float, default=RECTIFIER_SCALE)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument(
        "--report-scale",
        type=float,
        default=RECTIFIER_SCALE,
        help="report BCR/auto at this rectifier scale (runs that stored it; default: the library's)",
    )
    ap.add_argument("--doc", type=Path, default=base.DOC)
    args = ap.parse_args(argv)
    if not base.DATA.exists():
        print(f"data not found at {base.DATA}; nothing to do", file=sys.stderr)
        return 1
    if args.rectify_only:
        rectify_only(args.cache, args.params, args.rectifier_scale)
    elif not args.report_only:
        todo = cells(tuple(int(x) for x in args.n_l.split(",")), args.cells)
        print(f"{len(todo)} cells x {args.draws} runs -> {args.cache}", flush=True)
        run(todo, args.draws, args.cache, args.params)
    print(report(args.cache, args.doc, args.report_scale, args.params))
    return 0


if __name__ == "__main__":
    sys.exit(main())
