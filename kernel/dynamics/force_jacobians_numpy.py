"""The force elements' tangent stiffness and damping of :mod:`.force_jacobians`, vectorised over the elements.

The same equations (:mod:`.force_jacobians` states them), arrays and signatures as the kernels ``spring_tangent``,
``axis_tangent``, ``ball_tangent`` and ``bushing_tangent``, for Python without numba (FreeCAD's interpreter), where
the kernels' loops run one element and one entry at a time (on the flyball governor's index-3 run the springs'
were half of its 1.8 s once the index-3 kernels were vectorised, :mod:`.index3_numpy`), and for a run whose kernels
are not compiled yet, which would otherwise wait for numba (:mod:`.stiff_kernels`). Used by
:meth:`.forces.ForceElements.tangent_blocks` through :mod:`.stiff_kernels`; equal to the kernels to round-off.

Units: m, N, N/m, N s/m; world axes. Blocks (n, 2, 2, 6, 6): element, body row (0 the first part), body column,
[com displacement, rotation] × [com velocity, angular velocity].
"""

from __future__ import annotations

import numpy as np

from .mass import cross, rotation_vector, skew

__all__ = ["spring_tangent", "axis_tangent", "ball_tangent", "bushing_tangent", "jl_inverse"]

#: σ_j of the element's two bodies: −1 for the first part a, +1 for the second b
SIGN = np.array([-1.0, 1.0])


def spring_tangent(A, rc, w, vc, ia, ib, da, db, k, c, l0, F0, Kb, Db):
    """Translational spring-dampers: adds their K, D blocks (n, 2, 2, 6, 6) into ``Kb``, ``Db`` (see
    :mod:`.force_jacobians`)."""
    n = len(ia)
    if not n:
        return
    body = np.stack([ia, ib], 1)  # (n, 2)
    s = np.stack([np.einsum("eij,ej->ei", A[ia], da), np.einsum("eij,ej->ei", A[ib], db)], 1)  # arms (n, 2, 3)
    P = rc[body] + s
    d = P[:, 1] - P[:, 0]
    vP = vc[body] + cross(w[body], s)
    vr = vP[:, 1] - vP[:, 0]
    G = np.zeros((n, 2, 3, 6))
    G[:, :, :, :3] = np.eye(3)
    G[:, :, :, 3:] = -skew(s)
    Gt = np.swapaxes(G, 2, 3)  # (n, 2, 6, 3)
    sig2 = SIGN[:, None] * SIGN[None, :]  # σ_j σ_k (2, 2)
    l = np.linalg.norm(d, axis=1)
    point = l == 0.0  # coincident points: the limit of a zero-length spring, F = −k d − c ḋ
    if np.any(point):
        GtG = np.einsum("ejra,ekac->ejkrc", Gt[point], G[point])
        Kb[point] += k[point, None, None, None, None] * sig2[None, :, :, None, None] * GtG
        Db[point] += c[point, None, None, None, None] * sig2[None, :, :, None, None] * GtG
    line = ~point
    if not np.any(line):
        return
    G, Gt, s, body = G[line], Gt[line], s[line], body[line]
    k, c, l0, F0, l, d, vr = k[line], c[line], l0[line], F0[line], l[line], d[line], vr[line]
    u = d / l[:, None]
    f = -k * (l - l0) - c * np.einsum("ei,ei->e", u, vr) + F0
    Pp = (np.eye(3) - u[:, :, None] * u[:, None, :]) / l[:, None, None]  # (I − u uᵀ) / l
    vPp = np.einsum("ei,eij->ej", vr, Pp)
    uG = np.einsum("ei,ekic->ekc", u, G)  # uᵀ G_k (n, 2, 6)
    a2 = np.einsum("ei,ekic->ekc", vPp, G)
    WS = skew(w[body]) @ skew(s)  # [ω_k][s_k] (n, 2, 3, 3)
    a2[:, :, 3:] -= np.einsum("ei,ekij->ekj", u, WS)
    dfx = SIGN[None, :, None] * (-k[:, None, None] * uG - c[:, None, None] * a2)  # ∂f/∂x_k (n, 2, 6)
    dFx = u[:, None, :, None] * dfx[:, :, None, :] + (f[:, None, None, None] * SIGN[None, :, None, None]
                                                      * np.einsum("eij,ekjc->ekic", Pp, G))  # ∂F/∂x_k (n, 2, 3, 6)
    K = -SIGN[None, :, None, None, None] * np.einsum("ejri,ekic->ejkrc", Gt, dFx)
    FS = skew(f[:, None] * u)[:, None] @ skew(s)  # [F][s_j] (n, 2, 3, 3)
    for j in range(2):
        K[:, j, j, 3:, 3:] -= SIGN[j] * FS[:, j]
    Kb[line] += K
    Db[line] += c[:, None, None, None, None] * sig2[None, :, :, None, None] * uG[:, :, None, :, None] * \
        uG[:, None, :, None, :]


