"""MLflow metric and param keys: sanitising, collision checks, length limits.

MLflow accepts keys made of word characters, ``_ - . /`` and spaces (a colon too,
except on Windows, so we never emit one), at most 250 characters, and a key must
be a normalised path (no ``//``, no ``.`` or ``..`` segment, no leading ``/``).
Group labels such as ``sex=F`` or the tuple ``("F", "Black")`` of an intersectional
group are not valid keys, so every label goes through :func:`sanitize_segment`;
when two labels sanitise to the same text, each of them gets a short, stable hash
of its original label appended, so no metric overwrites another.

MLflow's file store (a ``file:`` tracking URI) writes each metric and each param
to a file named after its key, so ``/`` makes directories: a key must never be a
directory of another key (``fairness.tpr`` and ``fairness.tpr/overall`` cannot
both exist). Every key is therefore built with :func:`subkey` as
``{name}.{field}/{segment}/...``: the value of a result sits at ``{name}``, its
parts at siblings such as ``{name}.overall`` and under directories such as
``{name}.by_group/``; :class:`KeySpace` checks the rule and repairs the rare key
that still breaks it (a result named like another one's field).

This module imports neither MLflow nor pandas at module level.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

__all__ = [
    "MAX_KEY_LENGTH",
    "KeySpace",
    "group_label",
    "sanitize_key",
    "sanitize_segment",
    "subkey",
    "unique_segments",
]

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
    >>> sanitize_key("/fairness.tpr.count//sex=F/")
    'fairness.tpr.count/sex_F'
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


def subkey(name: str, field: str, *segments: str) -> str:
    """The key of a part of result ``name``: ``{name}.{field}/{segment}/...``.

    The field is joined with a dot, so the result's own value can stay at ``name``
    while its parts live in the directory ``{name}.{field}`` (MLflow's file store
    cannot hold a file ``name`` and a directory ``name`` side by side).

    Examples
    --------
    >>> subkey("fairness.tpr", "overall")
    'fairness.tpr.overall'
    >>> subkey("fairness.tpr", "by_group", "tpr", "sex_F")
    'fairness.tpr.by_group/tpr/sex_F'
    """
    return "/".join([f"{name}.{field}", *segments])


def _dirs(key: str) -> list[str]:
    """The directories of a key, outermost first: ``"a/b/c"`` -> ``["a", "a/b"]``."""
    segs = key.split("/")
    return ["/".join(segs[:i]) for i in range(1, len(segs))]


class KeySpace:
    """A set of keys in which no key is a directory (a ``/``-prefix) of another.

    MLflow's file store writes ``a/b`` as the file ``b`` in the directory ``a``,
    so the keys ``a`` and ``a/b`` of one run cannot both be logged; sqlite and
    server stores do not mind, but a run should work on every store.

    Examples
    --------
    >>> ks = KeySpace()
    >>> ks.claim("fairness.tpr"), ks.claim("fairness.tpr.overall")
    ('fairness.tpr', 'fairness.tpr.overall')
    >>> ks.claim("fairness.tpr/x", salt="abc123")  # "fairness.tpr" is taken as a file
    'fairness.tpr_abc123/x'
    >>> ks.claim("fairness.tpr.by_group/tpr/F"), ks.claim("fairness.tpr.by_group", salt="abc123")
    ('fairness.tpr.by_group/tpr/F', 'fairness.tpr.by_group_abc123')
    >>> ks.clashes("fairness.tpr.by_group/tpr"), ks.clashes("fairness.tpr.by_group/tpr/M")
    (True, False)
    """

    def __init__(self) -> None:
        self.leaves: set[str] = set()
        self.dirs: set[str] = set()

    def clashes(self, key: str) -> bool:
        """True if ``key`` is a directory of a taken key, or has a taken key as directory."""
        return key in self.dirs or any(d in self.leaves for d in _dirs(key))

    def free(self, key: str, salt: str) -> str:
        """``key``, or, if it clashes, a variant with ``_{salt}`` appended to the clashing segment."""
        for _ in range(4):  # one rename per clash; more than one is practically impossible
            if not self.clashes(key):
                return key
            segs = key.split("/")
            for i, d in enumerate(_dirs(key)):
                if d in self.leaves:  # a taken key is a directory of this one: rename that directory
                    segs[i] = f"{segs[i]}_{salt}"
                    break
            else:  # this key is a directory of a taken key: rename its last segment
                segs[-1] = f"{segs[-1]}_{salt}"
            key = fit_length("/".join(segs))
            salt = _digest(salt)
        raise ValueError(f"cannot find a free key for {key!r}")  # pragma: no cover

    def add(self, key: str) -> None:
        """Take ``key`` (which must not clash; see :meth:`free`)."""
        self.leaves.add(key)
        self.dirs.update(_dirs(key))

    def claim(self, key: str, salt: str | None = None) -> str:
        """:meth:`free` then :meth:`add`; the salt defaults to a hash of ``key``."""
        key = self.free(key, _digest(key) if salt is None else salt)
        self.add(key)
        return key
