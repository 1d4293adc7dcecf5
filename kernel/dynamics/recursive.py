"""Recursive Newton–Euler on the spanning tree, loops closed by multipliers (after Malczyk & Frączek).

``recursive``  the relative coordinates z of the spanning tree (:mod:`.tree`); the tree's
               equations of motion by the recursive Newton–Euler passes, the cut joints'
               closure equations by Lagrange multipliers with Baumgarte stabilisation:

    M̄ z̈ + C_rᵀ λ = Q̄,      C_r z̈ = c_r − 2α Φ̇_r − β² Φ_r          (α, β: options, 1/s; default 10, 10)

State y = [z (nzq), ż (nz), W], as ``semi-recursive``. The passes:

    forward   body velocities Z = R ż and bias accelerations Ṙ ż along the paths from the root
    backward  the body forces less the bias inertia (Q̄ = Rᵀ (f − M Ṙ ż)) and the composite
              inertias of the subtrees (M̄[k, l] = b_kᵀ Mc_l b_l) accumulated from the leaves

then λ from the Schur complement S = C_r M̄⁻¹ C_rᵀ (Cholesky of M̄ and of S) and
z̈ = M̄⁻¹ (Q̄ − C_rᵀ λ). C_r are the independent closure rows (rank-revealing at the start,
chosen again where S turns singular), so redundant but compatible loops are accepted. No
projection: the closure equations hold to the Baumgarte terms' O(h^p) drift (like
``baumgarte`` in absolute coordinates); singular configurations are crossed by the index-3
steps of :mod:`.contract` as in every index-1 formulation.

This implementation factorises the assembled M̄ (dense Cholesky) instead of the O(n)
articulated-body recursion of the authors' algorithm: the same equations, cubic instead of
linear in a chain's length.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sps

from .contract import _Failure
from .semirecursive import SemiRecursiveFormulation

__all__ = ["RecursiveFormulation"]


class RecursiveFormulation(SemiRecursiveFormulation):
    """Recursive Newton–Euler on the tree, cut joints by multipliers and Baumgarte; see the module docstring."""

    name = "recursive"
    summary = ("Relative coordinates on the joint graph's spanning tree by Newton-Euler passes, the cut "
               "joints' closure equations by Lagrange multipliers with Baumgarte stabilisation (alpha, beta)")
    defaults = {"alpha": 10.0, "beta": 10.0}

    def __init__(self, dyn, **kw):
        super().__init__(dyn, **kw)
        self.sparse = False
        self._rows = None

    def _kept_rows(self, C):
        """The independent closure rows (pivoted QR of Cᵀ)."""
        if self._rows is None:
            self._rows = self._choose(C)[0]
            self.nfactor += 1
        return self._rows

    def rhs(self, t, y):
        """[ż_q, z̈, Ẇ] (see the module docstring)."""
        tree, dyn = self.tree, self.dyn
        zq, zd, q, v, b, Z, rc = self._state(t, y)
        ev = dyn.evaluate(q, v, t, self.refs)
        Mz, Qz, a = self._dynamics_terms(ev, b, Z, rc, zd)
        Mz = Mz.toarray() if sps.issparse(Mz) else Mz
        try:
            L = sla.cho_factor(Mz, check_finite=False)
        except np.linalg.LinAlgError:
            raise _Failure(f"the tree's mass matrix is singular at t = {t:.6g} s") from None
        self.nfactor += 1
        zdd = sla.cho_solve(L, Qz, check_finite=False)
        power = ev.power
        if len(self.crows):
            C = self._closure(ev, b, rc)
            phit = ev.phit[self.crows]
            alpha, beta = float(self.options["alpha"]), float(self.options["beta"])
            phi = dyn.phi(q, t, self.angles)[dyn.model_rows[self.crows]]
            c = ev.gamma[self.crows] - ev.J[self.crows] @ a - 2.0 * alpha * (C @ zd + phit) - beta * beta * phi
            lam, rows = self._multipliers(C, c, L, zdd, t)
            zdd = zdd - sla.cho_solve(L, C[rows].T @ lam, check_finite=False)
            if dyn.timed:
                power += float(lam @ phit[rows])
        out = np.empty_like(y)
        out[: tree.nzq] = self.kin.rates(zq, zd)
        out[tree.nzq: tree.nzq + tree.nz] = zdd
        out[-1] = power
        return out

    def _multipliers(self, C, c, L, zdd0, t):
        """λ on the kept rows from S λ = C_r z̈₀ − c_r, S = C_r M̄⁻¹ C_rᵀ."""
        for attempt in range(2):
            rows = self._kept_rows(C)
            if not len(rows):  # every closure equation redundant
                return np.zeros(0), rows
            Cr = C[rows]
            X = sla.cho_solve(L, Cr.T, check_finite=False)
            S = Cr @ X
            try:
                d = np.sqrt(np.diag(S))
                Ss = S / d[:, None] / d[None, :]
                cho = sla.cho_factor(Ss, check_finite=False)
                if np.min(np.diag(cho[0])) ** 2 <= 1e-12:
                    raise np.linalg.LinAlgError("singular")
                self.nfactor += 1
                return sla.cho_solve(cho, (Cr @ zdd0 - c[rows]) / d, check_finite=False) / d, rows
            except (np.linalg.LinAlgError, FloatingPointError, ValueError):
                self._rows = None  # the independent rows changed (a singular configuration was crossed)
        raise _Failure(f"the closure equations are singular at t = {t:.6g} s (a lock-up or toggle position)")

    def accept(self, t, y):
        """After an accepted step: the angle windings (no projection; returns None)."""
        _, _, q, v, _, _, _ = self._state(t, y)
        self._update_windings(q, v=v)
        self._zq_ref = y[: self.tree.nzq].copy()
        return None

    def output_state(self, t, y):
        """The integrator's state as it is (the closure holds to the Baumgarte drift)."""
        return y
