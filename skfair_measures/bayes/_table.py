"""The one table of estimation methods: what each is, what it takes, what it guarantees.

``posterior(method=...)`` and ``posteriors``, ``method="auto"``'s rule, the
Bayesian scorer, the audit report and the CLI's ``--posterior`` all read
:data:`METHODS`; no other place lists method names. A row says, as data:

- ``options``: the method's options record (a frozen dataclass whose fields are the
  options ``posterior(..., **options)`` takes, validated when it is built);
- ``weights``: whether it takes ``sample_weight`` / ``unlabeled_sample_weight``;
- ``unlabeled``: ``"required"`` (``unlabeled_scores`` needed), ``"optional"`` (read
  when given) or ``"prior"`` (read only by ``prior="scores"``);
- ``multiclass``: the options record of its K-class form, or None (binary only);
- ``calibrates``: whether it fits a calibration model (``auto`` checks that model);
- ``guarantee`` and ``summary``: what a user reads in the docs, the report and
  ``skfair audit --help``.

Options are checked against the table once (:func:`method_options`): an unknown
option, or one the chosen method does not take, is refused with the option named
and the methods that take it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ._bb import BetaBinomial
from ._bc import BayesianCalibration
from ._bcr import RectifiedCalibration
from ._dirichlet import DirichletMultinomial
from ._guaranteed import Guaranteed
from ._method import EstimationMethod
from ._ppi import PredictionPowered

__all__ = [
    "AUTO",
    "METHODS",
    "MethodSpec",
    "check_method",
    "method_options",
    "methods_markdown",
    "option_names",
    "refuse_unread_unlabeled",
]

#: The name of the method that chooses another (its rule: :data:`~._auto.AUTO_RULES`).
AUTO = "auto"


@dataclass(frozen=True)
class MethodSpec:
    """One row of :data:`METHODS`: an estimation method's capabilities as data."""

    name: str
    options: type[EstimationMethod] | None
    summary: str
    guarantee: str
    weights: bool = False
    unlabeled: Literal["required", "optional", "prior"] = "prior"
    multiclass: type | None = None
    calibrates: bool = False
    default_draws: int = 1000

    def option_names(self) -> tuple[str, ...]:
        """The options this method takes (binary and K-class form)."""
        records = [r for r in (self.options, self.multiclass) if r is not None]
        return tuple(dict.fromkeys(f.name for r in records for f in dataclasses.fields(r)))


#: The estimation methods, by the name ``posterior(method=...)`` takes, ``"auto"`` first.
METHODS: dict[str, MethodSpec] = {
    spec.name: spec
    for spec in (
        MethodSpec(
            AUTO,
            None,
            summary="the recommended method for the data: the estimate of bb without unlabeled scores, of ppi "
            "with sample weights, of bcr otherwise (bb when the calibration checks fail); the interval of that "
            "method only when every group has enough labeled rows in every rate's denominator, else the labels' "
            "Jeffreys posterior (with weights the guaranteed interval), widened to hold the estimate",
            guarantee="below the rule's row count: near prob at every number of labels (the labels' Jeffreys "
            "posterior; with weights, >= prob: the guaranteed interval); above it that of the method it chooses "
            "(post.method)",
            weights=True,
            unlabeled="optional",
        ),
        MethodSpec(
            "bb",
            BetaBinomial,
            summary="Beta-Binomial: conjugate Beta priors of every group rate updated with the labeled rows "
            "(Monte Carlo, no MCMC); on K classes the Dirichlet posterior of the confusion cells",
            guarantee="exact posterior of the labeled counts under its prior",
            multiclass=DirichletMultinomial,
        ),
        MethodSpec(
            "bc",
            BayesianCalibration,
            summary="Bayesian calibration: a hierarchical beta-calibration model fitted by MCMC on the labeled "
            "rows calibrates the scores of the unlabeled rows",
            guarantee="posterior under the calibration model (none if the model misfits a group)",
            unlabeled="required",
            calibrates=True,
            default_draws=200,
        ),
        MethodSpec(
            "bcr",
            RectifiedCalibration,
            summary="bc with a rectifier of each group's calibration, which widens the interval where a "
            "group's labels contradict the shared calibration",
            guarantee="posterior under the rectified calibration model",
            unlabeled="required",
            calibrates=True,
            default_draws=200,
        ),
        MethodSpec(
            "ppi",
            PredictionPowered,
            summary="prediction-powered inference (PPI++): labeled rows plus the model's scores on the "
            "unlabeled rows; takes sample weights",
            guarantee="asymptotic frequentist coverage of smooth measures",
            weights=True,
            unlabeled="required",
        ),
        MethodSpec(
            "guaranteed",
            Guaranteed,
            summary="one-look betting intervals of every group rate (labels only, or prediction-powered by the "
            "unlabeled scores), joined by a union bound and mapped through the measure's operation",
            guarantee="coverage >= prob at every number of labels (random labeled rows, or drawn with known "
            "inclusion probabilities given as sample_weight; no model assumed, whatever the scores' calibration)",
            weights=True,
            unlabeled="optional",
            default_draws=1,
        ),
    )
}


