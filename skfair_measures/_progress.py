"""An optional progress bar: tqdm if installed, otherwise nothing.

tqdm is not a dependency. A bar is shown only when asked for (``progress=True``),
or, with ``progress=None``, when standard error is a terminal; in any other case
(pipes, CI logs, doctests, tqdm missing) the iterable passes through untouched.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from ._optional import MissingDependencyError, require

__all__ = ["progress_bar", "progress_enabled", "progress_lines"]

T = TypeVar("T")


def progress_enabled(progress: bool | None) -> bool:
    """Whether a bar should be drawn: ``progress`` if given, else "stderr is a TTY".

    Examples
    --------
    >>> progress_enabled(False)
    False
    """
    if progress is not None:
        return bool(progress)
    try:
        return bool(sys.stderr is not None and sys.stderr.isatty())
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


def progress_bar(iterable: Iterable[T], *, progress: bool | None = None, **kwargs: Any) -> Iterator[T]:
    """Wrap ``iterable`` in a tqdm bar when enabled and tqdm is importable.

    Parameters
    ----------
    iterable : iterable
        What to iterate over.
    progress : bool or None, default=None
        True forces a bar (if tqdm is installed), False disables it, None shows it
        only when standard error is a terminal.
    **kwargs
        Passed to ``tqdm.tqdm``, e.g. ``total`` (the number of items, for iterables
        without ``len``) and ``desc`` (the label shown left of the bar).

    Returns
    -------
    iterator
        The items of ``iterable``, in order.

    Examples
    --------
    >>> list(progress_bar(range(3), progress=False))
    [0, 1, 2]
    """
    if not progress_enabled(progress):
        return iter(iterable)
    try:
        tqdm = require("tqdm.auto").tqdm
    except MissingDependencyError:  # tqdm is optional: without it, no bar
        return iter(iterable)
    return iter(tqdm(iterable, **kwargs))


def progress_lines(progress: bool | None, *, after: float = 1.0, every: float = 2.0) -> Callable[[str], None]:
    """A printer of plain progress lines on standard error, for work whose steps have no count to draw a bar of.

    ``progress=True`` prints every line, False none; None (the default of the callers) prints
    from ``after`` seconds on, at most one line per ``every`` seconds, with the seconds since
    the start, whether or not standard error is a terminal (a CI log shows them too).

    Examples
    --------
    >>> say = progress_lines(False)
    >>> say("step 1")
    """
    start, last = time.perf_counter(), [-float("inf")]

    def say(line: str) -> None:
        now = time.perf_counter() - start
        if progress is False or (progress is None and (now < after or now - last[0] < every)):
            return
        last[0] = now
        print(f"{line} [{now:.1f} s]", file=sys.stderr, flush=True)

    return say
