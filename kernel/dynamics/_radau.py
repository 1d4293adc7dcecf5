"""Compiled Radau IIA driver of the fast index-1 right-hand side (see :mod:`.fast`).

The implicit Runge–Kutta method Radau IIA of order 5 with its embedded third-order error
estimate and cubic collocation dense output (Hairer & Wanner, *Solving ODEs II*, IV.8), the
same coefficients, simplified Newton iteration, initial step, error norm, step-size control
and Jacobian/LU reuse as ``scipy.integrate.Radau``, so both take the same steps up to
round-off. As :mod:`._dop853` does for DOP853, the whole loop runs in compiled code: the
stages call the model's compiled right-hand side, the Jacobian is the compiled analytic one
below, and the formulation's bookkeeping after each accepted step (angle references,
joint-measure continuity, projection onto the joints) is compiled too.

The Jacobian of ẏ, y = [q (nq), v (nv), W], is that of :mod:`.implicit` (what scipy's Radau
gets in the numpy path), from the workspace of an evaluation at (t, y):

    J = [[0, B, 0], [J_vq, J_vv, 0], [0, 0, 0]],   J_vv = −P M⁻¹ (D + G_gyro),  J_vq = −P M⁻¹ K C

(B: q̇ = B v; C: v = C q̇; K = −∂f/∂x, D = −∂f/∂v the force elements' tangent of
:mod:`.force_jacobians`; P M⁻¹ = M⁻¹ − M⁻¹ Jvᵀ S⁻¹ Jv M⁻¹ the constrained mobility, through the
band Cholesky of S). Two differences from :mod:`.implicit`, both only in the Newton
iteration's rate, never in the solution: a torque expression contributes the geometric term
of its current value but not its own derivatives ∂τ/∂θ, ∂τ/∂θ̇, and force expressions along
joint axes nothing (as there). Its structure makes each Newton system (c I − J) x = r (c = μ/h, real or complex)
reduce exactly to the velocities:

    (c I − J_vv − J_vq B / c) x_v = r_v + J_vq r_q / c,   x_q = (r_q + B x_v) / c,   x_W = r_W / c

so the LU factorisations are of nv × nv matrices (the same solution as scipy's LU of the
(nq + nv + 1)² matrix, up to round-off).

Units: t in s; the state in m, 1 (Euler parameters), m/s, rad/s and J; ``rtol`` relative,
``atol`` in each component's units. The functions that call the model's compiled ``rhs``,
``windings`` and the :mod:`._dop853` templates are templates (:data:`TEMPLATES`), compiled
inside the generated library of :mod:`.fast`; the rest is compiled once here.
"""

import math

import numpy as np

from ..numba_cache import numba  # numba, its cache folder named by the kernel sources
from . import _kernels as K
from . import force_jacobians as FJ
from ._dop853 import DONE, NAN_STATE, NOT_FINITE, SINGULAR, STEP_COLLAPSE, TIME_EPS, finish, rms

_JIT = dict(cache=True, nogil=True)

# the model's compiled functions and the :mod:`._dop853` templates, bound in the generated module
rhs = windings = initial_step = strides_singular = choose_rows = project = None

S6 = 6.0 ** 0.5
RADAU_C = np.array([(4.0 - S6) / 10.0, (4.0 + S6) / 10.0, 1.0])
RADAU_E = np.array([-13.0 - 7.0 * S6, -13.0 + 7.0 * S6, -1.0]) / 3.0
MU_REAL = 3.0 + 3.0 ** (2.0 / 3.0) - 3.0 ** (1.0 / 3.0)
MU_COMPLEX_RE = 3.0 + 0.5 * (3.0 ** (1.0 / 3.0) - 3.0 ** (2.0 / 3.0))
MU_COMPLEX_IM = -0.5 * (3.0 ** (5.0 / 6.0) + 3.0 ** (7.0 / 6.0))
RADAU_T = np.array([[0.09443876248897524, -0.14125529502095421, 0.03002919410514742],
              [0.25021312296533332, 0.20412935229379994, -0.38294211275726192],
              [1.0, 1.0, 0.0]])
RADAU_TI = np.array([[4.17871859155190428, 0.32768282076106237, 0.52337644549944951],
               [-4.17871859155190428, -0.32768282076106237, 0.47662355450055044],
               [0.50287263494578682, -2.57192694985560522, 0.59603920482822492]])
