"""Joint limits as stops beyond their samples (issue 16 item 2): both ``limit_method``s, the integrators and their
tolerances, the restitution, resting on a stop, fast stops, closed loops and ``limit_exponent`` = 1.5; every run
against a closed form or a static balance computed here from the frames (poses and velocities), never from
cadmotion's own energy or stop outputs, and whether the run's own checks (``result.invariants``) flagged it.

Cases (``compliant``: F = k δ^n (1 + ξ(e) δ̇/δ̇⁻), default k = m_eff (π/t_c)², t_c = 2 ms; ``unilateral``: impacts
with −e times the approach rate, then resting on the limit):

* ``bounce``: a uniform rod (1 kg, 1 m, pivot at one end, I = m L²/3, L_c = 0.5 m) released at rest from horizontal
  onto a stop at θ_s = −π/4 (limits [θ_s, 1] rad), e = 0.05, 0.3, 0.7, 1, over 1.2 s at 1 ms frames (0.75 s for
  e < 0.5: at rest on the stop after that). Closed form:
  the rigid stop's energy after k impacts, E_k = −m g h0 (1 − e^(2k)), h0 = L_c sin(−θ_s) (E = ½ I ω² + m g L_c sin θ
  from each frame's pose and spin, plus the compliant stop's k δ²/2 from its angle). Error: the largest |E − E_k|
  over the free frames after the k-th contact (k = 0, 1, 2), over m g h0. Allowed: unilateral 100 rtol; compliant
  the bound gravity's impulse over a contact sets (|Δω| ≤ m g L_c t_d / I per contact, t_d its duration from the
  1-DOF Hunt–Crossley ODE solved here, carried over the contacts) plus 100 rtol. Also: the energy's largest rise
  between frames (allowed 100 rtol m g h0), and the contacts counted (frames on the stop, impact events) against
  those of the rigid stop whose rebound speed is above 0.1 rad/s (the slower ones may end in resting contact).
* ``rest``: the rod released at its lower limit (limits [0, 1]) for 5 s (compliant: 0.5 s; resting on a compliant
  stop, the steps are a tenth of its duration, 2500 per second), and a rod without gravity driven into
  its upper limit (limits [−1, 0]) by a constant torque τ = 2 N m on the joint. Static balance: limit_force = m g L_c
  (resp. τ) at every frame after the first 0.1 s; the angle creeps by less than 1e-9 rad; the energy never rises.
  Compliant: the static penetration m g L_c / k (τ / k), to 1e-6 relative.
* ``slider``: a 2 kg slider on a prismatic rail at v0 = 20 and 200 m/s into a stop 0.1 m away (limits [−1, 0.1]),
  k = 1e8 N/m (compliant), e = 0.5, n = 1 and 1.5, two output frames, 5 ms after the impact: closed form
  v_end = −e v0, x_end = 0.1 − e v0 (t_end − 0.1/v0 − t_d) (t_d the compliant contact's duration from the 1-DOF
  Hunt–Crossley ODE solved here, 0 for the unilateral limit). Allowed: 1e-6 + 100 rtol (relative to v0, to the path).
* ``box``: a 2 kg slider without gravity between its two limits ±1 mm (one coordinate, both stops), e = 0.9, 10 ms
  at 2.5 µs frames, 20 m/s (unilateral) or 2 m/s into 1e8 N/m stops (compliant): |v| = e^k v0 after the k-th contact
  (allowed 1e-6 + 100 rtol), the contacts counted against the closed form's (w / v0, then t_d + 2 w / (e^k v0)
  apart; one either way at the end of the run).
* ``cylinder``: a sleeve (1 kg, com 0.2 m off a vertical axis) on a cylindrical joint with limits angle [−10, 1] rad
  and disp [−0.05, 10] m, spinning at 5 rad/s (as the run starts) and falling, 0.5 s: the spin rebounds at exactly
  −e (no other torque about the axis; allowed 1e-6 + 100 rtol); the slide bounces to rest at m g / k below its limit
  (compliant, to 1 % of that) or on it (unilateral, within its touching band, 1.01e-7 m), carrying m g (to 1e-4).
* ``fourbar``: the four-bar sample (crank 0.15 m, coupler 0.35 m, rocker 0.25 m; spring, gravity; 3 redundant joint
  rows), the crank's joint limited to [−0.6, 0.3] rad, e = 0.5, n = 1 and 1.5 (compliant) and unilateral, 0.5 s,
  2 ms frames. A one-degree-of-freedom loop: an impact scales its kinetic energy by e² (T⁺ = e² T⁻ at the same
  pose), between contacts E = T + V_gravity + V_spring is constant. E from the frames (bodies' com velocities and
  spins, the spring's length). Error: |ΔE_k + (1 − e²) T⁻_k| / E-scale per contact (T⁻_k the kinetic energy in the
  last frame before contact k, corrected to the stop by the energy); allowed: unilateral 100 rtol, compliant also
  the work of the other forces during the contact (their largest power around it times the frames it spans, both
  ways) plus the change of the loop's reduced inertia over the stop's penetration. Impacts closer than a frame
  (the unilateral limit's sequence of ever smaller bounces before it rests) are not checked one by one.

Integrators DOP853, RK45, Radau, BDF, LSODA at rtol 1e-4, 1e-6, 1e-8, 1e-10 (``--quick``: 1e-4, 1e-7, 1e-10;
atol = rtol / 100); compliant also RK4 at dt = 0.1 and 0.4 ms (t_c / 20 and t_c / 5 of the default stop; the slider's
1e8 N/m stop lasts 0.44 ms). Where a line says "100 rtol", a fixed-step run is allowed (dt π / t_c)² instead
(:func:`_allow`). Prints per case one line per method, integrator and tolerance: runs, incomplete,
flagged by the run's checks, off the closed form, worst errors (relative) and wall time; then every such run.

    python benchmarks/stops_sweep.py [bounce] [rest] [slider] [box] [cylinder] [fourbar] [--quick]
"""
import math
import os
import sys
import time
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

