"""Linear complementarity problems (kernel/dynamics/complementarity.py): z ≥ 0, w = G z + b ≥ 0, zᵀ w = 0.

References: the complementary bases enumerated one by one (for a P-matrix the solution is unique, so the
one basis whose solution is non-negative is it), and the statics of a block pushed along a floor with
Coulomb friction, written as the contact problem at the accelerations that the unilateral contacts pose;
for the sharing of redundant contact forces, the statics of a table on four legs and scipy's SLSQP on the
same least-norm program.
"""

import itertools

import numpy as np
import pytest

from scipy.optimize import minimize

from cadmotion.kernel.dynamics.complementarity import least_distance, lcp, lemke, pushing_solution


def _enumerated(G, b):
    """The solution by trying every complementary basis (2ⁿ of them): the independent reference."""
    n = len(b)
    for basis in itertools.product((False, True), repeat=n):
        z = np.zeros(n)
        idx = np.flatnonzero(basis)
        if len(idx):
            z[idx] = np.linalg.solve(G[np.ix_(idx, idx)], -b[idx])
        w = G @ z + b
        if np.all(z >= -1e-12) and np.all(w >= -1e-12):
            return z
    raise AssertionError("no complementary basis solves it")


def test_lcp_solves_a_complementarity_problem_and_its_redundant_form():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(5, 5))
    G_ = A @ A.T + 0.1 * np.eye(5)
    b = rng.normal(size=5)
    z, w = lcp(G_, b)
    assert np.all(z >= 0) and np.all(w >= -1e-12) and abs(z @ w) < 1e-12
    # four equal rows (a box's corners on a plane): rank one, the total is determined
    H = np.ones((4, 1))
    z, w = lcp(H @ H.T, np.full(4, -2.0))
    assert z.sum() == pytest.approx(2.0, abs=1e-12) and np.all(np.abs(w) < 1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_lemke_finds_the_one_solution_of_a_non_symmetric_p_matrix_problem(seed):
    rng = np.random.default_rng(seed)
    n = 7
    G = rng.normal(size=(n, n)) + n * np.eye(n)  # diagonally dominant: a P-matrix, not symmetric
    b = rng.normal(size=n) * 10.0
    z = lemke(G, b)
    assert z is not None
    assert np.allclose(z, _enumerated(G, b), atol=1e-10)


def test_lemke_reports_a_problem_without_solution():
    # w = −z − 1 ≥ 0 has no z ≥ 0
    assert lemke(np.array([[-1.0]]), np.array([-1.0])) is None
    assert np.array_equal(lemke(np.eye(3), np.ones(3)), np.zeros(3))


@pytest.mark.parametrize("push", [0.5, 0.98, 1.5, 3.0])
def test_lemke_on_a_block_pushed_along_a_floor_sticks_below_mu_m_g_and_slides_above(push):
    # a block of mass m on a floor, pushed along +x by P = push · μ m g, at rest: the normal force λ_n, the
    # friction as β₊ (along +x) and β₋ (along −x), and σ (the slip acceleration), with the rows
    #   w_n = a_n = (λ_n − m g)/m ≥ 0,   w_± = ±a_t + σ ≥ 0,   w_σ = μ λ_n − β₊ − β₋ ≥ 0,
    # a_t = (P + β₊ − β₋)/m: the statics say stick (a_t = 0, friction −P) while P ≤ μ m g, else slide with
    # a_t = (P − μ m g)/m
    m, g, mu = 2.0, 9.81, 0.3
    P = push * mu * m * g
    G = np.array([[1 / m, 0, 0, 0],
                  [0, 1 / m, -1 / m, 1],
                  [0, -1 / m, 1 / m, 1],
                  [mu, -1, -1, 0]])
    b = np.array([-g, P / m, -P / m, 0.0])
    z = lemke(G, b)
    assert z is not None
    lam_n, beta_p, beta_m, sigma = z
    a_t = (P + beta_p - beta_m) / m
    assert lam_n == pytest.approx(m * g, rel=1e-12)
    if push <= 1.0:
        assert a_t == pytest.approx(0.0, abs=1e-12) and beta_m - beta_p == pytest.approx(P, rel=1e-12)
    else:
        assert a_t == pytest.approx((P - mu * m * g) / m, rel=1e-12) and sigma == pytest.approx(a_t, rel=1e-12)


def test_least_distance_is_the_nearest_point_of_the_feasible_set_or_none_when_it_is_empty():
    # one half-space g·w ≥ h (h > 0): the nearest point is h g/|g|²
    g, h = np.array([3.0, 4.0]), 10.0
    assert least_distance(g[None, :], np.array([h])) == pytest.approx(h * g / 25.0, rel=1e-12)
    # w ≥ 1 and −w ≥ 1 have no solution
    assert least_distance(np.array([[1.0], [-1.0]]), np.array([1.0, 1.0])) is None
    # random feasible programs against SLSQP
    rng = np.random.default_rng(4)
    for _ in range(5):
        G = rng.normal(size=(6, 3))
        h = G @ rng.normal(size=3) - rng.uniform(0.0, 1.0, 6)  # a known feasible point
        w = least_distance(G, h)
        ref = minimize(lambda x: x @ x, np.zeros(3), jac=lambda x: 2 * x, method="SLSQP",
                       constraints=[{"type": "ineq", "fun": lambda x: G @ x - h, "jac": lambda x: G}],
                       options={"ftol": 1e-14, "maxiter": 500})
        assert np.all(G @ w - h >= -1e-10) and w == pytest.approx(ref.x, abs=1e-6)


def _table(load_at):
    """A table top on four legs at (±a, ±b): the legs' forces λ (up, N) meet the load W (N) at load_at (x, y)
    when Σλ = W and the moments balance, K λ = r with K the three equilibrium rows stacked over a redundant
    fourth (their sum): rank 3, the legs' forces not unique."""
    a, b, W = 0.5, 0.3, 100.0
    legs = np.array([[a, b], [-a, b], [-a, -b], [a, -b]])
    E = np.vstack([np.ones(4), legs[:, 0], legs[:, 1]])
    r = np.array([W, W * load_at[0], W * load_at[1]])
    K = np.vstack([E, E.sum(0)])
    return K, np.append(r, r.sum()), E, r


def test_redundant_legs_push_where_the_least_norm_forces_pull_and_the_statics_still_hold():
    # the load near a corner: inside the legs' rectangle (the table stands on three legs at least), outside
    # the least-norm forces' kern (they pull at the far leg)
    K, rhs, E, r = _table((0.4, 0.22))
    least_norm = np.linalg.lstsq(K, rhs, rcond=None)[0]
    assert least_norm.min() < -1.0
    lam = pushing_solution(K, rhs, np.arange(4))
    assert lam.min() >= -1e-9 and E @ lam == pytest.approx(r, rel=1e-12)
    # the least-norm forces among those that push: SLSQP on the same program
    ref = minimize(lambda x: x @ x, np.full(4, 25.0), jac=lambda x: 2 * x, method="SLSQP", bounds=[(0, None)] * 4,
                   constraints=[{"type": "eq", "fun": lambda x: E @ x - r, "jac": lambda x: E}],
                   options={"ftol": 1e-14, "maxiter": 500})
    assert lam == pytest.approx(ref.x, abs=1e-6)


def test_forces_that_push_already_and_loads_no_legs_can_carry_keep_the_least_norm_solution():
    for load_at in ((0.05, 0.02), (0.7, 0.0)):  # inside the kern; beyond the legs (the table tips)
        K, rhs, E, r = _table(load_at)
        least_norm = np.linalg.lstsq(K, rhs, rcond=None)[0]
        assert pushing_solution(K, rhs, np.arange(4)) == pytest.approx(least_norm, rel=1e-10, abs=1e-9)



def test_further_conditions_choose_among_the_redundant_solutions_and_are_dropped_last_first_where_none_fits():
    # the table loaded near a corner; a condition on top of pushing: the far leg carries at least 5 N
    K, rhs, E, r = _table((0.4, 0.22))
    far = np.array([[0.0, 0.0, 1.0, 0.0]])
    lam = pushing_solution(K, rhs, np.arange(4), [(far, np.array([5.0]))])
    assert lam[2] >= 5.0 - 1e-9 and lam.min() >= -1e-9 and E @ lam == pytest.approx(r, rel=1e-12)
    ref = minimize(lambda x: x @ x, np.full(4, 25.0), jac=lambda x: 2 * x, method="SLSQP", bounds=[(0, None)] * 4,
                   constraints=[{"type": "eq", "fun": lambda x: E @ x - r, "jac": lambda x: E},
                                {"type": "ineq", "fun": lambda x: far @ x - 5.0, "jac": lambda x: far}],
                   options={"ftol": 1e-14, "maxiter": 500})
    assert lam == pytest.approx(ref.x, abs=1e-6)
    # given as a function of the least-norm solution, the same
    assert pushing_solution(K, rhs, np.arange(4), lambda least_norm: [(far, np.array([5.0]))]) == pytest.approx(lam)
    # no sharing puts 80 N on the far leg and keeps the statics: that condition is dropped, pushing is kept
    lam = pushing_solution(K, rhs, np.arange(4), [(far, np.array([80.0]))])
    assert lam == pytest.approx(pushing_solution(K, rhs, np.arange(4)), abs=1e-9)
