"""numba kernels of the fast index-1 right-hand side (see :mod:`.fast`). Imported only
when numba is available; :mod:`.equations` is the reference numpy implementation of the
same equations and the tests compare the two.

Compact constraint rows: the kept rows (reordered for a small bandwidth) store, per slot s
of the constraint instance, the body ``rb[r, s]`` (−1: fixed or unused) and the 6 entries
``Jc[r, s]`` of Jv = Φq B on that body's velocities [v_c, ω]. S = Jv M⁻¹ Jvᵀ is assembled
from the precomputed row pairs that share a body, in band storage ``Lb[i, d] = S[i, i − d]``,
and factorised by a band Cholesky.

An evaluation allocates nothing but the ẏ it returns: its intermediates (X = Jc M⁻¹, the
factor of S, λ, the applied forces, the groups' gathered coordinates) are workspace arrays
(``ws``, kind 'w' in :data:`COMMON` and :data:`GROUP`), seen through C-contiguous views
(:func:`c_view`).
"""

import math

import numpy as np

from ..numba_cache import numba  # numba, its cache folder named by the kernel sources
from .._kinematics_kernels import gather, gather_to, unwrap, winding_to  # noqa: F401 (generated modules call K.gather, K.gather_to, K.winding_to, K.unwrap)
from .._program_kernels import evaluate as evaluate_program
from ._contact_kernels import contact_accept, contact_forces, contact_limit
from . import layout
from ._frames import euler_rotation, frame_axes, relative_rotation_vector
from .integrators import ROTATION_PER_STEP
from .tyres import tyre_forces

_JIT = dict(cache=True, nogil=True, fastmath=False)
# linear algebra kernels: allow reassociation of sums so LLVM can vectorise the reductions
_JIT_LA = dict(cache=True, nogil=True, fastmath={"reassoc", "contract"})
# helpers of an evaluation with many array arguments, inlined into their callers (a call passes and
# counts references of every array: body_kinematics' 16 cost 0.05 µs of stage_kinematics' 0.43 on the
# slider-crank). Inlined code is compiled with its caller's flags: a helper is inlined only where its
# callers have its own (_INLINE into _JIT functions, _INLINE_LA into _JIT_LA ones), the same operations,
# the same results
_INLINE = dict(_JIT, inline="always")
_INLINE_LA = dict(_JIT_LA, inline="always")


@numba.njit(**_INLINE)
def body_kinematics(y, nq, nmov, nb, q_fixed, com_all, Jb, Jbinv, qf, qdf, A, rho, rc, E, Jw, Jwinv, B, bdot, w, vc):
    """Per-body quantities at unit Euler parameters (fills the output arrays)."""
    for b in range(nb):
        if b < nmov:
            base = 7 * b
            r0, r1, r2 = y[base], y[base + 1], y[base + 2]
            e0, e1, e2, e3 = y[base + 3], y[base + 4], y[base + 5], y[base + 6]
        else:
            base = 7 * (b - nmov)
            r0, r1, r2 = q_fixed[base], q_fixed[base + 1], q_fixed[base + 2]
            e0, e1, e2, e3 = q_fixed[base + 3], q_fixed[base + 4], q_fixed[base + 5], q_fixed[base + 6]
        nrm = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3)
        e0 /= nrm
        e1 /= nrm
        e2 /= nrm
        e3 /= nrm
        o = 7 * b
        qf[o], qf[o + 1], qf[o + 2] = r0, r1, r2
        qf[o + 3], qf[o + 4], qf[o + 5], qf[o + 6] = e0, e1, e2, e3
        euler_rotation(A, b, e0, e1, e2, e3)
        for i in range(3):
            rho[b, i] = A[b, i, 0] * com_all[b, 0] + A[b, i, 1] * com_all[b, 1] + A[b, i, 2] * com_all[b, 2]
        rc[b, 0], rc[b, 1], rc[b, 2] = r0 + rho[b, 0], r1 + rho[b, 1], r2 + rho[b, 2]
        for k in range(7):
            qdf[o + k] = 0.0
            bdot[b, k] = 0.0
            for l in range(6):
                B[b, k, l] = 0.0
        if b >= nmov:
            for i in range(3):
                w[b, i] = 0.0
                vc[b, i] = 0.0
            continue
        # E(p): ω = 2 E ṗ
        E[b, 0, 0], E[b, 0, 1], E[b, 0, 2], E[b, 0, 3] = -e1, e0, -e3, e2
        E[b, 1, 0], E[b, 1, 1], E[b, 1, 2], E[b, 1, 3] = -e2, e3, e0, -e1
        E[b, 2, 0], E[b, 2, 1], E[b, 2, 2], E[b, 2, 3] = -e3, -e2, e1, e0
        # world inertia and inverse: A J' Aᵀ, in this order. (A J') Aᵀ takes half the multiply-adds (0.08 µs on the
        # slider-crank), but its round-off made the compiled DOP853 at 1e-8 miss the first singular crossing of
        # tests/kernel/test_singular_passages.py (whose detection at that tolerance hangs on round-off)
        for i in range(3):
            for j in range(3):
                s1 = 0.0
                s2 = 0.0
                for k in range(3):
                    t1 = 0.0
                    t2 = 0.0
                    for l in range(3):
                        t1 += Jb[b, k, l] * A[b, j, l]
                        t2 += Jbinv[b, k, l] * A[b, j, l]
                    s1 += A[b, i, k] * t1
                    s2 += A[b, i, k] * t2
                Jw[b, i, j] = s1
                Jwinv[b, i, j] = s2
        vo = nq + 6 * b
        v0, v1, v2 = y[vo], y[vo + 1], y[vo + 2]
        w0, w1, w2 = y[vo + 3], y[vo + 4], y[vo + 5]
        vc[b, 0], vc[b, 1], vc[b, 2] = v0, v1, v2
        w[b, 0], w[b, 1], w[b, 2] = w0, w1, w2
        p0, p1, p2 = rho[b, 0], rho[b, 1], rho[b, 2]
        # B: ṙ = v_c + ρ × ω, ṗ = ½ Eᵀ ω
        B[b, 0, 0] = B[b, 1, 1] = B[b, 2, 2] = 1.0
        B[b, 0, 4], B[b, 0, 5] = -p2, p1
        B[b, 1, 3], B[b, 1, 5] = p2, -p0
        B[b, 2, 3], B[b, 2, 4] = -p1, p0
        for k in range(4):
            for l in range(3):
                B[b, 3 + k, 3 + l] = 0.5 * E[b, l, k]
        qdf[o] = v0 + p1 * w2 - p2 * w1
        qdf[o + 1] = v1 + p2 * w0 - p0 * w2
        qdf[o + 2] = v2 + p0 * w1 - p1 * w0
        for k in range(4):
            qdf[o + 3 + k] = 0.5 * (E[b, 0, k] * w0 + E[b, 1, k] * w1 + E[b, 2, k] * w2)
        # Ḃ v = [−ω × (ω × ρ), −¼ |ω|² p]
        c0 = w1 * p2 - w2 * p1
        c1 = w2 * p0 - w0 * p2
        c2 = w0 * p1 - w1 * p0
        bdot[b, 0] = -(w1 * c2 - w2 * c1)
        bdot[b, 1] = -(w2 * c0 - w0 * c2)
        bdot[b, 2] = -(w0 * c1 - w1 * c0)
        ww = 0.25 * (w0 * w0 + w1 * w1 + w2 * w2)
        bdot[b, 3], bdot[b, 4], bdot[b, 5], bdot[b, 6] = -ww * e0, -ww * e1, -ww * e2, -ww * e3


@numba.njit(**_INLINE)
def scatter(Jg, Gg, bodies, row0, neq, row_map, nmov, B, bdot, Jc, gam):
    """Jc = Φq B and γ̂ = γ − Φq Ḃ v of one constraint group's kept rows.

    B's translation columns (:func:`body_kinematics`) are the identity on ṙ and zero on ṗ, so
    Jc's translation entries are Φq's ṙ entries (the sum over all 7 rows of B would add exact
    zeros only)."""
    n = bodies.shape[0]
    ns = bodies.shape[1]
    for i in range(n):
        for e in range(neq):
            r = row_map[row0 + i * neq + e]
            if r < 0:
                continue
            g = Gg[i, e]
            for s in range(ns):
                b = bodies[i, s]
                if b >= nmov:
                    continue
                for l in range(3):
                    Jc[r, s, l] = Jg[i, e, 7 * s + l]
                for l in range(3, 6):
                    acc = 0.0
                    for k in range(7):
                        acc += Jg[i, e, 7 * s + k] * B[b, k, l]
                    Jc[r, s, l] = acc
                for k in range(7):
                    g -= Jg[i, e, 7 * s + k] * bdot[b, k]
            gam[r] = g


@numba.njit(**_INLINE)
def scatter_rows(values, row0, neq, row_map, out):
    """out[row_map[row0 + i neq + e]] = values[i, e] for one group's rows that the workspace keeps."""
    n = values.shape[0]
    for i in range(n):
        for e in range(neq):
            r = row_map[row0 + i * neq + e]
            if r >= 0:
                out[r] = values[i, e]