RADAU_P = np.array([[13.0 / 3.0 + 7.0 * S6 / 3.0, -23.0 / 3.0 - 22.0 * S6 / 3.0, 10.0 / 3.0 + 5.0 * S6],
              [13.0 / 3.0 - 7.0 * S6 / 3.0, -23.0 / 3.0 + 22.0 * S6 / 3.0, 10.0 / 3.0 - 5.0 * S6],
              [1.0 / 3.0, -8.0 / 3.0, 10.0 / 3.0]])
NEWTON_MAXITER = 6
R_MIN_FACTOR, R_MAX_FACTOR = 0.2, 10.0
#: machine epsilon (scipy's ``EPS`` in the Newton tolerance)
R_EPS = float(np.finfo(float).eps)
#: ``stats`` entries beyond :mod:`._dop853`'s: Jacobian evaluations, LU factorisations
S_NJEV, S_NLU = 7, 8
N_STATS = 10


@numba.njit(**_JIT)
def lu_factor(a, piv):
    """In-place LU factorisation with partial pivoting of the square a (real or complex):
    a = P L U, L unit lower (below the diagonal), U on and above; piv[k] the row swapped
    with row k. A zero pivot is left in place (the solve then gives inf/NaN)."""
    n = a.shape[0]
    for k in range(n):
        p = k
        big = abs(a[k, k])
        for i in range(k + 1, n):
            v = abs(a[i, k])
            if v > big:
                big = v
                p = i
        piv[k] = p
        if p != k:
            for j in range(n):
                tmp = a[k, j]
                a[k, j] = a[p, j]
                a[p, j] = tmp
        d = a[k, k]
        if d == 0:
            continue
        for i in range(k + 1, n):
            a[i, k] = a[i, k] / d
            lik = a[i, k]
            if lik != 0:
                for j in range(k + 1, n):
                    a[i, j] -= lik * a[k, j]


@numba.njit(**_JIT)
def lu_solve(a, piv, b):
    """x with (P L U) x = b from :func:`lu_factor` (b is overwritten and returned)."""
    n = a.shape[0]
    for k in range(n):
        p = piv[k]
        if p != k:
            tmp = b[k]
            b[k] = b[p]
            b[p] = tmp
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= a[i, j] * b[j]
        b[i] = s
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= a[i, j] * b[j]
        b[i] = s / a[i, i]
    return b


@numba.njit(**_JIT)
def reduced_matrix(c, Jvv, G, out):
    """out = c I − J_vv − G / c (G = J_vq B; c real or complex, 1/s)."""
    nv = Jvv.shape[0]
    ic = 1.0 / c
    for i in range(nv):
        for j in range(nv):
            out[i, j] = -Jvv[i, j] - G[i, j] * ic
        out[i, i] += c


@numba.njit(**_JIT)
def newton_solve(c, LU, piv, Jvq, Bq, nq, r, x):
    """x = (c I − J)⁻¹ r through the reduced velocity system (see the module docstring);
    LU, piv the factors of :func:`reduced_matrix` at c; r, x (n,) of c's type."""
    nv = Jvq.shape[0]
    ic = 1.0 / c
    xv = np.empty(nv, dtype=x.dtype)
    for i in range(nv):
        s = r[0] * 0.0
        for j in range(nq):
            s += Jvq[i, j] * r[j]
        xv[i] = r[nq + i] + s * ic
    lu_solve(LU, piv, xv)
    nmov = nv // 6
    for b in range(nmov):
        for k in range(7):
            s = r[7 * b + k]
            for l in range(6):
                s += Bq[b, k, l] * xv[6 * b + l]
            x[7 * b + k] = s * ic
    for i in range(nv):
        x[nq + i] = xv[i]
    for i in range(nq + nv, r.shape[0]):
        x[i] = r[i] * ic


@numba.njit(**_JIT)
def _add_blocks(Kf, Df, ia, ib, Kb, Db, nmov):
    """Scatter element blocks (n, 2, 2, 6, 6) into the dense K, D (6 nmov)² (moving bodies only)."""
    for e in range(ia.shape[0]):
        for j in range(2):
            bj = ia[e] if j == 0 else ib[e]
            if bj >= nmov:
                continue
            for k in range(2):
                bk = ia[e] if k == 0 else ib[e]
                if bk >= nmov:
                    continue
                for r in range(6):
                    for s in range(6):
                        Kf[6 * bj + r, 6 * bk + s] += Kb[e, j, k, r, s]
                        Df[6 * bj + r, 6 * bk + s] += Db[e, j, k, r, s]


