"""Solves with the kept rows of a large sparse Jacobian: reusing the column order of a first
factorisation (the Jacobian's pattern is fixed) gives the exact solution at any pose."""

import math

import numpy as np
import pytest

from cadmotion.importers.modelfile import parse_model
from cadmotion.kernel import compile_model
from cadmotion.kernel.analysis import rank_info
from cadmotion.kernel.linalg import DENSE_LIMIT, RowSolver
from cadmotion.kernel.system import AngleState, System


def _loop(n):
    """A closed planar loop of n unit links (a regular n-gon, link0 fixed), all but 3 joints driven."""
    P = np.zeros((n + 1, 2))
    for k in range(n):
        a = -2 * math.pi * k / n
        P[k + 1] = P[k] + [math.cos(a), math.sin(a)]
    parts = {"link0": {"fixed": True}}
    parts.update({f"link{k}": {"position": [float(P[k, 0]), float(P[k, 1]), 0.0]} for k in range(1, n)})
    joints = [{"name": f"j{k}", "type": "revolute", "parts": [f"link{(k - 1) % n}", f"link{k}"],
               "origin": [float(P[k, 0]), float(P[k, 1]), 0.0], "axis": [0, 0, 1]} for k in range(n)]
    drivers = [{"joint": f"j{k}", "expression": f"0.01*sin(t + {k})"} for k in range(n)
               if k not in (0, n // 3, 2 * n // 3)]
    return compile_model(parse_model({"parts": parts, "joints": joints, "drivers": drivers}, source="<loop>"))


def test_a_solver_reusing_the_first_column_order_solves_exactly_at_another_pose():
    model = _loop(30)
    assert model.nq > DENSE_LIMIT  # the sparse path
    system = System(model)
    angles = AngleState(model, model.q0)
    J0 = system.jacobian(model.q0, 0.0, angles)
    rows = rank_info(J0).independent
    pattern = RowSolver(J0, rows).pattern(J0)
    assert pattern is not None

    rng = np.random.default_rng(1)
    q = model.q0 + 1e-2 * rng.standard_normal(model.nq)  # another pose, same pattern
    J = system.jacobian(q, 0.3, angles)
    b = rng.standard_normal(model.nc)
    reused = RowSolver(J, rows, pattern)
    x = reused.solve(b)
    Jr = J.tocsr()[rows]
    assert np.abs(Jr @ x - b[rows]).max() < 1e-11 * np.abs(b).max()
    fresh = RowSolver(J, rows)
    np.testing.assert_allclose(x, fresh.solve(b), rtol=0, atol=1e-11)
    assert reused.rcond > 0 and abs(reused.rcond - fresh.rcond) <= 1e-12 * fresh.rcond


@pytest.mark.parametrize("n", [3, 8, DENSE_LIMIT + 40])
def test_the_determinant_sign_is_numpy_s_on_dense_sparse_and_reused_patterns(n):
    """RowSolver.det_sign (from the LU factors and the parities of their permutations, for the
    kinematics' branch check) against the sign of numpy's determinant, for matrices that need row
    swaps and, beyond DENSE_LIMIT, sparse ones with a column order and a pattern reused."""
    import scipy.sparse as sps

    rng = np.random.default_rng(n)
    rows = np.arange(n)
    for _ in range(6):
        band = sps.random(n, n, density=min(1.0, 6.0 / n), random_state=rng) + sps.diags(rng.normal(size=n))
        J = sps.csc_matrix(band[rng.permutation(n)]) if n > DENSE_LIMIT else band.toarray()[rng.permutation(n)]
        expected = np.linalg.slogdet(J.toarray() if sps.issparse(J) else J)[0]
        first = RowSolver(J, rows)
        assert first.det_sign == expected
        pattern = first.pattern(J)
        if pattern is not None:  # the same structure, other values: the column order is reused
            J2 = J.copy()
            J2.data = rng.normal(size=J2.nnz)
            assert RowSolver(J2, rows, pattern).det_sign == np.linalg.slogdet(J2.toarray())[0]
