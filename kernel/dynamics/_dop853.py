"""Compiled DOP853 driver of the fast index-1 right-hand side (see :mod:`.fast`).

The explicit Runge–Kutta pair of order 8(5,3) of Dormand and Prince with its 7th-order dense
output (Hairer, Nørsett & Wanner, *Solving ODEs I*, II.10), the same method, coefficients
(scipy's ``dop853_coefficients``), initial step, error norm and step-size control as
``scipy.integrate.DOP853``, so both take the same steps up to round-off. The whole loop runs in
compiled code: each stage calls the model's compiled right-hand side directly, and after each
accepted step the formulation's bookkeeping (angle references, joint-measure continuity,
optional projection onto the joints) is compiled too. It applies when nothing in ẏ needs Python
(drivers' time functions and torque/force expressions are compiled into the model's module;
:attr:`.fast.FastRHS.self_contained`).

Units: t in s; the state y = [q, v, W] in m, 1 (Euler parameters), m/s, rad/s and J;
``rtol`` is relative, ``atol`` in the units of each component.

The functions that call the model's compiled functions (``rhs``, ``groups``, ``windings``,
``step_limit``) are
templates listed in :data:`TEMPLATES`: :mod:`.fast` compiles their source inside its generated
library (and :mod:`.fast_tree` inside the tree module), where those names are that module's functions (numba can cache
direct calls of global functions, not functions passed as values). The helpers in
:data:`HELPERS` are compiled once here.
"""

import math

import numpy as np

from ..numba_cache import numba  # numba, its cache folder named by the kernel sources
from ..scipy_files import scipy_module
from . import _kernels as K
from ._singular_probes import PROBES, clear_of_singular, next_step_probes, strided  # in HELPERS, and used below

# scipy's table, read without importing scipy.integrate (≈ 0.2 s of CPU a compiled run does not need)
_coef = scipy_module("integrate/_ivp/dop853_coefficients")
if _coef is None:  # pragma: no cover - a scipy laid out otherwise
    from scipy.integrate._ivp import dop853_coefficients as _coef

_JIT = dict(cache=True, nogil=True)

N_STAGES = _coef.N_STAGES  # 12 stages; the 13th (first-same-as-last) is ẏ at the new state
A = np.ascontiguousarray(_coef.A)  # (16, 16): the 12 stages, ẏ(y_new) and 3 extra dense-output stages
B = np.ascontiguousarray(_coef.B)
C = np.ascontiguousarray(_coef.C)
E3 = np.ascontiguousarray(_coef.E3)
E5 = np.ascontiguousarray(_coef.E5)
D = np.ascontiguousarray(_coef.D)  # (4, 16) dense-output coefficients
SAFETY, MIN_FACTOR, MAX_FACTOR = 0.9, 0.2, 10.0
ERROR_EXPONENT = -1.0 / 8.0  # −1 / (error estimator order 7 + 1)
#: the output time t_k is reached when t_k ≤ t + TIME_EPS · max(1, |t|) (as the scipy driver)
TIME_EPS = 1e-12

#: status codes returned by :func:`dop853`; SINGULAR: stopped at an accepted step near a
#: singular configuration (the smallest pivot ratio of S below ``zone``), for the caller to cross
DONE, NOT_FINITE, STEP_COLLAPSE, NAN_STATE, SINGULAR = 0, 1, 2, 3, 4
#: layout of the ``stats`` array
S_T, S_NFEV, S_NSTEPS, S_NPROJECT, S_K, S_T_FAIL, S_T_EVAL = range(7)
#: ``stats`` slot of the steps whose interior singular-configuration probes were evaluated
#: (:func:`probe_step`; the stats array is :data:`._radau.N_STATS` long)
S_PROBED = 9

# the model's compiled functions, bound in the generated module that compiles the templates
rhs = groups = windings = step_limit = None


@numba.njit(**_JIT)
def finish(y, y_end, stats, t, nfev, nsteps, nproject, k, t_fail, t_eval):
    """The end of a compiled loop (DOP853, Radau, RK4): the last state into ``y_end``, the time and the
    counters into ``stats`` (layout ``S_*``)."""
    for i in range(y.shape[0]):
        y_end[i] = y[i]
    stats[S_T] = t
    stats[S_NFEV] = nfev
    stats[S_NSTEPS] = nsteps
    stats[S_NPROJECT] = nproject
    stats[S_K] = k
    stats[S_T_FAIL] = t_fail
    stats[S_T_EVAL] = t_eval