@numba.njit(**_JIT)
def tangent(df, di, dd, ws, Kf, Df):
    """The force elements' K = −∂f/∂x and D = −∂f/∂v (6 nmov)², and the bodies' gyroscopic
    damping ∂(ω × J ω)/∂ω in D, from the workspace of an evaluation (see
    :meth:`.forces.ForceElements.tangent`, whose kernels these are)."""
    sizes = K.i1(di, K.I_SIZES)
    nmov = sizes[1]
    A = K.f3(ws, di, K.I_A)
    rc = K.f2(ws, di, K.I_RC)
    w = K.f2(ws, di, K.I_W)
    vc = K.f2(ws, di, K.I_VC)
    Kf[:, :] = 0.0
    Df[:, :] = 0.0
    n = K.count(di, K.I_SP)
    if n:
        Kb = np.zeros((n, 2, 2, 6, 6))
        Db = np.zeros((n, 2, 2, 6, 6))
        ia, ib = K.i1(di, K.I_SP), K.i1(di, K.I_SP + 1)
        FJ.spring_tangent(A, rc, w, vc, ia, ib, K.f2(df, di, K.I_SP + 2), K.f2(df, di, K.I_SP + 3),
                          K.f1(df, di, K.I_SP + 4), K.f1(df, di, K.I_SP + 5), K.f1(df, di, K.I_SP + 6),
                          K.f1(df, di, K.I_SP + 7), Kb, Db)
        _add_blocks(Kf, Df, ia, ib, Kb, Db, nmov)
    n = K.count(di, K.I_AX)
    if n:
        Kb = np.zeros((n, 2, 2, 6, 6))
        Db = np.zeros((n, 2, 2, 6, 6))
        ia, ib = K.i1(di, K.I_AX), K.i1(di, K.I_AX + 1)
        Ri, Rj = K.f3(df, di, K.I_AX + 2), K.f3(df, di, K.I_AX + 3)
        kk, cc, tau0 = K.f1(df, di, K.I_AX + 4), K.f1(df, di, K.I_AX + 5), K.f1(df, di, K.I_AX + 6)
        is_expr, ref, tau_expr = K.i1(di, K.I_AX + 7), K.f1(dd, di, K.I_AX + 8), K.f1(dd, di, K.I_AX + 9)
        tau = np.empty(n)
        kt = np.zeros(n)
        ct = np.zeros(n)
        two_pi = 2.0 * math.pi
        for s in range(n):
            if is_expr[s] != 0:  # the expression's current value; its derivatives are left out
                tau[s] = tau_expr[s]
                continue
            raw, z0, z1, z2 = K.axis_angle(A, ia[s], ib[s], Ri[s], Rj[s])
            theta = raw + two_pi * np.round((ref[s] - raw) / two_pi)
            a, b = ia[s], ib[s]
            rate = z0 * (w[b, 0] - w[a, 0]) + z1 * (w[b, 1] - w[a, 1]) + z2 * (w[b, 2] - w[a, 2])
            tau[s] = -kk[s] * theta - cc[s] * rate + tau0[s]
            kt[s] = kk[s]
            ct[s] = cc[s]
        FJ.axis_tangent(A, w, ia, ib, Ri, Rj, tau, kt, ct, Kb, Db)
        _add_blocks(Kf, Df, ia, ib, Kb, Db, nmov)
    n = K.count(di, K.I_BL)
    if n:
        Kb = np.zeros((n, 2, 2, 6, 6))
        Db = np.zeros((n, 2, 2, 6, 6))
        ia, ib = K.i1(di, K.I_BL), K.i1(di, K.I_BL + 1)
        FJ.ball_tangent(A, ia, ib, K.f3(df, di, K.I_BL + 2), K.f3(df, di, K.I_BL + 3), K.f1(df, di, K.I_BL + 4),
                        K.f1(df, di, K.I_BL + 5), Kb, Db)
        _add_blocks(Kf, Df, ia, ib, Kb, Db, nmov)
    n = K.count(di, K.I_BU)
    if n:
        Kb = np.zeros((n, 2, 2, 6, 6))
        Db = np.zeros((n, 2, 2, 6, 6))
        ia, ib = K.i1(di, K.I_BU), K.i1(di, K.I_BU + 1)
        FJ.bushing_tangent(A, rc, w, vc, ia, ib, K.f2(df, di, K.I_BU + 2), K.f2(df, di, K.I_BU + 3),
                           K.f3(df, di, K.I_BU + 4), K.f3(df, di, K.I_BU + 5), K.f2(df, di, K.I_BU + 6),
                           K.f2(df, di, K.I_BU + 7), K.f2(df, di, K.I_BU + 8), K.f2(df, di, K.I_BU + 9), Kb, Db)
        _add_blocks(Kf, Df, ia, ib, Kb, Db, nmov)
    Jw = K.f3(ws, di, K.I_JW)
    for b in range(nmov):  # [ω] J − [J ω]
        Jww = np.zeros(3)
        for i in range(3):
            for j in range(3):
                Jww[i] += Jw[b, i, j] * w[b, j]
        Sw = FJ._skew(w[b, 0], w[b, 1], w[b, 2])
        Sj = FJ._skew(Jww[0], Jww[1], Jww[2])
        for i in range(3):
            for j in range(3):
                acc = -Sj[i, j]
                for k in range(3):
                    acc += Sw[i, k] * Jw[b, k, j]
                Df[6 * b + 3 + i, 6 * b + 3 + j] += acc


