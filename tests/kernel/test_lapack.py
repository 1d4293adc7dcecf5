"""The LAPACK routines of the kinematic path (:mod:`cadmotion.kernel.lapack`): scipy's own
wrappers loaded without ``import scipy.linalg``.

Each helper is checked against what it factorises (its defining identity, to round-off) and
against the scipy.linalg function it stands for, which must give the same numbers bit for bit
(the same LAPACK routine with the same arguments), so that no kinematic result changes.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg as sla

from cadmotion.kernel import lapack

RNG = np.random.default_rng(15)


@pytest.mark.parametrize("shape", [(7, 5), (5, 7), (6, 6), (12, 3)])
def test_pivoted_qr_orders_the_columns_by_the_size_of_their_pivots_as_scipy_does(shape):
    a = RNG.standard_normal(shape)
    a[:, -1] = a[:, 0] + a[:, 1]  # one dependent column: a zero pivot last
    R, piv = lapack.qr_pivoted_r(a)
    d = np.abs(np.diag(R))
    assert np.all(np.diff(d) <= 1e-12 * d[0])
    assert np.allclose(np.tril(R, -1), 0.0)
    assert np.allclose(R.T @ R, a[:, piv].T @ a[:, piv], atol=1e-12 * np.abs(a).max() ** 2)  # QᵀQ = I
    R_ref, piv_ref = sla.qr(a, mode="r", pivoting=True)
    assert np.array_equal(piv, piv_ref) and np.array_equal(R, R_ref)


@pytest.mark.parametrize("shape", [(7, 4), (4, 7), (5, 5)])
def test_economic_q_is_orthonormal_spans_the_columns_and_matches_scipy(shape):
    a = RNG.standard_normal(shape)
    Q = lapack.qr_economic_q(a)
    k = min(shape)
    assert Q.shape == (shape[0], k)
    assert np.allclose(Q.T @ Q, np.eye(k), atol=1e-14 * 10)
    assert np.allclose(Q @ (Q.T @ a), a, atol=1e-13)
    assert np.array_equal(Q, sla.qr(a, mode="economic")[0])


def test_cholesky_solves_a_positive_definite_system_and_refuses_an_indefinite_one():
    J = RNG.standard_normal((4, 9))
    G = J @ J.T
    b = RNG.standard_normal(4)
    c = lapack.cho_factor(G)
    x = lapack.cho_solve(c, b)
    assert np.allclose(G @ x, b, atol=1e-12)
    ref = sla.cho_factor(G, check_finite=False)
    assert np.array_equal(c[0], ref[0]) and np.array_equal(x, sla.cho_solve(ref, b, check_finite=False))
    with pytest.raises(np.linalg.LinAlgError):
        lapack.cho_factor(-G)


def test_a_non_finite_matrix_is_refused_as_by_scipy():
    a = np.eye(3)
    a[1, 2] = np.nan
    with pytest.raises(ValueError):
        lapack.qr_pivoted_r(a)


def test_the_routines_load_without_importing_scipy_linalg_and_scipy_linalg_still_imports_after():
    """``import scipy.linalg`` costs a process about 0.3 s (scipy's array-API layer); the
    kinematic path needs its LAPACK wrappers only. A later import of scipy.linalg (a dynamic
    run) must find its package whole and the same compiled routines."""
    script = """
import json, sys
from cadmotion.kernel import lapack
before = sorted(m for m in sys.modules if m.startswith("scipy"))
import scipy.linalg
from scipy.linalg import _flapack
print(json.dumps([before, scipy.linalg.lapack.dgetrf is lapack.getrf, _flapack.dgeqp3 is lapack.geqp3]))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    before, same_getrf, same_geqp3 = json.loads(proc.stdout.strip().splitlines()[-1])
    assert before == []
    assert same_getrf and same_geqp3
