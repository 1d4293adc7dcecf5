"""Tangent stiffness and damping of the force elements, in closed form.

For the generalized forces f_b = [F_b; N_b] of :mod:`.forces` (force at the centre of mass
and moment about it, world axes, N and N m) this module gives, per element, the exact
derivatives

    K = −∂f/∂x     (stiffness, N/m, N, N m/rad)        D = −∂f/∂v     (damping, N s/m, N m s)

with respect to the virtual displacement x_b = [δr_c, δθ] of each of the element's two
bodies (com displacement and small rotation, world axes: A → exp([δθ]) A) and to their
velocities v_b = [v_c, ω] (world). The blocks are (n, 2, 2, 6, 6): element, body row (0 the
first part a, 1 the second part b), body column, 6 × 6. K includes the geometric terms
(the turning of the spring's direction, lever arms and frame axes under load) and the
variation of the damping forces with the configuration at fixed velocities, so it is not
symmetric in general.

Equations (σ_a = −1, σ_b = +1, s_j the arm of the element's point from body j's com,
G_j = [I, −[s_j]], ũ the cross-product matrix):

``spring-damper``   d = P_b − P_a, l = |d|, u = d/l, v_r = v_Pb − v_Pa, l̇ = u·v_r,
                    f = −k (l − l0) − c l̇ + F0, F = f u on b at P_b, −F on a at P_a.
                    ∂l/∂x_k = σ_k uᵀ G_k, ∂u/∂x_k = σ_k (I − u uᵀ) G_k / l,
                    ∂l̇/∂x_k = σ_k (v_rᵀ (I − u uᵀ) G_k / l − uᵀ [0, [ω_k][s_k]]),
                    ∂f_j/∂x_k = σ_j G_jᵀ ∂F/∂x_k + δ_jk σ_j [[0, 0], [0, [F][s_j]]],
                    D_jk = c σ_j σ_k G_jᵀ u uᵀ G_k.
``rotational-spring-damper`` on an axis joint: θ = atan2(Y_i·X_j, X_i·X_j), τ = −k θ − c θ̇ + τ0
                    (or a ``torque`` expression τ(t, θ, θ̇), with k = −∂τ/∂θ, c = −∂τ/∂θ̇
                    from its sympy derivatives), T = τ Z_i on b, −T on a;
                    ∂θ/∂θ_b = −∂θ/∂θ_a = g = [cos (X_j × Y_i) − sin (X_j × X_i)] / (cos² + sin²),
                    ∂θ̇/∂θ_a = Z_i × (ω_b − ω_a), ∂Z_i/∂θ_a = −[Z_i].
``rotational-spring-damper`` 3-D: φ_w = W_i φ, T = −k φ_w − c (ω_b − ω_a);
                    ∂φ_w/∂θ_b = J_l⁻¹(φ_w), ∂φ_w/∂θ_a = −[φ_w] − J_l⁻¹(φ_w),
                    J_l⁻¹(φ) = I − ½ [φ] + c(θ) [φ]², c = 1/θ² − (1 + cos θ)/(2 θ sin θ).
``bushing``         in frame a's axes W_a: F_l = −K_t d − C_t ḋ, T_l = −J_l⁻ᵀ(φ) K_r φ − C_r ω_r,
                    d = W_aᵀ (P_b − P_a), ḋ = W_aᵀ (v_Pb − v_Pa − ω_a × (P_b − P_a)),
                    ω_r = W_aᵀ (ω_b − ω_a); F_w = W_a F_l, T_w = W_a T_l on b at P_b,
                    −F_w, −T_w on a at P_b; δ(W_aᵀ y) = W_aᵀ (δy + [y] δθ_a),
                    δφ = J_l⁻¹(φ) W_aᵀ (δθ_b − δθ_a) and ∂(J_l⁻ᵀ K_r φ)/∂φ in closed form.

Gravity is constant (no tangent). Forces along a joint axis from expressions (``force``
elements) are not included (their derivative is left to the Newton iteration).

The kernels are plain loops over elements, compiled by numba when it is available (cached)
and run as Python otherwise; they are the implementation used by the index-3 Newton matrix
(:mod:`.index3`), :meth:`.forces.ForceElements.tangent` and the stiffness estimate
(:mod:`.stiffness`) once compiled; without numba, or before they are compiled, the same
tangents are taken over all elements at once by :mod:`.force_jacobians_numpy` (tests hold the
two equal; :mod:`.stiff_kernels` chooses). The tests check them against finite differences of
:meth:`.forces.ForceElements.evaluate`.
"""

