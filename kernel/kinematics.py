"""Assembly and kinematic analysis of a driven mechanism.

Equations, at every output time t_k:

    position      Φ(q, t) = 0            Newton–Raphson from the predictor
                                         q* = q + h q̇ + h²/2 q̈ + h³/6 q⃛ (previous frame;
                                         q⃛ from the q̈ of the last two frames)
    velocity      Φq q̇ = −Φt
    acceleration  Φq q̈ = γ

Long runs of small models take these steps in one compiled call per 256 frames
(:mod:`.kinematics_fast`); a frame it hands back is taken by the numpy stepper here.

Redundant rows of Φq (a planar linkage built in 3-D) are found once, at the assembled
pose, and left out of the solves; they stay satisfied because they are combinations of
the kept rows. The position iteration reuses the last factorisation (chord Newton)
and refactorises when convergence slows.

Assembly (t = t0): parts given slightly off their joints are pulled onto them by
minimum-norm Gauss–Newton steps from the given pose, i.e. the least change. If the
residual cannot be driven to zero, the joints whose equations keep the largest
residual are reported as conflicting.

Events: a drop of the reciprocal condition number of the kept Jacobian below
``singular_rcond`` (toggle / dead-centre, the drivers no longer determine the motion)
is reported as ``singular``; a position iteration that fails there is a ``lockup`` and
ends the run with the frames computed so far; a converged pose far from the
predictor, relative to the step, would be a jump to another branch (assembly mode): the
step is split like a failed one, and only a jump that persists at the finest split is
reported as ``branch`` (and accepted).  So is a step across which the determinant of the
kept rows of Φq changes sign: a singular pose lies between its ends (a change point or
dead centre passed, or the other assembly mode reached by a predictor carried past a dead
centre, which the distance from the predictor cannot tell).  Frames next to a singular pose,
whose velocities and accelerations its ill-conditioning spoils beyond the run's accuracy,
are a ``near-singular`` event per stretch, with the estimated errors (:mod:`.near_singular`;
the polish refactorises there even at a few hundred ε of residual, which moves such a pose
by ε/σ_min).

Under-driven mechanisms (``free_dof="minimal"``, OndselSolver's quasi-kinematic mode):
drivers that leave degrees of freedom free are refused by default.  On request the free
coordinates move minimally instead: each pose is the solution of Φ(q, t) = 0 closest to
the previous pose in the metric ‖W⁻¹ Δq‖₂, W = 1 for positions (m) and 1/L for the
orientation coordinates (the weighting of :func:`assemble`'s far-start steps, L (m) the
spread of the assembled parts' positions, at least 1); q̇ is the solution of least
weighted norm of Φq q̇ = −Φt on the kept rows and q̈ its time derivative (a solution of
Φq q̈ = γ, see :meth:`_Stepper._minimal_derivatives`).  A part, or a whole sub-mechanism,
that no driver reaches stays where it is.  Being the nearest to the previous pose, the
poses depend on the output step to first order in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

import numpy as np

from ..errors import AssemblyError, DrivingError, SingularityError
from .analysis import free_motion, rank_info
from .kinematic_checks import check_kinematic_run
from .kinematics_fast import CHUNK, RCOND_MARGIN, compiled_frames
from .lapack import geqrf, orgqr, trtrs
from .linalg import DENSE_LIMIT, RowSolver, WeightedRowSolver, issparse, scale_columns
from .motion import Event, JointCoordinate, Motion
from .near_singular import WATCH_RCOND, kinematic_events
from .system import AngleState, System

__all__ = ["kinematics", "assemble", "AssemblyResult", "mobility", "Mobility", "FREE_DOF_MODES"]

#: what :func:`kinematics` does with degrees of freedom its drivers leave free
FREE_DOF_MODES = ("refuse", "minimal")


@dataclass
class AssemblyResult:
    """Outcome of :func:`assemble`: q (nq,), residual ‖Φ‖∞, and how far each part moved (m)."""

    q: np.ndarray
    success: bool
    residual: float
    iterations: int
    moved: dict = field(default_factory=dict)
    conflicts: List[str] = field(default_factory=list)
    message: str = ""


@dataclass
class Mobility:
    """Degrees of freedom and redundancy at a configuration."""

    dof: int  # mobility of the mechanism with its joints only (drivers not counted)
    dof_driven: int  # remaining freedom with the drivers
    gruebler: int  # 6·(moving parts) − Σ joint equations
    rank: int
    redundant: List[str]  # "joint (template eq k)" labels of redundant equations, joints only
    redundant_joints: List[str]
    n_equations: int
    nq: int


def _labels(model, rows):
    return [f"{model.row_labels[r][0]} ({model.row_labels[r][1]} eq {model.row_labels[r][2]})" for r in rows]


def mobility(model, q=None, t=0.0, angles=None):
    """DOF from the Jacobian's numerical rank, with and without drivers; Grübler beside it."""
    system = System(model)
    q = model.q0 if q is None else q
    angles = angles or AngleState(model, q)
    J = system.jacobian(q, t, angles)
    driver_rows = np.array([r for r, lab in enumerate(model.row_labels) if lab[1].startswith("drive-")], dtype=int)
    joint_rows = np.setdiff1d(np.arange(model.nc), driver_rows)
    # the Euler-parameter normalisations are never the redundant ones: redundancy is the joints'
    norm_rows = np.flatnonzero(np.isin(joint_rows, [r for r, lab in enumerate(model.row_labels)
                                                    if lab[1] == "normalize"]))
    info_joints = rank_info(J[joint_rows], prefer=norm_rows) if len(joint_rows) else None
    info_all = rank_info(J)
    rank_j = info_joints.rank if info_joints else 0
    redundant_rows = joint_rows[info_joints.redundant] if info_joints else np.zeros(0, int)
    n_norm = sum(g.n for g in model.groups if g.kind == "normalize")
    n_joint_eq = sum(g.n * g.neq for g in model.groups if g.kind in ("joint", "coupler"))
    n_moving = int((~model.body_fixed).sum())
    return Mobility(
        dof=model.nq - rank_j,
        dof_driven=model.nq - info_all.rank,
        gruebler=6 * n_moving - n_joint_eq,
        rank=info_all.rank,
        redundant=_labels(model, redundant_rows),
        redundant_joints=sorted({model.row_labels[r][0] for r in redundant_rows}),
        n_equations=model.nc - n_norm,
        nq=model.nq,
    )