@numba.njit(**_JIT)
def cross(a0, a1, a2, b0, b1, b2):
    """a × b of two vectors given by their components (a tuple of three)."""
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@numba.njit(**_INLINE)
def axis_angle(A, a, b, Ri, Rj):
    """(raw angle in (−π, π] rad, axis z (world)) of an axis element between bodies a and b:
    the angle from marker i's x axis to marker j's x axis about marker i's z axis."""
    xi = marker_axis(A, a, Ri, 0)
    yi = marker_axis(A, a, Ri, 1)
    zi = marker_axis(A, a, Ri, 2)
    xj = marker_axis(A, b, Rj, 0)
    ydx = yi[0] * xj[0] + yi[1] * xj[1] + yi[2] * xj[2]
    xdx = xi[0] * xj[0] + xi[1] * xj[1] + xi[2] * xj[2]
    return math.atan2(ydx, xdx), zi[0], zi[1], zi[2]


@numba.njit(**_JIT)
def marker_axis(A, b, R, j):
    """Axis j (world) of marker R (part axes) on body b: column j of A_b R."""
    return (A[b, 0, 0] * R[0, j] + A[b, 0, 1] * R[1, j] + A[b, 0, 2] * R[2, j],
            A[b, 1, 0] * R[0, j] + A[b, 1, 1] * R[1, j] + A[b, 1, 2] * R[2, j],
            A[b, 2, 0] * R[0, j] + A[b, 2, 1] * R[1, j] + A[b, 2, 2] * R[2, j])


@numba.njit(**_JIT)
def apply_pair(F, N, a, b, f0, f1, f2, rb0, rb1, rb2, ra0, ra1, ra2):
    """Force f (N, world) on body b at the arm rb from its com and −f on body a at the arm ra
    (m, world): adds to F and to the moments about the coms N."""
    F[b, 0] += f0
    F[b, 1] += f1
    F[b, 2] += f2
    F[a, 0] -= f0
    F[a, 1] -= f1
    F[a, 2] -= f2
    mb = cross(rb0, rb1, rb2, f0, f1, f2)
    ma = cross(ra0, ra1, ra2, f0, f1, f2)
    for i in range(3):
        N[b, i] += mb[i]
        N[a, i] -= ma[i]


@numba.njit(**_INLINE)
def spring_forces(A, rc, w, vc, F, N, sp_ia, sp_ib, sp_da, sp_db, sp_k, sp_c, sp_l0, sp_F0):
    """Translational spring-damper-actuators: adds to F (N) and N (N m, about the com), returns
    their non-conservative power (W)."""
    power = 0.0
    for s in range(sp_ia.shape[0]):
        a, bb = sp_ia[s], sp_ib[s]
        pa = point_offset(A, a, sp_da[s])
        pb = point_offset(A, bb, sp_db[s])
        d0 = rc[bb, 0] + pb[0] - rc[a, 0] - pa[0]
        d1 = rc[bb, 1] + pb[1] - rc[a, 1] - pa[1]
        d2 = rc[bb, 2] + pb[2] - rc[a, 2] - pa[2]
        l = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        il = 1.0 / l if l > 0 else 1.0
        u0, u1, u2 = d0 * il, d1 * il, d2 * il
        xb = cross(w[bb, 0], w[bb, 1], w[bb, 2], pb[0], pb[1], pb[2])
        xa = cross(w[a, 0], w[a, 1], w[a, 2], pa[0], pa[1], pa[2])
        ld = (u0 * (vc[bb, 0] + xb[0] - vc[a, 0] - xa[0]) + u1 * (vc[bb, 1] + xb[1] - vc[a, 1] - xa[1])
              + u2 * (vc[bb, 2] + xb[2] - vc[a, 2] - xa[2]))
        f = -sp_k[s] * (l - sp_l0[s]) - sp_c[s] * ld + sp_F0[s]
        apply_pair(F, N, a, bb, f * u0, f * u1, f * u2, pb[0], pb[1], pb[2], pa[0], pa[1], pa[2])
        power -= sp_c[s] * ld * ld
    return power


@numba.njit(**_INLINE)
def axis_forces(A, w, N, ax_ia, ax_ib, ax_Ri, ax_Rj, ax_k, ax_c, ax_tau0, ax_expr, ax_ref, tau):
    """Axis elements (rotational spring-dampers, torques about a joint axis): adds to N (N m),
    returns their non-conservative power (W)."""
    power = 0.0
    two_pi = 2.0 * math.pi
    for s in range(ax_ia.shape[0]):
        a, bb = ax_ia[s], ax_ib[s]
        raw, z0, z1, z2 = axis_angle(A, a, bb, ax_Ri[s], ax_Rj[s])
        theta = raw + two_pi * np.round((ax_ref[s] - raw) / two_pi)
        rate = z0 * (w[bb, 0] - w[a, 0]) + z1 * (w[bb, 1] - w[a, 1]) + z2 * (w[bb, 2] - w[a, 2])
        if ax_expr[s] != 0:
            t = tau[s]
            power += t * rate
        else:
            t = -ax_k[s] * theta - ax_c[s] * rate + ax_tau0[s]
            power -= ax_c[s] * rate * rate
        N[bb, 0] += t * z0
        N[bb, 1] += t * z1
        N[bb, 2] += t * z2
        N[a, 0] -= t * z0
        N[a, 1] -= t * z1
        N[a, 2] -= t * z2
    return power


@numba.njit(**_JIT)
def spline_value(x, c, n, t):
    """(f, f', f'') at t of a cubic spline with breakpoints x[:n] and pieces c[:, :n − 1]
    (scipy ``PPoly`` layout; outside [x0, x_{n−1}] the end pieces are extended, as scipy does)."""
    j = np.searchsorted(x[:n], t, side="right") - 1
    j = min(max(j, 0), n - 2)
    h = t - x[j]
    c0, c1, c2, c3 = c[0, j], c[1, j], c[2, j], c[3, j]
    return ((c0 * h + c1) * h + c2) * h + c3, (3.0 * c0 * h + 2.0 * c1) * h + c2, 6.0 * c0 * h + 2.0 * c1


@numba.njit(**_JIT)
def rotation_gradient(p0, p1, p2, g0, g1, g2):
    """J_l(φ)⁻ᵀ g, as :func:`.forces.rotation_gradient` (φ = (p0, p1, p2) rad)."""
    th = math.sqrt(p0 * p0 + p1 * p1 + p2 * p2)
    if th < 1e-4:
        c = 1.0 / 12.0 + th * th / 720.0
    else:
        c = 1.0 / (th * th) - math.sin(th) / (2.0 * th * (1.0 - math.cos(th)))
    x = cross(p0, p1, p2, g0, g1, g2)
    y = cross(p0, p1, p2, x[0], x[1], x[2])
    return (g0 + 0.5 * x[0] + c * y[0], g1 + 0.5 * x[1] + c * y[1], g2 + 0.5 * x[2] + c * y[2])


@numba.njit(**_JIT)
def point_offset(A, b, d):
    """A_b d: a body point's offset from the com (world axes, m)."""
    return (A[b, 0, 0] * d[0] + A[b, 0, 1] * d[1] + A[b, 0, 2] * d[2],
            A[b, 1, 0] * d[0] + A[b, 1, 1] * d[1] + A[b, 1, 2] * d[2],
            A[b, 2, 0] * d[0] + A[b, 2, 1] * d[1] + A[b, 2, 2] * d[2])


@numba.njit(**_JIT)
def line_state(A, rc, w, vc, a, b, di, Ri, dj):
    """(q, qd, z) of a force element along a joint axis: q = (Pj − Pi)·z_i the displacement of
    marker j's point from marker i's along z_i (m), qd its rate (m/s), z_i (world) — as
    :meth:`.forces.ForceElements.evaluate` computes them."""
    pi = point_offset(A, a, di)
    pj = point_offset(A, b, dj)
    z0 = A[a, 0, 0] * Ri[0, 2] + A[a, 0, 1] * Ri[1, 2] + A[a, 0, 2] * Ri[2, 2]
    z1 = A[a, 1, 0] * Ri[0, 2] + A[a, 1, 1] * Ri[1, 2] + A[a, 1, 2] * Ri[2, 2]
    z2 = A[a, 2, 0] * Ri[0, 2] + A[a, 2, 1] * Ri[1, 2] + A[a, 2, 2] * Ri[2, 2]
    d0 = rc[b, 0] + pj[0] - rc[a, 0] - pi[0]
    d1 = rc[b, 1] + pj[1] - rc[a, 1] - pi[1]
    d2 = rc[b, 2] + pj[2] - rc[a, 2] - pi[2]
    xj = cross(w[b, 0], w[b, 1], w[b, 2], pj[0], pj[1], pj[2])
    xi = cross(w[a, 0], w[a, 1], w[a, 2], pi[0], pi[1], pi[2])
    wz = cross(w[a, 0], w[a, 1], w[a, 2], z0, z1, z2)
    qd = ((vc[b, 0] + xj[0] - vc[a, 0] - xi[0]) * z0 + (vc[b, 1] + xj[1] - vc[a, 1] - xi[1]) * z1
          + (vc[b, 2] + xj[2] - vc[a, 2] - xi[2]) * z2 + d0 * wz[0] + d1 * wz[1] + d2 * wz[2])
    return d0 * z0 + d1 * z1 + d2 * z2, qd, z0, z1, z2


