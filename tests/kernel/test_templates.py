"""Every generated constraint template agrees with finite differences of its own Φ.

For random body poses, velocities, marker frames and driver values:
- Φq equals the central difference of Φ in q;
- Φt equals the central difference of Φ in t (through f(t));
- γ equals −d²Φ/dt² along q(t) = q + q̇ t (so q̈ = 0), by central differences;
- the numpy and numba backends give the same numbers, and so do the numpy code's Python loop
  (few instances) and its whole-array statements (many).
"""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from cadmotion.kernel.symbolic.codegen import BACKENDS, LOOP_MAX, generated
from cadmotion.kernel.symbolic.parametrization import get_parametrization
from cadmotion.kernel.symbolic.templates import TEMPLATES

N = 3  # instances evaluated at once
RNG = np.random.default_rng(7)


def random_inputs(template, par, N=N):
    nqb = par.nqb
    Q = np.zeros((N, template.n_slots * nqb))
    QD = RNG.normal(size=Q.shape)
    for k in range(template.n_slots):
        Q[:, k * nqb:k * nqb + 3] = RNG.normal(size=(N, 3))
        if par.name == "euler-parameters":
            p = RNG.normal(size=(N, 4))
            p /= np.linalg.norm(p, axis=1, keepdims=True)
            Q[:, k * nqb + 3:(k + 1) * nqb] = p
        else:
            Q[:, k * nqb + 3:(k + 1) * nqb] = RNG.uniform(0.3, 2.8, size=(N, 3))
    M = np.zeros((N, template.n_slots * 12))
    for k in range(template.n_slots):
        M[:, 12 * k:12 * k + 3] = RNG.normal(size=(N, 3))
        M[:, 12 * k + 3:12 * (k + 1)] = Rotation.random(N, random_state=int(RNG.integers(1e6))).as_matrix().reshape(N, 9)
    S = RNG.uniform(0.5, 1.5, size=(N, len(template.params)))
    F = RNG.normal(size=(N, 3))
    W = np.zeros((N, len(template.angle_terms)))
    return Q, QD, M, S, F, W


CASES = [(name, par) for name in TEMPLATES if not TEMPLATES[name].numeric for par in ("euler-parameters", "euler-313")
         if not (name == "normalize" and par == "euler-313")]


@pytest.mark.parametrize("name,par", CASES)
def test_generated_derivatives_match_finite_differences(name, par):
    template = TEMPLATES[name]
    parm = get_parametrization(par)
    code = generated(name, par, "numpy")  # the derivation is under test, not the backend
    Q, QD, M, S, F, W = random_inputs(template, parm)
    h = 1e-6
    J = code.jac(Q, M, S, F, W)
    for k in range(Q.shape[1]):
        dQ = np.zeros_like(Q)
        dQ[:, k] = h
        fd = (code.phi(Q + dQ, M, S, F, W) - code.phi(Q - dQ, M, S, F, W)) / (2 * h)
        np.testing.assert_allclose(J[:, :, k], fd, atol=1e-6, rtol=1e-6, err_msg=f"{name} dΦ/dq{k}")

    # time derivatives along q(t) = Q + QD t, f(t) = f0 + f1 t + f2 t²/2
    def phi_at(t):
        Ft = np.column_stack([F[:, 0] + F[:, 1] * t + 0.5 * F[:, 2] * t * t, F[:, 1] + F[:, 2] * t, F[:, 2]])
        return code.phi(Q + QD * t, M, S, Ft, W)

    hs = 1e-4
    if template.timed:
        # Φt at fixed q: only f moves
        def phi_f(t):
            Ft = np.column_stack([F[:, 0] + F[:, 1] * t, F[:, 1], F[:, 2]])
            return code.phi(Q, M, S, Ft, W)

        np.testing.assert_allclose(code.phit(Q, M, S, F, W), (phi_f(h) - phi_f(-h)) / (2 * h), atol=1e-6)
    else:
        assert np.all(code.phit(Q, M, S, F, W) == 0)
    d2 = (phi_at(hs) - 2 * phi_at(0.0) + phi_at(-hs)) / hs**2
    np.testing.assert_allclose(code.gamma(Q, QD, M, S, F, W), -d2, atol=2e-4, rtol=1e-4, err_msg=f"{name} γ")


