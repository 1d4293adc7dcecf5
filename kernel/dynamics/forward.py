"""Forward dynamics: assemble, make the initial velocities consistent, integrate, report.

Stages (each a plain function of the model and the values before it):

    1. mass, forces      validated from the spec (:mod:`.mass`, :mod:`.forces`)
    2. assemble          q0 with Φ(q0, t0) = 0 (the kinematic assembly, least change)
    3. initial velocity  v0 from ``MechanismSpec.initial_velocities`` (part-frame origin
                         velocity and angular velocity, world), made consistent with
                         Jv v = −Φt by the least change of the given parts' velocities
                         (kinetic-energy metric; parts not listed are free to follow)
    4. redundancy        independent rows of Jv (rank-revealing); the others are left out
    5. integrate         the chosen formulation (:mod:`.formulations`)
    6. report            poses, velocities, accelerations, reactions, efforts, energy and
                         constraint violation at every output time, as a Motion
"""

from __future__ import annotations

import numpy as np

from ...errors import AssemblyError, SolverError
from ..kinematics import _motion, assemble
from ..motion import Event
from ..system import AngleState
from .equations import Dynamics
from .formulations import FORMULATIONS, get_formulation
from .mass import cross, body_state
from .outputs import FrameOutputs, reactions_event

__all__ = ["simulate", "run", "initial_velocities", "prepare"]

DEFAULT_FORMULATION = "projection"


def initial_velocities(dyn, q, t, angles, refs, weight_free=1e-6):
    """v0 (nv,) consistent with the constraints, closest to the spec's initial velocities.

    Minimises Σ_listed |v_b − v_b,given|²_M + ε Σ_others |v_b|²_M subject to Jv v = −Φt.
    """
    model = dyn.model
    nmov = dyn.nmov
    v0 = np.zeros((nmov, 6))
    weight = np.full(nmov, weight_free)
    bs = body_state(model, dyn.mass, q, np.zeros(dyn.nv))
    for iv in model.spec.initial_velocities:
        b = model.body_index(iv.part)
        if b >= nmov:
            continue  # a fixed part does not move
        w = np.asarray(iv.angular_velocity, float)
        v0[b, 3:] = w
        v0[b, :3] = np.asarray(iv.velocity, float) + cross(w, bs.rho[b])
        weight[b] = 1.0
    v0 = v0.reshape(-1)
    ev = dyn.evaluate(q, v0, t, refs, with_gamma=False, with_forces=False)
    r = ev.Jr @ v0 + (ev.phit[dyn.rows] if len(dyn.redundant) else ev.phit)
    if r.size == 0 or np.max(np.abs(r)) == 0.0:
        return v0
    if not dyn.sparse:
        return _lexicographic_velocities(dyn, ev, v0, weight > weight_free, r)
    # weighted projection: W = diag(weight) ⊗ M  →  W⁻¹ = M⁻¹ / weight
    scale = np.repeat(1.0 / weight, 6)
    X = ev.minv_jt()  # Jr M⁻¹
    Xw = X * scale[None, :] if not hasattr(X, "multiply") else X.multiply(scale[None, :]).tocsr()
    S = Xw @ ev.Jr.T
    S = S.toarray() if hasattr(S, "toarray") else S
    lam = np.linalg.lstsq(S, r, rcond=None)[0]
    return v0 - Xw.T @ lam


