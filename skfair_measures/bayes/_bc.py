"""Hierarchical Bayesian beta calibration (seed 000 section 2.4), in PyMC.

The model, with the resolutions of the seeds' README::

    f(s; a, b, c) = 1 / (1 + exp(-c - a log s + b log(1 - s))),   s clipped to [0.01, 0.99]
    log a_g = mu_a + sigma_a z_a[g],  log b_g = mu_b + sigma_b z_b[g],  c_g = mu_c + sigma_c z_c[g]
    z ~ N(0, 1);  mu_a, mu_b ~ N(0, 0.4);  mu_c ~ N(0, 2)
    sigma_a, sigma_b ~ HalfNormal(0.15);  sigma_c ~ HalfNormal(0.75)
    y_i ~ Bernoulli(f(s_i; a_{g_i}, b_{g_i}, c_{g_i}))          (labeled data only)

in its non-centred form (z-scores times sigma), which removes the funnel
divergences of the centred form when a group has only a few labels. Variants:
``calibration="llo"`` (``a = b``), ``"temperature"`` (``a = b``, ``c = 0``), and
``hierarchical=False`` (independent groups with the hyperpriors' location priors,
``log a_g ~ N(0, 0.4)``, ``c_g ~ N(0, 2)``; seed 002 section 4.9.3 does not state
them).

Only the labeled points enter the likelihood. Two ways to sample it with nutpie:

- ``sampler="nutpie"`` (default): the same log density written out by hand in
  :mod:`._bc_density`, as C callbacks that numba caches on disk, so even a new
  process starts sampling in well under a second;
- ``sampler="nutpie-pymc"``: the PyMC model above compiled by nutpie, once per
  structure (number of groups, variant) and reused with new data (``with_data``);
  the compilation (15-35 s) is repeated in every new process.

Both are tested to give the same log density and gradient.

The unlabeled data enter afterwards: :func:`calibrated_cells` calibrates their
scores with every posterior draw (vectorised numpy, chunked over draws).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy.special import expit

from .._optional import require
from ._checks import CalibrationWarning, calibration_checks
from ._method import Bases, EstimationMethod, FitData, GroupDraws, Rng, Rows, is_number, refuse_option
from ._posterior import SamplingWarning, _import_arviz, external_stacklevel, group_labels

__all__ = [
    "CLIP",
    "BayesianCalibration",
    "ESS_MIN",
    "RETRY_TARGET_ACCEPT",
    "R_HAT_MAX",
    "SAMPLERS",
    "CalibrationFit",
    "build_model",
    "calibrated_cells",
    "calibrated_probabilities",
    "data_checks",
    "histogram_error",
    "configure_compile_cache",
    "prior_sd_vector",
]

#: Scores are clipped to this range before the log terms (seeds README).
CLIP = (0.01, 0.99)
#: Warn when the largest R-hat of the calibration parameters exceeds this. Not 1.01: with
#: the paper's 4 x 200 draws the largest rank-normalised R-hat of well-mixed chains (bulk
#: ESS > 450) exceeds 1.01 in about a third of the fits on real data, never 1.05.
R_HAT_MAX = 1.05
#: Warn when the smallest bulk effective sample size is below this.
ESS_MIN = 100.0
#: A fit with divergent transitions is sampled again with this target acceptance rate.
RETRY_TARGET_ACCEPT = 0.99

#: Standard deviations of the hyperpriors (seed 000 section 2.4); ``prior_scale`` multiplies them
#: all, as in the sensitivity analysis of seed 002 section 4.9.4.
PRIORS = {"mu_a": 0.4, "mu_b": 0.4, "mu_c": 2.0, "sigma_a": 0.15, "sigma_b": 0.15, "sigma_c": 0.75}

_COMPILED: dict[tuple[Any, ...], Any] = {}
_LOCK = threading.Lock()


def configure_compile_cache() -> str | None:
    """Point PyTensor's compile cache at a persistent user cache directory.

    Only when the user has not set ``PYTENSOR_FLAGS`` and PyTensor is not imported
    yet: then ``base_compiledir`` becomes ``$XDG_CACHE_HOME/skfair-measures/pytensor``
    (``~/.cache/...`` by default), where compiled C and numba code persists between
    processes. Returns the directory, or None if nothing was changed.
    """
    if "PYTENSOR_FLAGS" in os.environ or "pytensor" in sys.modules:
        return None
    path = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "skfair-measures" / "pytensor"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    os.environ["PYTENSOR_FLAGS"] = f"base_compiledir={path}"
    return str(path)


#: The calibration maps of ``calibration=``.
CALIBRATIONS = ("beta", "llo", "temperature")


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _import_pymc() -> Any:
    configure_compile_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return require("pymc", f"the {'bc'!r} posterior (PyMC)")


def prior_sd_vector(prior_scale: float = 1.0) -> np.ndarray:
    """The hyperprior standard deviations in the order of :data:`PRIORS`, times ``prior_scale``."""
    if not np.isfinite(prior_scale) or prior_scale <= 0:
        raise ValueError(f"prior_scale={prior_scale!r} must be a positive number.")
    return float(prior_scale) * np.array(list(PRIORS.values()))


def _features(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = np.clip(np.asarray(scores, dtype=float), *CLIP)
    return np.log(s), np.log1p(-s)


def build_model(
    log_s: np.ndarray,
    log1m_s: np.ndarray,
    y: np.ndarray,
    group: np.ndarray,
    n_groups: int,
    *,
    calibration: str = "beta",
    hierarchical: bool = True,
    prior_scale: float = 1.0,
) -> Any:
    """The calibration model as a ``pymc.Model`` with ``pm.Data`` inputs.

    Parameters
    ----------
    log_s, log1m_s : ndarray of shape (n_labeled,)
        ``log(s)`` and ``log(1 - s)`` of the clipped scores.
    y : ndarray of shape (n_labeled,)
        Labels 0/1.
    group : ndarray of shape (n_labeled,)
        Group codes ``0 .. n_groups - 1``.
    n_groups : int
    calibration : {"beta", "llo", "temperature"}, default="beta"
    hierarchical : bool, default=True
    prior_scale : float, default=1.0
        Multiplies the six hyperprior standard deviations (held in the ``pm.Data``
        ``prior_sd``, so a compiled model can change it without recompiling).

    Returns
    -------
    pymc.Model
        Free variables with ``dims="group"``; deterministics ``a``, ``b``, ``c``.
    """
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration={calibration!r}; pass one of {', '.join(map(repr, CALIBRATIONS))}.")
    pm, pt = _import_pymc(), require("pytensor.tensor", "the 'bc' posterior (PyMC)")

    def level(name: str, log_scale: bool) -> Any:
        mu_sd, sigma_sd = prior[f"mu_{name}"], prior[f"sigma_{name}"]
        if not hierarchical:
            if not log_scale:
                return pm.Normal(name, 0.0, mu_sd, dims="group")
            return pm.Deterministic(name, pt.exp(pm.Normal(f"log_{name}", 0.0, mu_sd, dims="group")), dims="group")
        mu, sigma = pm.Normal(f"mu_{name}", 0.0, mu_sd), pm.HalfNormal(f"sigma_{name}", sigma_sd)
        raw = mu + sigma * pm.Normal(f"z_{name}", 0.0, 1.0, dims="group")
        return pm.Deterministic(name, pt.exp(raw) if log_scale else raw, dims="group")

    with pm.Model(coords={"group": np.arange(n_groups)}) as model:
        ls = pm.Data("log_s", np.asarray(log_s, dtype=float))
        l1 = pm.Data("log1m_s", np.asarray(log1m_s, dtype=float))
        yy = pm.Data("y", np.asarray(y, dtype=np.int64))
        gi = pm.Data("group_index", np.asarray(group, dtype=np.int64))
        sd = pm.Data("prior_sd", prior_sd_vector(prior_scale))
        prior = dict(zip(PRIORS, [sd[i] for i in range(len(PRIORS))], strict=True))
        a = level("a", True)
        if calibration == "beta":
            b = level("b", True)  # before c: the order of the model's variables
            logit = level("c", False)[gi] + a[gi] * ls - b[gi] * l1
        elif calibration == "llo":
            logit = level("c", False)[gi] + a[gi] * (ls - l1)
        else:
            logit = a[gi] * (ls - l1)
        pm.Bernoulli("y_obs", logit_p=logit, observed=yy, shape=gi.shape)
    return model


@dataclass
class CalibrationFit:
    """Posterior draws of the calibration parameters and the MCMC trace.

    Attributes
    ----------
    params : dict of str to ndarray of shape (chain, draw, group)
        ``a``, ``b``, ``c`` (``b = a`` for LLO and temperature, ``c = 0`` for
        temperature).
    trace : arviz.InferenceData
        Posterior and sampler statistics.
    diagnostics : dict
        ``divergences``, ``max_r_hat``, ``min_ess_bulk``, ``seconds``.
    sampler : str
    compile_seconds : float
        Time spent building and compiling the model (0 when reused).
    """

    params: dict[str, np.ndarray]
    trace: Any
    diagnostics: dict[str, float] = field(default_factory=dict)
    sampler: str = "nutpie"
    compile_seconds: float = 0.0


#: The samplers ``sampler=`` takes.
SAMPLERS = ("nutpie", "nutpie-pymc", "pymc", "numpyro", "blackjax")


def _density_model(data: dict, n_groups: int, calibration: str, hierarchical: bool, prior_sd: np.ndarray) -> Any:
    """A nutpie model on the hand-written density of :mod:`._bc_density` (no PyMC involved).

    nutpie has no public constructor for a model given as C callbacks, so this fills
    the dataclass nutpie's own PyMC compiler returns; the callbacks follow its C
    signatures. Raises TypeError or ImportError if a nutpie release changes them.
    """
    CompiledPyMCModel = require("nutpie.compile_pymc", "the 'bc' posterior (nutpie)").CompiledPyMCModel  # noqa: N806

    require("numba", "the 'bc' posterior's compiled density")
    from . import _bc_density as dens

    columns = (data[k] for k in ("log_s", "log1m_s", "y", "group"))
    buf = dens.pack(*columns, n_groups, calibration, hierarchical, prior_sd)
    layout = dens.expanded_layout(calibration, hierarchical, n_groups)
    names, shapes = [name for name, _ in layout], [shape for _, shape in layout]
    sizes = np.cumsum([0] + [int(np.prod(s)) for s in shapes])

    return CompiledPyMCModel(
        dims={name: ("group",) for name, shape in layout if shape},
        compiled_logp_func=dens.c_logp,
        compiled_expand_func=dens.c_expand,
        initial_point_func=functools.partial(
            dens.initial_point, calibration=calibration, hierarchical=hierarchical, n_groups=n_groups, prior_sd=prior_sd
        ),
        shared_data={},
        user_data=buf,
        n_expanded=int(sizes[-1]),
        shape_info=(names, [slice(lo, hi) for lo, hi in zip(sizes[:-1], sizes[1:], strict=True)], shapes),
        logp_func=None,
        expand_func=None,
        _n_dim=dens.n_params(calibration, hierarchical, n_groups),
        _shapes=dict(zip(names, shapes, strict=True)),
        _coords={"group": pd.RangeIndex(n_groups)},
    )


def _compiled_nutpie(n_groups: int, calibration: str, hierarchical: bool, data: dict) -> tuple[Any, float]:
    key = ("nutpie", n_groups, calibration, hierarchical)
    with _LOCK:
        if key in _COMPILED:
            return _COMPILED[key], 0.0
        start, nutpie = time.perf_counter(), require("nutpie", "the 'bc' posterior (nutpie)")

        model = build_model(**data, n_groups=n_groups, calibration=calibration, hierarchical=hierarchical)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _COMPILED[key] = nutpie.compile_pymc_model(model)
        return _COMPILED[key], time.perf_counter() - start


def _nutpie_runner(sampler: str, data: dict, structure: tuple, settings: tuple) -> tuple[Callable, str, float]:
    """A function ``run(target_accept) -> trace`` for the sampler, the sampler used, and the compile time."""
    n_groups, calibration, hierarchical, prior_scale = structure
    nutpie = require("nutpie", "the 'bc' posterior (nutpie)")  # missing: said as such, not as an old release
    prior_sd = prior_sd_vector(prior_scale)
    compiled, compile_seconds = None, 0.0
    if sampler == "nutpie":
        first_use = f"{__package__}._bc_density" not in sys.modules
        start = time.perf_counter()
        try:
            compiled = _density_model(data, n_groups, calibration, hierarchical, prior_sd)
        except (ImportError, TypeError, AttributeError) as exc:  # a nutpie release with other internals
            message = (
                f"This nutpie version does not take the cached calibration density ({exc}); sampling the "
                "PyMC model with nutpie instead (sampler='nutpie-pymc'), which compiles for 15-35 s per process."
            )
            warnings.warn(message, RuntimeWarning, stacklevel=external_stacklevel())
            sampler = "nutpie-pymc"
        # loading the cached callbacks (compiling them on first use ever) happens on the first import
        compile_seconds = time.perf_counter() - start if first_use else 0.0
    if compiled is None:
        compiled, compile_seconds = _compiled_nutpie(n_groups, calibration, hierarchical, data)
        compiled = compiled.with_data(
            log_s=data["log_s"], log1m_s=data["log1m_s"], y=data["y"], group_index=data["group"], prior_sd=prior_sd
        )

    common, seed, extra = settings  # the function samples with run(target_accept=...)
    quiet = {"progress_bar": False, "save_warmup": False}
    return functools.partial(nutpie.sample, compiled, seed=seed, **quiet, **common, **extra), sampler, compile_seconds


def _pymc_runner(sampler: str, data: dict, structure: tuple, settings: tuple) -> tuple[Callable, str, float]:
    """As :func:`_nutpie_runner`, for the samplers PyMC runs."""
    n_groups, calibration, hierarchical, prior_scale = structure
    pm, start = _import_pymc(), time.perf_counter()
    model = build_model(
        **data, n_groups=n_groups, calibration=calibration, hierarchical=hierarchical, prior_scale=prior_scale
    )
    compile_seconds = time.perf_counter() - start

    def run(target_accept: float) -> Any:
        common, seed, extra = settings
        fixed = {"progressbar": False, "compute_convergence_checks": False, "target_accept": target_accept}
        with model, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pm.sample(random_seed=seed, nuts_sampler=sampler, **fixed, **common, **extra)

    return run, sampler, compile_seconds


def _sample_with_retry(run: Callable[..., Any], target_accept: float, retry: bool) -> tuple[Any, int, float]:
    """Sample; with divergences, once more with smaller steps (rare: ~3% of fits with n_L = 100)."""
    trace = run(target_accept=target_accept)
    first = int(np.asarray(trace.sample_stats["diverging"]).sum())
    if retry and first > 0 and target_accept < RETRY_TARGET_ACCEPT:
        return run(target_accept=RETRY_TARGET_ACCEPT), first, RETRY_TARGET_ACCEPT
    return trace, first, float(target_accept)


def _parameters(trace: Any) -> tuple[dict[str, np.ndarray], list[str]]:
    """``a``, ``b``, ``c`` per draw and group (``b = a`` and ``c = 0`` where the variant fixes them)."""
    post = trace.posterior
    a = np.asarray(post["a"], dtype=float)
    b = np.asarray(post["b"], dtype=float) if "b" in post else a
    c = np.asarray(post["c"], dtype=float) if "c" in post else np.zeros_like(a)
    return {"a": a, "b": b, "c": c}, [k for k in ("a", "b", "c") if k in post]


def _diagnostics(trace: Any, names: list[str]) -> dict[str, Any]:
    az = _import_arviz()
    out: dict[str, Any] = {"divergences": int(np.asarray(trace.sample_stats["diverging"]).sum())}
    if trace.posterior.sizes["chain"] > 1 and trace.posterior.sizes["draw"] >= 4:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rhat, ess = az.rhat(trace, var_names=names), az.ess(trace, var_names=names)
        r = {n: np.atleast_1d(np.asarray(rhat[n], dtype=float)) for n in names}
        e = {n: np.atleast_1d(np.asarray(ess[n], dtype=float)) for n in names}
        worst_r = max((float(r[n].max()), n, int(r[n].argmax())) for n in names)
        worst_e = min((float(e[n].min()), n, int(e[n].argmin())) for n in names)
        out |= {"max_r_hat": worst_r[0], "max_r_hat_var": f"{worst_r[1]}[{worst_r[2]}]"}
        out |= {"min_ess_bulk": worst_e[0], "min_ess_bulk_var": f"{worst_e[1]}[{worst_e[2]}]"}
    return out


def _warn_diagnostics(d: dict[str, Any], groups: pd.Index) -> None:
    labels = group_labels(groups)

    def name(v: str) -> str:
        base, idx = v.rstrip("]").split("[")
        return f"{base}[{labels[int(idx)]}]"

    problems = []
    if d.get("divergences", 0) > 0:
        problems.append(f"{d['divergences']} divergent transitions")
    if d.get("max_r_hat", 1.0) > R_HAT_MAX:
        problems.append(f"R-hat of {name(d['max_r_hat_var'])} is {d['max_r_hat']:.3f} > {R_HAT_MAX}")
    if d.get("min_ess_bulk", np.inf) < ESS_MIN:
        problems.append(f"bulk ESS of {name(d['min_ess_bulk_var'])} is {d['min_ess_bulk']:.0f} < {ESS_MIN:g}")
    if problems:
        advice = "The posterior may be unreliable: increase tune= or n_draws=, or raise target_accept=."
        message = f"Bayesian calibration: {'; '.join(problems)}. {advice}"
        warnings.warn(message, SamplingWarning, stacklevel=external_stacklevel())


def calibrated_probabilities(params: dict[str, np.ndarray], scores: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Calibrated probability ``f(s_j; a_g, b_g, c_g)`` of every row under every draw.

    Parameters
    ----------
    params : dict of str to ndarray of shape (chain, draw, group)
        ``a``, ``b``, ``c``.
    scores, codes : ndarray of shape (n,)
        Scores (clipped to :data:`CLIP` inside) and group codes.

    Returns
    -------
    ndarray of shape (chain, draw, n)

    Examples
    --------
    >>> p = {k: np.ones((1, 1, 1)) for k in "ab"} | {"c": np.zeros((1, 1, 1))}
    >>> calibrated_probabilities(p, np.array([0.8, 0.3]), np.array([0, 0])).round(6).tolist()
    [[[0.8, 0.3]]]
    """
    codes = np.asarray(codes, dtype=np.intp)
    log_s, log1m_s = _features(scores)
    a, b, c = (np.asarray(params[k], dtype=float)[..., codes] for k in ("a", "b", "c"))
    return expit(c + a * log_s - b * log1m_s)


