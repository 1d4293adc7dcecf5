"""The q-form residual and Newton matrix of the index-3 formulation (:mod:`.index3`), compiled.

Per moving body b, q_b = [r, p] (frame origin, m; Euler parameters), evaluated at the unit
p̂ = p/|p| (as :mod:`.equations` does):

    ω = 2 E(p̂) ṗ,  v_c = ṙ + ω × ρ,  α = 2 E(p̂) p̈,  a_c = r̈ + α × ρ + ω × (ω × ρ)   (ρ = A c̄)
    r_v = [m a_c − F_b;  J α + ω × J ω − n_b]                    (Newton–Euler residual, world)
    R_b = C_bᵀ r_v = [r_v,t;  2 E(p̂)ᵀ (ρ × r_v,t + r_v,r)],     C_b = [[I, −2 [ρ] E], [0, 2 E]]

so that R = M_q q̈ − Q_q(q, q̇, t) with M_q = Cᵀ M_v C and Q_q = Cᵀ (f − M_v Ċ q̇) of
:mod:`.mass` (F_b, n_b: gravity and the force elements, force at the com and moment about it).

Newton matrix of the generalised-α step in the unknown q̈ (q = … + q̈ / β', q̇ = … + q̈ γ'/β',
with c_k = 1/β' = h² β (1 − α_f)/(1 − α_m) and c_d = γ'/β' = h γ (1 − α_f)/(1 − α_m)):

    S = M_q + c_d Cᵀ (D + Bg) C + c_k [Cᵀ K C + Cᵀ (D + Bg) V + 2 λ_n I_p]

with the force elements' K = −∂f/∂x and D = −∂f/∂v (:mod:`.force_jacobians`), the
velocity-dependent inertia terms Bg = ∂[ω × (ω × ρ); ω × J ω]/∂v (centripetal and gyroscopic),
V_b = ∂(C_b q̇_b)/∂q_b at fixed q̇ = [[0, 2 [ρ] E(ṗ) − 2 [ω][ρ] E(p̂)], [0, −2 E(ṗ)]] (the velocities
seen by the dampers change with the configuration), and the Hessian 2 λ_n I of each
normalisation row pᵀp − 1 (λ_n its multiplier). Left out: the Hessians of the joint
equations (Φqᵀλ)_q, the change of C and of the inertia with q under the residual's load —
terms of order c_k × (reaction or inertia load), which only slow the convergence of the
Newton iteration, never change its solution.

With numba the kernels are compiled (cached); without it, and until they are compiled, their numpy twins
(:mod:`.index3_numpy`) run instead (:mod:`.stiff_kernels` chooses).
"""

from __future__ import annotations

import numpy as np

from ._frames import euler_rotation
from .force_jacobians import HAVE_NUMBA, _jit, _skew

__all__ = ["body_kinematics", "residual", "body_blocks", "element_blocks", "HAVE_NUMBA"]


@_jit
def _E(p0, p1, p2, p3):
    E = np.empty((3, 4))
    E[0, 0], E[0, 1], E[0, 2], E[0, 3] = -p1, p0, -p3, p2
    E[1, 0], E[1, 1], E[1, 2], E[1, 3] = -p2, p3, p0, -p1
    E[2, 0], E[2, 1], E[2, 2], E[2, 3] = -p3, -p2, p1, p0
    return E


