"""Simultaneous verdicts in a run: a table artifact, counts as metrics, the level and construction as a tag.

The verdicts are those of :func:`skfair_measures.verdict_tables` (one table per joint fit
among the results: the posteriors of one fit, the bootstrap results of one call), read
with the call's ``prob`` (the family-wise level) and ``eps``. Logged, with ``{p}`` the prefix:

- metrics ``{p}fairness.verdicts/exceeds``, ``/within``, ``/inconclusive`` and ``/undefined``:
  how many (base rate, pair of groups) rows have each verdict, over every table of the call,
  so that runs can be searched (``metrics."fairness.verdicts/exceeds" > 0``);
- the tag ``{p}fairness.verdicts``: eps, the family-wise level and each table's construction;
- the run's one verdict table :data:`VERDICT_TABLE` (``mlflow.log_table``; every call appends
  its rows, as for the groupwise table, so the run's ``mlflow.loggedArtifacts`` tag stays
  short): every row, with ``prefix`` and ``step``, the columns of
  :func:`skfair_measures.verdicts`, and ``source``, ``family_wise_level``, ``eps`` and
  ``fit`` (which table of the call a row belongs to: the level holds per table).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from skfair_measures import verdict_tables

if TYPE_CHECKING:  # _collect calls this module
    from ._collect import Payload

__all__ = ["VERDICTS", "VERDICT_TABLE", "add_verdicts"]

#: The one verdict table of a run.
VERDICT_TABLE = "fairness/verdicts.json"

#: The verdicts counted as metrics, each always logged (0 when absent) so a search can rely on it.
VERDICTS = ("exceeds", "inconclusive", "within", "undefined")


def add_verdicts(
    p: Payload,
    results: list[Any],
    *,
    prefix: str,
    key_prefix: str,
    step: int | None,
    prob: float,
    eps: float,
    artifacts: bool,
) -> None:
    """Add the verdicts of ``results`` (those with joint draws) to the payload; nothing if there are none.

    ``prefix`` is the call's prefix as given (a column of the table), ``key_prefix`` the
    sanitised one that starts the metric and tag keys.
    """
    tables = verdict_tables(results, eps, prob)
    if not tables:
        return
    rows = pd.concat(
        [
            t.assign(
                source=t.attrs["source"], fit=i, family_wise_level=t.attrs["family_wise_level"], eps=t.attrs["eps"]
            )
            for i, t in enumerate(tables)
        ],
        ignore_index=True,
    )
    rows.insert(0, "step", 0 if step is None else int(step))
    rows.insert(0, "prefix", pd.Series([prefix] * len(rows), dtype=object))
    counts = rows["verdict"].value_counts()
    for verdict in VERDICTS:
        p.add_metric(
            f"{key_prefix}fairness.verdicts/{verdict}",
            float(counts.get(verdict, 0)),
            quantity="verdict count",
            verdict=verdict,
            eps=eps,
            family_wise_level=prob,
        )
    how = "; ".join(
        f"table {i} ({t.attrs['source']}, {t.attrs['family_size']} distinct differences): {t.attrs['construction']}"
        for i, t in enumerate(tables)
    )
    p.add_tag(
        f"{key_prefix}fairness.verdicts",
        f"|rate_a - rate_b| <= eps = {eps:g}, jointly at family-wise level {prob:g} per table; {how}",
    )
    if artifacts:
        p.tables[VERDICT_TABLE] = rows.astype({c: object for c in rows.columns if rows[c].dtype.kind in "OTU"})
