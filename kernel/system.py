"""Evaluate the constraint system of a compiled Model: Φ, Φq, Φt, γ.

One generated-code call per constraint *type*; per-instance data comes from the group
arrays. Joint angles that enter equations (drivers, gears, screws) are kept continuous
across ±π by winding offsets w = 2π·round((θ_ref − θ_raw)/2π), where θ_ref is the
angle at the last accepted configuration, held in an :class:`AngleState`.
"""

from __future__ import annotations

import numpy as np

from .expressions import batch_evaluator

__all__ = ["AngleState", "System"]

_TWO_PI = 2.0 * np.pi


#: batch evaluators of drivers' time functions by the identity of a group's functions tuple
#: (kept with the tuple, so the identity stays valid); a run makes several Systems of one model
_BATCHES = {}
_BATCHES_MAX = 32


def _batch(functions):
    """:func:`~cadmotion.kernel.expressions.batch_evaluator` of ``functions``, built once per tuple."""
    hit = _BATCHES.get(id(functions))
    if hit is not None and hit[0] is functions:
        return hit[1]
    if len(_BATCHES) >= _BATCHES_MAX:
        _BATCHES.pop(next(iter(_BATCHES)))
    evaluator = batch_evaluator(functions)
    _BATCHES[id(functions)] = (functions, evaluator)
    return evaluator


def _repeats_moving_body(bodies, body_fixed):
    """True if some instance (row of ``bodies``, (n, n_slots)) names one moving body twice."""
    if bodies.shape[1] < 2:
        return False
    b = np.where(body_fixed[bodies], -1 - np.arange(bodies.shape[1]), bodies)  # fixed slots never match
    b = np.sort(b, axis=1)
    return bool(np.any(b[:, 1:] == b[:, :-1]))


class AngleState:
    """The last accepted value of every angle term, per group (the only mutable state)."""

    def __init__(self, model, q):
        self.ref = {}
        qf = model.q_full(q)
        for gi, g in enumerate(model.groups):
            if g.n_angles:
                self.ref[gi] = g.code.angles(qf[g.gather], g.markers)

    def copy(self):
        """An independent copy (the reference angles are arrays)."""
        new = AngleState.__new__(AngleState)
        new.ref = {k: v.copy() for k, v in self.ref.items()}
        return new


def _turns(ref, raw):
    """Whole turns (rad, multiples of 2π) that wind raw angles (rad, in (−π, π]) onto the
    continuous references ``ref`` nearest them."""
    return _TWO_PI * np.round((ref - raw) / _TWO_PI)


def _frames_copy(a, nt):
    """``a`` (n, ...) repeated for nt frames (nt n, ...), read-only where ``a`` is (the model's
    arrays are: the same array type for numba's compiled code)."""
    out = np.tile(a, (nt,) + (1,) * (a.ndim - 1))
    out.flags.writeable = a.flags.writeable
    return out