def assemble(model, q=None, t=0.0, angles=None, *, tol=1e-10, max_iter=50, inconsistency_tol=1e-2):
    """Pull the parts onto their joints with the least change of the given pose.

    Minimum-norm Gauss–Newton steps on the independent equations (redundant ones are
    dropped, as the rank of Φq at each iterate says). CAD data often makes redundant
    equations slightly inconsistent (a planar linkage whose joint frames are 1 mm out of
    plane); those are reported in ``message`` and left unenforced when their violation
    stays below ``inconsistency_tol`` (m or rad), else the assembly fails naming them.

    Newton converges only near an assembly. When it does not (a part saved far from its
    joint: tens of lengths away, or turned), a Newton homotopy follows the solutions of
    Φ(q) = (1 − λ) Φ(q₀) from λ = 0 (the given pose) to λ = 1 (assembled) in steps small
    enough for Newton to converge at each; if that path ends too (a turning point), a
    trust-region least-squares solve (:func:`scipy.optimize.least_squares`) is the last
    start for Newton. A failure names the joints left in conflict (never an empty list).

    Returns an :class:`AssemblyResult`; raises nothing (callers decide).
    """
    system = System(model)
    q = np.array(model.q0 if q is None else q, dtype=float)
    q_start = q.copy()
    angles = angles or AngleState(model, q)
    q0 = q.copy()
    q, res, it = _newton(system, q, t, angles, tol, max_iter)
    for fallback in (_homotopy, _least_squares_pose):
        if res < tol:
            break
        q_f, it_f = fallback(system, q0, t, angles, tol, max_iter)
        q2, res2, it2 = _newton(system, q_f, t, angles, tol, max_iter)
        it += it_f + it2
        if res2 < res:
            q, res = q2, res2
    pos0, _ = model.body_coordinates(q_start)
    pos1, _ = model.body_coordinates(q)
    moved = {model.body_names[b]: float(np.linalg.norm(pos1[b] - pos0[b]))
             for b in range(model.nb) if not model.body_fixed[b]}
    phi = system.phi(q, t, angles)
    full = float(np.max(np.abs(phi))) if phi.size else 0.0
    if res < tol * 10 and full < inconsistency_tol:
        system.accept(q, angles)
        message = ""
        if full > tol * 10:
            names = _worst_items(model, phi)
            message = (f"redundant equations of {', '.join(names)} are violated by {full:.3g} "
                       "(the joint data is slightly inconsistent); they are not enforced")
        return AssemblyResult(q, True, res, it, moved, [], message)
    conflicts = _conflicting_items(model, system, q, t, angles)
    msg = (f"the parts cannot be placed so that every joint holds (largest residual {max(res, full):.3g}); "
           f"conflicting: {', '.join(conflicts)}")
    return AssemblyResult(q, False, max(res, full), it, moved, conflicts, msg)


def _newton(system, q, t, angles, tol, max_iter, shift=None, colscale=None):
    """Damped minimum-norm Newton on the independent rows of Φ(q) − shift = 0; the best
    pose met, ‖Φ − shift‖∞ there (independent rows) and the iterations used.

    ``colscale`` (nq,) weighs the minimum-norm step: it is the least-norm ``Δq/colscale``,
    so a small scale makes a coordinate expensive to move (see :func:`_rotation_scale`)."""
    shift = 0.0 if shift is None else shift
    res = np.inf
    it = 0
    best = (np.inf, q.copy())
    for it in range(1, max_iter + 1):
        phi = system.phi(q, t, angles) - shift
        full = float(np.max(np.abs(phi))) if phi.size else 0.0
        if full < tol:  # every row holds, so the independent ones do: no rank analysis needed
            res = full
            if res < best[0]:
                best = (res, q.copy())
            break
        J = system.jacobian_auto(q, t, angles)
        rows = rank_info(J, rtol=1e-8).independent
        res = float(np.max(np.abs(phi[rows]))) if rows.size else 0.0
        if res < best[0]:
            best = (res, q.copy())
        if res < tol:
            break
        if colscale is None:
            step = RowSolver(J, rows).solve(-phi)
        else:
            Js = scale_columns(J, colscale)
            step = colscale * RowSolver(Js, rows).solve(-phi)
        # damp steps that grow the residual (a pose far from any assembly)
        alpha = 1.0
        for _ in range(8):
            trial = q + alpha * step
            r_trial = np.max(np.abs((system.phi(trial, t, angles) - shift)[rows]))
            if r_trial < res or alpha < 0.05:
                break
            alpha *= 0.5
        q = trial
    else:
        if res > best[0]:
            q, res = best[1], best[0]
    return q, res, it


def _rotation_scale(model, q):
    """Column weights for steps far from an assembly: 1 for positions (m), 1/L for the
    orientation coordinates, L (m) the spread of the parts' initial positions (at least
    1).  A part far from its joint then travels rather than spins: a turn of its
    orientation coordinates moves a marker by its lever arm, which for a far part makes
    the unweighted least-norm step mostly a rotation, and Newton then converges poorly."""
    nqb = model.nqb
    nmov = model.nq // nqb
    if nmov == 0:
        return None
    pos = np.asarray(q, float).reshape(nmov, nqb)[:, :3]
    span = float(np.max(np.ptp(np.vstack([pos, np.zeros((1, 3))]), axis=0)))
    scale = np.ones((nmov, nqb))
    scale[:, 3:] = 1.0 / max(1.0, span)
    return scale.reshape(-1)


def _homotopy(system, q, t, angles, tol, max_iter, min_step=1e-4):
    """Follow Φ(q) = (1 − λ) Φ(q₀) from λ = 0 to 1 by Newton corrector steps, halving the
    λ step where Newton does not converge and growing it where it converges quickly.
    Returns the pose reached (assembled when λ got to 1) and the iterations used."""
    colscale = _rotation_scale(system.model, q)
    phi0 = system.phi(q, t, angles)
    scale = max(1.0, float(np.max(np.abs(phi0))))
    lam, h, used = 0.0, 0.125, 0
    while lam < 1.0 and h >= min_step:
        nxt = min(1.0, lam + h)
        inner_tol = tol if nxt == 1.0 else 1e-8 * scale
        q_new, res, it = _newton(system, q, t, angles, inner_tol, 12, shift=(1.0 - nxt) * phi0,
                                 colscale=colscale)
        used += it
        if res < inner_tol:
            q, lam = q_new, nxt
            if it <= 4:
                h *= 2.0
        else:
            h *= 0.5
        if used > 50 * max_iter:
            break
    return q, used