@numba.njit(**_JIT)
def rms(x, scale):
    """Root mean square of x / scale (scipy's ``norm``)."""
    s = 0.0
    for i in range(x.shape[0]):
        r = x[i] / scale[i]
        s += r * r
    return math.sqrt(s / x.shape[0])


@numba.njit(**_JIT)
def stage_state(y, h, Ks, s, out):
    """out = y + h Σ_{j<s} A[s, j] K[j] (the state at stage s; h in s)."""
    n = y.shape[0]
    for i in range(n):
        acc = 0.0
        for j in range(s):
            a = A[s, j]
            if a != 0.0:
                acc += a * Ks[j, i]
        out[i] = y[i] + h * acc


def initial_step(t0, y0, f0, t_bound, rtol, atol, df, di, dd, ws, order):
    """scipy's ``select_initial_step`` (Hairer's algorithm) for a method whose error estimate
    has the given order (DOP853: 7, Radau: 3); returns (h in s, ok) (template)."""
    n = y0.shape[0]
    interval = abs(t_bound - t0)
    scale = np.empty(n)
    for i in range(n):
        scale[i] = atol + abs(y0[i]) * rtol
    d0 = rms(y0, scale)
    d1 = rms(f0, scale)
    h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
    h0 = min(h0, interval)
    y1 = y0 + h0 * f0
    f1, ok = rhs(t0 + h0, y1, df, di, dd, ws)
    if not ok:
        return h0, False
    d2 = rms(f1 - f0, scale) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1.0 / (order + 1.0))
    return min(100.0 * h0, h1, interval), True


def dense_output(t_old, h, y_old, y_new, Ks, df, di, dd, ws):
    """The 7 coefficient rows F of the dense output on [t_old, t_old + h] (3 more evaluations);
    Ks[12] must hold ẏ(y_new). Returns (F, ok) (template)."""
    n = y_old.shape[0]
    tmp = np.empty(n)
    for s in range(N_STAGES + 1, 16):
        stage_state(y_old, h, Ks, s, tmp)
        out, ok = rhs(t_old + C[s] * h, tmp, df, di, dd, ws)
        if not ok:
            return np.zeros((7, n)), False
        Ks[s, :] = out
    F = np.empty((7, n))
    for i in range(n):
        dy = y_new[i] - y_old[i]
        f_old = Ks[0, i]
        F[0, i] = dy
        F[1, i] = h * f_old - dy
        F[2, i] = 2.0 * dy - h * (Ks[N_STAGES, i] + f_old)
        for r in range(4):
            acc = 0.0
            for s in range(16):
                acc += D[r, s] * Ks[s, i]
            F[3 + r, i] = h * acc
    return F, True


@numba.njit(**_JIT)
def interpolate(F, y_old, x, out):
    """out = the dense output at x = (t − t_old) / h ∈ [0, 1] (scipy's ``Dop853DenseOutput``)."""
    n = y_old.shape[0]
    for i in range(n):
        acc = 0.0
        for r in range(6, -1, -1):
            acc += F[r, i]
            if (6 - r) % 2 == 0:
                acc *= x
            else:
                acc *= 1.0 - x
        out[i] = acc + y_old[i]


