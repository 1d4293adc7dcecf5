"""numba kernels of the compiled kinematic step (see :mod:`.kinematics_fast`). Imported only
when numba is available; :mod:`.kinematics` (``_Stepper``) is the reference numpy
implementation of the same steps, and the tests compare both with closed forms.

Dense linear algebra for the small models the compiled step serves (nq ≤
:data:`.linalg.DENSE_LIMIT`): LU with partial pivoting of the kept rows of Φq (as LAPACK's
getrf), its exact 1-norm reciprocal condition number, and a Householder QR of all rows for the
least-squares velocities and accelerations of a redundant mechanism (as geqrf/orgqr/trtrs).

:func:`frames` is a template: :mod:`.kinematics_fast` compiles its source inside each model
structure's generated module, where ``phi_all``, ``jac_all``, ``phit_all``, ``gamma_all``,
and ``accept_all`` evaluate that model's constraint groups.
"""

import math

import numpy as np

from .numba_cache import numba  # numba, its cache folder named by the kernel sources

_JIT = dict(cache=True, nogil=True)

# the model's compiled functions, bound in the generated module that compiles the template
phi_all = jac_all = phit_all = gamma_all = accept_all = None


@numba.njit(**_JIT)
def full(q, q_fixed):
    """q followed by the fixed bodies' coordinates."""
    n = q.shape[0]
    out = np.empty(n + q_fixed.shape[0])
    out[:n] = q
    out[n:] = q_fixed
    return out


@numba.njit(**_JIT)
def gather(src, idx):
    """src[idx] for a 2-D index array."""
    return gather_to(src, idx, np.empty(idx.shape))


@numba.njit(**_JIT)
def gather_to(src, idx, out):
    """out ← src[idx] for a 2-D index array (out of its shape, e.g. a workspace array); returns out."""
    n, k = idx.shape
    for i in range(n):
        for j in range(k):
            out[i, j] = src[idx[i, j]]
    return out


@numba.njit(**_JIT)
def winding(raw, ref):
    """2π·round((ref − raw)/2π): the turns that keep an angle continuous (rad)."""
    return winding_to(raw, ref, np.empty_like(raw))


@numba.njit(**_JIT)
def winding_to(raw, ref, out):
    """out ← :func:`winding` (rad; out of raw's shape, e.g. a workspace array); returns out."""
    two_pi = 2.0 * math.pi
    for i in range(raw.shape[0]):
        for j in range(raw.shape[1]):
            out[i, j] = two_pi * np.round((ref[i, j] - raw[i, j]) / two_pi)
    return out


@numba.njit(**_JIT)
def unwrap(raw, ref):
    """ref ← the continuous angles: raw (rad, wrapped) plus the turns nearest to ref."""
    two_pi = 2.0 * math.pi
    for i in range(raw.shape[0]):
        for j in range(raw.shape[1]):
            ref[i, j] = raw[i, j] + two_pi * np.round((ref[i, j] - raw[i, j]) / two_pi)


@numba.njit(**_JIT)
def put_rows(values, row0, out):
    """out[row0 + i·neq + e] = values[i, e]: one group's rows of Φ, Φt or γ."""
    n, neq = values.shape
    for i in range(n):
        for e in range(neq):
            out[row0 + i * neq + e] = values[i, e]


@numba.njit(**_JIT)
def add_entries(values, flat, J):
    """J.flat[flat[i]] += values.flat[i] where flat[i] ≥ 0 (one body may fill two slots)."""
    v = values.reshape(-1)
    Jf = J.reshape(-1)
    for i in range(flat.shape[0]):
        if flat[i] >= 0:
            Jf[flat[i]] += v[i]


@numba.njit(**_JIT)
def max_abs_rows(v, rows):
    """max |v[rows]| (NaN if some is NaN)."""
    m = 0.0
    for r in rows:
        a = abs(v[r])
        if a > m or a != a:
            m = a
    return m


@numba.njit(**_JIT)
def det_sign(LU, piv):
    """The sign (±1, 0 at a zero pivot) of det J[rows] from its factors by :func:`lu_factor`: the
    product of U's diagonal's signs, negated for each row swap (as ``linalg.RowSolver.det_sign``)."""
    sign = 1
    for k in range(LU.shape[0]):
        if LU[k, k] == 0.0:
            return 0
        if LU[k, k] < 0.0:
            sign = -sign
        if piv[k] != k:
            sign = -sign
    return sign