@numba.njit(**_JIT)
def line_forces(A, rc, w, vc, F, N, ln_ia, ln_ib, ln_di, ln_Ri, ln_dj, ln_F):
    """Forces ln_F (N) along joint axes: F z_i on the second part at its marker point, −F z_i on
    the first at the same point; adds to F and N (about the com), returns their power (W)."""
    power = 0.0
    for s in range(ln_ia.shape[0]):
        a, b = ln_ia[s], ln_ib[s]
        _, qd, z0, z1, z2 = line_state(A, rc, w, vc, a, b, ln_di[s], ln_Ri[s], ln_dj[s])
        pj = point_offset(A, b, ln_dj[s])
        f = ln_F[s]
        # both parts at the second part's marker point
        apply_pair(F, N, a, b, f * z0, f * z1, f * z2, pj[0], pj[1], pj[2],
                   rc[b, 0] + pj[0] - rc[a, 0], rc[b, 1] + pj[1] - rc[a, 1], rc[b, 2] + pj[2] - rc[a, 2])
        power += f * qd
    return power


@numba.njit(**_JIT)
def bushing_forces(A, rc, w, vc, F, N, bu_ia, bu_ib, bu_da, bu_db, bu_Ra, bu_Rb, bu_Kt, bu_Ct, bu_Kr, bu_Cr):
    """6-D bushings between frame a (on the first part) and frame b (on the second): in frame
    a's axes F = −Kt d − Ct ḋ (N), T = −Kr φ − Cr ω_rel (N m), d the offset of b's origin from
    a's (m), φ the rotation vector of b relative to a (rad); F and T act on the second part at
    its point, −F, −T on the first at the same point. Adds to F and N; returns the power (W)."""
    power = 0.0
    for s in range(bu_ia.shape[0]):
        a, b = bu_ia[s], bu_ib[s]
        Wa = frame_axes(A, a, bu_Ra[s])
        Wb = frame_axes(A, b, bu_Rb[s])
        pa = point_offset(A, a, bu_da[s])
        pb = point_offset(A, b, bu_db[s])
        dw = np.empty(3)
        vw = np.empty(3)
        xb = cross(w[b, 0], w[b, 1], w[b, 2], pb[0], pb[1], pb[2])
        xa = cross(w[a, 0], w[a, 1], w[a, 2], pa[0], pa[1], pa[2])
        for i in range(3):
            dw[i] = rc[b, i] + pb[i] - rc[a, i] - pa[i]
        xd = cross(w[a, 0], w[a, 1], w[a, 2], dw[0], dw[1], dw[2])
        for i in range(3):
            vw[i] = vc[b, i] + xb[i] - vc[a, i] - xa[i] - xd[i]
        p0, p1, p2 = relative_rotation_vector(Wa, Wb)
        tg = rotation_gradient(p0, p1, p2, bu_Kr[s, 0] * p0, bu_Kr[s, 1] * p1, bu_Kr[s, 2] * p2)
        Fw = np.zeros(3)
        Tw = np.zeros(3)
        for k in range(3):  # frame a's axes
            d = Wa[0, k] * dw[0] + Wa[1, k] * dw[1] + Wa[2, k] * dw[2]
            dd = Wa[0, k] * vw[0] + Wa[1, k] * vw[1] + Wa[2, k] * vw[2]
            wr = Wa[0, k] * (w[b, 0] - w[a, 0]) + Wa[1, k] * (w[b, 1] - w[a, 1]) + Wa[2, k] * (w[b, 2] - w[a, 2])
            fl = -bu_Kt[s, k] * d - bu_Ct[s, k] * dd
            tl = -tg[k] - bu_Cr[s, k] * wr
            power -= bu_Ct[s, k] * dd * dd + bu_Cr[s, k] * wr * wr
            for i in range(3):
                Fw[i] += Wa[i, k] * fl
                Tw[i] += Wa[i, k] * tl
        apply_pair(F, N, a, b, Fw[0], Fw[1], Fw[2], pb[0], pb[1], pb[2],
                   rc[b, 0] + pb[0] - rc[a, 0], rc[b, 1] + pb[1] - rc[a, 1], rc[b, 2] + pb[2] - rc[a, 2])
        for i in range(3):
            N[b, i] += Tw[i]
            N[a, i] -= Tw[i]
    return power


@numba.njit(**_JIT)
def ball_forces(A, w, N, bl_ia, bl_ib, bl_Ri, bl_Rj, bl_k, bl_c):
    """3-D rotational spring-dampers (spherical-type joints): adds to N (N m), returns their
    non-conservative power (W)."""
    power = 0.0
    for s in range(bl_ia.shape[0]):
        a, bb = bl_ia[s], bl_ib[s]
        Wi = np.zeros((3, 3))
        Wj = np.zeros((3, 3))
        for i in range(3):
            for j in range(3):
                for k in range(3):
                    Wi[i, j] += A[a, i, k] * bl_Ri[s, k, j]
                    Wj[i, j] += A[bb, i, k] * bl_Rj[s, k, j]
        f0, f1, f2 = relative_rotation_vector(Wi, Wj)
        for i in range(3):
            phw = Wi[i, 0] * f0 + Wi[i, 1] * f1 + Wi[i, 2] * f2
            wr = w[bb, i] - w[a, i]
            t = -bl_k[s] * phw - bl_c[s] * wr
            N[bb, i] += t
            N[a, i] -= t
            power -= bl_c[s] * wr * wr
    return power


@numba.njit(**_JIT_LA)
def band_cholesky(Lb, m, bw, drop_tol, dropped, ratio, redundant):
    """In-place Cholesky of a positive semi-definite band matrix (Lb[i, d] = S[i, i − d]).

    The rows with ``redundant[j]`` ≠ 0 are dropped as they are met (the redundant constraints
    chosen at the last accepted state, :func:`choose_rows`: the same rows at every stage of a
    step, so that the equations do not change within it). Any other row whose pivot falls
    below ``drop_tol`` (> 0) times its own diagonal is (numerically) a combination of the rows
    before it: it is dropped too. A dropped row's λ is 0 and the others do not use it; ``dropped[j]``
    is set. ``ratio[j]`` gets the pivot over the diagonal; for a row in ``redundant`` the pivot it
    would have had (the rows before it as they are) if that is above ``drop_tol``, else 0, so that
    :func:`rows_still_chosen` can tell whether the pivots alone would drop the same rows. Returns
    the number dropped.

    Right-looking: once column j of L is known, it is subtracted from the trailing band at once.
    Each entry receives the products L[i, k] L[j, k] in the order of k, as the row-by-row dot
    products of the left-looking form (:func:`.equations._band_cholesky_numpy`), but the updates are
    independent of each other where the dot products were chains of dependent multiply-adds.
    """
    for j in range(m):  # ratio holds the diagonals until the pivots are known
        ratio[j] = Lb[j, 0]
    ndrop = 0
    for j in range(m):
        s = Lb[j, 0]  # the pivot: S[j, j] − Σ_k L[j, k]², subtracted by the columns before
        diag = ratio[j]
        i1 = j + bw + 1 if j + bw + 1 < m else m
        low = not s > drop_tol * diag
        if redundant[j] != 0.0:  # (kept by its pivot: s > 0 and diag > 0)
            ratio[j] = 0.0 if low else s / diag
            low = True
        else:
            ratio[j] = s / diag if diag > 0 else 0.0
        if low:
            dropped[j] = True
            ndrop += 1
            Lb[j, 0] = 1.0
            k0 = j - bw if j - bw > 0 else 0
            for k in range(k0, j):
                Lb[j, j - k] = 0.0
            for i in range(j + 1, i1):
                Lb[i, i - j] = 0.0
            continue
        dropped[j] = False
        d = math.sqrt(s)
        Lb[j, 0] = d
        for i in range(j + 1, i1):
            Lb[i, i - j] /= d
        for i in range(j + 1, i1):  # the trailing band: S[i, k] −= L[i, j] L[k, j], j < k ≤ i
            lij = Lb[i, i - j]
            if lij == 0.0:
                continue
            for k in range(j + 1, i + 1):
                Lb[i, i - k] -= lij * Lb[k, k - j]
    return ndrop


@numba.njit(**_JIT_LA)
def band_solve(Lb, m, bw, x, dropped):
    """x ← S⁻¹ x on the kept rows, in place (dropped rows get 0), from the factor of
    :func:`band_cholesky`.

    Both substitutions by columns: once x[i] is known, its multiples are subtracted from the
    entries it enters (independent updates, where dot products by rows were chains of dependent
    multiply-adds)."""
    for i in range(m):  # L y = x: x[i] receives −L[i, k] y[k] for k increasing, as by rows
        if dropped[i]:
            x[i] = 0.0
            continue
        xi = x[i] / Lb[i, 0]
        x[i] = xi
        i1 = i + bw + 1 if i + bw + 1 < m else m
        for k in range(i + 1, i1):
            x[k] -= Lb[k, k - i] * xi
    for i in range(m - 1, -1, -1):  # Lᵀ x = y
        if dropped[i]:
            x[i] = 0.0
            continue
        xi = x[i] / Lb[i, 0]
        x[i] = xi
        k0 = i - bw if i - bw > 0 else 0
        for k in range(k0, i):
            x[k] -= Lb[i, i - k] * xi


