"""Anytime-valid boxes of group rates, from a start step on, and how ``alpha`` is shared among them.

A box holds one betting confidence sequence (a row of a
:class:`~skfair_measures._betting.BettingStack`, fed by counts; the rows of a box are bet on
together, one numpy expression per batch) per (base rate, group) and one per base on all
groups pooled, over the batches since its start. A measure's interval is the image of the box under the
measure's operation (``bounds_from_group_values``), so it holds whenever every sequence
of the box holds.

The level of a sequence is fixed when it starts (a union bound):

- the monitor's ``alpha`` is split in two halves: one for the box started at the first
  batch (the cumulative sequence), one shared by the boxes restarted at every later
  batch ``j >= 2`` with weights ``1 / ((j - 1) j)`` (they sum to 1), which is what
  detects a change: a box started after the change sees only the new rates;
- inside a box, a measure reading ``b`` bases gives each base ``1 / b``; the groups
  known when the box starts and the pooled sequence share 90% of that equally, and the
  ``i``-th group to join later gets ``10% / (i (i + 1))`` (its sequence starts when it
  joins).

So the probability that any interval the monitor ever shows for a measure misses the
true value, at any number of looks, is at most ``alpha``, provided the rows are
independent draws and the rates stay constant between changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._betting import BettingStack, intervals_together, update_counts_together
from ..base import RatioRoles

__all__ = ["Box", "box_alpha", "cells", "group_share"]

#: Share of a base's level for the groups known at the box's start (and the pooled sequence).
INITIAL_SHARE = 0.9


def box_alpha(alpha: float, start: int) -> float:
    """The level of the box started at step ``start`` (1: the cumulative one)."""
    return alpha / 2.0 if start <= 1 else alpha / 2.0 / ((start - 1) * start)


def group_share(position: int, known: int, sharing: int) -> float:
    """The share of the group at ``position`` (join order): ``INITIAL_SHARE / sharing`` for the ``known`` at the start.

    The ``i``-th group to join later gets ``(1 - INITIAL_SHARE) / (i (i + 1))`` (these sum to ``1 - INITIAL_SHARE``).
    """
    if position < known:
        return INITIAL_SHARE / sharing
    i = position - known + 1
    return (1.0 - INITIAL_SHARE) / (i * (i + 1))


def cells(counts: np.ndarray, roles: RatioRoles) -> tuple[np.ndarray, np.ndarray]:
    """Successes (numerator rows) and trials (denominator rows) per group of counts ``(n_groups, 2, 2)``."""
    successes, trials = (counts * roles.num).sum(axis=(-2, -1)), (counts * roles.den).sum(axis=(-2, -1))
    return np.rint(successes), np.rint(trials)


@dataclass(eq=False)
class Box:
    """The sequences of every (base, group) and pooled base rate since step ``start``, as one stack.

    ``rows[base]`` lists the rows of the stack (:class:`~skfair_measures._betting.BettingStack`)
    that hold the base's sequences: first the pooled rate, then each group in the
    monitor's order. A batch updates every sequence of the box with one numpy expression.
    """

    start: int
    alpha: float
    known: int  # groups known at the start
    grid_size: int
    rows: dict[str, list[int]] = field(default_factory=dict)  # per base: [pooled row, group 0 row, group 1 row, ...]
    stack: BettingStack = field(init=False)  # a new box: no sequences yet
    counts: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 2)))  # the rows since the start
    _read: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)  # intervals by n_bases

    def __post_init__(self) -> None:
        self.stack = BettingStack(0, grid_size=self.grid_size)

    @property
    def alpha_bet(self) -> float:
        # bets tuned near the level a sequence is read at (two groups and the pooled rate); fixed by the start alone,
        # so two workers' boxes of one start combine
        return min(self.alpha / 3.0, 0.5)

    def _batch(self, counts: np.ndarray, rates: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, ...]:
        """Add the batch's counts; the successes and trials of every row of the stack (new rows made)."""
        self.counts = counts + np.pad(self.counts, ((0, len(counts) - len(self.counts)), (0, 0), (0, 0)))
        for name in rates:  # new sequences (appended) for a new base's pooled rate and for groups new to the box
            have = self.rows.setdefault(name, [])
            if (new := counts.shape[0] + 1 - len(have)) > 0:
                have += range(self.stack.rows, self.stack.rows + new)
                self.stack = self.stack.extended(new, self.alpha_bet)
        successes, trials = np.zeros(self.stack.rows), np.zeros(self.stack.rows)
        for name, (k, n) in rates.items():
            at = self.rows[name][: k.size + 1]  # the pooled rate, then each group
            successes[at], trials[at] = np.r_[k.sum(), k], np.r_[n.sum(), n]
        self._read.clear()
        return successes, trials

    @staticmethod
    def update_all(boxes: list[Box], counts: np.ndarray, rates: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> None:
        """Bet on one batch in every box: its counts ``(n_groups, 2, 2)`` and, per base, their (successes, trials).

        Every sequence of every box is updated by one numpy expression
        (:func:`~skfair_measures._betting.update_counts_together`).
        """
        cells = [box._batch(counts, rates) for box in boxes]
        update_counts_together([box.stack for box in boxes], [c[0] for c in cells], [c[1] for c in cells])

    def _levels(self, n_bases: int) -> np.ndarray:
        """The level of every row of the stack, for a measure of ``n_bases`` (each base gets ``alpha / n_bases``).

        The groups known at the start share with the pooled rate (the first row of a base, at the level of a group
        known at the start); see :func:`group_share`.
        """
        levels = np.empty(self.stack.rows)
        for rows in self.rows.values():
            shares = [group_share(g, self.known, self.known + 1) for g in (0, *range(len(rows) - 1))]
            levels[rows] = np.multiply(self.alpha / n_bases, shares)
        return levels

    @staticmethod
    def read_all(boxes: list[Box], n_bases: int) -> None:
        """Read the intervals of every sequence of every box at once, for measures of ``n_bases``."""
        todo = [box for box in boxes if n_bases not in box._read]
        read = intervals_together([box.stack for box in todo], [box._levels(n_bases) for box in todo])
        for box, bounds in zip(todo, read, strict=True):
            box._read[n_bases] = bounds

    def group_bounds(
        self, name: str, n_groups: int, n_bases: int
    ) -> tuple[np.ndarray, np.ndarray, tuple[float, float]]:
        """The intervals of the base's ``n_groups`` group rates and of its pooled rate (whole range without rows)."""
        lower, upper, rows = np.zeros(n_groups), np.ones(n_groups), self.rows.get(name)
        if not rows:
            return lower, upper, (0.0, 1.0)
        Box.read_all([self], n_bases)  # (once per batch and n_bases)
        lo, hi = self._read[n_bases]
        groups = rows[1 : n_groups + 1]
        lower[: len(groups)], upper[: len(groups)] = lo[groups], hi[groups]
        return lower, upper, (float(lo[rows[0]]), float(hi[rows[0]]))

    def bounds(self, measure: Any, groups: pd.Index) -> tuple[float, float]:
        """The measure's interval from this box: the image of its jointly valid box of rates."""
        names = [b.name for b in measure.bases]
        parts = {name: self.group_bounds(name, len(groups), len(names)) for name in names}
        lower, upper, overall = ({name: part[i] for name, part in parts.items()} for i in range(3))
        return measure.bounds_from_group_values(lower, upper, groups=groups, overall=overall)

    def combined(self, other: Box, positions: np.ndarray) -> Box:
        """Two workers' boxes of one start, on independent rows (the other's groups at ``positions`` here).

        Sequences of one rate and group on both sides combine (:meth:`BettingStack.combined`);
        one on a single side is kept as it is; a pooled rate that a side never bet on counts
        as absent.
        """
        out = Box(self.start, self.alpha, self.known, self.grid_size)
        size = max(self.counts.shape[0], int(positions.max()) + 1 if positions.size else 0)
        out.counts = np.zeros((size, 2, 2))
        out.counts[: self.counts.shape[0]] += self.counts
        out.counts[positions[: other.counts.shape[0]]] += other.counts
        mine_rows, their_rows = [], []  # per row of the result: the row of each side, -1 if absent
        for name in sorted(set(self.rows) | set(other.rows)):
            mine, theirs = self.rows.get(name, []), other.rows.get(name, [])
            at = positions[: max(len(theirs) - 1, 0)]
            n_groups = max([len(mine) - 1, *(int(p) + 1 for p in at)])
            slot_m, slot_t = np.full(n_groups + 1, -1), np.full(n_groups + 1, -1)
            slot_m[: len(mine)] = mine
            slot_t[np.r_[0, at + 1][: len(theirs)]] = theirs  # their pooled rate, then each group where it is here
            for slot, side in ((slot_m, self), (slot_t, other)):  # a pooled rate never bet on is absent
                if slot[0] >= 0 and side.stack.n[slot[0]] == 0:
                    slot[0] = -1
            out.rows[name] = list(range(len(mine_rows), len(mine_rows) + n_groups + 1))
            mine_rows += slot_m.tolist()
            their_rows += slot_t.tolist()
        m, t = np.array(mine_rows, dtype=int), np.array(their_rows, dtype=int)
        both, only_m, only_t = (m >= 0) & (t >= 0), (m >= 0) & (t < 0), (m < 0) & (t >= 0)
        fresh = (m < 0) & (t < 0)
        parts = [
            self.stack.take(m[both]).combined(other.stack.take(t[both])),
            self.stack.take(m[only_m]),
            other.stack.take(t[only_t]),
            BettingStack(int(fresh.sum()), grid_size=self.grid_size, alpha_bet=self.alpha_bet),
        ]
        order = np.concatenate([np.flatnonzero(x) for x in (both, only_m, only_t, fresh)])
        out.stack = BettingStack.concat(parts).take(np.argsort(order))
        return out

    def to_dict(self) -> dict[str, Any]:
        plain = {name: getattr(self, name) for name in ("start", "alpha", "known", "grid_size", "rows")}
        return {**plain, "stack": self.stack.to_dict(), "counts": self.counts.tolist()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Box:
        box = cls(int(d["start"]), float(d["alpha"]), int(d["known"]), int(d["grid_size"]))
        box.counts = np.asarray(d["counts"], dtype=float).reshape(-1, 2, 2)
        if "stack" in d:
            box.rows = {k: [int(r) for r in v] for k, v in d["rows"].items()}
            box.stack = BettingStack.from_dict(d["stack"])
            return box
        # state version 1: each sequence saved on its own (scalar sums), the pooled ones apart
        parts = []
        for name, seqs in d["seqs"].items():
            pooled = d["pooled"].get(name) or BettingStack(grid_size=box.grid_size, alpha_bet=box.alpha_bet).to_dict()
            saved = [pooled, *seqs]
            box.rows[name] = list(range(len(parts), len(parts) + len(saved)))
            parts += [BettingStack.from_dict({**s, "rows": 1}) for s in saved]
        if parts:
            box.stack = BettingStack.concat(parts)
        return box
