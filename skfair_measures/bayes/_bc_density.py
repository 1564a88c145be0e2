"""The calibration model's log density and gradient as C callbacks cached by numba.

The same model as :func:`skfair_measures.bayes._bc.build_model` (the PyMC
definition), written out by hand. PyMC's graph compiled by nutpie costs 15-35 s
of numba compilation in every new process, because nutpie's C callbacks close
over the compiled graph and cannot be cached; these callbacks are module-level
functions that numba caches on disk, so a new process loads them in well under a
second. ``tests/test_bayes_bc.py`` checks that the two give the same log density
(up to a constant) and gradient for every variant.

Unconstrained parameter vector: for each level ``k`` the variant has, in the order
of :data:`LEVELS` (``a, b, c`` for beta calibration, ``a, c`` for LLO, ``a`` for
temperature scaling),

- hierarchical: ``mu_k, log(sigma_k), z_k[0..G-1]``, and ``raw_k = mu_k + sigma_k z_k``;
- not hierarchical: ``raw_k[0..G-1]``.

``a = exp(raw_a)``, ``b = exp(raw_b)`` (``b = a`` without ``b``), ``c = raw_c``
(``c = 0`` without ``c``); the labeled data enter as
``y_i ~ Bernoulli(logit^-1(c_g + a_g log s_i - b_g log(1 - s_i)))``.

All data of one fit live in one float64 buffer (:func:`pack`), whose address is
the callbacks' user-data pointer: a header, the six prior standard deviations,
then ``log s``, ``log(1 - s)``, ``y`` and the group codes.
"""

from __future__ import annotations

import numpy as np
from numba import carray, cfunc, njit, types

__all__ = [
    "LEVELS",
    "c_expand",
    "c_logp",
    "expanded_layout",
    "initial_point",
    "logp_grad",
    "n_params",
    "pack",
    "unpack",
]

#: Levels present in each calibration variant.
LEVELS = {"beta": ("a", "b", "c"), "llo": ("a", "c"), "temperature": ("a",)}
# where each level's hyperprior standard deviations sit in the prior vector
# (mu_a, mu_b, mu_c, sigma_a, sigma_b, sigma_c): mu at this index, sigma 3 further
_PRIOR_INDEX = {"a": 0, "b": 1, "c": 2}
# header: total length, n, n_groups, has_b, has_c, hierarchical, n_params, n_expanded
_HEAD = 8
_N_PRIOR = 6


def n_params(calibration: str, hierarchical: bool, n_groups: int) -> int:
    """Length of the unconstrained parameter vector."""
    per_level = n_groups + 2 if hierarchical else n_groups
    return len(LEVELS[calibration]) * per_level


def expanded_layout(calibration: str, hierarchical: bool, n_groups: int) -> list[tuple[str, tuple[int, ...]]]:
    """Names and shapes of the stored variables, in the order :func:`c_expand` writes them.

    The free variables as PyMC names them (``mu_a``, ``sigma_a``, ``z_a`` when
    hierarchical, else ``log_a`` and ``c``) and the group values ``a``, ``b``, ``c``.
    """
    out: list[tuple[str, tuple[int, ...]]] = []
    for name in LEVELS[calibration]:
        if hierarchical:
            out += [(f"mu_{name}", ()), (f"sigma_{name}", ()), (f"z_{name}", (n_groups,))]
        elif name != "c":
            out.append((f"log_{name}", (n_groups,)))
        out.append((name, (n_groups,)))
    return out


def pack(
    log_s: np.ndarray,
    log1m_s: np.ndarray,
    y: np.ndarray,
    group: np.ndarray,
    n_groups: int,
    calibration: str,
    hierarchical: bool,
    prior_sd: np.ndarray,
) -> np.ndarray:
    """The float64 buffer that the callbacks read (see the module docstring)."""
    n, levels = len(log_s), LEVELS[calibration]
    n_exp = sum(int(np.prod(shape)) for _, shape in expanded_layout(calibration, hierarchical, n_groups))
    n_par = n_params(calibration, hierarchical, n_groups)
    # the header's fields, in the order listed at _HEAD
    head = [_HEAD + _N_PRIOR + 4 * n, n, n_groups, "b" in levels, "c" in levels, hierarchical, n_par, n_exp]
    # float64 throughout: the header is, and concatenation promotes the integer columns to it
    return np.concatenate([np.asarray(head, dtype=float), np.asarray(prior_sd, dtype=float), log_s, log1m_s, y, group])