def _least_squares_pose(system, q, t, angles, tol, max_iter):
    """A pose minimising ‖Φ(q)‖₂ from ``q`` by scipy's trust-region reflective method
    (it decreases ‖Φ‖₂² from any start, but may stop in a local minimum)."""
    from scipy.optimize import least_squares

    fit = least_squares(lambda x: system.phi(x, t, angles), q,
                        jac=lambda x: system.jacobian_auto(x, t, angles),
                        method="trf", max_nfev=20 * max_iter, xtol=1e-14, ftol=1e-14, gtol=1e-14)
    return fit.x, int(fit.nfev)


def _conflicting_items(model, system, q, t, angles):
    """Joints in conflict: those left with a residual by a least-squares fit of *all* equations.

    Solving the independent rows exactly pins the whole conflict on the dropped rows; a
    least-squares fit spreads it over every equation that takes part in the conflict.
    """
    from scipy.optimize import least_squares

    fit = least_squares(lambda x: system.phi(x, t, angles), q, jac=lambda x: system.jacobian_auto(x, t, angles),
                        method="trf", max_nfev=50, xtol=1e-12, ftol=1e-12)
    names = _worst_items(model, fit.fun, rel=1e-3)
    if not names:  # the fit closed what Newton left: name what is violated at q
        names = _worst_items(model, system.phi(q, t, angles), rel=0.0)
    return names or [model.row_labels[r][0] for r in range(model.nc)
                     if model.row_labels[r][1] != "normalize"][:6]


def _worst_items(model, phi, limit=6, rel=1e-6):
    """Names of the joints/drivers with the largest residuals, largest first."""
    worst = np.argsort(-np.abs(phi))
    names = []
    for r in worst:
        if abs(phi[r]) < rel * max(1.0, abs(phi[worst[0]])) or len(names) >= limit:
            break
        if model.row_labels[r][1] == "normalize":  # a part's Euler parameters, not a joint
            continue
        if model.row_labels[r][0] not in names:
            names.append(model.row_labels[r][0])
    return names


def _quantities(model, Q, Qd, Qdd):
    """Per frame and body (rows of Q, Q̇, Q̈: (nt, nq)): positions (m), unit quaternions,
    velocities (m/s), angular velocities (rad/s), accelerations (m/s²) and angular
    accelerations (rad/s²), all in the world frame, shapes (nt, nb, 3) or (nt, nb, 4); in
    the model's body order. One array operation for all frames."""
    par = model.parametrization
    nqb = model.nqb
    nmov = model.nq // nqb
    nt = Q.shape[0]
    qf = np.concatenate([Q, np.broadcast_to(model.q_fixed, (nt, len(model.q_fixed)))], axis=1)
    qb = qf[:, model.body_qadr[:, None] + np.arange(nqb)[None, :]]  # (nt, nb, nqb)
    pos = qb[..., :3].copy()
    quat = par.to_quaternion(qb[..., 3:])
    vel, om, acc, al = (np.zeros((nt, model.nb, 3)) for _ in range(4))
    if nmov:
        P = Q.reshape(nt, nmov, nqb)
        Pd = Qd.reshape(nt, nmov, nqb)
        Pdd = Qdd.reshape(nt, nmov, nqb)
        vel[:, :nmov] = Pd[..., :3]
        acc[:, :nmov] = Pdd[..., :3]
        om[:, :nmov] = par.angular_velocity(P[..., 3:], Pd[..., 3:])
        al[:, :nmov] = par.angular_acceleration(P[..., 3:], Pd[..., 3:], Pdd[..., 3:])
    return pos, quat, vel, om, acc, al


def _check_euler_singularity(model, q, t):
    par = model.parametrization
    if par.name != "euler-313":
        return
    nmov = model.nq // model.nqb
    theta = q.reshape(nmov, model.nqb)[:, 4]
    bad = np.abs(np.sin(theta)) < par.singular_tolerance
    if bad.any():
        names = [model.body_names[b] for b in np.flatnonzero(bad)]
        raise SingularityError(
            f"3-1-3 Euler angles are singular (θ = 0 or π) for part(s) {', '.join(names)} at t = {t:.6g} s",
            time=t,
            hint="use the default Euler parameters (parametrization='euler-parameters'); "
            "θ = 0 is the identity orientation most CAD parts start in",
        )