def _c_theta(th):
    """c(θ) = 1/θ² − sin θ / (2θ (1 − cos θ)) and c'(θ) per element (series below 0.1 rad, as the kernel)."""
    t2 = th * th
    small = th < 0.1
    ts = np.where(small, 1.0, th)
    c = np.where(small, 1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0 + t2 * t2 * t2 / 1209600.0,
                 1.0 / ts ** 2 - np.sin(ts) / (2.0 * ts * (1.0 - np.cos(ts))))
    dc = np.where(small, th / 360.0 + th * t2 / 7560.0 + th * t2 * t2 / 201600.0 + th * t2 * t2 * t2 / 5987520.0,
                  -2.0 / ts ** 3 + (ts + np.sin(ts)) / (2.0 * ts * ts * (1.0 - np.cos(ts))))
    return c, dc


def jl_inverse(phi):
    """J_l(φ)⁻¹ = I − ½ [φ] + c(θ) [φ]² (n, 3, 3) of rotation vectors φ (n, 3)."""
    c, _ = _c_theta(np.linalg.norm(phi, axis=1))
    P = skew(phi)
    return np.eye(3) - 0.5 * P + c[:, None, None] * (P @ P)


def _grad_jacobian(phi, kr):
    """∂g/∂φ (n, 3, 3) of g(φ) = J_l(φ)⁻ᵀ K φ, K = diag(kr) (n, 3): the kernel's ``_grad_jacobian``."""
    th = np.linalg.norm(phi, axis=1)
    c, dc = _c_theta(th)
    y = kr * phi
    P, K = skew(phi), kr[:, :, None] * np.eye(3)
    ppy = cross(phi, cross(phi, y))
    H = K + 0.5 * (P @ K - skew(y)) + c[:, None, None] * (P @ P @ K + phi[:, :, None] * y[:, None, :]
                                                          - 2.0 * y[:, :, None] * phi[:, None, :])
    H += np.where(th > 0.0, dc / np.where(th > 0.0, th, 1.0), 0.0)[:, None, None] * ppy[:, :, None] * phi[:, None, :]
    H += (c * np.einsum("ei,ei->e", phi, y))[:, None, None] * np.eye(3)
    return H


def _add_rotational(Kb, Db, dTa, dTb, dDb):
    """Add a torque pair's blocks: T on b, −T on a, ``dTx`` = ∂T/∂θ_x and ``dDb`` = ∂T/∂ω_b (n, 3, 3)."""
    Kb[:, 1, 1, 3:, 3:] -= dTb
    Kb[:, 1, 0, 3:, 3:] -= dTa
    Kb[:, 0, 1, 3:, 3:] += dTb
    Kb[:, 0, 0, 3:, 3:] += dTa
    Db[:, 1, 1, 3:, 3:] -= dDb
    Db[:, 1, 0, 3:, 3:] += dDb
    Db[:, 0, 1, 3:, 3:] += dDb
    Db[:, 0, 0, 3:, 3:] -= dDb


def axis_tangent(A, w, ia, ib, Ri, Rj, tau, kk_, cc_, Kb, Db):
    """Torques τ Z_i about joint axes: adds their K, D blocks (rotational parts), as the kernel's ``axis_tangent``
    (τ its current value (N m), ``kk_`` = −∂τ/∂θ, ``cc_`` = −∂τ/∂θ̇)."""
    if not len(ia):
        return
    Wi, Wj = A[ia] @ Ri, A[ib] @ Rj
    Xi, Yi, Z, Xj = Wi[:, :, 0], Wi[:, :, 1], Wi[:, :, 2], Wj[:, :, 0]
    cs, sn = np.einsum("ei,ei->e", Xi, Xj), np.einsum("ei,ei->e", Yi, Xj)
    g = (cs[:, None] * cross(Xj, Yi) - sn[:, None] * cross(Xj, Xi)) / (cs * cs + sn * sn)[:, None]
    zxw = cross(Z, w[ib] - w[ia])
    ZZ = Z[:, :, None] * Z[:, None, :]
    dTb = -kk_[:, None, None] * Z[:, :, None] * g[:, None, :]
    dTa = Z[:, :, None] * (kk_[:, None] * g - cc_[:, None] * zxw)[:, None, :] - tau[:, None, None] * skew(Z)
    _add_rotational(Kb, Db, dTa, dTb, -cc_[:, None, None] * ZZ)


def ball_tangent(A, ia, ib, Ri, Rj, k, c, Kb, Db):
    """3-D rotational spring-dampers T = −k φ_w − c (ω_b − ω_a): adds their K, D blocks, as the kernel's
    ``ball_tangent``."""
    if not len(ia):
        return
    Wi, Wj = A[ia] @ Ri, A[ib] @ Rj
    pw = np.einsum("eij,ej->ei", Wi, rotation_vector(np.swapaxes(Wi, 1, 2) @ Wj))
    Jinv = jl_inverse(pw)
    kk = k[:, None, None]
    _add_rotational(Kb, Db, kk * (skew(pw) + Jinv), -kk * Jinv, -c[:, None, None] * np.eye(3))