def dop853(t, y0, times, rtol, atol, ptol, max_iter, zone, df, di, dd, ws, Y, DD, stats, y_end):
    """Integrate ẏ = rhs(t, y) from (times[0], y0) to times[-1]; fill the output frames (template).

    ``rhs(t, y, df, di, dd, ws) -> (ẏ, ok)`` is the model's compiled right-hand side;
    ``windings(y, df, di, dd, ws)`` updates the continuity references in ``dd`` after an
    accepted step (it reads the workspace of the evaluation at that y); :func:`project`
    projects y onto the joints, used when ``ptol`` ≥ 0 and the last evaluation saw a
    violation above it (then ẏ is evaluated again at the projected state, as the scipy
    driver does).

    With ``zone`` > 0, a step that passes through a singular configuration's zone
    (:func:`probe_step` and :func:`strided`, the test of :func:`strides_singular`) stops the
    loop at its start, and one that a projection moves into it (the measure
    :func:`._kernels.singularity` below ``zone``) at its end with status SINGULAR: the state is in
    ``y_end`` and ``stats[S_T]`` is its time (the caller crosses the singular configuration by other
    means and restarts the loop). A step's last probe is y_new itself and the first of the next
    step when no projection moved it, so a step costs four probes and no evaluation more.

    ``step_limit(y, df, di, dd, ws)`` is the largest step (s) at an accepted state, scipy's
    ``max_step`` as the scipy driver sets it (the parts' rotation, :func:`._kernels.rotation_step_limit`,
    and the compliant contacts', :func:`._kernels.contact_step_limit`; it may overwrite the
    workspace); ``windings`` also records the contacts' impact speeds.

    Frame k ≥ 1 gets ``Y[k]`` (the projected state if times[k] is a step end, else the dense
    output of the step, projected as a step end is when ``ptol`` ≥ 0: the frames are the output
    states, :meth:`.contract.Formulation.output_state`) and ``DD[k]`` (a copy of ``dd``: the
    references after that step).
    Returns the status (DONE, NOT_FINITE, STEP_COLLAPSE, NAN_STATE, SINGULAR); ``stats`` gets the time
    reached, evaluations, accepted steps, projections, frames filled, the start time of the
    failed step and the time of the failing evaluation.
    """
    n = y0.shape[0]
    nt = times.shape[0]
    t_bound = times[nt - 1]
    Ks = np.empty((16, n))
    y = y0.copy()
    y_new = np.empty(n)
    tmp = np.empty(n)
    nfev, nsteps, nproject, k = 0, 0, 0, 1
    status = DONE
    t_fail = t
    t_eval = t
    f, ok = rhs(t, y, df, di, dd, ws)
    nfev += 1
    # √ of the singular measure at the probes of a step; the first, at y, is known from the step before
    sp = np.empty(len(PROBES))
    # each constraint row's measure at the step before's start, the step's start and its end (−1: not known)
    sp_rows = np.full((3, K.i1(di, K.I_SIZES)[3] if zone > 0.0 else 0), -1.0)
    sp[0] = math.sqrt(max(measure_rows(df, di, dd, ws, sp_rows[1]), 0.0)) if ok and zone > 0.0 else -1.0
    h_before = 0.0  # s, the length of the step before (0: none)
    s_before = -1.0  # √ measure at the step before's last interior probe (−1: not known)
    nprobed = 0
    h_abs = 0.0
    h_max = step_limit(y, df, di, dd, ws)  # scipy's max_step, set after every step
    if ok:
        h_abs, ok = initial_step(t, y, f, t_bound, rtol, atol, df, di, dd, ws, 7)
        nfev += 1
    if not ok:
        status = NOT_FINITE
    while status == DONE and k < nt:
        t_old = t
        min_step = 10.0 * abs(np.nextafter(t, np.inf) - t)
        if h_abs > h_max:
            h_abs = h_max
        elif h_abs < min_step:
            h_abs = min_step
        accepted = False
        rejected = False
        h = 0.0
        while not accepted:
            if h_abs < min_step:
                status = STEP_COLLAPSE
                break
            t_new = t + h_abs
            if t_new - t_bound > 0:
                t_new = t_bound
            h = t_new - t
            h_abs = abs(h)
            Ks[0, :] = f
            for s in range(1, N_STAGES + 1):
                if s < N_STAGES:
                    stage_state(y, h, Ks, s, tmp)
                    t_eval = t + C[s] * h
                    out, ok = rhs(t_eval, tmp, df, di, dd, ws)
                else:  # the solution at t + h and ẏ there
                    for i in range(n):
                        acc = 0.0
                        for j in range(N_STAGES):
                            acc += B[j] * Ks[j, i]
                        y_new[i] = y[i] + h * acc
                    t_eval = t + h
                    out, ok = rhs(t_eval, y_new, df, di, dd, ws)
                nfev += 1
                if not ok:
                    break
                Ks[s, :] = out
            if not ok:
                status = NOT_FINITE
                break
            e5 = 0.0
            e3 = 0.0
            for i in range(n):
                sc = atol + max(abs(y[i]), abs(y_new[i])) * rtol
                a5 = 0.0
                a3 = 0.0
                for j in range(N_STAGES + 1):
                    a5 += E5[j] * Ks[j, i]
                    a3 += E3[j] * Ks[j, i]
                a5 /= sc
                a3 /= sc
                e5 += a5 * a5
                e3 += a3 * a3
            if e5 == 0.0 and e3 == 0.0:
                error_norm = 0.0
            else:
                error_norm = h_abs * e5 / math.sqrt((e5 + 0.01 * e3) * n)
            if error_norm < 1.0:
                factor = MAX_FACTOR if error_norm == 0.0 else min(MAX_FACTOR, SAFETY * error_norm ** ERROR_EXPONENT)
                if rejected:
                    factor = min(1.0, factor)
                h_abs *= factor
                accepted = True
            else:
                h_abs *= max(MIN_FACTOR, SAFETY * error_norm ** ERROR_EXPONENT)
                rejected = True
        if status != DONE:
            t_fail = t_old
            break
        finite = True
        for i in range(n):
            if not math.isfinite(y_new[i]):
                finite = False
        if not finite:
            status = NAN_STATE
            t_fail = t_old
            break
        if zone > 0.0:
            aux = K.f1(ws, di, K.I_AUX)
            violation_v, violation_q = aux[0], aux[1]
            if probe_step(t_old, h, y, y_new, Ks[0], Ks[N_STAGES], sp, tmp, df, di, dd, ws, sp_rows, h_before):
                nprobed += 1
            if strided(sp, math.sqrt(zone), s_before, h_before / h):
                status = SINGULAR  # stop at the start of the step: the crossing takes it from there
                break
            # the workspace holds y_new's kinematics, joint rows and measures (what the bookkeeping
            # reads, as the evaluation at y_new did); that evaluation's violations back
            aux[0], aux[1] = violation_v, violation_q
            s_before = next_step_probes(sp, sp_rows)  # the next step starts at y_new
            h_before = h
        nsteps += 1
        t = t_new
        # bookkeeping at the accepted state (the workspace holds the evaluation at y_new)
        windings(y_new, df, di, dd, ws)
        # (redundant rows close loops: without, there is nothing to choose)
        rows_changed = zone > 0.0 and choose_rows(df, di, dd, ws, True)
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
        if times[k] <= t + eps:
            F, ok = dense_output(t_old, h, y, y_new, Ks, df, di, dd, ws)
            nfev += 3
            if not ok:
                status = NOT_FINITE
                t_fail = t_old
                break
            while k < nt and times[k] <= t + eps:
                if abs(times[k] - t) <= eps:
                    Y[k, :] = y_acc if changed else y_new
                else:
                    interpolate(F, y, (times[k] - t_old) / h, Y[k])
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
            f = Ks[N_STAGES].copy()
        if t == t_bound:
            if k < nt:
                Y[k, :] = y
                DD[k, :] = dd
                k += 1
            break
        if zone > 0.0 and changed:  # (unprojected, y is the step's last probe, above the zone)
            measure = measure_rows(df, di, dd, ws, sp_rows[1])
            if measure < zone:
                status = SINGULAR
                break
            sp[0] = math.sqrt(max(measure, 0.0))
        h_max = step_limit(y, df, di, dd, ws)
    finish(y, y_end, stats, t, nfev, nsteps, nproject, k, t_fail, t_eval)
    stats[S_PROBED] = nprobed
    return status


