"""Coordinate partitioning (Wehage–Haug): integrate the independent coordinates only.

``partitioning`` coordinate partitioning (Wehage–Haug): the q-coordinates split into
                dependent ones (pivot columns of Φq) and dof independent ones u; only (u, u̇)
                are integrated; q follows from Φ(q, t) = 0 by Newton, q̇ from Φq q̇ = −Φt.
                The independent coordinates are chosen by a pivoted QR of the null space of
                Φq; after every step the choice is made again and the partition renewed
                (the integrator restarted) when the current coordinates parametrise the
                null space worse than the best ones by a factor ``rcond`` (default 0.5).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sps

from ..analysis import rank_info
from .contract import Formulation, _Failure, _Restart
from .index3 import Index3Formulation
from .mass import velocities_from_rates

__all__ = ["PartitioningFormulation"]


# ====================================================================== partitioning
class PartitioningFormulation(Formulation):
    """Coordinate partitioning: integrate the independent coordinates u and their rates."""

    name = "partitioning"
    defaults = {"tol": 1e-12, "max_iter": 15, "rcond": 0.5}
    crossing_formulation = Index3Formulation

    def initial_state(self, t, q, v):
        """y = [u (independent coordinates), u̇, W = 0] of consistent q, v at time t (s)."""
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
        """[u̇, ü, Ẇ]: the dependent coordinates are solved from Φ = 0, then the reduced equations."""
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

    def state_from(self, t, q, v, work):
        """y = [u, u̇, W] in a partition chosen anew at q (see :meth:`initial_state`)."""
        y = self.initial_state(t, q, v)
        y[-1] = work
        return y

    def singular_measure(self, t, y):
        """:meth:`.equations.Dynamics.singularity` at y."""
        q, v, _ = self.unpack(t, y)
        ev = self.dyn.evaluate(q, v, t, self.refs, with_gamma=False, with_forces=False)
        return self.dyn.singularity(ev)

    def unpack(self, t, y):
        """(q, v, W): all coordinates recovered from u, velocities (m/s, rad/s), work (J)."""
        q, qd, _ = self._full(t, y)
        v = velocities_from_rates(self._bs(q), qd, self.dyn.nmov)
        return q, v, y[-1]

    def accept(self, t, y):
        """After an accepted step: keep the solved coordinates, update the angle windings, and renew
        the partition where it has become ill-conditioned (a restart in the new coordinates);
        otherwise None."""
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