from cadmotion.errors import CadmotionError  # noqa: E402
from cadmotion.importers.modelfile import parse_model  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics.contacts import restitution_factor  # noqa: E402
from cadmotion.kernel.dynamics.forward import run  # noqa: E402
from cadmotion.kernel.dynamics.unilateral import CLOSED_GAP, CLOSED_GAP_REL  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "dynamics"
G = 9.81
INTEGRATORS = ("DOP853", "RK45", "Radau", "BDF", "LSODA")
TOLERANCES = (1e-4, 1e-6, 1e-8, 1e-10)
T_C = 2e-3  # the default stop's duration (s)
M, L = 1.0, 1.0
I_P, LC = M * L * L / 3.0, L / 2.0


# ---------------------------------------------------------------------------- references computed here
def hc_duration(m, k, n, e, v):
    """The duration (s) of a Hunt–Crossley impact m δ̈ = −k δ^n (1 + ξ(e) δ̇/v) at speed v, and its rebound
    speed ratio (solved here, rtol 1e-12: the check that ξ(e) gives e)."""
    xi = restitution_factor(e) if e < 1 else 0.0

    def f(t, y):
        d = max(y[0], 0.0)
        return [y[1], -k * d ** n * (1 + xi * y[1] / v) / m]

    out = lambda t, y: y[0] + (1e-300 if t == 0 else 0.0)  # noqa: E731
    out.terminal, out.direction = True, -1
    scale = ((n + 1) * m * v * v / (2 * k)) ** (1 / (n + 1)) / v
    sol = solve_ivp(f, (0, 100 * scale), [0.0, v], events=out, rtol=1e-12, atol=1e-15 * v * scale,
                    first_step=scale * 1e-4, max_step=scale / 20)
    return float(sol.t_events[0][0]), float(-sol.y_events[0][0][1] / v)


def _angle_z(quat):
    """The rotation angle about +z of planar rotations, (nt,) rad, continuous."""
    return np.unwrap(2.0 * np.arctan2(quat[:, 3], quat[:, 0]))


def _allow(rtol, dt, t_c=T_C):
    """What an integrator may miss, relative: 100 rtol (adaptive), or for a fixed step dt the error of the step
    that crosses into or out of the stop, of the order (dt π / t_c)² (the force's onset is not smooth: the
    crossing step is of order 1 in the stop's rate; at most 1)."""
    return 100.0 * rtol if dt is None else min((dt * math.pi / t_c) ** 2, 1.0)


def _run(data, **kw):
    """(motion, result, flagged checks, wall s) of one run; (None, message, ...) if it raised."""
    t0 = time.perf_counter()
    try:
        motion, result = run(compile_model(parse_model(data, source="sweep.toml")), **kw)
    except CadmotionError as exc:
        return None, str(exc).splitlines()[0], [], time.perf_counter() - t0
    flags = [c.name for c in result.invariants.broken]
    return motion, result, flags, time.perf_counter() - t0