def strides_singular(t, h, y, y_new, f, f_new, zone, tmp, df, di, dd, ws):
    """True if the step from (t, y) to (t + h, y_new) passes through a singular configuration
    (template; overwrites the workspace). The measure s = √(:func:`._kernels.singularity`),
    about the smallest relative singular value of Jv, is taken at :data:`PROBES` of the step
    (states from the cubic Hermite interpolant of y, f, y_new, f_new): True when one is below
    √zone, or when they show a V (:func:`strided`): s falls linearly to 0 at a singular
    configuration and rises after it, a V that a step can stride over between probes."""
    s = np.empty(len(PROBES))
    s[0] = -1.0  # the measure at y is not known
    rows = np.full((3, K.i1(di, K.I_SIZES)[3]), -1.0)  # nor the step before's: every probe is taken
    probe_step(t, h, y, y_new, f, f_new, s, tmp, df, di, dd, ws, rows, 0.0)
    return strided(s, math.sqrt(zone), -1.0, 0.0)


def choose_rows(df, di, dd, ws, factored):
    """At an accepted state whose evaluation the workspace holds: the redundant rows the next
    step's stages drop (:func:`._kernels.choose_rows`; template: a formulation without them
    replaces it). True if they changed. ``factored``: the workspace's factor of S is that
    evaluation's, with the rows chosen before (the last evaluation was ẏ at this state; the
    singular measure's probes factorise in their own arrays): when its pivots show that the same
    rows would be chosen (:func:`._kernels.rows_still_chosen`, exact), S is not factorised again."""
    if factored and K.rows_still_chosen(df, di, dd, ws):
        return False
    return K.choose_rows(df, di, dd, ws)


def measure_rows(df, di, dd, ws, rows):
    """The singular-configuration measure at the workspace's state (:func:`._kernels.singularity`),
    and each constraint row's √ pivot ratio into ``rows`` (m,) (template: a formulation whose
    measure has no rows replaces it)."""
    return K.singularity_rows(df, di, dd, ws, rows)