from __future__ import annotations

import math

import numpy as np

from ._frames import HAVE_NUMBA, frame_axes, relative_rotation_vector
from ._frames import jit as _jit

__all__ = ["spring_tangent", "axis_tangent", "ball_tangent", "bushing_tangent", "jl_inverse", "HAVE_NUMBA"]


# ---------------------------------------------------------------------------- small algebra
@_jit
def _skew(a0, a1, a2):
    S = np.zeros((3, 3))
    S[0, 1], S[0, 2] = -a2, a1
    S[1, 0], S[1, 2] = a2, -a0
    S[2, 0], S[2, 1] = -a1, a0
    return S


@_jit
def _mm(A, B):
    n, m = A.shape
    p = B.shape[1]
    C = np.zeros((n, p))
    for i in range(n):
        for k in range(m):
            a = A[i, k]
            if a != 0.0:
                for j in range(p):
                    C[i, j] += a * B[k, j]
    return C


@_jit
def _mt(A):
    n, m = A.shape
    T = np.empty((m, n))
    for i in range(n):
        for j in range(m):
            T[j, i] = A[i, j]
    return T


@_jit
def _arm(A, b, d):
    """A_b d: a body point's arm from the com, world axes."""
    out = np.zeros(3)
    for i in range(3):
        out[i] = A[b, i, 0] * d[0] + A[b, i, 1] * d[1] + A[b, i, 2] * d[2]
    return out


@_jit
def _G(s):
    """[I, −[s]] (3, 6): the velocity of a point at arm s from the com, per body velocity."""
    G = np.zeros((3, 6))
    G[0, 0] = G[1, 1] = G[2, 2] = 1.0
    S = _skew(s[0], s[1], s[2])
    for i in range(3):
        for j in range(3):
            G[i, 3 + j] = -S[i, j]
    return G


@_jit
def _rotvec(Wi, Wj):
    """:func:`._frames.relative_rotation_vector` as an array (3,)."""
    s0, s1, s2 = relative_rotation_vector(Wi, Wj)
    out = np.empty(3)
    out[0], out[1], out[2] = s0, s1, s2
    return out


@_jit
def _c_theta(th):
    """c(θ) = 1/θ² − sin θ / (2θ (1 − cos θ)) and its derivative c'(θ) (series below 0.1 rad)."""
    if th < 0.1:
        t2 = th * th
        c = 1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0 + t2 * t2 * t2 / 1209600.0
        dc = th / 360.0 + th * t2 / 7560.0 + th * t2 * t2 / 201600.0 + th * t2 * t2 * t2 / 5987520.0
        return c, dc
    c = 1.0 / (th * th) - math.sin(th) / (2.0 * th * (1.0 - math.cos(th)))
    dc = -2.0 / (th * th * th) + (th + math.sin(th)) / (2.0 * th * th * (1.0 - math.cos(th)))
    return c, dc


@_jit
def jl_inverse(phi):
    """J_l(φ)⁻¹ = I − ½ [φ] + c(θ) [φ]² (3, 3): δφ = J_l⁻¹ ε for a left perturbation exp([ε]) R."""
    th = math.sqrt(phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2])
    c, _ = _c_theta(th)
    P = _skew(phi[0], phi[1], phi[2])
    P2 = _mm(P, P)
    out = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            out[i, j] = -0.5 * P[i, j] + c * P2[i, j]
        out[i, i] += 1.0
    return out