class System:
    """Numeric constraint functions of a :class:`~cadmotion.kernel.model.Model`.

    All methods take q (nq,) and, where needed, q̇ (nq,) and t (s); they return arrays
    over the nc constraint rows. ``angles`` is an :class:`AngleState`.
    """

    def __init__(self, model):
        self.model = model
        self._zeros_F = {gi: np.zeros((g.n, 3)) for gi, g in enumerate(model.groups)}
        self._zeros_W = {gi: np.zeros((g.n, g.n_angles)) for gi, g in enumerate(model.groups)}
        self._qd_fixed = np.zeros(len(model.q_fixed))
        self._F_time, self._F_values = None, {}  # see _F
        self._batch = {gi: _batch(g.functions) for gi, g in enumerate(model.groups) if len(g.functions) > 1}
        # per-call constants of the hot loops (Φ is evaluated several times per frame)
        self._has_angles = [g.n_angles > 0 for g in model.groups]
        self._q_fixed = model.q_fixed
        self._nc = model.nc
        self._rows = [(gi, g, int(g.row[0]), int(g.row[0]) + g.n * g.neq) for gi, g in enumerate(model.groups)]
        self._keep = {gi: g.jac_flat >= 0 for gi, g in enumerate(model.groups)}
        # a body may fill two slots of one instance (gear on a shared carrier): sum those entries
        # (two kept entries share a Jacobian position exactly when one moving body fills two slots)
        self._dup = {gi: _repeats_moving_body(g.bodies, model.body_fixed) for gi, g in enumerate(model.groups)}

    def _F(self, gi, g, t):
        """(n, 3) values f, f', f'' of the group's time functions at t (s).

        The values at the last time asked for are kept: a position iteration evaluates Φ
        several times at one t, and the drivers' functions are Python calls per instance
        (most of the time of a frame of a long driven loop)."""
        if not g.functions:
            return self._zeros_F[gi]
        if self._F_time != t:
            self._F_time, self._F_values = t, {}
        F = self._F_values.get(gi)
        if F is None:
            batch = self._batch.get(gi)
            F = batch(t) if batch is not None else np.array([fn(t) for fn in g.functions])
            self._F_values[gi] = F
        return F

    def time_values(self, gi, t):
        """(n, 3) values f, f', f'' of group ``gi``'s time functions at t (s) (zeros for a
        group without any)."""
        return self._F(gi, self.model.groups[gi], t)

    def _W(self, gi, g, Q, angles):
        if not self._has_angles[gi]:
            return self._zeros_W[gi]
        return _turns(angles.ref[gi], g.code.angles(Q, g.markers))

    def phi(self, q, t, angles):
        """Φ(q, t), shape (nc,)."""
        qf = np.concatenate((q, self._q_fixed))
        out = np.empty(self._nc)
        for gi, g, r0, r1 in self._rows:
            Q = qf[g.gather]
            val = g.code.phi(Q, g.markers, g.params, self._F(gi, g, t), self._W(gi, g, Q, angles))
            out[r0:r1] = val.reshape(-1)
        return out

    def phi_frames(self, Q, times, angles):
        """:meth:`phi` of every row of ``Q`` (nt, nq) at ``times[k]`` (s) with the winding state
        ``angles[k]``: shape (nt, nc), one generated-code call per group for all frames."""
        nt = Q.shape[0]
        QF = np.concatenate([Q, np.broadcast_to(self._q_fixed, (nt, len(self._q_fixed)))], axis=1)
        out = np.empty((nt, self._nc))
        for gi, g, r0, r1 in self._rows:
            G = QF[:, g.gather].reshape(nt * g.n, -1)
            M, S = (_frames_copy(a, nt) for a in (g.markers, g.params))
            F = np.concatenate([self._F(gi, g, t) for t in times]) if g.functions else np.zeros((nt * g.n, 3))
            if self._has_angles[gi]:
                W = _turns(np.concatenate([a.ref[gi] for a in angles]), g.code.angles(G, M))
            else:
                W = np.zeros((nt * g.n, g.n_angles))
            out[:, r0:r1] = g.code.phi(G, M, S, F, W).reshape(nt, r1 - r0)
        return out

    def jacobian_data(self, q, t, angles):
        """Values of Φq in the model's fixed CSC pattern, shape (nnz,)."""
        qf = self.model.q_full(q)
        slots, values = [], []
        for gi, g in enumerate(self.model.groups):
            Q = qf[g.gather]
            val = g.code.jac(Q, g.markers, g.params, self._F(gi, g, t), self._W(gi, g, Q, angles)).reshape(-1)
            keep = g.jac_slot >= 0
            slots.append(g.jac_slot[keep])
            values.append(val[keep])
        if not slots:  # no constraint at all (every part fixed, or no joint): an empty Φq
            return np.zeros(self.model.jac_nnz)
        return np.bincount(np.concatenate(slots), weights=np.concatenate(values), minlength=self.model.jac_nnz)

    def jacobian(self, q, t, angles):
        """Φq as a CSC sparse matrix (nc, nq)."""
        return self.model.jacobian_matrix(self.jacobian_data(q, t, angles))

    def jacobian_dense(self, q, t, angles):
        """Φq as a dense array (nc, nq); for small models."""
        qf = self.model.q_full(q)
        m = self.model
        J = np.zeros(m.nc * m.nq)
        for gi, g in enumerate(m.groups):
            Q = qf[g.gather]
            val = g.code.jac(Q, g.markers, g.params, self._F(gi, g, t), self._W(gi, g, Q, angles)).reshape(-1)
            keep = self._keep[gi]
            if self._dup[gi]:
                np.add.at(J, g.jac_flat[keep], val[keep])
            else:
                J[g.jac_flat[keep]] = val[keep]
        return J.reshape(m.nc, m.nq)

    def jacobian_auto(self, q, t, angles):
        """Dense Φq for small models, sparse CSC beyond :data:`linalg.DENSE_LIMIT` coordinates."""
        from .linalg import DENSE_LIMIT

        if self.model.nq <= DENSE_LIMIT:
            return self.jacobian_dense(q, t, angles)
        return self.jacobian(q, t, angles)

    def phit(self, q, t, angles):
        """Φt(q, t), shape (nc,)."""
        qf = self.model.q_full(q)
        out = np.zeros(self.model.nc)
        for gi, g in enumerate(self.model.groups):
            if not g.functions:
                continue
            Q = qf[g.gather]
            val = g.code.phit(Q, g.markers, g.params, self._F(gi, g, t), self._W(gi, g, Q, angles))
            out[g.row[0]: g.row[0] + val.size] = val.reshape(-1)
        return out

    def gamma(self, q, qd, t, angles):
        """γ = −(Φq q̇)_q q̇ − 2Φqt q̇ − Φtt, shape (nc,)."""
        qf = self.model.q_full(q)
        qdf = np.concatenate([qd, self._qd_fixed])
        out = np.empty(self.model.nc)
        for gi, g in enumerate(self.model.groups):
            Q = qf[g.gather]
            val = g.code.gamma(Q, qdf[g.gather], g.markers, g.params, self._F(gi, g, t), self._W(gi, g, Q, angles))
            out[g.row[0]: g.row[0] + val.size] = val.reshape(-1)
        return out

    def accept(self, q, angles):
        """Record q as accepted: update the angle references to the continuous angles."""
        qf = self.model.q_full(q)
        for gi, g in enumerate(self.model.groups):
            if g.n_angles:
                Q = qf[g.gather]
                raw = g.code.angles(Q, g.markers)
                angles.ref[gi] = raw + _turns(angles.ref[gi], raw)

    def joint_measures(self, q):
        """Raw joint coordinates (angles wrapped to (−π, π], displacements in m).

        Returns shape (n_measures,) in the order of ``model.joint_measures``.
        """
        qf = self.model.q_full(q)
        out = np.empty(len(self.model.joint_measures))
        for gi, (positions, inst, col) in self._measure_plan().items():
            g = self.model.groups[gi]
            out[positions] = g.code.measures(qf[g.gather], g.markers)[inst, col]
        return out

    def joint_measures_frames(self, Q):
        """:meth:`joint_measures` of every row of ``Q`` (nt, nq): shape (nt, n_measures), one
        generated-code call per group for all frames."""
        nt = Q.shape[0]
        QF = np.concatenate([Q, np.broadcast_to(self._q_fixed, (nt, len(self._q_fixed)))], axis=1)
        out = np.empty((nt, len(self.model.joint_measures)))
        for gi, (positions, inst, col) in self._measure_plan().items():
            g = self.model.groups[gi]
            G = QF[:, g.gather].reshape(nt * g.n, -1)
            M = _frames_copy(g.markers, nt)
            out[:, positions] = g.code.measures(G, M).reshape(nt, g.n, -1)[:, inst, col]
        return out

    def _measure_plan(self):
        if not hasattr(self, "_plan"):
            from .symbolic.templates import TEMPLATES

            plan = {}
            for n, (_, kind, gi, i) in enumerate(self.model.joint_measures):
                col = TEMPLATES[self.model.groups[gi].template].measures.index(kind)
                plan.setdefault(gi, ([], [], []))
                for lst, v in zip(plan[gi], (n, i, col)):
                    lst.append(v)
            self._plan = {gi: tuple(np.array(v) for v in vals) for gi, vals in plan.items()}
        return self._plan