def _row(case, motion, result, flags, wall, errors, allowed, note=""):
    """A run's line: errors and their allowances (same order)."""
    if motion is None:
        return dict(case=case, complete=False, flags=[], wall=wall, errors=[math.inf] * len(allowed),
                    allowed=allowed, note=result)
    return dict(case=case, complete=motion.complete, flags=flags, wall=wall, errors=list(errors),
                allowed=list(allowed), note=note or ("" if motion.complete else motion.message))


# ---------------------------------------------------------------------------- the rod pendulum
def pendulum(limits, method, e=0.5, gravity=True, **joint):
    j = dict(name="pivot", type="revolute", parts=["ground", "rod"], origin=[0, 0, 0], axis=[0, 0, 1],
             limits={"angle": list(limits)}, limit_restitution=e, **joint)
    if method == "unilateral":
        j["limit_method"] = "unilateral"
    return {"units": "m", "gravity": [0, -G if gravity else 0.0, 0],
            "parts": {"ground": {"fixed": True},
                      "rod": {"position": [0, 0, 0], "mass": M, "com": [LC, 0, 0],
                              "inertia": [1e-6, M * L * L / 12, M * L * L / 12]}},
            "joints": [j]}


THETA_S = -math.pi / 4


def bounce(method, e, integrator, rtol, dt=None):
    """Energy after each contact against the rigid stop's e^(2k), the energy's rise, the contacts counted."""
    h0 = -LC * math.sin(THETA_S)
    mgh = M * G * h0
    times = np.linspace(0.0, 1.2, 1201) if e >= 0.5 else np.linspace(0.0, 0.75, 751)
    kw = dict(integrator=integrator, rtol=rtol, atol=rtol / 100) if dt is None else dict(integrator=integrator, dt=dt)
    motion, result, flags, wall = _run(pendulum([THETA_S, 1.0], method, e), times=times, **kw)
    case = f"bounce e = {e}"
    if motion is None:
        return _row(case, None, result, flags, wall, [], [1, 1, 1])
    b = motion.parts.index("rod")
    th = _angle_z(motion.quaternion[:, b])
    w = motion.angular_velocity[:, b, 2]
    k_stop = I_P * (math.pi / T_C) ** 2
    pen = np.maximum(THETA_S - th, 0.0)
    E = 0.5 * I_P * w ** 2 + M * G * LC * np.sin(th) + (0.5 * k_stop * pen ** 2 if method == "compliant" else 0.0)
    # contacts: compliant from the angle past the stop; unilateral from the impact events
    if method == "compliant":
        on = pen > 0
        starts = np.flatnonzero(on & ~np.r_[False, on[:-1]])
        ends = np.flatnonzero(~on & np.r_[False, on[:-1]])  # first free frame after each contact
    else:
        hits = [ev.time for ev in motion.events if ev.kind == "impact"]
        starts = np.searchsorted(times, hits)
        ends = starts.copy()
    expected = len(_rigid_impacts(e, times[-1]))
    # segments: before contact 1, after contact k (until contact k + 1)
    seg_err, bound, carry = [], [], 0.0
    omega = math.sqrt(2 * mgh / I_P)
    for k in range(3):
        lo_f = 0 if k == 0 else (ends[k - 1] if k - 1 < len(ends) else None)
        hi_f = starts[k] if k < len(starts) else len(times)
        if lo_f is None or hi_f <= lo_f + 1:
            break
        free = slice(lo_f, hi_f)
        Ek = -mgh * (1 - e ** (2 * k))
        seg_err.append(float(np.max(np.abs(E[free] - Ek))) / mgh)
        if k > 0:
            if method == "compliant":
                t_d, _ = hc_duration(I_P, k_stop, 1.0, e, omega)
                dw = M * G * LC * t_d / I_P
                carry = e * e * carry + I_P * (e * omega * dw + 0.5 * dw * dw) / mgh
            omega *= e
        bound.append(carry + _allow(rtol, dt))
    rise = float(np.max(np.diff(E), initial=0.0)) / mgh
    counted = len(starts)
    err = max((s / b for s, b in zip(seg_err, bound)), default=math.inf)
    note = f"contacts {counted} (rigid ≥ {expected} at > 0.1 rad/s)"
    count_ok = counted >= min(expected, 3)
    return _row(case, motion, result, flags, wall, [err, rise / _allow(rtol, dt), 0.0 if count_ok else 2.0],
                [1.0, 1.0, 1.0], note)


