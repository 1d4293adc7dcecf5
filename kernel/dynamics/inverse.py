"""Inverse dynamics of a driven mechanism: driver efforts and joint reactions along a motion.

For a mechanism whose drivers fix every degree of freedom, the kinematic solution gives
q, v and v̇ at every time; the multipliers then follow from the equations of motion

    Jvᵀ λ = f(q, v, t) − M v̇          (solved as S λ = Jv M⁻¹ (f − M v̇), S = Jv M⁻¹ Jvᵀ)

which is exact when the motion is a solution (the least-squares λ in the kinetic-energy
metric otherwise). Efforts are −λ of the driver rows (the motor torque or force), the
reactions come from −Jvᵀ λ per joint (see :mod:`.outputs`). Velocities and accelerations
of the centres of mass come from the Motion's part-frame values:

    v_c = v_o + ω × ρ,    v̇_c = a_o + ω̇ × ρ + ω × (ω × ρ),    ρ = A c

The non-conservative work (of the drivers, dampers and applied loads) is the change of T + V from
the first frame: the efforts are what makes the driven motion a solution, so the power balance
Σ effort · rate + P_nc = d(T + V)/dt holds at every instant and its integral is exact at any frame
spacing (a trapezoidal integral of the frames' power erred by O(h²): 12-150 % of the energies'
range at 4 frames, 5e-5-4e-4 at 200).

What the run says (events):

* a mechanism whose drivers leave a freedom free is refused before any frame (DrivingError naming
  the free joint coordinates or parts); so is one whose initial pose is a singular configuration
  of the driven mechanism (a slider-crank drawn at its dead centre and driven from its slider):
  there the drivers leave a freedom to first order only — the constraints' curvature along it,
  Φ''(n, n), has a component along the left null space of Φq —, and the error says so instead of
  asking for another driver (which would over-constrain it);
* ``singular``: between two frames the driven mechanism passes a singular configuration (the sign
  of det Jv over its independent rows changes; models with loops and at most 300 velocity
  coordinates): the drivers do not determine the motion there and the efforts of the drivers named
  grow without bound, changing sign through infinity (the frames either side are right, the branch
  after it is the kinematic solver's choice);
* ``effort-unbounded``: the kinematic run stopped at a lock-up or singular configuration; the
  named drivers' efforts grow without bound toward it;
* ``near-singular``: a frame next to a singular configuration (σ_min/σ_max of the equilibrated
  Jv, rows and columns scaled to unit norm, a local minimum below :data:`NEAR_SINGULAR`): the
  efforts and reactions of the constraints named are amplified by about its inverse (a
  parallelogram through its flat configuration: the crank's torque stays bounded, the pins'
  forces grow as 1/θ);
* ``table-extrapolated``: frames outside a table driver's rows, where its spline's end piece is
  extrapolated (a motion the table does not give);
* ``limit``: the driven motion runs a joint past its limits: with compliant stops the efforts
  include the stops' push back (``<joint>.limit_force``); unilateral limits and unilateral
  contacts carry no force in inverse dynamics (``unilateral``: said once at the start).
"""

from __future__ import annotations

import numpy as np

from ...errors import DrivingError
from ..analysis import free_motion, rank_info
from ..kinematics import kinematics
from ..motion import Event
from ..near_singular import NEAR_SINGULAR, equilibrated, weakest_rows
from ..system import AngleState, System
from .equations import Dynamics
from .mass import cross, body_state
from .outputs import FrameOutputs, lift_off_events, reactions_event

__all__ = ["inverse_dynamics"]