def kinematics(model, t_end=1.0, steps=100, *, t_start=0.0, times=None, tol=1e-10, max_iter=20,
               singular_rcond=1e-9, progress=None, stop_on_singular=True, free_dof="refuse"):
    """Kinematic analysis of a driven mechanism.

    Parameters
    ----------
    model : :class:`~cadmotion.kernel.model.Model`
    t_end, steps : output times linspace(t_start, t_end, steps + 1) (s), unless ``times``.
    tol : position tolerance on ‖Φ‖∞ (m for position equations).
    progress : optional callable ``progress(k, nt)`` after every frame.
    free_dof : ``"refuse"`` (default): drivers that leave degrees of freedom free raise
        DrivingError.  ``"minimal"``: the free coordinates move minimally (OndselSolver's
        quasi-kinematic mode): each pose is the one satisfying Φ(q, t) = 0 closest to the
        previous pose, the velocities the least-norm solutions (accelerations their time
        derivative), in the metric of positions (m) and orientation coordinates times L
        (m, the model's length scale, see the module docstring); a ``free-dof`` event at
        the start names the free DOF count.

    Returns
    -------
    Motion
        ``complete`` is False when a lock-up, a failure or Ctrl-C (KeyboardInterrupt)
        ended the run early; the frames before it are valid and ``message``/``events``
        say what happened and when. ``invariants`` is the run's check of itself
        (:mod:`.kinematic_checks`: the frames are one motion with the velocities and
        accelerations reported); a broken check is also an ``invariant`` event. Frames next
        to a singular configuration whose velocities and accelerations cannot be trusted to
        1e-7 and 1e-5 of the run's largest are a ``near-singular`` event per stretch, their
        estimated errors ``extra["near_singular.velocity_error"]`` and
        ``["near_singular.acceleration_error"]`` (:mod:`.near_singular`).

    Raises
    ------
    AssemblyError : the initial pose cannot be assembled.
    DrivingError : the drivers leave the mechanism under-determined (DOF > 0) and
        ``free_dof`` is ``"refuse"``; or they over-determine it.
    """
    if free_dof not in FREE_DOF_MODES:
        raise DrivingError(f"free_dof must be one of {', '.join(FREE_DOF_MODES)}, got {free_dof!r}",
                           hint="'refuse' stops an under-driven mechanism, 'minimal' moves its free "
                                "coordinates as little as the joints allow")
    if times is None:
        if steps < 1:
            raise DrivingError(f"steps must be at least 1, got {steps}")
        times = np.linspace(t_start, t_end, int(steps) + 1)
    times = np.asarray(times, dtype=float)
    system = System(model)
    angles = AngleState(model, model.q0)
    _check_euler_singularity(model, model.q0, times[0])
    asm = assemble(model, model.q0, times[0], angles, tol=tol)
    if not asm.success:
        raise AssemblyError(asm.message, where=model.spec.source or None,
                            hint="check the joint frames of the conflicting joints, "
                                 "or move the parts closer to an assembled pose")
    q = asm.q
    events = [Event("assembly", float(times[0]), asm.message)] if asm.message else []
    if model.nq == 0:  # every part fixed (a CAD file whose joints are all deactivated): nothing moves
        Z = np.zeros((len(times), 0))
        return _motion(model, times, Z, Z, Z, system.joint_measures_frames(Z), events)
    J = system.jacobian_auto(q, times[0], angles)
    info = rank_info(J)
    free = _check_drivers(model, J, info, allow_free=free_dof == "minimal", system=system, q=q)
    colscale = None
    if free:
        colscale = _rotation_scale(model, q)
        length = 1.0 / colscale[3] if colscale is not None else 1.0
        events.append(Event("free-dof", float(times[0]),
                            f"the drivers leave {free} degree(s) of freedom free; they move minimally "
                            f"(each pose the closest to the previous one, positions in m and orientation "
                            f"coordinates weighted by L = {length:.4g} m)"))
        solver = WeightedRowSolver(J, info.independent, colscale)
    else:
        solver = RowSolver(J, info.independent)
    stepper = _Stepper(system, info.independent, solver, tol, max_iter, singular_rcond, colscale=colscale,
                       free=free)
    nt = len(times)
    nq = model.nq
    Q = np.zeros((nt, nq))
    Qd = np.zeros((nt, nq))
    Qdd = np.zeros((nt, nq))
    rcond = np.ones(nt)  # per frame: the kept rows' reciprocal condition number (.near_singular)
    state = stepper.derivatives(q, times[0], angles)
    Q[0], Qd[0], Qdd[0] = state
    rcond[0] = stepper.solver.rcond
    compiled = compiled_frames(model, system, times, free)
    done = 1
    message = ""
    k = 1
    behind = False  # has the compiled loop moved on from the stepper's state?
    changes = {}  # frame k -> the joint coordinates' change from frame k − 1, where the stepper split the interval
    try:  # Ctrl-C, wherever it lands (a compiled call, a step, the progress display): keep the frames done
        while k < nt:
            if compiled is not None:  # as many frames as the compiled loop does, then one of the stepper's
                end = min(nt, k + CHUNK)
                # the step before frame k − 1, for the predictor: the compiled loop's or the stepper's (a sub-step)
                prev = (times[k - 2], Qdd[k - 2]) if behind else stepper.previous(times[k - 1])
                # (it stops before a frame where the kept rows' determinant changes sign: the stepper
                # splits that step and reports the singular pose passed)
                k_new = compiled.run(k, end, times, Q, Qd, Qdd, rcond, stepper.rows, angles, tol, max_iter,
                                     stepper.polish_iter, RCOND_MARGIN * singular_rcond, WATCH_RCOND, prev)
                k_old, k = k, k_new
                behind = behind or k_new > k_old
                done = k_new
                if progress is not None:
                    for j in range(k_old, k_new):
                        progress(j, nt)
                if k == end:
                    continue
                if behind:  # the stepper takes frame k from the compiled loop's last pose
                    behind = False
                    state = (Q[k - 1].copy(), Qd[k - 1].copy(), Qdd[k - 1].copy())
                    prev = (times[k - 2], Qdd[k - 2].copy(), times[k - 1]) if k >= 2 else None
                    stepper.resume(state[0], times[k - 1], angles, prev)
            try:
                state = stepper.advance(times[k - 1], state, times[k], angles, events)
                if stepper.interval_change is not None:
                    changes[k] = stepper.interval_change
            except _Stop as stop:
                message = str(stop)
                if stop.kind == "singular" and not stop_on_singular:
                    state = stop.state
                else:
                    break
            Q[k], Qd[k], Qdd[k] = state
            rcond[k] = stepper.solver.rcond
            done = k + 1
            if progress is not None:
                progress(k, nt)
            k += 1
    except KeyboardInterrupt:
        message = f"interrupted at t = {times[done - 1]:.6g} s; the frames before are complete"
        events.append(Event("interrupted", float(times[done - 1]), message))
    measures = system.joint_measures_frames(Q[:done])
    rates = _measure_rates(model, system, Q[:done], Qd[:done], measures)
    motion = _motion(model, times[:done], Q[:done], Qd[:done], Qdd[:done], measures, events,
                     complete=done == nt, message=message, rates=rates,
                     changes={k: c for k, c in changes.items() if k < done})
    # the intervals the stepper split at a singular pose have a kink by nature: not checked
    motion.invariants = check_kinematic_run(motion, tol, skip_intervals=[k - 1 for k in changes if k < done])
    if not free:  # frames whose velocities and accelerations a nearby singular configuration spoils
        near, series = kinematic_events(model, system, stepper.rows, times, Q[:done], rcond[:done], motion,
                                        _quantities)
        events.extend(near)
        events.sort(key=lambda e: e.time)
        motion.extra.update(series)
    return motion


