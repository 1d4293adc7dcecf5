"""scipy's double-precision LAPACK wrappers, without the cost of importing :mod:`scipy.linalg`.

The kinematic path needs a handful of LAPACK routines (LU with its condition estimate,
QR with and without column pivoting, triangular and Cholesky solves). ``import
scipy.linalg`` costs a process about 0.3 s of CPU (scipy ≥ 1.15 builds its array-API layer,
which touches every lazily loaded numpy submodule), several times the whole 201-frame
slider-crank run. The routines themselves live in one extension module,
``scipy/linalg/_flapack``; it is loaded here straight from its file (:mod:`.scipy_files`), which
needs numpy only.
The wrappers are the ones :func:`scipy.linalg.lapack.get_lapack_funcs` returns (the same
compiled objects), and the helpers below call them with the arguments
:func:`scipy.linalg.qr`, :func:`~scipy.linalg.cho_factor` and :func:`~scipy.linalg.cho_solve`
use, so results are bit for bit those of scipy.linalg. Where scipy.linalg is already
imported, or the file is not where scipy 1.x keeps it, ``get_lapack_funcs`` is used instead.
"""

from __future__ import annotations

import numpy as np

from .scipy_files import scipy_module

__all__ = ["getrf", "getrs", "gecon", "geqrf", "orgqr", "trtrs", "potrf", "potrs", "geqp3",
           "qr_pivoted_r", "qr_economic_q", "cho_factor", "cho_solve"]

_NAMES = ("getrf", "getrs", "gecon", "geqrf", "orgqr", "trtrs", "potrf", "potrs", "geqp3")


def _routines():
    try:
        module = scipy_module("linalg/_flapack")
    except ImportError:
        module = None
    if module is not None and all(hasattr(module, "d" + n) for n in _NAMES):
        return [getattr(module, "d" + n) for n in _NAMES]
    from scipy.linalg.lapack import get_lapack_funcs

    return list(get_lapack_funcs(_NAMES, dtype=np.float64))


getrf, getrs, gecon, geqrf, orgqr, trtrs, potrf, potrs, geqp3 = _routines()


def _optimal(routine, *args, **kwargs):
    """``routine`` called with its optimal work size (a workspace query first), as scipy.linalg does;
    its outputs without ``work`` and ``info``. ValueError on an illegal argument."""
    lwork = int(routine(*args, lwork=-1, **kwargs)[-2][0])
    out = routine(*args, lwork=lwork, **kwargs)
    if out[-1] < 0:  # pragma: no cover - only for invalid arguments
        raise ValueError(f"illegal value in {-out[-1]}th argument of LAPACK {getattr(routine, '__name__', '')}")
    return out[:-2]


def qr_pivoted_r(a):
    """(R, P) of the QR factorisation with column pivoting a[:, P] = Q R, |diag R| non-increasing;
    ``scipy.linalg.qr(a, mode="r", pivoting=True)``. a (m, n) finite, else ValueError."""
    a = np.asarray_chkfinite(a)
    if a.size == 0:
        return np.empty_like(a), np.arange(a.shape[1], dtype=np.int32)
    qr, jpvt, _ = _optimal(geqp3, a)
    jpvt -= 1  # 1-based
    return np.triu(qr), jpvt


def qr_economic_q(a):
    """Q (m, min(m, n)) of the economic QR factorisation a = Q R; ``scipy.linalg.qr(a,
    mode="economic")[0]``. a (m, n) finite, else ValueError."""
    a = np.asarray_chkfinite(a)
    m, n = a.shape
    if a.size == 0:
        return np.empty_like(a, shape=(m, min(m, n)))
    qr, tau = _optimal(geqrf, a)
    (q,) = _optimal(orgqr, qr[:, :m] if m < n else qr, tau, overwrite_a=1)
    return q


def cho_factor(a):
    """(c, False): the upper Cholesky factor of the symmetric positive definite ``a`` (its lower
    triangle left as it was); ``scipy.linalg.cho_factor(a, check_finite=False)``.
    numpy.linalg.LinAlgError where ``a`` is not positive definite."""
    a = np.atleast_2d(np.asarray(a))
    if a.size == 0:
        return np.empty_like(a), False
    c, info = potrf(a, lower=False, overwrite_a=False, clean=False)
    if info > 0:
        raise np.linalg.LinAlgError(f"{info}-th leading minor of the array is not positive definite")
    if info < 0:  # pragma: no cover - only for invalid arguments
        raise ValueError(f"illegal value in {-info}th argument of LAPACK potrf")
    return c, False


def cho_solve(c_and_lower, b):
    """x with A x = b from :func:`cho_factor`'s (c, lower); ``scipy.linalg.cho_solve(...,
    check_finite=False)``."""
    c, lower = c_and_lower
    b = np.asarray(b)
    if b.size == 0:
        return np.empty_like(b, dtype=np.float64)
    x, info = potrs(c, b, lower=lower, overwrite_b=False)
    if info != 0:  # pragma: no cover - only for invalid arguments
        raise ValueError(f"illegal value in {-info}th argument of LAPACK potrs")
    return x