@numba.njit(**_INLINE_LA)
def mass_weighted_rows(imt, Jwinv, Jc, rb, X):
    """X ← Jc M⁻¹ per kept row and slot: Jc's translation part times the body's translational
    inverse mass ``imt`` (1/kg, world axes: I/m, or P/m in a plane), its rotation part times the
    inverse world inertia (1/(kg m²), world axes). Slots without a moving body are not written (the
    kernels skip them)."""
    m, ns = rb.shape
    for r in range(m):
        for s in range(ns):
            b = rb[r, s]
            if b < 0:
                continue
            for i in range(3):
                X[r, s, i] = imt[b, i, 0] * Jc[r, s, 0] + imt[b, i, 1] * Jc[r, s, 1] + imt[b, i, 2] * Jc[r, s, 2]
                X[r, s, 3 + i] = (Jwinv[b, i, 0] * Jc[r, s, 3] + Jwinv[b, i, 1] * Jc[r, s, 4]
                                  + Jwinv[b, i, 2] * Jc[r, s, 5])


@numba.njit(**_INLINE_LA)
def length_weighted_rows(Jc, rb, inv_l2, X):
    """X ← Jc W per kept row and slot, W = diag(1, 1, 1, inv_l2, inv_l2, inv_l2) with inv_l2 =
    1/ℓ² (1/m², ℓ the model's length scale): the purely kinematic weights of :func:`singularity`.
    Slots without a moving body are not written."""
    m, ns = rb.shape
    for r in range(m):
        for s in range(ns):
            if rb[r, s] < 0:
                continue
            for l in range(3):
                X[r, s, l] = Jc[r, s, l]
                X[r, s, 3 + l] = inv_l2 * Jc[r, s, 3 + l]


@numba.njit(**_JIT_LA)
def factor_S(X, Jc, pair_i, pair_j, pair_si, pair_sj, bw, drop_tol, reg, Lb, dropped, ratio, redundant):
    """Lb ← the band Cholesky of S + reg·I, S = X Jvᵀ assembled from the row pairs that share a
    body (X = Jc M⁻¹ for the dynamics: :func:`mass_weighted_rows`), redundant rows dropped
    (:func:`band_cholesky`: the rows of ``redundant`` and any that falls below drop_tol;
    ``dropped[r]`` 1, else 0; reg > 0 is the penalty formulations' 1/α, which keeps them all: their
    :func:`choose_rows` chooses none) and
    ``ratio[r]`` each pivot over its diagonal. Returns the smallest of those ratios among the
    kept rows (1: well conditioned; → 0 as a singular configuration is approached).
    Lb (m, bw + 1), dropped and ratio (m) are the caller's (workspace) arrays."""
    m = Lb.shape[0]
    Lb[:, :] = 0.0
    for p in range(pair_i.shape[0]):
        i, j, si, sj = pair_i[p], pair_j[p], pair_si[p], pair_sj[p]
        acc = 0.0
        for l in range(6):
            acc += X[i, si, l] * Jc[j, sj, l]
        Lb[i, i - j] += acc
    if reg > 0.0:
        for i in range(m):
            Lb[i, 0] += reg
    band_cholesky(Lb, m, bw, drop_tol, dropped, ratio, redundant)
    weakest = 1.0
    for r in range(m):
        if not dropped[r] and ratio[r] < weakest:
            weakest = ratio[r]
    return weakest


@numba.njit(**_JIT_LA)
def minv(nmov, imt, Jwinv, f, out):
    """out ← M⁻¹ f per moving body (f: forces in N and moments about the com in N m, world
    axes; out: m/s² and rad/s²; ``imt`` and ``Jwinv`` as in :func:`mass_weighted_rows`)."""
    for b in range(nmov):
        for i in range(3):
            out[6 * b + i] = imt[b, i, 0] * f[6 * b] + imt[b, i, 1] * f[6 * b + 1] + imt[b, i, 2] * f[6 * b + 2]
            out[6 * b + 3 + i] = (Jwinv[b, i, 0] * f[6 * b + 3] + Jwinv[b, i, 1] * f[6 * b + 4]
                                  + Jwinv[b, i, 2] * f[6 * b + 5])


@numba.njit(**_JIT_LA)
def apply_XT(X, rb, lam, out):
    """out −= Xᵀ λ (i.e. M⁻¹ Jvᵀ λ), per body."""
    m, ns = rb.shape
    for r in range(m):
        lr = lam[r]
        if lr == 0.0:
            continue
        for s in range(ns):
            b = rb[r, s]
            if b < 0:
                continue
            for l in range(6):
                out[6 * b + l] -= X[r, s, l] * lr


@numba.njit(**_JIT_LA)
def apply_X(X, rb, v, out):
    """out += X v (i.e. Jv M⁻¹ v) over the rows."""
    m, ns = rb.shape
    for r in range(m):
        acc = 0.0
        for s in range(ns):
            b = rb[r, s]
            if b < 0:
                continue
            for l in range(6):
                acc += X[r, s, l] * v[6 * b + l]
        out[r] += acc


@numba.njit(**_INLINE)
def velocity_residual(Jc, rb, y, nq, pt, out):
    """out[r] = (Jv v)_r + Φt_r over the kept rows."""
    m, ns = rb.shape
    for r in range(m):
        acc = pt[r]
        for s in range(ns):
            b = rb[r, s]
            if b < 0:
                continue
            o = nq + 6 * b
            for l in range(6):
                acc += Jc[r, s, l] * y[o + l]
        out[r] = acc


# ---------------------------------------------------------------- packed arguments
# A model's arrays travel in three flat arrays (float data, int data with a header table,
# and per-call float data) so the compiled call has a handful of arguments: numba's
# dispatch cost grows with the argument count. Entry k of the header, di[4k : 4k + 4],
# holds (offset, d0, d1, d2) of array k in its flat array.

@numba.njit(**_JIT)
def f1(df, di, k):
    """Packed array k of ``df`` (1-D, a view)."""
    o = di[4 * k]
    return df[o: o + di[4 * k + 1]]


@numba.extending.intrinsic
def c_view(typingctx, a, shape):
    """The C-contiguous array of ``shape`` (a tuple of ints) over the first prod(shape) items
    of the 1-D C-contiguous ``a`` (its data and owner, no copy, no size check: the packed
    header's shapes fit by construction).

    ``reshape`` would be a library call (~30 ns, a tenth of an evaluation of a small model
    over all the views) and ``as_strided`` types its result as of any layout, whose indexing
    LLVM cannot simplify: the band Cholesky of S took 1.9 µs on such views and 1.3 µs on
    C-contiguous arrays (slider-crank, m = 20, bandwidth 9)."""
    from numba.core import cgutils, types
    from numba.core.imputils import impl_ret_borrowed
    from numba.np.arrayobj import make_array, populate_array

    if not (isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C" and isinstance(shape, types.UniTuple)
            and isinstance(shape.dtype, types.Integer)):
        return None
    out_type = a.copy(ndim=shape.count, layout="C")

    def codegen(context, builder, sig, args):
        ary = make_array(sig.args[0])(context, builder, args[0])
        out = make_array(out_type)(context, builder)
        dims = [context.cast(builder, d, shape.dtype, types.intp) for d in cgutils.unpack_tuple(builder, args[1])]
        strides = [ary.itemsize]
        for d in dims[:0:-1]:  # C order: each stride the next one times the next dimension
            strides.insert(0, builder.mul(strides[0], d))
        populate_array(out, data=ary.data, shape=dims, strides=strides, itemsize=ary.itemsize, meminfo=ary.meminfo)
        return impl_ret_borrowed(context, builder, out_type, out._getvalue())

    return out_type(a, shape), codegen


@numba.njit(**_JIT)
def f2(df, di, k):
    """Packed array k of ``df`` (2-D, C-contiguous view)."""
    o, d0, d1 = di[4 * k], di[4 * k + 1], di[4 * k + 2]
    return c_view(df[o: o + d0 * d1], (d0, d1))


@numba.njit(**_JIT)
def f3(df, di, k):
    """Packed array k of ``df`` (3-D, C-contiguous view)."""
    o, d0, d1, d2 = di[4 * k], di[4 * k + 1], di[4 * k + 2], di[4 * k + 3]
    return c_view(df[o: o + d0 * d1 * d2], (d0, d1, d2))


@numba.njit(**_JIT)
def i1(di, k):
    """Packed int array k (1-D view of ``di``)."""
    o = di[4 * k]
    return di[o: o + di[4 * k + 1]]


@numba.njit(**_JIT)
def i2(di, k):
    """Packed int array k (2-D view of ``di``)."""
    return f2(di, di, k)


@numba.njit(**_JIT)
def max_abs(a):
    """max |a_i| (0 for an empty a)."""
    out = 0.0
    for i in range(a.shape[0]):
        x = abs(a[i])
        if x > out:
            out = x
    return out


@numba.njit(**_INLINE)
def norm_violation(y, nmov):
    """max over the moving bodies of ||p|² − 1|, p the Euler parameters in the state y."""
    out = 0.0
    for b in range(nmov):
        o = 7 * b + 3
        x = abs(y[o] * y[o] + y[o + 1] * y[o + 1] + y[o + 2] * y[o + 2] + y[o + 3] * y[o + 3] - 1.0)
        if x > out:
            out = x
    return out