@_jit
def _grad_jacobian(phi, kr):
    """∂g/∂φ (3, 3) of g(φ) = J_l(φ)⁻ᵀ K φ = y + ½ φ × y + c(θ) φ × (φ × y), y = K φ, K = diag(kr)."""
    th = math.sqrt(phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2])
    c, dc = _c_theta(th)
    y = np.empty(3)
    for i in range(3):
        y[i] = kr[i] * phi[i]
    P = _skew(phi[0], phi[1], phi[2])
    Y = _skew(y[0], y[1], y[2])
    K = np.zeros((3, 3))
    for i in range(3):
        K[i, i] = kr[i]
    PPK = _mm(_mm(P, P), K)
    PK = _mm(P, K)
    py = phi[0] * y[0] + phi[1] * y[1] + phi[2] * y[2]
    # φ × (φ × y)
    pxy = np.array([phi[1] * y[2] - phi[2] * y[1], phi[2] * y[0] - phi[0] * y[2], phi[0] * y[1] - phi[1] * y[0]])
    ppy = np.array([phi[1] * pxy[2] - phi[2] * pxy[1], phi[2] * pxy[0] - phi[0] * pxy[2],
                    phi[0] * pxy[1] - phi[1] * pxy[0]])
    H = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            H[i, j] = K[i, j] + 0.5 * (PK[i, j] - Y[i, j]) + c * (PPK[i, j] + phi[i] * y[j] - 2.0 * y[i] * phi[j])
            if th > 0.0:
                H[i, j] += dc / th * ppy[i] * phi[j]
        H[i, i] += c * py
    return H


@_jit
def _put(blk, e, j, k, r0, c0, M, scale):
    """blk[e, j, k, r0:r0+n, c0:c0+m] += scale M."""
    n, m = M.shape
    for r in range(n):
        for c in range(m):
            blk[e, j, k, r0 + r, c0 + c] += scale * M[r, c]


