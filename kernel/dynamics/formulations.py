"""Forward-dynamics formulations: one contract, one result type, a registry by name.

Every formulation integrates the constrained equations of motion of :mod:`.equations`

    M v̇ + Jvᵀ λ = f(q, v, t),    Φ(q, t) = 0,    q̇ = B(q) v

from consistent (q0, v0) and reports the coordinates, velocities and non-conservative
work at the output times. They differ in how the constraints are enforced:

``baumgarte``   index 1, Jv v̇ = γ̂ − 2α Φ̇ − β² Φ (α, β in 1/s; default 10, 10).
``projection``  index 1; after every accepted step q is pulled back onto Φ = 0 (minimum-norm
                Newton on the position rows) and v onto Jv v = −Φt (kinetic-energy metric),
                when the violation exceeds ``tol`` (default: atol). The default formulation.
``penalty``     (M + α JvᵀJv) v̇ = f − α Jvᵀ (−γ̂ + 2ξω Φ̇ + ω² Φ), λ = α (Φ̈ + 2ξωΦ̇ + ω²Φ)
                (Bayo). α = ``penalty`` × mean body mass (default 1e7), ξ = 1, ω = 10 1/s.
                Constraints hold to O(1/α); all rows are used, redundant or not.
``augmented-lagrangian``  the penalty matrix, iterated on λ until Jv v̇ = γ̂ − 2ξωΦ̇ − ω²Φ
                holds (Bayo & Ledesma): the exact index-1 solution with Baumgarte terms.
``index3``      the index-3 DAE in q (7 coordinates per body, normalisation rows included),
                M_q q̈ + Φqᵀ λ = Q_q, Φ(q, t) = 0, integrated by the generalised-α method
                (Chung–Hulbert parameters from the spectral radius ρ∞, default 0.9; or HHT
                with α = ρ∞ ... ) with a Newton iteration on (q̈, λ) using the iteration
                matrix [M_q, Φqᵀ; Φq, 0] (refactorised when convergence slows). Positions
                satisfy Φ = 0 to the Newton tolerance at every step; the reported
                velocities are projected onto Φq q̇ = −Φt (M_q metric) and the reported
                accelerations solve the index-1 equations at the reported state.
                ``project_velocities="state"`` feeds the projection back into the
                integration (drift-free velocities, but first order, as Arnold showed);
                ``False`` reports the raw velocities. Second order otherwise. Fixed step
                ``dt`` (halved on Newton failure).
``partitioning`` coordinate partitioning (Wehage–Haug): the q-coordinates split into
                dependent ones (pivot columns of Φq) and dof independent ones u; only (u, u̇)
                are integrated; q follows from Φ(q, t) = 0 by Newton, q̇ from Φq q̇ = −Φt.
                The independent coordinates are chosen by a pivoted QR of the null space of
                Φq; after every step the choice is made again and the partition renewed
                (the integrator restarted) when the current coordinates parametrise the
                null space worse than the best ones by a factor ``rcond`` (default 0.5).

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
import scipy.linalg as sla
import scipy.sparse as sps
from scipy.sparse.linalg import splu

from ...errors import SolverError
from ..analysis import rank_info
from ..linalg import RowSolver
from .mass import cross, velocities_from_rates

__all__ = ["Formulation", "DynamicsResult", "FORMULATIONS", "INTEGRATORS", "get_formulation"]

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
        if integrator not in INTEGRATORS:
            raise SolverError(f"unknown integrator {integrator!r} for formulation {self.name!r}",
                              hint=f"use one of {', '.join(INTEGRATORS)}")
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


# ====================================================================== index-1 family
class _IndexOne(Formulation):
    """State y = [q (nq), v (nv), W]; subclasses supply the accelerations."""

    def initial_state(self, t, q, v):
        self._last = None
        return np.concatenate([q, v, [0.0]])

    def unpack(self, t, y):
        return y[: self.nq], y[self.nq: self.nq + self.nv], y[-1]

    def _evaluate(self, t, q, v):
        return self.dyn.evaluate(q, v, t, self.refs)

    def _setup_fast(self, baumgarte=None, penalty=None):
        """Use the compiled right-hand side (:mod:`.fast`) when it applies."""
        if self.options.get("fast", True):
            from .fast import fast_rhs

            self._fast = fast_rhs(self.dyn, self.angles, self.refs, baumgarte, penalty)

    def _step_projection(self):
        """(tol, max_iter) of the projection onto the joints after accepted steps, or None."""
        return None

    def _compiled_loop_applies(self, times, rtol, atol):
        fast = self._fast
        return bool(self.options.get("compiled_loop", False) and fast is not None and fast.self_contained
                    and np.ndim(rtol) == 0 and np.ndim(atol) == 0 and np.isfinite(rtol) and atol >= 0
                    and times[-1] > times[0] and np.all(np.diff(times) >= 0))

    def _run_compiled(self, times, y0, rec, rtol, atol):
        """DOP853 in one compiled loop (:meth:`.fast.FastRHS.dop853`): the steps, projections and
        angle bookkeeping of :meth:`_run_scipy` without returning to Python per step."""
        from . import _dop853 as D

        eps100 = 100 * np.finfo(float).eps
        if rtol < eps100:  # as scipy's validate_tol
            import warnings

            warnings.warn(f"At least one element of `rtol` is too small. Setting `rtol = np.maximum(rtol, {eps100})`.",
                          stacklevel=4)
            rtol = eps100
        ptol, max_iter = self._step_projection() or (None, 0)
        meas = self._meas_ref if len(self.model.joint_measures) else None
        status, Y, snaps, stats = self._fast.dop853(times, y0, rtol, atol, ptol, max_iter, meas_ref=meas)
        rec.notes.append("DOP853 in the compiled loop")
        self.nfev += int(stats[D.S_NFEV])
        self.nfactor += int(stats[D.S_NFEV])  # one factorisation of S per compiled evaluation
        self.nproject += int(stats[D.S_NPROJECT])
        rec.nsteps += int(stats[D.S_NSTEPS])
        for k in range(1, int(stats[D.S_K])):
            mref = self._fast.restore(snaps[k])
            if meas is not None:
                self._meas_ref = mref
            rec.record(times[k], Y[k])
        t_fail, t_eval = stats[D.S_T_FAIL], stats[D.S_T_EVAL]
        if status == D.NOT_FINITE:
            rec.fail(t_fail, f"the equations of motion could not be solved after t = {t_fail:.6g} s: the accelerations "
                             f"are not finite at t = {t_eval:.6g} s")
        elif status == D.STEP_COLLAPSE:
            rec.fail(t_fail, f"the integrator DOP853 failed after t = {t_fail:.6g} s: Required step size is less than "
                             "spacing between numbers. (step size collapse: the model is stiff, singular or blows up)")
        elif status == D.NAN_STATE:
            rec.fail(t_fail, f"the solution became NaN/inf after t = {t_fail:.6g} s")

    def rhs(self, t, y):
        if self._fast is not None:
            out = self._fast(t, y)  # redundant rows are dropped inside; NaN raises FloatingPointError
            self.nfactor += 1
            self._last = (y, None)
            return out
        nq, nv = self.nq, self.nv
        q, v = y[:nq], y[nq: nq + nv]
        ev = self._evaluate(t, q, v)
        vd, power_c = self.accelerations(ev, t, q, v)
        out = np.empty(nq + nv + 1)
        out[:nq] = self.dyn.qd(ev.bs, v)
        out[nq: nq + nv] = vd
        out[-1] = ev.power + power_c
        self._last = (y, ev)
        return out

    def accelerations(self, ev, t, q, v):
        """(v̇, power of the driving constraints)."""
        raise NotImplementedError

    def _solve_kept(self, ev, extra=None):
        dyn = self.dyn
        try:
            vd, lam = dyn.accelerations(ev, extra)
        except np.linalg.LinAlgError:
            # the independent rows changed (a singular configuration was crossed): choose again
            self.nfactor += 1
            dyn.set_rows(ev.J, ev.bs)
            ev.Jr = ev.J[dyn.rows] if len(dyn.redundant) else ev.J
            ev.X = None
            ev._chol = ev._lu = None
            try:
                vd, lam = dyn.accelerations(ev, extra if extra is None or len(extra) == len(dyn.rows) else None)
            except np.linalg.LinAlgError:
                raise _Failure(f"the constraint Jacobian is singular at t = {ev.t:.6g} s (a lock-up or toggle position "
                               "where the joints no longer determine the reactions)") from None
        self.nfactor += 1
        if dyn.timed:
            phit = ev.phit[dyn.rows] if len(dyn.redundant) else ev.phit
            return vd, float(lam @ phit)
        return vd, 0.0


class ProjectionFormulation(_IndexOne):
    """Index 1 with projection of positions and velocities after steps."""

    name = "projection"
    defaults = {"tol": None, "max_iter": 5, "fast": True, "compiled_loop": True}

    def __init__(self, dyn, **kw):
        super().__init__(dyn, **kw)
        self._qrows = None
        self._setup_fast()

    def accelerations(self, ev, t, q, v):
        return self._solve_kept(ev)

    def _position_rows(self, q, t):
        if self._qrows is None:
            J = self.system.jacobian_auto(q, t, self.angles)
            self._qrows = rank_info(J).independent
        return self._qrows

    def _step_projection(self):
        tol = self.options["tol"] if self.options["tol"] is not None else self.atol
        return tol, self.options["max_iter"]

    def _project(self, t, y, count=True):
        nq, nv = self.nq, self.nv
        tol = self._step_projection()[0]
        q, v = y[:nq], y[nq: nq + nv]
        dyn = self.dyn
        aux = self._fast_aux(y)
        if aux is not None and aux[0] <= tol and aux[1] <= tol:
            return None  # the compiled rhs at this state saw no violation above tol
        if self._fast is not None:
            new, changed = self._fast.project(t, y, tol, self.options["max_iter"])
            if not changed:
                return None
            if count:
                self.nproject += 1
            return new
        phi = dyn.phi(q, t, self.angles)
        changed = False
        if phi.size and np.max(np.abs(phi)) > tol:
            rows = self._position_rows(q, t)
            q = q.copy()
            for _ in range(self.options["max_iter"]):
                J = self.system.jacobian_auto(q, t, self.angles)
                q -= RowSolver(J, rows).solve(phi)
                self.nfactor += 1
                phi = dyn.phi(q, t, self.angles)
                if np.max(np.abs(phi)) <= 0.01 * tol:
                    break
            changed = True
        last = getattr(self, "_last", None)
        ev = None
        if not changed and last is not None and last[0] is y:
            if last[1] is None:  # the compiled rhs ran at this state: its residual is known
                if aux[0] <= tol:
                    return None
            else:
                ev = last[1]
        if ev is None:
            ev = dyn.evaluate(q, v, t, self.refs, with_gamma=False, with_forces=False)
        res = ev.J @ v + ev.phit
        if res.size and np.max(np.abs(res)) > tol:
            v = dyn.project_velocities(ev, v)
            self.nfactor += 1
            changed = True
        if not changed:
            return None
        if count:
            self.nproject += 1
        out = y.copy()
        out[:nq], out[nq: nq + nv] = q, v
        return out

    def accept(self, t, y):
        self._update_windings(y[: self.nq], aux=self._fast_aux(y))
        return self._project(t, y)

    def output_state(self, t, y):
        new = self._project(t, y, count=False)
        return y if new is None else new


class BaumgarteFormulation(_IndexOne):
    """Index 1 with Baumgarte stabilisation Jv v̇ = γ̂ − 2α Φ̇ − β² Φ."""

    name = "baumgarte"
    defaults = {"alpha": 10.0, "beta": 10.0, "fast": True, "compiled_loop": True}

    def __init__(self, dyn, **kw):
        super().__init__(dyn, **kw)
        self._setup_fast((float(self.options["alpha"]), float(self.options["beta"])))

    def accelerations(self, ev, t, q, v):
        dyn = self.dyn
        a, b = self.options["alpha"], self.options["beta"]
        phi = dyn.phi(ev.q, t, self.angles)[dyn.model_rows]
        phid = ev.J @ v + ev.phit
        extra = -2.0 * a * phid - b * b * phi
        if len(dyn.redundant):
            extra = extra[dyn.rows]
        return self._solve_kept(ev, extra)

    def accept(self, t, y):
        self._update_windings(y[: self.nq], aux=self._fast_aux(y))
        return None


class PenaltyFormulation(_IndexOne):
    """Penalty formulation (all rows, redundant or not); see the module docstring."""

    name = "penalty"
    defaults = {"penalty": 1e7, "xi": 1.0, "omega": 10.0, "fast": True, "compiled_loop": True}
    iterate = False

    def __init__(self, dyn, **kw):
        super().__init__(dyn, **kw)
        self.alpha = float(self.options["penalty"]) * float(np.mean(dyn.mass.body_mass)) if dyn.nmov else 0.0
        self._lam = np.zeros(dyn.nc)
        if self.alpha > 0:
            # compiled: λ = (S + I/α)⁻¹ (Jv M⁻¹ f + r), the same v̇ by the Woodbury identity
            xi, om = float(self.options["xi"]), float(self.options["omega"])
            iterations = (int(self.options["max_iter"]), float(self.options["tol"])) if self.iterate else (1, 0.0)
            self._setup_fast((xi * om, om), (1.0 / self.alpha, *iterations))

    def accelerations(self, ev, t, q, v):
        dyn = self.dyn
        xi, om = self.options["xi"], self.options["omega"]
        phi = dyn.phi(ev.q, t, self.angles)[dyn.model_rows]
        r = -ev.gamma + 2 * xi * om * (ev.J @ v + ev.phit) + om * om * phi
        J, a = ev.J, self.alpha
        M = dyn.mass_matrix(ev.bs)
        if dyn.sparse:
            A = (M + a * (J.T @ J)).tocsc()
            # symmetric positive definite: keep the diagonal pivots and a symmetric ordering (the
            # default partial pivoting of SuperLU fills in badly on this ill-conditioned matrix)
            lu = splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options=dict(SymmetricMode=True))
            solve = lu.solve
        else:
            A = M + a * (J.T @ J)
            try:
                cho = sla.cho_factor(A, check_finite=False)
            except np.linalg.LinAlgError:
                raise _Failure(f"the penalty matrix is singular at t = {t:.6g} s") from None
            solve = lambda b: sla.cho_solve(cho, b, check_finite=False)  # noqa: E731
        self.nfactor += 1
        base = ev.f - a * (J.T @ r)
        if not self.iterate:
            vd = solve(base)
            lam = a * (J @ vd + r)
        else:
            lam = self._lam.copy()
            tol = self.options["tol"] * (1.0 + np.max(np.abs(r))) if r.size else 0.0
            for _ in range(self.options["max_iter"]):
                vd = solve(base - J.T @ lam)
                res = J @ vd + r
                lam = lam + a * res
                if not r.size or np.max(np.abs(res)) <= tol:
                    break
            self._lam = lam
        return vd, float(lam @ ev.phit) if dyn.timed else 0.0

    def accept(self, t, y):
        self._update_windings(y[: self.nq], aux=self._fast_aux(y))
        return None


class AugmentedLagrangianFormulation(PenaltyFormulation):
    """Iterated augmented Lagrangian with Baumgarte terms (exact index-1 limit)."""

    name = "augmented-lagrangian"
    defaults = {"penalty": 1e5, "xi": 1.0, "omega": 10.0, "tol": 1e-12, "max_iter": 30, "fast": True,
                "compiled_loop": True}
    iterate = True


# ====================================================================== partitioning
class PartitioningFormulation(Formulation):
    """Coordinate partitioning: integrate the independent coordinates u and their rates."""

    name = "partitioning"
    defaults = {"tol": 1e-12, "max_iter": 15, "rcond": 0.5}

    def initial_state(self, t, q, v):
        self._q = np.array(q, float)
        self._partition(q, t)
        bs = self._bs(q)
        qd = self.dyn.qd(bs, v)
        self._old_unpack = None
        return np.concatenate([q[self.I], qd[self.I], [0.0]])

    def _bs(self, q):
        from .mass import body_state

        return body_state(self.model, self.dyn.mass, q, np.zeros(self.nv))

    def _jac(self, q, t):
        J = self.system.jacobian_auto(q, t, self.angles)
        return J.toarray() if sps.issparse(J) else J

    def _best_partition(self, Jr):
        """(dependent, independent, N): the independent coordinates are the pivots of a
        column-pivoted QR of the null-space basis N of Jr (the coordinates that parametrise
        the admissible motions best)."""
        r, n = Jr.shape
        Q, _ = sla.qr(Jr.T, mode="full")
        N = Q[:, r:]  # (nq, dof), orthonormal null-space basis
        _, _, piv = sla.qr(N.T, mode="economic", pivoting=True)
        dof = n - r
        return np.sort(piv[dof:]), np.sort(piv[:dof]), N

    @staticmethod
    def _quality(N, I):
        """σ_min of N[I]: how well the coordinates I parametrise the admissible motions."""
        return float(np.linalg.svd(N[I], compute_uv=False).min()) if len(I) else 1.0

    def _partition(self, q, t):
        J = self._jac(q, t)
        info = rank_info(J)
        self.rows = info.independent
        Jr = J[self.rows]
        self.D, self.I, _ = self._best_partition(Jr)
        self.ndof = len(self.I)
        self._lu = sla.lu_factor(Jr[:, self.D], check_finite=False)
        self.nfactor += 1

    def _positions(self, t, u, q_guess):
        q = q_guess.copy()
        q[self.I] = u
        tol = self.options["tol"]
        lu = self._lu
        prev = np.inf
        fresh = False
        for it in range(self.options["max_iter"]):
            phi = self.system.phi(q, t, self.angles)[self.rows]
            err = np.max(np.abs(phi)) if phi.size else 0.0
            if err <= tol:
                return q
            if err > 0.5 * prev and fresh and err <= 1e3 * tol:
                return q  # stalled at round-off level
            if err > 0.1 * prev:
                # the chord iteration is slow: Newton with the Jacobian at the current iterate
                lu = sla.lu_factor(self._jac(q, t)[self.rows][:, self.D], check_finite=False)
                self.nfactor += 1
                fresh = True
            prev = err
            q[self.D] -= sla.lu_solve(lu, phi, check_finite=False)
        raise _Failure(f"the dependent coordinates do not converge at t = {t:.6g} s (residual {err:.3g})")

    def _full(self, t, y):
        nd = self.ndof
        u, ud = y[:nd], y[nd: 2 * nd]
        q = self._positions(t, u, self._q)
        J = self._jac(q, t)[self.rows]
        phit = self.system.phit(q, t, self.angles)[self.rows]
        lu = sla.lu_factor(J[:, self.D], check_finite=False)
        qd = np.zeros(self.nq)
        qd[self.I] = ud
        qd[self.D] = sla.lu_solve(lu, -phit - J[:, self.I] @ ud, check_finite=False)
        return q, qd, lu

    def rhs(self, t, y):
        q, qd, _ = self._full(t, y)
        dyn = self.dyn
        bs = self._bs(q)
        v = velocities_from_rates(bs, qd, dyn.nmov)
        ev = dyn.evaluate(q, v, t, self.refs)
        try:
            vd, lam = dyn.accelerations(ev)
        except np.linalg.LinAlgError:
            raise _Failure(f"the constraint Jacobian is singular at t = {t:.6g} s") from None
        self.nfactor += 1
        qdd = dyn.qdd(ev.bs, v, vd)
        nd = self.ndof
        out = np.empty(2 * nd + 1)
        out[:nd] = qd[self.I]
        out[nd: 2 * nd] = qdd[self.I]
        power = ev.power
        if dyn.timed:
            power += float(lam @ (ev.phit[dyn.rows] if len(dyn.redundant) else ev.phit))
        out[-1] = power
        return out

    def unpack(self, t, y):
        q, qd, _ = self._full(t, y)
        v = velocities_from_rates(self._bs(q), qd, self.dyn.nmov)
        return q, v, y[-1]

    def accept(self, t, y):
        q, qd, lu = self._full(t, y)
        self._q = q
        self._update_windings(q)
        self._lu = lu
        renew = False
        if len(self.D):
            Jr = self._jac(q, t)[self.rows]
            D_best, I_best, N = self._best_partition(Jr)
            if not np.array_equal(D_best, self.D):
                renew = self._quality(N, self.I) < self.options["rcond"] * self._quality(N, I_best)
        if renew:
            # renew the partition at this configuration and restart the integrator
            old = (self.I, self.D, self.ndof, self.rows, self._q)
            self._old_unpack = _frozen_unpack(self, old)
            self._partition(q, t)
            v = velocities_from_rates(self._bs(q), qd, self.dyn.nmov)
            bs = self._bs(q)
            qd_new = self.dyn.qd(bs, v)
            return _Restart(np.concatenate([q[self.I], qd_new[self.I], [y[-1]]]))
        return None


def _frozen_unpack(form, old):
    I, D, nd, rows, q_guess = old

    def unpack(t, y):
        q = q_guess.copy()
        q[I] = y[:nd]
        for _ in range(form.options["max_iter"]):
            J = form._jac(q, t)[rows]
            phi = form.system.phi(q, t, form.angles)[rows]
            if np.max(np.abs(phi)) <= form.options["tol"]:
                break
            q[D] -= np.linalg.solve(J[:, D], phi)
        J = form._jac(q, t)[rows]
        qd = np.zeros(form.nq)
        qd[I] = y[nd: 2 * nd]
        qd[D] = np.linalg.solve(J[:, D], -form.system.phit(q, t, form.angles)[rows] - J[:, I] @ qd[I])
        v = velocities_from_rates(form._bs(q), qd, form.dyn.nmov)
        return q, v, y[-1]

    return unpack


# ====================================================================== index 3
class Index3Formulation(Formulation):
    """Generalised-α (or HHT) on the index-3 equations in q; see the module docstring."""

    name = "index3"
    defaults = {"rho_inf": 0.9, "tol": None, "max_iter": 12, "project_velocities": "output"}

    def solve(self, times, q0, v0, *, integrator="generalized-alpha", rtol=1e-8, atol=1e-10, dt=None):
        scheme = integrator if integrator in INDEX3_INTEGRATORS else "generalized-alpha"
        rho = float(self.options["rho_inf"])
        if not 0.0 <= rho <= 1.0:
            raise SolverError(f"index3: rho_inf must be in [0, 1], got {rho}")
        if scheme == "HHT":
            af = (1.0 - rho) / (1.0 + rho)  # HHT α in [0, 1/3] for ρ∞ in [0.5, 1]
            af = min(af, 1.0 / 3.0)
            am = 0.0
        else:
            am = (2.0 * rho - 1.0) / (rho + 1.0)
            af = rho / (rho + 1.0)
        gam = 0.5 - am + af
        beta = 0.25 * (gam + 0.5) ** 2
        self.coef = (am, af, gam, beta)
        self.tol = self.options["tol"] if self.options["tol"] is not None else atol
        times = np.asarray(times, float)
        nt = len(times)
        rec = _Recorder(self, nt)
        dyn = self.dyn
        nq = self.nq
        t = times[0]
        q = np.array(q0, float)
        bs = self._bs(q, np.asarray(v0, float))
        qd = dyn.qd(bs, v0)
        J = self.system.jacobian_auto(q, t, self.angles)
        self.rows = rank_info(J).independent
        qdd, lam = self._consistent_acc(q, qd, t)
        a = qdd.copy()
        work, power = 0.0, self._power
        self._y_out = (q, qd, work)
        rec.record(t, None)
        h_target = dt if dt else _default_dt(times)
        self._K = None
        try:
            for k in range(1, nt):
                t_out = times[k]
                n = max(1, int(math.ceil((t_out - t) / h_target - 1e-9)))
                h_nom = (t_out - t) / n
                while t < t_out - 1e-12 * max(1.0, abs(t_out)):
                    h = min(h_nom, t_out - t)
                    while True:
                        try:
                            res = self._step(t, h, q, qd, qdd, a, lam)
                            break
                        except _Failure as exc:
                            h *= 0.5
                            self._K = None
                            if h < 1e-10 * max(1.0, times[-1] - times[0]):
                                rec.fail(t, f"index3: the Newton iteration does not converge at t = {t:.6g} s "
                                            f"even with step {h:.3g} s: {exc}")
                    q1, qd1, qdd1, a1, lam1, p1 = res
                    if not np.all(np.isfinite(q1)) or not np.all(np.isfinite(qd1)):
                        rec.fail(t, f"the solution became NaN/inf at t = {t + h:.6g} s")
                    work += 0.5 * h * (power + p1)
                    power = p1
                    t = t + h
                    q, qd, qdd, a, lam = q1, qd1, qdd1, a1, lam1
                    self._update_windings(q)
                    rec.nsteps += 1
                qd_out = self._project_qd(q, qd, t, fresh=True) if self.options["project_velocities"] else qd
                self._y_out = (q, qd_out, work)
                rec.record(t_out, None)
        except _Stop:
            pass
        return rec.result(self)

    def unpack(self, t, y):
        q, qd, work = self._y_out
        v = velocities_from_rates(self._bs(q, np.zeros(self.nv)), qd, self.dyn.nmov)
        return q, v, work

    def _bs(self, q, v):
        from .mass import body_state

        return body_state(self.model, self.dyn.mass, q, v)

    def _forces(self, q, qd, t):
        """M_q blocks (nmov, 7, 7), Q_q (nq,), C (nmov, 6, 7), v, power."""
        from .mass import mass_blocks, velocity_map

        dyn = self.dyn
        nmov = dyn.nmov
        bs0 = self._bs(q, np.zeros(self.nv))
        v = velocities_from_rates(bs0, qd, nmov)
        ev = dyn.evaluate(q, v, t, self.refs, with_gamma=False)
        bs = ev.bs
        C = velocity_map(bs, nmov)
        Mv = mass_blocks(dyn.mass, bs)
        Mq = np.einsum("bki,bkl,blj->bij", C, Mv, C)
        V = v.reshape(nmov, 6)
        w, rho = V[:, 3:], bs.rho[:nmov]
        cdq = np.zeros((nmov, 6))
        cdq[:, :3] = cross(w, cross(w, rho))
        g = ev.f.reshape(nmov, 6) - np.einsum("bij,bj->bi", Mv, cdq)
        Qq = np.einsum("bki,bk->bi", C, g).reshape(-1)
        self.nfev += 1
        return Mq, Qq, ev

    def _assemble_K(self, Mq, J):
        """The iteration matrix [M_q, Jᵀ; J, 0] (kept rows), factorised."""
        nq = self.nq
        m = len(self.rows)
        nmov = self.dyn.nmov
        Jr = J[self.rows] if not sps.issparse(J) else J.tocsr()[self.rows]
        idx = (np.arange(nmov) * 7)[:, None, None]
        ri = (idx + np.arange(7)[None, :, None]) + 0 * np.arange(7)[None, None, :]
        ci = (idx + np.arange(7)[None, None, :]) + 0 * np.arange(7)[None, :, None]
        self.nfactor += 1
        if self.dyn.sparse:
            Ms = sps.csr_matrix((Mq.reshape(-1), (ri.reshape(-1), ci.reshape(-1))), shape=(nq, nq))
            Jr = sps.csr_matrix(Jr)
            K = sps.bmat([[Ms, Jr.T], [Jr, None]], format="csc")
            lu = splu(K)
            return lambda b: lu.solve(b)
        K = np.zeros((nq + m, nq + m))
        K[ri.reshape(-1), ci.reshape(-1)] = Mq.reshape(-1)
        Jd = Jr.toarray() if sps.issparse(Jr) else Jr
        K[:nq, nq:] = Jd.T
        K[nq:, :nq] = Jd
        lu = sla.lu_factor(K, check_finite=False)
        return lambda b: sla.lu_solve(lu, b, check_finite=False)

    def _project_qd(self, q, qd, t, fresh=False):
        """q̇ with Φq q̇ = −Φt, closest to the given one in the M_q metric."""
        nq = self.nq
        J = self.system.jacobian_auto(q, t, self.angles)
        res = J[self.rows] @ qd + self.system.phit(q, t, self.angles)[self.rows]
        if not res.size:
            return qd
        solve = self._K
        if fresh or solve is None:
            Mq, _, _ = self._forces(q, qd, t)
            solve = self._assemble_K(Mq, J)
        for _ in range(3):
            qd = qd + solve(np.concatenate([np.zeros(nq), -res]))[:nq]
            res = J[self.rows] @ qd + self.system.phit(q, t, self.angles)[self.rows]
            if np.max(np.abs(res)) <= 1e-14 * (1.0 + np.max(np.abs(qd))):
                break
        return qd

    def _mq_times(self, Mq, x):
        return np.einsum("bij,bj->bi", Mq, x.reshape(-1, 7)).reshape(-1)

    def _consistent_acc(self, q, qd, t):
        Mq, Qq, ev = self._forces(q, qd, t)
        J = self.system.jacobian_auto(q, t, self.angles)
        solve = self._assemble_K(Mq, J)
        gamma = self.system.gamma(q, qd, t, self.angles)[self.rows]
        x = solve(np.concatenate([Qq, gamma]))
        self._power = self._power_of(ev, x[self.nq:], q, t)
        return x[: self.nq], x[self.nq:]

    def _power_of(self, ev, lam, q, t):
        p = ev.power
        if self.dyn.timed:
            phit = self.system.phit(q, t, self.angles)[self.rows]
            p += float(lam @ phit)
        return p

    def _step(self, t, h, q0, qd0, qdd0, a0, lam0):
        am, af, gam, beta = self.coef
        nq = self.nq
        t1 = t + h
        bp = (1 - am) / (h * h * beta * (1 - af))  # ∂q̈/∂q
        qdd = qdd0.copy()
        lam = lam0.copy()

        def kin(qdd):
            a1 = (af * qdd0 - am * a0 + (1 - af) * qdd) / (1 - am)
            q1 = q0 + h * qd0 + h * h * (0.5 - beta) * a0 + h * h * beta * a1
            qd1 = qd0 + h * (1 - gam) * a0 + h * gam * a1
            return a1, q1, qd1

        tol = self.tol
        converged = False
        prev = np.inf
        for it in range(self.options["max_iter"]):
            a1, q1, qd1 = kin(qdd)
            Mq, Qq, ev = self._forces(q1, qd1, t1)
            J = self.system.jacobian_auto(q1, t1, self.angles)
            phi = self.system.phi(q1, t1, self.angles)[self.rows]
            Jr = J[self.rows]
            r1 = self._mq_times(Mq, qdd) + Jr.T @ lam - Qq
            r2 = bp * phi
            if self._K is None:
                self._K = self._assemble_K(Mq, J)
            dx = self._K(-np.concatenate([r1, r2]))
            dq = dx[:nq] / bp
            qdd += dx[:nq]
            lam += dx[nq:]
            err = np.max(np.abs(dq))
            if err <= tol and np.max(np.abs(phi)) <= 10 * tol:
                converged = True
                break
            if it >= 2 and err > 0.25 * prev:
                self._K = None  # slow: refactorise at the current iterate
            prev = err
        if not converged:
            raise _Failure(f"no convergence in {self.options['max_iter']} iterations (last correction {err:.3g})")
        a1, q1, qd1 = kin(qdd)
        if self.options["project_velocities"] == "state":
            qd1 = self._project_qd(q1, qd1, t1)
        p1 = self._power_of(ev, lam, q1, t1)  # forces of the last iterate (the work is O(h²) anyway)
        return q1, qd1, qdd, a1, lam, p1


FORMULATIONS = {cls.name: cls for cls in (ProjectionFormulation, BaumgarteFormulation, PenaltyFormulation,
                                           AugmentedLagrangianFormulation, Index3Formulation, PartitioningFormulation)}


def get_formulation(name):
    """The formulation class registered as ``name``."""
    try:
        return FORMULATIONS[name]
    except KeyError:
        raise SolverError(f"unknown formulation {name!r}", hint=f"use one of {', '.join(FORMULATIONS)}") from None