@_jit
def body_kinematics(q, qd, nmov, q_fixed, com_all, Jb, A, rho, rc, E, Jw, w, vc):
    """Fill the per-body arrays at (q, q̇): A (nb, 3, 3), ρ = A c̄, r_c, E(p̂) (nmov, 3, 4), world
    inertia J (nmov, 3, 3), ω and v_c (nb, 3; zero for fixed bodies)."""
    nb = A.shape[0]
    for b in range(nb):
        if b < nmov:
            o = 7 * b
            r0, r1, r2 = q[o], q[o + 1], q[o + 2]
            e0, e1, e2, e3 = q[o + 3], q[o + 4], q[o + 5], q[o + 6]
        else:
            o = 7 * (b - nmov)
            r0, r1, r2 = q_fixed[o], q_fixed[o + 1], q_fixed[o + 2]
            e0, e1, e2, e3 = q_fixed[o + 3], q_fixed[o + 4], q_fixed[o + 5], q_fixed[o + 6]
        nrm = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3)
        e0, e1, e2, e3 = e0 / nrm, e1 / nrm, e2 / nrm, e3 / nrm
        euler_rotation(A, b, e0, e1, e2, e3)
        for i in range(3):
            rho[b, i] = A[b, i, 0] * com_all[b, 0] + A[b, i, 1] * com_all[b, 1] + A[b, i, 2] * com_all[b, 2]
        rc[b, 0], rc[b, 1], rc[b, 2] = r0 + rho[b, 0], r1 + rho[b, 1], r2 + rho[b, 2]
        if b >= nmov:
            for i in range(3):
                w[b, i] = 0.0
                vc[b, i] = 0.0
            continue
        Eb = _E(e0, e1, e2, e3)
        E[b] = Eb
        for i in range(3):
            s = 0.0
            for k in range(4):
                s += Eb[i, k] * qd[7 * b + 3 + k]
            w[b, i] = 2.0 * s
        for i in range(3):
            for j in range(3):
                s = 0.0
                for k in range(3):
                    for m in range(3):
                        s += A[b, i, k] * Jb[b, k, m] * A[b, j, m]
                Jw[b, i, j] = s
        w0, w1, w2 = w[b, 0], w[b, 1], w[b, 2]
        p0, p1, p2 = rho[b, 0], rho[b, 1], rho[b, 2]
        vc[b, 0] = qd[7 * b] + w1 * p2 - w2 * p1
        vc[b, 1] = qd[7 * b + 1] + w2 * p0 - w0 * p2
        vc[b, 2] = qd[7 * b + 2] + w0 * p1 - w1 * p0


@_jit
def residual(qdd, nmov, mass, rho, E, Jw, w, F, N, out):
    """R = M_q q̈ − Q_q (nq,) into ``out`` from the filled kinematics and the applied forces F
    (force at the com, N) and N (moment about it, N m), gravity included."""
    for b in range(nmov):
        o = 7 * b
        al = np.zeros(3)
        for i in range(3):
            s = 0.0
            for k in range(4):
                s += E[b, i, k] * qdd[o + 3 + k]
            al[i] = 2.0 * s
        w0, w1, w2 = w[b, 0], w[b, 1], w[b, 2]
        p0, p1, p2 = rho[b, 0], rho[b, 1], rho[b, 2]
        # ω × ρ and ω × (ω × ρ)
        c0, c1, c2 = w1 * p2 - w2 * p1, w2 * p0 - w0 * p2, w0 * p1 - w1 * p0
        cc0, cc1, cc2 = w1 * c2 - w2 * c1, w2 * c0 - w0 * c2, w0 * c1 - w1 * c0
        a0 = qdd[o] + al[1] * p2 - al[2] * p1 + cc0
        a1 = qdd[o + 1] + al[2] * p0 - al[0] * p2 + cc1
        a2 = qdd[o + 2] + al[0] * p1 - al[1] * p0 + cc2
        m = mass[b]
        rt0, rt1, rt2 = m * a0 - F[b, 0], m * a1 - F[b, 1], m * a2 - F[b, 2]
        jw = np.zeros(3)
        ja = np.zeros(3)
        for i in range(3):
            for j in range(3):
                jw[i] += Jw[b, i, j] * w[b, j]
                ja[i] += Jw[b, i, j] * al[j]
        rr0 = ja[0] + w1 * jw[2] - w2 * jw[1] - N[b, 0]
        rr1 = ja[1] + w2 * jw[0] - w0 * jw[2] - N[b, 1]
        rr2 = ja[2] + w0 * jw[1] - w1 * jw[0] - N[b, 2]
        # moment about the frame origin: ρ × r_t + r_r
        n0 = p1 * rt2 - p2 * rt1 + rr0
        n1 = p2 * rt0 - p0 * rt2 + rr1
        n2 = p0 * rt1 - p1 * rt0 + rr2
        out[o], out[o + 1], out[o + 2] = rt0, rt1, rt2
        for k in range(4):
            out[o + 3 + k] = 2.0 * (E[b, 0, k] * n0 + E[b, 1, k] * n1 + E[b, 2, k] * n2)