def bushing_tangent(A, rc, w, vc, ia, ib, da, db, Ra, Rb, Kt, Ct, Kr, Cr, Kb, Db):
    """6-D bushings: adds their K, D blocks, as the kernel's ``bushing_tangent`` (the equations are in
    :mod:`.force_jacobians`)."""
    n = len(ia)
    if not n:
        return
    Wa, Wb = A[ia] @ Ra, A[ib] @ Rb
    WaT = np.swapaxes(Wa, 1, 2)
    sa, sb = np.einsum("eij,ej->ei", A[ia], da), np.einsum("eij,ej->ei", A[ib], db)
    dw = rc[ib] + sb - rc[ia] - sa
    ea = dw + sa
    wa, wb = w[ia], w[ib]
    Wsa, Sa, Sb, Ea = skew(wa), skew(sa), skew(sb), skew(ea)
    vw = vc[ib] - vc[ia] - cross(sb, wb) + cross(sa, wa) - cross(wa, dw)  # relative point velocity, world
    d, dd, dwr = np.einsum("eij,ej->ei", WaT, dw), np.einsum("eij,ej->ei", WaT, vw), wb - wa
    wr = np.einsum("eij,ej->ei", WaT, dwr)
    phi = rotation_vector(WaT @ Wb)
    cth, _ = _c_theta(np.linalg.norm(phi, axis=1))
    y = Kr * phi
    pxy = cross(phi, y)
    Fl = -Kt * d - Ct * dd
    Tl = -(y + 0.5 * pxy + cth[:, None] * cross(phi, pxy)) - Cr * wr
    Fs, Ts = skew(np.einsum("eij,ej->ei", Wa, Fl)), skew(np.einsum("eij,ej->ei", Wa, Tl))
    I3 = np.broadcast_to(np.eye(3), (n, 3, 3))
    dth = np.zeros((n, 3, 6))
    dth[:, :, 3:] = I3
    dphi = jl_inverse(phi) @ WaT @ dth
    H = _grad_jacobian(phi, Kr)
    for kk, sg in ((0, -1.0), (1, 1.0)):
        ddw, dvw, dea = np.zeros((n, 3, 6)), np.zeros((n, 3, 6)), np.zeros((n, 3, 6))  # ∂dw, ∂vw, ∂e_a / ∂x_k
        ddw[:, :, :3] = sg * I3
        dea[:, :, :3] = sg * I3
        if kk == 1:
            ddw[:, :, 3:] = -Sb
            dvw[:, :, 3:] = -skew(wb) @ Sb
            dea[:, :, 3:] = -Sb
        else:
            ddw[:, :, 3:] = Sa
            dvw[:, :, 3:] = Wsa @ Sa
        dvw -= Wsa @ ddw
        Xd, Xv = ddw.copy(), dvw.copy()
        if kk == 0:  # δ(W_aᵀ y) = W_aᵀ (δy + [y] δθ_a)
            Xd[:, :, 3:] += skew(dw)
            Xv[:, :, 3:] += skew(vw)
        dFw = Wa @ (-Kt[:, :, None] * (WaT @ Xd) - Ct[:, :, None] * (WaT @ Xv))
        dTl = -sg * (H @ dphi)
        if kk == 0:
            dTl[:, :, 3:] -= Cr[:, :, None] * (WaT @ skew(dwr))
        dTw = Wa @ dTl
        if kk == 0:
            dFw[:, :, 3:] -= Fs
            dTw[:, :, 3:] -= Ts
        fb, fa = np.empty((n, 6, 6)), np.empty((n, 6, 6))
        fb[:, :3], fa[:, :3] = dFw, -dFw
        fb[:, 3:] = Sb @ dFw + dTw
        fa[:, 3:] = Fs @ dea - Ea @ dFw - dTw
        if kk == 1:
            fb[:, 3:, 3:] += Fs @ Sb
        Kb[:, 1, kk] -= fb
        Kb[:, 0, kk] -= fa
    CtM = (Wa * Ct[:, None, :]) @ WaT  # W_a diag(C_t) W_aᵀ
    CrM = (Wa * Cr[:, None, :]) @ WaT
    for kk, sg in ((0, -1.0), (1, 1.0)):
        dv = np.zeros((n, 3, 6))
        dv[:, :, :3] = sg * I3
        dv[:, :, 3:] = -Sb if kk == 1 else Ea
        dF = CtM @ dv  # −∂F_w/∂v_k
        dT = np.zeros((n, 3, 6))  # −∂T_w/∂v_k
        dT[:, :, 3:] = sg * CrM
        Db[:, 1, kk, :3] += dF
        Db[:, 1, kk, 3:] += Sb @ dF + dT
        Db[:, 0, kk, :3] -= dF
        Db[:, 0, kk, 3:] -= Ea @ dF + dT