@numba.njit(**_JIT)
def lu_factor(J, rows, LU, piv):
    """LU ← P·J[rows] = L·U with partial pivoting (LAPACK getrf's algorithm); the exact
    1-norm reciprocal condition number of J[rows], 0 at an exact zero pivot."""
    n = LU.shape[0]
    anorm = 0.0
    for j in range(n):
        s = 0.0
        for i in range(n):
            LU[i, j] = J[rows[i], j]
            s += abs(LU[i, j])
        anorm = max(anorm, s)
    for k in range(n):
        p = k
        big = abs(LU[k, k])
        for i in range(k + 1, n):
            if abs(LU[i, k]) > big:
                big = abs(LU[i, k])
                p = i
        piv[k] = p
        if p != k:
            for j in range(n):
                LU[k, j], LU[p, j] = LU[p, j], LU[k, j]
        if LU[k, k] == 0.0:
            return 0.0
        inv = 1.0 / LU[k, k]
        for i in range(k + 1, n):
            LU[i, k] *= inv
        for i in range(k + 1, n):
            f = LU[i, k]
            if f != 0.0:
                for j in range(k + 1, n):
                    LU[i, j] -= f * LU[k, j]
    if anorm == 0.0:
        return 0.0
    # ‖J⁻¹‖₁: the largest column sum of the inverse, column by column
    e = np.empty(n)
    x = np.empty(n)
    inv_norm = 0.0
    for j in range(n):
        e[:] = 0.0
        e[j] = 1.0
        lu_solve(LU, piv, e, x)
        s = 0.0
        for i in range(n):
            s += abs(x[i])
        inv_norm = max(inv_norm, s)
    return 1.0 / (anorm * inv_norm)


@numba.njit(**_JIT)
def lu_solve(LU, piv, b, x):
    """x ← the solution of (P L U) x = b, from :func:`lu_factor`'s factors (b, x of length n)."""
    n = LU.shape[0]
    for i in range(n):
        x[i] = b[i]
    for k in range(n):
        p = piv[k]
        if p != k:
            x[k], x[p] = x[p], x[k]
    for i in range(n):
        s = x[i]
        for j in range(i):
            s -= LU[i, j] * x[j]
        x[i] = s
    for i in range(n - 1, -1, -1):
        s = x[i]
        for j in range(i + 1, n):
            s -= LU[i, j] * x[j]
        x[i] = s / LU[i, i]


@numba.njit(**_JIT)
def rows_solve(LU, piv, rows, b, x, tmp):
    """x with J[rows] x = b[rows] (the kept rows, square)."""
    for i in range(rows.shape[0]):
        tmp[i] = b[rows[i]]
    lu_solve(LU, piv, tmp, x)


@numba.njit(**_JIT)
def qr_factor(J, QR, tau):
    """Householder QR of J (nc ≥ nq) in LAPACK geqrf's storage; False when |R| has a
    diagonal below 1e-12 of its largest (all rows do not fix every coordinate)."""
    m, n = J.shape
    QR[:, :] = J
    for k in range(n):
        s = 0.0
        for i in range(k, m):
            s += QR[i, k] * QR[i, k]
        norm = math.sqrt(s)
        if norm == 0.0:
            tau[k] = 0.0
            continue
        alpha = -norm if QR[k, k] >= 0.0 else norm
        v0 = QR[k, k] - alpha
        for i in range(k + 1, m):
            QR[i, k] /= v0
        tau[k] = (alpha - QR[k, k]) / alpha
        QR[k, k] = alpha
        # H = I − τ v vᵀ, v = [1, QR[k+1:, k]], applied to the columns right of k
        for j in range(k + 1, n):
            d = QR[k, j]
            for i in range(k + 1, m):
                d += QR[i, k] * QR[i, j]
            d *= tau[k]
            QR[k, j] -= d
            for i in range(k + 1, m):
                QR[i, j] -= d * QR[i, k]
    dmax = 0.0
    dmin = np.inf
    for k in range(n):
        dmax = max(dmax, abs(QR[k, k]))
        dmin = min(dmin, abs(QR[k, k]))
    return dmin >= 1e-12 * dmax


