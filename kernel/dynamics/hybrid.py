"""The event-driven integration of unilateral contacts (:mod:`.unilateral`).

The smooth phases between switches run with the formulation's right-hand side (the active contacts'
rows in it) under scipy's error-controlled integrators, stepped one step at a time as in
:meth:`.contract.Formulation._run_scipy`. After every step the switching functions of
:class:`EventDriver` are compared at its two ends; where one changes sign, its root is located on the
step's dense output (``scipy.optimize.brentq`` to :data:`TIME_TOL` relative), the frames before it are
recorded, and at the root the switch is made (a step is bounded so that no point can pass right through
a sphere or a box between its two ends, :meth:`.unilateral.UnilateralContacts.pass_limit`):

1. impacts (:meth:`.unilateral.UnilateralContacts.impact`) until no touching point approaches — each an
   Event ``impact`` of the Motion (contact, time, approach speed, impulse); the kinetic energy they take
   is added to the non-conservative work, so the run's energy balance holds;
2. the modes chosen again (:meth:`.unilateral.UnilateralContacts.resolve_modes`) — each change an Event
   ``contact`` (closes, separates, sticks, slips);
3. the velocities projected onto the active rows (the joints kept), the integrator restarted there.

Switching functions, fixed for a step by the modes at its start (a sign change from > 0 to ≤ 0 is a
switch): an open point apart (its gap g beyond the touching band,
:attr:`.unilateral.UnilateralContacts.closed_gap`): g; an open point touching: ġ + 2 CLOSED_SPEED (it
approaches); an active point: λ_n + its force tolerance (separation: the mode choice can leave a point of
redundant rows active at λ_n = 0); a sticking contact: μ_s Σ λ_n − |Σ λ_t| plus the
round-off its mode choice allows (slip, :meth:`.unilateral.UnilateralContacts.cone_values`); a
slipping point with friction: v_t·ŝ (its slip stops or reverses). A run with unilateral contacts notes
the impacts, the switches and the time spent with k contacts active.

Each root found must change the state, or the same root is found again at once without end; a
sticking contact whose slip the mode choice refuses (it would slip backwards) is left sticking, and its cone's
function is not watched over the next step. A gap
reaching 0 leaves the point touching, watched by its approach from then on (not by its gap, which is
round-off there: 1e-18 m on a chain of 30 mm parts, with either sign). An approach's root lies beyond
the impact threshold: approaching at 2 CLOSED_SPEED the point takes an impact (at CLOSED_SPEED it could
be left as it was, open, pressing with less than the force tolerance).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

from ...errors import SolverError
from ..motion import Event
from .complementarity import RCOND
from .integrators import names as integrator_names
from .scipy_implicit import implicit_class, with_max_step
from .unilateral import CLOSED_SPEED, OPEN, SLIP, SLIP_DIRECTION_SPEED, STATE_WIDTH, STICK

__all__ = ["EventDriver", "TIME_TOL"]

#: event times are located to this fraction of the run's span (and 1e-14 s at least)
TIME_TOL = 1e-13
#: switches at one instant beyond this many: the run stops (a contact that cannot be resolved)
MAX_SWITCHES_AT_ONCE = 1000
_MODE_NAMES = {OPEN: "open", SLIP: "slip", STICK: "stick"}
#: the switching functions that are values of the contact forces (the others are of the positions and velocities)
_OF_FORCES = ("separation", "cone")


class EventDriver:
    """Integrates a formulation with unilateral contacts (see the module docstring)."""

    def __init__(self, form, rec, rtol, atol):
        self.form, self.rec = form, rec
        self.dyn = form.dyn
        self.cc = self.dyn.forces.contact_constraints
        self.rtol, self.atol = rtol, atol
        self.events = []
        self.impacts = 0
        self.switches = 0
        #: integrators made again at a switch (each starts from a small step and, BDF, from order 1)
        self.restarts = 0
        self.active_time = {}
        self.rows_total = 0.0

    # ------------------------------------------------------------------ state helpers
    @property
    def state(self):
        """The unilateral contacts' state in the formulation's references: per point its mode (OPEN,
        SLIP, STICK) and slip direction (a view, :meth:`.forces.ForceElements.contact_modes`)."""
        return self.dyn.forces.contact_modes(self.form.refs)

    def _evaluate(self, t, y):
        form = self.form
        q, v = y[: form.nq], y[form.nq: form.nq + form.nv]
        ev = form.dyn.evaluate(q, v, t, form.refs)
        vd0, _ = form._solve_kept(ev)
        return ev, vd0

    def _solution(self, t, y):
        ev, vd0 = self._evaluate(t, y)
        return ev, self.cc.solve(self.dyn, ev, vd0, self.state)

    def _body_state(self, y):
        """The bodies' poses and velocities at the state y, at unit Euler parameters as the equations are
        evaluated (the switching functions' values from it and from an evaluation agree to the bit)."""
        from .mass import body_state

        form = self.form
        return body_state(form.model, self.dyn.mass, self.dyn.unit_parameters(y[: form.nq]),
                          y[form.nq: form.nq + form.nv])

    def _pass_limit(self, t, y):
        """The largest step (s) from (t, y) that carries no point through a finite shape unseen (for a
        new solver; a running one takes it from :meth:`kinds`)."""
        return self.cc.pass_limit(*self.cc.gaps(self._body_state(y), self.state), self.state)

    def _kinetic(self, t, y):
        return self.dyn.kinetic(self._body_state(y))

    def _energy(self, y):
        """T + V (J) at the state y (V of gravity, springs and compliant elements, at the formulation's references)."""
        bs = self._body_state(y)
        return self.dyn.kinetic(bs) + self.dyn.forces.potential(bs, self.form.refs)

    # ------------------------------------------------------------------ switching functions
    def kinds(self, t, y):
        """The switching functions for a step from (t, y), list of (kind, index), their values there, and
        the largest step that carries no point through a finite shape unseen."""
        cc = self.cc
        solution = self._solution(t, y)
        ev, (vd, fc, power, lam_n, f_t) = solution
        g, gd, vt = cc.gaps(ev.bs, self.state)
        modes = cc.modes(self.state)
        out = []
        for i in range(cc.n):
            if modes[i] == OPEN:
                out.append(("gap" if g[i] > cc.closed_gap[i] else "approach", i))
            else:
                out.append(("separation", i))
                if modes[i] == SLIP and cc.mu_d[i] > 0:
                    out.append(("reversal", i))
        for o in cc.friction_margins(self.state, lam_n, f_t):
            out.append(("cone", o))
        return out, self.values(t, y, out, solution), cc.pass_limit(g, gd, vt, self.state)

    def values(self, t, y, kinds, solution=None):
        """The switching functions' values at (t, y) (``solution``: :meth:`_solution` there, if known; the
        contact forces are solved for only where a function needs them, a separation or a cone)."""
        cc = self.cc
        if solution is None and not any(kind in _OF_FORCES for kind, _ in kinds):
            bs, lam_n, f_t = self._body_state(y), None, None
        else:
            ev, (vd, fc, power, lam_n, f_t) = solution or self._solution(t, y)
            bs = ev.bs
        g, gd, vt = cc.gaps(bs, self.state)
        margins = None
        sdir = cc.slip_dirs(self.state)
        out = np.empty(len(kinds))
        for j, (kind, i) in enumerate(kinds):
            if kind == "gap":
                out[j] = g[i]
            elif kind == "approach":
                out[j] = gd[i] + 2.0 * CLOSED_SPEED
            elif kind == "separation":
                out[j] = lam_n[i] + cc.force_tol[i]
            elif kind == "reversal":
                out[j] = vt[i] @ sdir[i]
            else:
                if margins is None:
                    margins = cc.cone_values(self.state, lam_n, f_t)
                out[j] = margins.get(i, -1.0)
        return out

    # ------------------------------------------------------------------ switches
    def switch(self, t, y):
        """Impacts, then the modes, at (t, y): the state to restart from."""
        form, cc = self.form, self.cc
        nq, nv = form.nq, form.nv
        y = np.array(y, float)
        for _ in range(MAX_SWITCHES_AT_ONCE):
            ev, _ = self._evaluate(t, y)
            v_new, hits = cc.impact(self.dyn, ev, y[nq: nq + nv], self.state)
            if not hits:
                break
            T0 = self._kinetic(t, y)
            y[nq: nq + nv] = v_new
            y[-1] += self._kinetic(t, y) - T0  # the impact's work (≤ 0)
            for i, speed, impulse in hits:
                self.impacts += 1
                o = cc.owner[i]
                unit = ("m/s", "N s") if i < cc.np or not cc.limits.rot[(i - cc.np) // 2] else ("rad/s", "N m s")
                self.events.append(Event("impact", float(t), f"{cc.labels[o]}: impact at {-speed:.6g} {unit[0]}, "
                                                             f"impulse {impulse:.6g} {unit[1]}", (cc.items[o],)))
        else:
            self.rec.fail(t, f"more than {MAX_SWITCHES_AT_ONCE} impacts at t = {t:.6g} s")
        before = cc.resolve_modes(self.dyn, lambda state: self._evaluate(t, y), y[nq: nq + nv], self.state)
        after = cc.modes(self.state)
        for i in np.flatnonzero(before != after):
            self.switches += 1
            o = cc.owner[i]
            where = f"point {i}" if i < cc.np else ("lower", "upper")[(i - cc.np) % 2]
            self.events.append(Event("contact", float(t), f"{cc.labels[o]} {where}: "
                                                          f"{_MODE_NAMES[before[i]]} → {_MODE_NAMES[after[i]]}",
                                     (cc.items[o],)))
        T0 = self._kinetic(t, y)
        y = self.project(t, y, positions=False)
        y[-1] += self._kinetic(t, y) - T0
        return y

    def project(self, t, y, positions=True):
        """y with the active points' gaps closed (``positions``) and their velocities (normal, and
        tangential where sticking) zero, the joints kept."""
        form, cc = self.form, self.cc
        nq, nv = form.nq, form.nv
        if not np.any(cc.modes(self.state) > OPEN):
            return y
        y = np.array(y, float)
        ev, _ = self._evaluate(t, y)
        C, F, c, pts, kind, geo = cc.rows(ev.bs, self.state)
        live = cc.modes(self.state)[pts] > OPEN
        C, pts, kind = C[live], pts[live], kind[live]
        if positions:
            g = geo[2][np.searchsorted(geo[0], pts[kind == 0])]
            tol = cc.closed_gap[pts[kind == 0]] * 0.1
            if np.any(np.abs(g) > tol):
                Cn = C[kind == 0]
                ACt = cc.constrained_inverse(self.dyn, ev, Cn.T)
                dx = ACt @ np.linalg.lstsq(Cn @ ACt, -g, rcond=RCOND)[0]
                q = y[:nq] + self.dyn.qd(ev.bs, dx)
                Q = q.reshape(-1, 7)
                Q[:, 3:] /= np.linalg.norm(Q[:, 3:], axis=1)[:, None]
                y[:nq] = q
                new = form._project(t, y)
                if new is not None:
                    y = np.array(new, float)
                ev, _ = self._evaluate(t, y)
                C, F, c, pts, kind, geo = cc.rows(ev.bs, self.state)
                live = cc.modes(self.state)[pts] > OPEN
                C = C[live]
        v = y[nq: nq + nv]
        r = C @ v
        if np.any(np.abs(r) > 0):
            ACt = cc.constrained_inverse(self.dyn, ev, C.T)
            y[nq: nq + nv] = v - ACt @ np.linalg.lstsq(C @ ACt, r, rcond=RCOND)[0]
        return y

    def accept(self, t, y):
        """After an accepted step: the formulation's projection, the contacts', the slip directions."""
        new = self.form.accept(t, y)
        y = np.array(y if new is None else new, float)
        projected = self.project(t, y)
        if projected is not y and not np.array_equal(projected, y):
            # the active points' gaps closed (up to their touching band, 1e-7 m: a resting 1 kg part moves
            # 1e-7 m against gravity) and their velocities zeroed: the energy this takes is the contacts' work,
            # as an impact's is (else the run's energy check flags it at rtol ≤ 1e-9)
            projected[-1] += self._energy(projected) - self._energy(y)
        y = projected
        cc = self.cc
        bs = self._body_state(y)
        cc.accept(bs, self.state)
        _, _, vt = cc.gaps(bs, self.state)
        S = self.state[: STATE_WIDTH * cc.n].reshape(-1, STATE_WIDTH)
        speed = np.linalg.norm(vt, axis=1)
        # a slip slower than SLIP_DIRECTION_SPEED keeps its direction: its friction acts against the unit
        # v_t + SLIP_DIRECTION_SPEED ŝ₀, and ŝ₀ taken from v_t at every step fed back what the friction did to v_t
        # over the step (a ladder slipping at 5e-5 m/s just past its slip angle: a sideways slip of 1e-12 m/s
        # grew twentyfold a step, to 1e-4 m/s, and the ladder fell 2e-4 m off the closed form in 0.3 s)
        moving = (cc.modes(self.state) == SLIP) & (speed > max(CLOSED_SPEED, SLIP_DIRECTION_SPEED))
        S[moving, 1:] = vt[moving] / speed[moving, None]
        return y

    def _count(self, t0, t1):
        active = int(len(np.unique(self.cc.owner[self.cc.modes(self.state) > OPEN])))
        self.active_time[active] = self.active_time.get(active, 0.0) + (t1 - t0)

    # ------------------------------------------------------------------ the loop
    def start(self, t, y):
        """The initial state with its impacts and modes resolved."""
        return self.switch(t, y)

    def run(self, times, y, integrator):
        """Integrate over ``times`` from y (resolved by :meth:`start`), recording the frames."""
        form, rec = self.form, self.rec
        if integrator not in integrator_names(family="scipy"):
            raise SolverError(f"unilateral contacts need an error-controlled integrator, not {integrator!r}",
                              hint="use DOP853 (the default), RK45, RK23, Radau, BDF or LSODA")
        cls = implicit_class(integrator)  # BDF and Radau: a Newton iteration that stops at round-off
        t_end = float(times[-1])
        span = max(t_end - float(times[0]), 1e-300)
        xtol = max(TIME_TOL * span, 1e-14)
        nt = len(times)
        k = 1

        def make(t0, y0):
            return cls(form._counted_rhs, t0, y0, t_end, rtol=self.rtol, atol=self.atol,
                       max_step=self._pass_limit(t0, y0))

        t = float(times[0])
        solver = make(t, y)
        same_instant, last_switch, idle = 0, None, ()
        while k < nt:
            t0, y0 = solver.t, solver.y.copy()
            # a step must not carry a point through a finite shape and out again unseen
            kinds, v0, limit = self.kinds(t0, y0)
            # a point that ended the last step inside the touching band (0 < g ≤ closed_gap: its gap had no root)
            # and approaching: its impact is due now. Its function (the approach) starts ≤ 0 and would never cross,
            # so the point went through its shape or limit unseen (a sleeve's slide bouncing to rest on its
            # unilateral limit fell 0.19 m through it, BDF at rtol 1e-7)
            due = [j for j, kind in enumerate(kinds) if kind[0] == "approach" and v0[j] <= 0 and kind not in idle]
            if due and (last_switch is None or t0 > last_switch):
                y_hit = self.switch(t0, y0)
                same_instant, last_switch, idle = 0, t0, ()
                solver = make(t0, y_hit)
                self.restarts += 1
                continue
            solver = with_max_step(solver, limit, make)
            for j, kind in enumerate(kinds):
                if kind in idle:
                    v0[j] = -1.0
            idle = ()
            try:
                message = solver.step()
            except (np.linalg.LinAlgError, ArithmeticError, ValueError) as exc:
                rec.fail(t0, f"the equations of motion could not be solved after t = {t0:.6g} s: {exc}")
            if solver.status == "failed":
                rec.fail(t0, f"the integrator {integrator} failed after t = {t0:.6g} s: {message}")
            if not np.all(np.isfinite(solver.y)):
                rec.fail(t0, f"the solution became NaN/inf after t = {t0:.6g} s")
            rec.took_steps(1, solver.t)
            t1 = solver.t
            sol = solver.dense_output()
            v1 = self.values(t1, solver.y, kinds)
            crossed = np.flatnonzero((v0 > 0) & (v1 <= 0))
            if len(crossed):
                t_hit = t1
                for j in crossed:
                    f = lambda s, j=j: self.values(s, sol(s), [kinds[j]])[0]  # noqa: E731
                    if f(t_hit) <= 0:
                        t_hit = brentq(f, t0, t_hit, xtol=xtol)
                # the root is the last point before the switch: step just past it
                while k < nt and times[k] < t_hit:
                    rec.record(times[k], sol(times[k]))
                    k += 1
                self._count(t0, t_hit)
                y_hit = sol(t_hit)
                new = form.accept(t_hit, y_hit)
                before = (len(self.events), self.impacts)
                y_hit = self.switch(t_hit, y_hit if new is None else new)
                # a switch that changes nothing leaves the cones it was found by unwatched for a step (a sticking
                # contact at its cone's edge that cannot slip, :meth:`.unilateral.UnilateralContacts.resolve_modes`'
                # held points): else the same root is found again at once, without end. Gaps, approaches and
                # reversals stay watched (a point let through unwatched for a step loses energy)
                idle = {kinds[j] for j in crossed if kinds[j][0] == "cone"} \
                    if (len(self.events), self.impacts) == before else ()
                same_instant = same_instant + 1 if last_switch is not None and t_hit - last_switch <= xtol else 0
                last_switch = t_hit
                if same_instant > MAX_SWITCHES_AT_ONCE:
                    rec.fail(t_hit, f"the contacts switch without end at t = {t_hit:.6g} s")
                while k < nt and abs(times[k] - t_hit) <= 1e-12 * max(1.0, abs(t_hit)):
                    rec.record(times[k], y_hit)
                    k += 1
                if k < nt:
                    solver = make(t_hit, y_hit)
                    self.restarts += 1
                continue
            self._count(t0, t1)
            while k < nt and times[k] < t1 - 1e-12 * max(1.0, abs(t1)):
                rec.record(times[k], sol(times[k]))
                k += 1
            y_acc = self.accept(t1, solver.y)
            while k < nt and times[k] <= t1 + 1e-12 * max(1.0, abs(t1)):
                rec.record(times[k], y_acc)
                k += 1
            if not np.array_equal(y_acc, solver.y):
                solver.y = y_acc
                if hasattr(solver, "f"):
                    solver.f = form._counted_rhs(t1, y_acc)
            if solver.status == "finished" and k < nt:
                rec.record(times[k], solver.y)
                k += 1

    def notes(self):
        """The run's notes on its contacts: impacts, switches, time with k contacts active."""
        shares = ", ".join(f"{k}: {v:.6g} s" for k, v in sorted(self.active_time.items()))
        limits = f" and {self.cc.limits.n} unilateral joint limit(s)" if self.cc.limits.n else ""
        return [f"{len(self.cc.names)} unilateral contact(s) ({self.cc.np} point(s)){limits}: "
                f"{self.impacts} impact(s), "
                f"{self.switches} contact switch(es); time with k contacts active: {shares or 'none'}; "
                f"{self.restarts} restart(s) of the integrator"]
