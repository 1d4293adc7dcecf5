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

The solver contract and the integrator driver are in :mod:`.contract`; ``partitioning``
(:mod:`.partitioning`) and ``index3`` (:mod:`.index3`) have modules of their own. This module
holds the index-1 family and the registry by name.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
from scipy.sparse.linalg import splu

from ...errors import SolverError
from ..analysis import rank_info
from ..linalg import RowSolver
from .contract import INTEGRATORS, SINGULAR_ZONE_MAX, DynamicsResult, Formulation, _Failure, step_too_large
from .index3 import Index3Formulation
from .partitioning import PartitioningFormulation
from .recursive import RecursiveFormulation
from .semirecursive import SemiRecursiveFormulation

__all__ = ["Formulation", "DynamicsResult", "FORMULATIONS", "INTEGRATORS", "get_formulation"]


# ====================================================================== index-1 family
class _IndexOne(Formulation):
    """State y = [q (nq), v (nv), W]; subclasses supply the accelerations."""

    crossing_formulation = Index3Formulation

    def initial_state(self, t, q, v):
        self._last = None
        return np.concatenate([q, v, [0.0]])

    def unpack(self, t, y):
        return y[: self.nq], y[self.nq: self.nq + self.nv], y[-1]

    def state_from(self, t, q, v, work):
        """y = [q, v, W] with v projected onto the joints (the crossing's velocities satisfy
        them to the step's order only)."""
        ev = self.dyn.evaluate(q, v, t, self.refs, with_gamma=False, with_forces=False)
        try:
            v = self.dyn.project_velocities(ev, v)
        except np.linalg.LinAlgError:
            pass  # at the singular configuration itself: keep the step's velocities
        self._last = None
        return np.concatenate([q, v, [work]])

    def onto_joints(self, t, y):
        """y projected onto the joints: mass-weighted Newton on the positions (to
        :data:`.contract.CROSSING_NEWTON_TOL`), then the velocities."""
        from .contract import CROSSING_NEWTON_TOL

        if self._fast is not None:
            return self._fast.project(t, y, CROSSING_NEWTON_TOL, 10)[0]
        nq, nv = self.nq, self.nv
        q = np.array(y[:nq], float)
        dyn = self.dyn
        for _ in range(10):
            phi = dyn.phi(q, t, self.angles)
            if not phi.size or np.max(np.abs(phi)) <= CROSSING_NEWTON_TOL:
                break
            ev = dyn.evaluate(q, np.zeros(nv), t, self.refs, with_gamma=False, with_forces=False)
            r = phi[dyn.model_rows]
            q = q - dyn.qd(ev.bs, ev.minv_jt().T @ ev.solve_S(r[dyn.rows] if len(dyn.redundant) else r))
            Qb = q.reshape(-1, 7)
            Qb[:, 3:] /= np.linalg.norm(Qb[:, 3:], axis=1)[:, None]
        out = self.state_from(t, q, y[nq: nq + nv], y[-1])
        return out

    def singular_measure(self, t, y):
        """:meth:`.equations.Dynamics.singularity` at y (compiled when the fast path runs)."""
        if self._fast is not None:
            return self._fast.singularity(t, y)
        ev = self.dyn.evaluate(y[: self.nq], y[self.nq: self.nq + self.nv], t, self.refs, with_gamma=False,
                               with_forces=False)
        return self.dyn.singularity(ev)

    def singular_measure_at(self, t, q):
        """The measure at the coordinates q (compiled when the fast path runs)."""
        if self._fast is None:
            return super().singular_measure_at(t, q)
        return self._singularity(t, np.concatenate([q, np.zeros(self.nv + 1)]))

    def _evaluate(self, t, q, v):
        return self.dyn.evaluate(q, v, t, self.refs)

    def _setup_fast(self, baumgarte=None, penalty=None):
        """Use the compiled right-hand side (:mod:`.fast`) when it applies; where it applies but
        its library is not compiled yet, remember its set-up for :meth:`_late_fast`."""
        if self.options.get("fast", True):
            from .fast import applies, fast_rhs

            self._fast = fast_rhs(self.dyn, self.angles, self.refs, baumgarte, penalty,
                                  planar=bool(self.options.get("planar", True)))
            if self._fast is None and applies(self.dyn):
                self._fast_pending = (baumgarte, penalty)

    def _compiled_when_ready(self, pending):
        """The compiled right-hand side (:class:`.fast.FastRHS` with the (baumgarte, penalty) of
        ``pending``) at the current angle references once its library is ready, else None."""
        from .fast import FastRHS
        from .library import library_ready

        if not library_ready(self.dyn):
            return None
        try:
            return FastRHS(self.dyn, self.angles, self.refs, *pending, planar=bool(self.options.get("planar", True)))
        except ImportError:  # pragma: no cover - numba vanished
            return None

    def _step_projection(self):
        """(tol, max_iter) of the projection onto the joints after accepted steps, or None."""
        return None

    def _compiled_loop_applies(self, times, rtol, atol, integrator="DOP853"):
        fast = self._fast
        if integrator == "Radau":
            from .implicit import FORMULATIONS, MAX_NV

            # the Newton matrix is the analytic Jacobian of :mod:`.implicit`, dense (the compiled one has no
            # contacts, and the compiled Radau loop no contact step limit: scipy's Radau takes them)
            if self.name not in FORMULATIONS or self.dyn.nv > MAX_NV or self.dyn.forces.contacts is not None:
                return False
        # RK4 reads no tolerance (only the singular-configuration zone does, as in the Python loop)
        tolerances = integrator == "RK4" or (np.ndim(rtol) == 0 and np.ndim(atol) == 0 and np.isfinite(rtol)
                                             and atol >= 0)
        return bool(self.options.get("compiled_loop", False) and fast is not None and fast.self_contained
                    and tolerances and times[-1] > times[0] and np.all(np.diff(times) >= 0))

    def _run_compiled(self, times, y0, rec, rtol, atol, integrator="DOP853", dt=None):
        """DOP853, Radau or RK4 (step ``dt`` s, None: :func:`.contract.default_dt`) in one compiled
        loop (:meth:`.fast.FastRHS.dop853`, :meth:`.fast.FastRHS.radau`, :meth:`.fast.FastRHS.rk4`):
        the steps, projections, angle bookkeeping and singular-configuration watch of
        :meth:`_run_scipy` (:meth:`_run_rk4`) without returning to Python per step."""
        from . import _dop853 as D
        from . import _radau as R
        from . import _rk4 as R4
        from .contract import default_dt

        eps100 = 100 * np.finfo(float).eps
        if integrator != "RK4" and rtol < eps100:  # as scipy's validate_tol
            import warnings

            warnings.warn(f"At least one element of `rtol` is too small. Setting `rtol = np.maximum(rtol, {eps100})`.",
                          stacklevel=4)
            rtol = eps100
        ptol, max_iter = self._step_projection() or (None, 0)
        rec.notes.append(f"{integrator} in the compiled loop"
                         + (" with the compiled analytic Jacobian" if integrator == "Radau" else ""))
        rec.compiled_loop = True
        if integrator == "RK4":
            h_target = dt if dt else default_dt(times)  # the whole run's, as the Python loop

            def loop(part, y, rtol, atol, ptol, max_iter, meas_ref, zone):
                return self._fast.rk4(part, y, h_target, ptol, max_iter, meas_ref=meas_ref, zone=zone)
        else:
            loop = self._fast.radau if integrator == "Radau" else self._fast.dop853
        k0 = 0  # times[k0] is the start of the current compiled run
        last_fallback = -np.inf
        while True:
            meas = self._meas_ref if len(self.model.joint_measures) else None
            part = times[k0:]
            status, Y, snaps, stats, y_end = loop(part, y0, rtol, atol, ptol, max_iter, meas_ref=meas,
                                                  zone=self.singular_zone if self.dyn.has_loops else 0.0)
            self.nfev += int(stats[D.S_NFEV])
            # one factorisation of S per compiled evaluation, two per Jacobian (its evaluation, its mobility)
            self.nfactor += int(stats[D.S_NFEV]) + (2 * int(stats[R.S_NJEV]) if integrator == "Radau" else 0)
            self.nproject += int(stats[D.S_NPROJECT])
            rec.nsteps += int(stats[D.S_NSTEPS])
            if self.dyn.has_loops and integrator != "Radau":  # (Radau probes inside every step)
                watched, probed = self.probed_steps
                self.probed_steps = (watched + int(stats[D.S_NSTEPS]), probed + int(stats[D.S_PROBED]))
            for j in range(1, int(stats[D.S_K])):
                mref = self._fast.restore(snaps[j])
                if meas is not None:
                    self._meas_ref = mref
                rec.record(part[j], Y[j], output_state=ptol is not None)  # the loop projected the frames
            t_stop = float(stats[D.S_T])
            if status == D.STEP_COLLAPSE and self.dyn.has_loops and t_stop > last_fallback \
                    and self._singularity(t_stop, y_end) < SINGULAR_ZONE_MAX:
                # Radau's Newton iteration failed on the way into a singular configuration, before
                # its zone (as in :meth:`_run_scipy`): cross it from the last accepted state
                last_fallback = t_stop
            elif status != D.SINGULAR:
                break
            # stopped at an accepted step near a singular configuration: cross it, then go on
            k = k0 + int(stats[D.S_K])
            mref = self._fast.restore(self._fast.dd.copy())  # the references at the stop
            if len(self.model.joint_measures):
                self._meas_ref = mref
            # the RK4 loop's crossing steps are at most its own (as :meth:`_run_rk4`)
            h_hint = float(stats[R4.S_STEP]) if integrator == "RK4" else np.inf
            t_x, y_x, k = self._cross_singular(t_stop, y_end, rec, times, k, h_hint)
            if k >= len(times):
                return
            times = np.concatenate([[t_x], times[k:]])
            k0, y0 = 0, y_x
        t_fail, t_eval = stats[D.S_T_FAIL], stats[D.S_T_EVAL]
        if integrator == "RK4":  # the Python RK4 loop's messages
            if status == D.NOT_FINITE:
                rec.fail(t_fail, f"the equations of motion could not be solved near t = {t_fail:.6g} s: the "
                                 f"accelerations are not finite at t = {t_eval:.6g} s"
                         + step_too_large(stats[R4.S_STEP]))
            elif status == D.NAN_STATE:
                rec.fail(t_fail, f"the solution became NaN/inf at t = {t_fail:.6g} s"
                         + step_too_large(stats[R4.S_STEP]))
            return
        if status == D.NOT_FINITE:
            rec.fail(t_fail, f"the equations of motion could not be solved after t = {t_fail:.6g} s: the accelerations "
                             f"are not finite at t = {t_eval:.6g} s")
        elif status == D.STEP_COLLAPSE:
            rec.fail(t_fail, f"the integrator {integrator} failed after t = {t_fail:.6g} s: Required step size is less "
                             "than spacing between numbers. (step size collapse: the model is stiff, singular or blows "
                             "up)")
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
        constraints = self.dyn.forces.contact_constraints
        if constraints is not None:  # the active unilateral contacts' rows (:mod:`.unilateral`)
            vd, fc, power_u, _, _ = constraints.solve(self.dyn, ev, vd, self.dyn.forces.contact_modes(self.refs))
            power_c += power_u + self._driver_power_of(ev, fc)
        out = np.empty(nq + nv + 1)
        out[:nq] = self.dyn.qd(ev.bs, v)
        out[nq: nq + nv] = vd
        out[-1] = ev.power + power_c
        self._last = (y, ev)
        return out

    def accelerations(self, ev, t, q, v):
        """(v̇, power of the driving constraints)."""
        raise NotImplementedError

    def _driver_power_of(self, ev, f):
        """The driving constraints' power (W) from the extra reactions Δλ = S⁻¹ Jr M⁻¹ f that a
        generalised force f (nv,) on the bodies (the unilateral contacts') draws from them: a driven
        part pushing on a contact is held to its motion by its driver, which does that work."""
        dyn = self.dyn
        if not dyn.timed or not len(dyn.rows) or not np.any(f):
            return 0.0
        phit = ev.phit[dyn.rows] if len(dyn.redundant) else ev.phit
        return float(ev.solve_S(ev.minv_jt() @ f) @ phit)

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
    defaults = {"tol": None, "max_iter": 5, "fast": True, "compiled_loop": True, "activation": True, "planar": True}

    def __init__(self, dyn, **kw):
        super().__init__(dyn, **kw)
        self._qrows = None
        if dyn.forces.contact_constraints is not None:
            # False: every declared unilateral contact's rows in the equations, the open ones with λ = 0
            # (the same motion; the cost the active set saves, :mod:`.unilateral`)
            dyn.forces.contact_constraints.activation = bool(self.options["activation"])
        if dyn.forces.contacts is not None:
            # False: the compiled right-hand side evaluates every declared compliant contact point, not only
            # those of the body pairs its broad phase finds close (the same forces; :mod:`._contact_kernels`)
            dyn.forces.contacts.activation = bool(self.options["activation"])
        self._setup_fast()

    def accelerations(self, ev, t, q, v):
        """(v̇, power of the driving constraints) from the kept rows, Jv v̇ = γ."""
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
        """After an accepted step: update the angle windings, then project q and v onto the joints."""
        self._update_windings(y[: self.nq], aux=self._fast_aux(y), v=y[self.nq: self.nq + self.nv])
        self._choose_rows(t, y)
        return self._project(t, y)

    def output_state(self, t, y):
        """The state of an output frame, projected onto the joints (the integrator's state is kept)."""
        new = self._project(t, y, count=False)
        return y if new is None else new