def option_names() -> dict[str, tuple[str, ...]]:
    """Every method option and the methods that take it (``"auto"`` aside).

    Examples
    --------
    >>> option_names()["sampler"]
    ('bc', 'bcr')
    """
    names = dict.fromkeys(name for spec in METHODS.values() for name in spec.option_names())
    return {name: tuple(m for m, spec in METHODS.items() if name in spec.option_names()) for name in names}


def check_method(method: Any) -> MethodSpec:
    """The row of ``method`` in :data:`METHODS`, or a ValueError naming the methods."""
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method={method!r}; pass one of {', '.join(map(repr, METHODS))}.")
    return METHODS[method]


def method_options(method: str, options: Mapping[str, Any], *, multiclass: bool = False) -> Any:
    """The checked options record of ``method`` from ``options`` (keyword arguments of ``posterior``).

    Parameters
    ----------
    method : str
        A name in :data:`METHODS` other than ``"auto"`` (resolve it first).
    options : mapping of str to object
        The method options given; any other key is refused.
    multiclass : bool, default=False
        Build the options record of the method's K-class form.

    Returns
    -------
    EstimationMethod or DirichletMultinomial
        The options record; its ``__post_init__`` refused bad values by name.

    Raises
    ------
    TypeError
        An option no method takes.
    ValueError
        An option the method does not take (naming the methods that take it), or a
        bad value (naming its valid values).

    Examples
    --------
    >>> method_options("bb", {"prior": "jeffreys"})
    BetaBinomial(prior='jeffreys', prior_strength=2.0)
    >>> method_options("bb", {"sampler": "pymc"})
    Traceback (most recent call last):
    ...
    ValueError: sampler= is an option of method 'bc', 'bcr', not of method='bb'; drop it or choose one of those methods.
    """
    spec = check_method(method)
    record = spec.multiclass if multiclass else spec.options  # callers resolve "auto" and check multiclass first
    refuse_unknown(options)
    takes, where = {f.name for f in dataclasses.fields(record)}, option_names()
    for name in options:
        if name not in takes:
            form = " on K classes" if multiclass and name in spec.option_names() else ""
            raise ValueError(
                f"{name}= is an option of method {', '.join(map(repr, where[name]))}, not of method={method!r}"
                f"{form}; drop it or choose one of those methods."
            )
    return record(**options)  # type: ignore[misc]


def refuse_unknown(options: Mapping[str, Any]) -> None:
    """Refuse any option that no method takes (a TypeError, as Python's own for a bad keyword)."""
    unknown = sorted(set(options) - set(option_names()))
    if unknown:
        known = "; ".join(f"{m}: {', '.join(s.option_names())}" for m, s in METHODS.items() if s.option_names())
        raise TypeError(f"unknown option(s) {', '.join(unknown)}; the method options are {known}.")


def refuse_unread_unlabeled(method: str, options: Mapping[str, Any], argument: str) -> None:
    """Refuse unlabeled scores the method would not read, naming ``argument`` and the methods that read them.

    A method reads them as data (``unlabeled`` "required" or "optional"), or, as
    Beta-Binomial, only for ``prior="scores"``; given to a method that does not read
    them they would be silently ignored.
    """
    if METHODS[method].unlabeled != "prior" or options.get("prior") == "scores":
        return
    readers = ", ".join(repr(n) for n, s in METHODS.items() if s.unlabeled in ("required", "optional"))
    raise ValueError(
        f"method={method!r} does not read {argument} (Beta-Binomial reads them only for prior='scores'); "
        f"drop {argument}, pass prior='scores', or use method= {readers}."
    )


_UNLABELED = {
    "required": "required",
    "optional": "used when given",
    "prior": 'only by `prior="scores"`',
}


def methods_markdown() -> str:
    """:data:`METHODS` as the Markdown table of docs/bayes.md (a test keeps the two equal).

    Examples
    --------
    >>> methods_markdown().splitlines()[0]
    '| `method=` | unlabeled scores | sample weights | K classes | options | guarantee |'
    """
    header = "| `method=` | unlabeled scores | sample weights | K classes | options | guarantee |"
    rows = [header, "|---|---|---|---|---|---|"]
    for spec in METHODS.values():
        options = ", ".join(f"`{o}`" for o in spec.option_names()) or (
            "those of the methods it may choose" if spec.options is None else "none"
        )
        # the chooser (auto): on K classes there are no scores, so it is bb's Dirichlet form
        k_classes = "yes (bb)" if spec.options is None else "yes" if spec.multiclass is not None else "no"
        rows.append(
            f'| `"{spec.name}"` | {_UNLABELED[spec.unlabeled]} | {"yes" if spec.weights else "no"} '
            f"| {k_classes} | {options} | {spec.guarantee} |"
        )
    return "\n".join(rows)