def calibrated_cells(
    params: dict[str, np.ndarray],
    scores: np.ndarray,
    y_pred: np.ndarray,
    codes: np.ndarray,
    n_groups: int,
    chunk: int = 2_000_000,
    count: np.ndarray | None = None,
) -> np.ndarray:
    """Expected confusion cells of the unlabeled data under every posterior draw.

    For draw ``t``, sample ``j`` of group ``g`` with prediction ``p`` adds its
    calibrated probability ``f(s_j; a_g^t, b_g^t, c_g^t)`` to cell ``[1, p]`` and its
    complement to cell ``[0, p]``. Seed 000's eq. 1 (accuracy) and the TPR/FPR
    resolutions are ratios of these cells plus the labeled counts.

    Parameters
    ----------
    params : dict of str to ndarray of shape (chain, draw, group)
        ``a``, ``b``, ``c``.
    scores : ndarray of shape (n_unlabeled,)
    y_pred : ndarray of shape (n_unlabeled,)
        Predictions 0/1.
    codes : ndarray of shape (n_unlabeled,)
        Group codes.
    n_groups : int
    chunk : int, default=2_000_000
        Largest number of (draw, sample) pairs computed at once (memory bound).
    count : ndarray of shape (n_unlabeled,), optional
        Rows each entry stands for (an engine's score histogram: the entry's score is
        its bin's mean score); 1 each by default.

    Returns
    -------
    ndarray of shape (chain, draw, group, 2, 2)

    Examples
    --------
    >>> p = {k: np.ones((1, 1, 1)) for k in "ab"} | {"c": np.zeros((1, 1, 1))}
    >>> cells = calibrated_cells(p, np.array([0.8, 0.3]), np.array([1, 0]), np.array([0, 0]), 1)
    >>> np.round(cells[0, 0, 0], 6).tolist()  # identity calibration: the scores themselves
    [[0.7, 0.2], [0.3, 0.8]]
    """
    a, b, c = (np.asarray(params[k], dtype=float) for k in ("a", "b", "c"))
    lead = a.shape[:-1]
    # logit[t, j] = c_t + a_t log s_j - b_t log(1 - s_j): a rank-3 product, one BLAS call
    coef = np.stack([c, a, -b], axis=-1).reshape(-1, n_groups, 3)  # (draw, group, 3)
    n_t, clipped = coef.shape[0], np.clip(np.asarray(scores, dtype=float), *CLIP)
    codes, y_pred = np.asarray(codes, dtype=np.intp), np.asarray(y_pred, dtype=np.intp)
    pos, neg = np.zeros((n_t, n_groups, 2)), np.zeros((n_t, n_groups, 2))
    for g in range(n_groups):
        in_g = codes == g
        if not in_g.any():
            continue
        # identical (score, prediction) pairs share one column, weighted by their count
        key, inverse = np.unique(np.stack([clipped[in_g], y_pred[in_g]]), axis=1, return_inverse=True)
        inverse = inverse.ravel()
        weight = np.bincount(inverse, weights=None if count is None else count[in_g], minlength=key.shape[1])
        # single precision: twice as fast, and sums of probabilities keep ~1e-6 relative accuracy
        feats = np.stack([np.ones(key.shape[1]), np.log(key[0]), np.log1p(-key[0])]).astype(np.float32)
        onehot = (np.stack([key[1] == 0, key[1] == 1], axis=1) * weight[:, None]).astype(np.float32)
        coef_g, step = coef[:, g].astype(np.float32), max(1, chunk // max(key.shape[1], 1))
        for lo in range(0, n_t, step):
            logit = coef_g[lo : lo + step] @ feats
            pos[lo : lo + step, g] = expit(logit) @ onehot
            # the complement from expit(-logit), not n - pos: no cancellation when p is near 1
            np.negative(logit, out=logit)
            neg[lo : lo + step, g] = expit(logit, out=logit) @ onehot
    cells = np.stack([neg, pos], axis=-2)  # (t, group, y_true, y_pred)
    return cells.reshape(lead + (n_groups, 2, 2))


def data_checks(data: FitData) -> list[str]:
    """:func:`~._checks.calibration_checks` of the fit data: its labeled rows, and the scores of every row."""
    lab, unl = data.labeled, data.unlabeled
    pairs = ((lab.scores, unl.scores), (lab.codes, unl.codes), (lab.multiplicity, unl.multiplicity))
    scores, codes, rows = (np.concatenate(pair) for pair in pairs)
    return calibration_checks(lab.scores, data.y_true, lab.codes, data.groups, scores, codes, CLIP, rows)


def histogram_error(params: dict[str, np.ndarray], rows: Rows, n_groups: int) -> dict[str, Any]:
    """How far the histogram's expected cells can be from the rows' under the calibration draws (``attrs``).

    An entry of ``n`` rows in a bin ``[lo, lo + h]`` inside the clipping bounds enters at its
    mean score ``m``; ``sum_j f(s_j) - n f(m)`` is at most ``n h^2 / 8 max |f''|`` over the
    bin (Taylor at ``m``: the first-order terms cancel). With ``f = expit(L)``, ``L = c + a log s
    - b log(1 - s)``: ``|f''| <= (L'^2 + |L''|) / 4``, ``L' <= a / lo + b / (1 - lo - h)``,
    ``|L''| <= a / lo^2 + b / (1 - lo - h)^2``. Entries at or beyond the bounds are exact
    (every score of the entry clips to the same value). ``rows`` is a histogram
    (:attr:`Rows.count` and :attr:`Rows.bin_width` given). Returns the bin count, width, and
    the largest bound over draws of the error of a group's expected positives, in rows and
    as a share of the group's unlabeled rows.
    """
    h = float(rows.bin_width)
    inside = (rows.scores > CLIP[0]) & (rows.scores < CLIP[1])
    lo = np.floor(rows.scores / h) * h
    lo, hi = np.maximum(lo, CLIP[0]), np.minimum(lo + h, CLIP[1])
    a, b = (np.asarray(params[k], dtype=float).reshape(-1, n_groups) for k in ("a", "b"))
    a_max, b_max = a.max(axis=0)[rows.codes], b.max(axis=0)[rows.codes]  # the bound grows with a and b
    d1, d2 = a_max / lo + b_max / (1.0 - hi), a_max / lo**2 + b_max / (1.0 - hi) ** 2
    per_entry = np.where(inside, rows.multiplicity * h * h / 8.0 * (d1 * d1 + d2) / 4.0, 0.0)
    per_group = np.bincount(rows.codes, weights=per_entry, minlength=n_groups)
    sizes = np.bincount(rows.codes, weights=rows.multiplicity, minlength=n_groups)
    share = np.divide(per_group, sizes, out=np.zeros(n_groups), where=sizes > 0)
    worst = {"max_rows_error": float(per_group.max(initial=0.0)), "max_share_error": float(share.max(initial=0.0))}
    return {"bins": round(1.0 / h), "width": h} | worst


@dataclass(frozen=True)
class BayesianCalibration(EstimationMethod):
    """``method="bc"``: hierarchical Bayesian beta calibration (Ji, Smyth & Steyvers 2020).

    The options are those of :func:`skfair_measures.bayes.posterior`; the model is
    fitted on the labeled rows (:meth:`fit`) and every posterior draw
    calibrates the unlabeled scores, whose expected cells are added to the
    labeled counts (:func:`calibrated_cells`).
    """

    calibration: str = "beta"
    hierarchical: bool = True
    prior_scale: float = 1.0
    tune: int = 1500
    target_accept: float = 0.95
    sampler: str = "nutpie"
    cores: int | None = None
    warn: bool = True
    sampler_kwargs: dict[str, Any] | None = None
    retry_divergent: bool = True

    name: ClassVar[str] = "bc"

    def __post_init__(self) -> None:
        if self.calibration not in CALIBRATIONS:
            refuse_option("calibration", self.calibration, f"pass one of {', '.join(map(repr, CALIBRATIONS))}")
        flags = {"hierarchical": self.hierarchical, "warn": self.warn, "retry_divergent": self.retry_divergent}
        for flag, value in flags.items():
            if not isinstance(value, bool | np.bool_):
                refuse_option(flag, value, "pass True or False")
        if not (is_number(self.prior_scale) and self.prior_scale > 0):
            refuse_option("prior_scale", self.prior_scale, "pass a positive number (default 1.0)")
        if not (_is_int(self.tune) and self.tune >= 0):
            refuse_option("tune", self.tune, "pass an integer >= 0 (warm-up draws per chain, default 1500)")
        if not (is_number(self.target_accept) and 0 < self.target_accept < 1):
            refuse_option("target_accept", self.target_accept, "pass a number in (0, 1), e.g. 0.95")
        if self.sampler not in SAMPLERS:
            refuse_option("sampler", self.sampler, f"pass one of {', '.join(map(repr, SAMPLERS))}")
        if self.cores is not None and not (_is_int(self.cores) and self.cores >= 1):
            refuse_option("cores", self.cores, "pass None (all cores, up to chains) or an integer >= 1")
        if self.sampler_kwargs is not None and not isinstance(self.sampler_kwargs, dict):
            refuse_option("sampler_kwargs", self.sampler_kwargs, "pass None or a dict of sampler arguments")

    def group_draws(self, data: FitData, bases: Bases, *, chains: int, draws: int, rng: Rng, seed: int) -> GroupDraws:
        return self.from_fit(self.fit(data, chains=chains, draws=draws, seed=seed), data, bases, rng)

    def from_fit(self, fit: CalibrationFit, data: FitData, bases: Bases, rng: Rng) -> GroupDraws:
        """The draws from a calibration fit: every draw calibrates the unlabeled rows (BCR adds its rectifier)."""
        unl = data.unlabeled
        unlabeled = calibrated_cells(fit.params, unl.scores, unl.y_pred, unl.codes, data.n_groups, count=unl.count)
        out = self.draws_from_calibrated(unlabeled, fit, data, bases, rng)
        if unl.bin_width is not None:
            out.attrs["binning"] = histogram_error(fit.params, unl, data.n_groups)
        return out

    def draws_from_calibrated(
        self, unlabeled: np.ndarray, fit: CalibrationFit, data: FitData, bases: Bases, rng: Rng
    ) -> GroupDraws:
        """The draws from the labeled counts plus the unlabeled rows' calibrated cells (BCR rectifies those)."""
        return self.draws_from_cells(data.counts + unlabeled, fit, bases)

    def fit(self, data: FitData, *, chains: int, draws: int, seed: int) -> CalibrationFit:
        """The calibration model sampled on the labeled rows, with this method's options.

        Three steps: build (or load) the sampler for the model, sample (again with
        smaller steps if there were divergences, ``retry_divergent``), read the parameters
        and diagnostics (warned about with ``warn``).
        """
        lab, checks = data.labeled, data_checks(data)
        if checks and self.warn:
            message = f"method={self.name!r}: {'; '.join(checks)}."
            warnings.warn(message, CalibrationWarning, stacklevel=external_stacklevel())
        rows = dict(zip(("log_s", "log1m_s"), _features(lab.scores), strict=True))
        rows |= {"y": data.y_true.astype(np.int64), "group": lab.codes.astype(np.int64)}
        cores = max(1, min(chains, os.cpu_count() or 1)) if self.cores is None else self.cores
        # the sampler's arguments; a key of sampler_kwargs that repeats one of them is a TypeError in the call
        common = {"draws": draws, "tune": self.tune, "chains": chains, "cores": cores}
        settings = (common, seed, self.sampler_kwargs or {})
        structure = (data.n_groups, self.calibration, self.hierarchical, self.prior_scale)
        runner = _nutpie_runner if self.sampler in ("nutpie", "nutpie-pymc") else _pymc_runner
        run, sampler, compile_seconds = runner(self.sampler, rows, structure, settings)
        start = time.perf_counter()
        trace, first, accept = _sample_with_retry(run, self.target_accept, self.retry_divergent)
        params, names = _parameters(trace)
        diagnostics = _diagnostics(trace, names)
        diagnostics |= {"seconds": time.perf_counter() - start, "target_accept": accept, "divergences_first_try": first}
        if self.warn:
            _warn_diagnostics(diagnostics, data.groups)
        diagnostics["calibration_checks"] = checks
        return CalibrationFit(params, trace, diagnostics, sampler, compile_seconds)

    def draws_from_cells(self, cells: np.ndarray, fit: CalibrationFit, bases: Bases) -> GroupDraws:
        """Group and overall draws of every base metric from draws of the cells ``(chain, draw, group, 2, 2)``."""
        attrs = {"calibration": self.calibration, "hierarchical": bool(self.hierarchical)}
        attrs |= {"prior_scale": float(self.prior_scale), "sampler": fit.sampler, "tune": int(self.tune)}
        attrs |= {"target_accept": float(self.target_accept), "diagnostics": fit.diagnostics}
        attrs["compile_seconds"] = float(fit.compile_seconds)
        values, overall = ({b.name: b.from_counts(c) for b in bases} for c in (cells, cells.sum(axis=-3)))
        return GroupDraws(values, overall, attrs=attrs, trace=fit.trace, extra=dict(fit.params))