def _rigid_impacts(e, t_end, slowest=0.1):
    """The rigid stop's impacts (times, s) up to t_end at speeds above ``slowest`` rad/s: the free pendulum's ODE
    (rtol 1e-12) from horizontal at rest, its rate reversed and scaled by e at θ_s."""
    a = M * G * LC / I_P
    ev = lambda t, y: y[0] - THETA_S  # noqa: E731
    ev.terminal, ev.direction = True, -1
    t, y, hits = 0.0, [0.0, 0.0], []
    while t < t_end:
        sol = solve_ivp(lambda t, y: [y[1], -a * math.cos(y[0])], (t, t_end), y, events=ev, rtol=1e-12, atol=1e-14,
                        first_step=1e-6)
        if not sol.t_events[0].size or abs(sol.y_events[0][0][1]) < slowest:
            break
        t = float(sol.t_events[0][0])
        hits.append(t)
        y = [THETA_S + 1e-12, -e * float(sol.y_events[0][0][1])]
    return hits


def rest(method, integrator, rtol, which, dt=None):
    """Resting on a stop: released at its lower limit under gravity, or pushed into its upper one by a torque."""
    if which == "gravity":
        data, load = pendulum([0.0, 1.0], method), M * G * LC
    else:
        data, load = pendulum([-1.0, 0.0], method, gravity=False), 2.0
        data["forces"] = [{"name": "drive", "type": "torque", "joint": "pivot", "expression": "2.0"}]
    times = np.linspace(0.0, 0.5 if method == "compliant" else 5.0, 21)
    kw = dict(integrator=integrator, rtol=rtol, atol=rtol / 100) if dt is None else dict(integrator=integrator, dt=dt)
    motion, result, flags, wall = _run(data, times=times, **kw)
    case = f"rest ({which})"
    if motion is None:
        return _row(case, None, result, flags, wall, [], [1, 1, 1, 1])
    b = motion.parts.index("rod")
    th = _angle_z(motion.quaternion[:, b])
    w = motion.angular_velocity[:, b, 2]
    k_stop = I_P * (math.pi / T_C) ** 2
    settled = times >= 0.1
    force = motion.extra["pivot.limit_force"]
    f_err = float(np.max(np.abs(force[settled] - load))) / load
    if method == "compliant":
        th_static = -load / k_stop if which == "gravity" else load / k_stop
        th_err = float(np.max(np.abs(th[settled] - th_static)) / abs(th_static))
        th_allowed = 1e-6
    else:
        th_err, th_allowed = float(np.max(np.abs(th))), 1e-9
    pen = np.maximum(np.maximum(-th, th), 0.0) if method == "compliant" else 0.0
    V = (M * G * LC * np.sin(th) if which == "gravity" else -load * th)
    E = 0.5 * I_P * w ** 2 + V + (0.5 * k_stop * pen ** 2 if method == "compliant" else 0.0)
    rise = float(np.max(E - E[0])) / (load * 1e-3)
    active = motion.extra["pivot.limit_active"][settled]
    return _row(case, motion, result, flags, wall,
                [f_err / 1e-6, th_err / th_allowed, rise / max(_allow(rtol, dt), 1e-9), float(np.any(active != 1))],
                [1, 1, 1, 1], f"force {force[-1]:.9g} (load {load:g}), angle {th[-1]:.3g}")


# ---------------------------------------------------------------------------- the fast slider
def slider(method, v0, n, integrator, rtol, e=0.5, dt=None):
    hi, m, k = 0.1, 2.0, 1e8
    t_end = hi / v0 + 5e-3
    j = dict(name="rail", type="prismatic", parts=["ground", "slider"], origin=[0, 0, 0], axis=[1, 0, 0],
             limits={"disp": [-1.0, hi]}, limit_restitution=e)
    if method == "unilateral":
        j["limit_method"] = "unilateral"
    else:
        j.update(limit_stiffness=k, limit_exponent=n)
    data = {"units": "m", "gravity": [0, 0, -G],
            "parts": {"ground": {"fixed": True},
                      "slider": {"position": [0, 0, 0], "mass": m, "inertia": [0.01, 0.01, 0.01]}},
            "joints": [j], "initial_velocity": {"slider": {"velocity": [v0, 0, 0]}}}
    kw = dict(integrator=integrator, rtol=rtol, atol=rtol / 100) if dt is None else dict(integrator=integrator, dt=dt)
    motion, result, flags, wall = _run(data, times=np.array([0.0, t_end]), **kw)
    case = f"slider v0 = {v0:g}" + (f", n = {n:g}" if method == "compliant" else "")
    if motion is None:
        return _row(case, None, result, flags, wall, [], [1, 1])
    b = motion.parts.index("slider")
    v, x = motion.velocity[-1, b, 0], motion.position[-1, b, 0]
    t_d = hc_duration(m, k, n, e, v0)[0] if method == "compliant" else 0.0
    t_c = hc_duration(m, k, n, 1.0, v0)[0] if method == "compliant" else T_C
    x_ref = hi - e * v0 * (t_end - hi / v0 - t_d)  # the compliant stop's contact lasts t_d, at δ = 0 both ends
    v_err = abs(v + e * v0) / v0
    path = hi + abs(x_ref - hi)  # the distance travelled: a relative error of the motion
    x_err = abs(x - x_ref)
    return _row(case, motion, result, flags, wall,
                [v_err / (1e-6 + _allow(rtol, dt, t_c)), x_err / ((1e-6 + _allow(rtol, dt, t_c)) * path)],
                [1, 1], f"v {v:.6g} (ref {-e * v0:g}), x {x:.6g} (ref {x_ref:.6g})")


