"""Linear complementarity problems: find z ≥ 0 with w = G z + b ≥ 0 and zᵀ w = 0.

Two solvers for the two kinds of problem the unilateral contacts pose (:mod:`.unilateral`):

* :func:`lcp` — Murty's least-index principal pivoting, for a positive semidefinite G (impacts: the
  normal rows' inverse effective mass J_n A J_nᵀ); the subproblems by least squares, so redundant rows
  (a box's four corners on a plane) are solved too.
* :func:`lemke` — Lemke's complementary pivoting with the covering vector e = 1 (Cottle, Pang & Stone,
  *The Linear Complementarity Problem*, 1992, §4.4), for the non-symmetric problems of contacts with
  Coulomb friction (the friction pyramid's rows are coupled to the normal forces by μ). It ends at a
  solution, or at a secondary ray where the problem has none it can reach (returned as None).

And the sharing of redundant contact rows' forces (:func:`pushing_solution`): of the solutions of K λ = r,
the least-norm one whose normal forces push, a least-distance program (:func:`least_distance`) solved by
non-negative least squares (Lawson & Hanson, *Solving Least Squares Problems*, 1974, ch. 23).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import nnls

__all__ = ["RCOND", "lcp", "lemke", "least_distance", "pushing_solution"]

#: singular values below this fraction of the largest are rank deficiency in the contacts' matrices
#: (least squares, ``rcond``). Their entries J A Fᵀ carry the joints' elimination, whose round-off leaves
#: redundant rows (rollers sticking on a sprocket of a closed chain, a box's corners on a plane) with
#: singular values of 1e-13 of the largest, not 0: with numpy's default (machine ε times the size) those
#: were inverted, and the least-squares forces took on components of ±1,000 N that pull (λ_n < 0) and move
#: the parts along directions the contacts do not see (the chain drive, measured 2026-11-27). Physical
#: ratios (a light part against a heavy one) lie far above: 2.5e-4 on that chain.
RCOND = 1e-10

#: principal pivoting steps of :func:`lcp` per unknown
_LCP_PIVOTS = 20
#: complementary pivots of :func:`lemke` per unknown before it gives up
_LEMKE_PIVOTS = 50


def lcp(G, b, tol=1e-12):
    """z ≥ 0 with w = G z + b ≥ 0 and zᵀ w = 0 (Murty's least-index principal pivoting; the
    subproblems by least squares, so a positive semidefinite G with redundant rows is solved too).
    Returns (z, w)."""
    n = len(b)
    scale = max(1.0, float(np.max(np.abs(b)))) if n else 1.0
    active = b < 0
    z = np.zeros(n)
    for _ in range(_LCP_PIVOTS * max(n, 1)):
        z = np.zeros(n)
        idx = np.flatnonzero(active)
        if len(idx):
            z[idx] = np.linalg.lstsq(G[np.ix_(idx, idx)], -b[idx], rcond=RCOND)[0]
        w = G @ z + b
        bad = np.flatnonzero((active & (z < -tol * scale)) | (~active & (w < -tol * scale)))
        if not len(bad):
            break
        active[bad[0]] = not active[bad[0]]
    return np.maximum(z, 0.0), G @ np.maximum(z, 0.0) + b


def lemke(G, b, tol=1e-10):
    """z ≥ 0 with w = G z + b ≥ 0 and zᵀ w = 0 by Lemke's algorithm (any square G), or None when it
    ends on a ray or passes :data:`_LEMKE_PIVOTS` pivots per unknown, or its answer misses the
    conditions by more than ``tol`` relative to the largest of |b| and |G z|.

    The tableau is [I, −G, −e | b] over the basic variables (w at the start); the artificial z₀ enters
    at the row of the most negative b, then each leaving variable's complement enters (the minimum
    ratio test; ties go to z₀ leaving, then to the least index) until z₀ leaves."""
    G = np.asarray(G, float)
    b = np.asarray(b, float)
    n = len(b)
    if n == 0 or np.all(b >= 0):
        return np.zeros(n)
    scale = max(1.0, float(np.max(np.abs(b))))
    eps = 1e-13 * scale
    T = np.hstack([np.eye(n), -G, -np.ones((n, 1)), b[:, None]])
    basis = np.arange(n)  # basic variable of each row: 0…n−1 the w's, n…2n−1 the z's, 2n is z₀
    z0 = 2 * n

    def pivot(row, col):
        T[row] /= T[row, col]
        others = np.arange(n) != row
        T[others] -= np.outer(T[others, col], T[row])
        leaving = int(basis[row])
        basis[row] = col
        return leaving

    leaving = pivot(int(np.argmin(b)), z0)
    for _ in range(_LEMKE_PIVOTS * n):
        entering = leaving + n if leaving < n else leaving - n
        col = T[:, entering]
        rows = np.flatnonzero(col > eps)
        if not len(rows):
            return None  # a secondary ray
        ratios = T[rows, -1] / col[rows]
        ties = rows[ratios <= ratios.min() + eps]
        at_z0 = ties[basis[ties] == z0]
        leaving = pivot(int(at_z0[0] if len(at_z0) else ties[0]), entering)
        if leaving == z0:
            break
    else:
        return None
    z = np.zeros(n)
    is_z = (basis >= n) & (basis < z0)
    z[basis[is_z] - n] = T[is_z, -1]
    z = np.maximum(z, 0.0)
    w = G @ z + b
    size = max(scale, float(np.max(np.abs(G @ z))))
    if np.min(w) < -tol * size or abs(float(z @ w)) > tol * size * max(1.0, float(np.sum(z))):
        return None
    return z


def pushing_solution(K, r, pushing, conditions=()):
    """λ (k,) solving K λ = r (k × k; least squares at the rank threshold :data:`RCOND`): the least-norm one,
    or where that one breaks a condition and K is rank deficient, the least-norm solution that keeps them,
    λ₀ + N w with N the null space of K and w the least |w| with D (λ₀ + N w) ≥ h. The conditions: λ[pushing]
    ≥ 0 (indices into λ: the normal forces), then each (D, h) of ``conditions`` (D m × k, h m; the friction
    cones: :meth:`.unilateral.UnilateralContacts.cone_rows`), or of ``conditions(λ₀)`` where it is a function of
    the least-norm solution; where no sharing keeps them all, the last set is dropped, and so on (none kept:
    λ₀). Where K's rows are redundant (rollers sticking on
    a sprocket of a closed chain, a box's corners on a plane) the contact forces are not unique: the
    least-norm ones can pull at a point (−7 N on the chain drive) or hold one sticking beyond μ_s λ_n while
    another sharing of the same rows pushes everywhere inside the cones, and a point opened for that pull
    accelerates into its shape. Violations below 10⁻¹² of the largest |λ₀| are round-off. The choice is
    continuous in K and r while the conditions kept stay the same: it is λ₀ itself until λ₀ reaches one."""
    if not len(r):
        return np.zeros(0)
    U, s, Vt = np.linalg.svd(K)
    rank = int(np.sum(s > RCOND * s[0])) if s[0] > 0 else 0
    lam = Vt[:rank].T @ ((U[:, :rank].T @ r) / s[:rank])
    if rank == len(r):
        return lam
    sets = [(np.eye(len(r))[np.asarray(pushing, int)], np.zeros(len(pushing)))]
    if callable(conditions):
        conditions = conditions(lam)
    sets += [(np.asarray(D, float), np.asarray(h, float)) for D, h in conditions if len(h)]
    N = Vt[rank:].T
    round_off = 1e-12 * float(np.max(np.abs(lam)))
    for kept in range(len(sets), 0, -1):
        D = np.vstack([d for d, _ in sets[:kept]])
        h = np.concatenate([b for _, b in sets[:kept]])
        if not len(h) or (D @ lam - h).min() >= -round_off:
            return lam
        w = least_distance(D @ N, h - D @ lam)
        if w is not None:
            return lam + N @ w
    return lam


def least_distance(G, h):
    """The least |w| with G w ≥ h (G m × p), or None where no w satisfies it: Lawson and Hanson's
    least-distance program by non-negative least squares, u ≥ 0 minimising |E u − f| with
    E = [Gᵀ; hᵀ], f = [0, …, 0, 1], and w = −ρ[:p] / ρ[p] from the residual ρ = E u − f."""
    m, p = G.shape
    E = np.vstack([G.T, h[None, :]])
    f = np.zeros(p + 1)
    f[p] = 1.0
    u, _ = nnls(E, f, maxiter=50 * max(m, 1))
    rho = E @ u - f
    if abs(rho[p]) <= 1e-12 * max(1.0, float(np.linalg.norm(rho))) or -rho[p] < 1e-12:
        return None
    return -rho[:p] / rho[p]
