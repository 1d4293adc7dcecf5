"""scipy's implicit integrators ``BDF`` and ``Radau`` with a Newton iteration that stops at round-off, and
``LSODA`` with a largest step that follows the run (:func:`with_max_step`).

Both solve the implicit equations of each step by a simplified Newton iteration on increments Δ, measured
in the error norm ‖Δ‖ = rms(Δ / (atol + rtol |y|)), against a tolerance τ (``newton_tol``: at most 0.03)
and the rate θ_k = ‖Δ_k‖ / ‖Δ_(k−1)‖ of two increments:

    converged   θ_k / (1 − θ_k) ‖Δ_k‖ < τ                      (the remaining error, a geometric series)
    diverging   θ_k ≥ 1,  or  θ_k^(kmax − k) / (1 − θ_k) ‖Δ_k‖ > τ

A diverging iteration rejects the step (after a fresh Jacobian: at half the step). The test misjudges a
state at rest. A box stopped by friction on a compliant floor has ẏ = 0 up to round-off: its contact
forces (k δ at δ = 2.5e-6 m, δ computed from coordinates of 0.05 m, so to 1e-17 m; k = 1e6 N/m) and their
moments cancel to a few units in the last place, and the accelerations the iteration sees are that
round-off, constant over increments far below the resolution of the coordinates (measured: ω̇_y =
−8.3e-14 rad/s² at both iterates). Every increment is then round-off (‖Δ‖ ≈ 1e-10, 1e-7 τ, at rtol 1e-6), the
second is as large as the first as often as not, θ ≥ 1 declares divergence, and the halved steps meet
the same round-off until the step collapses (scipy's BDF at t = 0.38 s of the sliding box's 0.34 s stop,
at rtol 1e-4 … 1e-10; its Radau survives by retrying, 45,000 factorisations for 0.6 s).

Here an iteration whose increments stop falling while both the last two are already below τ ends as
converged (at the iterate before the last increment, the one scipy would return): an increment below τ
passes the convergence test of CVODE and LSODE on its own (‖Δ‖ min(1, θ_carried) ≤ τ, the rate carried
from the step before, 1 after a new Jacobian; LSODA and DASSL also accept any increment below the state's
round-off, 100 u ‖y‖), so the rate of two such increments tells nothing the tolerance needs. Every
iteration scipy's test accepts is accepted here after the same increments; only the steps it would
reject for θ ≥ 1 at increments below τ differ. The linearised error of the iterate kept is
(P⁻¹A)⁻¹ Δ (P the Newton matrix, A the exact one): below τ unless P is badly wrong, and the step's error
estimate still judges the step.

The classes run scipy's own step (``_step_impl``, the same code object) with the iteration above in place
of its module's ``solve_bdf_system`` / ``solve_collocation_system``; with a scipy whose modules lack those
functions they are scipy's classes unchanged (:data:`AMENDED` False).
"""

from __future__ import annotations

import types

import numpy as np
from scipy.integrate import BDF as _ScipyBDF
from scipy.integrate import LSODA as _ScipyLSODA
from scipy.integrate import Radau as _ScipyRadau
from scipy.integrate._ivp import bdf as _bdf
from scipy.integrate._ivp import radau as _radau

__all__ = ["BDF", "LSODA", "Radau", "AMENDED", "implicit_class", "with_max_step"]


def _stalled(rate, dy_norm, dy_norm_old, tol):
    """True when increments below the tolerance stopped falling: round-off, not divergence."""
    return rate >= 1 and dy_norm <= tol and dy_norm_old <= tol


def solve_bdf_system(fun, t_new, y_predict, c, psi, LU, solve_lu, scale, tol):
    """scipy's ``bdf.solve_bdf_system`` (same arguments and returns) with the round-off stop above."""
    norm, maxiter = _bdf.norm, _bdf.NEWTON_MAXITER
    d = 0
    y = y_predict.copy()
    dy_norm_old = None
    converged = False
    for k in range(maxiter):
        f = fun(t_new, y)
        if not np.all(np.isfinite(f)):
            break
        dy = solve_lu(LU, c * f - psi - d)
        dy_norm = norm(dy / scale)
        rate = None if dy_norm_old is None else dy_norm / dy_norm_old
        if rate is not None and _stalled(rate, dy_norm, dy_norm_old, tol):
            converged = True
            break
        if rate is not None and (rate >= 1 or rate ** (maxiter - k) / (1 - rate) * dy_norm > tol):
            break
        y += dy
        d += dy
        if dy_norm == 0 or rate is not None and rate / (1 - rate) * dy_norm < tol:
            converged = True
            break
        dy_norm_old = dy_norm
    return converged, k + 1, y, d