# ---------------------------------------------------------------------------- both stops of one coordinate
def box(method, integrator, rtol, e=0.9, dt=None):
    """A 2 kg slider without gravity between limits ±1 mm: speed e^k v0 after k contacts; contacts counted."""
    w, m, k, t_end = 1e-3, 2.0, 1e8, 0.01
    v0 = 20.0 if method == "unilateral" else 2.0  # compliant: 0.28 mm into a stop, less than the 2 mm between them
    j = dict(name="rail", type="prismatic", parts=["ground", "slider"], origin=[0, 0, 0], axis=[1, 0, 0],
             limits={"disp": [-w, w]}, limit_restitution=e)
    if method == "unilateral":
        j["limit_method"] = "unilateral"
    else:
        j["limit_stiffness"] = k
    data = {"units": "m", "gravity": [0, 0, 0],
            "parts": {"ground": {"fixed": True},
                      "slider": {"position": [0, 0, 0], "mass": m, "inertia": [0.01, 0.01, 0.01]}},
            "joints": [j], "initial_velocity": {"slider": {"velocity": [v0, 0, 0]}}}
    times = np.linspace(0.0, t_end, 4001)
    kw = dict(integrator=integrator, rtol=rtol, atol=rtol / 100) if dt is None else dict(integrator=integrator, dt=dt)
    motion, result, flags, wall = _run(data, times=times, **kw)
    case = f"box v0 = {v0:g}"
    if motion is None:
        return _row(case, None, result, flags, wall, [], [1, 1])
    b = motion.parts.index("slider")
    x, v = motion.position[:, b, 0], motion.velocity[:, b, 0]
    t_d = hc_duration(m, k, 1.0, e, v0)[0] if method == "compliant" else 0.0  # linear: the same at every speed
    # the contacts' starts: w / v0, then each after the contact and a flight of 2 w at the speed it left with
    starts, t, speed = [], w / v0, v0
    while t < t_end:
        starts.append(t)
        speed *= e
        t += t_d + 2 * w / speed
    free = np.abs(x) < w
    seg = np.cumsum(np.r_[0, np.diff(free.astype(int)) != 0])
    err = 0.0
    if method == "compliant":
        for kk, sid in enumerate(np.unique(seg[free])):
            err = max(err, float(np.max(np.abs(np.abs(v[free & (seg == sid)]) - e ** kk * v0))) / v0)
        counted = len(np.unique(seg[~free]))
    else:
        hits = [ev.time for ev in motion.events if ev.kind == "impact"]
        counted = len(hits)
        for kk in range(len(hits) + 1):
            lo_t = hits[kk - 1] if kk else 0.0
            hi_t = hits[kk] if kk < len(hits) else t_end + 1
            sel = (times > lo_t) & (times < hi_t)
            if sel.any():
                err = max(err, float(np.max(np.abs(np.abs(v[sel]) - e ** kk * v0))) / v0)
    miss = abs(counted - len(starts))
    return _row(case, motion, result, flags, wall, [err / (1e-6 + _allow(rtol, dt, math.pi * math.sqrt(m / k))),
                                                    float(miss > 1) * 2.0],
                [1, 1], f"contacts {counted} (closed form {len(starts)})")


