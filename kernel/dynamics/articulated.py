"""The articulated-body algorithm (Featherstone) on the spanning tree: M̄⁻¹ in O(n) per right-hand side.

The tree's equations of motion in its relative coordinates z (:mod:`.tree`),

    M̄ z̈ = Rᵀ g + τ,      M̄ = Rᵀ M R,

(R: the columns b_c summed along the paths, Z = R ż; M, g: the parts' spatial inertias and
forces; τ: generalised forces, N or N m per coordinate) are solved without forming M̄ by two
passes over the tree joints (parents before children). Spatial vectors are in world axes:
motions [v; ω] (m/s, rad/s), forces [F; N] (N, N m), inertias (kg, kg m, kg m²). Each part's
are taken at its centre of mass r_c, where its inertia is diag(m I, J) and its force [F; N]
(N about r_c); joint k's subtree quantities at its child's r_c, so no lever arm is longer than
the distance between neighbouring parts. At the world origin the lever arms are the parts'
distances from it: on the 200-pair closed chain (parts up to 64 m away) D_k⁻¹ came out 1e-11
off (relative, against the same passes in long double), at the centres of mass 1e-14.
Moving the reference point by d (new − old):

    motion  [v; ω] → [v − d × ω; ω],      force  [F; N] → [F; N − d × F],
    inertia I → T⁻ᵀ I T⁻¹,   T = [[1, −[d]×], [0, 1]].

The passes, with S_k the columns of joint k at its child's r_c (6 × n_k):

    factor (leaves → root)   I^A_c = diag(m_c, J_c) + Σ_children I^a (moved to r_c),
                             U_k = I^A_c S_k,  D_k = S_kᵀ U_k (n_k × n_k),  I^a_k = I^A_c − U_k D_k⁻¹ U_kᵀ
    solve, backward          p^A_c = −g_c + Σ_children p^a (moved to r_c),  u_k = τ_k − S_kᵀ p^A_c,
                             p^a_k = p^A_c + U_k D_k⁻¹ u_k
    solve, forward           A'_c = A_parent moved to r_c (0 for the ground: the bias
                             accelerations Ṙ ż are in g),  z̈_k = D_k⁻¹ (u_k − U_kᵀ A'_c),
                             A_c = A'_c + S_k z̈_k

The factor costs O(n) for a tree of n joints, each solve O(n) per right-hand side; the solve
takes several right-hand sides at once (the closure rows' C_rᵀ of :mod:`.recursive`). Where the
compiled code generation is on (:func:`.fast.available`) the passes run compiled
(:mod:`._aba_kernels`, the same operations as loops); this module's numpy passes are their
reference and the path without it.
"""

from __future__ import annotations

import numpy as np

from .mass import cross, skew

__all__ = ["ArticulatedBodies"]