# ---------------------------------------------------------------------------- elements
@_jit
def spring_tangent(A, rc, w, vc, ia, ib, da, db, k, c, l0, F0, Kb, Db):
    """Translational spring-dampers: fills K, D blocks (n, 2, 2, 6, 6) (see the module docstring)."""
    for e in range(ia.shape[0]):
        body = (ia[e], ib[e])
        s = (_arm(A, ia[e], da[e]), _arm(A, ib[e], db[e]))
        sig = (-1.0, 1.0)
        d = np.empty(3)
        vr = np.empty(3)
        for i in range(3):
            d[i] = rc[body[1], i] + s[1][i] - rc[body[0], i] - s[0][i]
        wb, wa = w[body[1]], w[body[0]]
        xb = np.array([wb[1] * s[1][2] - wb[2] * s[1][1], wb[2] * s[1][0] - wb[0] * s[1][2],
                       wb[0] * s[1][1] - wb[1] * s[1][0]])
        xa = np.array([wa[1] * s[0][2] - wa[2] * s[0][1], wa[2] * s[0][0] - wa[0] * s[0][2],
                       wa[0] * s[0][1] - wa[1] * s[0][0]])
        for i in range(3):
            vr[i] = vc[body[1], i] + xb[i] - vc[body[0], i] - xa[i]
        l = math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        G = (_G(s[0]), _G(s[1]))
        if l == 0.0:  # coincident points: the limit of a zero-length spring, F = −k d − c ḋ
            for j in range(2):
                for kk in range(2):
                    GtG = _mm(_mt(G[j]), G[kk])
                    _put(Kb, e, j, kk, 0, 0, GtG, k[e] * sig[j] * sig[kk])
                    _put(Db, e, j, kk, 0, 0, GtG, c[e] * sig[j] * sig[kk])
            continue
        u = d / l
        ld = u[0] * vr[0] + u[1] * vr[1] + u[2] * vr[2]
        f = -k[e] * (l - l0[e]) - c[e] * ld + F0[e]
        F = f * u
        Pp = np.zeros((3, 3))  # (I − u uᵀ) / l
        for i in range(3):
            for jj in range(3):
                Pp[i, jj] = ((1.0 if i == jj else 0.0) - u[i] * u[jj]) / l
        vP = np.zeros(3)  # v_rᵀ (I − u uᵀ) / l
        for jj in range(3):
            for i in range(3):
                vP[jj] += vr[i] * Pp[i, jj]
        FS = [_mm(_skew(F[0], F[1], F[2]), _skew(s[j][0], s[j][1], s[j][2])) for j in range(2)]
        for kk in range(2):
            Gk = G[kk]
            WS = _mm(_skew(w[body[kk], 0], w[body[kk], 1], w[body[kk], 2]), _skew(s[kk][0], s[kk][1], s[kk][2]))
            # ∂f/∂x_k (6,) and ∂F/∂x_k (3, 6)
            dfx = np.zeros(6)
            for col in range(6):
                a1 = 0.0
                a2 = 0.0
                for i in range(3):
                    a1 += u[i] * Gk[i, col]
                    a2 += vP[i] * Gk[i, col]
                if col >= 3:
                    for i in range(3):
                        a2 -= u[i] * WS[i, col - 3]
                dfx[col] = sig[kk] * (-k[e] * a1 - c[e] * a2)
            dFx = np.zeros((3, 6))
            PG = _mm(Pp, Gk)
            for i in range(3):
                for col in range(6):
                    dFx[i, col] = u[i] * dfx[col] + f * sig[kk] * PG[i, col]
            uG = np.zeros(6)
            for col in range(6):
                for i in range(3):
                    uG[col] += u[i] * Gk[i, col]
            for j in range(2):
                _put(Kb, e, j, kk, 0, 0, _mm(_mt(G[j]), dFx), -sig[j])
                if j == kk:
                    _put(Kb, e, j, kk, 3, 3, FS[j], -sig[j])
                uGj = np.zeros(6)
                for col in range(6):
                    for i in range(3):
                        uGj[col] += u[i] * G[j][i, col]
                for r in range(6):
                    for col in range(6):
                        Db[e, j, kk, r, col] += c[e] * sig[j] * sig[kk] * uGj[r] * uG[col]


@_jit
def axis_tangent(A, w, ia, ib, Ri, Rj, tau, kk_, cc_, Kb, Db):
    """Torques τ Z_i about a joint axis (rotational spring-dampers, torque expressions) with
    τ its current value, kk_ = −∂τ/∂θ and cc_ = −∂τ/∂θ̇: fills K, D blocks (rotational parts)."""
    for e in range(ia.shape[0]):
        a, b = ia[e], ib[e]
        Wi = frame_axes(A, a, Ri[e])
        Wj = frame_axes(A, b, Rj[e])
        Xi, Yi, Z = Wi[:, 0].copy(), Wi[:, 1].copy(), Wi[:, 2].copy()
        Xj = Wj[:, 0].copy()
        cs = Xi[0] * Xj[0] + Xi[1] * Xj[1] + Xi[2] * Xj[2]
        sn = Yi[0] * Xj[0] + Yi[1] * Xj[1] + Yi[2] * Xj[2]
        n2 = cs * cs + sn * sn
        XY = np.array([Xj[1] * Yi[2] - Xj[2] * Yi[1], Xj[2] * Yi[0] - Xj[0] * Yi[2], Xj[0] * Yi[1] - Xj[1] * Yi[0]])
        XX = np.array([Xj[1] * Xi[2] - Xj[2] * Xi[1], Xj[2] * Xi[0] - Xj[0] * Xi[2], Xj[0] * Xi[1] - Xj[1] * Xi[0]])
        g = (cs * XY - sn * XX) / n2
        dw = np.empty(3)
        for i in range(3):
            dw[i] = w[b, i] - w[a, i]
        zxw = np.array([Z[1] * dw[2] - Z[2] * dw[1], Z[2] * dw[0] - Z[0] * dw[2], Z[0] * dw[1] - Z[1] * dw[0]])
        # ∂T/∂θ_b = −k z gᵀ ; ∂T/∂θ_a = z (k g − c z × Δω)ᵀ − τ [z]
        Zs = _skew(Z[0], Z[1], Z[2])
        for i in range(3):
            for j in range(3):
                dTb = -kk_[e] * Z[i] * g[j]
                dTa = Z[i] * (kk_[e] * g[j] - cc_[e] * zxw[j]) - tau[e] * Zs[i, j]
                dDb = -cc_[e] * Z[i] * Z[j]
                # rows: body a gets −T (σ_a = −1), body b gets T; K = −∂f/∂x
                Kb[e, 1, 1, 3 + i, 3 + j] -= dTb
                Kb[e, 1, 0, 3 + i, 3 + j] -= dTa
                Kb[e, 0, 1, 3 + i, 3 + j] += dTb
                Kb[e, 0, 0, 3 + i, 3 + j] += dTa
                Db[e, 1, 1, 3 + i, 3 + j] -= dDb
                Db[e, 1, 0, 3 + i, 3 + j] += dDb
                Db[e, 0, 1, 3 + i, 3 + j] += dDb
                Db[e, 0, 0, 3 + i, 3 + j] -= dDb