# ---------------------------------------------------------------------------- the cylindrical joint
def cylinder(method, integrator, rtol, e=0.5, dt=None):
    mass, spin, drop = 1.0, 5.0, 0.05
    j = {"name": "c", "type": "cylindrical", "parts": ["ground", "sleeve"], "origin": [0, 0, 0], "axis": [0, 0, 1],
         "limits": {"angle": [-10.0, 1.0], "disp": [-drop, 10.0]}, "limit_restitution": e}
    if method == "unilateral":
        j["limit_method"] = "unilateral"
    data = {"units": "m", "gravity": [0, 0, -G],
            "parts": {"ground": {"fixed": True},
                      "sleeve": {"position": [0, 0, 0], "mass": mass, "com": [0.2, 0, 0],
                                 "inertia": [0.01, 0.01, 0.01]}},
            "joints": [j], "initial_velocity": {"sleeve": {"angular_velocity": [0, 0, spin]}}}
    times = np.linspace(0.0, 0.5, 501)
    kw = dict(integrator=integrator, rtol=rtol, atol=rtol / 100) if dt is None else dict(integrator=integrator, dt=dt)
    motion, result, flags, wall = _run(data, times=times, **kw)
    case = "cylinder"
    if motion is None:
        return _row(case, None, result, flags, wall, [], [1, 1, 1])
    b = motion.parts.index("sleeve")
    w = motion.angular_velocity[:, b, 2]
    z = motion.position[:, b, 2]
    # the spin: +spin until the angle limit 1 rad, then −e spin (one impact, nothing else about the axis)
    spin = w[0]
    t_hit = 1.0 / spin
    after = times > t_hit + 0.01
    spin_err = max(float(np.max(np.abs(w[times < t_hit - 1e-3] - spin))),
                   float(np.max(np.abs(w[after] + e * spin)))) / spin
    # the slide: rests on its lower limit at the end, carrying m g
    mg = mass * G
    k_lin = mass * (math.pi / T_C) ** 2
    z_rest = -drop - (mg / k_lin if method == "compliant" else 0.0)
    end = times > 0.45
    # compliant: to 1 % of the static penetration; unilateral: within the limit's touching band
    band = mg / k_lin * 1e-2 if method == "compliant" else CLOSED_GAP + CLOSED_GAP_REL * 1.0
    z_err = float(np.max(np.abs(z[end] - z_rest))) / band
    f_err = float(np.max(np.abs(motion.extra["c.disp.limit_force"][end] - mg))) / mg
    tol = 1e-6 + _allow(rtol, dt)
    return _row(case, motion, result, flags, wall, [spin_err / tol, z_err, f_err / 1e-4], [1, 1, 1],
                f"spin after {w[-1]:.6g} (ref {-e * spin:g}), z {z[-1]:.6g} (ref {z_rest:.6g})")


# ---------------------------------------------------------------------------- the four-bar
FOURBAR_LIMITS = (-0.6, 0.3)


def fourbar(method, n, integrator, rtol, e=0.5, dt=None):
    data = tomllib.loads((SAMPLES / "four_bar.cadmotion.toml").read_text())
    data.pop("simulation", None)
    crank = next(j for j in data["joints"] if j["name"] == "A")
    crank["limits"] = {"angle": list(FOURBAR_LIMITS)}
    crank["limit_restitution"] = e
    if method == "unilateral":
        crank["limit_method"] = "unilateral"
    else:
        crank["limit_exponent"] = n
    times = np.linspace(0.0, 0.5, 251)
    kw = dict(integrator=integrator, rtol=rtol, atol=rtol / 100) if dt is None else dict(integrator=integrator, dt=dt)
    motion, result, flags, wall = _run(data, times=times, **kw)
    case = "fourbar" + (f" n = {n:g}" if method == "compliant" else "")
    if motion is None:
        return _row(case, None, result, flags, wall, [], [1, 1])
    T, V = _fourbar_energy(data, motion)
    E = T + V
    ia = motion.parts.index("crank")
    th = _angle_z(motion.quaternion[:, ia]) - _angle_z(motion.quaternion[:1, ia])[0]
    lo, hi = FOURBAR_LIMITS
    out = (th < lo) | (th > hi)
    scale = float(np.max(np.abs(E)) + np.max(T))
    if method == "compliant":
        starts = np.flatnonzero(out & ~np.r_[False, out[:-1]])
        ends = np.flatnonzero(~out & np.r_[False, out[:-1]])
        # the stop's elastic energy is in E while in contact: the free frames only
    else:
        hits = [ev.time for ev in motion.events if ev.kind == "impact"]
        starts = np.searchsorted(times, hits)
        ends = starts.copy()
    errs, allowed = [], []
    for i, (s, f) in enumerate(zip(starts, ends)):
        # a contact alone between its frames: the previous one over before, the next one after
        alone = (i == 0 or ends[i - 1] <= s - 1) and (i + 1 == len(starts) or starts[i + 1] > f)
        if s < 1 or f >= len(times) or not alone:
            continue
        # T⁻ at the stop: the last free frame's energy less the potential at the stop (closed-form loop closure)
        before = s - 1
        V_stop = _fourbar_potential(data, lo if th[s] < 0 else hi)
        T_minus = E[before] - V_stop
        dE = E[f] - E[before]
        errs.append(abs(dE + (1 - e * e) * T_minus))
        allowed.append(_allow(rtol, dt) * scale + (_compliant_allowance(motion, T, V, th, T_minus, s, f)
                                                          if method == "compliant" else 0.0))
        if len(errs) == 3:
            break
    # energy constant between contacts
    free = ~out
    seg = np.cumsum(np.r_[0, np.diff(free.astype(int)) != 0] | np.r_[0, np.isin(np.arange(1, len(times)), starts)])
    drift = 0.0
    for sid in np.unique(seg[free]):
        sel = free & (seg == sid)
        drift = max(drift, float(np.ptp(E[sel])))
    if not errs:
        return _row(case, motion, result, flags, wall, [math.inf, drift / (_allow(rtol, dt) * scale)], [1, 1],
                    "no contact")
    ratio = max(a / b for a, b in zip(errs, allowed))
    return _row(case, motion, result, flags, wall, [ratio, drift / (_allow(rtol, dt) * scale)], [1, 1],
                f"{len(starts)} contacts, ΔE errors {', '.join(f'{x:.2g}' for x in errs)} J")