@numba.njit(**_JIT)
def assemble_jacobian(df, di, dd, ws, Jvv, Jvq, G):
    """J_vv (nv, nv), J_vq (nv, nq) and G = J_vq B (nv, nv) from the workspace of an evaluation
    at (t, y) (see the module docstring).

    With P M⁻¹ K = MK: J_vv = −P M⁻¹ D, J_vq = −MK C and G = −MK (C B), both per body
    (C_b = [[I, −2 [ρ] E], [0, 2 E]], v_b = C_b q̇_b; C_b B_b is the identity for unit Euler
    parameters, formed here so that G is J_vq B to round-off for any state)."""
    sizes = K.i1(di, K.I_SIZES)
    nmov = sizes[1]
    nv = 6 * nmov
    Kf = np.empty((nv, nv))
    Df = np.empty((nv, nv))
    tangent(df, di, dd, ws, Kf, Df)
    E_ = K.f3(ws, di, K.I_E)
    rho = K.f2(ws, di, K.I_RHO)
    Bq = K.f3(ws, di, K.I_B)
    mob = mobility(df, di, dd, ws)
    _product(mob, Df, Jvv)
    MK = np.empty((nv, nv))
    _product(mob, Kf, MK)
    Cb = np.zeros((6, 7))
    CB = np.empty((6, 6))
    for b in range(nmov):
        Cb[:, :] = 0.0
        for i in range(3):
            Cb[i, i] = 1.0
        S = FJ._skew(rho[b, 0], rho[b, 1], rho[b, 2])
        for i in range(3):
            for j in range(4):
                acc = 0.0
                for k in range(3):
                    acc += S[i, k] * E_[b, k, j]
                Cb[i, 3 + j] = -2.0 * acc
                Cb[3 + i, 3 + j] = 2.0 * E_[b, i, j]
        for i in range(6):
            for j in range(6):
                acc = 0.0
                for k in range(7):
                    acc += Cb[i, k] * Bq[b, k, j]
                CB[i, j] = acc
        for r in range(nv):
            for j in range(7):
                acc = 0.0
                for l in range(6):
                    acc += MK[r, 6 * b + l] * Cb[l, j]
                Jvq[r, 7 * b + j] = acc
            for j in range(6):
                acc = 0.0
                for l in range(6):
                    acc += MK[r, 6 * b + l] * CB[l, j]
                G[r, 6 * b + j] = acc


@numba.njit(**_JIT)
def _product(A, B, out):
    """out = −A B, skipping the rows of B that are zero (the elements touch few bodies); the
    inner loop runs along rows (contiguous)."""
    n, k = A.shape
    m = B.shape[1]
    out[:, :] = 0.0
    for l in range(k):
        used = False
        for j in range(m):
            if B[l, j] != 0.0:
                used = True
                break
        if not used:
            continue
        for i in range(n):
            a = A[i, l]
            if a != 0.0:
                for j in range(m):
                    out[i, j] -= a * B[l, j]


