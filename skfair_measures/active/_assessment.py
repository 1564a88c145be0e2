"""ActiveAssessment: an ask/tell loop that chooses which rows to label next (seed 002, chapter 3)."""

from __future__ import annotations

import numbers
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import special, stats

from ..results import check_prob
from ..uncertainty import Estimate
from ._inputs import GroupPools, check_pool, label_codes
from ._metrics import ActiveMetric, get_metric
from ._policy import beta_var, estimation_reward, rope_gain, rope_masses, top_two
from ._priors import beta_prior

__all__ = ["ActiveAssessment"]

TASKS = ("estimate", "identify", "compare")
STRATEGIES = ("ts", "ttts", "random")
_FREE, _ASKED, _TOLD = 0, 1, 2
_N_DRAWS = 4000  # Monte Carlo draws for P(worst) and ECE intervals


class ActiveAssessment:
    """Choose which unlabeled rows to label next, and track groupwise posteriors.

    Each group's rate (accuracy, TPR, ...; or accuracy per score bin for ECE) gets
    an independent Beta posterior. ``ask`` draws one value per group from the
    posteriors (Thompson sampling), picks the group that maximises the task's reward
    (seed 002, Table 3.1), and returns a random unlabeled row of that group; ``tell``
    adds the labels. Per-group state and per-group pools keep ``ask`` independent of
    the number of rows.

    Parameters
    ----------
    y_pred : array-like of shape (n_rows,)
        The model's predicted labels.
    scores : array-like of shape (n_rows,) or (n_rows, n_classes)
        Predicted probabilities: of ``pos_label`` (1-D, binary) or the
        ``predict_proba`` matrix (columns in the order of ``classes``).
    sensitive_features : array-like, Series or DataFrame
        Group of each row; several columns give their intersections. Pass
        ``y_pred`` itself for classwise accuracy (groups = predicted classes).
    metric : str, default="acc"
        ``"acc"``, ``"tpr"``, ``"fnr"``, ``"fpr"``, ``"tnr"``, ``"ppv"``, ``"fdr"``,
        ``"npv"``, ``"for"`` or ``"ece"`` (calibration error per group over ``n_bins``
        equal-width bins of the predicted class's score).
    task : {"estimate", "identify", "compare"}, default="estimate"
        Low groupwise RMSE; the worst group (``m=1``) or the ``m`` worst; or the ROPE
        verdict between the two groups of ``pair``.
    prior : {"informative", "uniform"}, default="informative"
        ``Beta(base + n0 s_g, base + n0 (1 - s_g))`` with ``s_g`` what the scores
        expect of group g, or ``Beta(base, base)``.
    strategy : {"ts", "ttts", "random"}, default="ts"
        Thompson sampling (multiple-play when ``m > 1``), top-two Thompson sampling
        (identification of one group), or random rows (the baseline).
    prior_strength : float, default=2.0
        ``n0``: how many labels the scores are worth, at most
        ``MAX_PRIOR_STRENGTH``.
    prior_base : float, default=1.0
        ``base``: the uniform floor's pseudo-counts per side (0 = the chapter's
        face-value prior, which an overconfident model can mislead).
    pos_label : default=None
        The positive class (for 1-D scores and for the rates other than accuracy).
        None takes 1 when the labels are 0/1, -1/1 or booleans, as every measure
        does; other labels (e.g. strings) need it named.
    classes : sequence, optional
        The classes, in the order of the score columns (default: the sorted values
        of ``y_pred``, plus ``pos_label`` for 1-D scores).
    y_true : array-like, optional
        Labels already known, NaN/None for unlabeled rows; those rows enter the
        posteriors now and are never asked.
    m : int, default=1
        Number of worst groups to identify.
    pair : tuple, optional
        The two group labels to compare (``task="compare"``).
    eps : float, default=0.05
        ROPE half-width for ``task="compare"``.
    n_bins : int, default=10
        Score bins per group for ``metric="ece"``.
    ttts_beta : float, default=0.5
        Probability of playing the top arm in top-two Thompson sampling.
    keep_trajectory : bool, default=True
        Record the posterior after every ``tell``.
    random_state : int, numpy Generator or None
        Seed; the same seed gives the same asks.
    plan : pandas.DataFrame, optional
        A label plan of :func:`skfair_measures.plan_labels` for the same rows: its
        ``labels`` per group become per-group quotas. ``ask`` then asks only groups
        whose planned labels are not yet met (labels given as ``y_true`` and rows
        asked but not yet told count), and returns an empty array once the plan is
        met; :meth:`plan_progress` and :attr:`plan_met` say how far along it is. The
        plan's groups must be the assessment's groups and its measure must read
        ``metric``; ``task="compare"`` asks two groups only and takes no plan.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> group = np.repeat(["a", "b"], 500)
    >>> y_pred = rng.integers(0, 2, 1000)
    >>> scores = np.where(y_pred == 1, 0.8, 0.2)
    >>> aa = ActiveAssessment(y_pred, scores, sensitive_features=group, task="identify", random_state=0)
    >>> rows = aa.ask(5)
    >>> aa.tell(rows, y_pred[rows])          # the model was right on these rows
    >>> aa.n_labels
    5
    >>> aa.groupwise()[["estimate", "labels"]].round(2)  # doctest: +SKIP

    Started from a plan, it asks each group until its planned labels are met:

    >>> import skfair_measures as sfm
    >>> plan = sfm.plan_labels(sfm.msr("fairness.acc"), eps=0.2, scores=scores, sensitive_features=group,
    ...                        n_sim=20)
    >>> aa = ActiveAssessment(y_pred, scores, sensitive_features=group, plan=plan, random_state=0)
    >>> rows = aa.ask(10_000)                # at most the plan's labels
    >>> bool(rows.size == plan.loc["total", "labels"])
    True
    >>> aa.tell(rows, y_pred[rows])
    >>> aa.plan_met, aa.ask().size
    (True, 0)
    """

    def __init__(
        self,
        y_pred: Any,
        scores: Any,
        *,
        sensitive_features: Any,
        metric: str | ActiveMetric = "acc",
        task: Literal["estimate", "identify", "compare"] = "estimate",
        prior: Literal["informative", "uniform"] = "informative",
        strategy: Literal["ts", "ttts", "random"] = "ts",
        prior_strength: float = 2.0,
        prior_base: float = 1.0,
        pos_label: Any = None,
        classes: Any = None,
        y_true: Any = None,
        m: int = 1,
        pair: tuple[Any, Any] | None = None,
        eps: float = 0.05,
        n_bins: int = 10,
        ttts_beta: float = 0.5,
        keep_trajectory: bool = True,
        random_state: int | np.random.Generator | None = None,
        plan: pd.DataFrame | None = None,
    ):
        self.metric = get_metric(metric)
        self.task, self.strategy = _check_choice(task, TASKS, "task"), _check_choice(strategy, STRATEGIES, "strategy")
        self.eps, self.ttts_beta, self.keep_trajectory = float(eps), float(ttts_beta), keep_trajectory
        self._pool = check_pool(y_pred, scores, sensitive_features, self.metric, classes, pos_label, y_true)
        self.groups, self.classes = self._pool.groups, self._pool.classes
        self.n_bins = int(n_bins) if self.metric.binned else 1
        self.m, self._pair = self._check_task(m, pair)
        ask_seed, summary_seed = np.random.SeedSequence(_entropy(random_state)).spawn(2)
        self._rng, self._summary_key = np.random.default_rng(ask_seed), summary_seed.generate_state(2).tolist()
        self._build_cells()
        self._build_prior(prior, prior_strength, prior_base)
        self._build_pools()
        self._trajectory: list[tuple[int, np.ndarray, np.ndarray]] = []
        known = np.flatnonzero(self._pool.labels >= 0)  # labels given as y_true
        self._update(known, self._pool.labels[known])
        self._quota = None if plan is None else self._check_plan(plan)
        self._record()

    # -- construction ---------------------------------------------------------------

    def _check_task(self, m: int, pair: Any) -> tuple[int, tuple[int, int] | None]:
        if not isinstance(m, numbers.Integral) or not 1 <= m < max(len(self.groups), 2):
            raise ValueError(f"m={m!r} must be an integer in [1, {len(self.groups) - 1}] (the number of worst groups).")
        if self.strategy == "ttts" and (self.task != "identify" or m != 1):
            raise ValueError("strategy='ttts' identifies one worst group: use it with task='identify' and m=1.")
        if self.task != "compare":
            if pair is not None:
                raise ValueError("pair= is used by task='compare' only.")
            return int(m), None
        if pair is None or len(pair) != 2:
            raise ValueError("task='compare' needs pair=(group1, group2), two labels of sensitive_features.")
        if self.metric.binned:
            raise ValueError("task='compare' compares rates; metric='ece' is not supported there.")
        codes = tuple(self._group_code(g, "pair") for g in pair)
        if codes[0] == codes[1]:
            raise ValueError(f"pair={tuple(pair)!r} names the same group twice.")
        return int(m), codes

    def _check_plan(self, plan: Any) -> np.ndarray:
        """The plan's labels per group, in the order of ``self.groups``; refused when it does not fit."""
        if not isinstance(plan, pd.DataFrame) or "labels" not in plan.columns or "total" not in plan.index:
            raise TypeError(
                "plan= takes the table returned by skfair_measures.plan_labels (labels per group and "
                f"'total'); got {type(plan).__name__}."
            )
        if self.task == "compare":
            raise ValueError(
                "plan= sets labels for every group, but task='compare' asks only the two groups of "
                "pair=: use task='estimate' or 'identify' with a plan."
            )
        bases, base = plan.attrs.get("bases"), self.metric.base or self.metric.key
        if bases is not None and base not in bases:
            raise ValueError(
                f"plan= was made for {plan.attrs.get('measure')!r}, whose rates are {list(bases)}; "
                f"metric={self.metric.key!r} estimates {base!r}: pass one of {list(bases)} as metric=, "
                "or plan the measure of this metric."
            )
        planned, names = plan.drop(index="total")["labels"], [str(g) for g in self.groups]
        if len(set(names)) != len(names):
            raise ValueError(
                f"plan= names groups as text, and the groups {list(self.groups)!r} are not told apart "
                "that way: give sensitive_features as text."
            )
        if sorted(names) != sorted(map(str, planned.index)):
            raise ValueError(
                f"plan= is for the groups {list(map(str, planned.index))}, the assessment's are "
                f"{names}: plan the same rows with the same sensitive_features."
            )
        quota, capacity = planned.reindex(names).to_numpy().astype(np.int64), self._pools.sizes + self._labels_used
        if (quota > capacity).any():
            g = int(np.flatnonzero(quota > capacity)[0])
            raise ValueError(
                f"plan= asks {quota[g]} labels in group {names[g]!r}, which has {capacity[g]} rows that "
                f"can be labeled for metric={self.metric.key!r}: plan with that metric's rows "
                "(e.g. only predicted positives for PPV), or lower the plan's power."
            )
        self._plan_attrs = dict(plan.attrs)
        return quota

    def _build_cells(self) -> None:
        p, metric, n_groups = self._pool, self.metric, len(self.groups)
        self._pred_pos = p.pred == p.pos_code
        eligible = np.ones(p.pred.size, dtype=bool) if metric.pred_is is None else self._pred_pos == metric.pred_is
        self._eligible = eligible
        self._bin = np.minimum((p.confidence * self.n_bins).astype(np.int64), self.n_bins - 1)
        cell, size = (p.group * self.n_bins + self._bin)[eligible], n_groups * self.n_bins
        weight, success = metric.expected(p.confidence, p.p_pos, self._pred_pos)
        # per (group, bin) cell of the rows that can be asked: rows, scores, and what the scores expect of the rate
        sums = np.stack([np.ones(p.pred.size), p.confidence, weight, weight * success])[:, eligible]
        rows, conf, w, ws = (np.bincount(cell, weights=x, minlength=size).reshape(n_groups, self.n_bins) for x in sums)
        self._rows = rows.sum(axis=1)
        self._bin_share = np.divide(rows, self._rows[:, None], out=np.zeros_like(rows), where=self._rows[:, None] > 0)
        self._bin_score = np.divide(conf, rows, out=np.full_like(rows, np.nan), where=rows > 0)
        self._prior_mean = np.divide(ws, w, out=np.full_like(w, np.nan), where=w > 0)
        self._counts_prior_mean = np.divide(w.sum(1), self._rows, out=np.full(n_groups, np.nan), where=self._rows > 0)

    def _build_prior(self, prior: str, strength: float, base: float) -> None:
        self.prior = prior
        self._a, self._b = beta_prior(self._prior_mean, prior, strength=strength, base=base)
        if self.metric.true_is is None:
            self._ca = self._cb = None
        else:  # P(a labeled row enters the rate), per group: a Beta of its own
            self._ca, self._cb = beta_prior(self._counts_prior_mean, prior, strength=strength, base=base)
        self._prior_a, self._prior_b = self._a.copy(), self._b.copy()

    def _build_pools(self) -> None:
        p, n_groups = self._pool, len(self.groups)
        codes = np.where(self._eligible & (p.labels < 0), p.group, -1)
        if self._pair is not None:
            codes = np.where(np.isin(codes, self._pair), codes, -1)
        self._pools = GroupPools(codes, n_groups, self._rng)
        self._status = np.where(p.labels >= 0, _TOLD, _FREE).astype(np.int8)
        self._labels_used, self._counted = np.zeros(n_groups, dtype=np.int64), np.zeros(n_groups, dtype=np.int64)
        self._defined, self._group_share = self._rows > 0, self._rows / self._rows.sum()

    # -- ask / tell -------------------------------------------------------------------

    def ask(self, n: int = 1) -> np.ndarray:
        """Rows to label next.

        Parameters
        ----------
        n : int, default=1
            Batch size: ``n`` independent choices, each a Thompson draw (or ``m``
            groups at once for multiple-play TS). Fewer rows come back when the
            pool runs out; an empty array once every row has been asked. With
            ``plan=``, only groups whose planned labels are not yet met (counting
            asked rows) are asked, and an empty array comes back once they all are.

        Returns
        -------
        ndarray of int
            Positions (0-based) of the rows in the inputs. They are pending until
            told; an asked row is never asked again.
        """
        if not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"n={n!r} must be a positive integer (the number of rows to ask for).")
        out: list[np.ndarray] = []
        left = np.full(len(self.groups), np.inf)  # rows each group may still be asked: with a plan, its quota
        if self._quota is not None:
            left = self._quota - self._labels_used - self._pending()
        while len(out) < n and (available := (self._pools.remaining > 0) & (left > 0)).any():
            for g in self._choose(available)[: n - len(out)]:  # distinct available groups: one row each
                out.append(self._pools.take(int(g), 1))
                left[g] -= 1
        rows = np.concatenate(out) if out else np.empty(0, dtype=np.int64)
        self._status[rows] = _ASKED
        return rows

    def tell(self, indices: Any, labels: Any) -> None:
        """Add the true labels of asked rows.

        Parameters
        ----------
        indices : array-like of int
            Rows returned by :meth:`ask`, each told once.
        labels : array-like
            Their true labels, each one of ``classes``.
        """
        idx, lab = np.atleast_1d(np.asarray(indices)), np.atleast_1d(np.asarray(labels, dtype=object))
        if idx.ndim != 1 or lab.ndim != 1 or idx.size != lab.size:
            raise ValueError(f"indices ({idx.size}) and labels ({lab.size}) must be 1-D and of the same length.")
        if idx.size and (idx.dtype.kind not in "iu" or idx.min() < 0 or idx.max() >= self._status.size):
            raise ValueError(f"indices must be row positions in [0, {self._status.size - 1}] returned by ask().")
        if np.unique(idx).size != idx.size:
            raise ValueError("indices repeats a row; tell each row once.")
        status = self._status[idx]
        if (status == _TOLD).any():
            raise ValueError(f"rows {idx[status == _TOLD][:5].tolist()} were told already; each row is told once.")
        if (status == _FREE).any():
            raise ValueError(
                f"rows {idx[status == _FREE][:5].tolist()} were not asked; tell only rows returned by ask() "
                "(pass labels known in advance as y_true= when building the assessment)."
            )
        self._update(idx, label_codes(self.classes, lab, "labels"))
        self._record()

    def _update(self, rows: np.ndarray, codes: np.ndarray) -> None:
        p, metric = self._pool, self.metric
        true_pos = codes == p.pos_code
        counts = metric.counts(true_pos, self._pred_pos[rows])
        success = metric.outcome(codes == p.pred[rows], self._pred_pos[rows], true_pos)
        g, b = p.group[rows], self._bin[rows]
        np.add.at(self._a, (g[counts], b[counts]), success[counts].astype(float))
        np.add.at(self._b, (g[counts], b[counts]), (~success[counts]).astype(float))
        if self._ca is not None:
            np.add.at(self._ca, g, counts.astype(float))
            np.add.at(self._cb, g, (~counts).astype(float))
        np.add.at(self._labels_used, g, 1)
        np.add.at(self._counted, g[counts], 1)
        self._status[rows] = _TOLD

    def _record(self) -> None:
        if self.keep_trajectory:
            self._trajectory.append((int(self._labels_used.sum()), self._a.copy(), self._b.copy()))

    # -- choosing a group -------------------------------------------------------------

    def _choose(self, available: np.ndarray) -> np.ndarray:
        if self.strategy == "random":
            remaining = np.where(available, self._pools.remaining, 0)
            return np.array([np.searchsorted(np.cumsum(remaining), self._rng.integers(remaining.sum()), "right")])
        theta = self._rng.beta(self._a, self._b)
        if self.task == "estimate":
            reward = estimation_reward(theta, self._a, self._b, self._cell_weight(), self._counts_draw())
        elif self.task == "compare":
            reward = rope_gain(theta[:, 0], self._a[:, 0], self._b[:, 0], self._pair, self.eps, self._counts_draw())
        else:
            reward = self._badness(theta)
        reward = np.where(available, reward, -np.inf)
        if self.strategy == "ttts":

            def redraw(size: int) -> np.ndarray:  # the groups' badness in ``size`` fresh Thompson draws
                thetas = self._rng.beta(self._a, self._b, size=(size, *self._a.shape))
                return np.where(available, self._badness(thetas), -np.inf)

            return np.array([top_two(reward, redraw, self._rng, self.ttts_beta)])
        k = min(self.m, int(available.sum())) if self.task == "identify" else 1  # multiple-play TS: the k best
        return np.argsort(-reward, kind="stable")[:k]

    def _cell_weight(self) -> np.ndarray:
        share = self._group_share
        if self._ca is not None:
            share = share * self._ca / (self._ca + self._cb)
        return share[:, None] * self._bin_share

    def _counts_draw(self) -> np.ndarray:
        return np.ones(len(self.groups)) if self._ca is None else self._rng.beta(self._ca, self._cb)

    def _values(self, theta: np.ndarray) -> np.ndarray:
        """Group values from cell rates (any leading axes)."""
        binned = self.metric.binned
        return np.nansum(self._bin_share * np.abs(theta - self._bin_score), axis=-1) if binned else theta[..., 0]

    def _badness(self, theta: np.ndarray) -> np.ndarray:
        values = self._values(theta)
        return -values if self.metric.higher_is_better else values

    # -- summaries ----------------------------------------------------------------------

    def _means(self, a: np.ndarray | None = None, b: np.ndarray | None = None) -> np.ndarray:
        a, b = (self._a, self._b) if a is None else (a, b)
        mean = a / (a + b)
        if not self.metric.binned:
            out = mean[:, 0]
        else:  # E|X - c| of a Beta in closed form, weighted over the bins
            c = np.nan_to_num(self._bin_score)
            below = c * special.betainc(a, b, c) - mean * special.betainc(a + 1.0, b, c)
            out = (self._bin_share * (mean - c + 2.0 * below)).sum(axis=-1)
        return np.where(self._defined, out, np.nan)

    def _summary_rng(self) -> np.random.Generator:
        """Draws for summaries, seeded by the state: the same labels give the same answer, call after call."""
        return np.random.default_rng([*self._summary_key, self.n_labels])

    def draws(self, n_draws: int = _N_DRAWS) -> np.ndarray:
        """Posterior draws of each group's value, shape ``(n_draws, n_groups)`` (NaN for empty groups).

        Seeded by the assessment's seed and the number of labels, so that a decision
        read from them (``worst_group``) does not change between two calls.
        """
        theta = self._summary_rng().beta(self._a, self._b, size=(n_draws, *self._a.shape))
        return np.where(self._defined, self._values(theta), np.nan)

    def _interval(self, prob: float, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tail = (1.0 - prob) / 2.0
        if not self.metric.binned:
            lo, hi = stats.beta.ppf([[tail], [1.0 - tail]], a[:, 0], b[:, 0])
        else:
            theta = self._summary_rng().beta(a, b, size=(_N_DRAWS, *a.shape))
            lo, hi = np.quantile(self._values(theta), [tail, 1.0 - tail], axis=0)
        return np.where(self._defined, lo, np.nan), np.where(self._defined, hi, np.nan)

    def groupwise(self, prob: float = 0.95) -> pd.DataFrame:
        """Per-group posterior mean, central interval and labels used.

        Returns
        -------
        pandas.DataFrame
            Indexed by group: ``estimate`` (posterior mean), ``lower``, ``upper``,
            ``labels`` (labeled rows of the group), ``counted`` (those that entered
            the rate), ``rows`` (rows that can be asked or were given), ``prior_mean``.
            A group without rows has NaN estimates.
        """
        check_prob(prob)
        lo, hi = self._interval(prob, self._a, self._b)
        columns = {"estimate": self._means(), "lower": lo, "upper": hi, "labels": self._labels_used}
        columns |= {"counted": self._counted, "rows": self._rows.astype(np.int64)}
        return pd.DataFrame({**columns, "prior_mean": self._means(self._prior_a, self._prior_b)}, index=self.groups)

    def _pending(self) -> np.ndarray:
        """Rows asked but not yet told, per group."""
        return np.bincount(self._pool.group[self._status == _ASKED], minlength=len(self.groups))

    def plan_progress(self) -> pd.DataFrame:
        """How far along its plan the assessment is (needs ``plan=``).

        Returns
        -------
        pandas.DataFrame
            Indexed by group: ``planned`` (the plan's labels), ``labels`` (told so
            far), ``pending`` (asked, not yet told) and ``left`` (still to ask);
            ``attrs["met"]`` is :attr:`plan_met`, and the plan's ``attrs`` (its power,
            decision, eps, alpha, measure) are kept under ``attrs["plan"]``.
        """
        if self._quota is None:
            raise ValueError("plan_progress() follows a plan: build the assessment with plan=sfm.plan_labels(...).")
        pending = self._pending()
        left = np.maximum(self._quota - self._labels_used - pending, 0)
        columns = {"planned": self._quota, "labels": self._labels_used, "pending": pending, "left": left}
        out = pd.DataFrame(columns, index=self.groups)
        out.attrs.update(met=self.plan_met, plan=dict(self._plan_attrs))
        return out

    @property
    def plan_met(self) -> bool:
        """Whether every group has its planned labels (told, not only asked); False without a plan."""
        return self._quota is not None and bool((self._labels_used >= self._quota).all())

    @property
    def n_labels(self) -> int:
        """Labels told so far (including those given as ``y_true``)."""
        return int(self._labels_used.sum())

    def prob_worst(self, m: int = 1, n_draws: int = _N_DRAWS) -> pd.Series:
        """Posterior probability that each group is among the ``m`` worst (Monte Carlo)."""
        worst = self._worst_sets(m, n_draws)
        freq = np.bincount(worst.ravel(), minlength=len(self.groups)) / n_draws
        return pd.Series(freq, index=self.groups, name=f"P(among the {m} worst)" if m > 1 else "P(worst)")

    def _worst_sets(self, m: int, n_draws: int) -> np.ndarray:
        values = self.draws(n_draws)
        bad = np.where(np.isnan(values), -np.inf, -values if self.metric.higher_is_better else values)
        return np.sort(np.argpartition(-bad, m - 1, axis=1)[:, :m], axis=1)

    def worst_groups(self, m: int | None = None, prob: float = 0.95) -> list | None:
        """The ``m`` worst groups once the posterior says so with probability ``prob``, else None.

        The candidate set is the most frequent set of ``m`` worst groups across
        posterior draws; it is returned (worst first) when its probability is at least
        ``prob``.
        """
        check_prob(prob)
        m = self.m if m is None else m
        sets = self._worst_sets(m, _N_DRAWS)
        uniq, freq = np.unique(sets, axis=0, return_counts=True)
        best = int(np.argmax(freq))
        if freq[best] / sets.shape[0] < prob:
            return None
        chosen, means = uniq[best], self._means()[uniq[best]]
        order = np.argsort(means if self.metric.higher_is_better else -means)
        return [self.groups[i] for i in chosen[order]]

    def worst_group(self, prob: float = 0.95) -> Any:
        """The worst group once its posterior probability of being the worst is at least ``prob``, else None."""
        found = self.worst_groups(1, prob)
        return None if found is None else found[0]

    def compare(self, g1: Any = None, g2: Any = None, eps: float | None = None):
        """ROPE verdict on ``theta_g1 - theta_g2`` (seed 002, sections 2.3.6 and 3.7).

        Returns
        -------
        skfair_measures.bayes.RopeResult
            Posterior masses below ``-eps``, within ``[-eps, eps]`` and above ``eps``;
            ``verdict`` and ``probability`` (the chapter's eta and lambda).
        """
        from ..bayes import RopeResult

        c1, c2 = self._pair_codes(g1, g2, "compare")
        eps = self.eps if eps is None else float(eps)
        if not eps >= 0:
            raise ValueError(f"eps={eps!r} must be >= 0.")
        a, b = self._a[:, 0], self._b[:, 0]
        return RopeResult(*rope_masses(a[c1], b[c1], a[c2], b[c2], eps), eps=eps, center=0.0)

    def estimate(self, g1: Any = None, g2: Any = None, n_draws: int = _N_DRAWS) -> Estimate:
        """The gap ``theta_g1 - theta_g2`` as an :class:`~skfair_measures.uncertainty.Estimate` (rates only).

        Value, interval, ``prob_within`` and verdict all from the Beta posteriors' draws of the
        two groups, so they agree with :meth:`compare`; ``summary()`` is the one summary row.

        Examples
        --------
        >>> import numpy as np
        >>> from skfair_measures.active import ActiveAssessment
        >>> from skfair_measures.uncertainty import SUMMARY_COLUMNS
        >>> rng = np.random.default_rng(0)
        >>> g, y_pred = np.repeat(["a", "b"], 200), rng.integers(0, 2, 400)
        >>> aa = ActiveAssessment(y_pred, np.where(y_pred == 1, 0.8, 0.2), sensitive_features=g, random_state=0)
        >>> rows = aa.ask(300)
        >>> aa.tell(rows, y_pred[rows])  # the model was right on these rows
        >>> est = aa.estimate("a", "b")
        >>> est.construction, est.verdict(0.5), tuple(est.summary().columns) == SUMMARY_COLUMNS
        ('Beta posterior of labeled rows', 'within', True)
        """
        c1, c2 = self._pair_codes(g1, g2, "estimate")
        d, means = self.draws(n_draws), self._means()
        gap, key = d[:, c1] - d[:, c2], f"active.{self.metric.key}[{self.groups[c1]} - {self.groups[c2]}]"
        how = {"construction": "Beta posterior of labeled rows", "target": "population"}
        how |= {"posterior": True, "center": 0.0, "n": int(self._labels_used[[c1, c2]].sum())}
        reason = None if np.isfinite(gap).all() else "a group of the pair has no labeled rows in its rate"
        return Estimate(key, float(means[c1] - means[c2]), draws=gap, reason=reason, **how)

    def posterior_rmse(self) -> float:
        """Expected groupwise RMSE under the posterior: ``sqrt(sum_g p_g Var(theta_g))`` (rates only)."""
        if self.metric.binned:
            return float(np.sqrt(np.nanmean(np.nanvar(self.draws(), axis=0))))
        var = beta_var(self._a[:, 0], self._b[:, 0])
        return float(np.sqrt(np.sum(self._group_share[self._defined] * var[self._defined])))

    def decided(self, prob: float = 0.95, rmse: float = 0.02) -> bool:
        """The task's stopping rule: worst group(s) found, ROPE verdict reached, or posterior RMSE below ``rmse``."""
        if self.task == "identify":
            return self.worst_groups(self.m, prob) is not None
        return self.compare().probability >= prob if self.task == "compare" else self.posterior_rmse() <= rmse

    def trajectory(self, prob: float = 0.95) -> pd.DataFrame:
        """Estimates after every ``tell``: one row per (labels used, group).

        Columns ``labels``, ``group``, ``estimate``, ``lower``, ``upper``.
        """
        check_prob(prob)
        frames = []
        for used, a, b in self._trajectory:
            lo, hi = self._interval(prob, a, b)
            columns = {"estimate": self._means(a, b), "lower": lo, "upper": hi}
            frames.append(pd.DataFrame({"labels": used, "group": list(self.groups), **columns}))
        return pd.concat(frames, ignore_index=True)

    def plot(self, ax: Any = None, prob: float = 0.95):
        """Estimates against labels used; see :func:`skfair_measures.active.plot_trajectory`."""
        from ._plot import plot_trajectory

        return plot_trajectory(self, ax=ax, prob=prob)

    def _pair_codes(self, g1: Any, g2: Any, method: str) -> tuple[int, int]:
        """The codes of two groups compared by ``method`` (default: the pair of ``task="compare"``)."""
        if self.metric.binned:
            raise ValueError(f"{method}() compares rates; metric='ece' is not supported.")
        if g1 is None and g2 is None and self._pair is not None:
            return self._pair
        return self._group_code(g1, "g1"), self._group_code(g2, "g2")

    def _group_code(self, label: Any, name: str) -> int:
        multi = isinstance(self.groups, pd.MultiIndex)
        code = self.groups.get_indexer(pd.MultiIndex.from_tuples([tuple(label)]) if multi else [label])[0]
        if code < 0:
            raise ValueError(f"{name}={label!r} is not a group; the groups are {list(self.groups)!r}.")
        return int(code)

    def __repr__(self) -> str:
        quota = self._quota
        plan = "" if quota is None else f", plan={np.minimum(self._labels_used, quota).sum()}/{quota.sum()} labels"
        return (
            f"ActiveAssessment(metric={self.metric.key!r}, task={self.task!r}, strategy={self.strategy!r}, "
            f"prior={self.prior!r}, groups={len(self.groups)}, labels={self.n_labels}{plan})"
        )


def _check_choice(value: str, options: tuple[str, ...], name: str) -> str:
    if value not in options:
        raise ValueError(f"{name}={value!r} is not known; use one of {options}.")
    return value


def _entropy(random_state: Any) -> Any:
    if isinstance(random_state, np.random.Generator):
        return random_state.integers(2**63)
    if random_state is not None and not isinstance(random_state, numbers.Integral):
        raise ValueError(f"random_state={random_state!r} must be an int, a numpy Generator or None.")
    return random_state