def _check_drivers(model, J, info, allow_free=False, system=None, q=None):
    """DrivingError unless the drivers fix exactly the mechanism's free coordinates; with
    ``allow_free`` only over-determination is refused.  Returns the DOF left free (0 when
    not ``allow_free``).

    Under-determined: rank(Φq) < nq. Over-determined: the driver equations are not
    independent of the joints (rank of all rows < rank of the joint rows + drivers), even
    where they happen to agree at the start.
    """
    is_driver = np.array([lab[1].startswith("drive-") for lab in model.row_labels], dtype=bool).reshape(-1)
    driver_rows, joint_rows = np.flatnonzero(is_driver), np.flatnonzero(~is_driver)  # (np.setdiff1d imports numpy.ma)
    rank_joints = rank_info(J[joint_rows]).rank if len(joint_rows) else 0
    mobility_joints = model.nq - rank_joints
    drivers = sorted({model.row_labels[r][0] for r in driver_rows})
    where = model.spec.source or None
    if info.rank < rank_joints + len(driver_rows):
        raise DrivingError(
            f"the drivers over-determine the mechanism: {len(driver_rows)} driver(s) ({', '.join(drivers)}) "
            f"for {mobility_joints} degree(s) of freedom; drivers must not fix the same motion twice",
            where=where, hint="remove drivers until there is one per degree of freedom",
        )
    if info.dof > 0 and not allow_free:
        free = free_motion(model, system, J, q) if system is not None and q is not None \
            and model.nq <= DENSE_LIMIT else None
        which = ""
        if free is not None and free.parts:
            which = f": {', '.join(free.parts[:8])} can move with the drivers held"
            joints = list(dict.fromkeys(c.rsplit(".", 1)[0] for c in free.coordinates))
            if joints:
                which += f" (a driver on one of the joints {', '.join(joints[:8])} would fix that)"
        raise DrivingError(
            f"the drivers leave {info.dof} degree(s) of freedom free (mechanism mobility {mobility_joints}, "
            f"{len(driver_rows)} driver(s)){which}; kinematic analysis needs every DOF driven",
            where=where,
            hint="add drivers (a [[drivers]] entry per free joint coordinate), run a dynamic analysis, "
                 "or let the free coordinates move minimally (free_dof='minimal', `cadmotion run --free-dof minimal`)",
        )
    return int(info.dof)


class _Stop(Exception):
    def __init__(self, kind, message, state=None, time=None):
        super().__init__(message)
        self.kind = kind
        self.state = state
        self.time = time  # s, the time the message names