@numba.njit(**_JIT)
def mobility(df, di, dd, ws):
    """The constrained mobility P M⁻¹ = M⁻¹ − M⁻¹ Jvᵀ S⁻¹ Jv M⁻¹ (nv, nv) (the map from an
    applied force to v̇) from the workspace of an evaluation: with S = L Lᵀ its band Cholesky
    (redundant rows dropped) and Y = L⁻¹ Jv M⁻¹, one forward substitution over the columns
    of Jv M⁻¹ that are not zero, P M⁻¹ = M⁻¹ − Yᵀ Y (symmetric)."""
    sizes = K.i1(di, K.I_SIZES)
    nmov, m, bw = sizes[1], sizes[3], sizes[4]
    nv = 6 * nmov
    imt = K.f3(df, di, K.I_IMT)
    Jwinv = K.f3(ws, di, K.I_JWINV)
    mob = np.zeros((nv, nv))
    for b in range(nmov):
        for i in range(3):
            for j in range(3):
                mob[6 * b + i, 6 * b + j] = imt[b, i, j]
                mob[6 * b + 3 + i, 6 * b + 3 + j] = Jwinv[b, i, j]
    if m == 0:
        return mob
    X, Lb, dropped, _ = K._factor(df, di, dd, ws)  # X = Jc M⁻¹ per row and slot
    rb = K.i2(di, K.I_RB)
    ns = rb.shape[1]
    Y = np.zeros((m, nv))  # Jv M⁻¹, dense; then L⁻¹ Jv M⁻¹ in place
    for r in range(m):
        for s in range(ns):
            b = rb[r, s]
            if b >= 0:
                for l in range(6):
                    Y[r, 6 * b + l] += X[r, s, l]
    for i in range(m):  # row by row, the inner loops along rows (contiguous)
        if dropped[i]:
            Y[i, :] = 0.0
            continue
        k0 = i - bw if i - bw > 0 else 0
        for k in range(k0, i):
            a = Lb[i, i - k]
            if a != 0.0:
                for j in range(nv):
                    Y[i, j] -= a * Y[k, j]
        d = 1.0 / Lb[i, 0]
        for j in range(nv):
            Y[i, j] *= d
    for r in range(m):
        for i in range(nv):
            a = Y[r, i]
            if a != 0.0:
                for j in range(nv):
                    mob[i, j] -= a * Y[r, j]
    return mob


@numba.njit(**_JIT)
def predict_factor(h_abs, h_abs_old, error_norm, error_norm_old):
    """scipy's ``predict_factor`` (Hairer & Wanner IV.8); h_abs_old or error_norm_old < 0:
    None (the one-step formula)."""
    if error_norm_old < 0.0 or h_abs_old < 0.0 or error_norm == 0.0:
        multiplier = 1.0
    else:
        multiplier = h_abs / h_abs_old * (error_norm_old / error_norm) ** 0.25
    if error_norm == 0.0:
        return math.inf
    return min(1.0, multiplier) * error_norm ** -0.25


@numba.njit(**_JIT)
def dense_value(Q, y_old, x, out):
    """out = y_old + Q [x, x², x³] (scipy's ``RadauDenseOutput``; x = (t − t_old) / h)."""
    x2 = x * x
    x3 = x2 * x
    for i in range(y_old.shape[0]):
        out[i] = y_old[i] + Q[i, 0] * x + Q[i, 1] * x2 + Q[i, 2] * x3


def jacobian(t, y, df, di, dd, ws, Jvv, Jvq, G, evaluated):
    """Fill the Jacobian's blocks at (t, y) from the workspace, evaluating ẏ there first unless
    ``evaluated`` (the workspace already holds that evaluation); returns ok (template)."""
    ok = True
    if not evaluated:
        _, ok = rhs(t, y, df, di, dd, ws)
    if ok:
        assemble_jacobian(df, di, dd, ws, Jvv, Jvq, G)
    return ok