@numba.njit(**_JIT)
def scatter_measures(values, pos, aux):
    """A group's joint measures (n, k) into ``aux[3 + pos]`` (pos −1: not a reported measure)."""
    for i in range(pos.shape[0]):
        for c in range(pos.shape[1]):
            p = pos[i, c]
            if p >= 0:
                aux[3 + p] = values[i, c]


# ---------------------------------------------------------------- layout of the packed arrays
#: every array's name, kind, shape and meaning: :mod:`.layout` (kinds 'f' model floats (df), 'i' model ints (di),
#: 'd' per-call floats written by Python before each call (dd), 'w' workspace (ws)); group arrays follow, per
#: constraint group
COMMON, GROUP = layout.COMMON, layout.GROUP
#: the formulation's numbers in ``stab``: Baumgarte α, β (1/s), the drop tolerance of redundant rows, the penalty ε,
#: the augmented Lagrangian's iterations and relative tolerance, the model's length scale (m)
N_STAB = 7
_I = {f.name: i for i, f in enumerate(COMMON)}
#: a group's arrays: header index = its row's G_BASE + the array's position in GROUP
_G = {f.name: j for j, f in enumerate(GROUP)}
#: columns of a group's row in ``grp``: template index, first row, equations per instance, whether it has
#: time functions (Φt), angle windings, joint measures; header index of its first array
G_TEMPLATE, G_ROW0, G_NEQ, G_TIMED, G_ANGLES, G_MEASURED, G_BASE = range(7)
#: positions of the driver arrays in GROUP (compiled code cannot read the dict)
GA_F, GA_FN_KIND, GA_FN_PROG, GA_FN_CONST, GA_SPL_X, GA_SPL_C, GA_SPL_N = (
    _G[n] for n in ("F", "fn_kind", "fn_prog", "fn_const", "spl_x", "spl_c", "spl_n"))
_G_JG, _G_BODIES, _G_MARKERS = _G["Jg"], _G["bodies"], _G["markers"]
#: how compiled code evaluates a driver's time function (``fn_kind``): not at all (a Python callback
#: fills F before the call), a program, a table's spline
FN_PYTHON, FN_PROGRAM, FN_TABLE = 0, 1, 2
I_Q_FIXED, I_COM, I_JB, I_JBINV, I_MASS, I_GRAVF, I_IMT = (_I[n] for n in ("q_fixed", "com_all", "Jb", "Jbinv",
                                                                            "mass", "gravf", "imt"))
I_ROW_MAP, I_RB, I_PI, I_PJ, I_PSI, I_PSJ, I_SIZES = (_I[n] for n in ("row_map", "rb", "pair_i", "pair_j", "pair_si",
                                                                      "pair_sj", "sizes"))
I_SP = _I["sp_ia"]
I_AX = _I["ax_ia"]
I_BL = _I["bl_ia"]
I_STAB = _I["stab"]
I_REDUNDANT = _I["redundant"]
I_QF, I_QDF, I_A, I_RHO, I_RC, I_E, I_JW, I_JWINV, I_B, I_BDOT, I_W, I_VC, I_JC, I_GAM, I_PT, I_PH, I_AUX = (
    _I[n] for n in ("qf", "qdf", "A", "rho", "rc", "E", "Jw", "Jwinv", "B", "bdot", "w", "vc", "Jc", "gam", "pt",
                    "ph", "aux"))
I_IS_ANGLE, I_MREF = _I["is_angle"], _I["mref"]
I_GRP = _I["grp"]
I_PG_OPS, I_PG_VAL, I_PG_START, I_PG_X, I_AX_PROG, I_LN_PROG = (_I[n] for n in ("pg_ops", "pg_val", "pg_start",
                                                                             "pg_x", "ax_prog", "ln_prog"))
I_AX_CONST = _I["ax_const"]  # (n_axis, m): the numbers of compiled torque expressions, row per element
I_LN = _I["ln_ia"]
I_LN_CONST = _I["ln_const"]  # (n_line, m): the same for force expressions along joint axes
I_BU = _I["bu_ia"]
I_TY = _I["ty_b"]  # tyres (:mod:`.tyres`): wheel bodies, centres, axes, parameters, bumps, their counts, outputs
I_CT = _I["ct_s"]  # compliant contacts (:mod:`._contact_kernels`), the 18 arrays from here on
I_X, I_LB, I_DROPPED, I_RATIO, I_X_KIN, I_L_KIN, I_DROP_KIN, I_RATIO_KIN = (
    _I[n] for n in ("X", "Lb", "dropped", "ratio", "X_kin", "L_kin", "drop_kin", "ratio_kin"))
I_VRES, I_RHS_C, I_LAM, I_LAM_NEW, I_FO, I_NO, I_FV, I_VD = (_I[n] for n in ("vres", "rhs_c", "lam", "lam_new", "Fo",
                                                                            "No", "fv", "vd"))


@numba.njit(**_JIT)
def count(di, k):
    """The length of packed array k (its first dimension)."""
    return di[4 * k + 1]


@numba.njit(**_JIT)
def applied_forces(df, di, dd, ws, F, N):
    """Gravity and the force elements the model has (from the workspace's body kinematics):
    F (N) and moments about the com N (N m), (nb, 3); returns the non-conservative power (W)."""
    nmov = i1(di, I_SIZES)[1]
    gravf = f2(df, di, I_GRAVF)
    F[:] = 0.0
    N[:] = 0.0
    for b in range(nmov):
        for i in range(3):
            F[b, i] = gravf[b, i]
    power = 0.0
    A = f3(ws, di, I_A)
    w = f2(ws, di, I_W)
    if count(di, I_SP):
        power += spring_forces(A, f2(ws, di, I_RC), w, f2(ws, di, I_VC), F, N, i1(di, I_SP), i1(di, I_SP + 1),
                               f2(df, di, I_SP + 2), f2(df, di, I_SP + 3), f1(df, di, I_SP + 4), f1(df, di, I_SP + 5),
                               f1(df, di, I_SP + 6), f1(df, di, I_SP + 7))
    if count(di, I_AX):
        power += axis_forces(A, w, N, i1(di, I_AX), i1(di, I_AX + 1), f3(df, di, I_AX + 2), f3(df, di, I_AX + 3),
                             f1(df, di, I_AX + 4), f1(df, di, I_AX + 5), f1(df, di, I_AX + 6), i1(di, I_AX + 7),
                             f1(dd, di, I_AX + 8), f1(dd, di, I_AX + 9))
    if count(di, I_BL):
        power += ball_forces(A, w, N, i1(di, I_BL), i1(di, I_BL + 1), f3(df, di, I_BL + 2), f3(df, di, I_BL + 3),
                             f1(df, di, I_BL + 4), f1(df, di, I_BL + 5))
    if count(di, I_LN):
        power += line_forces(A, f2(ws, di, I_RC), w, f2(ws, di, I_VC), F, N, i1(di, I_LN), i1(di, I_LN + 1),
                             f2(df, di, I_LN + 2), f3(df, di, I_LN + 3), f2(df, di, I_LN + 4), f1(dd, di, I_LN + 5))
    if count(di, I_BU):
        power += bushing_forces(A, f2(ws, di, I_RC), w, f2(ws, di, I_VC), F, N, i1(di, I_BU), i1(di, I_BU + 1),
                                f2(df, di, I_BU + 2), f2(df, di, I_BU + 3), f3(df, di, I_BU + 4),
                                f3(df, di, I_BU + 5), f2(df, di, I_BU + 6), f2(df, di, I_BU + 7),
                                f2(df, di, I_BU + 8), f2(df, di, I_BU + 9))
    if count(di, I_TY):
        power += tyre_forces(A, f2(ws, di, I_RC), w, f2(ws, di, I_VC), F, N, i1(di, I_TY), f2(df, di, I_TY + 1),
                             f2(df, di, I_TY + 2), f2(df, di, I_TY + 3), f3(df, di, I_TY + 4), i1(di, I_TY + 5),
                             f2(ws, di, I_TY + 6))
    if count(di, I_CT):
        power += contact_forces(A, f2(ws, di, I_RC), w, f2(ws, di, I_VC), F, N, *_contact_data(df, di, dd),
                                f1(ws, di, I_CT + 17))
    return power


@numba.njit(**_JIT)
def _contact_data(df, di, dd):
    """The compliant contacts' arrays (:mod:`._contact_kernels`): s, o, ds, do, no, half, axis, kind,
    par, pair, pc, feat, ft, bp, bx, state, opt."""
    return (i1(di, I_CT), i1(di, I_CT + 1), f2(df, di, I_CT + 2), f2(df, di, I_CT + 3), f2(df, di, I_CT + 4),
            f2(df, di, I_CT + 5), f2(df, di, I_CT + 6), i1(di, I_CT + 7), f2(df, di, I_CT + 8), i2(di, I_CT + 9),
            f2(df, di, I_CT + 10), i2(di, I_CT + 11), f2(df, di, I_CT + 12), i1(di, I_CT + 13),
            f2(df, di, I_CT + 14), f1(dd, di, I_CT + 15), i1(di, I_CT + 16))