class _Stepper:
    """Moves an accepted state (q, q̇, q̈) from one time to the next.

    A step whose position iteration fails, or converges far from the predictor (another
    branch), is split in two, down to ``1/2**max_depth`` of an output interval, before a
    lock-up or branch jump is declared: output spacing does not decide whether the motion
    is followed.
    """

    max_depth = 8

    def __init__(self, system, rows, solver, tol, max_iter, singular_rcond, colscale=None, free=0):
        self.system, self.rows, self.solver = system, rows, solver
        self.colscale, self.free = colscale, free  # free DOF moved minimally (colscale: their metric)
        self.tol, self.max_iter, self.singular_rcond = tol, max_iter, singular_rcond
        self._J_at = None  # (q, Φq at q) of the last accepted pose
        self._prev = None  # (t0, q̈ at t0, t1) of the last accepted step t0 -> t1
        self._pattern = None  # SparsePattern of the kept rows (large models), see _factor
        self._track = None  # (t, q, q̇) of the accepted sub-steps of a split output interval
        #: the joint coordinates' change (n_measures,) over the last output interval taken in
        #: sub-steps (angles continuous over turns along them), else None: see :func:`_angles_over_turns`
        self.interval_change = None

    def _factor(self, J):
        """A :class:`RowSolver` of the kept rows of ``J``; large sparse models reuse the
        column order of the first factorisation (the pattern of Φq is fixed)."""
        if self.colscale is not None:
            return WeightedRowSolver(J, self.rows, self.colscale)
        pattern = self._pattern
        if pattern is not None and pattern.rows is self.rows:
            return RowSolver(J, self.rows, pattern)
        solver = RowSolver(J, self.rows)
        if issparse(J):
            self._pattern = solver.pattern(J)
        return solver

    def derivatives(self, q, t, angles):
        """(q, q̇, q̈) at an accepted pose: Φq q̇ = −Φt, Φq q̈ = γ on the kept rows, or on
        all rows when the mechanism has redundant equations that hold (see
        :meth:`_all_rows`)."""
        system = self.system
        if self.colscale is not None:
            return self._minimal_derivatives(q, t, angles)
        phit = system.phit(q, t, angles)
        full = self._full_rows_factor(q, t, angles)
        qd = self._all_rows(full, self.solver, -phit)
        gamma = system.gamma(q, qd, t, angles)
        qdd = self._all_rows(full, self.solver, gamma)
        return q, qd, qdd

    def _minimal_derivatives(self, q, t, angles):
        """(q, q̇, q̈) of the minimal motion through ``q`` (free DOF moved minimally).

        q̇ is the least weighted-norm solution of Φq q̇ = −Φt: q̇ = C² Φqᵀ λ (kept rows, C
        the column weights).  Along the motion q̇ stays of that form, so q̈ = C² (Φ̇qᵀ λ +
        Φqᵀ μ): the time derivative of the velocities, with μ from Φq q̈ = γ.  The
        least-norm q̈ alone (μ only) would leave out C² Φ̇qᵀ λ, the turning of the free
        directions with the pose (4 % of the acceleration of a ball-jointed body whose
        frame origin is 2 m from the ball).  Φ̇qᵀ λ = d/dε Φq(q + ε q̇, t + ε)ᵀ λ by a
        central difference (relative error about 1e-10)."""
        system, solver, rows = self.system, self.solver, self.rows
        qd, lam = solver.solve_multipliers(-system.phit(q, t, angles))
        gamma = system.gamma(q, qd, t, angles)
        if lam is None:
            return q, qd, solver.solve(gamma)
        eps = 1e-6 / max(1.0, float(np.abs(qd).max()))

        def rows_t_lam(sign):
            J = system.jacobian_auto(q + sign * eps * qd, t + sign * eps, angles)
            J = J.tocsr()[rows] if issparse(J) else np.asarray(J)[rows]
            return np.asarray(J.T @ lam).reshape(-1)

        turning = self.colscale ** 2 * (rows_t_lam(1.0) - rows_t_lam(-1.0)) / (2.0 * eps)
        qdd = turning + solver.solve(gamma - solver.matvec(turning))
        return q, qd, qdd

    def _full_rows_factor(self, q, t, angles):
        """(Φq, Q, R) of all rows (economic QR) when some rows were dropped as redundant
        and the model is small enough for dense algebra; else None."""
        nc, nq = self.system.model.nc, self.system.model.nq
        if len(self.rows) == nc or nq > DENSE_LIMIT or nc < nq or self.colscale is not None:
            return None
        cached = self._J_at
        J = cached[1] if cached is not None and cached[0] is q else self.system.jacobian_dense(q, t, angles)
        J = J.toarray() if issparse(J) else np.asarray(J)
        # LAPACK's QR directly (scipy.linalg.qr's checks and copies cost more than the
        # factorisation of a small model): R is the upper triangle of qr, Q from its reflectors
        qr, tau, _, info = geqrf(J)
        if info != 0:  # pragma: no cover - only for invalid arguments
            return None
        d = np.abs(np.diag(qr))
        if d.min() < 1e-12 * d.max():
            return None  # all rows do not fix every coordinate (a singular pose)
        R = np.triu(qr[: J.shape[1]])
        Q, _, info = orgqr(qr, tau)
        if info != 0:  # pragma: no cover
            return None
        return J, Q, R

    @staticmethod
    def _all_rows(full, solver, b):
        """The least-squares solution of Φq x = b over *all* rows when some were dropped
        as redundant and that system is consistent to round-off, else the solution
        ``solver.solve(b)`` on the kept rows.

        The kept rows alone determine x, but near some poses (a planar loop at a crank
        angle of 90 or 270 deg) they do so badly for the coordinates the dropped rows
        would fix: a piston crank's out-of-plane angular acceleration came out at
        1.3e-9 rad/s² from the kept rows and at round-off from all rows.  Data whose
        redundant rows disagree (CAD frames slightly out of plane) keeps ``x_kept``, so
        the drivers and the kept joints hold exactly."""
        if full is None:
            return solver.solve(b)
        J, Q, R = full
        x, info = trtrs(R, Q.T @ b)
        if info != 0:  # pragma: no cover - R was checked non-singular
            return solver.solve(b)
        scale = max(1.0, float(np.abs(b).max()), float(np.abs(J).max()) * float(np.abs(x).max()))
        if np.abs(J @ x - b).max() > 1e3 * np.finfo(float).eps * scale * J.shape[1]:
            return solver.solve(b)
        return x

    def resume(self, q, t, angles, prev):
        """Go on from the accepted pose ``q`` at ``t`` (s) that the compiled frame loop
        reached: the factorisation there, and ``prev`` = (t0, q̈ at t0, t) of the step before
        (or None) for the predictor's jerk."""
        self.solver = self._factor(self.system.jacobian_auto(q, t, angles))
        self._J_at = None
        self._prev = prev

    def previous(self, t):
        """(t0 (s), q̈ at t0) of the accepted step t0 -> ``t`` that the predictor's jerk uses, or None."""
        prev = self._prev
        if prev is not None and prev[2] == t and prev[0] < t:
            return prev[0], prev[1]
        return None

    #: chord iterations past ``tol`` towards round-off (see :meth:`_position`)
    polish_iter = 3

    def _closest(self, q_prev, q_pred, t, angles):
        """The pose satisfying Φ(q, t) = 0 (kept rows) closest to ``q_prev`` in the weighted
        metric, from ``q_pred``; None if the iteration fails.

        Gauss–Newton on the closest-point problem: at the iterate q, with d = q_prev − q,
        the step is d − J⁺(Φ + J d) (J⁺ the weighted least-norm solve, Φq taken afresh at
        every iterate): it lands on the linearised constraint at the point nearest q_prev.
        At its fixed point Φ = 0 and q − q_prev lies in the weighted row space of Φq,
        the first-order condition of the nearest pose."""
        system, rows = self.system, self.rows
        q = q_pred.copy()
        floor = 1e3 * np.finfo(float).eps * max(1.0, float(np.abs(q).max()))
        for _ in range(max(self.max_iter, 30)):
            phi = system.phi(q, t, angles)
            norm = float(np.max(np.abs(phi[rows]))) if phi.size else 0.0
            if not np.isfinite(norm):
                return None
            try:
                self.solver = self._factor(system.jacobian_auto(q, t, angles))
            except np.linalg.LinAlgError:  # the kept rows lost rank at this iterate: the step is split
                return None
            d = q_prev - q
            step = d - self.solver.solve(phi + self.solver.matvec(d))
            size = float(np.max(np.abs(step))) if step.size else 0.0
            if norm < self.tol and size < max(self.tol, floor):
                return q
            q = q + step
        return None

    def _position(self, q_pred, t, angles):
        """Newton–Raphson on the independent rows from ``q_pred``; None if it fails.

        Once ‖Φ‖ < tol a few more chord steps (no new factorisation) bring Φ down to
        round-off: the velocity and acceleration solved at this pose inherit its error
        multiplied by the speeds squared (a crank at 2π rad/s turned 1e-10 off its pose
        had an angular acceleration error of 2e-9 rad/s², out of the plane of a planar
        mechanism where the exact value is 0)."""
        system, rows = self.system, self.rows
        q_new = q_pred.copy()
        fresh = False  # is the factorisation taken at the current iterate?
        prev_norm = np.inf
        for it in range(self.max_iter):
            phi = system.phi(q_new, t, angles)
            norm = float(np.max(np.abs(phi[rows]))) if phi.size else 0.0
            if not np.isfinite(norm):
                return None
            if norm < self.tol:
                return self._polish(q_new, phi, norm, t, angles)
            if it > 0 and norm > 0.25 * prev_norm:
                if fresh:  # even a full Newton step did not reduce Φ: no solution nearby
                    return None
                # chord iteration too slow: refactorise here (full Newton from now on if needed)
                self.solver = self._factor(system.jacobian_auto(q_new, t, angles))
                fresh = True
            else:
                fresh = False
            prev_norm = norm
            q_new = q_new - self.solver.solve(phi)
        return None

    def _polish(self, q, phi, norm, t, angles):
        """Steps from a converged ``q`` while they still divide ‖Φ‖ by 4 or more: chord
        steps first, then (once) a Newton step with Φq refactorised at ``q`` when the chord
        stalls.  A redundant mechanism needs it most: its dropped rows hold only where
        the kept ones hold to round-off (a piston crank whose kept rows stopped at 3.5e-11
        violated its dropped ones by 2.5e-10, and its out-of-plane angular acceleration
        was 5.6e-7 rad/s² where the exact value is 0)."""
        rows = self.rows
        fresh = False
        # a residual within a few units of round-off of the coordinates cannot be divided by 4
        floor = 4.0 * np.finfo(float).eps * max(1.0, float(np.abs(q).max()))
        for _ in range(self.polish_iter + 1):
            if norm <= floor:
                break
            trial = q - self.solver.solve(phi)
            phi_t = self.system.phi(trial, t, angles)
            norm_t = float(np.max(np.abs(phi_t[rows])))
            if not norm_t < 0.25 * norm:
                # near a singular pose a residual of a few hundred ε still moves the pose by ε/σ_min along the
                # near-null direction, and the accelerations by 1/σ² of that: refactorise there too
                if fresh or (norm < 1e3 * np.finfo(float).eps and self.solver.rcond >= WATCH_RCOND):
                    break
                self.solver = self._factor(self.system.jacobian_auto(q, t, angles))
                fresh = True
                continue
            q, phi, norm = trial, phi_t, norm_t
        return q

    def _minimal_crossed(self, q, t0, J_new, angles):
        """With free DOF (wide kept rows): whether det [Φq[rows]; Zᵀ] has opposite signs at ``q``
        (t0) and at the new pose (``J_new``), Z (nq, free) the null space of Φq[rows] at ``q``
        (the free directions there, held for the step). As :attr:`.linalg.RowSolver.det_sign`
        for a driven mechanism: an RSSR whose crank turned 3 turns in one output interval, its
        coupler's spin moved minimally, ended on the mirror assembly (rocker 3 rad off) with no
        event. Dense models only (nq ≤ DENSE_LIMIT); False otherwise."""
        nq = self.system.model.nq
        if nq > DENSE_LIMIT:
            return False

        def dense(J):
            J = J.toarray() if issparse(J) else np.asarray(J)
            return J[self.rows]
        J0 = dense(self.system.jacobian_auto(q, t0, angles))
        if J0.shape[0] >= nq:
            return False
        Z = np.linalg.svd(J0)[2][J0.shape[0]:]  # (free, nq), orthonormal, spans the null space of J0
        s0 = np.linalg.slogdet(np.vstack([J0, Z]))[0]
        s1 = np.linalg.slogdet(np.vstack([dense(J_new), Z]))[0]
        return bool(s0) and bool(s1) and s0 != s1

    def _tracked_change(self):
        """The joint coordinates' change (n_measures,) over the sub-steps in ``_track``, each
        angle continuous over turns from sub-step to sub-step (:func:`_angles_over_turns` on
        them): an output interval can hold several turns, which its two ends' rates alone
        cannot count (a pinion driven by 3 sin πt + 2 t, written at 0 and 2 s, read 22.8 rad
        at 2 s instead of 4)."""
        model, system = self.system.model, self.system
        times = np.array([t for t, _, _ in self._track])
        Q = np.array([q for _, q, _ in self._track])
        Qd = np.array([qd for _, _, qd in self._track])
        measures = system.joint_measures_frames(Q)
        rates = _measure_rates(model, system, Q, Qd, measures)
        cols = _angle_columns(model)
        if cols:
            measures[:, cols] = _angles_over_turns(measures[:, cols], rates[:, cols], times)
        return measures[-1] - measures[0]

    def advance(self, t0, state, t1, angles, events, depth=0):
        q, qd, qdd = state
        h = t1 - t0
        q_pred = q + h * qd + 0.5 * h * h * qdd
        prev = self._prev
        if prev is not None and prev[2] == t0 and prev[0] < t0:
            # third-order Taylor term, the jerk from the accelerations at the last two poses:
            # the predictor error falls from O(h³) to O(h⁴), one chord step fewer per frame
            q_pred += (h * h * h / 6.0) * ((qdd - prev[1]) / (t0 - prev[0]))
        solver = self.solver
        if self.colscale is not None:
            q_new = self._closest(q, q_pred, t1, angles)
        else:
            q_new = self._position(q_pred, t1, angles)
        step = np.max(np.abs(q_pred - q))
        jumped = q_new is not None and np.max(np.abs(q_new - q_pred)) > max(0.5 * step, 1e3 * self.tol)
        crossed = False
        if q_new is not None and not jumped:
            # the kept rows' determinant keeps its sign along a regular path: a change means a
            # singular pose lies between (a dead centre or change point passed, or the other
            # assembly mode reached: a predictor past a dead centre converges there)
            J_new = self.system.jacobian_auto(q_new, t1, angles)
            new_solver = self._factor(J_new)
            if self.colscale is None:
                sign_new, sign = new_solver.det_sign, solver.det_sign
                crossed = bool(sign_new) and bool(sign) and sign_new != sign  # (None: not square)
            else:  # free DOF: the kept rows are wide
                crossed = self._minimal_crossed(q, t0, J_new, angles)
        if depth == 0:
            self.interval_change = None
        if (q_new is None or jumped or crossed) and depth < self.max_depth:
            self.solver = solver                    # the factorisation at the accepted pose
            if depth == 0:
                self._track = [(t0, q, qd)]
            # a whole step that converged across a singular pose is kept to fall back on: its halves may
            # land on the singular pose itself (a slider driven to dead centre and back reaches it at
            # the interval's middle), where the position iteration cannot converge
            whole = (angles.copy(), len(events), self._prev, self._J_at,
                     None if self._track is None else list(self._track)) if crossed else None
            try:
                tm = 0.5 * (t0 + t1)
                mid = self.advance(t0, state, tm, angles, events, depth + 1)
                end = self.advance(tm, mid, t1, angles, events, depth + 1)
                if depth == 0:
                    self.interval_change = self._tracked_change()
                return end
            except _Stop as stop:
                if whole is not None and stop.kind in ("lockup", "singular"):
                    angles.ref = whole[0].ref
                    del events[whole[1]:]
                    self._prev, self._J_at, self.solver = whole[2], whole[3], solver
                    if whole[4] is not None:
                        self._track = whole[4]
                else:
                    if depth == 0 and stop.kind == "lockup":
                        # the time the lock-up was found at (a sub-step), as its message says
                        events.append(Event("lockup", float(t1 if stop.time is None else stop.time), str(stop)))
                    raise
            finally:
                if depth == 0:
                    self._track = None
        if q_new is None:
            raise _Stop("lockup", f"lock-up at t = {t1:.6g} s: the position equations have no solution near the "
                        "previous pose (the drivers push the mechanism past a limit or toggle position)", time=t1)
        if jumped:
            jump = np.max(np.abs(q_new - q_pred))
            events.append(Event("branch", float(t1),
                                f"branch jump at t = {t1:.6g} s: even in steps of {h:.3g} s the pose lands "
                                f"{jump:.3g} away from the predicted one (step {step:.3g}); the mechanism "
                                "passes a bifurcation (change point) or the drivers move it discontinuously"))
        elif crossed:
            events.append(Event("branch", float(t1),
                                f"singular configuration passed between t = {t0:.6g} s and {t1:.6g} s: even in "
                                f"steps of {h:.3g} s the determinant of the constraint Jacobian changes sign "
                                "(a change point or dead centre); the drivers do not decide which branch follows: "
                                "the one the predictor (the previous velocity and acceleration) led to was taken"))
        system = self.system
        if jumped:  # else the factorisation at q_new was taken for the sign
            J_new = system.jacobian_auto(q_new, t1, angles)
            new_solver = self._factor(J_new)
        self.solver = new_solver
        self._J_at = (q_new, J_new)  # reused by derivatives() at this pose
        system.accept(q_new, angles)
        if self.solver.rcond < self.singular_rcond:
            # the rows kept at the start may have lost rank while the whole Jacobian has not:
            # choose the independent rows again here before calling it singular
            J = system.jacobian_auto(q_new, t1, angles)
            info = rank_info(J)
            if info.dof == self.free:
                self.rows = info.independent
                self.solver = RowSolver(J, self.rows) if self.colscale is None else self._factor(J)
        new_state = self.derivatives(q_new, t1, angles)
        self._prev = (t0, qdd, t1)  # the acceleration before the state at t1 (see the predictor)
        if depth > 0 and self._track is not None:
            self._track.append((t1, new_state[0], new_state[1]))
        if self.solver.rcond < self.singular_rcond:
            message = (f"singular configuration at t = {t1:.6g} s (reciprocal condition number "
                       f"{self.solver.rcond:.2e}): the drivers no longer determine the motion (toggle / dead centre)")
            events.append(Event("singular", float(t1), message))
            raise _Stop("singular", message, new_state)
        return new_state


