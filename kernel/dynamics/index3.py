"""The index-3 formulation: generalised-α (or HHT) on the equations in q.

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
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sps
from scipy.sparse.linalg import splu

from ...errors import SolverError
from ..analysis import rank_info
from .contract import INDEX3_INTEGRATORS, Formulation, _default_dt, _Failure, _Recorder, _Stop
from .mass import cross, velocities_from_rates

__all__ = ["Index3Formulation"]


# ====================================================================== index 3
class Index3Formulation(Formulation):
    """Generalised-α (or HHT) on the index-3 equations in q; see the module docstring."""

    name = "index3"
    integrators = INDEX3_INTEGRATORS
    default_integrator = "generalized-alpha"
    defaults = {"rho_inf": 0.9, "tol": None, "max_iter": 12, "project_velocities": "output"}

    def solve(self, times, q0, v0, *, integrator="generalized-alpha", rtol=1e-8, atol=1e-10, dt=None):
        self.check_integrator(integrator)
        scheme = integrator
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