def inverse_dynamics(model, motion=None, *, t_end=1.0, steps=100, t_start=0.0, **kinematics_options):
    """Driver efforts and joint reactions of a driven mechanism.

    Parameters
    ----------
    model : :class:`~cadmotion.kernel.model.Model`
    motion : a kinematic :class:`~cadmotion.kernel.motion.Motion` of this model; if None,
        :func:`~cadmotion.kernel.kinematics.kinematics` is run over
        ``linspace(t_start, t_end, steps + 1)``.

    Returns
    -------
    Motion
        A copy of the kinematic motion with the same ``extra`` series as
        :func:`~cadmotion.kernel.dynamics.simulate` (``<driver>.effort``, reactions,
        energies, violations).
    """
    check_fully_driven(model, float(motion.time[0]) if motion is not None and motion.nt else float(t_start))
    if motion is None:
        motion = kinematics(model, t_end, steps, t_start=t_start, **kinematics_options)
    dyn = Dynamics(model)
    nmov = dyn.nmov
    nt = motion.nt
    order = [motion.part_index(name) for name in model.body_names[:nmov]]
    pos = motion.position[:, order]
    quat = motion.quaternion[:, order]
    vel = motion.velocity[:, order]
    om = motion.angular_velocity[:, order]
    acc = motion.acceleration[:, order]
    al = motion.angular_acceleration[:, order]
    out = FrameOutputs(dyn)
    Q = np.concatenate([pos, quat], axis=2).reshape(nt, -1)
    angles = AngleState(model, Q[0]) if nt else None
    refs = None
    touch = None  # the contacts' and stops' penetrations and their rates at the previous frame
    crossings, prev, last, near = [], None, None, []  # singular passages between frames (see _singular_events)
    watch = dyn.has_loops and 0 < dyn.nv <= _DET_MAX_NV
    for k in range(nt):
        q = Q[k]
        bs = body_state(model, dyn.mass, q, np.zeros(dyn.nv))
        rho = bs.rho[:nmov]
        w = om[k]
        V = np.empty((nmov, 6))
        V[:, 3:] = w
        V[:, :3] = vel[k] + cross(w, rho)
        Vd = np.empty((nmov, 6))
        Vd[:, 3:] = al[k]
        Vd[:, :3] = acc[k] + cross(al[k], rho) + cross(w, cross(w, rho))
        if refs is None:
            refs = dyn.forces.initial_refs(bs)
            ev0 = dyn.evaluate(q, V.reshape(-1), motion.time[k], refs, with_gamma=False, with_forces=False)
            dyn.set_rows(ev0.J, ev0.bs)
        else:
            dyn.forces.accept(bs, refs)
        if dyn.forces.contacts is not None or dyn.forces.stops is not None:
            h = motion.time[k] - motion.time[k - 1] if k else 0.0
            touch = _record_impacts(dyn, body_state(model, dyn.mass, q, V.reshape(-1)), refs, touch, h)
        dyn.system.accept(q, angles)
        out.add(motion.time[k], q, V.reshape(-1), 0.0, angles, refs, vd=Vd.reshape(-1))
        if watch:
            J = out.jacobian  # the frame's own, as FrameOutputs.add evaluated it
            J = equilibrated(np.asarray(J.todense() if hasattr(J, "todense") else J))
            if prev is None:
                rows = tuple(rank_info(J).independent)
            else:
                # the frame before's rows, chosen again where their minor changes sign or degenerates
                rows, d1 = prev[1], _det(J, prev[1])
                if prev[2] * d1 < 0.0 or abs(d1) < _DET_RESELECT:
                    rows = tuple(rank_info(J).independent)
                    if prev[2] * d1 < 0.0 and len(rows) == dyn.nv and _det(prev[0], rows) * _det(J, rows) < 0.0:
                        crossings.append((k, prev[0], J, rows))
            prev = (J, rows, _det(J, rows)) if len(rows) == dyn.nv else None
            last = (J, rows)
            sv = np.linalg.svd(J, compute_uv=False)
            ratio = float(sv[dyn.nv - 1] / sv[0]) if len(sv) >= dyn.nv else 0.0
            near.append((ratio, J if ratio < NEAR_SINGULAR else None))
    # the work done on the system: Δ(T + V), exact for a driven motion (module docstring)
    total = out.rows["energy.total"]
    out.rows["work.nonconservative"] = [e - total[0] for e in total] if nt else []
    result = _copy(motion)
    result.extra.update(out.extra())
    ev = reactions_event(dyn, motion.time[0] if nt else 0.0, out.not_unique)
    if ev is not None:
        result.events.append(ev)
    result.events.extend(lift_off_events(dyn, result.time, result.extra, result))
    result.events.extend(_singular_events(dyn, result, crossings, last))
    result.events.extend(_near_singular_events(dyn, result, near, crossings))
    result.events.extend(_limit_events(model, result))
    result.events.extend(_table_events(model, result))
    return result