@numba.njit(**_JIT)
def contact_step_limit(y, df, di, dd, ws):
    """The largest step (s) that strides over no compliant contact at the state y (inf without
    contacts); overwrites the workspace's body kinematics and clears its constraint rows."""
    if not count(di, I_CT):
        return np.inf
    stage_kinematics(y, df, di, ws)
    return contact_limit(f3(ws, di, I_A), f2(ws, di, I_RC), f2(ws, di, I_W), f2(ws, di, I_VC),
                         *_contact_data(df, di, dd))


@numba.njit(**_JIT)
def rotation_step_limit(y, di):
    """:func:`.integrators.rotation_step_limit` at the state y = [q, v, …] (reads y only)."""
    sizes = i1(di, I_SIZES)
    nq, nmov = sizes[0], sizes[1]
    w2 = 0.0
    for b in range(nmov):
        o = nq + 6 * b + 3
        w2 = max(w2, y[o] * y[o] + y[o + 1] * y[o + 1] + y[o + 2] * y[o + 2])
    return ROTATION_PER_STEP / (2.0 * math.sqrt(w2)) if 0.0 < w2 < np.inf else np.inf


@numba.njit(**_JIT)
def stage_kinematics(y, df, di, ws):
    """Body kinematics into the workspace; clears the constraint rows."""
    sizes = i1(di, I_SIZES)
    nq, nmov, nb = sizes[0], sizes[1], sizes[2]
    body_kinematics(y, nq, nmov, nb, f1(df, di, I_Q_FIXED), f2(df, di, I_COM), f3(df, di, I_JB), f3(df, di, I_JBINV),
                    f1(ws, di, I_QF), f1(ws, di, I_QDF), f3(ws, di, I_A), f2(ws, di, I_RHO), f2(ws, di, I_RC),
                    f3(ws, di, I_E), f3(ws, di, I_JW), f3(ws, di, I_JWINV), f3(ws, di, I_B), f2(ws, di, I_BDOT),
                    f2(ws, di, I_W), f2(ws, di, I_VC))
    f3(ws, di, I_JC)[:] = 0.0
    f1(ws, di, I_GAM)[:] = 0.0
    f1(ws, di, I_PT)[:] = 0.0
    f1(ws, di, I_PH)[:] = 0.0
    f1(ws, di, I_AUX)[:] = 0.0


@numba.njit(**_JIT_LA)
def _factor(df, di, dd, ws):
    """(X, Lb, dropped, weakest): X = Jc M⁻¹ and the band Cholesky of S = Jv M⁻¹ Jvᵀ (+ the
    penalty's 1/α) in the workspace (:func:`factor_S`), from its body kinematics and rows; the
    arrays are workspace views, overwritten by the next call."""
    sizes = i1(di, I_SIZES)
    bw = sizes[4]
    stab = f1(dd, di, I_STAB)
    Jc = f3(ws, di, I_JC)
    X = f3(ws, di, I_X)
    Lb = f2(ws, di, I_LB)
    dropped = f1(ws, di, I_DROPPED)
    mass_weighted_rows(f3(df, di, I_IMT), f3(ws, di, I_JWINV), Jc, i2(di, I_RB), X)
    weakest = factor_S(X, Jc, i1(di, I_PI), i1(di, I_PJ), i1(di, I_PSI), i1(di, I_PSJ), bw, stab[2], stab[3], Lb,
                       dropped, f1(ws, di, I_RATIO), f1(dd, di, I_REDUNDANT))
    return X, Lb, dropped, weakest


@numba.njit(**_JIT_LA)
def choose_rows(df, di, dd, ws):
    """At an accepted state (the workspace holds its body kinematics and joint rows): the rows
    the factor of S drops until the next one (``redundant`` in ``dd``), chosen by their pivots
    alone. On the joints a redundant row's pivot is round-off, far below every other; at the
    stage states of a step, off the joints, it rises towards the others (the N-four-bar's to
    3e-6), and a row dropped at one stage and kept at the next made ẏ jump between them. Returns
    True if the rows differ from the ones chosen before (ẏ at this state is then evaluated again,
    so that the next step's first stage drops them too)."""
    mask = f1(dd, di, I_REDUNDANT)
    before = mask.copy()
    mask[:] = 0.0
    _factor(df, di, dd, ws)
    dropped = f1(ws, di, I_DROPPED)
    changed = False
    for r in range(mask.shape[0]):
        mask[r] = dropped[r]
        if mask[r] != before[r]:
            changed = True
    return changed


@numba.njit(**_JIT)
def rows_still_chosen(df, di, dd, ws):
    """True if the factor of S in the workspace — the evaluation's at an accepted state, with the
    rows ``redundant`` chosen before dropped — shows that the pivots alone would drop exactly
    those rows: every row of ``redundant`` would be dropped by its pivot (``ratio`` 0, see
    :func:`band_cholesky`) and no other row was. :func:`choose_rows` at that state would then
    choose the same rows (and leave the same factor), so it need not factorise S again.

    Why that is exact: the factorisation without ``redundant`` takes the rows in the same order
    and drops row j when its pivot, given the rows before it, is not above drop_tol. While it has
    decided every row before j as the chosen rows say, it has handled them as this factor did
    (a dropped row zeroed, a kept one by the same arithmetic), so row j's pivot is the one this
    factor computed, bit for bit, and its decision the one recorded here; by induction over the
    rows it drops exactly ``redundant``."""
    mask = f1(dd, di, I_REDUNDANT)
    dropped = f1(ws, di, I_DROPPED)
    ratio = f1(ws, di, I_RATIO)
    for r in range(mask.shape[0]):
        if mask[r] != 0.0:
            if ratio[r] != 0.0:  # its pivot would keep it
                return False
        elif dropped[r] != 0.0:  # its pivot dropped it
            return False
    return True


@numba.njit(**_JIT_LA)
def singularity(df, di, dd, ws):
    """How near a singular configuration the evaluated state is: the smallest pivot ratio of
    Jv W Jvᵀ over its kept rows, W = diag(1, 1, 1, 1/ℓ², 1/ℓ², 1/ℓ²) per body with ℓ the
    model's length scale (``stab[6]``, :attr:`.equations.Dynamics.length_scale`): a purely
    kinematic measure, so that light or slender parts do not read as singular. 1: far from one.
    Factorises in the workspace's own arrays (X_kin, L_kin, drop_kin, ratio_kin), so the factor
    of S of the last evaluation is kept, its pivot ratios too (:func:`rows_still_chosen`)."""
    return singularity_rows(df, di, dd, ws, f1(ws, di, I_RATIO_KIN))


@numba.njit(**_JIT_LA)
def singularity_rows(df, di, dd, ws, s_rows):
    """:func:`singularity`, and each constraint row's part of it into ``s_rows`` (m,): the
    square root of the row's pivot ratio (a row's √ratio falls linearly to 0 as a singular
    configuration is crossed, the V the integrators' watch looks for), ``inf`` for a row
    dropped as redundant."""
    bw = i1(di, I_SIZES)[4]
    stab = f1(dd, di, I_STAB)
    Jc = f3(ws, di, I_JC)
    X = f3(ws, di, I_X_KIN)
    dropped = f1(ws, di, I_DROP_KIN)
    length_weighted_rows(Jc, i2(di, I_RB), 1.0 / (stab[6] * stab[6]), X)
    weakest = factor_S(X, Jc, i1(di, I_PI), i1(di, I_PJ), i1(di, I_PSI), i1(di, I_PSJ), bw, stab[2], 0.0,
                       f2(ws, di, I_L_KIN), dropped, s_rows, f1(dd, di, I_REDUNDANT))
    for r in range(s_rows.shape[0]):
        s_rows[r] = np.inf if dropped[r] != 0.0 else math.sqrt(max(s_rows[r], 0.0))
    return weakest