@numba.njit(**_JIT)
def qr_lstsq(QR, tau, b, x, tmp):
    """x ← the least-squares solution of J x = b from :func:`qr_factor` (x = R⁻¹ Qᵀ b)."""
    m, n = QR.shape
    tmp[:m] = b
    for k in range(n):
        d = tmp[k]
        for i in range(k + 1, m):
            d += QR[i, k] * tmp[i]
        d *= tau[k]
        tmp[k] -= d
        for i in range(k + 1, m):
            tmp[i] -= d * QR[i, k]
    for i in range(n - 1, -1, -1):
        s = tmp[i]
        for j in range(i + 1, n):
            s -= QR[i, j] * x[j]
        x[i] = s / QR[i, i]


@numba.njit(**_JIT)
def all_rows(J, QR, tau, use_qr, LU, piv, rows, b, x, tmp):
    """x ← the least-squares solution of Φq x = b over all rows when ``use_qr`` (some rows
    were dropped as redundant and :func:`qr_factor` succeeded) and that system is consistent
    to round-off, else the solution on the kept rows (``_Stepper._all_rows`` of
    :mod:`.kinematics`, whose docstring says why)."""
    if use_qr:
        qr_lstsq(QR, tau, b, x, tmp)
        m, n = J.shape
        bmax = 0.0
        for i in range(m):
            bmax = max(bmax, abs(b[i]))
        jmax = 0.0
        for i in range(m):
            for j in range(n):
                jmax = max(jmax, abs(J[i, j]))
        xmax = 0.0
        for j in range(n):
            xmax = max(xmax, abs(x[j]))
        scale = max(1.0, bmax, jmax * xmax)
        worst = 0.0
        for i in range(m):
            r = -b[i]
            for j in range(n):
                r += J[i, j] * x[j]
            worst = max(worst, abs(r))
        if worst <= 1e3 * 2.220446049250313e-16 * scale * n:
            return
    rows_solve(LU, piv, rows, b, x, tmp)