@_jit
def _C(rho_b, E_b):
    """C_b (6, 7) = [[I, −2 [ρ] E], [0, 2 E]]."""
    C = np.zeros((6, 7))
    C[0, 0] = C[1, 1] = C[2, 2] = 1.0
    R = _skew(rho_b[0], rho_b[1], rho_b[2])
    for i in range(3):
        for k in range(4):
            s = 0.0
            for j in range(3):
                s += R[i, j] * E_b[j, k]
            C[i, 3 + k] = -2.0 * s
            C[3 + i, 3 + k] = 2.0 * E_b[i, k]
    return C


@_jit
def _V(q, qd, b, rho_b, E_b, w_b):
    """V_b (6, 7) = ∂(C_b q̇_b)/∂q_b at fixed q̇."""
    o = 7 * b
    Ed = _E(qd[o + 3], qd[o + 4], qd[o + 5], qd[o + 6])
    R = _skew(rho_b[0], rho_b[1], rho_b[2])
    W = _skew(w_b[0], w_b[1], w_b[2])
    WR = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            for k in range(3):
                WR[i, j] += W[i, k] * R[k, j]
    V = np.zeros((6, 7))
    for i in range(3):
        for k in range(4):
            s1 = 0.0
            s2 = 0.0
            for j in range(3):
                s1 += R[i, j] * Ed[j, k]
                s2 += WR[i, j] * E_b[j, k]
            V[i, 3 + k] = 2.0 * s1 - 2.0 * s2
            V[3 + i, 3 + k] = -2.0 * Ed[i, k]
    return V


@_jit
def _ctm(Cj, M, Ck):
    """Cjᵀ M Ck for Cj (6, 7), M (6, 6), Ck (6, 7)."""
    T = np.zeros((6, 7))
    for i in range(6):
        for l in range(6):
            m = M[i, l]
            if m != 0.0:
                for c in range(7):
                    T[i, c] += m * Ck[l, c]
    out = np.zeros((7, 7))
    for r in range(7):
        for i in range(6):
            cj = Cj[i, r]
            if cj != 0.0:
                for c in range(7):
                    out[r, c] += cj * T[i, c]
    return out


@_jit
def body_blocks(q, qd, nmov, mass, rho, E, Jw, w, lam_norm, c_k, c_d, Cs, Vs, diag):
    """The per-body 7 × 7 blocks of the Newton matrix S into ``diag`` (nmov, 7, 7) (see the
    module docstring), and C_b, V_b into ``Cs``, ``Vs`` (nmov, 6, 7) for :func:`element_blocks`.
    c_k = c_d = 0 gives M_q."""
    for b in range(nmov):
        Cs[b] = _C(rho[b], E[b])
        Vs[b] = _V(q, qd, b, rho[b], E[b], w[b])
    for b in range(nmov):
        Mv = np.zeros((6, 6))
        Mv[0, 0] = Mv[1, 1] = Mv[2, 2] = mass[b]
        for i in range(3):
            for j in range(3):
                Mv[3 + i, 3 + j] = Jw[b, i, j]
        blk = _ctm(Cs[b], Mv, Cs[b])
        if c_k != 0.0 or c_d != 0.0:
            # Bg: centripetal m ∂(ω × (ω × ρ))/∂ω and gyroscopic ∂(ω × J ω)/∂ω = [ω] J − [J ω]
            Bg = np.zeros((6, 6))
            w0, w1, w2 = w[b, 0], w[b, 1], w[b, 2]
            r = rho[b]
            wr = w0 * r[0] + w1 * r[1] + w2 * r[2]
            wv = (w0, w1, w2)
            for i in range(3):
                for j in range(3):
                    Bg[i, 3 + j] = mass[b] * ((wr if i == j else 0.0) + wv[i] * r[j] - 2.0 * r[i] * wv[j])
            jw = np.zeros(3)
            for i in range(3):
                for j in range(3):
                    jw[i] += Jw[b, i, j] * wv[j]
            Wx = _skew(w0, w1, w2)
            JWx = _skew(jw[0], jw[1], jw[2])
            for i in range(3):
                for j in range(3):
                    s = 0.0
                    for k in range(3):
                        s += Wx[i, k] * Jw[b, k, j]
                    Bg[3 + i, 3 + j] = s - JWx[i, j]
            blk += c_d * _ctm(Cs[b], Bg, Cs[b]) + c_k * _ctm(Cs[b], Bg, Vs[b])
            for k in range(4):
                blk[3 + k, 3 + k] += c_k * 2.0 * lam_norm[b]
        diag[b] = blk