#: the largest number of coordinates whose free motions are named (a dense SVD of the Jacobian)
_NAME_FREE_MAX_NQ = 2000
#: the largest number of velocity coordinates whose det Jv is taken at every frame (a dense LU each)
_DET_MAX_NV = 300
#: |det| of the equilibrated minor below which its rows are chosen again
_DET_RESELECT = 1e-6


def check_fully_driven(model, t=0.0):
    """DrivingError unless the drivers fix every degree of freedom at the initial pose, naming
    the free joint coordinates (or, where no joint coordinate moves, the parts) and what to do."""
    system = System(model)
    angles = AngleState(model, model.q0)
    J = system.jacobian_auto(model.q0, t, angles)
    info = rank_info(J)
    if info.dof <= 0:
        return
    free, null = [], np.zeros((0, model.nq))
    if model.nq <= _NAME_FREE_MAX_NQ:  # a dense SVD names them
        motion = free_motion(model, system, J, model.q0)
        null, left = motion.null, motion.left
        free = motion.coordinates or [f"part {name}" for name in motion.parts]
    drivers = [d.name for d in model.spec.drivers]
    if len(free) > 8:
        free = [", ".join(free[:8]) + f" and {len(free) - 8} more"]
    if len(null) == 1 and _no_finite_motion(system, model.q0, t, angles, null[0], left):
        raise DrivingError(
            f"inverse dynamics cannot start at the initial pose: it is a singular configuration of the driven "
            f"mechanism (a toggle or dead centre), where the drivers ({', '.join(drivers) or 'none'}) do not "
            f"determine the motion: " + (f"{', '.join(free)} can move" if free else "the parts can move")
            + " to first order without violating any joint or driver, but no finite motion keeps every joint",
            where=model.spec.source or None,
            hint="place the parts in a pose off the toggle (where the driven coordinates take other values), or "
                 "drive a joint that moves at this pose; another driver would over-constrain the mechanism")
    raise DrivingError(
        f"inverse dynamics needs every degree of freedom driven: the drivers ({', '.join(drivers) or 'none'}) "
        f"leave {info.dof} free" + (f": {', '.join(free)} can move without violating any joint or driver" if free
                                    else ""),
        where=model.spec.source or None,
        hint="add a [[drivers]] entry for each free coordinate named (`cadmotion run --drive JOINT=EXPR`), "
             "or run a dynamic analysis (--analysis dynamic) to let the forces move it")


#: relative size of the second-order obstruction above which a first-order freedom is a singular configuration
_OBSTRUCTION = 1e-4


def _no_finite_motion(system, q, t, angles, n, left):
    """True when the first-order free motion ``n`` (nq,) of Φq at q (Φq n = 0) is no finite motion: the
    constraints' curvature along it, Φ''(n, n) = (Φ(q + εn) + Φ(q − εn) − 2 Φ(q)) / ε², has a component along the
    left null space ``left`` (nc, k) of Φq that no correction orthogonal to n can cancel (a toggle or dead centre:
    the driven mechanism is held at an isolated point there). A real freedom (a slide, a loop's motion, with or
    without redundant rows) has none, to the difference's truncation and round-off (≈ 1e-8 of Φ'' at ε = 1e-4)."""
    if left.shape[1] == 0:
        return False
    eps = 1e-4
    d2 = (system.phi(q + eps * n, t, angles) + system.phi(q - eps * n, t, angles) - 2 * system.phi(q, t, angles))
    d2 /= eps * eps
    size = float(np.linalg.norm(d2))
    return size > 0.0 and float(np.linalg.norm(left.T @ d2)) > _OBSTRUCTION * size