def probe_step(t, h, y, y_new, f, f_new, s, tmp, df, di, dd, ws, rows, h_before):
    """s[j] = √(:func:`._kernels.singularity`) at the :data:`PROBES` of the step from
    (t, y) to (t + h, y_new) (template), the states from the cubic Hermite interpolant of y,
    f = ẏ(t), y_new, f_new = ẏ(t + h), as :func:`strides_singular` takes them.

    The workspace must hold the evaluation at y_new (the loops' last evaluation is ẏ(y_new)),
    and is left with it: y_new's kinematics, joint rows and measures (its violations
    ``aux[0:3]`` cleared if the workspace was re-evaluated, which the callers restore).
    s[0] is kept if it is ≥ 0 (the measure at y, known from the step before). ``rows`` (3, m)
    holds each constraint row's measure at the start of the step before (length ``h_before``
    s), at y and at y_new (filled here; see :func:`clear_of_singular`): when the rows are clear
    of every V, the interior probes are not evaluated and s gets the straight line between its
    ends there (no V for :func:`strided`). Returns True if the interior probes were evaluated."""
    n = y.shape[0]
    last = len(PROBES) - 1
    at_new = True  # the workspace holds the evaluation at y_new
    if s[0] < 0.0:
        K.stage_kinematics(y, df, di, ws)
        groups(t, y, df, di, dd, ws, False)
        s[0] = math.sqrt(max(measure_rows(df, di, dd, ws, rows[1]), 0.0))
        at_new = False
    if not at_new:
        K.stage_kinematics(y_new, df, di, ws)
        groups(t + h, y_new, df, di, dd, ws, False)
    s[last] = math.sqrt(max(measure_rows(df, di, dd, ws, rows[2]), 0.0))
    if clear_of_singular(rows, h_before, h):
        for j in range(1, last):
            s[j] = s[0] + PROBES[j] * (s[last] - s[0])
        return False
    for j in range(1, last):
        p = PROBES[j]
        h00 = 2.0 * p ** 3 - 3.0 * p ** 2 + 1.0
        h10 = p ** 3 - 2.0 * p ** 2 + p
        h01 = -2.0 * p ** 3 + 3.0 * p ** 2
        h11 = p ** 3 - p ** 2
        for i in range(n):
            tmp[i] = h00 * y[i] + h10 * h * f[i] + h01 * y_new[i] + h11 * h * f_new[i]
        K.stage_kinematics(tmp, df, di, ws)
        groups(t + p * h, tmp, df, di, dd, ws, False)
        s[j] = math.sqrt(max(K.singularity(df, di, dd, ws), 0.0))
    K.stage_kinematics(y_new, df, di, ws)  # y_new's kinematics and rows back in the workspace
    groups(t + h, y_new, df, di, dd, ws, False)
    return True


def project(t, y, df, di, dd, ws, tol, max_iter):
    """Project y in place onto the joints (template): positions by at most ``max_iter``
    mass-weighted Newton steps until max |Φ| (and ||p|² − 1|) ≤ tol, then velocities onto
    Jv v + Φt = 0 if that residual exceeds tol (tol in m, rad, m/s, rad/s). Returns True if
    y changed."""
    changed = False
    for it in range(max_iter + 1):
        K.stage_kinematics(y, df, di, ws)
        groups(t, y, df, di, dd, ws, False)
        if K.position_violation(y, di, ws) <= tol or it == max_iter:
            break
        K.position_step(y, df, di, dd, ws)
        changed = True
    if K.velocity_step(y, df, di, dd, ws, tol) > tol:
        changed = True
    return changed


#: compiled inside each generated module (they call the model's ``rhs``, ``groups``, ``windings``)
TEMPLATES = (initial_step, dense_output, strides_singular, choose_rows, measure_rows, probe_step, project, dop853)
#: names the templates use from this module
HELPERS = ("A", "B", "C", "D", "E3", "E5", "N_STAGES", "SAFETY", "MIN_FACTOR", "MAX_FACTOR", "ERROR_EXPONENT",
           "TIME_EPS", "DONE", "NOT_FINITE", "STEP_COLLAPSE", "NAN_STATE", "SINGULAR", "S_T", "S_NFEV", "S_NSTEPS",
           "S_NPROJECT", "S_K", "S_PROBED", "S_T_FAIL", "S_T_EVAL", "finish", "rms", "stage_state", "interpolate",
           "PROBES", "strided", "clear_of_singular", "next_step_probes")
