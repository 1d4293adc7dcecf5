"""Compiled fixed-step RK4 driver of the fast index-1 right-hand side (see :mod:`.fast`).

The classical Runge–Kutta method of order 4, stepped exactly as the Python loop of
:meth:`.contract.Formulation._run_rk4`: each output interval [t_k−1, t_k] is cut into
m = ⌈(t_k − t_k−1) / h_max⌉ equal steps h ≤ h_max, the last of which ends on t_k itself
(h_max = dt, or the rotation step limit at the interval's start if shorter, ``rotation_limit``: no step
turns a part by a quarter turn, so that the angles' windings hold over turns; at most
:data:`.integrators.MAX_ROTATION_CUT` steps for one of dt: :func:`.integrators.fixed_step`), and
after each step the formulation's bookkeeping runs (angle references, joint-measure
continuity, optional projection onto the joints), so both give the same states up to
round-off. The whole loop runs in compiled code; it applies when nothing in ẏ needs Python
(:attr:`.fast.FastRHS.self_contained`), as the DOP853 loop of :mod:`._dop853`.

Units: t, dt and h in s; the state y = [q, v, W] in m, 1 (Euler parameters), m/s, rad/s and J.

:func:`rk4` is a template (:data:`TEMPLATES`): :mod:`.fast` compiles its source inside its generated
library (and :mod:`.fast_tree` inside the tree module), where ``rhs``, ``groups``, ``windings``,
``rotation_limit``, ``project``, ``measure_rows`` and ``probe_step`` are that module's functions (the
last three templates of :mod:`._dop853`, whose loop probes its steps the same way).
"""

import math

import numpy as np

from . import _kernels as K
from ._dop853 import DONE, NAN_STATE, NOT_FINITE, S_PROBED, SINGULAR, finish
from ._singular_probes import PROBES, next_step_probes, strided
from . import integrators
from ..numba_cache import numba

#: :func:`.integrators.fixed_step` compiled, for the loop (the Python RK4 loop calls the function itself)
fixed_step = numba.njit(cache=True, nogil=True)(integrators.fixed_step)

#: ``stats`` slot of the last step size h (s) taken or tried (the stats array is
#: :data:`._radau.N_STATS` long; slots 7 and 8 are Radau's Jacobian and LU counts)
S_STEP = 7

# the model's compiled functions, bound in the generated module that compiles the templates (and the
# templates ``project``, ``measure_rows`` and ``probe_step`` of :mod:`._dop853`)
rhs = groups = windings = rotation_limit = project = choose_rows = measure_rows = probe_step = None