@pytest.mark.parametrize("name", [name for name, par in CASES if par == "euler-parameters"])
def test_few_instances_loop_and_many_use_whole_arrays_with_the_same_numbers(name):
    """Up to LOOP_MAX instances the numpy code runs a Python loop of floats, beyond it whole-array
    statements; an instance's numbers do not depend on which (to a few units of round-off)."""
    template = TEMPLATES[name]
    code = generated(name, "euler-parameters", "numpy")
    Q, QD, M, S, F, W = random_inputs(template, get_parametrization("euler-parameters"), LOOP_MAX + 1)
    few = slice(0, 3)
    for fn in ("phi", "jac", "phit"):
        many = getattr(code, fn)(Q, M, S, F, W)
        np.testing.assert_allclose(many[few], getattr(code, fn)(Q[few], M[few], S[few], F[few], W[few]), rtol=1e-13,
                                   atol=1e-13, err_msg=f"{name} {fn}")
    np.testing.assert_allclose(code.gamma(Q, QD, M, S, F, W)[few],
                               code.gamma(Q[few], QD[few], M[few], S[few], F[few], W[few]), rtol=1e-13, atol=1e-12)
    for fn in ("angles", "measures"):
        np.testing.assert_allclose(getattr(code, fn)(Q, M)[few], getattr(code, fn)(Q[few], M[few]), rtol=1e-13,
                                   atol=1e-14, err_msg=f"{name} {fn}")


@pytest.mark.skipif(not BACKENDS["numba"](), reason="numba not installed")
@pytest.mark.parametrize("name", [name for name in TEMPLATES if TEMPLATES[name].row_variants])
def test_a_row_variant_computes_its_rows_as_the_template_does_and_no_other(name):
    """A row variant (the rows a joint keeps in a plane) is the template's Φ, Φq and γ on its rows —
    against the numpy code, which the finite differences above check — and leaves the others unwritten."""
    template = TEMPLATES[name]
    par = get_parametrization("euler-parameters")
    full, code = generated(name, par.name, "numpy"), generated(name, par.name, "numba")
    Q, QD, M, S, F, W = random_inputs(template, par)
    for j, rows in enumerate(template.row_variants):
        others = [e for e in range(full.phi(Q, M, S, F, W).shape[1]) if e not in rows]
        for fn, args in (("phi", (Q, M, S, F, W)), ("jac", (Q, M, S, F, W)), ("gamma", (Q, QD, M, S, F, W))):
            expected = getattr(full, fn)(*args)
            out = np.zeros(expected.shape)  # the functions write the nonzero entries of a zeroed array
            out[:, others] = np.nan
            code.row_variants[f"{fn}_r{j}_into"](*args, out)
            np.testing.assert_allclose(out[:, list(rows)], expected[:, list(rows)], rtol=1e-12, atol=1e-12,
                                       err_msg=f"{name} {fn} rows {rows}")
            assert np.isnan(out[:, others]).all(), f"{name} {fn} rows {rows} wrote other rows"


@pytest.mark.skipif(not BACKENDS["numba"](), reason="numba not installed")
@pytest.mark.parametrize("name", ["revolute", "gear", "drive-angle", "screw", "distance"])
def test_numba_and_numpy_backends_agree(name):
    template = TEMPLATES[name]
    par = get_parametrization("euler-parameters")
    a, b = generated(name, par.name, "numpy"), generated(name, par.name, "numba")
    Q, QD, M, S, F, W = random_inputs(template, par)
    for fn in ("phi", "jac", "phit"):
        np.testing.assert_allclose(getattr(a, fn)(Q, M, S, F, W), getattr(b, fn)(Q, M, S, F, W), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(a.gamma(Q, QD, M, S, F, W), b.gamma(Q, QD, M, S, F, W), rtol=1e-12, atol=1e-12)


def test_joint_angle_measure_is_rotation_about_the_axis():
    """Rotating body j by θ about marker i's z gives the measured angle θ (and winding-free)."""
    code = generated("revolute")
    M = np.zeros((1, 24))
    M[0, 3:12] = np.eye(3).reshape(-1)
    M[0, 15:24] = np.eye(3).reshape(-1)
    for theta in (0.3, -2.0, 3.0):
        q_j = np.r_[0, 0, 0, np.cos(theta / 2), 0, 0, np.sin(theta / 2)]
        Q = np.r_[0, 0, 0, 1, 0, 0, 0, q_j][None, :]
        assert code.measures(Q, M)[0, 0] == pytest.approx(theta, abs=1e-14)
        assert np.allclose(code.phi(Q, M, np.zeros((1, 0)), np.zeros((1, 3)), np.zeros((1, 0))), 0, atol=1e-15)