class ArticulatedBodies:
    """M̄⁻¹ of a spanning tree by the articulated-body passes (see the module docstring).

    Parameters
    ----------
    kin : the tree's :class:`.tree.TreeKinematics` (joints in topological order: parents first).
    compiled : the compiled passes (:mod:`._aba_kernels`); None: where :func:`.fast.available`.
    """

    def __init__(self, kin, compiled=None):
        tree = kin.tree
        self.parent, self.child = kin.parent, kin.child
        ncol = np.bincount(kin.col_joint, minlength=len(tree.joints))
        self.cols = [np.arange(tj.z_adr, tj.z_adr + n) for tj, n in zip(tree.joints, ncol)]
        self.nmov, self.nz = kin.nmov, tree.nz
        if compiled is None:
            from .fast import available

            compiled = available()
        self.compiled = bool(compiled)
        if self.compiled:
            i64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
            self._tree = (i64(self.parent), i64(self.child), i64([tj.z_adr for tj in tree.joints]), i64(ncol))
            self._S, self._U = np.empty((self.nz, 6)), np.empty((self.nz, 6))
            self._Dinv = np.zeros((len(self.cols), 6, 6))

    def factor(self, mass, J, rc, b):
        """The articulated inertias' factors at one pose: mass (nmov,) kg, J (nmov, 3, 3) the parts'
        inertias about their centres of mass rc (nmov, 3) (kg m², m; world), b (nz, 6) the columns
        at the world origin. Raises ``np.linalg.LinAlgError`` where a joint's D_k is singular (a
        massless end of the tree)."""
        if self.compiled:
            from ._aba_kernels import factor

            if not factor(mass, J, rc, b, *self._tree, self._S, self._U, self._Dinv):
                raise np.linalg.LinAlgError("singular articulated inertia")
            self._rc = rc
            return self
        nj = len(self.cols)
        IA = np.zeros((self.nmov, 6, 6))
        IA[:, 0, 0] = IA[:, 1, 1] = IA[:, 2, 2] = mass
        IA[:, 3:, 3:] = J
        S = b.copy()  # the columns at their joint's child's centre of mass
        S[:, :3] -= cross(rc[self.child[np.repeat(np.arange(nj), [len(c) for c in self.cols])]], b[:, 3:])
        T = np.tile(np.eye(6), (nj, 1, 1))  # T_k: motions from the parent's r_c to the child's
        par = np.maximum(self.parent, 0)
        T[:, :3, 3:] = skew(rc[par] - rc[self.child])
        U, Dinv = [None] * nj, [None] * nj
        for k in range(nj - 1, -1, -1):
            c, p, Sk = self.child[k], self.parent[k], S[self.cols[k]].T
            Ia = IA[c]
            if Sk.shape[1]:
                U[k] = IA[c] @ Sk
                # D⁻¹ = L⁻ᵀ L⁻¹ from the Cholesky factor: symmetric, as I^A must stay (an LU inverse's
                # asymmetry grew through the levels: D⁻¹ at the plate lattice's root 5.6e-10 off, not 1.6e-12)
                Li = np.linalg.inv(np.linalg.cholesky(Sk.T @ U[k]))
                Dinv[k] = Li.T @ Li
                Ia = Ia - U[k] @ Dinv[k] @ U[k].T
            if p >= 0:
                IA[p] += T[k].T @ Ia @ T[k]
        self._U, self._Dinv, self._S, self._T = U, Dinv, S, T
        return self

    def solve(self, tau, g=None):
        """x = M̄⁻¹ (Rᵀ g + τ) at the factored pose: τ (nz,) or (nz, r) generalised forces, g
        (nmov, 6) the parts' forces [F; N] about their centres of mass (None: 0)."""
        one = tau.ndim == 1
        tau = tau[:, None] if one else tau
        r = tau.shape[1]
        if self.compiled:
            from ._aba_kernels import solve

            x = np.empty((self.nz, r))
            solve(np.ascontiguousarray(tau, dtype=float), np.zeros((self.nmov, 6)) if g is None else g, self._rc,
                  *self._tree, self._S, self._U, self._Dinv, x)
            return x[:, 0] if one else x
        pA = np.zeros((self.nmov, 6, r))
        if g is not None:
            pA -= g[:, :, None]
        U, Dinv, S, T = self._U, self._Dinv, self._S, self._T
        u = [None] * len(self.cols)
        for k in range(len(self.cols) - 1, -1, -1):
            c, p, cols = self.child[k], self.parent[k], self.cols[k]
            pa = pA[c]
            if len(cols):
                u[k] = tau[cols] - S[cols] @ pA[c]
                pa = pa + U[k] @ (Dinv[k] @ u[k])
            if p >= 0:
                pA[p] += T[k].T @ pa
        x = np.empty((self.nz, r))
        A = np.zeros((self.nmov, 6, r))
        for k, (c, p, cols) in enumerate(zip(self.child, self.parent, self.cols)):
            Ap = T[k] @ A[p] if p >= 0 else np.zeros((6, r))
            if len(cols):
                x[cols] = Dinv[k] @ (u[k] - U[k].T @ Ap)
                Ap = Ap + S[cols].T @ x[cols]
            A[c] = Ap
        return x[:, 0] if one else x
