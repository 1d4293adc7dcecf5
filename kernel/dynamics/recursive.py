"""Recursive Newton–Euler on the spanning tree, loops closed by multipliers (after Malczyk & Frączek).

``recursive``  the relative coordinates z of the spanning tree (:mod:`.tree`); the tree's
               equations of motion by the recursive Newton–Euler passes, the cut joints'
               closure equations by Lagrange multipliers with Baumgarte stabilisation:

    M̄ z̈ + C_rᵀ λ = Q̄,      C_r z̈ = c_r − 2α Φ̇_r − β² Φ_r          (α, β: options, 1/s; default 20, 30)

State y = [z (nzq), ż (nz), W], as ``semi-recursive``. From (z, ż): the parts' velocities
Z = R ż and bias accelerations Ṙ ż along the paths from the root, their applied forces less the
bias inertia g = f − M Ṙ ż (Q̄ = Rᵀ g), the closure rows' C = Jc R_v. Then M̄⁻¹ is applied
to Q̄ and to the closure rows, S = C_r M̄⁻¹ C_rᵀ (m × m) is factorised (Cholesky), and

    λ = S⁻¹ (C_r z̈₀ − c_r),   z̈ = z̈₀ − M̄⁻¹ C_rᵀ λ,   z̈₀ = M̄⁻¹ Q̄.

C_r are the independent closure rows (rank-revealing at the start, chosen again where S turns
singular), so redundant but compatible loops are accepted. No projection: the closure
equations hold to the Baumgarte terms' O(h^p) drift (like ``baumgarte`` in absolute
coordinates); singular configurations are crossed by the index-3 steps of :mod:`.contract` as
in every index-1 formulation. The default α = 20, β = 30 (1/s; the closure error's modes decay as
e^(−α t), underdamped, ζ = α/β = 0.67) keeps the P2 chain's gap below 1e-9 m over 10 s at rtol 1e-8 for
N = 10 … 200 (α = β = 10 left 4.4e-9 m at N = 200) for 0–14 % more evaluations (benchmarks/README.md,
"`recursive`: M̄⁻¹ by the articulated-body algorithm").

M̄⁻¹ of the numpy evaluation (option ``aba``; None: the articulated-body passes where they run
compiled, else the dense Cholesky factor; the compiled evaluation below always takes the passes):

aba     the articulated-body algorithm on the spanning tree (:mod:`.articulated`; compiled by
        :mod:`._aba_kernels` where the code generation is on): O(n) for the factor and per
        right-hand side, the 1 + m right-hand sides Q̄ and C_rᵀ, so O(n m) an evaluation
dense   M̄ assembled from the subtrees' composite inertias (M̄[k, l] = b_kᵀ Mc_l b_l, as
        ``semi-recursive``) and its Cholesky factor: O(n²) and O(n³) in a chain's length. In
        numpy the articulated-body passes, a Python loop over the joints, cost more up to the
        300-pair chain (benchmarks/relative.py, an evaluation at N = 300: 14.4 ms against
        3.2 ms), so numpy keeps it; compiled they cost less at every size measured (N = 300:
        2.3 ms against 3.5 ms, the M̄⁻¹ stage 0.24 ms against 0.95 ms).

Compiled path (option ``fast``, default True; where the code generation is on and the tree
module is compiled, :mod:`.fast_tree`, as ``semi-recursive``): the whole evaluation in one call
(:func:`._tree_kernels.stage_rhs_recursive`: the tree's kinematics, forces and closure rows, the
articulated-body passes, λ on the kept rows, chosen by the same pivoted QRs as here), equal to
this module's to round-off, and with RK4 or DOP853 the whole integration in the compiled loop
(option ``compiled_loop``, default True): linear in a chain's length, 0.8 µs per coordinate on
the closed chain (N = 300: 0.25 ms an evaluation, semi-recursive compiled 0.95 ms; N = 10:
12 µs against 9 µs; benchmarks/relative.py; the P2 chain at N = 200 in the compiled DOP853 loop
0.56 s per simulated s, semi-recursive 10.4 s). Without it the kinematics and the model's absolute
quantities are numpy (the velocities and bias sums along the paths are products with the
n × n path matrix).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from .articulated import ArticulatedBodies
from .contract import _Failure
from .semirecursive import SemiRecursiveFormulation

__all__ = ["RecursiveFormulation"]


class RecursiveFormulation(SemiRecursiveFormulation):
    """Recursive Newton–Euler on the tree, cut joints by multipliers and Baumgarte; see the module docstring."""

    name = "recursive"
    summary = ("Relative coordinates on the joint graph's spanning tree by Newton-Euler passes, the cut "
               "joints' closure equations by Lagrange multipliers with Baumgarte stabilisation (alpha, beta)")
    defaults = {"alpha": 20.0, "beta": 30.0, "aba": None, "fast": True, "compiled_loop": True}

    def __init__(self, dyn, **kw):
        super().__init__(dyn, **kw)
        self.sparse = False
        self._rows = None
        self.aba = None  #: True: the articulated-body passes solve, False: the assembled M̄'s Cholesky factor
        # the compiled loops of ``semi-recursive`` hand their projection an iteration count: none here
        # (the tree module's project does nothing for this formulation); not an option
        self.options["max_iter"] = 0

    def _setup(self, q0):
        super()._setup(q0)
        self._aba = ArticulatedBodies(self.kin)
        aba = self.options["aba"]
        self.aba = self._aba.compiled if aba is None else bool(aba)

    def _kept_rows(self, C):
        """The independent closure rows (pivoted QR of Cᵀ)."""
        if self._rows is None:
            self._rows = self._choose(C)[0]
            self.nfactor += 1
        return self._rows

    def rhs(self, t, y):
        """[ż_q, z̈, Ẇ] (see the module docstring; compiled by :mod:`.fast_tree` when it applies)."""
        if self._fast is not None:
            return super().rhs(t, y)  # the compiled evaluation (the tree module's recursive stage)
        tree, dyn = self.tree, self.dyn
        zq, zd, q, v, b, Z, rc = self._state(t, y)
        ev = dyn.evaluate(q, v, t, self.refs, with_constraints=bool(len(self.crows)))
        try:
            solve, zdd, a = (self._articulated if self.aba else self._dense)(ev, b, Z, rc, zd)
        except np.linalg.LinAlgError:
            raise _Failure(f"the tree's mass matrix is singular at t = {t:.6g} s") from None
        self.nfactor += 1
        power = ev.power
        if len(self.crows):
            C = self._closure(ev, b, rc)
            phit = ev.phit[self.crows]
            alpha, beta = float(self.options["alpha"]), float(self.options["beta"])
            phi = dyn.phi(q, t, self.angles)[dyn.model_rows[self.crows]]
            c = ev.gamma[self.crows] - ev.J[self.crows] @ a - 2.0 * alpha * (C @ zd + phit) - beta * beta * phi
            lam, rows, X = self._multipliers(C, c, solve, zdd, t)
            zdd = zdd - X @ lam
            if dyn.timed:
                power += float(lam @ phit[rows])
        out = np.empty_like(y)
        out[: tree.nzq] = self.kin.rates(zq, zd)
        out[tree.nzq: tree.nzq + tree.nz] = zdd
        out[-1] = power
        return out

    def _dense(self, ev, b, Z, rc, zd):
        """(solve, z̈₀ = M̄⁻¹ Q̄, a_v): M̄ assembled from the subtrees' composite inertias and
        factorised by Cholesky (O(n³)); solve(B) = M̄⁻¹ B."""
        Mz, Qz, a = self._dynamics_terms(ev, b, Z, rc, zd)
        L = sla.cho_factor(Mz, check_finite=False)
        solve = lambda B: sla.cho_solve(L, B, check_finite=False)  # noqa: E731
        return solve, solve(Qz), a

    def _articulated(self, ev, b, Z, rc, zd):
        """(solve, z̈₀ = M̄⁻¹ Q̄, a_v) by the articulated-body passes (:mod:`.articulated`, O(n));
        solve(B) = M̄⁻¹ B."""
        g, a = self._body_terms(ev, b, Z, rc, zd)
        aba = self._aba.factor(self._mass, ev.bs.J, rc, b)
        return aba.solve, aba.solve(np.zeros(self.tree.nz), g), a

    def _multipliers(self, C, c, solve, zdd0, t):
        """(λ, the kept rows, X = M̄⁻¹ C_rᵀ): S λ = C_r z̈₀ − c_r, S = C_r M̄⁻¹ C_rᵀ (solve(B) = M̄⁻¹ B)."""
        for attempt in range(2):
            rows = self._kept_rows(C)
            if not len(rows):  # every closure equation redundant
                return np.zeros(0), rows, np.zeros((self.tree.nz, 0))
            Cr = C[rows]
            X = solve(Cr.T)
            S = Cr @ X
            try:
                d = np.sqrt(np.diag(S))
                Ss = S / d[:, None] / d[None, :]
                cho = sla.cho_factor(Ss, check_finite=False)
                if np.min(np.diag(cho[0])) ** 2 <= 1e-12:
                    raise np.linalg.LinAlgError("singular")
                self.nfactor += 1
                return sla.cho_solve(cho, (Cr @ zdd0 - c[rows]) / d, check_finite=False) / d, rows, X
            except (np.linalg.LinAlgError, ArithmeticError, ValueError):
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