def collocation(t, y, h, Z0, scale, tol, LUr, pivr, LUc, pivc, Jvq, Bq, nq, df, di, dd, ws, Z):
    """scipy's ``solve_collocation_system``: the simplified Newton iteration of the three
    stages from Z0 (3, n); fills Z. Returns (converged, n_iter, rate (−1: none), nfev, ok)
    (template)."""
    n = y.shape[0]
    cr = MU_REAL / h
    cc = complex(MU_COMPLEX_RE, MU_COMPLEX_IM) / h
    W = np.zeros((3, n))
    for r in range(3):
        for i in range(n):
            W[r, i] = RADAU_TI[r, 0] * Z0[0, i] + RADAU_TI[r, 1] * Z0[1, i] + RADAU_TI[r, 2] * Z0[2, i]
    Z[:, :] = Z0
    F = np.empty((3, n))
    tmp = np.empty(n)
    fr = np.empty(n)
    fc = np.empty(n, dtype=np.complex128)
    dr = np.empty(n)
    dc = np.empty(n, dtype=np.complex128)
    dW = np.empty((3, n))
    dW_norm_old = -1.0
    rate = -1.0
    converged = False
    nfev = 0
    k = 0
    for k in range(NEWTON_MAXITER):
        for s in range(3):
            for i in range(n):
                tmp[i] = y[i] + Z[s, i]
            out, ok = rhs(t + RADAU_C[s] * h, tmp, df, di, dd, ws)
            nfev += 1
            if not ok:
                return False, k + 1, rate, nfev, False
            F[s, :] = out
        for i in range(n):
            fr[i] = RADAU_TI[0, 0] * F[0, i] + RADAU_TI[0, 1] * F[1, i] + RADAU_TI[0, 2] * F[2, i] - cr * W[0, i]
            re = RADAU_TI[1, 0] * F[0, i] + RADAU_TI[1, 1] * F[1, i] + RADAU_TI[1, 2] * F[2, i]
            im = RADAU_TI[2, 0] * F[0, i] + RADAU_TI[2, 1] * F[1, i] + RADAU_TI[2, 2] * F[2, i]
            fc[i] = complex(re, im) - cc * complex(W[1, i], W[2, i])
        newton_solve(cr, LUr, pivr, Jvq, Bq, nq, fr, dr)
        newton_solve(cc, LUc, pivc, Jvq, Bq, nq, fc, dc)
        acc = 0.0
        for i in range(n):
            dW[0, i] = dr[i]
            dW[1, i] = dc[i].real
            dW[2, i] = dc[i].imag
            for r in range(3):
                v = dW[r, i] / scale[i]
                acc += v * v
        dW_norm = math.sqrt(acc / (3 * n))
        if dW_norm_old >= 0.0:
            rate = dW_norm / dW_norm_old
        if rate >= 0.0 and (rate >= 1.0 or rate ** (NEWTON_MAXITER - k) / (1.0 - rate) * dW_norm > tol):
            break
        for r in range(3):
            for i in range(n):
                W[r, i] += dW[r, i]
        for r in range(3):
            for i in range(n):
                Z[r, i] = RADAU_T[r, 0] * W[0, i] + RADAU_T[r, 1] * W[1, i] + RADAU_T[r, 2] * W[2, i]
        if dW_norm == 0.0 or (rate >= 0.0 and rate / (1.0 - rate) * dW_norm < tol):
            converged = True
            break
        dW_norm_old = dW_norm
    return converged, k + 1, rate, nfev, True