def _driver_rows(dyn, Jr, rows):
    """The drivers whose rows take part in the smallest singular direction of ``Jr`` (the
    rows ``rows`` of Jv): their efforts are the ones that grow without bound."""
    names = [dyn.row_labels[rows[i]][0] for i in weakest_rows(Jr, len(rows) - 1)
             if dyn.row_labels[rows[i]][1].startswith("drive-")]
    return sorted(set(names)) or sorted({lab[0] for lab in dyn.row_labels if lab[1].startswith("drive-")})


def _efforts_text(result, names, k):
    parts = []
    for name in names:
        column = result.extra.get(f"{name}.effort")
        if column is not None and len(column) > k:
            parts.append(f"{name} {column[k]:.4g}")
    return ", ".join(parts)


def _record_impacts(dyn, bs, refs, before, h):
    """Record in ``refs`` each compliant contact's and stop's impact speed δ̇⁻ (the restitution form's
    damping α = ξ(e)/δ̇⁻) as a forward run does at its accepted states: the penetration rate at the
    touch, where the cubic Hermite interpolant of (δ, δ̇) between the frame before (apart, δ ≤ 0) and
    this one (δ > 0, ``h`` s later) crosses zero; where the frame before has no finite δ, the speed
    the present (δ, δ̇) implies by the elastic energy (the forward run's own estimate). 0 while apart.
    Without it every frame took that estimate afresh, 30 % off the restitution law's force through a
    driven contact at any frame spacing.

    ``bs`` the frame's body state with its velocities; ``before`` this function's return at the
    frame before (None at the first). Returns {kind: (δ, δ̇)} at this frame."""
    from .contacts import MIN_IMPACT_SPEED

    forces, out = dyn.forces, {}
    for kind, elem in (("contacts", forces.contacts), ("stops", forces.stops)):
        if elem is None or not elem.n:
            continue
        if kind == "contacts":
            speed = forces.contact_state(refs)
            _, delta, _, dd, _ = elem.geometry(bs)
            estimate = elem.impact_speeds(np.maximum(delta, 0.0), dd, np.zeros_like(speed))
        else:
            state = forces.stop_state(refs)
            speed = state[elem.n:]
            q, qd, *_ = elem.coordinates(bs, state)
            delta, dd, *_ = elem.law(q, qd, state)
            estimate = elem.impact_speeds(np.maximum(delta, 0.0), dd, np.zeros_like(state))
        delta, dd = np.asarray(delta, float), np.asarray(dd, float)
        fresh = (delta > 0) & (speed <= 0)
        v = estimate
        if before is not None and kind in before and h > 0:
            d0, dd0 = before[kind]
            v = estimate.copy()
            for i in np.flatnonzero(fresh & np.isfinite(d0) & (d0 <= 0)):
                v[i] = max(_touch_rate(d0[i], dd0[i], delta[i], dd[i], h), MIN_IMPACT_SPEED)
        speed[:] = np.where(delta > 0, np.where(fresh, v, speed), 0.0)
        out[kind] = (delta, dd)
    return out


def _touch_rate(d0, r0, d1, r1, h):
    """δ̇ where the cubic Hermite interpolant of δ (δ(0) = d0 ≤ 0, δ(h) = d1 > 0, rates r0, r1) first
    reaches zero (the linear interpolant's if the cubic has no root in [0, h])."""
    m0, m1 = r0 * h, r1 * h
    # p(s) = a s³ + b s² + m0 s + d0 on [0, 1]
    a = 2 * d0 - 2 * d1 + m0 + m1
    b = -3 * d0 + 3 * d1 - 2 * m0 - m1
    roots = [z.real for z in np.roots([a, b, m0, d0]) if abs(z.imag) < 1e-12 and -1e-12 <= z.real <= 1 + 1e-12]
    if not roots:
        s = d0 / (d0 - d1)
        return r0 + s * (r1 - r0)
    s = min(roots)
    return (3 * a * s * s + 2 * b * s + m0) / h