def _lexicographic_velocities(dyn, ev, v0, listed, r):
    """Exact two-stage least change (dense): first the listed parts' velocities as close as
    the joints allow (kinetic-energy metric), then the least kinetic energy of the others.

    All consistent velocities are v = v_p + N z (N: null space of Jr, v_p: a particular
    solution); stage 1 fixes z up to z* + N2 w with N2 the null space of N on the listed
    parts, stage 2 chooses w.
    """
    import scipy.linalg as sla

    Jr = ev.Jr
    rhs = -(ev.phit[dyn.rows] if len(dyn.redundant) else ev.phit)
    vp = np.linalg.lstsq(Jr, rhs, rcond=None)[0]
    N = sla.null_space(Jr)
    if N.shape[1] == 0:
        return vp
    Mh = _mass_sqrt(dyn, ev.bs)  # (nv, nv), Mh @ Mh.T = M
    rowsL = np.repeat(listed, 6)
    # ‖x‖²_M = ‖Lᵀ x‖² and Lᵀ is block diagonal per body, so its rows split by part
    A1, b1 = (Mh.T @ N)[rowsL], (Mh.T @ (v0 - vp))[rowsL]
    z = np.linalg.lstsq(A1, b1, rcond=None)[0] if A1.size else np.zeros(N.shape[1])
    N2 = sla.null_space(A1) if A1.size else np.eye(N.shape[1])
    if N2.shape[1]:
        U = ~rowsL
        A2 = (Mh.T @ N @ N2)[U]
        b2 = -(Mh.T @ (vp + N @ z))[U]
        if A2.size:
            z = z + N2 @ np.linalg.lstsq(A2, b2, rcond=None)[0]
    return vp + N @ z


def _mass_sqrt(dyn, bs):
    """A factor L with L Lᵀ = M (dense, block diagonal)."""
    M = dyn.mass_matrix(bs)
    return np.linalg.cholesky(M)


def prepare(model, t0=0.0):
    """Stages 1–4: (Dynamics, q0, v0, angles, refs, events)."""
    dyn = Dynamics(model)
    angles = AngleState(model, model.q0)
    asm = assemble(model, model.q0, t0, angles)
    if not asm.success:
        raise AssemblyError(asm.message, where=model.spec.source or None,
                            hint="check the joint frames of the conflicting joints, or move the parts closer to an assembled pose")
    q0 = asm.q
    bs = body_state(model, dyn.mass, q0, np.zeros(dyn.nv))
    refs = dyn.forces.initial_refs(bs)
    ev = dyn.evaluate(q0, np.zeros(dyn.nv), t0, refs, with_gamma=False, with_forces=False)
    dyn.set_rows(ev.J, ev.bs)
    v0 = initial_velocities(dyn, q0, t0, angles, refs)
    return dyn, q0, v0, angles, refs


def simulate(model, t_end=1.0, steps=100, *, formulation=DEFAULT_FORMULATION, integrator=None, rtol=1e-8,
             atol=1e-10, dt=None, t_start=0.0, options=None, times=None):
    """Forward dynamics of a mechanism under its forces (and drivers, if any).

    Parameters
    ----------
    model : :class:`~cadmotion.kernel.model.Model` (Euler parameters)
    t_end, steps : output times ``linspace(t_start, t_end, steps + 1)`` (s), unless ``times``.
    formulation : a name from :data:`FORMULATIONS` (default ``projection``).
    integrator : ``DOP853``, ``RK45``, ``RK23``, ``Radau``, ``BDF``, ``LSODA`` or the fixed-step
        ``RK4``; for ``index3``: ``generalized-alpha`` or ``HHT``. None: the formulation's
        default (DOP853; generalized-alpha for index3). A pair the formulation does not run
        is a SolverError.
    rtol, atol : integrator tolerances on the state (m, rad-like, m/s, rad/s).
    dt : step of the fixed-step methods (s); default min(output interval, 1 ms).
    options : formulation options (e.g. ``{"alpha": 5, "beta": 5}`` for ``baumgarte``).

    Returns
    -------
    Motion
        ``extra`` holds ``energy.kinetic``, ``energy.potential``, ``energy.total``,
        ``work.nonconservative`` (J), ``violation.position`` ‖Φ‖, ``violation.velocity``
        ‖Jv v + Φt‖, ``<joint>.fx/fy/fz`` (N) and ``.tx/ty/tz`` (N m) — the reaction on
        the joint's second part at its marker-i origin, assembly axes — and
        ``<driver>.effort``. A numerical failure (NaN, step-size collapse, a singular
        Jacobian) ends the run: ``complete`` is False, ``message`` names the time, the
        frames before it are kept (and an Event of kind ``failed``). Redundant joint
        equations give an Event ``reactions-not-unique`` naming the joints involved. An
        Event ``stats`` summarises steps and evaluations (:func:`run` returns the counters).

    Raises
    ------
    MechanismError : missing or invalid mass properties, bad force elements.
    AssemblyError : the initial pose cannot be assembled.
    SolverError : an unknown formulation, integrator or option.
    """
    return run(model, t_end, steps, formulation=formulation, integrator=integrator, rtol=rtol, atol=atol, dt=dt,
               t_start=t_start, options=options, times=times)[0]


