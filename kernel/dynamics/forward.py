"""Forward dynamics: assemble, make the initial velocities consistent, integrate, report.

Stages (each a plain function of the model and the values before it):

    1. mass, forces      validated from the spec (:mod:`.mass`, :mod:`.forces`)
    2. assemble          q0 with Φ(q0, t0) = 0 (the kinematic assembly, least change)
    3. initial velocity  v0 from ``MechanismSpec.initial_velocities`` (part-frame origin
                         velocity and angular velocity, world), made consistent with
                         Jv v = −Φt by the least change of the given parts' velocities
                         (kinetic-energy metric; parts not listed are free to follow)
    4. redundancy        independent rows of Jv (rank-revealing); the others are left out
       conditioning      the mass on the joints' motion and the steps ahead (:mod:`.conditioning`):
                         a singular mass refused, an error-controlled run of 1e5 steps or more
                         (stability, round-off) warned of and an Event ``conditioning``
    5. integrate         the chosen formulation (:mod:`.formulations`); with neither a
                         formulation nor an integrator given, the one that fits the model
                         (:func:`.stiffness.default_method`: when the linearised model is
                         stiff for the output interval projection / Radau where the compiled
                         Radau loop runs (numba, nothing of ẏ in Python), else index3 /
                         generalized-alpha, its step halved where the run's global error
                         estimate asks (:func:`_refined`, which also tightens an automatic
                         tolerance whose run is beyond its allowance); when it is not stiff, semi-recursive / DOP853
                         for joints that form an open tree (recursive beyond 64 joints deep),
                         else projection / DOP853), named
                         with its reason in the run's notes
    6. report            poses, velocities, accelerations, reactions, efforts, energy and
                         constraint violation at every output time, as a Motion
    7. check             the run's invariants against what its accuracy warrants
                         (:mod:`.invariants`): energy balance, constraint violations,
                         momentum of a free system, step count; a break is an Event
                         ``invariant`` on the Motion

Inputs are checked before anything is computed: rtol and atol in (0, 1), a step ``dt`` in
(0, span], output times finite and increasing — each a SolverError naming the setting and
its command-line flag.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ...errors import AssemblyError, SolverError
from ..kinematics import _motion, assemble
from ..motion import Event
from ..system import AngleState
from .equations import Dynamics
from .conditioning import ABSOLUTE_FORMULATIONS, check_mass, check_steps
from .contract import SCIPY_INTEGRATORS, default_dt
from .formulations import FORMULATIONS, get_formulation
from .global_error import (COMPANION_STEPS, MAX_TIGHTENINGS, REFINE_SHARE, Rerun, estimate_global_error, refinement,
                           tightening)
from .integrators import REGISTRY
from .invariants import FIXED_STEP, Accuracy, Bodies, CompliantContact, check_motion, free_system
from .mass import accelerations_to_qdd, body_state, cross, frames_state, rates_from_velocities, refuse_massless
from .outputs import CompiledFrameOutputs, FrameOutputs, lift_off_events, reactions_event
from .stiffness import OPEN_TREE_REASON, default_method
from .tree import relative_fits

__all__ = ["simulate", "run", "initial_velocities", "prepare", "check_settings", "describe_methods", "tree_formulation",
           "INTEGRATOR_SUMMARIES"]

DEFAULT_FORMULATION = "projection"
#: the formulation a model whose joints form an open tree runs when none is named (:func:`tree_formulation`), and
#: the one of a tree deeper than :data:`DEEP_TREE` joints: on an open chain of N links the semi-recursive reduced
#: mass matrix 𝐑ᵀ M̄ 𝐑 loses digits with N (DOP853 at rtol 1e-8, 0.2 s: 56 steps at N = 100, 1,418 at 150, 14,831
#: at 300), where the articulated-body algorithm of ``recursive`` never forms it (43, 56 steps at N = 100, 300)
TREE_FORMULATION, DEEP_TREE_FORMULATION, DEEP_TREE = "semi-recursive", "recursive", 64
#: the integrators named without a formulation that an open tree runs in joint coordinates (None: the default);
#: Radau is left to the absolute formulation, whose compiled Radau loop the tree has not
TREE_INTEGRATORS = (None, "DOP853", "RK4", "RK45", "RK23", "BDF", "LSODA")
#: integrator tolerances when none are given (relative; absolute in m, rad-like, m/s, rad/s)
DEFAULT_RTOL, DEFAULT_ATOL = 1e-8, 1e-10


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
    """Stages 1–4: (Dynamics, q0, v0, angles, refs); what the assembly said is
    ``Dynamics.assembly_message``."""
    dyn = Dynamics(model)
    angles = AngleState(model, model.q0)
    asm = assemble(model, model.q0, t0, angles)
    if not asm.success:
        raise AssemblyError(asm.message, where=model.spec.source or None,
                            hint="check the joint frames of the conflicting joints, "
                                 "or move the parts closer to an assembled pose")
    q0 = asm.q
    dyn.assembly_message = asm.message
    bs = body_state(model, dyn.mass, q0, np.zeros(dyn.nv))
    refs = dyn.forces.initial_refs(bs)
    ev = dyn.evaluate(q0, np.zeros(dyn.nv), t0, refs, with_gamma=False, with_forces=False)
    dyn.set_rows(ev.J, ev.bs)
    v0 = initial_velocities(dyn, q0, t0, angles, refs)
    return dyn, q0, v0, angles, refs


#: one line per integrator (``cadmotion formulations``), from the registry (:mod:`.integrators`)
INTEGRATOR_SUMMARIES = {n: i.summary for n, i in REGISTRY.items()}


def describe_methods():
    """The formulations and integrators, one line each, from the registries.

    Returns
    -------
    (formulations, integrators)
        ``formulations``: list of (name, summary, default integrator, integrators it runs);
        ``integrators``: list of (name, summary). A formulation's summary is its class
        attribute ``summary`` if it has one, else the first line of its docstring.
    """
    forms = []
    names = set()
    for name, cls in FORMULATIONS.items():
        summary = getattr(cls, "summary", None) or (cls.__doc__ or "").strip().splitlines()[0].strip()
        summary = re.sub(r"[;,]? see the module docstring", "", summary).rstrip(" .;")
        rank = {n: k for k, n in enumerate(INTEGRATOR_SUMMARIES)}
        runs = tuple(sorted(cls.integrators, key=lambda n: rank.get(n, len(rank))))
        forms.append((name, summary, cls.default_integrator, runs))
        names.update(cls.integrators)
    order = [n for n in INTEGRATOR_SUMMARIES if n in names] + sorted(names - set(INTEGRATOR_SUMMARIES))
    return forms, [(n, INTEGRATOR_SUMMARIES.get(n, "")) for n in order]


def _tolerance(name, value):
    """A tolerance: finite, in (0, 1); scalar or array (per state component)."""
    try:
        arr = np.asarray(value, float)
    except (TypeError, ValueError):
        arr = np.full(1, np.nan)
    ok = arr.size > 0 and np.all(np.isfinite(arr)) and np.all(arr > 0) and np.all(arr < 1)
    if not ok:
        floor = "; one below 100 machine epsilons (2.2e-14) is raised to that" if name == "rtol" else ""
        high = arr.size > 0 and np.all(np.isfinite(arr)) and np.all(arr > 0)
        what = "must be below 1 (and positive)" if high else "must be positive (and below 1)"
        raise SolverError(f"{name} (--{name}) = {value!r}: the tolerance {what}",
                          hint=f"e.g. --{name} 1e-8: a tolerance ≤ 0 asks for the impossible, one ≥ 1 for nothing"
                               f"{floor}")
    return value


def check_settings(times, rtol, atol, dt):
    """Raise SolverError for a tolerance outside (0, 1), a step dt outside (0, span] or output
    times that are not finite and increasing; the message names the setting and its flag."""
    _tolerance("rtol", rtol)
    _tolerance("atol", atol)
    times = np.asarray(times, float)
    if times.ndim != 1 or times.size < 1 or not np.all(np.isfinite(times)):
        raise SolverError(f"the output times must be finite numbers, got {times!r}")
    if times.size > 1 and np.any(np.diff(times) <= 0):
        raise SolverError("the output times must increase", hint="give times in increasing order, each once")
    span = float(times[-1] - times[0])
    if dt is not None:
        try:
            h = float(dt)
        except (TypeError, ValueError):
            raise SolverError(f"dt must be a positive step in seconds (--dt), got {dt!r}") from None
        if not (math.isfinite(h) and h > 0):
            raise SolverError(f"dt must be a positive step in seconds (--dt), got {dt!r}",
                              hint="e.g. --dt 1e-3; leave it out for min(output interval, 1 ms)")
        if span > 0 and h > span * (1 + 1e-12):
            raise SolverError(f"dt (--dt) = {h:g} s is larger than the span {span:g} s of the run",
                              hint=f"use a step of at most {span:g} s (leave --dt out for min(output interval, 1 ms)), "
                                   "or a longer --t-end")


def simulate(model, t_end=1.0, steps=100, *, formulation=None, integrator=None, rtol=None,
             atol=None, dt=None, t_start=0.0, options=None, times=None, estimate_error=True):
    """Forward dynamics of a mechanism under its forces (and drivers, if any).

    Parameters
    ----------
    model : :class:`~cadmotion.kernel.model.Model` (Euler parameters)
    t_end, steps : output times ``linspace(t_start, t_end, steps + 1)`` (s), unless ``times``.
    formulation : a name from :data:`FORMULATIONS`. None with ``integrator``, ``rtol``,
        ``atol`` and ``options`` all None (a tolerance asks for an error-controlled
        integrator): the method that fits the model (:func:`.stiffness.default_method`):
        ``projection`` / ``Radau`` at rtol = atol = 1e-8 where Radau runs in the compiled loop,
        else ``index3`` / ``generalized-alpha`` (step ``dt`` if given, else the estimate's),
        when the model is stiff for the output interval, else ``semi-recursive`` / ``DOP853``
        where the joints form an open tree (``recursive`` beyond :data:`DEEP_TREE` joints deep,
        :func:`tree_formulation`) and ``projection`` / ``DOP853`` where they do not; the
        choice and its reason are a note of the run. None otherwise: the same joint-coordinate
        formulation for an open tree (unless ``options`` are given, the model file sets
        ``[formulation.projection]`` or the integrator is Radau or an index-3 one), else
        ``projection``.
    integrator : ``DOP853``, ``RK45``, ``RK23``, ``Radau``, ``BDF``, ``LSODA`` or the fixed-step
        ``RK4``; for ``index3``: ``generalized-alpha`` or ``HHT``. None: the formulation's
        default (DOP853; generalized-alpha for index3). A pair the formulation does not run
        is a SolverError.
    rtol, atol : integrator tolerances on the state (m, rad-like, m/s, rad/s), each in (0, 1);
        None: 1e-8 and 1e-10 (:data:`DEFAULT_RTOL`, :data:`DEFAULT_ATOL`).
    dt : step of the fixed-step methods (s), in (0, span]; default min(output interval, 1 ms).
    options : formulation options (e.g. ``{"alpha": 5, "beta": 5}`` for ``baumgarte``).
    estimate_error : True: the run is run again at a finer setting (a tenth of the tolerances, half
        the step; a second time, finer still, where the first estimate comes near its allowance) and
        the two compared, its global error estimated from their difference and checked
        (``motion.error``, :mod:`.global_error`); False: not (a median 1.6× faster on the samples).

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
        Event ``stats`` names the formulation and integrator that ran and summarises steps
        and evaluations (:func:`run` returns the counters). Every run checks its invariants
        (:mod:`.invariants`) and its estimated global error (:mod:`.global_error`,
        ``motion.error``); each one broken beyond what the tolerance warrants is an Event
        ``invariant`` with its time and magnitude (the frames are kept: the answer is suspect).

    Raises
    ------
    MechanismError : missing or invalid mass properties, bad force elements; a mass matrix singular
        on the motion the joints allow (:mod:`.conditioning`), naming its joints.
    AssemblyError : the initial pose cannot be assembled.
    SolverError : an unknown formulation, integrator or option; a tolerance outside (0, 1);
        a step dt outside (0, span]; an atol no step can meet over the accelerations' round-off.

    Warns
    -----
    ConditioningWarning : before an error-controlled run that would take 1e5 steps or more
        (:mod:`.conditioning`), naming the motion and what to do.
    """
    return run(model, t_end, steps, formulation=formulation, integrator=integrator, rtol=rtol, atol=atol, dt=dt,
               t_start=t_start, options=options, times=times, estimate_error=estimate_error)[0]


def tree_formulation(model, dyn, model_options):
    """(formulation, reason) for a run that names no formulation where the joints form an open tree
    (:func:`.tree.relative_fits`): :data:`TREE_FORMULATION`, or :data:`DEEP_TREE_FORMULATION` for a tree
    deeper than :data:`DEEP_TREE` joints; None where they do not, or where the model file sets options
    of the absolute default (``[formulation.projection]``), which are the user's word for it."""
    if model_options.get(DEFAULT_FORMULATION):
        return None
    tree = relative_fits(model, dyn)
    if tree is None:
        return None
    if tree.depth > DEEP_TREE:
        return DEEP_TREE_FORMULATION, (f"{OPEN_TREE_REASON}; {tree.depth} joints deep, beyond {DEEP_TREE}: the "
                                       "articulated-body algorithm, which forms no reduced mass matrix")
    return TREE_FORMULATION, OPEN_TREE_REASON


def run(model, t_end=1.0, steps=100, *, formulation=None, integrator=None, rtol=None,
        atol=None, dt=None, t_start=0.0, options=None, times=None, estimate_error=True):
    """:func:`simulate`, returning (Motion, :class:`~.formulations.DynamicsResult`) (counters included).

    The result also carries ``integrator`` (the one that ran, never None), ``formulation``,
    ``rtol`` and ``atol`` (the tolerances it ran at) and ``invariants``, the
    :class:`~.invariants.InvariantReport` of the run.
    """
    if times is None:
        if steps < 1:
            raise SolverError(f"steps must be at least 1, got {steps}")
        if not t_end > t_start:
            raise SolverError(f"t_end ({t_end}) must be after t_start ({t_start})")
        times = np.linspace(t_start, t_end, int(steps) + 1)
    times = np.asarray(times, float)
    automatic = formulation is None and integrator is None and rtol is None and atol is None and not options
    model_options = formulation_options(model.spec)
    rtol = DEFAULT_RTOL if rtol is None else rtol
    atol = DEFAULT_ATOL if atol is None else atol
    check_settings(times, rtol, atol, dt)
    choice = form = tree_note = None
    where = model.spec.source or None
    if not automatic:  # the method asked for: an unknown formulation or integrator is an error before any work
        named = get_formulation(formulation or DEFAULT_FORMULATION)
        named.check_integrator(integrator or named.default_integrator)
    dyn, q0, v0, angles, refs = prepare(model, times[0])
    mass = check_mass(dyn, q0, v0, float(times[0]), refs, where=where)
    if automatic:
        # the absolute default asked whether its Radau runs compiled (not built for massless parts, which it refuses)
        form = None if dyn.mass.massless else get_formulation(DEFAULT_FORMULATION)(dyn, angles=angles, refs=refs)
        choice = default_method(dyn, q0, v0, float(times[0]), refs, times,
                                compiled_radau=form is not None and form.runs_compiled("Radau", times, rtol, atol),
                                relative=tree_formulation(model, dyn, model_options))
        formulation, integrator = choice.formulation, choice.integrator
        if formulation != DEFAULT_FORMULATION or model_options.get(formulation):
            form = None
        if dt is None and choice.dt is not None:
            dt = choice.dt
        if choice.rtol is not None:
            rtol, atol = choice.rtol, choice.atol
    elif formulation is None and not options and integrator in TREE_INTEGRATORS:
        relative = tree_formulation(model, dyn, model_options)
        if relative is not None:  # it runs every integrator of TREE_INTEGRATORS
            formulation = relative[0]
            tree_note = f"{formulation} chosen for the model: {relative[1]}"
    cls = get_formulation(formulation or DEFAULT_FORMULATION)
    integrator = integrator or cls.default_integrator
    if not cls.takes_massless:
        refuse_massless(dyn.mass, cls.name, where=where)
    slow = check_steps(dyn, q0, v0, times, refs, integrator=integrator, atol=atol,
                       absolute=cls.name in ABSOLUTE_FORMULATIONS, mass=mass,
                       estimate=choice.estimate if choice is not None else None, where=where)
    refs0, angles0 = np.array(refs, float, copy=True), angles.copy()
    form_options = {**model_options.get(cls.name, {}), **(options or {})}
    if form is None:
        form = cls(dyn, angles=angles, refs=refs, **form_options)
    result = form.solve(times, q0, v0, integrator=integrator, rtol=rtol, atol=atol, dt=dt)

    def finish(form, result, dt, tolerances=None):  # stages 6 and 7 for a solve at the step dt (s; None:
        # error-controlled) and the tolerances (rtol, atol) it ran at (None: the run's)
        if slow and not result.success and result.message:  # the failure's probable cause, as diagnosed at the start
            result.message = f"{result.message} (probably: {slow})"
        if choice is not None:
            result.notes.insert(0, f"{cls.name} / {integrator} chosen for the model: {choice.reason}")
        elif tree_note is not None:
            result.notes.insert(0, tree_note)
        result.formulation, result.integrator = cls.name, integrator
        result.rtol, result.atol = (rtol, atol) if tolerances is None else tolerances
        if integrator in FIXED_STEP:
            result.dt = float(dt) if dt is not None else default_dt(times)
        motion = to_motion(dyn, result, formulation=cls.name, integrator=integrator,
                           fast=getattr(form, "_fast", None))
        if dyn.assembly_message:  # as the kinematics reports it
            motion.events.insert(0, Event("assembly", float(times[0]), dyn.assembly_message))
        if slow:  # the warning of :func:`.conditioning.check_steps`, kept with the run
            motion.events.append(Event("conditioning", float(times[0]), slow))
        penalty = None
        if cls.name == "penalty" and getattr(form, "alpha", 0) > 0:
            penalty = (form.alpha, form.options.get("omega", 10.0), form.options.get("xi", 1.0))
        checks = check_run(dyn, motion, result, formulation=cls.name, integrator=integrator, rtol=result.rtol,
                           atol=result.atol, dt=dt, penalty=penalty,
                           stability_steps=lambda: _stability_steps(dyn, q0, v0, times, refs0))
        return motion, checks

    motion, checks = finish(form, result, dt)
    if estimate_error:
        def make_form(factor):  # afresh at the initial state, its own approximation factor times finer
            return cls(dyn, angles=angles0.copy(), refs=refs0.copy(), **{**form_options, **form.finer_options(factor)})

        rerun = Rerun(model, make_form, form.finer_options, times, q0, v0, integrator)
        bodies = Bodies.of(dyn)
        estimate_global_error(checks, rerun, result, motion, bodies)
        if choice is not None:  # an automatic step or tolerance answers for its own accuracy
            motion, result, checks = _refined(rerun, finish, bodies, (motion, result, checks))
    else:
        checks.skipped.append("motion.error: not asked for (estimate_error=False)")
    result.invariants = checks
    motion.events.extend(checks.events())
    return motion, result


def _refined(rerun, finish, bodies, ran):
    """(motion, result, checks) of an automatic run (``ran``, with its ``motion.error``) at the setting its estimate
    asks for. A fixed step is halved until the estimate comes within :data:`.global_error.REFINE_SHARE` of its
    allowance (:func:`.global_error.refinement`); the tolerances of an error-controlled run beyond its allowance are
    tightened by factors of ten for it to come within that share (:func:`.global_error.tightening`). Each finer run
    is the companion already run at that setting where there is one (:meth:`.global_error.Rerun.solve`).
    ``finish(form, result, dt, tolerances)`` makes a solve's motion and checks. The result's notes say how far the
    setting was taken, and why."""
    motion, result, checks = ran
    fixed = REGISTRY[rerun.integrator].fixed_step
    first, finer_by, said = _setting(result, fixed), 0, []
    while True:
        estimate = next((c for c in checks.checks if c.name == "motion.error"), None)
        if estimate is None:
            break
        more = refinement(estimate, rerun.integrator, finer_by) if fixed else tightening(estimate, finer_by)
        if not more:
            break
        said.append(f"{estimate.max_drift / estimate.allowed:.2g} of its allowance at {_setting(result, fixed)}")
        companion = rerun.companion(result, more)
        form, finer = rerun.solve(companion, max_steps=COMPANION_STEPS * max(result.nsteps, 100))
        if not finer.success:  # the setting as it was, with its estimate (a finer run may not cost beyond a companion)
            said.append(f"the run at {companion.how} stopped: {finer.message}")
            break
        finer_by += more
        result = finer
        motion, checks = finish(form, result, companion.dt, None if fixed else (companion.rtol, companion.atol))
        estimate_global_error(checks, rerun, result, motion, bodies)
    if said and fixed:
        result.notes.append(f"the automatic step {first} halved {finer_by} time(s) to {_setting(result, fixed)}: "
                            f"the global error estimated {'; '.join(said)} (an automatic step is kept within "
                            f"{REFINE_SHARE:.2g} of it)")
    elif said:
        result.notes.append(f"the automatic tolerance {first} tightened {finer_by} time(s) tenfold to "
                            f"{_setting(result, fixed)}: the global error estimated {'; '.join(said)} (an automatic "
                            f"tolerance whose run is beyond its allowance is tightened toward {REFINE_SHARE:.2g} of "
                            f"it, at most {MAX_TIGHTENINGS} times)")
    return motion, result, checks


def _setting(result, fixed):
    """A run's setting in words: its step (fixed-step methods) or the tolerances it ran at."""
    if fixed:
        return f"{result.dt:.3g} s"
    rtol, atol = result.ran_tolerances(result.rtol, result.atol)
    return f"rtol {float(np.max(rtol)):.3g}"


def formulation_options(spec):
    """{formulation name: {option: value}} from the model file's ``[formulation.<name>]`` tables
    (setting ``formulation.options``): the options a run of that formulation starts from (the
    caller's ``options`` override them key by key). A name that is not a formulation is a
    SolverError naming the model; the formulation checks its keys when it is built."""
    out = {}
    for name, items in spec.setting("formulation.options", ()):
        if name not in FORMULATIONS:
            raise SolverError(f"[formulation.{name}]: there is no formulation {name!r}",
                              where=spec.source or None, hint=f"formulations: {', '.join(FORMULATIONS)}")
        out[name] = dict(items)
    return out


#: formulations whose constraints hold only approximately (their reactions may work through the
#: velocity violation, see :mod:`.invariants`)
APPROXIMATE_CONSTRAINTS = ("baumgarte", "penalty", "augmented-lagrangian", "recursive")


def check_run(dyn, motion, result, *, formulation, integrator, rtol, atol, dt=None, penalty=None,
              stability_steps=None):
    """Stage 7: the :class:`~.invariants.InvariantReport` of a run (see :mod:`.invariants`).

    The tolerances are those the integrator ran with (``result.loop_tol``: closed loops may have
    tightened them); the step count includes the singular-configuration crossings' index-3 steps.
    """
    rtol_run, atol_run = result.ran_tolerances(rtol, atol)
    # the compliant contacts' step limit (:meth:`.contract.Formulation._step_limit`): scipy's methods take it as
    # max_step after every step (LSODA by being made again where it halves or doubles), the compiled DOP853 loop
    # too, the compiled Radau loop not
    loop = result.compiled_loop
    limited = integrator in SCIPY_INTEGRATORS and not (integrator == "Radau" and loop)
    acc = Accuracy(integrator=integrator, rtol=float(np.max(rtol_run)), atol=float(np.max(atol_run)),
                   nsteps=int(result.nsteps), nstate=dyn.nq + dyn.nv + 1, ncon=int(dyn.nc), dt=dt,
                   crossing_steps=result.crossing_steps, contact_limit=limited, restarts=result.restarts)
    spec = dyn.model.spec
    free, why = free_system(spec)
    cc = dyn.forces.contact_constraints
    return check_motion(motion, acc, bodies=Bodies.of(dyn), gravity=spec.gravity, free=free, why_not_free=why,
                        approximate_constraints=formulation in APPROXIMATE_CONSTRAINTS, penalty=penalty,
                        stability_steps=stability_steps, cones=() if cc is None else cc.friction_cones(),
                        contacts=compliant_contacts(dyn, result, motion.nt),
                        modes=_frame_modes(dyn, result, motion) if acc.fixed_step else None)


def _frame_modes(dyn, result, motion):
    """The linearised modes at an output frame (:func:`.stiffness.modes`), for the fixed-step runs' ``steps.error``:
    a callable (k) -> (ω, c, P) as :func:`.stiffness.modes` returns them, None at a frame whose state is not finite
    or where they cannot be had; None for a model without force elements (no mode but the motion's own) or too large
    to have them densely."""
    from .stiffness import MAX_DOF, modes

    if dyn.forces.empty or not 0 < dyn.nv - len(dyn.rows) <= MAX_DOF:
        return None

    def at(k):
        q, v = result.q[k], result.v[k]
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
            return None
        try:
            return modes(dyn, q, v, float(motion.time[k]), result.refs[k])
        except (np.linalg.LinAlgError, ValueError, ArithmeticError):
            return None
    return at


def compliant_contacts(dyn, result, nt):
    """:class:`~.invariants.CompliantContact` of each compliant joint stop (:func:`_stop_contacts`) and each
    compliant contact over the first ``nt`` frames of ``result``: a contact's depth δ of its deepest point
    (< 0: the gap) and the largest |δ̇| over its points, from the contact geometry at each frame's state
    (:meth:`.contacts.Contacts.geometry`)."""
    contacts, stops = dyn.forces.contacts, dyn.forces.stops
    has_contacts, has_stops = contacts is not None and contacts.n > 0, stops is not None and stops.n > 0
    if nt < 1 or not (has_contacts or has_stops):
        return ()
    frames = [body_state(dyn.model, dyn.mass, result.q[k], result.v[k]) for k in range(nt)]
    out = list(_stop_contacts(stops, frames)) if has_stops else []
    if not has_contacts:
        return tuple(out)
    nc = len(contacts.names)
    depth, speed = np.full((nt, nc), -np.inf), np.zeros((nt, nc))
    for k, bs in enumerate(frames):
        _, delta, _, dd, _ = contacts.geometry(bs)
        np.maximum.at(depth[k], contacts.owner, delta)
        np.maximum.at(speed[k], contacts.owner, np.abs(dd))
    for i, name in enumerate(contacts.names):
        own = contacts.owner == i
        out.append(CompliantContact(name, float(np.min(contacts.m_eff[own])), float(np.max(contacts.k[own])),
                                    float(np.max(contacts.exp[own])), depth[:, i], speed[:, i]))
    return tuple(out)


def _stop_contacts(stops, frames):
    """:class:`~.invariants.CompliantContact` of each compliant joint stop (:mod:`.stops`) over the frames' body states
    ``frames``, a contact of the joint's coordinate: its depth the penetration past the nearer limit (rad or m, < 0
    inside the range), its speed |q̇|, its mass the pair's effective inertia or mass along the coordinate. Without
    them the checks charged the steps inside a stop at the flight's rate (accurate runs through a stiff stop flagged
    ``steps``) and never asked whether a fixed step resolves the stop (``steps.resolution``)."""
    depth, speed = np.zeros((len(frames), stops.n)), np.zeros((len(frames), stops.n))
    state = None
    for k, bs in enumerate(frames):
        if state is None:  # the first frame is the initial pose: the angles' references (0 there)
            state = np.zeros(2 * stops.n)
            state[: stops.n] = stops.coordinates(bs, state)[4]
        q, qd, *_ = stops.coordinates(bs, state)
        stops.accept(bs, state)  # the angles continued over turns, frame to frame
        depth[k] = np.maximum(stops.lo - q, q - stops.hi)
        speed[k] = np.abs(qd)
    return tuple(CompliantContact(f"limit of joint {name!r}", float(stops.m_eff[i]), float(stops.k[i]),
                                  float(stops.exp[i]), depth[:, i], speed[:, i])
                 for i, name in enumerate(stops.prefixes))


def _stability_steps(dyn, q0, v0, times, refs0):
    """Steps an explicit method needs for stability alone (:mod:`.stiffness`), 0 if unknown."""
    from .stiffness import stiffness_estimate

    try:
        return stiffness_estimate(dyn, q0, v0, float(times[0]), refs0, times).explicit_steps
    except (np.linalg.LinAlgError, ValueError, ArithmeticError):
        return 0.0


def _ran(result, integrator):
    """How the integrator ran, e.g. ``DOP853 (compiled loop)``."""
    return f"{integrator} (compiled loop)" if result.compiled_loop else integrator


def to_motion(dyn, result, formulation="", integrator="", fast=None):
    """Stage 6: a Motion (with the extra series) from a :class:`~.formulations.DynamicsResult`;
    its frames' outputs from the compiled library when the run had it (``fast``, a
    :class:`~.fast.FastRHS`), else from the numpy equations."""
    model = dyn.model
    nt = len(result.t)
    out = CompiledFrameOutputs(dyn, fast) if fast is not None and fast.frames else FrameOutputs(dyn)
    Qd = np.zeros((nt, dyn.nq))
    Qdd = np.zeros((nt, dyn.nq))
    measures = np.zeros((nt, len(model.joint_measures)))
    VD, deferred = np.zeros((nt, dyn.nv)), []
    done = nt
    message = result.message
    for k in range(nt):
        q, v = result.q[k], result.v[k]
        try:
            vd, qdd = out.add(result.t[k], q, v, result.work[k], result.angles[k], result.refs[k])
        except np.linalg.LinAlgError:
            done = k
            message = message or f"the equations of motion are singular at t = {result.t[k]:.6g} s"
            break
        if qdd is not None:
            Qdd[k] = qdd
        else:  # (the compiled outputs' frames: q̈ below, for all of them at once)
            deferred.append(k)
            VD[k] = vd
        measures[k] = result.measures[k]
    Q, V = result.q[:done], result.v[:done]
    Qd[:done] = rates_from_velocities(frames_state(dyn.mass, Q), V, dyn.nmov)
    if deferred:  # at unit Euler parameters, as the equations of the frame evaluated them
        Qdd[deferred] = accelerations_to_qdd(frames_state(dyn.mass, Q[deferred], normalise=True), V[deferred],
                                             VD[deferred], dyn.nmov)
    events = []
    ev = reactions_event(dyn, result.t[0] if nt else 0.0, out.not_unique)
    if ev is not None:
        events.append(ev)
    complete = result.success and done == nt
    events.extend(getattr(result, "events", ()))
    if not complete and result.t_fail is not None:
        events.append(Event("failed", float(result.t_fail), message))
    crossed = f", {result.crossings} singular-configuration crossing(s) by index-3 steps" if result.crossings else ""
    events.append(Event("stats", float(result.t[-1]) if nt else 0.0,
                        f"{formulation} / {_ran(result, integrator)}: {result.nsteps} steps, {result.nfev} "
                        f"evaluations, {result.nfactor} factorisations, {result.nproject} projections{crossed}"))
    motion = _motion(model, result.t[:done], result.q[:done], Qd[:done], Qdd[:done], measures[:done], events)
    # joint angles: continuous over turns from the integration (np.unwrap cannot know between coarse frames)
    from ..motion import JointCoordinate

    motion.joint_coordinates = [JointCoordinate(jc.joint, jc.kind, measures[:done, n])
                                for n, jc in enumerate(motion.joint_coordinates)]
    extra = out.extra()
    motion.extra.update({k: v[:done] for k, v in extra.items()})
    motion.events.extend(lift_off_events(dyn, motion.time, motion.extra, motion))
    if not complete:
        motion = motion.truncated(done, message or "the run stopped early")
    return motion