def _det(J, rows):
    """det of the rows ``rows`` of J, scaled by their norms (its sign and size relative to 1)."""
    Jr = J[list(rows)]
    Jr = Jr / np.maximum(np.linalg.norm(Jr, axis=1), 1e-300)[:, None]
    return float(np.linalg.det(Jr))


def _singular_events(dyn, result, crossings, last):
    """``singular`` events where the driven mechanism passes a singular configuration between
    two frames, and an ``effort-unbounded`` event when the kinematic run stopped at a lock-up or
    singular configuration (module docstring).

    A passage: the determinant of Jv over a square set of independent rows changes sign between
    the frames, for the rows chosen at either frame. At a singular configuration every such minor
    passes through zero together; a row set's own degeneracy (the redundant rows of a loop built
    in 3-D move with the configuration) changes the sign of that set's minor only."""
    events = []
    t = result.time
    for k, J0, J1, rows in crossings:
        d0, d1 = abs(_det(J0, rows)), abs(_det(J1, rows))
        ts = float(t[k - 1] + (t[k] - t[k - 1]) * d0 / (d0 + d1))
        names = _driver_rows(dyn, (J0 if d0 < d1 else J1)[list(rows)], rows)
        events.append(Event("singular", ts, (
            f"between t = {t[k - 1]:.6g} and {t[k]:.6g} s (near t = {ts:.6g} s) the driven mechanism passes a "
            f"singular configuration (toggle / dead centre): the drivers do not determine the motion there, and "
            f"the effort of {', '.join(names)} grows without bound, changing sign through infinity (efforts "
            f"{_efforts_text(result, names, k - 1)} before, {_efforts_text(result, names, k)} after); the frames "
            f"either side are right for the branch the kinematics took; drive another coordinate or avoid this "
            f"configuration"), tuple(names)))
    stop = next((e for e in result.events if e.kind in ("lockup", "singular")), None) if not result.complete else None
    if stop is not None:
        if last is not None and len(last[1]):
            names = _driver_rows(dyn, last[0][list(last[1])], last[1])
        else:
            names = sorted({lab[0] for lab in dyn.row_labels if lab[1].startswith("drive-")})
        n = result.nt - 1
        events.append(Event("effort-unbounded", float(stop.time), (
            f"the kinematics stopped at t = {stop.time:.6g} s ({stop.kind}): the effort of {', '.join(names)} "
            f"grows without bound toward it ({_efforts_text(result, names, n)} at the last frame, "
            f"t = {t[n]:.6g} s)"), tuple(names)))
    return events


def _near_singular_events(dyn, result, near, crossings):
    """``near-singular`` events at the frames where σ_min/σ_max of the equilibrated Jv has a local
    minimum below :data:`NEAR_SINGULAR` (and no passage was found next to it): the efforts and
    reactions of the constraints named (those of the smallest singular direction) are amplified
    by about its inverse. (Passing a parallelogram's flat configuration, rods along the ground line,
    the crank's effort stays bounded while the pins' forces grow as 1/θ.)

    A kinematic ``near-singular`` event of the motion (frames whose velocities and accelerations are
    spoilt, :mod:`..near_singular`) within a frame of one of these is merged into it: one event, both
    sentences, the constraints of both; it is taken out of ``result.events``."""
    events = []
    t = result.time
    kinematic = [e for e in result.events if e.kind == "near-singular"]
    ratio = np.array([r for r, _ in near])
    passed = {k for k, *_ in crossings} | {k - 1 for k, *_ in crossings}
    for k in range(len(ratio)):
        if ratio[k] >= NEAR_SINGULAR or k in passed:
            continue
        if (k and ratio[k - 1] < ratio[k]) or (k + 1 < len(ratio) and ratio[k + 1] < ratio[k]):
            continue
        names = sorted({dyn.row_labels[r][0] for r in weakest_rows(near[k][1], dyn.nv - 1)})
        message = (f"at t = {t[k]:.6g} s the driven mechanism is near a singular configuration (σ_min/σ_max of the "
                   f"constraint Jacobian {ratio[k]:.2e}): the efforts and reactions of {', '.join(names)} are "
                   f"amplified by about its inverse, and grow without bound at the configuration itself")
        lo, hi = t[max(k - 1, 0)], t[min(k + 1, len(t) - 1)]
        for e in [e for e in kinematic if lo <= e.time <= hi]:
            kinematic.remove(e)
            result.events.remove(e)
            message += f". The kinematics: {e.message}"
            names = sorted(set(names) | set(e.items))
        events.append(Event("near-singular", float(t[k]), message, tuple(names)))
    return events