@numba.njit(**_JIT)
def stage_rhs(t, y, df, di, dd, ws):
    """ẏ = [q̇, v̇, P_nc] from the workspace filled by stage_kinematics and the group loop
    (q̇ in the state's units, v̇ in m/s² and rad/s², world axes, P_nc in W). Every intermediate
    is a workspace array: the returned ẏ is the only allocation."""
    sizes = i1(di, I_SIZES)
    nq, nmov, m, bw = sizes[0], sizes[1], sizes[3], sizes[4]
    nv = 6 * nmov
    stab = f1(dd, di, I_STAB)
    rb = i2(di, I_RB)
    gam = f1(ws, di, I_GAM)
    pt = f1(ws, di, I_PT)
    ph = f1(ws, di, I_PH)
    aux = f1(ws, di, I_AUX)
    Jw = f3(ws, di, I_JW)
    w = f2(ws, di, I_W)
    vres = f1(ws, di, I_VRES)
    velocity_residual(f3(ws, di, I_JC), rb, y, nq, pt, vres)
    if stab[0] != 0.0 or stab[1] != 0.0:
        for r in range(m):
            gam[r] += -2.0 * stab[0] * vres[r] - stab[1] * stab[1] * ph[r]
    Fo = f2(ws, di, I_FO)
    No = f2(ws, di, I_NO)
    power = applied_forces(df, di, dd, ws, Fo, No)
    f = f1(ws, di, I_FV)
    for b in range(nmov):
        Jww0 = Jw[b, 0, 0] * w[b, 0] + Jw[b, 0, 1] * w[b, 1] + Jw[b, 0, 2] * w[b, 2]
        Jww1 = Jw[b, 1, 0] * w[b, 0] + Jw[b, 1, 1] * w[b, 1] + Jw[b, 1, 2] * w[b, 2]
        Jww2 = Jw[b, 2, 0] * w[b, 0] + Jw[b, 2, 1] * w[b, 1] + Jw[b, 2, 2] * w[b, 2]
        for i in range(3):
            f[6 * b + i] = Fo[b, i]
        f[6 * b + 3] = No[b, 0] - (w[b, 1] * Jww2 - w[b, 2] * Jww1)
        f[6 * b + 4] = No[b, 1] - (w[b, 2] * Jww0 - w[b, 0] * Jww2)
        f[6 * b + 5] = No[b, 2] - (w[b, 0] * Jww1 - w[b, 1] * Jww0)
    X, Lb, dropped, weakest = _factor(df, di, dd, ws)
    vd = f1(ws, di, I_VD)
    minv(nmov, f3(df, di, I_IMT), f3(ws, di, I_JWINV), f, vd)
    rhs_c = f1(ws, di, I_RHS_C)
    for r in range(m):
        rhs_c[r] = -gam[r]
    apply_X(X, rb, f, rhs_c)
    lam = f1(ws, di, I_LAM)
    multipliers(Lb, m, bw, rhs_c, dropped, stab, gam, lam, f1(ws, di, I_LAM_NEW))
    apply_XT(X, rb, lam, vd)
    qdf = f1(ws, di, I_QDF)
    out = np.empty(nq + nv + 1)
    for i in range(nq):
        out[i] = qdf[i]
    for i in range(nv):
        out[nq + i] = vd[i]
    pc = 0.0
    for r in range(m):
        pc += lam[r] * pt[r]
    out[nq + nv] = power + pc
    aux[0] = max_abs(vres)
    aux[1] = max(max_abs(ph), norm_violation(y, nmov))
    aux[2] = weakest
    ok = True
    for i in range(out.shape[0]):
        if not math.isfinite(out[i]):
            ok = False
    return out, ok


@numba.njit(**_JIT_LA)
def frame_reactions(df, di, dd, ws, lam_out, wrench_out, involved):
    """An output frame's reactions, after ``rhs`` at the frame's state (the workspace holds its
    body kinematics, joint rows, factor of S and λ on the kept rows; the index-1 equations,
    without stabilisation terms). As :meth:`.equations.Dynamics.full_multipliers` and
    :meth:`.equations.Dynamics.constraint_wrenches` compute them in numpy:

    * ``lam_out`` (nc,), model row order: the minimum-norm λ over all rows, λ0 − N (NᵀN)⁻¹ Nᵀ λ0 with
      one column of N per row the factor dropped, e_k − c_k on the kept rows, c_k = S⁻¹ Jr M⁻¹ Jkᵀ
      (N m, N: the row's generalised force); ``involved[r]`` set to 1 for each row with a part in
      a redundancy (|N| > 1e-9 max(1, max |N|)), whose reactions are not unique;
    * ``wrench_out`` (Σ instances, 6), in group and instance order: the constraint wrench on each
      instance's second slot body, −(Φq B)ᵀ λ over the instance's rows, as [F (N), T (N m)] in
      world axes with T about the origin P of the instance's first marker (on its first body):
      T = n_c + (r_c − P) × F (instances with one slot: zeros).

    NᵀN is positive definite (N holds the identity on the dropped rows); returns False if μ is
    not finite (λ0 is then left in ``lam_out``)."""
    sizes = i1(di, I_SIZES)
    nmov, m, bw = sizes[1], sizes[3], sizes[4]
    X, Jc, Lb = f3(ws, di, I_X), f3(ws, di, I_JC), f2(ws, di, I_LB)
    dropped, lam = f1(ws, di, I_DROPPED), f1(ws, di, I_LAM)
    rb, row_map = i2(di, I_RB), i1(di, I_ROW_MAP)
    ns = rb.shape[1]
    nd = 0
    for r in range(m):
        if dropped[r] != 0.0:
            nd += 1
    lam_mn = lam.copy()
    inv_ws = np.zeros(m, np.int64)
    ok = True
    if nd:
        N = np.zeros((m, nd))
        col = np.empty(m)
        c = 0
        for d in range(m):
            if dropped[d] == 0.0:
                continue
            for i in range(m):  # (Jr M⁻¹ Jdᵀ)_i over the bodies row i shares with row d
                acc = 0.0
                if dropped[i] == 0.0:
                    for si in range(ns):
                        b = rb[i, si]
                        if b < 0:
                            continue
                        for sd in range(ns):
                            if rb[d, sd] == b:
                                for l in range(6):
                                    acc += X[i, si, l] * Jc[d, sd, l]
                col[i] = acc
            band_solve(Lb, m, bw, col, dropped)
            for i in range(m):
                N[i, c] = -col[i]
            N[d, c] = 1.0
            c += 1
        NtN = np.zeros((nd, nd))
        Ntl = np.zeros(nd)
        nmax = 1.0
        for i in range(m):
            for a in range(nd):
                x = N[i, a]
                if abs(x) > nmax:
                    nmax = abs(x)
                Ntl[a] += x * lam[i]
                for b in range(nd):
                    NtN[a, b] += x * N[i, b]
        mu = np.linalg.solve(NtN, Ntl)
        for i in range(m):
            acc = 0.0
            for a in range(nd):
                acc += N[i, a] * mu[a]
                if abs(N[i, a]) > 1e-9 * nmax:
                    inv_ws[i] = 1
            lam_mn[i] -= acc
        ok = math.isfinite(mu.sum())
        if not ok:
            lam_mn[:] = lam
    for r in range(row_map.shape[0]):  # workspace (RCM) order → model order
        if row_map[r] >= 0:
            lam_out[r] = lam_mn[row_map[r]]
            if inv_ws[row_map[r]]:
                involved[r] = 1
        else:
            lam_out[r] = 0.0
    A, rho, rc, qf, B = f3(ws, di, I_A), f2(ws, di, I_RHO), f2(ws, di, I_RC), f1(ws, di, I_QF), f3(ws, di, I_B)
    grp = i2(di, I_GRP)
    Bf = np.zeros((7, 6))
    k = 0
    for g in range(grp.shape[0]):
        row0, neq, base = grp[g, G_ROW0], grp[g, G_NEQ], grp[g, G_BASE]
        Jg = f3(ws, di, base + _G_JG)
        bodies = i2(di, base + _G_BODIES)
        markers = f2(df, di, base + _G_MARKERS)
        for i in range(bodies.shape[0]):
            for l in range(6):
                wrench_out[k, l] = 0.0
            if bodies.shape[1] < 2:
                k += 1
                continue
            bi, bj = bodies[i, 0], bodies[i, 1]
            if bj < nmov:
                Bj = B[bj]
            else:  # a fixed body: B as for a moving one (ṙ = v_c + ρ × ω, ṗ = ½ Eᵀ ω)
                Bj = Bf
                e0, e1, e2, e3 = qf[7 * bj + 3], qf[7 * bj + 4], qf[7 * bj + 5], qf[7 * bj + 6]
                Bf[:, :] = 0.0
                Bf[0, 0] = Bf[1, 1] = Bf[2, 2] = 1.0
                Bf[0, 4], Bf[0, 5] = -rho[bj, 2], rho[bj, 1]
                Bf[1, 3], Bf[1, 5] = rho[bj, 2], -rho[bj, 0]
                Bf[2, 3], Bf[2, 4] = -rho[bj, 1], rho[bj, 0]
                Ef = ((-e1, e0, -e3, e2), (-e2, e3, e0, -e1), (-e3, -e2, e1, e0))
                for kk in range(4):
                    for ll in range(3):
                        Bf[3 + kk, 3 + ll] = 0.5 * Ef[ll][kk]
            for e in range(neq):
                lr = lam_out[row0 + i * neq + e]
                for l in range(6):
                    acc = 0.0
                    for kk in range(7):
                        acc += Jg[i, e, 7 + kk] * Bj[kk, l]
                    wrench_out[k, l] -= acc * lr
            Ai, m0, m1, m2 = A[bi], markers[i, 0], markers[i, 1], markers[i, 2]  # P = r_i + A_i (marker origin)
            d0 = rc[bj, 0] - (qf[7 * bi] + Ai[0, 0] * m0 + Ai[0, 1] * m1 + Ai[0, 2] * m2)
            d1 = rc[bj, 1] - (qf[7 * bi + 1] + Ai[1, 0] * m0 + Ai[1, 1] * m1 + Ai[1, 2] * m2)
            d2 = rc[bj, 2] - (qf[7 * bi + 2] + Ai[2, 0] * m0 + Ai[2, 1] * m1 + Ai[2, 2] * m2)
            F0, F1, F2 = wrench_out[k, 0], wrench_out[k, 1], wrench_out[k, 2]
            wrench_out[k, 3] += d1 * F2 - d2 * F1
            wrench_out[k, 4] += d2 * F0 - d0 * F2
            wrench_out[k, 5] += d0 * F1 - d1 * F0
            k += 1
    return ok


