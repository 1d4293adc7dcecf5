"""Linear solves with the constraint Jacobian, redundant rows removed.

Given the independent rows ``rows`` of Φq (from :func:`cadmotion.kernel.analysis.rank_info`),
J_r = Φq[rows] has full row rank. Then J_r x = b_r is solved

* exactly, by LU, when J_r is square (a fully driven mechanism);
* in the minimum-norm sense, x = J_rᵀ (J_r J_rᵀ)⁻¹ b_r, when it is wide (a mechanism
  with free degrees of freedom, e.g. during assembly).

Dense LAPACK is used up to :data:`DENSE_LIMIT` unknowns, SuperLU beyond, so the cost of
a factorisation grows about linearly with the size of a chain-like mechanism. scipy.sparse
is imported only on the sparse side (the dense routines come from :mod:`.lapack`), so a
small model's run does not pay for it.
"""

from __future__ import annotations

import functools
import sys

import numpy as np

from .lapack import cho_factor, cho_solve, gecon, getrf, getrs

__all__ = ["RowSolver", "WeightedRowSolver", "SparsePattern", "DENSE_LIMIT", "issparse", "scale_columns"]

DENSE_LIMIT = 120


def issparse(a):
    """Whether ``a`` is a scipy.sparse matrix or array. A process that has not imported
    scipy.sparse holds none, so the check does not import it (dense models never need it)."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(a)


def scale_columns(J, colscale):
    """J · diag(colscale), dense or sparse as ``J`` is."""
    if issparse(J):
        import scipy.sparse as sps

        return J @ sps.diags(colscale)
    return J * colscale


def _splu(A, permc_spec):
    from scipy.sparse.linalg import splu

    return splu(A, permc_spec=permc_spec)


class SparsePattern:
    """The sparsity of J[rows] with its columns in a fill-reducing order, worked out once.

    A model's Jacobian has a fixed CSC pattern (:meth:`~cadmotion.kernel.model.Model.jacobian_matrix`),
    so the entries of J[rows][:, order] are always the same positions of ``J.data``:
    :class:`RowSolver` takes them by index and factorises in that column order, instead of
    slicing rows, converting formats and ordering the columns (COLAMD) at every pose.
    ``order`` comes from a first factorisation (SuperLU's ``perm_c``).
    """

    def __init__(self, J, rows, order):
        import scipy.sparse as sps

        J = sps.csc_matrix(J)
        self.rows, self.nnz, self.order = rows, J.nnz, np.asarray(order)
        marker = sps.csc_matrix((np.arange(1.0, J.nnz + 1.0), J.indices, J.indptr), shape=J.shape)
        sub = sps.csc_matrix(marker.tocsr()[rows][:, self.order])
        sub.sort_indices()
        self.take = sub.data.astype(np.int64) - 1
        self.indices, self.indptr, self.shape = sub.indices, sub.indptr, sub.shape

    @functools.cached_property
    def parity(self):
        """The parity (±1) of the column order (:func:`_parity`), for :attr:`RowSolver.det_sign`."""
        return _parity(self.order)

    def matches(self, J, rows):
        """Whether ``J`` (CSC) has this pattern's structure and row selection, so the ordering can be reused."""
        import scipy.sparse as sps

        return sps.isspmatrix_csc(J) and J.nnz == self.nnz and rows is self.rows

    def ordered(self, J):
        """J[rows][:, order] as CSC, from the values of ``J`` (same pattern)."""
        import scipy.sparse as sps

        return sps.csc_matrix((J.data[self.take], self.indices, self.indptr), shape=self.shape)


class RowSolver:
    """Factorisation of J[rows] for repeated solves; ``rcond`` estimates its conditioning.

    ``pattern`` (a :class:`SparsePattern` of the same J pattern and rows) makes the sparse
    square factorisation reuse its column order."""

    def __init__(self, J, rows, pattern=None):
        self.rows = rows
        self._order = None
        if pattern is not None and J.shape[1] > DENSE_LIMIT and pattern.matches(J, rows):
            self.shape = pattern.shape
            self.square, self.dense = True, False
            self._order, self._order_parity = pattern.order, pattern.parity
            self._lu = _splu(pattern.ordered(J), "NATURAL")
            u = np.abs(self._lu.U.diagonal())
            self.rcond = float(u.min() / u.max()) if u.size and u.max() > 0 else 0.0
            return
        Jr = J[rows] if not issparse(J) else J.tocsr()[rows]
        m, n = Jr.shape
        self.shape = (m, n)
        self.square = m == n
        self.dense = n <= DENSE_LIMIT
        if self.dense:
            Jr = Jr.toarray() if issparse(Jr) else np.asarray(Jr)
            self.Jr = Jr
            if self.square:
                lu, piv, info = getrf(Jr)  # LAPACK directly, as lu_factor (an exact zero pivot: rcond 0)
                if info < 0:  # pragma: no cover - only for invalid arguments
                    raise ValueError(f"LAPACK getrf failed (info {info})")
                self._lu = (lu, piv)
                anorm = np.abs(Jr).sum(axis=0).max()
                self.rcond = float(gecon(lu, anorm, norm="1")[0]) if anorm > 0 and info == 0 else 0.0
            else:
                G = Jr @ Jr.T
                self._cho = cho_factor(G)
                d = np.diag(G)
                self.rcond = float(np.sqrt(d.min() / d.max())) if d.size else 1.0
        else:
            import scipy.sparse as sps

            Jr = sps.csc_matrix(Jr)
            self.Jr = Jr
            if self.square:
                self._lu = _splu(Jr, "COLAMD")
            else:
                self._lu = _splu((Jr @ Jr.T).tocsc(), "MMD_AT_PLUS_A")
            u = np.abs(self._lu.U.diagonal())
            self.rcond = float(u.min() / u.max()) if u.size and u.max() > 0 else 0.0

    def solve(self, b):
        """x with J[rows] x = b[rows] (exact if square, minimum norm otherwise)."""
        br = b[self.rows]
        if self.dense:
            if self.square:  # LAPACK directly: scipy's lu_solve checks cost more than the solve
                x, info = getrs(self._lu[0], self._lu[1], br)
                if info != 0:  # pragma: no cover - only for invalid arguments
                    raise ValueError(f"LAPACK getrs failed (info {info})")
                return x
            return self.Jr.T @ cho_solve(self._cho, br)
        if self._order is not None:  # columns were factorised in pattern order
            x = np.empty(self.shape[1])
            x[self._order] = self._lu.solve(br)
            return x
        if self.square:
            return self._lu.solve(br)
        return self.Jr.T @ self._lu.solve(br)

    @functools.cached_property
    def det_sign(self):
        """The sign (+1 or −1) of det J[rows] when J[rows] is square, from its LU factors
        (0 at an exact zero pivot); None when it is not square.

        Along a continuous path of poses on which J[rows] stays regular the sign cannot
        change: a change between two poses means a singular pose lies between them (a
        dead centre or a bifurcation passed, or a jump to the other assembly mode)."""
        if not self.square:
            return None
        if self.dense:
            lu, piv = self._lu
            d = np.diag(lu)
            swaps = int(np.count_nonzero(piv != np.arange(len(piv))))
            return int(np.prod(np.sign(d))) * (-1 if swaps % 2 else 1)
        d = self._lu.U.diagonal()
        sign = int(np.prod(np.sign(d))) * _parity(self._lu.perm_r) * _parity(self._lu.perm_c)
        return sign * (self._order_parity if self._order is not None else 1)


    def pattern(self, J):
        """A :class:`SparsePattern` of J[rows] in the column order of this factorisation
        (sparse square only, else None)."""
        if self.dense or not self.square or self._order is not None:
            return None
        return SparsePattern(J, self.rows, np.argsort(self._lu.perm_c))


class WeightedRowSolver:
    """Minimum-norm solves of J[rows] x = b[rows] in a weighted metric: the x of least
    ‖x / colscale‖₂, i.e. ``colscale · (J·diag(colscale))⁺ b``.

    ``colscale`` (nq,) > 0: a small weight makes a coordinate expensive to move (the
    orientation coordinates weighted by 1/L, L a length in m: a change δ of an
    orientation coordinate costs as much as a move of L·δ).  ``J`` is kept for
    :meth:`matvec`.  ``rcond`` estimates the conditioning of the scaled rows from the
    pivots of their Gram matrix factorisation (the square root of the Gram matrix's
    pivot ratio, about the ratio of the extreme singular values), so it drops towards 0
    where the kept rows lose rank, as the square solver's does.
    """

    def __init__(self, J, rows, colscale):
        self.rows = rows
        self.colscale = np.asarray(colscale, dtype=float)
        self.J = J
        Js = scale_columns(J, self.colscale)
        self._inner = RowSolver(Js, rows)
        inner = self._inner
        self.shape = inner.shape
        if inner.square:
            self.rcond = inner.rcond
        elif inner.dense:
            d = np.abs(np.diag(inner._cho[0]))
            self.rcond = float(d.min() / d.max()) if d.size and d.max() > 0 else 0.0
        else:
            self.rcond = float(np.sqrt(inner.rcond))

    def solve(self, b):
        """x of least weighted norm with J[rows] x = b[rows]."""
        return self.colscale * self._inner.solve(b)

    def solve_multipliers(self, b):
        """(x, λ): the least weighted-norm x of :meth:`solve` and the λ (one per kept row)
        with x = diag(colscale)² J[rows]ᵀ λ; λ is None when the kept rows are square (x is
        then the only solution)."""
        inner = self._inner
        if inner.square:
            return self.solve(b), None
        br = b[self.rows]
        if inner.dense:
            lam = cho_solve(inner._cho, br)
        else:
            lam = inner._lu.solve(br)
        return self.colscale * (inner.Jr.T @ lam), lam

    def matvec(self, x):
        """J x (all rows) with the Jacobian this factorisation was taken at."""
        return np.asarray(self.J @ x).reshape(-1)

    def pattern(self, J):
        """None: the weighted solver refactors every time (no structure is reused)."""
        return None


def _parity(perm):
    """+1 for an even permutation (an array of 0 … n − 1), −1 for an odd one: n minus its cycle count.
    The cycles are counted by their smallest members, each element's label the minimum over its
    cycle by pointer doubling (log₂ n whole-array passes: 0.14 ms for n = 7,000, a Python walk 1 ms)."""
    perm = np.asarray(perm, dtype=np.int64)
    n = len(perm)
    if np.array_equal(perm, np.arange(n)):  # the natural order of a reused pattern
        return 1
    label, jump = np.arange(n), perm.copy()
    for _ in range(max(1, n.bit_length())):
        label = np.minimum(label, label[jump])
        jump = jump[jump]
    cycles = int(np.count_nonzero(label == np.arange(n)))
    return -1 if (n - cycles) % 2 else 1
