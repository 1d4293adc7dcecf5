"""Crossing a singular configuration with the fifth-order BDF on the index-3 equations.

Near a singular configuration (a flat four-bar, a toggle) the index-1 equations amplify any
error of the state by about 1/σ² (σ the smallest relative singular value of Jv): their
accelerations come from S = Jv M⁻¹ Jvᵀ. The index-3 equations in q,

    M_q q̈ + Φqᵀ λ = Q_q(q, q̇, t),    Φ(q, t) = 0,

solved by Newton's method on the augmented matrix [M_q …, Φqᵀ; Φq, 0] (condition about 1/σ,
not 1/σ²), stay well posed there, and the step's predictor keeps the motion on its branch.
:meth:`.contract.Formulation._cross_singular` crosses with them; this module steps them by
the k-step backward differentiation formula (BDF, constant step h, k = :data:`ORDER`)

    Σ_j α_j q_{n+1−j} = h q̇_{n+1},    Σ_j α_j q̇_{n+1−j} = h q̈_{n+1},

so q_{n+1} = base_q + (h/α_0)² q̈_{n+1} and q̇_{n+1} = base_q̇ + (h/α_0) q̈_{n+1}: the Newton
iteration of :meth:`.index3.Index3Formulation.newton`. The constant-step k-step BDF converges
with order k on index-3 systems (positions, velocities and multipliers; Lötstedt & Petzold,
Math. Comp. 46, 1986; Brenan, Campbell & Petzold, *Numerical Solution of Initial-Value
Problems in DAEs*, 3.2) from starting values accurate to that order: the k − 1 states
before the crossing come from the formulation's own (index-1, away from the singular
configuration) equations integrated backwards by DOP853 at a tighter tolerance. Output
frames inside the crossing interpolate the BDF's polynomial (order k) and are projected
onto the joints. The non-conservative work is integrated by the trapezoidal rule.

Units: t, h in s; q in m and 1 (Euler parameters); q̇, q̈ their rates; W in J.
"""

from __future__ import annotations

import numpy as np
import scipy.integrate as si

from .failures import _Failure

__all__ = ["ORDER", "BDF_ALPHA", "BDFCrossing"]

#: the BDF's number of steps (its order)
ORDER = 5
#: α_0 … α_k of the k-step BDF, Σ_j α_j y_{n+1−j} = h ẏ_{n+1} (Hairer & Wanner II, III.1)
BDF_ALPHA = {
    1: (1.0, -1.0),
    2: (1.5, -2.0, 0.5),
    3: (11 / 6, -3.0, 1.5, -1 / 3),
    4: (25 / 12, -4.0, 3.0, -4 / 3, 0.25),
    5: (137 / 60, -5.0, 5.0, -10 / 3, 1.25, -0.2),
}


def _lagrange(ts, ys, t):
    """The polynomial through (ts[i], ys[i]) at t (ys: (n, m) array)."""
    out = np.zeros(ys.shape[1])
    for i, ti in enumerate(ts):
        w = 1.0
        for j, tj in enumerate(ts):
            if j != i:
                w *= (t - tj) / (ti - tj)
        out += w * ys[i]
    return out


class BDFCrossing:
    """Steps of the k-step BDF on the index-3 equations of ``step`` (a prepared
    :class:`~.index3.Index3Formulation`: :meth:`~.index3.Index3Formulation.prepare`, ``tol``)
    with the constant step h (s), from the history of coordinates ``qs`` (k, nq) and rates
    ``qds`` (k, nq) at ``ts`` (k,), oldest first, the last the current state."""

    def __init__(self, step, h, ts, qs, qds, work, order=ORDER):
        self.step = step
        self.h = float(h)
        self.alpha = np.array(BDF_ALPHA[order])
        self.ts = list(map(float, ts))
        self.qs = [np.array(q, float) for q in qs]
        self.qds = [np.array(qd, float) for qd in qds]
        self.work = float(work)
        q, qd, t = self.qs[-1], self.qds[-1], self.ts[-1]
        self.qdd, self.lam = step._consistent_acc(q, qd, t)
        self.power = step._power

    @property
    def t(self):
        """Time (s) of the last accepted state."""
        return self.ts[-1]

    def advance(self):
        """One step: (t, q, q̇, W) at its end. Raises _Failure if Newton's method fails."""
        a, h = self.alpha, self.h
        k = len(a) - 1
        hist_q = sum(a[j] * self.qs[-j] for j in range(1, k + 1))
        hist_qd = sum(a[j] * self.qds[-j] for j in range(1, k + 1))
        base_qd = -hist_qd / a[0]
        base_q = (h * base_qd - hist_q) / a[0]
        t1 = self.t + h
        self.step._solve = None  # the matrix of this step's first iterate
        q1, qd1, qdd1, lam1, power = self.step.newton(t1, base_q, base_qd, (h / a[0]) ** 2, h / a[0], self.qdd,
                                                     self.lam)
        if not (np.all(np.isfinite(q1)) and np.all(np.isfinite(qd1))):
            raise _Failure(f"the solution became NaN/inf at t = {t1:.6g} s")
        p1 = self.step._power_of(power, lam1, q1, t1)
        self.work += 0.5 * h * (self.power + p1)
        self.power = p1
        self.qdd, self.lam = qdd1, lam1
        self.ts = self.ts[1:] + [t1]
        self.qs = self.qs[1:] + [q1]
        self.qds = self.qds[1:] + [qd1]
        return t1, q1, qd1, self.work

    def interpolate(self, t):
        """(q, q̇) at t (s) inside the last step, from the polynomial through the k last states
        and the current one (order k)."""
        ts = np.array(self.ts)
        return _lagrange(ts, np.array(self.qs), t), _lagrange(ts, np.array(self.qds), t)


def history(form, t, y, h, k, rtol):
    """The states of ``form`` (its own state vectors) at t − j h, j = k−1 … 1, then y at t: the
    formulation's equations integrated backwards from (t, y) by DOP853 at relative and absolute
    tolerance ``rtol``. Raises _Failure if that integration fails."""
    if k <= 1:
        return [t], [y]
    t_back = t - (k - 1) * h
    sol = si.solve_ivp(form._counted_rhs, (t, t_back), y, method="DOP853", rtol=rtol, atol=rtol, dense_output=True)
    if not sol.success:
        raise _Failure(f"the states before t = {t:.6g} s could not be integrated: {sol.message}")
    ts = [t - j * h for j in range(k - 1, 0, -1)]
    return ts + [t], [sol.sol(tj) for tj in ts] + [y]