def _fourbar_potential(data, theta):
    """V (gravity and spring, J) of the four-bar with its crank turned by theta (rad) from the initial pose: B on
    the crank's circle, C where the circles about B (coupler) and D (rocker) meet, on the initial branch."""
    parts = data["parts"]
    A = np.zeros(2)
    B0 = np.array(parts["coupler"]["position"][:2])
    D = np.array(parts["rocker"]["position"][:2])
    C0 = np.array(next(j for j in data["joints"] if j["name"] == "C")["origin"][:2])
    a, b, c = np.linalg.norm(B0 - A), np.linalg.norm(C0 - B0), np.linalg.norm(C0 - D)
    phi = math.atan2(B0[1], B0[0]) + theta
    B = A + a * np.array([math.cos(phi), math.sin(phi)])
    d = np.linalg.norm(D - B)
    x = (d * d + b * b - c * c) / (2 * d)
    u = (D - B) / d
    perp = np.array([-u[1], u[0]])
    Cs = [B + x * u + sgn * math.sqrt(b * b - x * x) * perp for sgn in (1.0, -1.0)]
    C = min(Cs, key=lambda p: np.linalg.norm(p - C0))
    g = np.array(data["gravity"][:2])
    V = 0.0
    for name, P, Q in (("crank", A, B), ("coupler", B, C), ("rocker", D, C)):
        part = parts[name]
        com = P + part["com"][0] * (Q - P) / np.linalg.norm(Q - P)
        V -= part["mass"] * com @ g
    spring = data["forces"][0]
    ell = np.linalg.norm(C - np.array(spring["points"][0][:2]))
    return V + 0.5 * spring["stiffness"] * (ell - spring["free_length"]) ** 2


def _compliant_allowance(motion, T, V, th, T_minus, s, f):
    """What a compliant contact may change beyond the rigid e²: the other forces' work during it (their largest
    power over the frames around it, |dV/dt|, times its duration, both ways: the frames it spans), and the loop's
    reduced inertia I = 2 T / θ̇² changing over the penetration (its relative rate dI/dθ / I from the last free
    frames, times the largest penetration, times 2 T⁻)."""
    t = motion.time
    window = slice(max(s - 5, 0), min(f + 5, len(t)))
    power = float(np.max(np.abs(np.gradient(V, t))[window]))
    lo, hi = FOURBAR_LIMITS
    pen = float(np.max(np.maximum(np.maximum(lo - th[s:f], th[s:f] - hi), 0.0), initial=0.0))
    k = slice(max(s - 4, 0), s)
    rate = np.gradient(th, t)[k]
    I = 2.0 * T[k] / np.maximum(rate ** 2, 1e-300)
    dI = np.abs(np.diff(I) / np.diff(th[k])) / I[1:] if s >= 3 else np.array([0.0])
    return 2.0 * power * (t[f] - t[s - 1]) + 2.0 * T_minus * float(np.max(dI)) * pen


