"""The solver contract of the forward-dynamics formulations, and the integrator driver.

Every formulation integrates the constrained equations of motion of :mod:`.equations`

    M v̇ + Jvᵀ λ = f(q, v, t),    Φ(q, t) = 0,    q̇ = B(q) v

from consistent (q0, v0) and reports the coordinates, velocities and non-conservative
work at the output times (the formulations themselves: :mod:`.formulations`,
:mod:`.partitioning`, :mod:`.index3`).

ODE formulations run with scipy's ``RK23``, ``RK45``, ``DOP853``, ``Radau``, ``BDF``,
``LSODA`` (error control ``rtol``/``atol`` on the state) or the fixed-step classical
``RK4`` (step ``dt``, shorter where a part would turn by a quarter turn in it:
:data:`.integrators.ROTATION_PER_STEP`, as every error-controlled step). Projection of the integrator state
after steps is applied with the one-step methods (RK*,
DOP853, Radau); the multistep ones (BDF, LSODA) keep their history and only the output frames
are projected.

Singular configurations (mechanisms with closed loops only: a tree's Jacobian cannot lose
rank). Near one the index-1 equations are ill-conditioned and a projection at a slightly wrong
position can put the motion on a neighbouring branch (the IFToMM N-four-bar lost its energy
that way at tight tolerances). The driver watches the measure of
:meth:`.equations.Dynamics.singularity` at every accepted step and at probes inside it; where a
singular configuration is near or strided over, :meth:`Formulation._cross_singular` crosses it
on the index-3 equations with the fifth-order BDF of :mod:`.crossing` (generalised-α where
that fails) and hands back; the run's notes list the crossings.

``projection``, ``baumgarte``, ``penalty`` and ``augmented-lagrangian`` take the options
``fast`` (default True: the compiled right-hand side of :mod:`.fast` when numba is available;
the penalty matrix is then solved in Schur-complement form, (S + I/α) λ = Jv M⁻¹ f + r with
S = Jv M⁻¹ Jvᵀ in band storage, which gives the same v̇ by the Woodbury identity and keeps the
cost linear in a chain's length) and ``compiled_loop`` (default True:
with ``DOP853``, ``Radau`` or ``RK4``, the whole integration loop — steps, step-size control, dense
output, projections, angle bookkeeping and the watch for singular configurations — runs compiled
(:mod:`._dop853`, :mod:`._radau`, :mod:`._rk4`) when nothing in ẏ is evaluated in Python (drivers'
time functions and torque/force expressions are compiled). The compiled DOP853 loop is scipy's
DOP853 (same coefficients, initial step, error norm and step-size control), so it takes the same
steps up to round-off and the results are those of the scipy driver; the compiled RK4 loop takes
the steps of the Python one (:meth:`Formulation._run_rk4`).
With ``fast``, a mechanism whose joints hold it in a plane normal to a world axis is solved in
that plane (option ``planar``, default True; :mod:`.planar`): the compiled evaluations take only
the in-plane constraint rows, with each part's inverse mass seen through the plane — the same
motion, with S factored over 2 rows per revolute joint instead of 5.

Contract (subclasses of :class:`Formulation`, like scipy's ``OdeSolver``)
------------------------------------------------------------------------
``name``                  registry key.
``defaults``              option name -> default value (options are keyword arguments).
``__init__(dyn, *, angles, refs, **options)``
                          ``dyn`` a :class:`~.equations.Dynamics` with its independent rows
                          set, ``angles`` the kernel :class:`~cadmotion.kernel.system.AngleState`
                          and ``refs`` the force elements' angle references (both mutated as
                          steps are accepted).
``solve(times, q0, v0, *, integrator, rtol, atol, dt, max_steps) -> DynamicsResult``
                          q0, v0 consistent. ``times[0]`` is the initial time. Never raises
                          for a numerical failure: returns ``success=False`` with the frames
                          computed so far and a message naming the time. ``max_steps``
                          (None: no limit) is a budget of the accepted steps of the Python
                          and scipy loops: past it the run stops the same way. A compiled
                          loop, which integrates a span in one call at microseconds a step,
                          is not cut (its steps are counted, the work is done).
ODE formulations implement ``initial_state(t, q, v) -> y``, ``rhs(t, y) -> ẏ``,
``accept(t, y) -> y or None`` (after each accepted step; may return a corrected state)
and ``unpack(t, y) -> (q, v, work)``; the base class ``solve`` drives the integrators.
The last state component is always the non-conservative work W (J), Ẇ = P_nc.
An index-1 formulation opts in to the compiled loops by the option ``compiled_loop``;
its ``accept`` must then be what the loop does in compiled code: the angle bookkeeping,
then the projection given by ``_step_projection() -> (tol, max_iter) or None``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import List

import numpy as np

from ...errors import SolverError
from .failures import _Failure
from .integrators import REGISTRY, fixed_step, rotation_step_limit
from .integrators import names as integrator_names

__all__ = ["Formulation", "DynamicsResult", "INTEGRATORS", "SCIPY_INTEGRATORS", "INDEX3_INTEGRATORS"]

#: the integrators by family (:mod:`.integrators`): scipy's error-controlled OdeSolvers, the index-1
#: ones (those and the fixed-step RK4), the index-3 Newton methods
SCIPY_INTEGRATORS = integrator_names(family="scipy")
INTEGRATORS = SCIPY_INTEGRATORS + integrator_names(family="fixed")
INDEX3_INTEGRATORS = integrator_names(family="index3")
#: the integrators with a compiled loop (:mod:`._dop853`, :mod:`._radau`, :mod:`._rk4`)
COMPILED_LOOPS = ("DOP853", "Radau", "RK4")
#: the formulations that hand the accepted velocities to the contacts (their impact speeds)
_CONTACT_STATE_FORMULATIONS = ("projection", "baumgarte", "penalty", "augmented-lagrangian")

#: a singular configuration is near when the measure of :meth:`.equations.Dynamics.singularity`
#: (about the square of the smallest relative singular value of Jv) falls below
#: sqrt(tol) clipped to [SINGULAR_ZONE, SINGULAR_ZONE_MAX]: a looser tolerance leaves the
#: positions less determined, so the zone where they may fall on a neighbouring branch is wider
SINGULAR_ZONE = 1e-4
SINGULAR_ZONE_MAX = 1e-2
#: with closed loops, rtol and atol looser than this are tightened to it: a longer step can
#: stride over a singular configuration between the probes of :func:`._dop853.strides_singular`
#: and land on a neighbouring branch (the N-four-bar at rtol = atol = 1e-6 did)
LOOP_TOL = 1e-8
#: the crossing ends when the pivot ratio is back above SINGULAR_ZONE times this
SINGULAR_EXIT = 4.0
#: scipy's loop: an evaluation that fails inside a step (no Newton convergence, a singular
#: matrix at a trial stage) rejects the step; it is tried again from the last accepted state at a
#: quarter of its length, at most this many times in a row before the run stops
MAX_STEP_RETRIES = 8
#: the fallback crossing (:meth:`Formulation._cross_alpha`): generalised-α steps per chunk
#: (the pivot ratio is checked between chunks)
CROSSING_CHUNK = 16
#: crossing step h = CROSSING_STEP · sqrt(tol) s (second order: the error over a zone of
#: duration T is about h² T times the motion's third derivative, below tol for A02)
CROSSING_STEP = 3.0
#: a chunk whose Newton iteration fails is tried again this many times, each with its steps
#: shortened by CROSSING_RETRY_FACTOR
CROSSING_RETRIES = 3
CROSSING_RETRY_FACTOR = 0.77
#: and at most this (s): the index3 formulation's own default step
CROSSING_MAX_STEP = 1e-3
#: the crossing's Newton tolerance on the position corrections (m): near a singular
#: configuration a looser position leaves the branch undetermined, a tighter one is below
#: the round-off of the iteration matrix's 1/(βh²) scaling at the short steps of tight tolerances
CROSSING_NEWTON_TOL = 1e-10
#: the BDF crossing's constant step h = CROSSING_BDF_STEP · tol^(1/5) s (fifth order: the error
#: over the passage is about (ω h)^5 for a motion of angular frequency ω, below tol for A02)
CROSSING_BDF_STEP = 0.1
#: its Newton tolerance on the positions: CROSSING_BDF_NEWTON · tol, at least CROSSING_BDF_NEWTON_MIN m
CROSSING_BDF_NEWTON = 1e-2
CROSSING_BDF_NEWTON_MIN = 1e-14
#: the states before the crossing that start the BDF are integrated at this fraction of tol
CROSSING_BDF_HISTORY = 1e-2
#: a crossing hands back after this many steps even inside the zone (the run goes on, and
#: crosses again if it is still there)
CROSSING_MAX_STEPS = 20000
#: and at most this many Newton iterations a step (the first step also removes the drift the
#: index-1 formulation left, e.g. Baumgarte's, which converges slowly near the singular configuration)
CROSSING_NEWTON_ITER = 40


def step_too_large(dt):
    """The hint a fixed-step run's failure carries: its step ``dt`` (s) may be beyond the stability of the model's
    fastest motion (a fingertip of 1e-12 kg m² on a joint), and what to do."""
    return (f" (the step dt = {dt:.3g} s may be too large for this model's fastest motion, or the model is unstable: "
            "use a smaller dt, or an error-controlled integrator, Radau for a stiff model)")


@dataclass
class DynamicsResult:
    """The output of :meth:`Formulation.solve`.

    Attributes
    ----------
    t : ndarray (nt,) output times reached, s
    q : ndarray (nt, nq) coordinates
    v : ndarray (nt, nv) velocities [v_c, ω] per moving body
    work : ndarray (nt,) non-conservative work since t0, J
    angles, refs : per output frame, the winding state (kernel angles, force angles)
    measures : ndarray (nt, n_measures) joint coordinates, angles continuous over turns
    success : False if the run stopped early; ``message`` and ``t_fail`` say why and when
    nfev : right-hand side (or residual) evaluations; ``nsteps`` accepted steps;
    nfactor : matrix factorisations of the evaluations and projections (the compiled
              path counts one per evaluation, not those inside its projections);
              ``nproject`` projections applied
    notes : remarks on the run (e.g. "DOP853 in the compiled loop"), for people: code reads the fields below
    compiled_loop : True where the integration ran (or went on) in a compiled loop
    loop_tol : the tolerance rtol and atol were capped at because the model has closed loops, None if not
    crossings, crossing_steps : singular configurations crossed by index-3 steps, and those index-3 steps
    restarts : restarts of the integrator at the unilateral contacts' switches (:mod:`.hybrid`)
    dt : the step asked of a fixed-step integrator (s; the run may halve it), None for an
         adaptive one (set by :func:`.forward.run`)
    rtol, atol : the tolerances the run was given (set by :func:`.forward.run`; the automatic
         choice may pick its own)
    """

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    work: np.ndarray
    angles: list
    refs: list
    measures: np.ndarray = None
    success: bool = True
    message: str = ""
    t_fail: float = None
    nfev: int = 0
    nsteps: int = 0
    nfactor: int = 0
    nproject: int = 0
    notes: List[str] = field(default_factory=list)
    compiled_loop: bool = False
    loop_tol: float = None
    crossings: int = 0
    crossing_steps: int = 0
    restarts: int = 0
    dt: float = None
    rtol: float = None
    atol: float = None
    #: Events of the run itself (impacts and contact switches of unilateral contacts), in time order
    events: list = field(default_factory=list)

    def ran_tolerances(self, rtol, atol):
        """(rtol, atol) as the integrator ran them, given those it was asked for: capped at :attr:`loop_tol` where
        closed loops tightened them."""
        if self.loop_tol is None:
            return rtol, atol
        return np.minimum(rtol, self.loop_tol), np.minimum(atol, self.loop_tol)


def _check_option(formulation, key, default, value):
    """An option's value of the kind of its default (a boolean for a switch, a number for a number,
    a string or a boolean for a choice — index3's ``project_velocities`` is "output", "state" or
    False; a default of None takes any); a SolverError naming both otherwise."""
    if default is None or value is None:
        return
    boolean = isinstance(value, (bool, np.bool_))
    if isinstance(default, bool):
        ok = boolean
    elif isinstance(default, (int, float)):
        ok = isinstance(value, (int, float, np.integer, np.floating)) and not boolean
    else:
        ok = isinstance(value, type(default)) or boolean
    if not ok:
        raise SolverError(f"formulation {formulation!r}: option {key!r} must be like its default {default!r}, "
                          f"got {value!r}")


class Formulation:
    """Base class of the formulations; see the module docstring for the contract."""

    name = ""
    defaults = {}
    #: True where the formulation takes massless parts that its joints carry (:func:`.mass.refuse_massless`)
    takes_massless = False
    #: the integrators this formulation runs; another is an error, never a substitution
    integrators = INTEGRATORS
    #: the integrator used when none is named
    default_integrator = "DOP853"
    #: the index-3 Formulation class whose Newton iteration crosses singular configurations
    #: (:meth:`_cross_singular`: BDF steps, generalised-α as the fallback); set by each family
    #: that crosses them, so that this contract module never imports a formulation built on it
    crossing_formulation = None

    def finer_options(self, factor):
        """The options that make this formulation's own approximation of the equations ``factor`` times finer,
        beside the integrator's tolerance (for the companion run of :mod:`.global_error`): none for a formulation
        that holds the equations to the tolerance (the base class)."""
        return {}

    def __init__(self, dyn, *, angles, refs, **options):
        unknown = sorted(set(options) - set(self.defaults))
        if unknown:
            raise SolverError(f"formulation {self.name!r} has no option(s) {', '.join(unknown)}",
                              hint=f"options: {', '.join(self.defaults) or '(none)'}")
        for key, value in options.items():
            _check_option(self.name, key, self.defaults[key], value)
        self.options = {**self.defaults, **options}
        contacts = dyn.forces.contacts
        if contacts is not None and contacts.stateful and self.name not in _CONTACT_STATE_FORMULATIONS:
            names = sorted({contacts.names[i] for i in contacts.owner[contacts.from_restitution]})
            raise SolverError(f"formulation {self.name!r} does not record the impact speeds that contact(s) "
                              f"{', '.join(map(repr, names))} given by `restitution` need",
                              hint=f"use formulation {', '.join(_CONTACT_STATE_FORMULATIONS)}, or give those "
                                   "contacts `damping` (Hunt–Crossley λ) instead of `restitution`")
        if dyn.forces.contact_constraints is not None:
            dyn.forces.contact_constraints.check_formulation(self.name)
        if dyn.forces.stops is not None and self.name not in _CONTACT_STATE_FORMULATIONS:
            raise SolverError(f"formulation {self.name!r} does not record the impact speeds that the stops of "
                              f"joint(s) {', '.join(map(repr, sorted(set(dyn.forces.stops.names))))} need",
                              hint=f"use formulation {', '.join(_CONTACT_STATE_FORMULATIONS)}")
        self.dyn = dyn
        self.model = dyn.model
        self.system = dyn.system
        self.angles = angles
        self.refs = refs
        self.nq, self.nv = dyn.nq, dyn.nv
        self._angle_groups = any(g.n_angles for g in self.model.groups)
        self.nfev = 0
        self.nfactor = 0
        self.nproject = 0

    @classmethod
    def check_integrator(cls, integrator):
        """Raise SolverError unless this formulation runs ``integrator``."""
        if integrator not in cls.integrators:
            known = integrator in INTEGRATORS + INDEX3_INTEGRATORS
            raise SolverError(f"formulation {cls.name!r} does not run the integrator {integrator!r}" if known
                              else f"unknown integrator {integrator!r} for formulation {cls.name!r}",
                              hint=f"use one of {', '.join(cls.integrators)} (see `cadmotion formulations`)")

    # ------------------------------------------------------------------ ODE contract
    def initial_state(self, t, q, v):
        """The integrator state y at time t (s) of consistent coordinates q, shape (nq,), and
        velocities v, shape (nv,) (m/s and rad/s, world frame); its last component is W = 0 J."""
        raise NotImplementedError

    def rhs(self, t, y):
        """ẏ = dy/dt at time t (s): the equations of motion in the formulation's state (last: Ẇ = P_nc, W)."""
        raise NotImplementedError

    def accept(self, t, y):
        """Called after every accepted step; returns a corrected state or None."""
        return None

    def unpack(self, t, y):
        """(q, v, W) of the state y: coordinates, shape (nq,), velocities, shape (nv,), and the
        non-conservative work W (J)."""
        raise NotImplementedError

    def output_state(self, t, y):
        """The state written to an output frame (projection formulations project it)."""
        return y

    def _measure_kinds(self):
        if not hasattr(self, "_is_angle"):
            self._is_angle = np.array([kind == "angle" for _, kind, _, _ in self.model.joint_measures], bool)
            self._meas_ref = None
        return self._is_angle

    def continuous_measures(self, q, update=False, raw=None):
        """Joint coordinates at q with angles continuous from the last accepted step."""
        is_angle = self._measure_kinds()
        if raw is None:
            raw = self.system.joint_measures(q)
        if self._meas_ref is None:
            self._meas_ref = raw.copy()
        ref = self._meas_ref
        out = np.where(is_angle, raw + 2 * np.pi * np.round((ref - raw) / (2 * np.pi)), raw)
        if update:
            self._meas_ref = out
        return out

    def _fast_aux(self, y):
        """The compiled rhs's by-products if its last call was at exactly this state."""
        last = getattr(self, "_last", None)
        if self._fast is not None and last is not None and last[0] is y and last[1] is None:
            return self._fast.aux
        return None

    _fast = None
    _rows_changed = False  # the last :meth:`_choose_rows` chose other rows

    def _choose_rows(self, t, y):
        """At an accepted state (or one a run starts from) on the compiled right-hand side: the
        redundant rows its evaluations drop until the next one (:meth:`.fast.FastRHS.choose_rows`;
        redundant rows close loops: without, there is nothing to choose). True if they changed:
        ẏ at y, evaluated before, then belongs to the rows of the step before."""
        self._rows_changed = self._fast is not None and self.dyn.has_loops and self._fast.choose_rows(t, y)
        return self._rows_changed

    def _update_windings(self, q, bs=None, aux=None, v=None):
        """Bookkeeping at an accepted state: angles continuous over turns and, given the
        velocities ``v`` (nv,), the contacts' impact speeds."""
        if self._angle_groups:
            self.system.accept(q, self.angles)
        if len(self.model.joint_measures):
            self.continuous_measures(q, update=True, raw=None if aux is None else aux[3:])
        if self.dyn.forces.needs_refs:
            if bs is None:
                from .mass import body_state

                bs = body_state(self.model, self.dyn.mass, q, np.zeros(self.nv) if v is None else v)
            self.dyn.forces.accept(bs, self.refs, velocities=v is not None)

    def _step_limit(self, t, y):
        """The largest step (s) of an error-controlled integrator from the state y: no part turns
        by more than :data:`.integrators.ROTATION_PER_STEP` relative to another (the windings of
        the angles), and no step strides over a declared contact (:mod:`.contacts`)."""
        q, v, _ = self.unpack(t, y)
        limit = rotation_step_limit(v)
        if not self.dyn.forces.unilateral:
            return limit
        from .mass import body_state

        bs = body_state(self.model, self.dyn.mass, q, v)
        return min(limit, self.dyn.forces.step_limit(bs, self.refs))

    # ------------------------------------------------------------------ driver
    def solve(self, times, q0, v0, *, integrator="DOP853", rtol=1e-8, atol=1e-10, dt=None, max_steps=None):
        """Integrate from (q0, v0) at times[0] and report at every time (see the contract); ``max_steps``: a
        budget of accepted steps, past which the run stops (unsuccessful, its frames so far kept)."""
        self.check_integrator(integrator)
        times = np.asarray(times, float)
        nt = len(times)
        rec = _Recorder(self, nt, max_steps)
        if self.dyn.has_loops and max(np.max(rtol), np.max(atol)) > LOOP_TOL:
            rtol, atol = np.minimum(rtol, LOOP_TOL), np.minimum(atol, LOOP_TOL)
            rec.loop_tol = LOOP_TOL
            rec.notes.append(f"tolerances tightened to {LOOP_TOL:g}: with closed loops a looser step can stride over "
                             "a singular configuration")
        self.rtol, self.atol = rtol, atol
        self.crossings = []
        # the last step judged by _strides_singular: its end (s), last interior probe and length (s)
        self._probes_before = (np.nan, -1.0, 0.0)
        # (accepted steps under the compiled DOP853/RK4 loops' singular-configuration watch, those
        # of them whose interior probes were evaluated: :func:`._dop853.probe_step`)
        self.probed_steps = (0, 0)
        contacts = self.dyn.forces.contacts
        if contacts is not None:
            side = "compiled" if self._fast is not None else "numpy"
            rec.notes.append(f"{len(contacts.names)} contact(s) evaluated in the {side} right-hand side"
                             + ("; steps limited so that no contact is stepped over"
                                if integrator in SCIPY_INTEGRATORS else ""))
        reduction = getattr(self._fast, "reduction", None)
        if reduction is not None:
            rec.notes.append(f"held in a plane by its joints: solved in the plane normal to {'xyz'[reduction.axis]} "
                             f"({len(reduction.rows)} of {self.dyn.nc} constraint rows; option planar)")
        stops = self.dyn.forces.stops
        if stops is not None:
            rec.notes.append(f"joint limits act as compliant stops on {len(stops.names)} coordinate(s) "
                             f"({', '.join(stops.prefixes)}), evaluated in the numpy right-hand side"
                             + ("; steps limited so that no stop is stepped over"
                                if integrator in SCIPY_INTEGRATORS else ""))
        y = self.initial_state(times[0], q0, v0)
        self._choose_rows(times[0], y)
        driver = None
        if self.dyn.forces.contact_constraints is not None:
            from .hybrid import EventDriver

            driver = EventDriver(self, rec, rtol, atol)
            try:
                y = driver.start(times[0], y)
            except _Stop:
                return rec.result(self)
        rec.record(times[0], y)
        late = None
        if driver is None and self._fast is None and self._fast_pending is not None:
            from .late_compiled import LateSwitch

            late = LateSwitch(self, times, integrator, rtol, atol)
        try:
            try:
                if driver is not None:
                    driver.run(times, y, integrator)
                elif self.runs_compiled(integrator, times, rtol, atol):
                    self._run_compiled(times, y, rec, rtol, atol, integrator, dt)
                elif integrator == "RK4":
                    self._run_rk4(times, y, rec, dt, late)
                else:
                    self._run_scipy(times, y, rec, integrator, rtol, atol, late)
            except _Switch as switch:  # the compiled library became ready: on from an accepted state
                rest = np.concatenate([[switch.t], times[switch.k:]])
                if self.runs_compiled(integrator, rest, rtol, atol):
                    rec.notes.append(f"numpy right-hand side to t = {switch.t:.6g} s, compiled from there on (its "
                                     "library became ready during the run)")
                    self._run_compiled(rest, switch.y, rec, rtol, atol, integrator, dt if dt else default_dt(times))
                else:  # no compiled loop of this integrator: its own loop, restarted on the compiled right-hand side
                    rec.notes.append(f"numpy right-hand side to t = {switch.t:.6g} s, compiled from there on in "
                                     f"{integrator}'s loop (its library became ready during the run)")
                    if integrator == "RK4":
                        self._run_rk4(rest, switch.y, rec, dt if dt else default_dt(times))
                    else:
                        self._run_scipy(rest, switch.y, rec, integrator, rtol, atol)
        except _Stop:
            pass
        if driver is not None:
            rec.notes.extend(driver.notes())
            rec.restarts = driver.restarts
            rec.events.extend(driver.events)
        return rec.result(self)

    def runs_compiled(self, integrator, times, rtol, atol):
        """True when :meth:`solve` with ``integrator`` runs the whole integration in a compiled
        loop (:data:`COMPILED_LOOPS`), no Python per step."""
        return integrator in COMPILED_LOOPS and self._compiled_loop_applies(times, rtol, atol, integrator)

    def _compiled_loop_applies(self, times, rtol, atol, integrator="DOP853"):
        """True when :meth:`_run_compiled` can replace scipy's ``integrator`` or the Python RK4
        loop (one of :data:`COMPILED_LOOPS`; index-1 formulations)."""
        return False

    #: (baumgarte, penalty) of a compiled right-hand side that applies but whose library was not
    #: compiled when the formulation was set up (:meth:`_late_fast`); None: nothing to wait for
    _fast_pending = None

    def _late_fast(self, times, rtol, atol, integrator):
        """After a numpy start (:mod:`.late_compiled`): True when the compiled code has become
        ready and the compiled right-hand side is set up (:meth:`_compiled_when_ready`): the run
        goes on from its accepted state in the compiled loop of ``integrator`` where one applies,
        else in the integrator's own loop on the compiled right-hand side (:meth:`solve`)."""
        if self._fast_pending is None:
            return False
        fast = self._compiled_when_ready(self._fast_pending)
        if fast is None:
            return False
        self._fast_pending = None
        self._fast = fast
        return True

    def _compiled_when_ready(self, pending):
        """The compiled right-hand side set up from ``pending`` (:attr:`_fast_pending`) at the
        current state once its code is compiled, else None. The base class has no compiled path."""
        return None

    def _run_rk4(self, times, y, rec, dt, late=None):
        f = self._counted_rhs
        h_target = dt if dt else default_dt(times)
        nt = len(times)
        k = 1
        t = times[0]
        while k < nt:
            t0, t1 = t, times[k]
            # at most dt, and no step turns a part by a quarter turn (the angles' windings)
            h_max = fixed_step(h_target, rotation_step_limit(self.unpack(t, y)[1]))
            n = max(1, int(math.ceil((t1 - t0) / h_max - 1e-9)))
            h = (t1 - t0) / n
            cross = False
            for i in range(n):
                t_new = t1 if i == n - 1 else t0 + (i + 1) * h
                # a state blowing up overflows the generated code's float loops (OverflowError, an
                # ArithmeticError as numpy's FloatingPointError): a failed run, also at the step's end
                try:
                    k1 = f(t, y)
                    k2 = f(t + 0.5 * h, y + 0.5 * h * k1)
                    k3 = f(t + 0.5 * h, y + 0.5 * h * k2)
                    k4 = f(t + h, y + h * k3)
                    y_new = y + (h / 6.0) * (k1 + 2 * k2 + 2 * k3 + k4)
                    f_new = f(t_new, y_new)
                except (_Failure, np.linalg.LinAlgError, ArithmeticError, ValueError) as exc:
                    rec.fail(t, f"the equations of motion could not be solved near t = {t:.6g} s: {exc}"
                                + step_too_large(h))
                if self._strides_singular(t, h, y, y_new, k1, f_new):
                    cross = True  # cross from the start of this step
                    break
                y, t = y_new, t_new
                if not np.all(np.isfinite(y)):
                    rec.fail(t, f"the solution became NaN/inf at t = {t:.6g} s" + step_too_large(h))
                rec.took_steps(1, t)
                new = self._accept_checked(t, y, rec)
                if isinstance(new, _Restart):
                    new = new.y
                if new is not None:
                    y = new
            if t >= t1:
                rec.record(t1, y)
                k += 1
            if k < nt and (cross or self._near_singular(t, y)):
                t, y, k = self._cross_singular(t, y, rec, times, k, h)
            elif late is not None and k < nt and t >= t1 and late.due(t):
                raise _Switch(t, y, k)

    def _run_scipy(self, times, y0, rec, integrator, rtol, atol, late=None):
        # here: a run on the compiled loop does not need scipy.integrate (≈ 0.1 s to import). BDF and Radau
        # with a Newton iteration that stops at round-off (a state at rest: :mod:`.scipy_implicit`)
        from .scipy_implicit import implicit_class, with_max_step

        cls = implicit_class(integrator)
        t_end = times[-1]
        k = 1
        nt = len(times)
        # one-step methods take a projected state back (Radau's Newton starts from its last
        # stage values, still a valid guess); multistep ones (BDF, LSODA) keep their history
        explicit = REGISTRY[integrator].one_step

        extra = {}
        from . import implicit

        if REGISTRY[integrator].jacobian and self.name in implicit.FORMULATIONS:
            # the analytic Jacobian of ẏ (:mod:`.implicit`; None beyond its size limit: scipy
            # differences)
            from .implicit import rhs_jacobian

            jac = rhs_jacobian(self)
            if jac is not None:
                extra["jac"] = jac

        def make(t, y, first_step=None):
            # the largest step follows the parts' rotation and the contacts (set again after every
            # step, :func:`.scipy_implicit.with_max_step`)
            step = {} if first_step is None else {"first_step": first_step}
            return cls(self._counted_rhs, t, y, t_end, rtol=rtol, atol=atol, max_step=self._step_limit(t, y),
                       **extra, **step)

        try:
            solver = make(times[0], y0)
        except (_Failure, np.linalg.LinAlgError, ArithmeticError, ValueError) as exc:
            rec.fail(times[0], f"the equations of motion could not be solved at t = {times[0]:.6g} s: {exc}")
        last_fallback = -np.inf
        retries = 0
        while k < nt:
            t_before, y_before = solver.t, solver.y.copy()
            f_before = solver.f.copy() if hasattr(solver, "f") else None
            try:
                message = solver.step()
            except (_Failure, np.linalg.LinAlgError, ArithmeticError, ValueError) as exc:
                # an evaluation failed at a trial stage (partitioning's dependent coordinates found
                # by no Newton iteration over a step too long for them, Andrews' squeezer): a
                # rejected step, tried again from the last accepted state at a quarter of its length
                reason, h = exc, getattr(solver, "h_abs", None)
                if h is not None and retries < MAX_STEP_RETRIES and h / 4 > 1e-12 * max(1.0, abs(t_before)):
                    retries += 1
                    try:
                        solver = make(t_before, y_before, first_step=min(h / 4, t_end - t_before))
                        continue
                    except (_Failure, np.linalg.LinAlgError, ArithmeticError, ValueError) as again:
                        reason = again
                rec.fail(t_before, f"the equations of motion could not be solved after t = {t_before:.6g} s: {reason}")
            retries = 0
            if solver.status == "failed" and self._singularity(t_before, y_before) is not None \
                    and self._singularity(t_before, y_before) < SINGULAR_ZONE_MAX and t_before > last_fallback:
                # the step collapsed on the way into a singular configuration (an implicit method's
                # Newton iteration fails there before the zone is reached): cross it from here
                last_fallback = t_before
                t_x, y_x, k = self._cross_singular(t_before, y_before, rec, times, k)
                if k < nt:
                    solver = make(t_x, y_x)
                continue
            if solver.status == "failed":
                rec.fail(t_before, f"the integrator {integrator} failed after t = {t_before:.6g} s: {message} "
                                   "(step size collapse: the model is stiff, singular or blows up)")
            if not np.all(np.isfinite(solver.y)):
                rec.fail(t_before, f"the solution became NaN/inf after t = {t_before:.6g} s")
            t_new = solver.t
            # BDF and LSODA keep no ẏ: their steps are probed on their own interpolant
            if self._strides_singular(t_before, t_new - t_before, y_before, solver.y,
                                      f_before, solver.f if f_before is not None else None,
                                      interpolant=None if f_before is not None else solver.dense_output):
                # cross from the start of the step (its frames are not recorded yet; the step is
                # not taken, as in the compiled loops)
                t_x, y_x, k = self._cross_singular(t_before, y_before, rec, times, k)
                if k < nt:
                    solver = make(t_x, y_x)
                continue
            rec.took_steps(1, t_new)
            need_out = k < nt and times[k] <= t_new + 1e-12 * max(1.0, abs(t_new))
            sol = solver.dense_output() if need_out else None
            y_acc = solver.y
            restart = False
            new = self._accept_checked(t_new, y_acc, rec)
            if isinstance(new, _Restart):
                restart = True
                new = new.y
            while k < nt and times[k] <= t_new + 1e-12 * max(1.0, abs(t_new)):
                if abs(times[k] - t_new) <= 1e-12 * max(1.0, abs(t_new)):
                    rec.record(times[k], new if new is not None else y_acc, accepted=new is not None)
                else:
                    if restart:  # interpolate in the old partition, record through the old unpack
                        rec.record(times[k], sol(times[k]), unpack=self._old_unpack)
                    else:
                        rec.record(times[k], sol(times[k]))
                k += 1
            y_now = new if new is not None else y_acc
            if k < nt and not restart and self._near_singular(t_new, y_now):
                t_x, y_now, k = self._cross_singular(t_new, y_now, rec, times, k, solver.step_size or np.inf)
                if k < nt:
                    solver = make(t_x, y_now)
                continue
            if late is not None and need_out and k < nt and not restart and late.due(t_new):
                raise _Switch(t_new, y_now, k)
            if restart:
                solver = make(t_new, new)
            elif new is not None:
                if explicit:
                    solver.y = new
                    solver.f = self._counted_rhs(t_new, new)
            elif explicit and self._rows_changed:  # ẏ there with the rows the next step drops
                solver.f = self._counted_rhs(t_new, solver.y)
            self._rows_changed = False
            # never a half turn or a contact unseen
            solver = with_max_step(solver, self._step_limit(solver.t, solver.y), make)
            if solver.status == "finished" and k < nt:
                rec.record(times[k], solver.y)
                k += 1

    # ------------------------------------------------------------------ singular configurations
    def singular_measure(self, t, y):
        """The smallest pivot ratio of S at the state y (1: far from a singular configuration,
        → 0 at one), or None where the formulation does not cross singular configurations
        by :meth:`_cross_singular` (index3 passes them by itself)."""
        return None

    def singular_measure_at(self, t, q):
        """The measure of :meth:`singular_measure` at the coordinates q (nq,): kinematic, of
        Jv at q (:meth:`.equations.Dynamics.singularity`), 0 where it cannot be evaluated."""
        try:
            ev = self.dyn.evaluate(q, np.zeros(self.nv), t, self.refs, with_gamma=False, with_forces=False)
            return self.dyn.singularity(ev)
        except (_Failure, np.linalg.LinAlgError):
            return 0.0

    def onto_joints(self, t, y):
        """y with positions and velocities projected onto the joints (the start of a crossing:
        a formulation that lets the constraints drift, e.g. Baumgarte's, must not hand the drift
        to a step where it would choose the branch). Default: y as it is."""
        return y

    def state_from(self, t, q, v, work):
        """The formulation's state y for coordinates q, velocities v and work W (J) at t."""
        raise NotImplementedError

    def _singularity(self, t, y):
        """:meth:`singular_measure`, 0 where the equations cannot be solved at all."""
        try:
            return self.singular_measure(t, y)
        except (_Failure, np.linalg.LinAlgError):
            return 0.0

    @property
    def singular_zone(self):
        """The measure below which a singular configuration is near (see :data:`SINGULAR_ZONE`)."""
        tol = float(max(np.max(self.rtol), np.max(self.atol)))
        return min(max(math.sqrt(tol), SINGULAR_ZONE), SINGULAR_ZONE_MAX)

    def _near_singular(self, t, y):
        """True when the state is in a singular configuration's zone (the measure below
        :data:`SINGULAR_ZONE`)."""
        w = self._singularity(t, y) if self.dyn.has_loops else None
        return w is not None and w < self.singular_zone

    def _strides_singular(self, t, h, y, y_new, f, f_new, interpolant=None):
        """True if the step from (t, y) to (t + h, y_new) passes through a singular
        configuration (:func:`._singular_probes.strided`, on the cubic Hermite interpolant of
        y, f = ẏ(t), y_new, f_new = ẏ(t + h); or, for an integrator that keeps no ẏ (BDF, LSODA),
        on ``interpolant()``, the step's dense output). A step that starts where the last one judged
        here ended also sees that step's last interior probe (a V whose bottom is at the step
        boundary)."""
        if not self.dyn.has_loops:
            return False
        from ._singular_probes import PROBES, python_function, strided

        sol = interpolant() if interpolant is not None else None
        s = np.empty(len(PROBES))
        for j, p in enumerate(PROBES):
            if sol is not None:
                ym = y if p == 0.0 else y_new if p == 1.0 else sol(t + p * h)
            else:
                ym = ((2 * p ** 3 - 3 * p ** 2 + 1) * y + (p ** 3 - 2 * p ** 2 + p) * h * f
                      + (3 * p ** 2 - 2 * p ** 3) * y_new + (p ** 3 - p ** 2) * h * f_new)
            s[j] = math.sqrt(max(self._singularity(t + p * h, ym), 0.0))
        t_end, s_before, h_before = self._probes_before
        if not abs(t_end - t) <= 1e-12 * max(1.0, abs(t)):
            s_before, h_before = -1.0, 0.0
        # five numbers: Python, not a compile
        strides = bool(python_function(strided)(s, math.sqrt(self.singular_zone), s_before, h_before / h))
        self._probes_before = (np.nan, -1.0, 0.0) if strides else (t + h, s[-2], h)
        return strides

    def _cross_singular(self, t, y, rec, times, k, h_hint=np.inf):
        """Cross a singular configuration (toggle, flat four-bar, branch point) from the state
        y at t on the index-3 equations, then hand back; returns (t, y, k) after the crossing.

        Near a singular configuration the index-1 equations are ill-conditioned: the
        accelerations amplify any position error by 1/σ² (σ the smallest singular value of
        Jv), and a projection onto the joints at a slightly wrong position projects the
        velocity onto the tangent of a neighbouring branch, which drains the energy. The
        index-3 step instead solves Φ(q) = 0 together with the equations of motion, anchored
        by its predictor, so it stays on the branch the motion is on. The crossing steps by the
        fifth-order BDF of :mod:`.crossing` (constant step h = min(:data:`CROSSING_BDF_STEP` ·
        tol^(1/5), :data:`CROSSING_MAX_STEP`, output interval)) through the whole passage: until
        the measure :meth:`singular_measure_at` rises above :attr:`singular_zone` ·
        :data:`SINGULAR_EXIT` (or :data:`CROSSING_MAX_STEPS` steps); output frames inside are
        interpolated. Where its Newton iteration fails (a step landing on the singular
        configuration itself), the rest is crossed by generalised-α (:meth:`_cross_alpha`).
        """
        Index3Formulation = self.crossing_formulation
        if Index3Formulation is None:
            raise SolverError(f"formulation {self.name!r} cannot cross the singular configuration at t = {t:.6g} s",
                              hint="set its crossing_formulation (see kernel/dynamics/contract.py)")
        from . import crossing
        from .mass import velocities_from_rates

        nt = len(times)
        tol = float(max(np.max(self.rtol), np.max(self.atol)))
        gaps = np.diff(times)
        h = min(CROSSING_BDF_STEP * tol ** (1.0 / crossing.ORDER), CROSSING_MAX_STEP,
                float(np.max(gaps)) if len(gaps) else np.inf)
        y = self.onto_joints(t, y)
        q, v, work = self.unpack(t, y)
        q, v = np.array(q, float), np.array(v, float)
        rows, redundant = self.dyn.rows.copy(), self.dyn.redundant.copy()
        step = Index3Formulation(self.dyn, angles=self.angles, refs=self.refs, max_iter=CROSSING_NEWTON_ITER)
        t_start, steps, zone = t, 0, self.singular_zone
        try:
            ts, ys = crossing.history(self, t, y, h, crossing.ORDER, max(CROSSING_BDF_HISTORY * tol, 1e-13))
            step.tol = max(CROSSING_BDF_NEWTON * tol, CROSSING_BDF_NEWTON_MIN)
            step.prepare(t, q)
            qs, qds = [], []
            for tj, yj in zip(ts, ys):
                qj, vj, _ = self.unpack(tj, yj)
                qs.append(np.array(qj, float))
                qds.append(self.dyn.qd(step._bs(qs[-1]), np.asarray(vj, float)))
            bdf = crossing.BDFCrossing(step, h, ts, qs, qds, work)
            w_prev = np.inf
            while steps < CROSSING_MAX_STEPS:
                t0, w0 = t, work
                t, q, qd, work = bdf.advance()
                steps += 1
                v = velocities_from_rates(step._bs(q), qd, self.dyn.nmov)
                step._update_windings(q)
                self.continuous_measures(q, update=True)
                while k < nt and times[k] <= t + 1e-12 * max(1.0, abs(t)):
                    tk = float(times[k])
                    if abs(tk - t) <= 1e-12 * max(1.0, abs(t)):
                        rec.record(tk, self.state_from(tk, q, v, work))
                    else:
                        qk, qdk = bdf.interpolate(tk)
                        vk = velocities_from_rates(step._bs(qk), qdk, self.dyn.nmov)
                        rec.record(tk, self.state_from(tk, qk, vk, w0 + (work - w0) * (tk - t0) / (t - t0)))
                    k += 1
                if k >= nt:
                    break
                w = self.singular_measure_at(t, q)
                if w > zone * SINGULAR_EXIT and w > w_prev:
                    break
                w_prev = w
            method, index3_steps = f"{steps} index-3 BDF{crossing.ORDER} steps of {h:.3g} s", steps
        except (_Failure, np.linalg.LinAlgError, ArithmeticError) as exc:
            # the rest by generalised-α from the last state reached (its retries step beside the
            # singular configuration itself)
            rec.notes.append(f"BDF crossing stopped at t = {t:.6g} s ({exc}); generalised-α crossed on")
            h_alpha = min(CROSSING_STEP * math.sqrt(tol), CROSSING_MAX_STEP, h_hint,
                          float(np.max(gaps)) if len(gaps) else np.inf)
            h_alpha = max(h_alpha, 1e-9 * max(1.0, times[-1] - times[0]))
            t, q, v, work, k, n_alpha = self._cross_alpha(Index3Formulation, t, q, v, work, rec, times, k, h_alpha)
            method = f"{steps} index-3 BDF{crossing.ORDER} steps of {h:.3g} s and {n_alpha} generalised-α steps " \
                     f"of {h_alpha:.3g} s"
            index3_steps = steps
            steps += n_alpha
        self.dyn.rows, self.dyn.redundant = rows, redundant
        self.nfev += step.nfev
        self.nfactor += step.nfactor
        rec.nsteps += steps
        self.crossings.append((t_start, t, method, index3_steps))
        y = self.state_from(t, q, v, work)
        self._choose_rows(t, y)  # the run goes on from here: the rows of this state, not of the one before
        return t, y, k

    def _cross_alpha(self, Index3Formulation, t, q, v, work, rec, times, k, h):
        """Generalised-α steps of h (s) from (q, v, W) at t in chunks of :data:`CROSSING_CHUNK`
        until the measure is above :attr:`singular_zone` · :data:`SINGULAR_EXIT` or the run
        ends, output frames recorded as they are reached. Returns (t, q, v, W, k, steps)."""
        nt = len(times)
        t_end = times[-1]
        step = Index3Formulation(self.dyn, angles=self.angles, refs=self.refs, project_velocities=False,
                                 tol=CROSSING_NEWTON_TOL, max_iter=CROSSING_NEWTON_ITER)
        t_start, steps = t, 0
        try:
            while True:
                eps = 1e-12 * max(1.0, abs(t))
                t_stop = min(t + CROSSING_CHUNK * h, t_end)
                inner = [float(tk) for tk in times[k:] if tk < t_stop - eps]
                for attempt in range(CROSSING_RETRIES + 1):
                    # a step that lands on the singular configuration itself leaves the Newton matrix
                    # singular whatever its size; a chunk of slightly shorter steps lands beside it
                    res = step.solve(np.array([t] + inner + [t_stop]), q, v, integrator="generalized-alpha",
                                     atol=self.atol, rtol=self.rtol, dt=h * CROSSING_RETRY_FACTOR ** attempt)
                    steps += res.nsteps
                    if res.success:
                        break
                if not res.success:
                    rec.nsteps += steps
                    rec.fail(res.t_fail, f"crossing the singular configuration near t = {t_start:.6g} s: {res.message}")
                for j, tk in enumerate(inner, start=1):
                    rec.record(tk, self.state_from(tk, res.q[j], res.v[j], work + res.work[j]))
                    k += 1
                t, q, v, work = t_stop, res.q[-1], res.v[-1], work + res.work[-1]
                self.continuous_measures(q, update=True)
                while k < nt and abs(times[k] - t) <= 1e-12 * max(1.0, abs(t)):
                    rec.record(times[k], self.state_from(t, q, v, work))
                    k += 1
                if k >= nt:
                    break
                w = self._singularity(t, self.state_from(t, q, v, work))
                if w is None or w > self.singular_zone * SINGULAR_EXIT:
                    break
        finally:
            self.nfev += step.nfev
            self.nfactor += step.nfactor
        return t, q, v, work, k, steps

    def _counted_rhs(self, t, y):
        self.nfev += 1
        return self.rhs(t, y)

    def _accept_checked(self, t, y, rec):
        try:
            return self.accept(t, y)
        except (_Failure, np.linalg.LinAlgError) as exc:
            rec.fail(t, f"the step to t = {t:.6g} s could not be completed: {exc}")