def frames(times, k0, k1, Q, Qd, Qdd, rcond, rows, D, tol, max_iter, polish_iter, rcond_min, rcond_watch, t_prev,
           qdd_prev):
    """Frames k0 … k1 − 1 of a driven kinematic analysis (template; the steps of
    ``_Stepper.advance`` of :mod:`.kinematics` without its step splitting).

    Q, Qd, Qdd (nt, nq): q (m, unit quaternions), q̇, q̈ per frame, filled up to k0 − 1 on
    entry; ``rcond`` (nt,) each frame's kept rows' reciprocal condition number (for :mod:`.near_singular`);
    ``rows`` the kept rows
    of Φq (square, nq of them); D the model's data (see :mod:`.kinematics_fast`), its angle
    references those of frame k0 − 1 and left at the last frame done. A frame is computed by
    the predictor q* = q + h q̇ + h²/2 q̈ + h³/6 q⃛ (q⃛ from the accelerations of the last
    two poses: for frame k0, q̈ ``qdd_prev`` at ``t_prev`` (s; NaN: none) and frame k0 − 1),
    Newton on Φ(q, t) = 0 (chord steps, refactorised when they slow down, polished towards
    round-off, with a fresh factorisation where the kept rows' reciprocal condition number is below
    ``rcond_watch``), Φq q̇ = −Φt and
    Φq q̈ = γ. Returns the first frame not done: k1, or the frame where the Newton
    iteration failed, landed far from the predictor (another branch), the kept rows'
    reciprocal condition number fell below ``rcond_min`` or their determinant changed sign
    (a singular pose passed: a change point or dead centre) — the numpy stepper then takes
    that frame, splitting the step and reporting events as it does."""
    nq = Q.shape[1]
    eps = 2.220446049250313e-16
    # the factorisation at the accepted pose of frame k0 − 1
    phi = phi_all(Q[k0 - 1], k0 - 1, D)
    nc = phi.shape[0]
    J = np.zeros((nc, nq))
    QR = np.empty((nc, nq))
    tau = np.empty(nq)
    tmp = np.empty(max(nc, nq))
    LU = np.empty((nq, nq))
    piv = np.empty(nq, dtype=np.int64)
    x = np.empty(nq)
    q = np.empty(nq)
    trial = np.empty(nq)
    q_pred = np.empty(nq)
    jac_all(Q[k0 - 1], k0 - 1, D, J)
    rc = lu_factor(J, rows, LU, piv)  # of the factors in use
    if not rc >= rcond_min:
        return k0
    sign = det_sign(LU, piv)  # of the kept rows at the last accepted pose: a change means a singular pose passed
    k = k0
    while k < k1:
        t0, t1 = times[k - 1], times[k]
        h = t1 - t0
        step = 0.0
        for i in range(nq):
            q_pred[i] = Q[k - 1, i] + h * Qd[k - 1, i] + 0.5 * h * h * Qdd[k - 1, i]
        before = qdd_prev if k == k0 else Qdd[k - 2]
        tb = t_prev if k == k0 else times[k - 2]
        if tb < t0:  # the jerk from the last two accelerations
            c = h * h * h / 6.0 / (t0 - tb)
            for i in range(nq):
                q_pred[i] += c * (Qdd[k - 1, i] - before[i])
        for i in range(nq):
            step = max(step, abs(q_pred[i] - Q[k - 1, i]))
        # position: chord Newton from the predictor (``_Stepper._position``)
        q[:] = q_pred
        fresh = False
        prev_norm = np.inf
        converged = False
        norm = np.inf
        for it in range(max_iter):
            phi = phi_all(q, k, D)
            norm = max_abs_rows(phi, rows)
            if not np.isfinite(norm):
                break
            if norm < tol:
                converged = True
                break
            if it > 0 and norm > 0.25 * prev_norm:
                if fresh:
                    break
                jac_all(q, k, D, J)
                rc = lu_factor(J, rows, LU, piv)
                fresh = True
            else:
                fresh = False
            prev_norm = norm
            rows_solve(LU, piv, rows, phi, x, tmp)
            for i in range(nq):
                q[i] -= x[i]
        if not converged:
            return k
        # polish towards round-off (``_Stepper._polish``)
        qmax = 1.0
        for i in range(nq):
            qmax = max(qmax, abs(q[i]))
        floor = 4.0 * eps * qmax
        fresh = False
        for _ in range(polish_iter + 1):
            if norm <= floor:
                break
            rows_solve(LU, piv, rows, phi, x, tmp)
            for i in range(nq):
                trial[i] = q[i] - x[i]
            phi_t = phi_all(trial, k, D)
            norm_t = max_abs_rows(phi_t, rows)
            if not norm_t < 0.25 * norm:
                if fresh or (norm < 1e3 * eps and rc >= rcond_watch):
                    break
                jac_all(q, k, D, J)
                rc = lu_factor(J, rows, LU, piv)
                fresh = True
                continue
            q[:] = trial
            phi = phi_t
            norm = norm_t
        jump = 0.0
        for i in range(nq):
            jump = max(jump, abs(q[i] - q_pred[i]))
        if jump > max(0.5 * step, 1e3 * tol):
            return k
        jac_all(q, k, D, J)
        rc = lu_factor(J, rows, LU, piv)
        if not rc >= rcond_min:  # near a singular pose: the numpy stepper decides
            return k
        if det_sign(LU, piv) != sign:  # a singular pose passed in the step: the numpy stepper splits and reports it
            return k
        accept_all(q, D)
        # velocity and acceleration (``_Stepper.derivatives``)
        use_qr = rows.shape[0] < nc and qr_factor(J, QR, tau)
        b = phit_all(q, k, D)
        for r in range(nc):
            b[r] = -b[r]
        all_rows(J, QR, tau, use_qr, LU, piv, rows, b, Qd[k], tmp)
        gam = gamma_all(q, Qd[k], k, D)
        all_rows(J, QR, tau, use_qr, LU, piv, rows, gam, Qdd[k], tmp)
        finite = True
        for i in range(nq):
            finite = finite and np.isfinite(Qd[k, i]) and np.isfinite(Qdd[k, i])
        if not finite:
            return k
        Q[k] = q
        rcond[k] = rc
        k += 1
    return k


#: the templates :mod:`.kinematics_fast` compiles into each structure's module
TEMPLATES = (frames,)
