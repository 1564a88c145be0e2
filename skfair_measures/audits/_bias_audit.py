"""The bias audit of NYC Local Law 144 (6 RCNY 5-300 to 5-304), with an interval for every impact ratio.

The rule's definitions (6 RCNY 5-300 and 5-301):

- *selection rate*: the share of a category that the tool selected to move forward;
- *scoring rate*: the share of a category that scored above the median score of the full
  sample (all assessed rows, unknown categories included);
- *impact ratio*: a category's rate over the highest rate of the table's categories;
- three tables: sex, race/ethnicity, and their intersection, each computed on the rows whose
  categories in it are known; the rows with an unknown category are counted and reported;
- an auditor may exclude a category that represents less than 2% of the data from the
  impact ratios (5-301(d)); it keeps its n and rate, gets no impact ratio, and is never the
  reference; the summary says so.

Uncertainty (ours, not the rule's): the reference is the category with the highest observed
rate, chosen from the data, so an interval for one ratio to it would not cover. The true
impact ratio of category j is ``min_k p_j / p_k`` over the other categories k (with 1, for
``k = j``). Koopman's score interval of every ratio ``p_j / p_k`` gives: the lower bound
``min_k`` of the lower bounds at level ``prob`` (only the pair with the true highest rate
matters, so that side misses with at most ``(1 - prob) / 2``), and the upper bound ``min_k``
of the upper bounds at level ``1 - (1 - prob) / (K - 1)`` (Bonferroni over the K - 1 pairs,
each of which could be the one that misses), capped at 1. Koopman's interval is the usual
choice at small counts; the Katz log interval (``scipy.stats.contingency.relative_risk``)
undercovers there and fails at zero counts. The seeded simulation in
``benchmarks/bench_bias_audit.py`` measures the coverage (docs/bias_audit.md).

Each impact ratio also gets: a verdict against 0.8 read off its interval ("below": the
whole interval is under 0.8; "above": it is at or over 0.8; else "inconclusive"), the
four-fifths flag (the ratio itself under 0.8), Fisher's exact test and the
two-standard-deviation rule of the rate difference to the reference category, and the
practical-significance check (would the flag go if one or two more people of the category
had been selected).
"""

from __future__ import annotations

import datetime as _dt
import functools
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._files import write_atomically
from .._optional import require
from ..results import check_prob
from ..uncertainty import Estimate, summarize
from ..uncertainty._proportions import koopman_bound

__all__ = ["CONSTRUCTION", "BiasAudit", "bias_audit", "bias_audit_log", "impact_ratio_intervals"]

#: The three tables of the rule, in order; also the CSV files' names.
TABLES = ("sex", "race_ethnicity", "intersectional")
#: The four-fifths rule's threshold, and the tolerance around an impact ratio of 1 that it is as an Estimate's eps.
THRESHOLD, EPS = 0.8, 0.2
#: An Estimate's verdict against 1 +- EPS in the table's words (an impact ratio is at most 1).
_WORDS = {"within": "above", "exceeds": "below", "inconclusive": "inconclusive"}
#: The interval's construction, in words every sink prints.
CONSTRUCTION = "Koopman score (ratio), simultaneous over the reference"
#: The most the rule lets an auditor exclude: categories under 2% of the data (5-301(d)).
MAX_EXCLUDE = 0.02