@njit(cache=True, nogil=True)
def _layout(buf):  # pragma: no cover - compiled by numba
    """From the header: groups, levels present, whether hierarchical, and parameters per level."""
    n_groups, hier = int(buf[2]), buf[5] > 0
    return n_groups, 1 + int(buf[3]) + int(buf[4]), hier, n_groups + 2 if hier else n_groups


@njit(cache=True, nogil=True)
def _raw_values(x, buf):  # pragma: no cover - compiled by numba
    """raw[k, g] for the levels present, from the unconstrained point x."""
    n_groups, n_levels, hier, per = _layout(buf)
    raw = np.zeros((3, n_groups))
    for k in range(n_levels):
        off = k * per
        for g in range(n_groups):
            raw[k, g] = x[off] + np.exp(x[off + 1]) * x[off + 2 + g] if hier else x[off + g]
    return raw


@njit(cache=True, nogil=True)
def _logp_grad(x, grad, buf):  # pragma: no cover - compiled by numba
    n_groups, n_levels, hier, per = _layout(buf)
    n, has_b, has_c = int(buf[1]), buf[3] > 0, buf[4] > 0
    prior_sd, start = buf[_HEAD : _HEAD + _N_PRIOR], _HEAD + _N_PRIOR
    log_s, log1m_s, y, group = buf[start : start + 4 * n].reshape(4, n)  # the data, in pack's order

    raw = _raw_values(x, buf)
    a = np.exp(raw[0])
    b = np.exp(raw[1]) if has_b else a
    ic = 1 + int(has_b)
    # likelihood sum_i y_i eta_i - log(1 + exp(eta_i)); its derivative in eta_i is y_i - sigmoid(eta_i)
    d_a, d_b, d_c = np.zeros(n_groups), np.zeros(n_groups), np.zeros(n_groups)
    logp = 0.0
    for i in range(n):
        g = int(group[i])
        eta = a[g] * log_s[i] - b[g] * log1m_s[i]
        if has_c:
            eta += raw[ic, g]
        if eta > 0:  # softplus and sigmoid without overflow
            e = np.exp(-eta)
            softplus = eta + np.log1p(e)
            p = 1.0 / (1.0 + e)
        else:
            e = np.exp(eta)
            softplus = np.log1p(e)
            p = e / (1.0 + e)
        logp += y[i] * eta - softplus
        r = y[i] - p
        d_a[g] += r * log_s[i]
        d_b[g] -= r * log1m_s[i]
        d_c[g] += r
    # to the raw group values (log scale for a and b)
    d_raw = np.zeros((3, n_groups))
    if has_b:
        d_raw[0] = d_a * a
        d_raw[1] = d_b * b
    else:  # b is a
        d_raw[0] = (d_a + d_b) * a
    if has_c:
        d_raw[ic] = d_c
    for k in range(n_levels):
        which = k if has_b else (0 if k == 0 else 2)  # _PRIOR_INDEX of the k-th level
        off = k * per
        mu_sd = prior_sd[which]
        if hier:
            sigma_sd, mu, u = prior_sd[3 + which], x[off], x[off + 1]
            sigma, s_mu, s_u = np.exp(u), 0.0, 0.0
            for g in range(n_groups):
                z = x[off + 2 + g]
                s_mu += d_raw[k, g]
                s_u += d_raw[k, g] * z
                logp -= 0.5 * z * z
                grad[off + 2 + g] = d_raw[k, g] * sigma - z
            # mu ~ N(0, mu_sd); sigma ~ HalfNormal(sigma_sd) sampled as u = log(sigma), Jacobian e^u
            logp += -0.5 * (mu / mu_sd) ** 2 - 0.5 * (sigma / sigma_sd) ** 2 + u
            grad[off] = s_mu - mu / mu_sd**2
            grad[off + 1] = s_u * sigma - (sigma / sigma_sd) ** 2 + 1.0
        else:
            for g in range(n_groups):
                w = x[off + g]
                logp -= 0.5 * (w / mu_sd) ** 2
                grad[off + g] = d_raw[k, g] - w / mu_sd**2
    return logp


