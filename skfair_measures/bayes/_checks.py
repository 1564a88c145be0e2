"""Checks that the data can be described by the calibration model at all (BC and BCR).

The beta calibration ``f(s) = expit(c + a log s - b log(1 - s))`` with ``a, b > 0`` is
increasing in the score, and it learns from how the labels vary *with* the score.
Two situations defeat it however many labels there are, and both are seen on the
papers' score files (docs/reproduction_ji2020.md):

- the scores anti-predict the label (German credit: the file's label is the class the
  models score low), which no increasing map can represent; BC then imputes nearly
  constant probabilities and its interval of Δ TPR covers in a third of the runs;
- the scores of a group sit at the clipping bounds (naive Bayes on COMPAS: every
  score is at or beyond 0.01 / 0.99), so the map is fitted at two points and BC is a
  two-bin estimator whose interval is narrower than its error.

:func:`calibration_checks` names each failure; the methods warn
(:class:`CalibrationWarning`) and store the reasons in ``diagnostics()``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["ANTI_PREDICTION_ALPHA", "BOUND_SHARE", "CalibrationWarning", "calibration_checks"]

#: One-sided level of the rank test that the scores of positives are lower than those of negatives.
ANTI_PREDICTION_ALPHA = 0.05
#: Share of a group's scores at or beyond the clipping bounds above which its calibration has two points.
BOUND_SHARE = 0.9


class CalibrationWarning(UserWarning):
    """The data contradict what the calibration model can represent; its posterior is not to be trusted."""


def calibration_checks(
    scores: np.ndarray,
    y: np.ndarray,
    codes: np.ndarray,
    groups: pd.Index,
    all_scores: np.ndarray,
    all_codes: np.ndarray,
    clip: tuple[float, float],
    all_counts: np.ndarray | None = None,
) -> list[str]:
    """Why the calibration model cannot describe these data (empty when nothing is wrong).

    Parameters
    ----------
    scores, y, codes : ndarray of shape (n_labeled,)
        Labeled scores, 0/1 labels and group codes.
    groups : pandas.Index
    all_scores, all_codes : ndarray
        Scores and group codes of every row (labeled and unlabeled).
    clip : (float, float)
        The model's clipping bounds of the scores.
    all_counts : ndarray, optional
        Rows each entry of ``all_scores`` stands for (a histogram's entries); 1 each by default.

    Examples
    --------
    >>> s = np.r_[np.linspace(0.1, 0.4, 20), np.linspace(0.6, 0.9, 20)]
    >>> y = np.r_[np.ones(20), np.zeros(20)].astype(int)          # high scores, negative labels
    >>> g = np.zeros(40, dtype=int)
    >>> calibration_checks(s, y, g, pd.Index(["a"]), s, g, (0.01, 0.99))[0][:40]
    'the scores anti-predict the label (rank '
    """
    reasons = []
    pos, neg = scores[y == 1], scores[y == 0]
    if pos.size >= 3 and neg.size >= 3:
        from scipy.stats import mannwhitneyu

        test = mannwhitneyu(pos, neg, alternative="less")
        if test.pvalue < ANTI_PREDICTION_ALPHA:
            auc = test.statistic / (pos.size * neg.size)
            reasons.append(
                f"the scores anti-predict the label (rank AUC {auc:.2f} over {y.size} labeled rows, one-sided "
                f"p = {test.pvalue:.1g}); an increasing calibration cannot represent that: check pos_label "
                "and the score's class, or use method='bb'"
            )
    at_bounds = (all_scores <= clip[0]) | (all_scores >= clip[1])
    rows = np.ones(all_codes.size) if all_counts is None else np.asarray(all_counts, dtype=float)
    at, every = (np.bincount(all_codes, weights=x, minlength=len(groups)) for x in (at_bounds * rows, rows))
    share = at / np.maximum(every, 1)
    for j in np.flatnonzero(share >= BOUND_SHARE):
        reasons.append(
            f"{share[j]:.0%} of group {groups[j]!r}'s scores are at or beyond the clipping bounds {clip}: its "
            "calibration is fitted at two points, so the posterior is that of two bins and can be narrower than "
            "its error; use method='bb' or scores that are not saturated"
        )
    return reasons