#: s, the step of the forward difference that gives the joint coordinates' rates along q̇ (:func:`_measure_rates`)
RATE_STEP = 1e-7


def _angle_columns(model):
    return [n for n, (_, kind, _, _) in enumerate(model.joint_measures) if kind == "angle"]


def _measure_rates(model, system, Q, Qd, measures):
    """The joint coordinates' rates (nt, n_measures), rad/s and m/s, at the frames (Q, Qd): a forward
    difference of :meth:`.system.System.joint_measures_frames` along q̇ over :data:`RATE_STEP` s, the angles'
    differences taken into (−π, π]. (The Euler parameters stay unit to second order along q̇: pᵀṗ = 0.)"""
    d = system.joint_measures_frames(Q + RATE_STEP * Qd) - measures
    angles = _angle_columns(model)
    d[:, angles] = np.remainder(d[:, angles] + np.pi, 2.0 * np.pi) - np.pi
    return d / RATE_STEP


def _angles_over_turns(raw, rates, times, changes=None):
    """Angles (nt, n), rad, wrapped to (−π, π], made continuous over turns: from each frame to the next the
    change is the 2π multiple of the raw one nearest the trapezoidal integral of the ``rates`` (rad/s)
    between them. Exact for a constant or linear rate; it errs only where that integral errs by half a turn.
    (``np.unwrap`` takes the change nearest zero, and loses a turn wherever a joint turns by more than half
    a turn between two frames: a crank at 3 rad/s written every 2 s.) ``changes`` {k: (n,)} are known
    changes from frame k − 1 to k (the stepper's sub-steps, :meth:`_Stepper._tracked_change`), used instead
    of the integral there."""
    raw = np.asarray(raw, float)
    if len(raw) < 2:
        return raw.copy()
    expected = 0.5 * (rates[1:] + rates[:-1]) * np.diff(times)[:, None]
    for k, change in (changes or {}).items():
        expected[k - 1] = change
    turns = np.round((expected - np.diff(raw, axis=0)) / (2.0 * np.pi))
    out = raw.copy()
    out[1:] += 2.0 * np.pi * np.cumsum(turns, axis=0)
    return out