@_jit
def element_blocks(nmov, c_k, c_d, Cs, Vs, el_a, el_b, Kb, Db, offd):
    """The force elements' 7 × 7 blocks C_jᵀ [c_k K_jk C_k + D_jk (c_d C_k + c_k V_k)] into
    ``offd`` (n, 2, 2, 7, 7) for the blocks (el_a, el_b, Kb, Db) of
    :meth:`.forces.ForceElements.tangent_blocks` (blocks touching a fixed body are left 0)."""
    for e in range(el_a.shape[0]):
        for j in range(2):
            bj = el_a[e] if j == 0 else el_b[e]
            if bj >= nmov:
                continue
            for k in range(2):
                bk = el_a[e] if k == 0 else el_b[e]
                if bk >= nmov:
                    continue
                X = np.zeros((6, 7))
                for i in range(6):
                    for l in range(6):
                        kv = Kb[e, j, k, i, l]
                        dv = Db[e, j, k, i, l]
                        if kv != 0.0 or dv != 0.0:
                            for c in range(7):
                                X[i, c] += c_k * kv * Cs[bk, l, c] + dv * (c_d * Cs[bk, l, c] + c_k * Vs[bk, l, c])
                for r in range(7):
                    for c in range(7):
                        offd[e, j, k, r, c] = 0.0
                    for i in range(6):
                        cj = Cs[bj, i, r]
                        if cj != 0.0:
                            for c in range(7):
                                offd[e, j, k, r, c] += cj * X[i, c]


if HAVE_NUMBA:
    from . import _kernels as _K
    from ..numba_cache import numba  # its cache folder named by the kernel sources

    @numba.njit(cache=True, nogil=True)
    def applied_forces(A, rc, w, vc, F, N, nmov, grav_f, sp_ia, sp_ib, sp_da, sp_db, sp_k, sp_c, sp_l0, sp_F0,
                       ax_ia, ax_ib, ax_Ri, ax_Rj, ax_k, ax_c, ax_tau0, ax_expr, ax_ref, ax_tau,
                       bl_ia, bl_ib, bl_Ri, bl_Rj, bl_k, bl_c, ln_ia, ln_ib, ln_di, ln_Ri, ln_dj, ln_F,
                       bu_ia, bu_ib, bu_da, bu_db, bu_Ra, bu_Rb, bu_Kt, bu_Ct, bu_Kr, bu_Cr):
        """Gravity and the force elements into F, N (zeroed first) with the kernels of the
        compiled right-hand side (:mod:`._kernels`); returns the non-conservative power (W)."""
        F[:] = 0.0
        N[:] = 0.0
        for b in range(nmov):
            for i in range(3):
                F[b, i] = grav_f[b, i]
        power = _K.spring_forces(A, rc, w, vc, F, N, sp_ia, sp_ib, sp_da, sp_db, sp_k, sp_c, sp_l0, sp_F0)
        power += _K.axis_forces(A, w, N, ax_ia, ax_ib, ax_Ri, ax_Rj, ax_k, ax_c, ax_tau0, ax_expr, ax_ref, ax_tau)
        power += _K.ball_forces(A, w, N, bl_ia, bl_ib, bl_Ri, bl_Rj, bl_k, bl_c)
        power += _K.line_forces(A, rc, w, vc, F, N, ln_ia, ln_ib, ln_di, ln_Ri, ln_dj, ln_F)
        power += _K.bushing_forces(A, rc, w, vc, F, N, bu_ia, bu_ib, bu_da, bu_db, bu_Ra, bu_Rb, bu_Kt, bu_Ct,
                                   bu_Kr, bu_Cr)
        return power