def _limit_events(model, result):
    """``limit`` events for joints the driven motion runs past their limits, and a ``unilateral``
    event for unilateral contacts and limits, which carry no force here (module docstring)."""
    events = []
    t = result.time
    unilateral = [c.name for c in model.spec.contacts if c.method == "unilateral"]
    for j in model.spec.joints:
        method = dict(j.stop).get("limit_method", "compliant")
        for coord, (lo, hi) in j.limits:
            try:
                x = result.coordinate(f"{j.name}.{coord}")
            except KeyError:
                continue
            past = np.maximum(x - hi, lo - x)
            bad = np.flatnonzero(past > 1e-9 * max(1.0, abs(lo), abs(hi)))
            if not bad.size:
                continue
            unit = "rad" if coord == "angle" else "m"
            k = int(bad[0])
            force = result.extra.get(f"{j.name}.limit_force")
            if method == "unilateral":
                unilateral.append(f"{j.name} limits")
                what = ("its unilateral limit carries no force in inverse dynamics: the efforts are those of the "
                        "mechanism without the limit (a rigid stop would not let the motion happen)")
            elif force is not None:
                what = (f"the efforts include the compliant stop's push back ({j.name}.limit_force up to "
                        f"{float(np.max(np.abs(force))):.4g} {'N m' if coord == 'angle' else 'N'})")
            else:
                what = f"a {j.type} joint's limits act in no analysis but `cadmotion check`"
            events.append(Event("limit", float(t[k]), (
                f"the driven motion runs joint {j.name!r} past its {coord} limits [{lo:.6g}, {hi:.6g}] {unit} from "
                f"t = {t[k]:.6g} s (by up to {float(np.max(past)):.4g} {unit}): {what}"), (j.name,)))
    if unilateral:
        events.insert(0, Event("unilateral", float(t[0]) if len(t) else 0.0, (
            f"unilateral contacts and limits ({', '.join(sorted(set(unilateral)))}) carry no force in inverse "
            f"dynamics (a driven motion leaves their forces undetermined): the efforts and reactions are those of "
            f"the mechanism without them; run a dynamic analysis to see them act"),
            tuple(sorted(set(unilateral)))))
    return events


def _table_events(model, result):
    """``table-extrapolated``: frames outside a table driver's rows [t_0, t_n], where its spline is its end cubic
    piece extrapolated (:mod:`..expressions`): a motion the table does not give, and its efforts."""
    events, t = [], result.time
    for d in model.spec.drivers:
        rows = d.function.table
        if not rows or not len(t):
            continue
        t0, t1 = rows[0][0], rows[-1][0]
        tol = 1e-12 * max(1.0, abs(t0), abs(t1))
        out = np.flatnonzero((t < t0 - tol) | (t > t1 + tol))
        if not out.size:
            continue
        k = int(out[0])
        events.append(Event("table-extrapolated", float(t[k]), (
            f"driver {d.name!r} is a table of rows from t = {t0:.6g} to {t1:.6g} s; the frames from t = {t[k]:.6g} "
            f"s{' to ' + format(float(t[out[-1]]), '.6g') + ' s' if out.size > 1 else ''} ({out.size} of {len(t)}) "
            f"lie outside it, where its spline's end piece is extrapolated: the motion and the efforts there follow "
            f"no row of the table (extend the table or the span to its rows)"), (d.name,)))
    return events


def _copy(motion):
    from dataclasses import replace

    return replace(motion, extra=dict(motion.extra), events=list(motion.events))