def rk4(t, y0, times, dt, ptol, max_iter, zone, df, di, dd, ws, Y, DD, stats, y_end):
    """Integrate ẏ = rhs(t, y) from (times[0], y0) to times[-1] by fixed RK4 steps of at most
    ``dt`` (s) and at most ``rotation_limit(y, df, di, dd, ws)`` at each output interval's start;
    fill the output frames (template).

    ``rhs(t, y, df, di, dd, ws) -> (ẏ, ok)`` is the model's compiled right-hand side; after each
    step ``windings(y, df, di, dd, ws)`` updates the continuity references in ``dd`` (it reads
    the workspace of the evaluation at that y), then ``project`` projects y onto the joints
    when ``ptol`` ≥ 0 and that evaluation saw a violation above it (ẏ is then evaluated again
    at the projected state, as the Python loop does).

    With ``zone`` > 0 (closed loops), a step that passes through a singular configuration's
    zone (:func:`._dop853.probe_step` and :func:`._dop853.strided`, the test of
    :func:`._dop853.strides_singular`, the last probe of a step reused as the first of the next,
    or measured at the projected state after a projection) stops the loop at its start, and an
    output time whose state is in the zone (the measure :func:`._kernels.singularity` below
    ``zone``) stops it there, with status SINGULAR: the state is in ``y_end``, ``stats[S_T]`` is
    its time and ``stats[S_STEP]`` the step h (the caller crosses the singular configuration and
    restarts).

    Frame k ≥ 1 gets ``Y[k]`` (the state at times[k], a step end) and ``DD[k]`` (a copy of
    ``dd``: the references after that step). Returns the status (DONE, NOT_FINITE, NAN_STATE,
    SINGULAR); ``stats`` gets the time reached, evaluations, steps, projections, frames filled,
    the start time of the failed step (NOT_FINITE) or the time of the non-finite state
    (NAN_STATE), the time of the failing evaluation and the step h.
    """
    n = y0.shape[0]
    nt = times.shape[0]
    y = y0.copy()
    y_new = np.empty(n)
    tmp = np.empty(n)
    nfev, nsteps, nproject, k = 0, 0, 0, 1
    status = DONE
    t_fail = t
    t_eval = t
    h = 0.0
    s = np.empty(len(PROBES))
    # each constraint row's measure at the step before's start, the step's start and its end (−1: not known)
    s_rows = np.full((3, K.i1(di, K.I_SIZES)[3] if zone > 0.0 else 0), -1.0)
    h_before = 0.0  # s, the length of the step before (0: none)
    s_before = -1.0  # √ measure at the step before's last interior probe (−1: not known)
    nprobed = 0
    f, ok = rhs(t, y, df, di, dd, ws)  # the first stage of the first step
    nfev += 1
    s[0] = math.sqrt(max(measure_rows(df, di, dd, ws, s_rows[1]), 0.0)) if ok and zone > 0.0 else -1.0
    if not ok:
        status = NOT_FINITE
    while status == DONE and k < nt:
        t0, t1 = t, times[k]
        m = max(1, int(math.ceil((t1 - t0) / fixed_step(dt, rotation_limit(y, df, di, dd, ws)) - 1e-9)))
        h = (t1 - t0) / m
        for i in range(m):
            for j in range(n):
                tmp[j] = y[j] + 0.5 * h * f[j]
            t_eval = t + 0.5 * h
            k2, ok = rhs(t_eval, tmp, df, di, dd, ws)
            nfev += 1
            if not ok:
                break
            for j in range(n):
                tmp[j] = y[j] + 0.5 * h * k2[j]
            k3, ok = rhs(t_eval, tmp, df, di, dd, ws)
            nfev += 1
            if not ok:
                break
            for j in range(n):
                tmp[j] = y[j] + h * k3[j]
            t_eval = t + h
            k4, ok = rhs(t_eval, tmp, df, di, dd, ws)
            nfev += 1
            if not ok:
                break
            finite = True
            for j in range(n):
                y_new[j] = y[j] + (h / 6.0) * (f[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j])
                if not math.isfinite(y_new[j]):
                    finite = False
            t_new = t1 if i == m - 1 else t0 + (i + 1) * h
            if not finite:
                status = NAN_STATE
                t_fail = t_new
                break
            t_eval = t_new
            f_new, ok = rhs(t_new, y_new, df, di, dd, ws)  # the next step's first stage if not projected
            nfev += 1
            if not ok:
                break
            if zone > 0.0:
                aux = K.f1(ws, di, K.I_AUX)
                violation_v, violation_q = aux[0], aux[1]
                if probe_step(t, h, y, y_new, f, f_new, s, tmp, df, di, dd, ws, s_rows, h_before):
                    nprobed += 1
                if strided(s, math.sqrt(zone), s_before, h_before / h):
                    status = SINGULAR  # stop at the start of the step: the crossing takes it from there
                    break
                # the workspace holds y_new's kinematics, joint rows and measures (what the
                # bookkeeping reads); its evaluation's violations back
                aux[0], aux[1] = violation_v, violation_q
                s_before = next_step_probes(s, s_rows)  # the next step starts at y_new
                h_before = h
            nsteps += 1
            t = t_new
            # bookkeeping at the accepted state (the workspace holds the evaluation at y_new)
            windings(y_new, df, di, dd, ws)
            # (redundant rows close loops: without, there is nothing to choose)
            rows_changed = zone > 0.0 and choose_rows(df, di, dd, ws, True)
            changed = False
            if ptol >= 0.0:
                aux = K.f1(ws, di, K.I_AUX)
                if aux[0] > ptol or aux[1] > ptol:
                    changed = project(t, y_new, df, di, dd, ws, ptol, max_iter)
                    if changed:
                        nproject += 1
            for j in range(n):
                y[j] = y_new[j]
            if changed or rows_changed:  # ẏ(y) of the rows the next step drops
                t_eval = t
                f, ok = rhs(t, y, df, di, dd, ws)
                nfev += 1
                if not ok:
                    break
                if zone > 0.0 and changed:  # the next step starts at the projected y
                    s[0] = math.sqrt(max(measure_rows(df, di, dd, ws, s_rows[1]), 0.0))
            else:
                f = f_new
        if not ok:  # an evaluation in the step from t was not finite
            status = NOT_FINITE
            t_fail = t
            break
        if status != DONE:
            break
        Y[k, :] = y
        DD[k, :] = dd
        k += 1
        # the workspace holds the evaluation at y
        if zone > 0.0 and k < nt and K.singularity(df, di, dd, ws) < zone:
            status = SINGULAR
            break
    finish(y, y_end, stats, t, nfev, nsteps, nproject, k, t_fail, t_eval)
    stats[S_STEP] = h
    stats[S_PROBED] = nprobed
    return status


#: compiled inside each generated module (they call the model's ``rhs``, ``groups``, ``windings`` and the
#: template ``project`` of :mod:`._dop853`)
TEMPLATES = (rk4,)
#: names the template uses from this module (the rest come from :data:`._dop853.HELPERS`)
HELPERS = ("S_STEP", "fixed_step")
