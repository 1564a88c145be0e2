"""Several measures on one sample: validated once per distinct need, counted once.

The measures are objects here (the registry, above, turns keys into measures);
:func:`skfair_measures.evaluate_measures` is the public door, for arrays and frames.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._inputs import MeasureInputs, _same
from ._protocol import Measure, _validate, small_groups_note, warn_small_groups
from ._stats import GroupedSample
from .results import MeasureResult

__all__ = ["evaluate_together"]


def evaluate_together(
    measures: Sequence[Measure], y_true: Any, y_pred: Any, *, sensitive_features: Any = None, sample_weight: Any = None
) -> dict[str, MeasureResult]:
    """Evaluate measures (objects with distinct keys) on one sample: rows validated once per need.

    Parameters
    ----------
    measures : sequence of Measure
        Distinct measures with distinct keys (``registry.as_measures`` makes them from keys).
    y_true, y_pred, sensitive_features, sample_weight
        As for calling a measure.

    Returns
    -------
    dict of str to MeasureResult
        Keyed by measure key, in the order given.

    Examples
    --------
    >>> from skfair_measures import msr
    >>> res = evaluate_together([msr("fairness.tpr"), msr("fairness.fpr")],
    ...                         [1, 1, 0, 0], [1, 0, 0, 1], sensitive_features=list("abab"))
    >>> {k: r.value for k, r in res.items()}
    {'fairness.tpr': 1.0, 'fairness.fpr': 1.0}
    """
    samples: list[tuple[MeasureInputs, GroupedSample]] = []
    out, notes = {}, []
    for m in measures:
        sample = _shared_sample(samples, m, y_true, y_pred, sensitive_features, sample_weight)
        out[m.key] = m.evaluate_sample(sample)
        notes.append(small_groups_note(m, sample, out[m.key]))
    warn_small_groups(notes, stacklevel=2)
    return out


def _shared_sample(
    samples: list[tuple[MeasureInputs, GroupedSample]], m: Measure, y_true: Any, y_pred: Any, sensitive: Any, w: Any
) -> GroupedSample:
    """Validate once per distinct (declared groups, needs groups) pair; reuse otherwise.

    A sample validated for comparing groups serves a measure that compares none, not
    the reverse (one that compares none takes a single group).
    """
    want = m.inputs
    for have, sample in samples:
        serves = have.needs_sensitive or not want.needs_sensitive
        same_use = serves and (sensitive is not None or have.needs_sensitive == want.needs_sensitive)
        same_small = (have.min_group_size, have.small_groups) == (want.min_group_size, want.small_groups)
        if _same(have.groups, want.groups) and _same(have.labels, want.labels) and same_use and same_small:
            return sample
    sample = _validate(m.key, want, y_true, y_pred, sensitive, w)
    samples.append((want, sample))
    return sample