def impact_ratio_intervals(selected: Any, n: Any, prob: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Intervals for the impact ratios ``p_j / max_k p_k`` of K categories, the reference chosen from the data.

    The lower bound of category j is the least Koopman lower bound of ``p_j / p_k`` over the
    other categories at level ``prob``; the upper bound the least upper bound at level
    ``1 - (1 - prob) / (K - 1)``, capped at 1 (see the module's notes: each side misses with
    at most ``(1 - prob) / 2``, whichever category truly has the highest rate).

    Parameters
    ----------
    selected, n : array-like of int
        Selected (or scored above the median) and assessed rows per category.
    prob : float, default=0.95
        The level.

    Returns
    -------
    tuple of ndarray
        ``(low, high)`` per category.

    Examples
    --------
    >>> lo, hi = impact_ratio_intervals([30, 20, 6], [60, 60, 20], prob=0.95)
    >>> [round(float(v), 3) for v in lo], [round(float(v), 3) for v in hi]
    ([0.893, 0.426, 0.281], [1.0, 1.0, 1.0])
    """
    x, m = np.asarray(selected, dtype=float), np.asarray(n, dtype=float)
    k = len(x)
    if k < 2:
        return np.ones(k), np.ones(k)
    j, other = np.nonzero(~np.eye(k, dtype=bool))  # row-major: the K - 1 others of each j in turn
    low = koopman_bound(x[j], m[j], x[other], m[other], prob, upper=False).reshape(k, k - 1).min(1)
    high = koopman_bound(x[j], m[j], x[other], m[other], 1 - (1 - prob) / (k - 1), upper=True).reshape(k, k - 1).min(1)
    return np.minimum(low, 1.0), np.minimum(high, 1.0)


def _table(
    cats: pd.Series, hit: np.ndarray, total: int, exclude_below: float, prob: float, name: str, key: str
) -> tuple[pd.DataFrame, dict[str, Estimate]]:
    """One of the rule's tables: the categories of ``cats`` (NaN: unknown) with their rates and ratios.

    Every impact ratio not excluded is an :class:`~skfair_measures.uncertainty.Estimate` (returned
    by category); the table's interval and verdict are read off it.
    """
    known = cats.notna().to_numpy()
    g = pd.Series(hit[known], index=cats[known].to_numpy()).groupby(level=0, sort=True)
    size = g.size()
    t = pd.DataFrame({"category": size.index.astype(str), "n": size.to_numpy(), name: g.sum().to_numpy().astype(int)})
    x, n = t[name].to_numpy(float), t["n"].to_numpy(float)
    rate, share = x / n, n / total
    keep = share >= exclude_below
    ratio, low, high, fisher, sd = np.full((5, len(t)), np.nan)
    reference = np.zeros(len(t), bool)
    verdict = np.where(keep, "undefined", "").astype(object)
    estimates: dict[str, Estimate] = {}
    if keep.any() and rate[keep].max() > 0:
        r = np.flatnonzero(keep)[np.argmax(rate[keep])]
        reference[r] = True
        ratio[keep] = rate[keep] / rate[r]
        bounds = functools.cache(lambda p: list(zip(*impact_ratio_intervals(x[keep], n[keep], p), strict=True)))
        common = {"construction": CONSTRUCTION, "target": "population", "prob": prob, "center": 1.0}
        for j, i in enumerate(np.flatnonzero(keep)):
            cat = t["category"].iat[i]
            est = Estimate(f"{key}[{cat}]", ratio[i], n=int(n[i]), interval=lambda p, j=j: bounds(p)[j], **common)
            estimates[cat] = est
            low[i], high[i] = est.interval()
            verdict[i] = _WORDS[est.verdict(EPS)]
        for i in np.flatnonzero(keep & ~reference):
            fisher[i] = stats.fisher_exact([[x[i], n[i] - x[i]], [x[r], n[r] - x[r]]])[1]
            pooled = (x[i] + x[r]) / (n[i] + n[r])
            se = np.sqrt(pooled * (1 - pooled) * (1 / n[i] + 1 / n[r]))
            sd[i] = 0.0 if rate[i] == rate[r] else (rate[i] - rate[r]) / se
    flag = ratio < THRESHOLD
    defined = ~np.isnan(ratio)

    def flips(extra: int) -> pd.Series:  # the flag goes once `extra` more people of the category are selected
        more = np.minimum(x + extra, n) / n
        gone = more / np.maximum(np.nanmax(np.where(keep, rate, np.nan)) if keep.any() else 1.0, more) >= THRESHOLD
        return pd.Series(gone, dtype="boolean").where(flag, pd.NA)

    t["rate"], t["impact_ratio"], t["impact_ratio_lower"], t["impact_ratio_upper"] = rate, ratio, low, high
    t["excluded"], t["reference"], t["share"] = ~keep, reference, share
    t["verdict"] = verdict
    t["four_fifths_flag"] = pd.Series(flag, dtype="boolean").where(defined, pd.NA)
    t["flag_flips_with_1_more"], t["flag_flips_with_2_more"] = flips(1), flips(2)
    t["fisher_p"], t["sd_units"] = fisher, sd
    t["two_sd_flag"] = pd.Series(np.abs(sd) > 2, dtype="boolean").where(~np.isnan(sd), pd.NA)
    return t, estimates


@dataclass
class BiasAudit:
    """The result of :func:`bias_audit`: the rule's three tables and the audit's facts.

    Attributes
    ----------
    tables : dict of str to pandas.DataFrame
        ``"sex"``, ``"race_ethnicity"``, ``"intersectional"``; one row per category (per
        group first, with ``groups=``), the columns of :func:`bias_audit`.
    summary : dict
        Rows, unknown counts, exclusions, the data source, the date, the verdict counts.
    prob : float
        The level of the impact ratios' intervals.
    estimates : dict of str to dict of str to Estimate
        Per table, every impact ratio not excluded by category (``"group: category"`` with
        ``groups=``), as an :class:`~skfair_measures.uncertainty.Estimate` (its interval at any
        ``prob``); :meth:`summary_table` gives their summary rows.
    """

    tables: dict[str, pd.DataFrame]
    summary: dict[str, Any]
    prob: float = 0.95
    estimates: dict[str, dict[str, Estimate]] = field(default_factory=dict)
    construction: str = field(default=CONSTRUCTION)

    def summary_table(self, prob: float | None = None) -> pd.DataFrame:
        """Every impact ratio's summary row (:data:`~skfair_measures.uncertainty.SUMMARY_COLUMNS`), ``eps`` 0.2.

        ``verdict`` "within" is the tables' "above" (the interval at or over 0.8), "exceeds" their "below".
        """
        return summarize([e for by in self.estimates.values() for e in by.values()], prob, EPS)

    @property
    def rate_column(self) -> str:
        """``"selected"`` or ``"scored_above_median"``."""
        return "selected" if self.summary["rate"] == "selection rate" else "scored_above_median"

    def verdict_counts(self) -> dict[str, dict[str, int]]:
        """Per table, how many categories are below 0.8, above it, inconclusive, flagged by the four-fifths rule."""
        out = {}
        for name, t in self.tables.items():
            counts = {v: int((t["verdict"] == v).sum()) for v in ("below", "above", "inconclusive", "undefined")}
            counts["four_fifths_flags"] = int(t["four_fifths_flag"].fillna(False).sum())
            counts["excluded"] = int(t["excluded"].sum())
            out[name] = counts
        return out

    def to_html(self) -> str:
        """A self-contained page of the audit's summary, as the rule asks employers to publish it."""
        return _page(self)

    def write(self, out: str | Path) -> list[Path]:
        """Write ``sex.csv``, ``race_ethnicity.csv``, ``intersectional.csv``, ``summary.json`` and ``bias_audit.html``.

        Returns
        -------
        list of pathlib.Path
            The files written, in that order.
        """
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        texts = {f"{name}.csv": t.to_csv(index=False) for name, t in self.tables.items()}
        texts["summary.json"] = json.dumps(self.summary, indent=2, default=str, ensure_ascii=False) + "\n"
        texts["bias_audit.html"] = self.to_html()
        for name, text in texts.items():
            write_atomically(out / name, text)
        return [out / name for name in texts]

    def __repr__(self) -> str:
        s = self.summary
        counts = {k: v["below"] for k, v in self.verdict_counts().items()}
        return f"BiasAudit({s['rate']}, rows={s['rows']}, unknown={s['unknown']}, below 0.8={counts})"


def _column(frame: pd.DataFrame, arg: str, name: Any) -> pd.Series:
    if not isinstance(name, str) or name not in frame.columns:
        raise KeyError(f"{arg}={name!r}: no such column; the columns are {list(frame.columns)}.")
    return frame[name]


def _categories(values: pd.Series, unknown: Sequence[str]) -> pd.Series:
    """The column as text, with missing, empty and ``unknown`` values as NaN."""
    text = values.astype(object).where(values.notna(), None).map(lambda v: None if v is None else str(v).strip())
    missing = text.isna() | text.eq("") | text.str.casefold().isin([u.casefold() for u in unknown])
    return text.where(~missing, np.nan)


def _hits(frame: pd.DataFrame, selected: str | None, score: str | None) -> tuple[np.ndarray, float | None]:
    if (selected is None) == (score is None):
        raise TypeError("pass selected= (a 0/1 column: who moved forward) or score= (a numeric score column), one.")
    arg, name = ("selected", selected) if selected is not None else ("score", score)
    col = _column(frame, arg, name)
    if col.isna().any():
        raise ValueError(f"{arg}={name!r} is missing in {int(col.isna().sum())} rows; every assessed row needs one.")
    if selected is not None:
        values = set(pd.unique(col))
        if not values <= {0, 1}:  # True and False are 1 and 0
            raise ValueError(f"selected={name!r} holds {sorted(map(str, values))[:5]}; pass 0/1 or True/False.")
        return col.to_numpy(dtype=float), None
    if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        raise ValueError(f"score={name!r} is not numeric ({col.dtype}); pass a numeric score column.")
    median = float(col.median())
    return (col.to_numpy(dtype=float) > median).astype(float), median


def _one(frame: pd.DataFrame, sex: pd.Series, race: pd.Series, kw: dict[str, Any], group: Any = None) -> tuple:
    hit, median = _hits(frame, kw["selected"], kw["score"])
    name = "selected" if median is None else "scored_above_median"
    both = sex.where(race.notna()).str.cat(race, sep=" × ").where(sex.notna() & race.notna(), np.nan)
    total, prefix = len(frame), "bias_audit" if group is None else f"bias_audit[{group}]"
    made = {
        t: _table(c, hit, total, kw["exclude_below"], kw["prob"], name, f"{prefix}.{t}.impact_ratio")
        for t, c in zip(TABLES, (sex, race, both), strict=True)
    }
    tables = {t: m[0] for t, m in made.items()}
    facts = {
        "rows": total,
        "unknown": {t: int(c.isna().sum()) for t, c in zip(TABLES, (sex, race, both), strict=True)},
        "excluded": {t: tables[t].loc[tables[t]["excluded"], "category"].tolist() for t in TABLES},
        "median_score": median,
    }
    return tables, facts, {t: m[1] for t, m in made.items()}


def bias_audit(
    frame: Any,
    *,
    sex: str,
    race_ethnicity: str,
    selected: str | None = None,
    score: str | None = None,
    groups: str | None = None,
    exclude_below: float | None = None,
    prob: float = 0.95,
    unknown: Sequence[str] = (),
    source: str | None = None,
    date: str | None = None,
    distribution_date: str | None = None,
) -> BiasAudit:
    """The bias audit of NYC Local Law 144 (6 RCNY 5-301): selection or scoring rates and impact ratios.

    Parameters
    ----------
    frame : pandas.DataFrame (or a frame with ``to_pandas()``)
        One row per assessed person.
    sex, race_ethnicity : str
        The category columns; a missing or empty value (or one of ``unknown``) is an unknown
        category: the row is left out of that table and counted in ``summary["unknown"]``.
    selected : str, optional
        A 0/1 column: whether the tool selected the person (selection rates).
    score : str, optional
        A numeric score column (scoring rates: the share above the median of all rows).
    groups : str, optional
        A column of the groups the tool sorts people into; the tables are repeated per group
        (a ``group`` column first), each group with its own median, shares and unknowns.
    exclude_below : float, optional
        Exclude categories under this share of all rows (unknown included) from the impact
        ratios, at most 0.02 (the rule's 2%); they keep their n and rate.
    prob : float, default=0.95
        The level of the impact ratios' intervals and verdicts.
    unknown : sequence of str, default=()
        Values that mean "unknown" (e.g. ``"Decline to self-identify"``), matched ignoring case.
    source, date, distribution_date : str, optional
        For the summary: the data source, the audit's date (default: today, UTC) and the date
        the tool was first distributed (the published summary gives it, 6 RCNY 5-303).

    Returns
    -------
    BiasAudit
        ``.tables`` (columns ``category``, ``n``, ``selected`` or ``scored_above_median``,
        ``rate``, ``impact_ratio``, ``impact_ratio_lower``, ``impact_ratio_upper``,
        ``excluded``, ``reference``, ``share``, ``verdict``, ``four_fifths_flag``,
        ``flag_flips_with_1_more``, ``flag_flips_with_2_more``, ``fisher_p``, ``sd_units``,
        ``two_sd_flag``), ``.summary``, ``.write(out)``, ``.to_html()``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"sex": ["F"] * 50 + ["M"] * 50, "race": ["A", "B"] * 50,
    ...                    "hired": [1] * 15 + [0] * 35 + [1] * 25 + [0] * 25})
    >>> audit = bias_audit(df, sex="sex", race_ethnicity="race", selected="hired")
    >>> audit.tables["sex"][["category", "n", "selected", "rate", "impact_ratio", "verdict"]]
      category   n  selected  rate  impact_ratio       verdict
    0        F  50        15   0.3           0.6  inconclusive
    1        M  50        25   0.5           1.0         above
    """
    if not isinstance(frame, pd.DataFrame):
        if not hasattr(frame, "to_pandas"):
            raise TypeError(f"frame must be a pandas DataFrame (or have .to_pandas()); got {type(frame).__name__}.")
        frame = frame.to_pandas()
    prob = check_prob(prob)
    if exclude_below is not None and not 0 <= exclude_below <= MAX_EXCLUDE:
        raise ValueError(
            f"exclude_below={exclude_below!r}; the rule lets an auditor exclude only categories under 2% of the "
            "data (6 RCNY 5-301(d)): pass a share between 0 and 0.02, or None."
        )
    if len(frame) == 0:
        raise ValueError("frame has no rows; a bias audit needs the assessed people.")
    if sex == race_ethnicity:
        raise ValueError(
            f"sex={sex!r} and race_ethnicity={race_ethnicity!r} name the same column; the rule's intersectional "
            "table crosses two attributes: pass the sex column and the race/ethnicity column."
        )
    kw = {"selected": selected, "score": score, "exclude_below": exclude_below or 0.0, "prob": prob}
    sex_c = _categories(_column(frame, "sex", sex), unknown)
    race_c = _categories(_column(frame, "race_ethnicity", race_ethnicity), unknown)
    summary: dict[str, Any] = {
        "date": date or _dt.datetime.now(_dt.UTC).date().isoformat(),
        "data_source": source,
        "distribution_date": distribution_date,
        "rate": "selection rate" if selected is not None else "scoring rate",
        "threshold": THRESHOLD,
        "exclude_below": exclude_below,
        "prob": prob,
        "construction": CONSTRUCTION,
    }
    if groups is None:
        tables, facts, estimates = _one(frame, sex_c, race_c, kw)
        summary.update(facts)
    else:
        col = _column(frame, "groups", groups)
        if col.isna().any():
            raise ValueError(f"groups={groups!r} is missing in {int(col.isna().sum())} rows; name every row's group.")
        parts = {
            g: _one(frame[col == g], sex_c[col == g], race_c[col == g], kw, g) for g in sorted(pd.unique(col), key=str)
        }
        estimates = {t: {f"{g}: {c}": e for g, p in parts.items() for c, e in p[2][t].items()} for t in TABLES}
        tables = {t: pd.concat([p[0][t].assign(group=g) for g, p in parts.items()], ignore_index=True) for t in TABLES}
        tables = {t: v[["group", *v.columns[:-1]]] for t, v in tables.items()}
        summary["by_group"] = {str(g): p[1] for g, p in parts.items()}
        summary["rows"] = len(frame)
        summary["unknown"] = {t: sum(p[1]["unknown"][t] for p in parts.values()) for t in TABLES}
        summary["excluded"] = {t: [f"{g}: {c}" for g, p in parts.items() for c in p[1]["excluded"][t]] for t in TABLES}
    audit = BiasAudit(tables, summary, prob, estimates)
    summary["verdicts"] = audit.verdict_counts()
    return audit


def bias_audit_log(
    log: str | Path, *, time: str | None = None, start: Any = None, end: Any = None, **kwargs: Any
) -> BiasAudit:
    """:func:`bias_audit` over the rows of a prediction log whose ``time`` is in ``[start, end)``.

    The log is a folder of Parquet files (a monitored model's log, as ``skfair monitor``
    reads it), one Parquet file, or a CSV; DuckDB reads only the columns the audit needs and
    the rows of the window.

    Parameters
    ----------
    log : str or pathlib.Path
        The prediction log.
    time : str, optional
        Its time column (needed for a window; without it every row is audited).
    start, end : str or datetime, optional
        The window (``end`` excluded), e.g. a year: ``start="2025-01-01", end="2026-01-01"``.
    **kwargs
        The arguments of :func:`bias_audit` (``sex``, ``race_ethnicity``, ``selected`` or
        ``score``, ...).

    Returns
    -------
    BiasAudit
        Its summary also holds the ``window``.
    """
    duckdb = require("duckdb", "bias_audit_log (it reads the log with DuckDB)")
    path = Path(log)
    files = sorted(str(f) for f in path.glob("*.parquet")) if path.is_dir() else [str(path)]
    if not files or not Path(files[0]).is_file():
        raise FileNotFoundError(f"log={str(log)!r} is no file and holds no .parquet file.")
    try:
        parquet = path.is_dir() or path.suffix.lower() in (".parquet", ".pq")
        rel = duckdb.read_parquet(files) if parquet else duckdb.read_csv(files[0])
    except duckdb.Error as exc:
        raise ValueError(f"log={str(log)!r}: cannot read it ({exc}).") from None
    names = [time, *(kwargs.get(k) for k in ("sex", "race_ethnicity", "selected", "score", "groups"))]
    missing = [c for c in names if c is not None and c not in rel.columns]
    if missing:
        raise KeyError(f"{missing} not in {path.name}; its columns are {rel.columns}.")
    if time is None and (start is not None or end is not None):
        raise ValueError("start= and end= need time=: the column whose values make the window.")
    try:
        for arg, bound, keep in (("start", start, "__ge__"), ("end", end, "__lt__")):
            if bound is not None:
                try:
                    at = duckdb.ConstantExpression(pd.Timestamp(bound).to_pydatetime())
                except (ValueError, TypeError):
                    raise ValueError(f"{arg}={bound!r} is not a time; pass e.g. '2025-01-01'.") from None
                rel = rel.filter(getattr(duckdb.ColumnExpression(time), keep)(at))
        frame = rel.select(*dict.fromkeys(c for c in names[1:] if c is not None)).df()
    except duckdb.Error as exc:  # e.g. a time column of text that is no time
        raise ValueError(f"time={time!r}: cannot read the window of {path.name} ({exc}).") from None
    if frame.empty:
        raise ValueError(f"no rows of {path.name} have {time} in [{start}, {end}).")
    kwargs.setdefault("source", path.name)
    audit = bias_audit(frame, **kwargs)
    if time is not None:
        audit.summary["window"] = {"time": time, "start": start and str(start), "end": end and str(end)}
    return audit


# -- the page -------------------------------------------------------------------------------
_NOTES = (
    "The {rate} of a category is the share of its people that {what}. Its impact ratio is its {rate} divided by "
    "the highest {rate} of the categories in the same table.",
    "People whose sex or race/ethnicity is unknown are not in the tables that need it; their number is given above.",
    "The range after each impact ratio holds the true ratio with {pct} confidence; it is wider for small "
    "categories. The verdict reads it against 0.8 (the four-fifths rule): 'below' when the whole range is under "
    "0.8, 'above' when it is at or over 0.8, 'inconclusive' when the data cannot tell.",
    "A four-fifths flag marks an impact ratio under 0.8. 'Flips with 2 more' says whether the flag would go away "
    "if two more people of the category had been {verb}: if so, the gap is too small to matter in practice.",
    "Fisher's exact test gives the chance of a gap at least this large between the category and the one with the "
    "highest rate if the tool treated both alike; courts also read a gap of more than two standard deviations "
    "as significant.",
)


#: How a cell of each kind is written ("text" cells are escaped as they are).
_FORMATS = {"pct": "{:.1%}", "ratio": "{:.3f}", "p": "{:.3g}"}


def _fmt(v: Any, kind: str) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return ""
    if kind == "bool":
        return "yes" if v else "no"
    return _FORMATS[kind].format(v) if kind in _FORMATS else html.escape(str(v))


def _html_table(t: pd.DataFrame, count: str) -> str:
    cols = [
        ("group", "Group", "text"),
        ("category", "Category", "text"),
        ("n", "Number assessed", "text"),
        (count, "Selected" if count == "selected" else "Scored above median", "text"),
        ("rate", "Rate", "pct"),
        ("impact_ratio", "Impact ratio", "ratio"),
        ("range", "95% range", "text"),
        ("verdict", "Verdict vs 0.8", "text"),
        ("four_fifths_flag", "Four-fifths flag", "bool"),
        ("flag_flips_with_2_more", "Flips with 2 more", "bool"),
        ("fisher_p", "Fisher p", "p"),
        ("sd_units", "Std. deviations", "p"),
    ]
    low, high = t["impact_ratio_lower"], t["impact_ratio_upper"]
    t = t.assign(range=(low.map("{:.3f}".format) + " – " + high.map("{:.3f}".format)).where(low.notna(), ""))
    t.loc[t["excluded"], "verdict"] = "excluded (under 2%)"
    cols = [c for c in cols if c[0] in t.columns]
    head = "".join(f"<th{' class=t' if c in ('group', 'category') else ''}>{label}</th>" for c, label, _ in cols)
    rows = "".join(
        f"<tr class='{'flag' if r['verdict'] == 'below' else ''}'>"
        + "".join(f"<td{' class=t' if c in ('group', 'category') else ''}>{_fmt(r[c], k)}</td>" for c, _, k in cols)
        + "</tr>"
        for _, r in t.iterrows()
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _page(audit: BiasAudit) -> str:
    s, count = audit.summary, audit.rate_column
    rate = s["rate"]
    what = "the tool selected to move forward" if count == "selected" else "scored above the median score of everyone"
    pct = f"{100 * audit.prob:g}%"
    verb = "selected" if count == "selected" else "scored above the median"
    notes = [n.format(rate=rate, what=what, pct=pct, verb=verb) for n in _NOTES]
    excluded = "; ".join(f"{t}: {', '.join(c)}" for t, c in s["excluded"].items() if c)
    facts = [
        ("Date of the audit", s["date"]),
        ("Data source", s["data_source"] or "not given"),
        ("Distribution date of the tool", s.get("distribution_date") or ""),
        ("People assessed", s["rows"]),
        ("Unknown sex", s["unknown"]["sex"]),
        ("Unknown race/ethnicity", s["unknown"]["race_ethnicity"]),
        ("Unknown sex or race/ethnicity", s["unknown"]["intersectional"]),
        ("Median score", "" if s.get("median_score") is None else f"{s['median_score']:g}"),
        ("Window", "" if "window" not in s else f"{s['window']['start']} to {s['window']['end']}"),
        ("Excluded from impact ratios", excluded and f"{excluded} (each under 2% of the data, 6 RCNY 5-301(d))"),
    ]
    dl = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd>" for k, v in facts if v != "")
    titles = {
        "sex": "Sex",
        "race_ethnicity": "Race/ethnicity",
        "intersectional": "Intersectional (sex × race/ethnicity)",
    }
    body = "".join(
        f"<h2>{titles[name]}</h2>{_html_table(t, count).replace('95% range', f'{pct} range')}"
        for name, t in audit.tables.items()
    )
    notes_html = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Bias audit summary</title><style>"
        "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:72em;color:#222;padding:0 1em}"
        "table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.9em}"
        "th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}th{background:#f3f3f3}"
        "td{white-space:nowrap}.t{text-align:left}td.t{white-space:normal}tr.flag{background:#fde8e8}"
        "dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dt{font-weight:600}"
        "</style></head><body><h1>Bias audit summary (NYC Local Law 144)</h1>"
        f"<p>Impact ratios of the automated employment decision tool's {html.escape(rate)}s by sex, race/ethnicity "
        "and their intersection, as defined in 6 RCNY 5-300 and 5-301.</p>"
        f"<dl>{dl}</dl>{body}<h2>How to read this page</h2><ul>{notes_html}</ul>"
        f"<p><small>Ranges: {html.escape(audit.construction)}.</small></p></body></html>\n"
    )
