"""Compiled articulated-body passes (see :mod:`.articulated`, whose numpy code is the reference).

The same operations as :class:`.articulated.ArticulatedBodies` as loops over the tree joints:
:func:`factor` (the articulated inertias, D_k⁻¹) and :func:`solve` (M̄⁻¹ (Rᵀ g + τ) for r
right-hand sides), O(n) each. The tree arrives as arrays (``par``, ``chi``: each joint's parent
and child part, −1 for the ground; ``za``, ``ncol``: its first velocity coordinate and its
number), so one compiled function serves every model.
"""

import numpy as np

from ..numba_cache import numba  # numba, its cache folder named by the kernel sources

_JIT = dict(cache=True, nogil=True, fastmath=False)


@numba.njit(**_JIT)
def factor(mass, J, rc, b, par, chi, za, ncol, S, U, Dinv):
    """The factors at one pose, as :meth:`.articulated.ArticulatedBodies.factor`: mass (nmov,)
    kg, J (nmov, 3, 3) kg m² about the centres of mass rc (nmov, 3) m, b (nz, 6) the columns at
    the world origin (world axes). Writes S (nz, 6) the columns at their joint's child's centre of
    mass, U (nz, 6) = I^A S and Dinv (nj, 6, 6) (each joint's D_k⁻¹ in its top-left n_k × n_k);
    returns False where a D_k is not positive definite."""
    nmov, nj = mass.shape[0], par.shape[0]
    IA = np.zeros((nmov, 6, 6))
    for bd in range(nmov):
        for i in range(3):
            IA[bd, i, i] = mass[bd]
            for j in range(3):
                IA[bd, 3 + i, 3 + j] = J[bd, i, j]
    L = np.empty((6, 6))
    Ia = np.empty((6, 6))
    W = np.empty((6, 6))
    for k in range(nj - 1, -1, -1):
        c, p, z0, n = chi[k], par[k], za[k], ncol[k]
        r0, r1, r2 = rc[c, 0], rc[c, 1], rc[c, 2]
        for col in range(z0, z0 + n):
            b3, b4, b5 = b[col, 3], b[col, 4], b[col, 5]
            S[col, 0] = b[col, 0] - (r1 * b5 - r2 * b4)
            S[col, 1] = b[col, 1] - (r2 * b3 - r0 * b5)
            S[col, 2] = b[col, 2] - (r0 * b4 - r1 * b3)
            S[col, 3], S[col, 4], S[col, 5] = b3, b4, b5
            for i in range(6):
                acc = 0.0
                for j in range(6):
                    acc += IA[c, i, j] * S[col, j]
                U[col, i] = acc
        # D_k = Sᵀ U (n × n), its Cholesky factor L and D_k⁻¹ = L⁻ᵀ L⁻¹
        for i in range(n):
            for j in range(i + 1):
                acc = 0.0
                for m in range(6):
                    acc += S[z0 + i, m] * U[z0 + j, m]
                for m in range(j):
                    acc -= L[i, m] * L[j, m]
                if i == j:
                    if not acc > 0.0:
                        return False
                    L[i, i] = np.sqrt(acc)
                else:
                    L[i, j] = acc / L[j, j]
        for j in range(n):  # columns of L⁻¹ into W (lower triangular)
            for i in range(n):
                acc = 1.0 if i == j else 0.0
                for m in range(j, i):
                    acc -= L[i, m] * W[m, j]
                W[i, j] = acc / L[i, i] if i >= j else 0.0
        for i in range(n):
            for j in range(n):
                acc = 0.0
                for m in range(max(i, j), n):
                    acc += W[m, i] * W[m, j]
                Dinv[k, i, j] = acc
        if p < 0:
            continue
        # I^a = I^A − U D⁻¹ Uᵀ, moved to the parent's centre of mass and added to its I^A
        for i in range(6):
            for j in range(6):
                acc = IA[c, i, j]
                for a in range(n):
                    ua = 0.0
                    for e in range(n):
                        ua += Dinv[k, a, e] * U[z0 + e, j]
                    acc -= U[z0 + a, i] * ua
                Ia[i, j] = acc
        _shift_inertia(Ia, rc[c, 0] - rc[p, 0], rc[c, 1] - rc[p, 1], rc[c, 2] - rc[p, 2], W)
        for i in range(6):
            for j in range(6):
                IA[p, i, j] += W[i, j]
    return True