class _Stop(Exception):
    pass


class _Restart:
    def __init__(self, y):
        self.y = y


class _Switch(Exception):
    """The numpy loop stops at an accepted state (t in s, y) to go on in the compiled loop
    from it; times[k] is the next output time."""

    def __init__(self, t, y, k):
        super().__init__(t)
        self.t, self.y, self.k = float(t), np.array(y, float), int(k)


def default_dt(times):
    """The fixed step when none is given: min(output interval, 1 ms), s."""
    span = (times[-1] - times[0]) / max(1, len(times) - 1)
    return min(span, 1e-3)


class _Recorder:
    """Collects output frames; ``fail`` ends the run keeping what was recorded."""

    def __init__(self, form, nt, max_steps=None):
        self.form = form
        self.nt = nt
        self.max_steps = max_steps
        self.t, self.q, self.v, self.w, self.angles, self.refs, self.meas = [], [], [], [], [], [], []
        self.success = True
        self.message = ""
        self.t_fail = None
        self.nsteps = 0
        self.notes = []
        self.events = []
        self.compiled_loop = False
        self.loop_tol = None
        self.restarts = 0

    def took_steps(self, n, t):
        """Count n accepted steps, the last ending at t (s); past the budget (``max_steps``) the run stops there."""
        self.nsteps += n
        if self.max_steps is not None and self.nsteps > self.max_steps:
            self.fail(t, f"the budget of {self.max_steps} steps was spent at t = {t:.6g} s")

    def record(self, t, y, accepted=True, unpack=None, output_state=False):
        """One output frame of the state y at t (s); ``output_state``: y is already the frame's
        state (a compiled loop projected it as :meth:`Formulation.output_state` does)."""
        form = self.form
        if not output_state:
            y = form.output_state(t, y)
        q, v, w = (unpack or form.unpack)(t, y)
        self.t.append(float(t))
        self.q.append(np.array(q, float))
        self.v.append(np.array(v, float))
        self.w.append(float(w))
        self.angles.append(form.angles.copy())
        self.refs.append(np.array(form.refs, float))
        self.meas.append(form.continuous_measures(self.q[-1]))

    def fail(self, t, message):
        self.success = False
        self.t_fail = float(t)
        self.message = message
        raise _Stop()

    def result(self, form):
        return DynamicsResult(
            t=np.array(self.t), q=np.array(self.q).reshape(len(self.t), -1),
            v=np.array(self.v).reshape(len(self.t), -1), work=np.array(self.w), angles=self.angles, refs=self.refs,
            measures=np.array(self.meas).reshape(len(self.t), -1),
            success=self.success, message=self.message,
            t_fail=self.t_fail, nfev=form.nfev, nsteps=self.nsteps, nfactor=form.nfactor, nproject=form.nproject,
            notes=list(self.notes) + _crossing_notes(form) + _watch_notes(form), events=list(self.events),
            compiled_loop=self.compiled_loop, loop_tol=self.loop_tol, crossings=len(getattr(form, "crossings", ())),
            crossing_steps=sum(n for _, _, _, n in getattr(form, "crossings", ())), restarts=self.restarts,
        )


def _watch_notes(form):
    """How many steps of the compiled loops the singular-configuration watch probed inside."""
    watched, probed = getattr(form, "probed_steps", (0, 0))
    if not watched:
        return []
    return [f"singular-configuration watch: {probed} of {watched} steps probed inside (the others were clear "
            "of every V at both ends)"]


def _crossing_notes(form):
    """One note per singular configuration crossed by :meth:`Formulation._cross_singular`."""
    return [f"singular configuration crossed from t = {t0:.6g} to {t1:.6g} s by {method}"
            for t0, t1, method, _ in getattr(form, "crossings", ())]