@_jit
def ball_tangent(A, ia, ib, Ri, Rj, k, c, Kb, Db):
    """3-D rotational spring-dampers T = −k φ_w − c (ω_b − ω_a): fills K, D blocks."""
    for e in range(ia.shape[0]):
        a, b = ia[e], ib[e]
        Wi = frame_axes(A, a, Ri[e])
        Wj = frame_axes(A, b, Rj[e])
        phi = _rotvec(Wi, Wj)
        pw = np.zeros(3)
        for i in range(3):
            pw[i] = Wi[i, 0] * phi[0] + Wi[i, 1] * phi[1] + Wi[i, 2] * phi[2]
        Jinv = jl_inverse(pw)
        P = _skew(pw[0], pw[1], pw[2])
        for i in range(3):
            for j in range(3):
                dTb = -k[e] * Jinv[i, j]
                dTa = k[e] * (P[i, j] + Jinv[i, j])
                Kb[e, 1, 1, 3 + i, 3 + j] -= dTb
                Kb[e, 1, 0, 3 + i, 3 + j] -= dTa
                Kb[e, 0, 1, 3 + i, 3 + j] += dTb
                Kb[e, 0, 0, 3 + i, 3 + j] += dTa
            Db[e, 1, 1, 3 + i, 3 + i] += c[e]
            Db[e, 1, 0, 3 + i, 3 + i] -= c[e]
            Db[e, 0, 1, 3 + i, 3 + i] -= c[e]
            Db[e, 0, 0, 3 + i, 3 + i] += c[e]


