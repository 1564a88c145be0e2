"""MLflow metric and param keys: sanitising, collision checks, length limits.

MLflow accepts keys made of word characters, ``_ - . /`` and spaces (a colon too,
except on Windows, so we never emit one), at most 250 characters, and a key must
be a normalised path (no ``//``, no ``.`` or ``..`` segment, no leading ``/``).
Group labels such as ``sex=F`` or the tuple ``("F", "Black")`` of an intersectional
group are not valid keys, so every label goes through :func:`sanitize_segment`;
when two labels sanitise to the same text, each of them gets a short, stable hash
of its original label appended, so no metric overwrites another.

This module imports neither MLflow nor pandas at module level.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

__all__ = ["MAX_KEY_LENGTH", "group_label", "sanitize_key", "sanitize_segment", "unique_segments"]

#: MLflow's limit on metric, param and tag key length.
MAX_KEY_LENGTH = 250

_BAD_SEGMENT_CHARS = re.compile(r"[^\w.\- ]")
_BAD_KEY_CHARS = re.compile(r"[^\w.\- /]")
_HASH_LEN = 6


def _digest(obj: Any) -> str:
    """A short hash of ``repr(obj)``: stable across runs and processes."""
    return hashlib.sha1(repr(obj).encode("utf-8")).hexdigest()[:_HASH_LEN]


def _fix_dots(segment: str) -> str:
    # "." and ".." are path segments MLflow rejects; keep the length, lose the meaning.
    return "_" * len(segment) if segment and set(segment) == {"."} else segment


def sanitize_segment(text: Any) -> str:
    """Turn any label into one valid segment of an MLflow key (no ``/``).

    Every character outside letters, digits, ``_ - .`` and space becomes ``_``;
    surrounding spaces are dropped; an empty label becomes ``"_"``; a label made
    only of dots is replaced by underscores, since MLflow keys are paths.

    Parameters
    ----------
    text : object
        The label; non-strings are converted with ``str``.

    Returns
    -------
    str

    Examples
    --------
    >>> sanitize_segment("sex=F")
    'sex_F'
    >>> sanitize_segment("a/b: c")
    'a_b_ c'
    >>> sanitize_segment("..")
    '__'
    """
    out = _BAD_SEGMENT_CHARS.sub("_", str(text)).strip()
    return _fix_dots(out) or "_"


def sanitize_key(key: str) -> str:
    """Make a whole key (``/`` allowed as a separator) valid for MLflow.

    Bad characters become ``_``, empty segments are dropped, and keys longer than
    250 characters are cut and end with a hash of the full key, so two long keys
    that share their first 243 characters stay distinct.

    Parameters
    ----------
    key : str

    Returns
    -------
    str

    Examples
    --------
    >>> sanitize_key("fairness.acc_eod=.05")
    'fairness.acc_eod_.05'
    >>> sanitize_key("/fairness.tpr//sex=F/")
    'fairness.tpr/sex_F'
    >>> len(sanitize_key("x" * 300))
    250
    """
    raw = _BAD_KEY_CHARS.sub("_", str(key))
    segments = [_fix_dots(s.strip()) for s in raw.split("/")]
    out = "/".join(s for s in segments if s) or "_"
    return fit_length(out, original=key)


def fit_length(key: str, *, original: Any = None, limit: int = MAX_KEY_LENGTH) -> str:
    """Cut ``key`` to ``limit`` characters, ending it with ``-`` and a hash of ``original``.

    Examples
    --------
    >>> fit_length("abc")
    'abc'
    >>> k = fit_length("a" * 260)
    >>> len(k), k[-7]
    (250, '-')
    """
    if len(key) <= limit:
        return key
    tag = _digest(key if original is None else original)
    head = key[: limit - _HASH_LEN - 1].rstrip("/ ")
    return f"{head}-{tag}"


def group_label(label: Any, names: Sequence[Hashable | None] | None = None) -> str:
    """Readable text for a group label, before sanitising.

    A named single index gives ``name=value``; an intersectional (tuple) label
    gives ``name1=v1,name2=v2``; unnamed levels show only their value.

    Examples
    --------
    >>> group_label("F", ["sex"])
    'sex=F'
    >>> group_label(("F", "Black"), ["sex", "race"])
    'sex=F,race=Black'
    >>> group_label(1)
    '1'
    """
    values = label if isinstance(label, tuple) else (label,)
    names = list(names) if names is not None else [None] * len(values)
    if len(names) != len(values):
        names = [None] * len(values)
    parts = [f"{n}={v}" if n is not None else f"{v}" for n, v in zip(names, values, strict=True)]
    return ",".join(parts)


def unique_segments(labels: Iterable[Any], texts: Iterable[str] | None = None) -> dict[Any, str]:
    """Sanitise labels into key segments that are distinct from each other.

    Labels whose sanitised texts coincide (``"F?"`` and ``"F!"`` both give
    ``"F_"``) each get ``_`` plus a six-character hash of their ``repr`` appended.
    The hash depends only on the label, so a label maps to the same key in every
    run where it collides.

    Parameters
    ----------
    labels : iterable of hashable
        The original labels (the dictionary keys of the result).
    texts : iterable of str, optional
        Readable text of each label (default ``str(label)``); see :func:`group_label`.

    Returns
    -------
    dict
        ``{label: segment}``.

    Examples
    --------
    >>> unique_segments(["F", "M"])
    {'F': 'F', 'M': 'M'}
    >>> seg = unique_segments(["F?", "F!"])
    >>> seg["F?"] != seg["F!"], seg["F?"].startswith("F__")
    (True, True)
    """
    labels = list(labels)
    texts = [str(lab) for lab in labels] if texts is None else list(texts)
    first = {lab: sanitize_segment(t) for lab, t in zip(labels, texts, strict=True)}
    seen: dict[str, list[Any]] = {}
    for lab, seg in first.items():
        seen.setdefault(seg, []).append(lab)
    out: dict[Any, str] = {}
    taken = set(first.values())
    for lab, seg in first.items():
        if len(seen[seg]) == 1:
            out[lab] = seg
            continue
        candidate = f"{seg}_{_digest(lab)}"
        while candidate in taken:  # practically never: a label that looks like a hash
            candidate = f"{candidate}_{_digest(candidate)}"
        taken.add(candidate)
        out[lab] = candidate
    return out