class BaumgarteFormulation(_IndexOne):
    """Index 1 with Baumgarte stabilisation Jv v̇ = γ̂ − 2α Φ̇ − β² Φ."""

    name = "baumgarte"
    defaults = {"alpha": 10.0, "beta": 10.0, "fast": True, "compiled_loop": True, "planar": True}

    def __init__(self, dyn, **kw):
        super().__init__(dyn, **kw)
        self._setup_fast((float(self.options["alpha"]), float(self.options["beta"])))

    def accelerations(self, ev, t, q, v):
        """(v̇, power of the driving constraints), with Jv v̇ = γ − 2α Φ̇ − β² Φ."""
        dyn = self.dyn
        a, b = self.options["alpha"], self.options["beta"]
        phi = dyn.phi(ev.q, t, self.angles)[dyn.model_rows]
        phid = ev.J @ v + ev.phit
        extra = -2.0 * a * phid - b * b * phi
        if len(dyn.redundant):
            extra = extra[dyn.rows]
        return self._solve_kept(ev, extra)

    def accept(self, t, y):
        """After an accepted step: update the angle windings (no projection; returns None)."""
        self._update_windings(y[: self.nq], aux=self._fast_aux(y), v=y[self.nq: self.nq + self.nv])
        self._choose_rows(t, y)
        return None


