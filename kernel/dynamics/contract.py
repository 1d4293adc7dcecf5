"""The solver contract of the forward-dynamics formulations, and the integrator driver.

Every formulation integrates the constrained equations of motion of :mod:`.equations`

    M v̇ + Jvᵀ λ = f(q, v, t),    Φ(q, t) = 0,    q̇ = B(q) v

from consistent (q0, v0) and reports the coordinates, velocities and non-conservative
work at the output times (the formulations themselves: :mod:`.formulations`,
:mod:`.partitioning`, :mod:`.index3`).

ODE formulations run with scipy's ``RK23``, ``RK45``, ``DOP853``, ``Radau``, ``BDF``,
``LSODA`` (error control ``rtol``/``atol`` on the state) or the fixed-step classical
``RK4`` (step ``dt``). Projection of the integrator state after steps is applied with
the explicit methods (RK*, DOP853); the implicit/multistep ones keep their history and
only the output frames are projected.

``projection``, ``baumgarte``, ``penalty`` and ``augmented-lagrangian`` take the options
``fast`` (default True: the compiled right-hand side of :mod:`.fast` when numba is available;
the penalty matrix is then solved in Schur-complement form, (S + I/α) λ = Jv M⁻¹ f + r with
S = Jv M⁻¹ Jvᵀ in band storage, which gives the same v̇ by the Woodbury identity and keeps the
cost linear in a chain's length) and ``compiled_loop`` (default True:
with ``DOP853``, the whole integration loop — steps, step-size control, dense output,
projections and angle bookkeeping — runs compiled (:mod:`._dop853`) when nothing in ẏ is
evaluated in Python (drivers' time functions and torque/force expressions are compiled). The compiled
loop is scipy's DOP853 (same coefficients, initial step, error norm and step-size control), so
it takes the same steps up to round-off and the results are those of the scipy driver.

Contract (subclasses of :class:`Formulation`, like scipy's ``OdeSolver``)
------------------------------------------------------------------------
``name``                  registry key.
``defaults``              option name -> default value (options are keyword arguments).
``__init__(dyn, *, angles, refs, **options)``
                          ``dyn`` a :class:`~.equations.Dynamics` with its independent rows
                          set, ``angles`` the kernel :class:`~cadmotion.kernel.system.AngleState`
                          and ``refs`` the force elements' angle references (both mutated as
                          steps are accepted).
``solve(times, q0, v0, *, integrator, rtol, atol, dt) -> DynamicsResult``
                          q0, v0 consistent. ``times[0]`` is the initial time. Never raises
                          for a numerical failure: returns ``success=False`` with the frames
                          computed so far and a message naming the time.
ODE formulations implement ``initial_state(t, q, v) -> y``, ``rhs(t, y) -> ẏ``,
``accept(t, y) -> y or None`` (after each accepted step; may return a corrected state)
and ``unpack(t, y) -> (q, v, work)``; the base class ``solve`` drives the integrators.
The last state component is always the non-conservative work W (J), Ẇ = P_nc.
An index-1 formulation opts in to the compiled DOP853 loop by the option ``compiled_loop``;
its ``accept`` must then be what the loop does in compiled code: the angle bookkeeping,
then the projection given by ``_step_projection() -> (tol, max_iter) or None``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import List

import numpy as np
import scipy.integrate as si

from ...errors import SolverError

__all__ = ["Formulation", "DynamicsResult", "INTEGRATORS", "SCIPY_INTEGRATORS", "INDEX3_INTEGRATORS"]

SCIPY_INTEGRATORS = ("RK23", "RK45", "DOP853", "Radau", "BDF", "LSODA")
_EXPLICIT = ("RK23", "RK45", "DOP853", "RK4")
INTEGRATORS = SCIPY_INTEGRATORS + ("RK4",)
INDEX3_INTEGRATORS = ("generalized-alpha", "HHT")


class _Failure(Exception):
    """A numerical failure inside an evaluation (singular matrix, no convergence)."""


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
    notes : remarks on the run (e.g. "DOP853 in the compiled loop")
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


class Formulation:
    """Base class of the formulations; see the module docstring for the contract."""

    name = ""
    defaults = {}
    #: the integrators this formulation runs; another is an error, never a substitution
    integrators = INTEGRATORS
    #: the integrator used when none is named
    default_integrator = "DOP853"

    def __init__(self, dyn, *, angles, refs, **options):
        unknown = sorted(set(options) - set(self.defaults))
        if unknown:
            raise SolverError(f"formulation {self.name!r} has no option(s) {', '.join(unknown)}",
                              hint=f"options: {', '.join(self.defaults) or '(none)'}")
        self.options = {**self.defaults, **options}
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
            raise SolverError(f"formulation {cls.name!r} does not run the integrator {integrator!r}",
                              hint=f"use one of {', '.join(cls.integrators)} (see `cadmotion formulations`)")

    # ------------------------------------------------------------------ ODE contract
    def initial_state(self, t, q, v):
        raise NotImplementedError

    def rhs(self, t, y):
        raise NotImplementedError

    def accept(self, t, y):
        """Called after every accepted step; returns a corrected state or None."""
        return None

    def unpack(self, t, y):
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

    def _update_windings(self, q, bs=None, aux=None):
        if self._angle_groups:
            self.system.accept(q, self.angles)
        if len(self.model.joint_measures):
            self.continuous_measures(q, update=True, raw=None if aux is None else aux[3:])
        if self.dyn.forces.needs_refs:
            if bs is None:
                from .mass import body_state

                bs = body_state(self.model, self.dyn.mass, q, np.zeros(self.nv))
            self.dyn.forces.accept(bs, self.refs)

    # ------------------------------------------------------------------ driver
    def solve(self, times, q0, v0, *, integrator="DOP853", rtol=1e-8, atol=1e-10, dt=None):
        """Integrate from (q0, v0) at times[0] and report at every time (see the contract)."""
        self.check_integrator(integrator)
        times = np.asarray(times, float)
        nt = len(times)
        rec = _Recorder(self, nt)
        self.rtol, self.atol = rtol, atol
        y = self.initial_state(times[0], q0, v0)
        rec.record(times[0], y)
        try:
            if integrator == "RK4":
                self._run_rk4(times, y, rec, dt)
            elif integrator == "DOP853" and self._compiled_loop_applies(times, rtol, atol):
                self._run_compiled(times, y, rec, rtol, atol)
            else:
                self._run_scipy(times, y, rec, integrator, rtol, atol)
        except _Stop:
            pass
        return rec.result(self)

    def _compiled_loop_applies(self, times, rtol, atol):
        """True when :meth:`_run_compiled` can replace scipy's DOP853 (index-1 formulations)."""
        return False

    def _run_rk4(self, times, y, rec, dt):
        f = self._counted_rhs
        for k in range(1, len(times)):
            t0, t1 = times[k - 1], times[k]
            span = t1 - t0
            h_target = dt if dt else _default_dt(times)
            n = max(1, int(math.ceil(span / h_target - 1e-9)))
            h = span / n
            t = t0
            for i in range(n):
                try:
                    k1 = f(t, y)
                    k2 = f(t + 0.5 * h, y + 0.5 * h * k1)
                    k3 = f(t + 0.5 * h, y + 0.5 * h * k2)
                    k4 = f(t + h, y + h * k3)
                except (_Failure, np.linalg.LinAlgError, FloatingPointError, ValueError) as exc:
                    rec.fail(t, f"the equations of motion could not be solved near t = {t:.6g} s: {exc}")
                y = y + (h / 6.0) * (k1 + 2 * k2 + 2 * k3 + k4)
                t = t0 + (i + 1) * h
                if not np.all(np.isfinite(y)):
                    rec.fail(t, f"the solution became NaN/inf at t = {t:.6g} s (the step dt = {h:.3g} s is too large "
                                "for this model, or the model is unstable)")
                rec.nsteps += 1
                new = self._accept_checked(t, y, rec)
                if isinstance(new, _Restart):
                    new = new.y
                if new is not None:
                    y = new
            rec.record(t1, y)

    def _run_scipy(self, times, y0, rec, integrator, rtol, atol):
        cls = getattr(si, integrator)
        t_end = times[-1]
        k = 1
        nt = len(times)
        explicit = integrator in _EXPLICIT

        def make(t, y):
            return cls(self._counted_rhs, t, y, t_end, rtol=rtol, atol=atol)

        try:
            solver = make(times[0], y0)
        except (_Failure, np.linalg.LinAlgError, FloatingPointError, ValueError) as exc:
            rec.fail(times[0], f"the equations of motion could not be solved at t = {times[0]:.6g} s: {exc}")
        while k < nt:
            t_before = solver.t
            try:
                message = solver.step()
            except (_Failure, np.linalg.LinAlgError, FloatingPointError, ValueError) as exc:
                rec.fail(t_before, f"the equations of motion could not be solved after t = {t_before:.6g} s: {exc}")
            if solver.status == "failed":
                rec.fail(t_before, f"the integrator {integrator} failed after t = {t_before:.6g} s: {message} "
                                   "(step size collapse: the model is stiff, singular or blows up)")
            if not np.all(np.isfinite(solver.y)):
                rec.fail(t_before, f"the solution became NaN/inf after t = {t_before:.6g} s")
            rec.nsteps += 1
            t_new = solver.t
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
            if restart:
                solver = make(t_new, new)
            elif new is not None:
                if explicit:
                    solver.y = new
                    solver.f = self._counted_rhs(t_new, new)
            if solver.status == "finished" and k < nt:
                rec.record(times[k], solver.y)
                k += 1

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


def _default_dt(times):
    span = (times[-1] - times[0]) / max(1, len(times) - 1)
    return min(span, 1e-3)


class _Recorder:
    """Collects output frames; ``fail`` ends the run keeping what was recorded."""

    def __init__(self, form, nt):
        self.form = form
        self.nt = nt
        self.t, self.q, self.v, self.w, self.angles, self.refs, self.meas = [], [], [], [], [], [], []
        self.success = True
        self.message = ""
        self.t_fail = None
        self.nsteps = 0
        self.notes = []

    def record(self, t, y, accepted=True, unpack=None):
        form = self.form
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
            t=np.array(self.t), q=np.array(self.q).reshape(len(self.t), -1), v=np.array(self.v).reshape(len(self.t), -1),
            work=np.array(self.w), angles=self.angles, refs=self.refs, measures=np.array(self.meas).reshape(len(self.t), -1),
            success=self.success, message=self.message,
            t_fail=self.t_fail, nfev=form.nfev, nsteps=self.nsteps, nfactor=form.nfactor, nproject=form.nproject,
            notes=list(self.notes),
        )