def solve_collocation_system(fun, t, y, h, Z0, scale, tol, LU_real, LU_complex, solve_lu):
    """scipy's ``radau.solve_collocation_system`` (same arguments and returns) with the round-off stop
    above; stopped there, the rate returned is the one before (None after two iterations: scipy's
    Radau reads it only after three), so a stop at round-off asks for no new Jacobian."""
    R = _radau
    norm, maxiter = R.norm, R.NEWTON_MAXITER
    n = y.shape[0]
    M_real = R.MU_REAL / h
    M_complex = R.MU_COMPLEX / h
    W = R.TI.dot(Z0)
    Z = Z0
    F = np.empty((3, n))
    ch = h * R.C
    dW_norm_old = None
    dW = np.empty_like(W)
    converged = False
    rate = None
    for k in range(maxiter):
        for i in range(3):
            F[i] = fun(t + ch[i], y + Z[i])
        if not np.all(np.isfinite(F)):
            break
        f_real = F.T.dot(R.TI_REAL) - M_real * W[0]
        f_complex = F.T.dot(R.TI_COMPLEX) - M_complex * (W[1] + 1j * W[2])
        dW_real = solve_lu(LU_real, f_real)
        dW_complex = solve_lu(LU_complex, f_complex)
        dW[0] = dW_real
        dW[1] = dW_complex.real
        dW[2] = dW_complex.imag
        dW_norm = norm(dW / scale)
        if dW_norm_old is not None:
            new_rate = dW_norm / dW_norm_old
            if _stalled(new_rate, dW_norm, dW_norm_old, tol):
                converged = True
                break
            rate = new_rate
        if rate is not None and (rate >= 1 or rate ** (maxiter - k) / (1 - rate) * dW_norm > tol):
            break
        W += dW
        Z = R.T.dot(W)
        if dW_norm == 0 or rate is not None and rate / (1 - rate) * dW_norm < tol:
            converged = True
            break
        dW_norm_old = dW_norm
    return converged, k + 1, Z, rate


def _with_iteration(cls, module, name, iteration):
    """``cls`` whose ``_step_impl`` is scipy's code reading ``iteration`` for the module's ``name``, or None
    when this scipy's module has no such function."""
    step = cls._step_impl
    if not callable(getattr(module, name, None)) or name not in step.__code__.co_names:
        return None
    return types.FunctionType(step.__code__, {**vars(module), name: iteration}, step.__name__, step.__defaults__,
                              step.__closure__)


_bdf_step = _with_iteration(_ScipyBDF, _bdf, "solve_bdf_system", solve_bdf_system)
_radau_step = _with_iteration(_ScipyRadau, _radau, "solve_collocation_system", solve_collocation_system)
#: True when this scipy's BDF and Radau take the iteration of this module
AMENDED = _bdf_step is not None and _radau_step is not None


class BDF(_ScipyBDF):
    """``scipy.integrate.BDF`` whose Newton iteration stops at round-off (see the module docstring)."""

    if _bdf_step is not None:
        _step_impl = _bdf_step


class Radau(_ScipyRadau):
    """``scipy.integrate.Radau`` whose Newton iteration stops at round-off (see the module docstring)."""

    if _radau_step is not None:
        _step_impl = _radau_step


class LSODA(_ScipyLSODA):
    """``scipy.integrate.LSODA`` that remembers the largest step it was made with (``made_max_step``): it reads
    ``max_step`` only when it starts (:func:`with_max_step`)."""

    def __init__(self, fun, t0, y0, t_bound, max_step=np.inf, **options):
        super().__init__(fun, t0, y0, t_bound, max_step=max_step, **options)
        self.made_max_step = max_step


def implicit_class(name):
    """The integrator class of scipy's method ``name``: this module's for ``BDF``, ``Radau`` and ``LSODA``,
    scipy's for the others."""
    import scipy.integrate as si

    return {"BDF": BDF, "Radau": Radau, "LSODA": LSODA}.get(name) or getattr(si, name)


def with_max_step(solver, limit, make):
    """``solver`` with its largest step set to ``limit`` (s) for its next step. LSODA reads it only when it
    starts, and kept its first limit: it strode over compliant contacts it met later (a ball glancing off a
    box's edge ended inside it with 833 times its energy). Where the limit leaves [½, 2] times the one LSODA
    was made with, it is made again, ``make(t, y)`` at its present state (its order starts again)."""
    made = getattr(solver, "made_max_step", None)
    if made is not None and solver.status == "running" and not 0.5 * made <= limit <= 2 * made:
        return make(solver.t, solver.y)
    solver.max_step = limit
    return solver