@njit(cache=True, nogil=True)
def _expand(x, out, buf):  # pragma: no cover - compiled by numba
    n_groups, n_levels, hier, per = _layout(buf)
    raw = _raw_values(x, buf)
    j = 0
    for k in range(n_levels):
        is_c = k == n_levels - 1 and buf[4] > 0
        off = k * per
        if hier:
            out[j], out[j + 1] = x[off], np.exp(x[off + 1])
            j += 2
            for g in range(n_groups):
                out[j + g] = x[off + 2 + g]
            j += n_groups
        elif not is_c:
            for g in range(n_groups):
                out[j + g] = raw[k, g]
            j += n_groups
        for g in range(n_groups):
            out[j + g] = raw[k, g] if is_c else np.exp(raw[k, g])
        j += n_groups


# the C signatures nutpie calls: (dim, x, grad, logp, user data) and (dim, n_expanded, x, out, user data)
_DOUBLES = types.CPointer(types.double)
_LOGP_SIG = types.int64(types.uint64, _DOUBLES, _DOUBLES, _DOUBLES, types.voidptr)
_EXPAND_SIG = types.int64(types.uint64, types.uint64, _DOUBLES, _DOUBLES, types.voidptr)


@cfunc(_LOGP_SIG, cache=True, nopython=True)
def c_logp(dim, x_, grad_, logp_, data_):  # pragma: no cover - compiled by numba
    """C callback: log density at ``x`` into ``logp``, gradient into ``grad``; 0 on success."""
    head = carray(data_, (_HEAD,), np.float64)
    if dim != int(head[6]):
        return -1
    buf = carray(data_, (int(head[0]),), np.float64)
    grad, out = carray(grad_, (dim,)), carray(logp_, (1,))
    lp = _logp_grad(carray(x_, (dim,)), grad, buf)
    out[0] = lp
    if not np.all(np.isfinite(grad)):
        return 3
    if not np.isfinite(lp):
        return 4
    return 0


@cfunc(_EXPAND_SIG, cache=True, nopython=True)
def c_expand(dim, n_expanded, x_, out_, data_):  # pragma: no cover - compiled by numba
    """C callback: the stored variables of :func:`expanded_layout` at ``x``; 0 on success."""
    head = carray(data_, (_HEAD,), np.float64)
    if dim != int(head[6]) or n_expanded != int(head[7]):
        return -1
    buf = carray(data_, (int(head[0]),), np.float64)
    _expand(carray(x_, (dim,)), carray(out_, (n_expanded,)), buf)
    return 0


def initial_point(
    seed: int, *, calibration: str, hierarchical: bool, n_groups: int, prior_sd: np.ndarray
) -> np.ndarray:
    """Where a chain starts: the unconstrained parameter vector for nutpie.

    As PyMC's default for nutpie: the prior's centre (``mu = 0``, ``z = 0``, ``sigma``
    at its prior scale) jittered by U(-1, 1) on the unconstrained scale.
    """
    x = np.random.default_rng(seed).uniform(-1.0, 1.0, n_params(calibration, hierarchical, n_groups))
    if hierarchical:
        for k, name in enumerate(LEVELS[calibration]):
            x[k * (n_groups + 2) + 1] += np.log(prior_sd[3 + _PRIOR_INDEX[name]])
    return x


def logp_grad(x: np.ndarray, buf: np.ndarray) -> tuple[float, np.ndarray]:
    """Log density (up to a constant) and its gradient at the unconstrained point ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> buf = pack(np.log([0.8, 0.3]), np.log([0.2, 0.7]), np.array([1, 0]), np.array([0, 1]), 2,
    ...            "beta", True, np.array([0.4, 0.4, 2.0, 0.15, 0.15, 0.75]))
    >>> lp, grad = logp_grad(np.zeros(n_params("beta", True, 2)), buf)
    >>> grad.shape
    (12,)
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    grad = np.empty_like(x)
    return float(_logp_grad(x, grad, buf)), grad


def unpack(x: np.ndarray, buf: np.ndarray) -> dict[str, np.ndarray]:
    """The stored variables of :func:`expanded_layout` at the unconstrained point ``x``."""
    head = buf[:_HEAD]
    n_groups, has_b, has_c, hier, n_exp = int(head[2]), head[3] > 0, head[4] > 0, head[5] > 0, int(head[7])
    out = np.empty(n_exp)
    _expand(np.ascontiguousarray(x, dtype=np.float64), out, buf)
    calibration = "beta" if has_b else ("llo" if has_c else "temperature")
    values, j = {}, 0
    for name, shape in expanded_layout(calibration, bool(hier), n_groups):
        size = int(np.prod(shape))
        values[name] = out[j : j + size].reshape(shape)
        j += size
    return values
