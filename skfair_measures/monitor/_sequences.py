"""Anytime-valid boxes of group rates, from a start step on, and how ``alpha`` is shared among them.

A box holds one betting confidence sequence (:class:`~skfair_measures._betting.BettingCS`,
fed by counts) per (base rate, group) and one per base on all groups pooled, over the
batches since its start. A measure's interval is the image of the box under the
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

from .._betting import BettingCS
from ..base import RatioRoles

__all__ = ["Box", "box_alpha", "cells"]

#: Share of a base's level for the groups known at the box's start (and the pooled sequence).
INITIAL_SHARE = 0.9


def box_alpha(alpha: float, start: int) -> float:
    """The level of the box started at step ``start`` (1: the cumulative one)."""
    if start <= 1:
        return alpha / 2.0
    return alpha / 2.0 / ((start - 1) * start)


def cells(counts: np.ndarray, roles: RatioRoles) -> tuple[np.ndarray, np.ndarray]:
    """Successes (numerator rows) and trials (denominator rows) per group of counts ``(n_groups, 2, 2)``."""
    successes = (counts * roles.num).sum(axis=(-2, -1))
    trials = (counts * roles.den).sum(axis=(-2, -1))
    return np.rint(successes), np.rint(trials)


@dataclass(eq=False)
class Box:
    """The sequences of every (base, group) and pooled base rate since step ``start``."""

    start: int
    alpha: float
    known: int  # groups known at the start
    grid_size: int
    seqs: dict[str, list[BettingCS]] = field(default_factory=dict)
    pooled: dict[str, BettingCS] = field(default_factory=dict)
    counts: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 2)))  # the rows since the start

    def _new(self) -> BettingCS:
        # bets tuned near the level a sequence is read at (two groups and the pooled rate); fixed by the start alone,
        # so two workers' boxes of one start combine
        return BettingCS(grid_size=self.grid_size, alpha_bet=min(self.alpha / 3.0, 0.5))

    def update(self, counts: np.ndarray, roles: Mapping[str, RatioRoles]) -> None:
        """Bet on one batch's counts ``(n_groups, 2, 2)`` (groups in the monitor's order)."""
        grown = np.zeros_like(counts)
        grown[: self.counts.shape[0]] = self.counts
        self.counts = grown + counts
        for name, role in roles.items():
            successes, trials = cells(counts, role)
            seqs = self.seqs.setdefault(name, [])
            while len(seqs) < counts.shape[0]:
                seqs.append(self._new())
            for cs, k, n in zip(seqs, successes, trials, strict=False):
                if n:
                    cs.update_counts(k, n)
            if trials.sum():
                self.pooled.setdefault(name, self._new()).update_counts(successes.sum(), trials.sum())

    def level(self, position: int, n_bases: int) -> float:
        """The level of the sequence of the group at ``position`` (join order), for a measure of ``n_bases``."""
        per_base = self.alpha / n_bases
        if position < self.known:
            return per_base * INITIAL_SHARE / (self.known + 1)
        i = position - self.known + 1
        return per_base * (1.0 - INITIAL_SHARE) / (i * (i + 1))

    def bounds(self, measure: Any, groups: pd.Index) -> tuple[float, float]:
        """The measure's interval from this box: the image of its jointly valid box of rates."""
        names = [b.name for b in measure.bases]
        lower: dict[str, np.ndarray] = {}
        upper: dict[str, np.ndarray] = {}
        overall: dict[str, tuple[float, float]] = {}
        for name in names:
            seqs = self.seqs.get(name, [])
            bounds = np.array([
                seqs[g].interval(self.level(g, len(names))) if g < len(seqs) else (0.0, 1.0)
                for g in range(len(groups))
            ]).reshape(len(groups), 2)
            lower[name], upper[name] = bounds[:, 0], bounds[:, 1]
            pooled = self.pooled.get(name)
            overall[name] = pooled.interval(self.level(0, len(names))) if pooled is not None else (0.0, 1.0)
        return measure.bounds_from_group_values(lower, upper, groups=groups, overall=overall)

    def combined(self, other: Box, positions: np.ndarray) -> Box:
        """Two workers' boxes of one start, on independent rows (the other's groups at ``positions`` here)."""
        out = Box(self.start, self.alpha, self.known, self.grid_size)
        size = max(self.counts.shape[0], int(positions.max()) + 1 if positions.size else 0)
        out.counts = np.zeros((size, 2, 2))
        out.counts[: self.counts.shape[0]] += self.counts
        out.counts[positions[: other.counts.shape[0]]] += other.counts
        for name in set(self.seqs) | set(other.seqs):
            mine = list(self.seqs.get(name, []))
            theirs = other.seqs.get(name, [])
            size = max([len(mine), *(int(p) + 1 for p in positions[: len(theirs)])])
            mine += [None] * (size - len(mine))  # type: ignore[list-item]
            for j, cs in enumerate(theirs):
                p = int(positions[j])
                mine[p] = cs if mine[p] is None else mine[p].combined(cs)
            out.seqs[name] = [cs if cs is not None else out._new() for cs in mine]
        for name in set(self.pooled) | set(other.pooled):
            a, b = self.pooled.get(name), other.pooled.get(name)
            out.pooled[name] = a.combined(b) if a is not None and b is not None else (a or b)  # type: ignore[assignment]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": self.start, "alpha": self.alpha, "known": self.known, "grid_size": self.grid_size,
            "seqs": {k: [cs.to_dict() for cs in v] for k, v in self.seqs.items()},
            "pooled": {k: cs.to_dict() for k, cs in self.pooled.items()}, "counts": self.counts.tolist(),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Box:
        box = cls(int(d["start"]), float(d["alpha"]), int(d["known"]), int(d["grid_size"]))
        box.seqs = {k: [BettingCS.from_dict(s) for s in v] for k, v in d["seqs"].items()}
        box.pooled = {k: BettingCS.from_dict(s) for k, s in d["pooled"].items()}
        box.counts = np.asarray(d["counts"], dtype=float).reshape(-1, 2, 2)
        return box