@_jit
def bushing_tangent(A, rc, w, vc, ia, ib, da, db, Ra, Rb, Kt, Ct, Kr, Cr, Kb, Db):
    """6-D bushings (see the module docstring): fills K, D blocks."""
    for e in range(ia.shape[0]):
        a, b = ia[e], ib[e]
        Wa = frame_axes(A, a, Ra[e])
        Wb = frame_axes(A, b, Rb[e])
        WaT = _mt(Wa)
        sa = _arm(A, a, da[e])
        sb = _arm(A, b, db[e])
        dw = np.empty(3)
        ea = np.empty(3)
        for i in range(3):
            dw[i] = rc[b, i] + sb[i] - rc[a, i] - sa[i]
            ea[i] = dw[i] + sa[i]
        wa = w[a]
        wb = w[b]
        Wsa = _skew(wa[0], wa[1], wa[2])
        Wsb = _skew(wb[0], wb[1], wb[2])
        Sa = _skew(sa[0], sa[1], sa[2])
        Sb = _skew(sb[0], sb[1], sb[2])
        Ea = _skew(ea[0], ea[1], ea[2])
        # relative point velocity seen from frame a
        vw = np.empty(3)
        for i in range(3):
            vw[i] = vc[b, i] - vc[a, i]
            for j in range(3):
                vw[i] += -Sb[i, j] * wb[j] + Sa[i, j] * wa[j] - Wsa[i, j] * dw[j]
        d = _mm(WaT, dw.reshape(3, 1)).reshape(3)
        dd = _mm(WaT, vw.reshape(3, 1)).reshape(3)
        dwr = np.empty(3)
        for i in range(3):
            dwr[i] = wb[i] - wa[i]
        wr = _mm(WaT, dwr.reshape(3, 1)).reshape(3)
        phi = _rotvec(Wa, Wb)
        th = math.sqrt(phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2])
        cth, _ = _c_theta(th)
        y = np.empty(3)
        for i in range(3):
            y[i] = Kr[e, i] * phi[i]
        pxy = np.array([phi[1] * y[2] - phi[2] * y[1], phi[2] * y[0] - phi[0] * y[2], phi[0] * y[1] - phi[1] * y[0]])
        ppy = np.array([phi[1] * pxy[2] - phi[2] * pxy[1], phi[2] * pxy[0] - phi[0] * pxy[2],
                        phi[0] * pxy[1] - phi[1] * pxy[0]])
        Fl = np.empty(3)
        Tl = np.empty(3)
        for i in range(3):
            Fl[i] = -Kt[e, i] * d[i] - Ct[e, i] * dd[i]
            Tl[i] = -(y[i] + 0.5 * pxy[i] + cth * ppy[i]) - Cr[e, i] * wr[i]
        Fw = _mm(Wa, Fl.reshape(3, 1)).reshape(3)
        Tw = _mm(Wa, Tl.reshape(3, 1)).reshape(3)
        Fs = _skew(Fw[0], Fw[1], Fw[2])
        Ts = _skew(Tw[0], Tw[1], Tw[2])
        # configuration derivatives, per body k (0: a, 1: b), each (3, 6)
        for kk in range(2):
            ddw = np.zeros((3, 6))  # ∂dw/∂x_k
            dvw = np.zeros((3, 6))  # ∂vw/∂x_k at fixed velocities
            dth = np.zeros((3, 6))  # ∂θ_k/∂x_k selector
            for i in range(3):
                dth[i, 3 + i] = 1.0
            if kk == 1:
                for i in range(3):
                    ddw[i, i] = 1.0
                    for j in range(3):
                        ddw[i, 3 + j] = -Sb[i, j]
                WS = _mm(Wsb, Sb)
                for i in range(3):
                    for j in range(3):
                        dvw[i, 3 + j] = -WS[i, j]
            else:
                for i in range(3):
                    ddw[i, i] = -1.0
                    for j in range(3):
                        ddw[i, 3 + j] = Sa[i, j]
                WS = _mm(Wsa, Sa)
                for i in range(3):
                    for j in range(3):
                        dvw[i, 3 + j] = WS[i, j]
            tmp = _mm(Wsa, ddw)
            for i in range(3):
                for col in range(6):
                    dvw[i, col] -= tmp[i, col]
            # δd = W_aᵀ (δdw + [dw] δθ_a), δḋ = W_aᵀ (δvw + [vw] δθ_a)
            Xd = ddw.copy()
            Xv = dvw.copy()
            if kk == 0:
                Dws = _skew(dw[0], dw[1], dw[2])
                Vws = _skew(vw[0], vw[1], vw[2])
                for i in range(3):
                    for j in range(3):
                        Xd[i, 3 + j] += Dws[i, j]
                        Xv[i, 3 + j] += Vws[i, j]
            dd_ = _mm(WaT, Xd)
            ddd = _mm(WaT, Xv)
            dFl = np.zeros((3, 6))
            for i in range(3):
                for col in range(6):
                    dFl[i, col] = -Kt[e, i] * dd_[i, col] - Ct[e, i] * ddd[i, col]
            dFw = _mm(Wa, dFl)
            # δφ = J_l⁻¹(φ) W_aᵀ (δθ_b − δθ_a); δω_r = W_aᵀ [Δω] δθ_a
            Jinv = jl_inverse(phi)
            H = _grad_jacobian(phi, Kr[e])
            dphi = _mm(_mm(Jinv, WaT), dth)
            sg = 1.0 if kk == 1 else -1.0
            dTl = np.zeros((3, 6))
            Hd = _mm(H, dphi)
            for i in range(3):
                for col in range(6):
                    dTl[i, col] = -sg * Hd[i, col]
            if kk == 0:
                Dw = _skew(dwr[0], dwr[1], dwr[2])
                dwr_x = _mm(WaT, Dw)
                for i in range(3):
                    for j in range(3):
                        dTl[i, 3 + j] -= Cr[e, i] * dwr_x[i, j]
            dTw = _mm(Wa, dTl)
            if kk == 0:
                for i in range(3):
                    for j in range(3):
                        dFw[i, 3 + j] -= Fs[i, j]
                        dTw[i, 3 + j] -= Ts[i, j]
            # generalized forces: b: [F; s_b × F + T], a: [−F; −e_a × F − T]
            fb = np.zeros((6, 6))
            fa = np.zeros((6, 6))
            SbdF = _mm(Sb, dFw)
            EadF = _mm(Ea, dFw)
            dea = np.zeros((3, 6))  # ∂e_a/∂x_k, e_a = rc_b + s_b − rc_a
            if kk == 1:
                for i in range(3):
                    dea[i, i] = 1.0
                    for j in range(3):
                        dea[i, 3 + j] = -Sb[i, j]
            else:
                for i in range(3):
                    dea[i, i] = -1.0
            Fdea = _mm(Fs, dea)
            for i in range(3):
                for col in range(6):
                    fb[i, col] = dFw[i, col]
                    fa[i, col] = -dFw[i, col]
                    fb[3 + i, col] = SbdF[i, col] + dTw[i, col]
                    fa[3 + i, col] = -(-Fdea[i, col] + EadF[i, col]) - dTw[i, col]
            if kk == 1:
                FSb = _mm(Fs, Sb)
                for i in range(3):
                    for j in range(3):
                        fb[3 + i, 3 + j] += FSb[i, j]
            for r in range(6):
                for col in range(6):
                    Kb[e, 1, kk, r, col] -= fb[r, col]
                    Kb[e, 0, kk, r, col] -= fa[r, col]
        # damping: ∂vw/∂v_b = [I, −[s_b]], ∂vw/∂v_a = [−I, [e_a]]
        CtM = np.zeros((3, 3))
        CrM = np.zeros((3, 3))
        for i in range(3):
            for j in range(3):
                for m in range(3):
                    CtM[i, j] += Wa[i, m] * Ct[e, m] * Wa[j, m]
                    CrM[i, j] += Wa[i, m] * Cr[e, m] * Wa[j, m]
        for kk in range(2):
            dv = np.zeros((3, 6))
            if kk == 1:
                for i in range(3):
                    dv[i, i] = 1.0
                    for j in range(3):
                        dv[i, 3 + j] = -Sb[i, j]
            else:
                for i in range(3):
                    dv[i, i] = -1.0
                    for j in range(3):
                        dv[i, 3 + j] = Ea[i, j]
            dF = _mm(CtM, dv)  # −∂F_w/∂v_k
            sg = 1.0 if kk == 1 else -1.0
            dT = np.zeros((3, 6))  # −∂T_w/∂v_k
            for i in range(3):
                for j in range(3):
                    dT[i, 3 + j] = sg * CrM[i, j]
            SbdF = _mm(Sb, dF)
            EadF = _mm(Ea, dF)
            for i in range(3):
                for col in range(6):
                    Db[e, 1, kk, i, col] += dF[i, col]
                    Db[e, 1, kk, 3 + i, col] += SbdF[i, col] + dT[i, col]
                    Db[e, 0, kk, i, col] -= dF[i, col]
                    Db[e, 0, kk, 3 + i, col] -= EadF[i, col] + dT[i, col]