def _motion(model, times, Q, Qd, Qdd, measures, events, complete=True, message="", rates=None, changes=None):
    nt = len(times)
    pos, quat, vel, om, acc, al = _quantities(model, Q, Qd, Qdd)
    # keep quaternion sign continuous (q and −q are the same rotation): frame k's sign is
    # frame k − 1's times the sign of their dot product, a running product over the frames
    if nt > 1:
        turn = np.where(np.einsum("kbi,kbi->kb", quat[1:], quat[:-1]) < 0, -1.0, 1.0)
        quat[1:] *= np.cumprod(turn, axis=0)[..., None]
    order = [model.body_index(p.name) for p in model.spec.parts]
    pos, quat, vel, om, acc, al = (a[:, order] for a in (pos, quat, vel, om, acc, al))
    # angles continuous over turns, every angle column in one call (one per column was 0.8 ms a
    # frame of the 1,000-link loop's 20-frame run): by their rates where known (:func:`_angles_over_turns`)
    angles = _angle_columns(model)
    measures = np.array(measures, float)
    if angles and rates is not None:
        measures[:, angles] = _angles_over_turns(measures[:, angles], rates[:, angles], np.asarray(times, float),
                                                 {k: c[angles] for k, c in (changes or {}).items()})
    elif angles:
        measures[:, angles] = np.unwrap(measures[:, angles], axis=0)
    coords = [JointCoordinate(joint, kind, measures[:, n])
              for n, (joint, kind, _, _) in enumerate(model.joint_measures)]
    motion = Motion(time=times, parts=[p.name for p in model.spec.parts], position=pos, quaternion=quat,
                    velocity=vel, angular_velocity=om, acceleration=acc, angular_acceleration=al,
                    joint_coordinates=coords, events=events, complete=complete, message=message, spec=model.spec)
    motion.extra.update(_cam_series(model, Q))
    return motion


def _cam_series(model, Q):
    """``<cam>.pressure_angle`` (rad) per frame of every cam pair whose law came from a profile."""
    out = {}
    qf = np.hstack([np.asarray(Q, float), np.broadcast_to(model.q_fixed, (len(Q), len(model.q_fixed)))])
    for g in model.groups:
        if not hasattr(g.code, "pressure_angles"):
            continue
        for i, name in enumerate(g.names):
            G = qf[:, g.gather[i]]
            M = np.broadcast_to(g.markers[i], (len(Q), g.markers.shape[1]))
            S = np.broadcast_to(g.params[i], (len(Q), g.params.shape[1]))
            alpha = g.code.pressure_angles(G, M, S)
            if np.all(np.isfinite(alpha)):
                out[f"{name}.pressure_angle"] = alpha
    return out