@numba.njit(**_JIT_LA)
def multipliers(Lb, m, bw, rhs_c, dropped, stab, gam, lam, lam_new):
    """lam ← λ from the factor of S + εI (ε = stab[3]) and rhs_c = Jv M⁻¹ f − γ̂ (lam_new: the
    iteration's scratch, m).

    Index 1 and penalty (ε = 1/α): one solve. Augmented Lagrangian (stab[4] = max_iter > 1):
    the iteration λ ← λ + α (Jv v̇ + r) of the penalty matrix in Schur-complement form,
    (S + εI) λₖ₊₁ = rhs_c + ε λₖ from λ₀ = 0, until α·ε|λₖ₊₁ − λₖ| = |Jv v̇ + r| ≤
    stab[5] (1 + max |r|) with r = −γ̂ (Baumgarte terms included): it converges to the exact
    index-1 λ."""
    n_iter = int(stab[4])
    eps = stab[3]
    if n_iter <= 1 or eps <= 0.0:
        for r in range(m):
            lam[r] = rhs_c[r]
        band_solve(Lb, m, bw, lam, dropped)
        return
    tol = stab[5] * (1.0 + max_abs(gam))
    for r in range(m):
        lam[r] = 0.0
    for _ in range(n_iter):
        for r in range(m):
            lam_new[r] = rhs_c[r] + eps * lam[r]
        band_solve(Lb, m, bw, lam_new, dropped)
        res = 0.0
        for r in range(m):
            d = eps * abs(lam_new[r] - lam[r])
            if d > res:
                res = d
            lam[r] = lam_new[r]
        if res <= tol:
            break


@numba.njit(**_JIT)
def position_violation(y, di, ws):
    """max |Φ| over the rows, or the largest ||p|² − 1|, after an evaluation at y (m, rad, 1)."""
    return max(max_abs(f1(ws, di, I_PH)), norm_violation(y, i1(di, I_SIZES)[1]))


@numba.njit(**_JIT)
def position_step(y, df, di, dd, ws):
    """y[:nq] += B Δv with Δv = −M⁻¹ Jvᵀ S⁻¹ Φ (one mass-weighted Newton step); p renormalised."""
    sizes = i1(di, I_SIZES)
    nmov, m, bw = sizes[1], sizes[3], sizes[4]
    X, Lb, dropped, _ = _factor(df, di, dd, ws)
    mu = f1(ws, di, I_LAM)
    mu[:] = f1(ws, di, I_PH)
    band_solve(Lb, m, bw, mu, dropped)
    dv = f1(ws, di, I_VD)
    dv[:] = 0.0
    apply_XT(X, i2(di, I_RB), mu, dv)
    B = f3(ws, di, I_B)
    for b in range(nmov):
        for k in range(7):
            acc = 0.0
            for l in range(6):
                acc += B[b, k, l] * dv[6 * b + l]
            y[7 * b + k] += acc
        nrm = math.sqrt(y[7 * b + 3] ** 2 + y[7 * b + 4] ** 2 + y[7 * b + 5] ** 2 + y[7 * b + 6] ** 2)
        for k in range(3, 7):
            y[7 * b + k] /= nrm


@numba.njit(**_JIT)
def velocity_step(y, df, di, dd, ws, tol):
    """v −= M⁻¹ Jvᵀ S⁻¹ (Jv v + Φt) if the violation exceeds tol; returns the violation before."""
    sizes = i1(di, I_SIZES)
    nq, nmov, m, bw = sizes[0], sizes[1], sizes[3], sizes[4]
    mu = f1(ws, di, I_LAM)
    velocity_residual(f3(ws, di, I_JC), i2(di, I_RB), y, nq, f1(ws, di, I_PT), mu)
    viol = max_abs(mu)
    if viol > tol:
        X, Lb, dropped, _ = _factor(df, di, dd, ws)
        band_solve(Lb, m, bw, mu, dropped)
        dv = f1(ws, di, I_VD)
        dv[:] = 0.0
        apply_XT(X, i2(di, I_RB), mu, dv)
        for i in range(6 * nmov):
            y[nq + i] += dv[i]
    return viol


# ---------------------------------------------------------------- the model's expressions
@numba.njit(**_JIT)
def time_functions(t, df, di, dd, ws, base):
    """F = (f, f', f'') at t (s) of a driver group's instances (the group's arrays from header
    index ``base``) whose time function compiled code evaluates: a program or a table's spline;
    a Python callback's row was filled before the call (:meth:`.fast.FastRHS._update`)."""
    kind = i1(di, base + GA_FN_KIND)
    F = f2(dd, di, base + GA_F)
    prog = i2(di, base + GA_FN_PROG)
    const = f2(df, di, base + GA_FN_CONST)
    ops, vals, start = i2(di, I_PG_OPS), f1(df, di, I_PG_VAL), i1(di, I_PG_START)
    spl_x, spl_c, spl_n = f2(df, di, base + GA_SPL_X), f3(df, di, base + GA_SPL_C), i1(di, base + GA_SPL_N)
    x = f1(ws, di, I_PG_X)
    x[0], x[1], x[2] = t, 0.0, 0.0
    for i in range(kind.shape[0]):
        if kind[i] == FN_PROGRAM:
            for d in range(3):
                F[i, d] = evaluate_program(ops, vals, start, prog[i, d], x, const[i])
        elif kind[i] == FN_TABLE:
            v = spline_value(spl_x[i], spl_c[i], spl_n[i], t)
            F[i, 0], F[i, 1], F[i, 2] = v[0], v[1], v[2]


@numba.njit(**_JIT)
def stage_expressions(t, df, di, dd, ws):
    """The expression elements' values at t (s) from the workspace's body kinematics: torques
    τ_s(t, q, qd) about joint axes into ``tau`` (q the element's continuous angle, rad, qd its
    rate, rad/s, as :meth:`.forces.ForceElements._angles` computes them) and forces
    F_s(t, q, qd) along joint axes into ``ln_F`` (q the displacement along the axis, m, qd its
    rate, m/s, :func:`line_state`); elements without a program keep what Python wrote."""
    ops, vals, start = i2(di, I_PG_OPS), f1(df, di, I_PG_VAL), i1(di, I_PG_START)
    x = f1(ws, di, I_PG_X)
    A = f3(ws, di, I_A)
    w = f2(ws, di, I_W)
    x[0] = t
    prog = i1(di, I_AX_PROG)
    if prog.shape[0]:
        two_pi = 2.0 * math.pi
        ia, ib = i1(di, I_AX), i1(di, I_AX + 1)
        Ri, Rj = f3(df, di, I_AX + 2), f3(df, di, I_AX + 3)
        ref, tau = f1(dd, di, I_AX + 8), f1(dd, di, I_AX + 9)
        C = f2(df, di, I_AX_CONST)
        for s in range(prog.shape[0]):
            if prog[s] < 0:
                continue
            a, b = ia[s], ib[s]
            raw, z0, z1, z2 = axis_angle(A, a, b, Ri[s], Rj[s])
            x[1] = raw + two_pi * np.round((ref[s] - raw) / two_pi)
            x[2] = z0 * (w[b, 0] - w[a, 0]) + z1 * (w[b, 1] - w[a, 1]) + z2 * (w[b, 2] - w[a, 2])
            tau[s] = evaluate_program(ops, vals, start, prog[s], x, C[s])
    prog = i1(di, I_LN_PROG)
    if prog.shape[0]:
        rc, vc = f2(ws, di, I_RC), f2(ws, di, I_VC)
        lia, lib = i1(di, I_LN), i1(di, I_LN + 1)
        Di, LR, Dj = f2(df, di, I_LN + 2), f3(df, di, I_LN + 3), f2(df, di, I_LN + 4)
        mag = f1(dd, di, I_LN + 5)
        C = f2(df, di, I_LN_CONST)
        for s in range(prog.shape[0]):
            if prog[s] < 0:
                continue
            q, qd, z0, z1, z2 = line_state(A, rc, w, vc, lia[s], lib[s], Di[s], LR[s], Dj[s])
            x[1], x[2] = q, qd
            mag[s] = evaluate_program(ops, vals, start, prog[s], x, C[s])
    return 0


# ---------------------------------------------------------------- after an accepted step
@numba.njit(**_JIT)
def accept_refs(df, di, dd, ws):
    """After an evaluation at an accepted state: the axis elements' angle references and the
    joint measures' continuity references (``mref``, angles only) follow that state, and the
    compliant contacts record their impact speeds."""
    two_pi = 2.0 * math.pi
    A = f3(ws, di, I_A)
    ia, ib = i1(di, I_AX), i1(di, I_AX + 1)
    Ri, Rj = f3(df, di, I_AX + 2), f3(df, di, I_AX + 3)
    ref = f1(dd, di, I_AX + 8)
    for s in range(ia.shape[0]):
        raw = axis_angle(A, ia[s], ib[s], Ri[s], Rj[s])[0]
        ref[s] = raw + two_pi * np.round((ref[s] - raw) / two_pi)
    aux = f1(ws, di, I_AUX)
    is_angle = i1(di, I_IS_ANGLE)
    mref = f1(dd, di, I_MREF)
    for p in range(mref.shape[0]):
        raw = aux[3 + p]
        if is_angle[p]:
            mref[p] = raw + two_pi * np.round((mref[p] - raw) / two_pi)
        else:
            mref[p] = raw
    if count(di, I_CT):  # the contacts' impact speeds
        contact_accept(A, f2(ws, di, I_RC), f2(ws, di, I_W), f2(ws, di, I_VC), *_contact_data(df, di, dd))