@numba.njit(**_JIT)
def _shift_inertia(I, d0, d1, d2, out):
    """out = Tᵀ I T, T = [[1, −[d]×], [0, 1]]: the inertia I at a point moved by −d (to the point
    the motions T m come from, d = child − parent)."""
    T = np.eye(6)
    T[0, 4], T[0, 5], T[1, 3] = d2, -d1, -d2
    T[1, 5], T[2, 3], T[2, 4] = d0, d1, -d0
    IT = np.empty((6, 6))
    _product6(I, T, False, IT)
    _product6(T, IT, True, out)


@numba.njit(**_JIT)
def _product6(A, B, transpose, out):
    """out = A B, or Aᵀ B with ``transpose`` (6 × 6)."""
    for i in range(6):
        for j in range(6):
            acc = 0.0
            for m in range(6):
                acc += (A[m, i] if transpose else A[i, m]) * B[m, j]
            out[i, j] = acc


@numba.njit(**_JIT)
def solve(tau, g, rc, par, chi, za, ncol, S, U, Dinv, x):
    """x (nz, r) = M̄⁻¹ (Rᵀ g + τ) with the factors of :func:`factor`: τ (nz, r) generalised
    forces, g (nmov, 6) the parts' forces [F; N] about their centres of mass (N, N m, world)."""
    nmov, nj, r = rc.shape[0], par.shape[0], tau.shape[1]
    pA = np.empty((nmov, 6, r))
    for bd in range(nmov):
        for i in range(6):
            for q in range(r):
                pA[bd, i, q] = -g[bd, i]
    u = np.empty((tau.shape[0], r))
    v = np.empty(6)
    for k in range(nj - 1, -1, -1):
        c, p, z0, n = chi[k], par[k], za[k], ncol[k]
        for q in range(r):
            for a in range(n):
                acc = tau[z0 + a, q]
                for i in range(6):
                    acc -= S[z0 + a, i] * pA[c, i, q]
                u[z0 + a, q] = acc
            if p < 0:
                continue
            for i in range(6):  # p^a = p^A + U D⁻¹ u
                acc = pA[c, i, q]
                for a in range(n):
                    ua = 0.0
                    for e in range(n):
                        ua += Dinv[k, a, e] * u[z0 + e, q]
                    acc += U[z0 + a, i] * ua
                v[i] = acc
            d0, d1, d2 = rc[c, 0] - rc[p, 0], rc[c, 1] - rc[p, 1], rc[c, 2] - rc[p, 2]
            pA[p, 0, q] += v[0]
            pA[p, 1, q] += v[1]
            pA[p, 2, q] += v[2]
            pA[p, 3, q] += v[3] + d1 * v[2] - d2 * v[1]  # N + d × F
            pA[p, 4, q] += v[4] + d2 * v[0] - d0 * v[2]
            pA[p, 5, q] += v[5] + d0 * v[1] - d1 * v[0]
    A = np.zeros((nmov, 6, r))
    for k in range(nj):
        c, p, z0, n = chi[k], par[k], za[k], ncol[k]
        for q in range(r):
            if p >= 0:  # the parent's acceleration at the child's centre of mass: v − d × ω
                d0, d1, d2 = rc[c, 0] - rc[p, 0], rc[c, 1] - rc[p, 1], rc[c, 2] - rc[p, 2]
                w0, w1, w2 = A[p, 3, q], A[p, 4, q], A[p, 5, q]
                A[c, 0, q] = A[p, 0, q] - (d1 * w2 - d2 * w1)
                A[c, 1, q] = A[p, 1, q] - (d2 * w0 - d0 * w2)
                A[c, 2, q] = A[p, 2, q] - (d0 * w1 - d1 * w0)
                A[c, 3, q], A[c, 4, q], A[c, 5, q] = w0, w1, w2
            for a in range(n):
                acc = u[z0 + a, q]
                for i in range(6):
                    acc -= U[z0 + a, i] * A[c, i, q]
                v[a] = acc
            for a in range(n):
                acc = 0.0
                for e in range(n):
                    acc += Dinv[k, a, e] * v[e]
                x[z0 + a, q] = acc
            for a in range(n):
                for i in range(6):
                    A[c, i, q] += S[z0 + a, i] * x[z0 + a, q]
