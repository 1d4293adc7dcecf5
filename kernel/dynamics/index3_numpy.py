"""The index-3 residual and Newton matrix of :mod:`.index3_kernels`, vectorised over the bodies with numpy.

The same equations (see :mod:`.index3_kernels` for them), the same arrays and signatures, for Python without
numba (FreeCAD's interpreter), where the kernels' loops would run one body and one element at a time as Python:
on the flyball governor's index-3 run (1,000 steps) the loops took most of its 4.8 s; and for a run whose kernels
are not compiled yet, which would otherwise wait ≈ 10 s for numba. Used by :class:`.index3.QForm` in those cases
(:mod:`.stiff_kernels` chooses); equal to the compiled kernels to round-off (the sums are taken in another order).

Shapes: nb bodies (the moving ones first, nmov of them), q and q̇ (7 nmov,), [r, p] per moving body; q_fixed
(7 (nb − nmov),) the fixed bodies' [r, p]. Units: m, rad, kg, N, as in :mod:`.index3_kernels`.
"""

from __future__ import annotations

import numpy as np

from .mass import E_matrix, cross, rotation, skew

__all__ = ["body_kinematics", "residual", "body_blocks", "element_blocks"]


def body_kinematics(q, qd, nmov, q_fixed, com_all, Jb, A, rho, rc, E, Jw, w, vc):
    """Fill the per-body arrays at (q, q̇): A (nb, 3, 3), ρ = A c̄, r_c, E(p̂) (nmov, 3, 4), world
    inertia J (nmov, 3, 3), ω and v_c (nb, 3; zero for fixed bodies)."""
    nb = A.shape[0]
    qa = np.concatenate([np.reshape(q[:7 * nmov], (nmov, 7)), np.reshape(q_fixed[:7 * (nb - nmov)], (nb - nmov, 7))])
    e = qa[:, 3:] / np.linalg.norm(qa[:, 3:], axis=1)[:, None]
    A[:] = rotation(e)
    rho[:] = np.einsum("bij,bj->bi", A, com_all[:nb])
    rc[:] = qa[:, :3] + rho
    E[:] = E_matrix(e[:nmov])
    Qd = np.reshape(qd[:7 * nmov], (nmov, 7))
    w[:nmov] = 2.0 * np.einsum("bik,bk->bi", E, Qd[:, 3:])
    w[nmov:] = 0.0
    Am = A[:nmov]
    Jw[:] = Am @ Jb[:nmov] @ np.swapaxes(Am, 1, 2)
    vc[:nmov] = Qd[:, :3] + cross(w[:nmov], rho[:nmov])
    vc[nmov:] = 0.0


def residual(qdd, nmov, mass, rho, E, Jw, w, F, N, out):
    """R = M_q q̈ − Q_q (nq,) into ``out`` from the filled kinematics and the applied forces F
    (force at the com, N) and N (moment about it, N m), gravity included."""
    Q = np.reshape(qdd[:7 * nmov], (nmov, 7))
    al = 2.0 * np.einsum("bik,bk->bi", E, Q[:, 3:])
    wv, p = w[:nmov], rho[:nmov]
    a = Q[:, :3] + cross(al, p) + cross(wv, cross(wv, p))
    rt = mass[:nmov, None] * a - F[:nmov]
    rr = np.einsum("bij,bj->bi", Jw, al) + cross(wv, np.einsum("bij,bj->bi", Jw, wv)) - N[:nmov]
    n = cross(p, rt) + rr  # the moment about the frame origin
    R = np.reshape(out[:7 * nmov], (nmov, 7))
    R[:, :3] = rt
    R[:, 3:] = 2.0 * np.einsum("bik,bi->bk", E, n)
    out[:7 * nmov] = R.reshape(-1)


def _ctm(Cj, M, Ck):
    """Cjᵀ M Ck per body (n, 7, 7)."""
    return np.swapaxes(Cj, 1, 2) @ M @ Ck


def body_blocks(q, qd, nmov, mass, rho, E, Jw, w, lam_norm, c_k, c_d, Cs, Vs, diag):
    """The per-body 7 × 7 blocks of the Newton matrix S into ``diag`` (nmov, 7, 7) (see
    :mod:`.index3_kernels`), and C_b, V_b into ``Cs``, ``Vs`` (nmov, 6, 7) for :func:`element_blocks`.
    c_k = c_d = 0 gives M_q."""
    p, wv = rho[:nmov], w[:nmov]
    R, W = skew(p), skew(wv)
    Ed = E_matrix(np.reshape(qd[:7 * nmov], (nmov, 7))[:, 3:])
    Cs[:] = 0.0
    Cs[:, 0, 0] = Cs[:, 1, 1] = Cs[:, 2, 2] = 1.0
    Cs[:, :3, 3:] = -2.0 * R @ E
    Cs[:, 3:, 3:] = 2.0 * E
    Vs[:] = 0.0
    Vs[:, :3, 3:] = 2.0 * R @ Ed - 2.0 * (W @ R) @ E
    Vs[:, 3:, 3:] = -2.0 * Ed
    Mv = np.zeros((nmov, 6, 6))
    Mv[:, 0, 0] = Mv[:, 1, 1] = Mv[:, 2, 2] = mass[:nmov]
    Mv[:, 3:, 3:] = Jw
    blk = _ctm(Cs, Mv, Cs)
    if c_k != 0.0 or c_d != 0.0:
        # Bg: centripetal m ∂(ω × (ω × ρ))/∂ω and gyroscopic ∂(ω × J ω)/∂ω = [ω] J − [J ω]
        Bg = np.zeros((nmov, 6, 6))
        wr = np.einsum("bi,bi->b", wv, p)
        Bg[:, :3, 3:] = mass[:nmov, None, None] * (wr[:, None, None] * np.eye(3) + wv[:, :, None] * p[:, None, :]
                                                  - 2.0 * p[:, :, None] * wv[:, None, :])
        Bg[:, 3:, 3:] = W @ Jw - skew(np.einsum("bij,bj->bi", Jw, wv))
        blk += c_d * _ctm(Cs, Bg, Cs) + c_k * _ctm(Cs, Bg, Vs)
        k = np.arange(3, 7)
        blk[:, k, k] += c_k * 2.0 * np.asarray(lam_norm[:nmov])[:, None]
    diag[:] = blk


def element_blocks(nmov, c_k, c_d, Cs, Vs, el_a, el_b, Kb, Db, offd):
    """The force elements' 7 × 7 blocks C_jᵀ [c_k K_jk C_k + D_jk (c_d C_k + c_k V_k)] into
    ``offd`` (n, 2, 2, 7, 7) for the blocks (el_a, el_b, Kb, Db) of
    :meth:`.forces.ForceElements.tangent_blocks` (blocks touching a fixed body are left as they are)."""
    if not len(el_a):
        return
    bodies = np.stack([el_a, el_b], 1)  # (n, 2)
    moving = bodies < nmov
    at = np.where(moving, bodies, 0)
    C, V = Cs[at], Vs[at]  # (n, 2, 6, 7)
    X = np.einsum("ejkil,eklc->ejkic", c_k * Kb + c_d * Db, C) + c_k * np.einsum("ejkil,eklc->ejkic", Db, V)
    blocks = np.einsum("ejir,ejkic->ejkrc", C, X)
    both = moving[:, :, None] & moving[:, None, :]
    offd[both] = blocks[both]
