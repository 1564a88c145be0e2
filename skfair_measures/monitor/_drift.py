"""The monitor's alarm: a sequential test of "disparity <= eps at every batch", valid when the rates drift.

Why not the betting confidence sequences of :mod:`._sequences`: their target is one
constant rate per group, and a sequence keeps the intersection of what it allowed at
every earlier batch. When the groups' rates drift together while the gap stays at
``eps`` (a fair stream), that intersection shrinks around a moving target and the
alarm fires on about half of the streams (docs/monitor.md). The construction here
assumes nothing about how the rates move between batches.

What is tested. The null is that at *every* batch ``i`` the disparity of the batch's
group rates is within the tolerance. For a difference (``absdiff``: max minus min over
groups) that is a set of linear constraints on the rates, one per ordered pair of
groups: ``r_g,i - r_h,i <= eps``; for a ratio (min over max, greater is better):
``eps r_g,i - r_h,i <= 0``; for the mean of differences of several bases (equalized
odds): ``sum_p (r^p_g_p,i - r^p_h_p,i) / P <= eps`` for every choice of a pair per
part; for the max of differences, each part's pairs. Every constraint reads
``sum_c a_c r_c,i <= b`` over (base, group) cells ``c``.

The bet, per constraint and batch, from the batch's counts alone (O(1)): the
estimate ``d_i = sum_c a_c k_c / n_c`` of the batch's contrast is a sum of
independent bounded rows (given the rows in every denominator), so by Hoeffding
``E exp(lambda (d_i - mean_i)) <= exp(lambda^2 s_i^2 / 2)`` with ``s_i^2 = sum_c a_c^2
/ (4 n_c)``. Under the null ``mean_i <= b``, hence for every ``lambda >= 0`` fixed before
the batch::

    E_i(lambda) = exp(lambda (d_i - b) - lambda^2 s_i^2 / 2)

has conditional mean ``<= 1``, whatever the rates did before: products of these are
nonnegative supermartingales under the drifting null (Waudby-Smith and Ramdas,
JRSS-B 2024, use the same fact for time-varying means: ``prod_i (1 + lambda_i (x_i -
mu_i))`` with predictable bets is a martingale for any sequence of conditional means
``mu_i``). Because the factor is per batch, not per row, the bet is not capped by
the range of one row: on batches of 1,000 rows a gap 0.2 past the tolerance gains about
10 nats per batch.

Mixtures (each a nonnegative supermartingale with initial value 1, so Ville's
inequality bounds the chance that it ever reaches ``1 / alpha`` by ``alpha``):

- over bets: ``lambda_k = 2^k``, ``k = 0..16`` (gap units), equal weights;
- over start times: the process started at the constraint's ``j``-th batch gets weight
  ``1 / (j (j + 1))``; before it starts it holds its weight as cash. Summed over all
  starts this is ``S_t = (S_{t-1} + w_t) E_t`` plus the cash ``1 / (t + 1)``: O(1) per
  bet, and a change late in the stream is found by the processes started after it
  (they never saw the rows before the change);
- over constraints: groups known at the test's first batch share 90% equally, the
  ``i``-th group to join later gets ``10% / (i (i + 1))``; a constraint's weight is the
  product of its groups' weights (a constraint not yet bet on holds its weight as cash);
  for the max of parts each part gets ``1 / P``; for ``|gap|`` both orders of a pair
  are constraints.

The alarm is raised when the mixture reaches ``1 / alpha``: the probability that a
measure ever alarms while every batch's disparity is within ``eps`` is at most
``alpha``, at any number of looks and however the rates drift, given that the rows of
a batch are independent draws given their groups and labels (the rows of one batch share
its rates), and that the denominators of a batch do not depend on the numerators.
``since`` is the batch at which the largest term of the mixture started.

Workers: two tests run on independent rows of the same batches multiply (each factor
has conditional mean ``<= 1`` given both pasts); after a merge the other side's value is
kept as a constant factor (``log_carry``) and the test continues on the merged batches.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from ..base import RatioRoles
from ._sequences import group_share

__all__ = ["DriftTest", "drift_plan"]

#: The bets, in units of the contrast (1 / gap).
LAMBDAS = 2.0 ** np.arange(17)
_LOG_K = float(np.log(LAMBDAS.size))


@dataclass(frozen=True)
class Plan:
    """How a measure's null splits into linear constraints on (base, group) rates.

    ``parts``: per part, its base and the coefficients of the two groups of a pair
    (``(a_g, a_h)``); ``mode``: ``"sum"`` (one constraint per choice of a pair in every
    part, the parts added) or ``"union"`` (each part's pairs on their own); ``bound``:
    the right-hand side ``b``.
    """

    parts: tuple[tuple[str, float, float], ...]
    mode: str
    bound: float


def _leaf_part(m: Any, eps: float, scale: float) -> tuple[tuple[str, float, float], float] | str:
    op = getattr(m, "operation", None)
    if op is None or getattr(m, "base", None) is None:
        return f"{m.key} is not a comparison of one rate between groups"
    if getattr(m, "groups", None) is not None:
        return f"{m.key} compares a subset of the groups"
    if op.name == "absdiff":
        return (m.base.name, scale, -scale), eps
    if op.name == "ratio":
        return (m.base.name, eps * scale, -scale), 0.0
    return f"its operation {op.name!r} is not absdiff or ratio"


def drift_plan(m: Any, eps: float, roles: Mapping[str, RatioRoles]) -> Plan | str:
    """The constraints of ``m``'s null "disparity within ``eps``", or why there is no drift-valid test for it.

    Supported: ``absdiff`` and ``ratio`` of one rate; the mean or max of ``absdiff``
    measures (mean: of bases whose denominators share no confusion cell, so their
    estimates are independent given the denominators).
    """
    children = getattr(m, "children", None) or []
    if not children:
        part = _leaf_part(m, eps, 1.0)
        return part if isinstance(part, str) else Plan((part[0],), "sum", part[1])
    aggregate = getattr(m, "aggregate", None)
    if aggregate not in ("mean", "max") or any(getattr(c, "children", None) for c in children):
        return f"it aggregates its parts by {getattr(m, 'aggregate_name', aggregate)!r} (mean or max of leaves only)"
    parts = []
    for c in children:
        part = _leaf_part(c, eps, 1.0 / len(children) if aggregate == "mean" else 1.0)
        if isinstance(part, str):
            return part
        if c.operation.name != "absdiff":
            return f"its part {c.key} is not an absdiff"
        parts.append(part[0])
    if aggregate == "mean":
        bases = list(dict.fromkeys(p[0] for p in parts))
        for a, b in itertools.combinations(bases, 2):
            if (roles[a].den & roles[b].den).any():
                return f"its bases {a!r} and {b!r} share rows"
    return Plan(tuple(parts), "sum" if aggregate == "mean" else "union", eps)


@dataclass(eq=False)
class DriftTest:
    """The mixture test of one measure (see the module docstring); state: a few numbers per constraint and bet."""

    plan: Plan
    known: int = 0  # groups known at the first batch with counts (0: not started)
    keys: list[tuple] = field(default_factory=list)  # constraints: pair per part ("sum") or (part, g, h) ("union")
    bets: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))  # batches bet on, per constraint
    log_s: np.ndarray = field(default_factory=lambda: np.zeros((0, LAMBDAS.size)))  # log S per constraint, bet
    log_best: np.ndarray = field(default_factory=lambda: np.full((0, LAMBDAS.size), -np.inf))
    best_start: np.ndarray = field(default_factory=lambda: np.zeros((0, LAMBDAS.size), dtype=int))  # monitor step
    log_carry: float = 0.0  # another worker's value, kept at a merge
    # derived from keys and known, rebuilt when constraints are added (not state)
    _layout: tuple[int, int] | None = field(default=None, repr=False)
    _cells: tuple[np.ndarray, np.ndarray, list[str]] | None = field(default=None, repr=False)
    _weights: np.ndarray | None = field(default=None, repr=False)

    def _extend(self, n_groups: int) -> None:
        if self.known == 0:
            self.known = n_groups
        pairs = [(g, h) for g in range(n_groups) for h in range(n_groups) if g != h]
        if self.plan.mode == "sum":
            wanted = list(itertools.product(pairs, repeat=len(self.plan.parts)))
        else:
            wanted = [(p, g, h) for p in range(len(self.plan.parts)) for g, h in pairs]
        have = set(self.keys)
        new = [k for k in wanted if k not in have]
        if not new:
            return
        self.keys += new
        shape = (len(new), LAMBDAS.size)
        self.bets = np.concatenate([self.bets, np.zeros(len(new), dtype=int)])
        self.log_s = np.vstack([self.log_s, np.full(shape, -np.inf)])
        self.log_best = np.vstack([self.log_best, np.full(shape, -np.inf)])
        self.best_start = np.vstack([self.best_start, np.zeros(shape, dtype=int)])

    def _terms(self, key: tuple) -> list[tuple[str, int, float]]:
        """The (base, group, coefficient) cells of a constraint."""
        parts, pairs = (self.plan.parts, key) if self.plan.mode == "sum" else ([self.plan.parts[key[0]]], [key[1:]])
        out = []
        for (base, a_g, a_h), (g, h) in zip(parts, pairs, strict=True):
            out += [(base, g, a_g), (base, h, a_h)]
        return out

    def _matrices(self, n_groups: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Per constraint, its coefficient on every (base, group) cell and which cells it reads (built once per layout).

        Cells are ordered base by base (the plan's bases in order), groups in the
        monitor's order, ``n_groups`` per base.
        """
        layout = (len(self.keys), n_groups)
        if self._layout != layout:
            bases = list(dict.fromkeys(p[0] for p in self.plan.parts))
            coef = np.zeros((len(self.keys), len(bases) * n_groups))
            reads = np.zeros(coef.shape, dtype=bool)
            for i, key in enumerate(self.keys):
                for base, g, a in self._terms(key):
                    c = bases.index(base) * n_groups + g
                    coef[i, c] += a
                    reads[i, c] = True
            self._layout, self._cells = layout, (coef, reads, bases)
        return self._cells

    def weights(self) -> np.ndarray:
        """The prior weight of every constraint (they sum to at most 1)."""
        if self._weights is None or self._weights.size != len(self.keys):
            parts = len(self.plan.parts) if self.plan.mode == "union" else 1.0  # each part of a max: 1 / parts
            weight = partial(group_share, known=self.known, sharing=self.known)
            pairs = [key if self.plan.mode == "sum" else [key[1:]] for key in self.keys]
            self._weights = np.array([float(np.prod([weight(g) * weight(h) for g, h in p])) / parts for p in pairs])
        return self._weights

    def update(self, counts: np.ndarray, rates: Mapping[str, tuple[np.ndarray, np.ndarray]], step: int) -> None:
        """Bet on one batch at monitor ``step``: its counts ``(n_groups, 2, 2)`` and, per base, (successes, trials).

        All constraints at once: the contrast ``d`` and its variance bound ``s^2`` are one
        matrix product each over the (base, group) cells; a constraint reading a cell
        without rows this batch is not bet on.
        """
        if counts.sum() == 0:
            return
        self._extend(counts.shape[0])
        coef, reads, bases = self._matrices(counts.shape[0])
        k, n = (np.concatenate([rates[b][i] for b in bases]) for i in (0, 1))
        empty = n == 0
        act = ~(reads[:, empty].any(axis=1))  # a cell without rows this batch: no bet
        if not act.any():
            return
        safe, a = np.where(empty, 1.0, n), coef[act]
        d = a @ np.where(empty, 0.0, k / safe)
        s2 = (a * a) @ np.where(empty, 0.0, 1.0 / (4.0 * safe))
        log_e = LAMBDAS * (d - self.plan.bound)[:, None] - LAMBDAS**2 * s2[:, None] / 2.0
        j = self.bets[act] + 1
        log_w = -np.log(j * (j + 1.0))[:, None]
        self.log_s[act] = np.logaddexp(self.log_s[act], log_w) + log_e
        best = self.log_best[act]
        self.best_start[act] = np.where(log_w > best, step, self.best_start[act])  # the start now beats earlier ones
        self.log_best[act] = np.maximum(best, log_w) + log_e
        self.bets[act] = j

    def log_value(self) -> float:
        """The log of the mixture now (its initial value is 0; the alarm is at ``log(1 / alpha)``)."""
        if not self.keys:
            return self.log_carry
        w = self.weights()
        cash = np.log1p(-np.sum(w)) if np.sum(w) < 1 else -np.inf  # weight of constraints never created
        # per constraint: mean over bets of S, plus the cash of the starts to come, 1 / (bets + 1)
        per = np.logaddexp(np.logaddexp.reduce(self.log_s, axis=1) - _LOG_K, -np.log(self.bets + 1.0))
        return float(np.logaddexp(cash, np.logaddexp.reduce(np.log(w) + per))) + self.log_carry

    def since(self, step: int) -> int:
        """The monitor step at which the largest term of the mixture started (``step`` if none)."""
        if not self.keys or not np.isfinite(self.log_best).any():
            return step
        i, k = np.unravel_index(int(np.argmax(self.log_best + np.log(self.weights())[:, None])), self.log_best.shape)
        return int(self.best_start[i, k])

    def to_dict(self) -> dict[str, Any]:
        keys = [list(map(list, k)) if self.plan.mode == "sum" else list(k) for k in self.keys]
        out = {"known": self.known, "keys": keys, "bets": self.bets.tolist(), "best_start": self.best_start.tolist()}
        # a log wealth of -inf (no bet yet) is saved as -1e300: strict JSON has no infinities
        logs = {name: np.nan_to_num(getattr(self, name), neginf=-1e300).tolist() for name in ("log_s", "log_best")}
        return out | logs | {"log_carry": self.log_carry}

    @classmethod
    def from_dict(cls, plan: Plan, d: Mapping[str, Any]) -> DriftTest:
        keys = [tuple(tuple(p) for p in key) if plan.mode == "sum" else tuple(key) for key in d["keys"]]
        log_s, log_best = (np.asarray(d[name], dtype=float).reshape(-1, LAMBDAS.size) for name in ("log_s", "log_best"))
        bets, start = np.asarray(d["bets"], dtype=int), np.asarray(d["best_start"], dtype=int).reshape(log_s.shape)
        logs = (np.where(a <= -1e299, -np.inf, a) for a in (log_s, log_best))
        return cls(plan, int(d["known"]), keys, bets.reshape(-1), *logs, start, float(d["log_carry"]))

    def merged(self, other: DriftTest) -> DriftTest:
        """The test continuing, with the other worker's value kept as a factor (independent rows)."""
        out = DriftTest.from_dict(self.plan, self.to_dict())
        out.log_carry += other.log_value()
        return out
