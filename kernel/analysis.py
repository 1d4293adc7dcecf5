"""Rank, redundancy and mobility of a constraint Jacobian.

The numerical rank of Φq (nc × nq) decides everything:

    rank       = number of independent constraint equations
    redundant  = nc − rank equations that are linear combinations of the others
    mobility   = nq − rank (the mechanism's degrees of freedom, drivers counted as equations)

Small systems use a dense QR factorisation of Φqᵀ with column pivoting (the pivot order
picks independent rows). Large sparse systems find the left null space of Φq from the
smallest eigenpairs of Φq Φqᵀ (shift-invert Lanczos) and pick redundant rows from it
by a pivoted QR of that small basis — cost grows with nc, not nc³.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

import numpy as np

from .lapack import qr_economic_q, qr_pivoted_r
from .linalg import issparse

__all__ = ["RankInfo", "rank_info", "DENSE_LIMIT", "FreeMotion", "free_motion"]

DENSE_LIMIT = 600  # rows + columns up to which dense QR is used
DENSE_FALLBACK = 3000  # up to this size, dense QR when the first Lanczos run finds only zeros


@dataclass
class RankInfo:
    """Result of :func:`rank_info`: ``independent`` and ``redundant`` are row indices."""

    rank: int
    nc: int
    nq: int
    independent: np.ndarray
    redundant: np.ndarray
    smallest: float = 0.0  # smallest retained pivot / singular value, relative to the largest
    notes: List[str] = field(default_factory=list)

    @property
    def dof(self):
        """nq − rank."""
        return self.nq - self.rank


def _dense(J, rtol):
    nc, nq = J.shape
    if nc == 0:
        return RankInfo(0, 0, nq, np.zeros(0, int), np.zeros(0, int), 1.0)
    R, piv = qr_pivoted_r(J.T)
    diag = np.abs(np.diag(R))
    scale = diag[0] if diag.size and diag[0] > 0 else 1.0
    rank = int(np.sum(diag > rtol * scale))
    smallest = float(diag[rank - 1] / scale) if rank else 0.0
    return RankInfo(rank, nc, nq, np.sort(piv[:rank]), np.sort(piv[rank:]), smallest)


def _sparse(J, rtol):
    from scipy.sparse.linalg import eigsh

    nc, nq = J.shape
    A = (J @ J.T).tocsc()
    scale = float(abs(A).max()) or 1.0
    # eigenvalues of J Jᵀ are σ², computed to about eps·‖A‖: σ below ~3e-7·σ_max counts as
    # zero (exact redundancy gives ~1e-8 or less), the σ of long regular chains stay above
    tol = 1e-13 * scale
    shift = 1e-10 * scale  # shift-invert about −shift: exact zeros come out first, A + shift·I factorises
    k = min(12, nc - 1)
    while True:
        vals, vecs = eigsh(A, k=k, sigma=-shift, which="LM")
        small = vals < tol
        if small.all() and nc + nq <= DENSE_FALLBACK:
            # many redundant rows: growing k costs more than one dense QR of this size
            return _dense(J.toarray(), rtol)
        if small.all() and k < nc - 1:
            k = min(2 * k, nc - 1)
            continue
        break
    N = vecs[:, small]
    r = N.shape[1]
    if r:
        _, piv = qr_pivoted_r(N.T)
        redundant = np.sort(piv[:r])
    else:
        redundant = np.zeros(0, int)
    independent = np.setdiff1d(np.arange(nc), redundant)
    retained = vals[~small]
    smallest = float(np.sqrt(retained.min() / scale)) if retained.size else 1.0
    return RankInfo(nc - r, nc, nq, independent, redundant, smallest)


def rank_info(J, rtol=1e-9, prefer=None):
    """Numerical rank and a split of the rows of ``J`` into independent and redundant.

    Parameters
    ----------
    J : ndarray or sparse matrix, shape (nc, nq)
    rtol : pivots below ``rtol`` times the largest count as zero.
    prefer : row indices to keep among the independent rows where a choice exists (e.g.
        the Euler-parameter normalisations, so that redundancy is blamed on joints). The
        other rows are ranked after projecting out the span of the preferred ones.
    """
    if prefer is not None and len(prefer):
        return _with_preferred_rows(J, np.asarray(prefer, int), rtol)
    nc, nq = J.shape
    if issparse(J):
        if nc + nq <= DENSE_LIMIT or nc < 3:
            return _dense(J.toarray(), rtol)
        return _sparse(J.tocsr(), rtol)
    return _dense(np.asarray(J), rtol)


def _with_preferred_rows(J, prefer, rtol):
    nc, nq = J.shape
    rest = np.setdiff1d(np.arange(nc), prefer)
    J = J.tocsr() if issparse(J) else np.asarray(J)
    P, R = J[prefer], J[rest]
    first = rank_info(P, rtol)
    P = P[first.independent]
    if issparse(P):
        PPt = (P @ P.T).tocsr()
        disjoint = PPt.nnz == P.shape[0] and np.all(PPt.indices == np.arange(P.shape[0]))
    else:
        disjoint = False
    if disjoint:  # rows on separate columns (one normalisation per body): project in sparse form
        import scipy.sparse as sps

        Q = sps.diags(1.0 / np.sqrt(PPt.diagonal())) @ P
        R = (R - (R @ Q.T) @ Q).tocsr()
    else:
        dense_p = P.toarray() if issparse(P) else P
        Q = qr_economic_q(dense_p.T)
        dense_r = R.toarray() if issparse(R) else R
        R = dense_r - (dense_r @ Q) @ Q.T
    # rows the preferred ones span entirely are left as zeros: redundant without a factorisation
    # (the sparse null-space search cannot return a null space as large as the matrix)
    norms = np.sqrt(np.asarray(abs(R.multiply(R) if issparse(R) else R * R).sum(axis=1)).ravel())
    scale = _row_scale(J)
    alive = norms > rtol * scale
    second = rank_info(R[np.flatnonzero(alive)], rtol)
    live = rest[alive]
    independent = np.sort(np.concatenate([prefer[first.independent], live[second.independent]]))
    redundant = np.sort(np.concatenate([prefer[first.redundant], live[second.redundant], rest[~alive]]))
    return RankInfo(first.rank + second.rank, nc, nq, independent, redundant, min(first.smallest, second.smallest))


def _row_scale(J):
    """The largest row norm of ``J`` (1 for an empty or zero matrix)."""
    sq = J.multiply(J).sum(axis=1) if issparse(J) else (J * J).sum(axis=1)
    m = float(np.sqrt(np.max(sq))) if J.shape[0] else 0.0
    return m or 1.0


@dataclass(frozen=True)
class FreeMotion:
    """What the drivers leave free at a pose, to first order (:func:`free_motion`).

    Attributes
    ----------
    null : ndarray (k, nq)
        Orthonormal basis of the null space of Φq (all rows): the free motions.
    left : ndarray (nc, k')
        Orthonormal basis of the left null space of Φq.
    coordinates : list of str
        ``joint.kind`` of the joint coordinates that change along a free motion, in the model's order.
    parts : list of str
        The moving parts that move along a free motion, in the model's order.
    """

    null: np.ndarray
    left: np.ndarray
    coordinates: List[str]
    parts: List[str]


#: step (in the unit free direction) of the joint coordinates' difference quotient in :func:`free_motion`
_FREE_STEP = 1e-7


def free_motion(model, system, J, q):
    """The free motions of Φq (``J``, dense or sparse) at ``q`` and the joint coordinates and parts that
    move along them (a dense SVD: callers keep it to models of a few thousand coordinates). A coordinate
    is named where its rate along a free motion is above 1e-6 and 1e-3 of the largest (angles compared
    modulo a turn), a part where its coordinates move by more than 1e-6 along one."""
    J = J.toarray() if issparse(J) else np.asarray(J)
    U, sv, Vt = np.linalg.svd(J)
    rank = int(np.sum(sv > 1e-9 * max(sv[0], 1.0))) if len(sv) else 0
    null, left = Vt[rank:], U[:, rank:]
    coordinates = []
    if model.joint_measures and len(null):
        m0 = system.joint_measures(q)
        for n in null:
            d = system.joint_measures(q + _FREE_STEP * n) - m0
            d = np.abs(np.remainder(d + np.pi, 2 * np.pi) - np.pi) / _FREE_STEP
            for i, (joint, kind, _, _) in enumerate(model.joint_measures):
                name = f"{joint}.{kind}"
                if d[i] > 1e-3 * max(np.max(d), 1e-12) and d[i] > 1e-6 and name not in coordinates:
                    coordinates.append(name)
    moving = np.abs(null).reshape(len(null), -1, model.nqb).max(axis=(0, 2)) if len(null) else np.zeros(0)
    parts = [model.body_names[b] for b in np.flatnonzero(moving > 1e-6)]
    return FreeMotion(null, left, coordinates, parts)