class PenaltyFormulation(_IndexOne):
    """Penalty formulation (all rows, redundant or not); see the module docstring."""

    name = "penalty"
    defaults = {"penalty": 1e7, "xi": 1.0, "omega": 10.0, "fast": True, "compiled_loop": True, "planar": True}
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

    def finer_options(self, factor):
        """The joints' compliance is 1/α: ``factor`` times the penalty makes it that much smaller (the motion's
        departure from the rigid joints' is first order in it)."""
        return {"penalty": float(self.options["penalty"]) * factor}

    def accelerations(self, ev, t, q, v):
        """(v̇, power of the driving constraints), with λ from the penalty α and the damped Φ, Φ̇."""
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
        """After an accepted step: update the angle windings (no projection; returns None)."""
        self._update_windings(y[: self.nq], aux=self._fast_aux(y), v=y[self.nq: self.nq + self.nv])
        self._choose_rows(t, y)
        return None


class AugmentedLagrangianFormulation(PenaltyFormulation):
    """Iterated augmented Lagrangian with Baumgarte terms (exact index-1 limit)."""

    name = "augmented-lagrangian"
    defaults = {"penalty": 1e5, "xi": 1.0, "omega": 10.0, "tol": 1e-12, "max_iter": 30, "fast": True,
                "compiled_loop": True, "planar": True}
    iterate = True


FORMULATIONS = {cls.name: cls for cls in (ProjectionFormulation, BaumgarteFormulation, PenaltyFormulation,
                                           AugmentedLagrangianFormulation, Index3Formulation, PartitioningFormulation,
                                           SemiRecursiveFormulation, RecursiveFormulation)}


def get_formulation(name):
    """The formulation class registered as ``name``."""
    try:
        return FORMULATIONS[name]
    except KeyError:
        raise SolverError(f"unknown formulation {name!r}", hint=f"use one of {', '.join(FORMULATIONS)}") from None
