"""The Jacobian of the index-1 right-hand side, for scipy's implicit integrators (Radau, BDF, LSODA).

The index-1 formulations (:mod:`.formulations`) integrate y = [q (nq), v (nv), W] with

    q̇ = B(q) v,    v̇ = M⁻¹ (f − Jvᵀ λ),  λ = S⁻¹ (Jv M⁻¹ f − γ̂),  S = Jv M⁻¹ Jvᵀ,    Ẇ = P_nc.

Without a Jacobian, scipy's Radau and BDF difference the right-hand side once per column
(nq + nv + 1 evaluations) every time they refresh it. The Newton iteration of an implicit
method only needs the part of ∂ẏ/∂y that makes the model stiff; this gives it from the force
elements' exact tangent (:meth:`.forces.ForceElements.tangent`), through the constrained
mobility P M⁻¹ = M⁻¹ − M⁻¹ Jvᵀ S⁻¹ Jv M⁻¹ (the map from an applied force to v̇):

    ∂q̇/∂v = B(q)                                     (exact)
    ∂v̇/∂v = −P M⁻¹ (D + G)                           (D: elements' damping, G = [ω] J − [J ω])
    ∂v̇/∂q = −P M⁻¹ K C(q)                            (K: elements' stiffness, δx = C δq)

Left out (they change only the convergence rate of the Newton iteration, never the
solution): ∂B/∂q v, the change of M, Jv and γ̂ with q and v, and ∂Ẇ/∂y. Dense, for models
up to :data:`MAX_NV` velocities (None beyond: scipy differences).
"""

from __future__ import annotations

import numpy as np

from .mass import rate_map, skew, velocity_map

__all__ = ["rhs_jacobian", "MAX_NV", "FORMULATIONS"]

#: the largest model (velocities) given a dense Jacobian
MAX_NV = 600
#: the formulations whose state and equations this Jacobian is of (not penalty: its constraint
#: stiffness is not in it; not partitioning: another state layout)
FORMULATIONS = ("projection", "baumgarte", "augmented-lagrangian")


def rhs_jacobian(form):
    """``jac(t, y) -> ndarray (n, n)`` for an index-1 formulation ``form`` (its state
    y = [q, v, W]), to pass as ``jac=`` to scipy's Radau, BDF or LSODA; None for models
    larger than :data:`MAX_NV` velocities."""
    dyn = form.dyn
    nq, nv, nmov = dyn.nq, dyn.nv, dyn.nmov
    if nv > MAX_NV:
        return None
    n = nq + nv + 1
    qi = (7 * np.arange(nmov)[:, None, None] + np.arange(7)[None, :, None] + 0 * np.arange(6)[None, None, :])
    vj = (6 * np.arange(nmov)[:, None, None] + np.arange(6)[None, None, :] + 0 * np.arange(7)[None, :, None])

    def jac(t, y):
        q, v = y[:nq], y[nq: nq + nv]
        ev = dyn.evaluate(q, v, t, form.refs, with_gamma=False)
        bs = ev.bs
        K, D = dyn.forces.tangent(bs, t, form.refs)
        for b in range(nmov):
            w, J = bs.w[b], bs.J[b]
            D[6 * b + 3: 6 * b + 6, 6 * b + 3: 6 * b + 6] += skew(w) @ J - skew(J @ w)
        C = np.zeros((nv, nq))
        Cb = velocity_map(bs, nmov)  # (nmov, 6, 7)
        C[vj.transpose(0, 2, 1).reshape(-1), qi.transpose(0, 2, 1).reshape(-1)] = Cb.reshape(-1)
        out = np.zeros((n, n))
        Bb = rate_map(bs, nmov)  # (nmov, 7, 6)
        out[qi.reshape(-1), nq + vj.reshape(-1)] = Bb.reshape(-1)

        Minv = dyn.mass_matrix(bs, inverse=True)

        def mobility(X):
            """P M⁻¹ X for X (nv, k)."""
            Y = Minv @ X
            if len(dyn.rows) == 0:
                return Y
            Xj = ev.minv_jt()  # Jr M⁻¹ (m, nv)
            Z = ev.solve_S(Xj @ X)
            return Y - (Xj.T @ Z)

        out[nq: nq + nv, nq: nq + nv] = -mobility(D)
        out[nq: nq + nv, :nq] = -mobility(K @ C)
        return out

    return jac