def run(model, t_end=1.0, steps=100, *, formulation=DEFAULT_FORMULATION, integrator=None, rtol=1e-8,
        atol=1e-10, dt=None, t_start=0.0, options=None, times=None):
    """:func:`simulate`, returning (Motion, :class:`~.formulations.DynamicsResult`) (counters included)."""
    if times is None:
        if steps < 1:
            raise SolverError(f"steps must be at least 1, got {steps}")
        if not t_end > t_start:
            raise SolverError(f"t_end ({t_end}) must be after t_start ({t_start})")
        times = np.linspace(t_start, t_end, int(steps) + 1)
    times = np.asarray(times, float)
    cls = get_formulation(formulation)
    integrator = integrator or cls.default_integrator
    cls.check_integrator(integrator)
    dyn, q0, v0, angles, refs = prepare(model, times[0])
    form = cls(dyn, angles=angles, refs=refs, **(options or {}))
    result = form.solve(times, q0, v0, integrator=integrator, rtol=rtol, atol=atol, dt=dt)
    return to_motion(dyn, result, formulation=formulation, integrator=integrator), result


def to_motion(dyn, result, formulation="", integrator=""):
    """Stage 6: a Motion (with the extra series) from a :class:`~.formulations.DynamicsResult`."""
    model = dyn.model
    nt = len(result.t)
    out = FrameOutputs(dyn)
    Qd = np.zeros((nt, dyn.nq))
    Qdd = np.zeros((nt, dyn.nq))
    measures = np.zeros((nt, len(model.joint_measures)))
    done = nt
    message = result.message
    for k in range(nt):
        q, v = result.q[k], result.v[k]
        try:
            _, qdd = out.add(result.t[k], q, v, result.work[k], result.angles[k], result.refs[k])
        except np.linalg.LinAlgError:
            done = k
            message = message or f"the equations of motion are singular at t = {result.t[k]:.6g} s"
            break
        bs = body_state(model, dyn.mass, q, v)
        Qd[k] = dyn.qd(bs, v)
        Qdd[k] = qdd
        measures[k] = result.measures[k]
    events = []
    ev = reactions_event(dyn, result.t[0] if nt else 0.0, out.not_unique)
    if ev is not None:
        events.append(ev)
    complete = result.success and done == nt
    if not complete and result.t_fail is not None:
        events.append(Event("failed", float(result.t_fail), message))
    events.append(Event("stats", float(result.t[-1]) if nt else 0.0,
                        f"{formulation} / {integrator}: {result.nsteps} steps, {result.nfev} evaluations, "
                        f"{result.nfactor} factorisations, {result.nproject} projections"))
    motion = _motion(model, result.t[:done], result.q[:done], Qd[:done], Qdd[:done], measures[:done], events)
    # joint angles: continuous over turns from the integration (np.unwrap cannot know between coarse frames)
    from ..motion import JointCoordinate

    motion.joint_coordinates = [JointCoordinate(jc.joint, jc.kind, measures[:done, n])
                                for n, jc in enumerate(motion.joint_coordinates)]
    extra = out.extra()
    motion.extra.update({k: v[:done] for k, v in extra.items()})
    if not complete:
        motion = motion.truncated(done, message or "the run stopped early")
    return motion