def _fourbar_energy(data, motion):
    """T (kinetic, from the com velocities and spins) and V (gravity and spring) at every frame (J)."""
    g = np.array(data["gravity"])
    T = np.zeros(motion.nt)
    V = np.zeros(motion.nt)
    for name, part in data["parts"].items():
        if part.get("fixed"):
            continue
        b = motion.parts.index(name)
        R = _rotmat(motion.quaternion[:, b])
        c = np.einsum("nij,j->ni", R, np.array(part.get("com", [0, 0, 0]), float))
        rc = motion.position[:, b] + c
        vc = motion.velocity[:, b] + np.cross(motion.angular_velocity[:, b], c)
        w = motion.angular_velocity[:, b]
        Ib = np.diag(part["inertia"])
        Iw = np.einsum("nij,jk,nlk->nil", R, Ib, R)
        T += 0.5 * part["mass"] * np.sum(vc * vc, 1) + 0.5 * np.einsum("ni,nij,nj->n", w, Iw, w)
        V -= part["mass"] * rc @ g
        if name == "rocker":
            rocker_R, rocker_r = R, motion.position[:, b]
    spring = data["forces"][0]
    a_w = np.array(spring["points"][0])
    # the spring's rocker end: its initial world point, carried with the rocker
    p0 = np.array(spring["points"][1]) - np.array(data["parts"]["rocker"]["position"])
    R0 = _rotmat(np.array([data["parts"]["rocker"]["orientation"]]))[0]
    local = R0.T @ p0
    pr = rocker_r + np.einsum("nij,j->ni", rocker_R, local)
    ell = np.linalg.norm(pr - a_w, axis=1)
    V += 0.5 * spring["stiffness"] * (ell - spring["free_length"]) ** 2
    return T, V


def _rotmat(q):
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], 1)


# ---------------------------------------------------------------------------- the sweep
CASES = {
    "bounce": ("energy after each contact / energy rise / contacts counted",
               lambda method, integ, rtol, dt=None: [bounce(method, e, integ, rtol, dt)
                                                     for e in (0.05, 0.3, 0.7, 1.0)]),
    "rest": ("limit_force / angle (creep) / energy rise / inactive frames",
             lambda method, integ, rtol, dt=None: [rest(method, integ, rtol, w, dt) for w in ("gravity", "torque")]),
    "slider": ("rebound speed / position",
               lambda method, integ, rtol, dt=None: [slider(method, v0, n, integ, rtol, dt=dt) for v0 in (20.0, 200.0)
                                                     for n in ((1.0, 1.5) if method == "compliant" else (1.0,))]),
    "box": ("speed after each contact / contacts counted",
            lambda method, integ, rtol, dt=None: [box(method, integ, rtol, dt=dt)]),
    "cylinder": ("spin / resting height / resting force",
                 lambda method, integ, rtol, dt=None: [cylinder(method, integ, rtol, dt=dt)]),
    "fourbar": ("energy taken by each contact / energy drift between them",
                lambda method, integ, rtol, dt=None: [fourbar(method, n, integ, rtol, dt=dt)
                                                      for n in ((1.0, 1.5) if method == "compliant" else (1.0,))]),
}


def sweep(name, methods, integrators, tolerances):
    labels, cases = CASES[name]
    print(f"\n{name}: errors over their allowances ({labels}); a run is off above 1\n")
    print("| method | integrator | rtol / dt | runs | incomplete | flagged | off | worst errors | wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    listed = []
    for method in methods:
        for integrator in integrators:
            for rtol in (tolerances if integrator != "RK4" else (None,)):
                for dt in ((None,) if integrator != "RK4" else (T_C / 20, T_C / 5)):
                    if integrator == "RK4" and method == "unilateral":
                        continue
                    rows = cases(method, integrator, rtol, dt)
                    worst = np.max([row["errors"] for row in rows], axis=0)
                    off = [row for row in rows if max(row["errors"]) > 1.0]
                    bad = [row for row in rows if not row["complete"] or row["flags"] or row in off]
                    setting = f"{rtol:g}" if dt is None else f"dt {dt:g}"
                    listed += [(method, integrator, setting, row) for row in bad]
                    print(f"| {method} | {integrator} | {setting} | {len(rows)} | "
                          f"{sum(not row['complete'] for row in rows)} | {sum(bool(row['flags']) for row in rows)} | "
                          f"{len(off)} | {' / '.join(f'{w:.2g}' for w in worst)} | "
                          f"{sum(row['wall'] for row in rows):.1f} |", flush=True)
    for method, integrator, setting, row in listed:
        print(f"  {method} {integrator} {setting}, {row['case']}: complete {row['complete']}, errors "
              f"{' / '.join(f'{w:.3g}' for w in row['errors'])}, flagged {row['flags']}; {row['note']}")


def main(args):
    quick = "--quick" in args
    which = [a for a in args if not a.startswith("--")] or list(CASES)
    integrators = INTEGRATORS + ("RK4",)
    tolerances = (1e-4, 1e-7, 1e-10) if quick else TOLERANCES
    for name in which:
        sweep(name, ("compliant", "unilateral"), integrators, tolerances)


if __name__ == "__main__":
    main(sys.argv[1:])