def radau(t, y0, times, rtol, atol, ptol, max_iter, zone, df, di, dd, ws, Y, DD, stats, y_end):
    """Integrate ẏ = rhs(t, y) from (times[0], y0) to times[-1] by Radau IIA; fill the output
    frames (template). Arguments, frames, status and ``stats`` as :func:`._dop853.dop853`,
    with ``stats[S_NJEV]`` the Jacobian evaluations and ``stats[S_NLU]`` the LU
    factorisations (two per refresh, as scipy counts them). A step is at most
    :func:`._kernels.rotation_step_limit` long (the compliant contacts' limit is DOP853's only,
    as with scipy's Radau)."""
    n = y0.shape[0]
    nt = times.shape[0]
    t_bound = times[nt - 1]
    sizes = K.i1(di, K.I_SIZES)
    nq, nmov = sizes[0], sizes[1]
    nv = 6 * nmov
    Bq = K.f3(ws, di, K.I_B)[:nmov].copy()
    Jvv = np.zeros((nv, nv))
    Jvq = np.zeros((nv, nq))
    G = np.zeros((nv, nv))
    LUr = np.empty((nv, nv))
    LUc = np.empty((nv, nv), dtype=np.complex128)
    pivr = np.zeros(nv, dtype=np.int64)
    pivc = np.zeros(nv, dtype=np.int64)
    y = y0.copy()
    y_new = np.empty(n)
    Z0 = np.zeros((3, n))
    Z = np.zeros((3, n))
    Q = np.zeros((n, 3))
    y_sol = np.empty(n)
    t_sol, h_sol = t, 1.0
    have_sol = False
    scale = np.empty(n)
    err = np.empty(n)
    tmp = np.empty(n)
    nfev, njev, nlu, nsteps, nproject, k = 0, 0, 0, 0, 0, 1
    status = DONE
    t_fail = t
    t_eval = t
    newton_tol = max(10.0 * R_EPS / rtol, min(0.03, rtol ** 0.5))
    f, ok = rhs(t, y, df, di, dd, ws)
    nfev += 1
    h_abs = 0.0
    if ok:
        h_abs, ok = initial_step(t, y, f, t_bound, rtol, atol, df, di, dd, ws, 3)
        nfev += 1
    if ok:
        ok = jacobian(t, y, df, di, dd, ws, Jvv, Jvq, G, False)
        njev += 1
        Bq[:, :, :] = K.f3(ws, di, K.I_B)[:nmov]
    if not ok:
        status = NOT_FINITE
    current_jac = True
    lu_ok = False
    h_abs_old = -1.0
    error_norm_old = -1.0
    while status == DONE and k < nt:
        t_old = t
        min_step = 10.0 * abs(np.nextafter(t, np.inf) - t)
        h_abs = min(h_abs, K.rotation_step_limit(y, di))  # no part turns by half a turn unseen
        h_stored = h_abs
        ha_old, en_old = h_abs_old, error_norm_old
        if h_abs < min_step:
            h_abs = min_step
            ha_old, en_old = -1.0, -1.0
        rejected = False
        accepted = False
        h = 0.0
        t_new = t
        n_iter = 0
        rate = -1.0
        error_norm = 0.0
        safety = 0.9
        while not accepted:
            if h_abs < min_step:
                status = STEP_COLLAPSE
                break
            t_new = t + h_abs
            if t_new - t_bound > 0:
                t_new = t_bound
            h = t_new - t
            h_abs = abs(h)
            if have_sol:
                for s in range(3):
                    dense_value(Q, y_sol, (t + h * RADAU_C[s] - t_sol) / h_sol, tmp)
                    for i in range(n):
                        Z0[s, i] = tmp[i] - y[i]
            else:
                Z0[:, :] = 0.0
            for i in range(n):
                scale[i] = atol + abs(y[i]) * rtol
            converged = False
            while not converged:
                if not lu_ok:
                    reduced_matrix(MU_REAL / h, Jvv, G, LUr)
                    lu_factor(LUr, pivr)
                    reduced_matrix(complex(MU_COMPLEX_RE, MU_COMPLEX_IM) / h, Jvv, G, LUc)
                    lu_factor(LUc, pivc)
                    nlu += 2
                    lu_ok = True
                converged, n_iter, rate, nf, ok = collocation(t, y, h, Z0, scale, newton_tol, LUr, pivr, LUc, pivc,
                                                              Jvq, Bq, nq, df, di, dd, ws, Z)
                nfev += nf
                if not ok:
                    break
                if not converged:
                    if current_jac:
                        break
                    ok = jacobian(t, y, df, di, dd, ws, Jvv, Jvq, G, False)
                    njev += 1
                    if not ok:
                        break
                    Bq[:, :, :] = K.f3(ws, di, K.I_B)[:nmov]
                    current_jac = True
                    lu_ok = False
            if not ok:
                status = NOT_FINITE
                t_eval = t
                break
            if not converged:
                h_abs *= 0.5
                lu_ok = False
                continue
            for i in range(n):
                y_new[i] = y[i] + Z[2, i]
            ZE = np.empty(n)
            for i in range(n):
                ZE[i] = (Z[0, i] * RADAU_E[0] + Z[1, i] * RADAU_E[1] + Z[2, i] * RADAU_E[2]) / h
                tmp[i] = f[i] + ZE[i]
            newton_solve(MU_REAL / h, LUr, pivr, Jvq, Bq, nq, tmp, err)
            for i in range(n):
                scale[i] = atol + max(abs(y[i]), abs(y_new[i])) * rtol
            error_norm = rms(err, scale)
            safety = 0.9 * (2 * NEWTON_MAXITER + 1) / (2 * NEWTON_MAXITER + n_iter)
            if rejected and error_norm > 1.0:
                for i in range(n):
                    tmp[i] = y[i] + err[i]
                out, ok = rhs(t, tmp, df, di, dd, ws)
                nfev += 1
                if not ok:
                    status = NOT_FINITE
                    t_eval = t
                    break
                for i in range(n):
                    tmp[i] = out[i] + ZE[i]
                newton_solve(MU_REAL / h, LUr, pivr, Jvq, Bq, nq, tmp, err)
                error_norm = rms(err, scale)
            if error_norm > 1.0:
                factor = predict_factor(h_abs, ha_old, error_norm, en_old)
                h_abs *= max(R_MIN_FACTOR, safety * factor)
                lu_ok = False
                rejected = True
            else:
                accepted = True
        if status != DONE:
            t_fail = t_old
            break
        recompute_jac = n_iter > 2 and rate > 1e-3
        factor = predict_factor(h_abs, ha_old, error_norm, en_old)
        factor = min(R_MAX_FACTOR, safety * factor)
        if not recompute_jac and factor < 1.2:
            factor = 1.0
        else:
            lu_ok = False
        finite = True
        for i in range(n):
            if not math.isfinite(y_new[i]):
                finite = False
        if not finite:
            status = NAN_STATE
            t_fail = t_old
            break
        t_eval = t_new
        f_new, ok = rhs(t_new, y_new, df, di, dd, ws)
        nfev += 1
        if not ok:
            status = NOT_FINITE
            t_fail = t_old
            break
        if zone > 0.0:
            if strides_singular(t_old, h, y, y_new, f, f_new, zone, tmp, df, di, dd, ws):
                status = SINGULAR  # stop at the start of the step: the crossing takes it from there
                break
            rhs(t_new, y_new, df, di, dd, ws)  # the probes used the workspace: restore y_new's
        if recompute_jac:
            ok = jacobian(t_new, y_new, df, di, dd, ws, Jvv, Jvq, G, True)  # the workspace is y_new's
            njev += 1
            if not ok:
                status = NOT_FINITE
                t_fail = t_old
                break
            Bq[:, :, :] = K.f3(ws, di, K.I_B)[:nmov]
            current_jac = True
        else:
            current_jac = False
        h_abs_old = h_stored
        error_norm_old = error_norm
        h_abs = h_abs * factor
        # the step's dense output: y_old + Q [x, x², x³]
        for i in range(n):
            for c in range(3):
                Q[i, c] = Z[0, i] * RADAU_P[0, c] + Z[1, i] * RADAU_P[1, c] + Z[2, i] * RADAU_P[2, c]
            y_sol[i] = y[i]
        t_sol, h_sol = t_old, h
        have_sol = True
        nsteps += 1
        t = t_new
        windings(y_new, df, di, dd, ws)
        # (redundant rows close loops: without, there is nothing to choose)
        rows_changed = zone > 0.0 and choose_rows(df, di, dd, ws, False)
        changed = False
        y_acc = y_new
        if ptol >= 0.0:
            aux = K.f1(ws, di, K.I_AUX)
            if aux[0] > ptol or aux[1] > ptol:
                y_acc = y_new.copy()
                changed = project(t, y_acc, df, di, dd, ws, ptol, max_iter)
                if changed:
                    nproject += 1
        eps = TIME_EPS * max(1.0, abs(t))
        while k < nt and times[k] <= t + eps:
            if abs(times[k] - t) <= eps:
                Y[k, :] = y_acc if changed else y_new
            else:
                dense_value(Q, y_sol, (times[k] - t_sol) / h_sol, Y[k])
                if ptol >= 0.0:  # the frame onto the joints, as the step ends are
                    project(times[k], Y[k], df, di, dd, ws, ptol, max_iter)
            DD[k, :] = dd
            k += 1
        y = y_acc if changed else y_new.copy()
        if changed or rows_changed:  # ẏ(y) of the rows the next step drops
            t_eval = t
            f, ok = rhs(t, y, df, di, dd, ws)
            nfev += 1
            if not ok:
                status = NOT_FINITE
                t_fail = t
                break
        else:
            f = f_new
        if t == t_bound:
            if k < nt:
                Y[k, :] = y
                DD[k, :] = dd
                k += 1
            break
        if zone > 0.0 and K.singularity(df, di, dd, ws) < zone:
            status = SINGULAR
            break
    finish(y, y_end, stats, t, nfev, nsteps, nproject, k, t_fail, t_eval)
    stats[S_NJEV] = njev
    stats[S_NLU] = nlu
    return status


#: compiled inside each generated module (they call the model's ``rhs``, ``windings`` and the
#: :mod:`._dop853` templates ``initial_step``, ``strides_singular``, ``project``)
TEMPLATES = (jacobian, collocation, radau)
#: names the templates use from this module
HELPERS = ("RADAU_C", "RADAU_E", "RADAU_T", "RADAU_TI", "RADAU_P", "MU_REAL", "MU_COMPLEX_RE", "MU_COMPLEX_IM",
           "NEWTON_MAXITER", "R_EPS", "R_MIN_FACTOR", "R_MAX_FACTOR", "S_NJEV", "S_NLU", "lu_factor", "reduced_matrix",
           "newton_solve", "assemble_jacobian", "predict_factor", "dense_value")
