"""Declared contacts, unilateral method: constraints that act only while the bodies touch.

Geometry: the contact points of :class:`.contacts.Contacts` (a sphere, a box corner or a cylinder's
rim circle S against a plane, a sphere, a box, a cylinder or a bore O; world frame; box–box is compliant
only), with the gap g = −δ (m, > 0 apart), the unit
normal n from O toward S and the contact point x. The relative velocity of the material points at x is
v_r = J_p v (J_p: 3 × nv, [I, −[x − r_s]×] on S's velocities, minus the same on O's), so

    ġ = n·v_r = J_n v,      v_t = (I − n nᵀ) v_r      (tangential slip velocity, m/s)

and g̈ = J_n v̇ + c_n, with c_n = (d J_n/dt) v the convective term; c (normal and tangential rows) is the
central difference of the rows times v along the rigid motion of both bodies at their present
velocities (positions r + v τ, rotations exp([ω] τ) A), at τ = ±10⁻⁴ of the time the faster body
takes to cross its length scale (error ~10⁻⁸ c; exact for translating bodies).

Each contact point has a mode (the *active set*; state in ``refs``, :data:`STATE_WIDTH` numbers per
point: the mode and a slip direction):

* ``OPEN``  — not in the equations;
* ``SLIP``  — a unilateral constraint g̈ = 0 held by λ_n ≥ 0 (N) along n, with the Coulomb friction
  −μ_d λ_n ŝ at x (ŝ the direction of v_t; the stored slip direction at slip onset, v_t = 0, and past
  the point where the slip stops, so that the right-hand side is smooth up to that switch);
* ``STICK`` — the normal row and two tangential rows t₁·v_r = t₂·v_r = 0 (a bilateral tangential
  constraint, force λ_t in the tangent plane) while |Σ λ_t| ≤ μ_s Σ λ_n over the contact's points.

The active rows enter the joints' equations through the constrained inverse mass
A = M⁻¹ − M⁻¹ Jrᵀ S⁻¹ Jr M⁻¹ (the joints kept: Jr A = 0): with C the active rows, F the directions of
their forces (F = C except a slipping row, whose force direction is (n − μ_d ŝ)ᵀ J_p),

    v̇ = v̇₀ + A Fᵀ λ,      (C A Fᵀ) λ = −(C v̇₀ + c)

(v̇₀ the joints-only accelerations; where the rows are redundant, e.g. a box's four corners on a plane or
a block's four feet, the least-norm λ at the rank threshold :data:`.complementarity.RCOND` whose normal
forces push and whose sticking contacts' friction stays inside their cones, where one does:
:func:`.complementarity.pushing_solution`, :meth:`UnilateralContacts.cone_rows`). Only the active points' rows are
formed: the matrix is as small as the contacts that touch. The contact forces' power λᵀ F v (the
friction's, the normal rows do no work at ġ = 0) is in the non-conservative work.

Switches (located by :mod:`.hybrid` as the roots of these functions on the integrator's dense output):
an open point's gap reaching 0 (or, already touching, its approach speed exceeding
:data:`CLOSED_SPEED`), an active point's λ_n reaching 0 (separation), a sticking contact reaching
the friction cone (slip), a slipping point's slip velocity reversing (stick or reversal). At a switch the
modes are chosen again (:meth:`UnilateralContacts.resolve_modes`); where points with friction are at rest,
they keep sticking if friction against their frictionless tendency holds them inside the exact cones
(:meth:`UnilateralContacts._sticking_holds`), else the modes come from the contact problem at the
accelerations with friction (:meth:`UnilateralContacts._onset_modes`), and the directions of the points that
start to slip together are solved together, each slip along its own tangential acceleration
(:meth:`UnilateralContacts._consistent_slips`), so that coupled contacts (a ladder's foot and top, a chain's
rollers on a sprocket) start to slip in directions their motion keeps.

Impacts (:meth:`UnilateralContacts.impact`): Newton's restitution with impulses Λ ≥ 0 along the
normals of the touching points that approach (and the active ones), the joints kept:

    v⁺ = v⁻ + A J_nᵀ Λ,    w = J_n v⁺ + e J_n v⁻ ≥ 0,    Λ ≥ 0,    wᵀ Λ = 0

(a linear complementarity problem solved by principal pivoting, :func:`.complementarity.lcp`; one impact: Λ =
−(1 + e) ġ⁻ / (J_n A J_nᵀ), ġ⁺ = −e ġ⁻). Impulses are frictionless. An approach slower than
:data:`PLASTIC_SPEED` is plastic (e = 0): the Zeno sequence of a bouncing ball ends there in a persistent
contact. The kinetic energy an impact takes (T⁺ − T⁻ ≤ 0) is added to the non-conservative work.
Touching points that are not approaching are left out of an impact and take their own impact next
(Newton's cradle passes the momentum along the row).
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import MechanismError
from .complementarity import RCOND, lcp, least_distance, lemke, pushing_solution
from .contacts import Contacts, _point_columns, _rotate, deepest_points
from .mass import cross
from .stops import JointStops

__all__ = ["UnilateralContacts", "OPEN", "SLIP", "STICK", "STATE_WIDTH", "PLASTIC_SPEED", "CLOSED_SPEED"]

OPEN, SLIP, STICK = 0, 1, 2
#: numbers per contact point in ``refs``: mode, slip direction (3, world)
STATE_WIDTH = 4
#: approach speeds (m/s) below this are plastic impacts (restitution 0): a Zeno sequence ends in contact
PLASTIC_SPEED = 1e-3
#: a touching point approaching faster than this (m/s) is an impact; slower, it is closed (not separating)
CLOSED_SPEED = 1e-6
#: a slipping point's friction acts against the unit v_t + SLIP_DIRECTION_SPEED ŝ₀ (m/s), ŝ₀ the slip's
#: direction at the last accepted step: exact while the slip keeps its direction, and lagging a slip that turns
#: by at most its turn over one step, weighted by SLIP_DIRECTION_SPEED / (|v_t| + SLIP_DIRECTION_SPEED). The unit
#: v_t alone turns with the velocities' round-off off the joints' manifold when a slip is slow (a roller creeping
#: on a tooth at 1e-6 m/s, its v_t across the chain's plane 1e-8 m/s at a step's stages): the friction's
#: direction then changes at 1e6 rad per m/s, and DOP853's steps fell from 0.25 ms to 0.2 µs on the chain drive
#: (2026-11-27)
SLIP_DIRECTION_SPEED = 1e-3
#: the compliance on the normal rows of the onset's contact problem, relative to the largest diagonal entry
#: (:meth:`UnilateralContacts._onset_modes`)
ONSET_COMPLIANCE = 1e-9
#: sides of the polygon inscribed in a friction cone that bounds the sticking friction where redundant contact
#: rows leave its sharing free (:meth:`UnilateralContacts.cone_rows`): within 1 − cos(π/8) = 7.6 % of the cone
CONE_SIDES = 8
#: a gap (m) within this, plus :data:`CLOSED_GAP_REL` of the point's length scale, is touching
CLOSED_GAP = 1e-9
CLOSED_GAP_REL = 1e-7
#: normal forces below this fraction of the lighter part's weight leave a touching point open
FORCE_TOL = 1e-6
#: Newton iterations of :meth:`UnilateralContacts._consistent_slips`, and its difference step in the slip angles (rad)
_SLIP_NEWTON_ITERATIONS = 20
_SLIP_ANGLE_STEP = 1e-7
#: displacement of the faster body, as a fraction of its length scale, of the convective term's difference
_FD_FRACTION = 1e-4
def _tangents(n):
    """Two unit tangents (c, 3) each, t₁ ⟂ n, t₂ = n × t₁ (t₁ from the world axis least along n)."""
    axis = np.eye(3)[np.argmin(np.abs(n), axis=1)]
    t1 = cross(n, axis)
    t1 /= np.linalg.norm(t1, axis=1)[:, None]
    return t1, cross(n, t1)


class UnilateralContacts(Contacts):
    """The unilateral contacts of a model (see the module docstring); points as :class:`.contacts.Contacts`.

    ``activation`` False keeps every declared point's rows in the equations (the inactive ones with
    λ = 0): the same motion at the cost of all rows (for the benchmark of the active set).
    """

    method = "unilateral"
    activation = True

    def __init__(self, model, mass):
        super().__init__(model, mass)
        self.nmov = mass.nmov
        #: the contact points (the entries before the joint limits')
        self.np = self.n
        #: the joints' limits with ``limit_method = "unilateral"``: two entries (lower, upper) per limited
        #: coordinate after the contact points, gap q − lo and hi − q (rad or m)
        self.limits = JointStops(model, mass, method="unilateral")
        nl = self.limits.n
        self.n = self.np + 2 * nl
        #: per owner (a contact, then a limited coordinate): what an Event names, and its item
        self.labels = [f"contact {name!r}" for name in self.names] + \
            [f"limit of joint {p!r}" for p in self.limits.prefixes]
        self.items = list(self.names) + list(self.limits.names)
        twice = lambda a: np.repeat(np.asarray(a, float), 2)  # noqa: E731
        self.owner = np.concatenate([self.owner, len(self.names) + np.repeat(np.arange(nl), 2)]).astype(int)
        self.mu_s = np.concatenate([self.mu_s, np.zeros(2 * nl)])
        self.mu_d = np.concatenate([self.mu_d, np.zeros(2 * nl)])
        self.e = np.concatenate([self.e, twice(self.limits.e)])
        self.L = np.concatenate([self.L, np.ones(2 * nl)])
        self.m_eff = np.concatenate([self.m_eff, twice(self.limits.m_eff)])
        self.closed_gap = CLOSED_GAP + CLOSED_GAP_REL * self.L
        #: a normal force (N) at or below this does not hold a point in contact: FORCE_TOL of the lighter
        #: part's weight (at least at 1 g, 9.81 m/s²: models without gravity too)
        g = max(float(np.linalg.norm(model.spec.gravity)), 9.81)
        self.force_tol = FORCE_TOL * np.where(np.isfinite(self.m_eff), self.m_eff, 1.0) * g

    # ------------------------------------------------------------------ state
    def initial_state(self, bs):
        """All entries open (:meth:`resolve_modes` chooses the modes), then the limits' angle references;
        an error if shapes interpenetrate or a joint starts outside its limits."""
        super().initial_state(bs)
        return np.concatenate([np.zeros(STATE_WIDTH * self.n), self.limits.initial_state(bs)])

    def modes(self, state):
        """Each entry's mode (n,) int from its state."""
        return np.rint(state[0: STATE_WIDTH * self.n: STATE_WIDTH]).astype(int)

    def slip_dirs(self, state):
        """Each entry's stored slip direction (n, 3), world."""
        return state[: STATE_WIDTH * self.n].reshape(-1, STATE_WIDTH)[:, 1:]

    def limit_state(self, state):
        """The limits' part of the state (their angle references; :class:`.stops.JointStops`)."""
        return state[STATE_WIDTH * self.n:]

    def accept(self, bs, state):
        """At an accepted state: the limits' angles continued over turns."""
        if self.limits.n:
            self.limits.accept(bs, self.limit_state(state))

    # ------------------------------------------------------------------ kinematics
    def _shifted(self, pair, tau):
        """Both bodies' pair states moved rigidly by tau (s) at their present velocities."""
        out = []
        for A, r, v, w in pair:
            out.append((_rotate(w * tau[:, None]) @ A, r + v * tau[:, None], v, w))
        return tuple(out)

    def point_jacobians(self, bs, x, idx):
        """J_p (k, 3, nv): v_r at the points ``idx`` (contact points x (k, 3)) from the velocities."""
        k = len(idx)
        J = np.zeros((k, 3, self.nmov, 6))
        for sign, bodies in ((1.0, self.s[idx]), (-1.0, self.o[idx])):
            mov = np.flatnonzero(bodies < self.nmov)
            b = bodies[mov]
            r = x[mov] - bs.rc[b]
            skew = np.zeros((len(mov), 3, 3))
            skew[:, 0, 1], skew[:, 0, 2], skew[:, 1, 2] = -r[:, 2], r[:, 1], -r[:, 0]
            skew = skew - skew.transpose(0, 2, 1)
            J[mov, :, b, 0:3] += sign * np.eye(3)
            J[mov, :, b, 3:6] -= sign * skew  # v + ω × r = v − [r]× ω
        return J.reshape(k, 3, 6 * self.nmov)

    def _row_speeds(self, pair, idx):
        """[n·v_r, t₁·v_r, t₂·v_r] (k, 3) at the points of ``pair`` (states of the points idx)."""
        n, _, x, dd, vt = self._geometry(*pair, idx=idx)
        t1, t2 = _tangents(n)
        return np.stack([-dd, np.sum(vt * t1, 1), np.sum(vt * t2, 1)], axis=1)

    def kinematics(self, bs, idx, state):
        """At the entries idx: (n (k, 3), g (k,), x (k, 3), v_r (k, 3), J_p (k, 3, nv), c (k, 3) the
        convective terms of the normal and two tangential rows, t₁, t₂ (k, 3)). A limit's entry has
        n = x̂, its gap rate's row in J_p[0] and c[0], the rest zero (no friction)."""
        idx = np.asarray(idx, int)
        out = [np.zeros((len(idx), 3)), np.zeros(len(idx)), np.zeros((len(idx), 3)), np.zeros((len(idx), 3)),
               np.zeros((len(idx), 3, 6 * self.nmov)), np.zeros((len(idx), 3)), np.zeros((len(idx), 3)),
               np.zeros((len(idx), 3))]
        pts, lims = idx < self.np, idx >= self.np
        for part, values in ((pts, self._point_kinematics(bs, idx[pts]) if np.any(pts) else None),
                             (lims, self._limit_kinematics(bs, idx[lims] - self.np, state) if np.any(lims) else None)):
            if values is not None:
                for target, value in zip(out, values):
                    target[part] = value
        return tuple(out)

    def _limit_kinematics(self, bs, k, state):
        """:meth:`kinematics` of limit entries k (2 per limited coordinate: lower, upper)."""
        lim = self.limits
        st = self.limit_state(state)
        q, qd, z, Pj, _ = lim.coordinates(bs, st)
        s_, lower = k // 2, k % 2 == 0
        sign = np.where(lower, 1.0, -1.0)
        g = np.where(lower, q[s_] - lim.lo[s_], lim.hi[s_] - q[s_])
        nv = 6 * self.nmov
        Jp = np.zeros((len(k), 3, nv))
        for j, (si, sg) in enumerate(zip(s_, sign)):
            zz = z[si]
            for body, b_sign in ((lim.ib[si], 1.0), (lim.ia[si], -1.0)):
                if body >= self.nmov:
                    continue
                if lim.rot[si]:
                    Jp[j, 0, 6 * body + 3: 6 * body + 6] += sg * b_sign * zz
                else:
                    Jp[j, 0, 6 * body: 6 * body + 3] += sg * b_sign * zz
                    Jp[j, 0, 6 * body + 3: 6 * body + 6] += sg * b_sign * cross(Pj[si] - bs.rc[body], zz)
        # the convective term: the rate q̇ along the rigid motion at the present velocities
        speed = float(np.max(np.linalg.norm(bs.w, axis=1), initial=0.0) + np.max(np.linalg.norm(bs.vc, axis=1),
                                                                                  initial=0.0))
        c = np.zeros((len(k), 3))
        if speed > 0:
            tau = _FD_FRACTION / speed
            rates = []
            for t in (tau, -tau):
                moved = _Moved(_rotate(bs.w * t) @ bs.A, bs.rc + bs.vc * t, bs.vc, bs.w)
                rates.append(lim.coordinates(moved, st)[1])
            c[:, 0] = sign * (rates[0][s_] - rates[1][s_]) / (2.0 * tau)
        n = np.tile([1.0, 0.0, 0.0], (len(k), 1))
        vr = np.zeros((len(k), 3))
        vr[:, 0] = sign * qd[s_]
        return n, g, np.zeros((len(k), 3)), vr, Jp, c, np.tile([0.0, 1.0, 0.0], (len(k), 1)), \
            np.tile([0.0, 0.0, 1.0], (len(k), 1))

    def _point_kinematics(self, bs, idx):
        """:meth:`kinematics` of contact points idx."""
        pair = self._pair_state(bs, idx)
        n, delta, x, dd, vt = self._geometry(*pair, idx=idx)
        vr = vt - dd[:, None] * n
        speed = (np.linalg.norm(pair[0][2], axis=1) + np.linalg.norm(pair[1][2], axis=1)
                 + self.L[idx] * (np.linalg.norm(pair[0][3], axis=1) + np.linalg.norm(pair[1][3], axis=1)))
        tau = _FD_FRACTION * self.L[idx] / np.where(speed > 0, speed, 1.0)
        c = (self._row_speeds(self._shifted(pair, tau), idx)
             - self._row_speeds(self._shifted(pair, -tau), idx)) / (2.0 * tau)[:, None]
        c = np.where((speed > 0)[:, None], c, 0.0)
        t1, t2 = _tangents(n)
        return n, -delta, x, vr, self.point_jacobians(bs, x, idx), c, t1, t2

    def pass_limit(self, g, gd, vt, state):
        """The largest step (s) in which no open point can pass right through a finite shape (a sphere,
        a box) it approaches without its gap being negative at the step's end, where the switch is
        looked for: half the gap plus the sphere's radius over the relative speed (a plane's
        half-space and a bore's unbounded wall cannot be passed); inf when no open point is apart from
        a finite shape. ``g``, ``gd``, ``vt``: the gaps, their rates and the slip velocities of :meth:`gaps`."""
        m = self.np
        if not m:
            return np.inf
        apart = (self.modes(state)[:m] == OPEN) & ~self.unbounded[:m] & (g[:m] > 0)
        if not np.any(apart):
            return np.inf
        speed = np.hypot(gd[:m], np.linalg.norm(vt[:m], axis=1))[apart]
        travel = self.Rs[:m][apart] + g[:m][apart]
        return float(np.min(0.5 * travel / np.maximum(speed, 1e-300)))

    def gaps(self, bs, state):
        """(g (n,) m or rad, ġ (n,) m/s or rad/s, v_t (n, 3) m/s) at every entry (limits: no slip)."""
        n, delta, x, dd, vt = self.geometry(bs)
        if not self.limits.n:
            return -delta, -dd, vt
        lim = self.limits
        q, qd, *_ = lim.coordinates(bs, self.limit_state(state))
        g_l = np.column_stack([q - lim.lo, lim.hi - q]).reshape(-1)
        gd_l = np.column_stack([qd, -qd]).reshape(-1)
        return np.r_[-delta, g_l], np.r_[-dd, gd_l], np.vstack([vt, np.zeros((2 * lim.n, 3))])

    # ------------------------------------------------------------------ the constrained accelerations
    @staticmethod
    def constrained_inverse(dyn, ev, Ft):
        """A Fᵀ (nv, k) for force directions Fᵀ (nv, k): M⁻¹ Fᵀ minus the part the joints take."""
        if dyn.sparse:
            MinvFt = dyn.mass_matrix(ev.bs, inverse=True) @ Ft
        else:
            MinvFt = dyn._minv_rows(np.ascontiguousarray(Ft.T), ev.bs).T
        if not len(dyn.rows):
            return MinvFt
        X = ev.minv_jt()
        return MinvFt - X.T @ ev.solve_S(X @ Ft)

    def rows(self, bs, state, idx=None):
        """The active rows at ``bs`` (or the rows of points ``idx`` in their present modes): (C (k, nv),
        F (k, nv), c (k,), owner point per row (k,), row kind (k,) 0 normal / 1, 2 tangential,
        kinematics of the points)."""
        modes = self.modes(state)
        if idx is None:
            idx = np.flatnonzero(modes > OPEN) if self.activation else np.arange(self.n)
        n, g, x, vr, Jp, c, t1, t2 = self.kinematics(bs, idx, state)
        Jn = np.einsum("ki,kiv->kv", n, Jp)
        stick = modes[idx] == STICK
        # a slipping row's force: along n − μ_d ŝ, ŝ the unit v_t + SLIP_DIRECTION_SPEED ŝ₀ while it moves along
        # the stored direction ŝ₀ (v_t·ŝ₀ > 0; ŝ₀ is v_t's direction at the last accepted step), else ŝ₀ — at slip
        # onset (v_t = 0) and past the stop of a slip, so that the right-hand side stays smooth up to the switch
        # the event locates (v_t·ŝ₀ = 0); see SLIP_DIRECTION_SPEED
        vt = vr - np.sum(vr * n, 1)[:, None] * n
        sdir = self.slip_dirs(state)[idx]
        along = np.sum(vt * sdir, 1) > 0
        moving = vt + SLIP_DIRECTION_SPEED * sdir
        d = np.where(along[:, None], moving / np.maximum(np.linalg.norm(moving, axis=1), 1e-300)[:, None], sdir)
        F_n = np.where(stick[:, None], Jn, np.einsum("ki,kiv->kv", n - self.mu_d[idx][:, None] * d, Jp))
        T1 = np.einsum("ki,kiv->kv", t1[stick], Jp[stick])
        T2 = np.einsum("ki,kiv->kv", t2[stick], Jp[stick])
        C = np.vstack([Jn, T1, T2])
        F = np.vstack([F_n, T1, T2])
        cc = np.concatenate([c[:, 0], c[stick, 1], c[stick, 2]])
        pts = np.concatenate([idx, idx[stick], idx[stick]]).astype(int)
        kind = np.concatenate([np.zeros(len(idx), int), np.ones(int(stick.sum()), int),
                               np.full(int(stick.sum()), 2)])
        return C, F, cc, pts, kind, (idx, n, g, x, vr, t1, t2, d)

    def solve(self, dyn, ev, vd0, state):
        """The contact forces at an evaluation: (v̇ (nv,), generalised force Fᵀ λ (nv,), power (W),
        per point λ_n (n,) N and friction force (n, 3) N on S, world). ``vd0``: the joints-only v̇."""
        nv = 6 * self.nmov
        lam_n, f_t = np.zeros(self.n), np.zeros((self.n, 3))
        modes = self.modes(state)
        if self.activation and not np.any(modes > OPEN):
            return vd0, np.zeros(nv), 0.0, lam_n, f_t
        C, F, c, pts, kind, geo = self.rows(ev.bs, state)
        AFt = self.constrained_inverse(dyn, ev, F.T)
        K = C @ AFt
        rhs = -(C @ vd0 + c)
        live = modes[pts] > OPEN
        if not np.all(live):  # every point kept: the open ones' λ is 0
            K[~live] = 0.0
            K[~live, np.flatnonzero(~live)] = 1.0
            rhs[~live] = 0.0
        idx, n, g, x, vr, t1, t2, d = geo
        k = len(idx)
        stick = modes[idx] == STICK
        lam = pushing_solution(K, rhs, np.flatnonzero((kind == 0) & live),
                               lambda least_norm: [self.cone_rows(idx, stick, t1, t2, least_norm)])
        fc = F.T @ lam
        vd = vd0 + AFt @ lam
        power = float(lam @ (F @ ev.v))
        lam = np.where(live, lam, 0.0)
        normal = lam[:k]
        lam_n[idx] = normal
        slipping = (modes[idx] == SLIP)[:, None]
        f_t[idx] = np.where(slipping, -(self.mu_d[idx] * normal)[:, None] * d, 0.0)
        ns = int(stick.sum())
        f_t[idx[stick]] += lam[k: k + ns, None] * t1[stick] + lam[k + ns:, None] * t2[stick]
        return vd, fc, power, lam_n, f_t

    # ------------------------------------------------------------------ impacts and modes
    def impact(self, dyn, ev, v, state):
        """One impact at ev's configuration with velocities v: (v⁺, list of (point, ġ⁻ m/s, Λ N s)), or
        (v, []) when no touching point approaches faster than :data:`CLOSED_SPEED`."""
        g, gd, _ = self.gaps(_with_velocities(dyn, ev, v), state)
        modes = self.modes(state)
        touching = g <= self.closed_gap
        hitting = touching & (gd < -CLOSED_SPEED)
        if not np.any(hitting):
            return v, []
        idx = np.flatnonzero(hitting | (modes > OPEN))
        n, _, x, _, Jp, _, _, _ = self.kinematics(_with_velocities(dyn, ev, v), idx, state)
        Jn = np.einsum("ki,kiv->kv", n, Jp)
        AJt = self.constrained_inverse(dyn, ev, Jn.T)
        G = Jn @ AJt
        before = Jn @ v
        e = np.where(-before >= PLASTIC_SPEED, self.e[idx], 0.0)
        Lam, _ = lcp(G, (1.0 + e) * np.minimum(before, 0.0))
        v_new = v + AJt @ Lam
        hits = [(int(i), float(before[j]), float(Lam[j])) for j, i in enumerate(idx) if hitting[i]]
        return v_new, hits

    def resolve_modes(self, dyn, evaluate, v, state):
        """Choose the modes at a touching configuration so that the accelerations are complementary: of
        the points touching and not separating (the candidates), each active one pushes (λ_n above
        :attr:`force_tol`) and each open one does not accelerate into its shape. Where a candidate with
        friction is at rest (slip speed ≤ 10 :data:`CLOSED_SPEED`), the modes and slip directions come from
        the complementarity problem of :meth:`_onset_modes` (its slips develop along their directions,
        however the contacts are coupled). Otherwise, and to check that choice, the candidates start active
        (each sticking where it does not slip and μ_s > 0, or in the onset's modes); then, repeatedly, the
        candidate of least index that breaks complementarity (:meth:`_complementarity_breaks`) switches (an
        active one opens, an open one closes again in its first mode: Murty's least-index rule, which a
        greedy choice of the most negative λ_n lacks — opening one point can make another approach), and
        once none does, a contact outside its friction cone is set slipping against its friction force.
        Where the rows are redundant and points slip, the rule can cycle (on the chain drive: a roller opened
        for a pull of −7 N accelerates into its tooth, closed it pulls again): at the first mode set met twice
        the candidates start again from their first modes, and an active point is kept at λ_n ≥ −
        :attr:`force_tol` (a point of redundant rows that carries nothing stays closed; its separation is
        watched at λ_n = −:attr:`force_tol`), slipping (with no normal force it carries no friction: sticking,
        the least-norm sharing of the tangential rows gave one 780 N on the chain drive).
        ``evaluate(state) -> (ev, v̇₀)``. Updates ``state`` in place;
        returns the point modes before (n,)."""
        before = self.modes(state).copy()
        ev, vd0 = evaluate(state)  # the modes do not enter the evaluation: the onset's problem reuses it
        g, gd, vt = self.gaps(_with_velocities(dyn, ev, v), state)
        closed = (g <= self.closed_gap) & (gd <= CLOSED_SPEED)
        speed = np.linalg.norm(vt, axis=1)
        S = state[: STATE_WIDTH * self.n].reshape(-1, STATE_WIDTH)
        for i in range(self.n):
            if not closed[i]:
                S[i, 0] = OPEN
                continue
            if self.mu_s[i] > 0 and speed[i] <= CLOSED_SPEED * 10:
                S[i, 0] = STICK
            else:
                S[i, 0] = SLIP
                if speed[i] > CLOSED_SPEED:
                    S[i, 1:] = vt[i] / speed[i]
        candidates = np.flatnonzero(closed)
        first_mode = S[candidates, 0].copy()
        rest = candidates[first_mode == STICK]
        holds, tendency = self._sticking_holds(dyn, ev, vd0, state, candidates) if len(rest) else (True, None)
        if not holds:
            self._onset_modes(dyn, ev, vd0, state, candidates)
            if tendency is not None and np.all(self.modes(state)[rest] == STICK):
                # the onset's pyramid holds what no friction against the tendency can (a wedged sharing)
                starting = np.any(tendency != 0.0, axis=1)
                S[rest[starting], 0] = SLIP
                S[rest[starting], 1:] = tendency[starting]
        held = np.zeros(self.n, bool)
        start, seen, relaxed = S[:, 0].copy(), set(), False
        for _ in range(4 * len(candidates) + 4):
            if not len(candidates):
                break
            modes = self.modes(state)
            key = modes[candidates].tobytes()
            if key in seen and not relaxed:
                S[:, 0], relaxed = start, True
                modes = self.modes(state)
            seen.add(key)
            ev, vd0 = evaluate(state)
            vd, _, _, lam_n, f_t = self.solve(dyn, ev, vd0, state)
            wrong = self._complementarity_breaks(dyn, ev, state, candidates, vd, lam_n, relaxed)
            if len(wrong):
                j = wrong[0]
                S[candidates[j], 0] = OPEN if modes[candidates[j]] > OPEN else first_mode[j]
                continue
            # a point kept closed without normal force carries no friction: it slips (its friction μ_d λ_n is 0)
            unloaded = (modes[candidates] == STICK) & (lam_n[candidates] <= self.force_tol[candidates]) & relaxed
            if np.any(unloaded):
                S[candidates[unloaded], 0] = first_mode[unloaded] = SLIP
                continue
            starting = rest[modes[rest] == SLIP]
            if self._consistent_slips(dyn, ev, vd0, state, starting):
                vd, _, _, lam_n, f_t = self.solve(dyn, ev, vd0, state)
            backward = self._backward_onsets(ev.bs, state, starting, vd)
            if len(backward):
                S[backward[0], 0] = STICK
                held[backward[0]] = True
                continue
            slipping = self.cone_violations(state, lam_n, f_t)
            slipping = [o for o in slipping if not np.any(held[self.owner == o])]
            if not len(slipping):
                break
            o = slipping[0]
            pts = np.flatnonzero((self.owner == o) & (modes == STICK))
            total = f_t[pts].sum(0)
            S[pts, 0] = SLIP
            S[pts, 1:] = -total / max(np.linalg.norm(total), 1e-300)
        return before

    def _sticking_holds(self, dyn, ev, vd0, state, candidates):
        """Whether the candidates hold in their entry modes (every one at rest sticking), each sticking point's
        friction opposing the slip it would take without friction: the all-stick solution with those friction
        directions. First the frictionless tendency, the tangential accelerations a⁰ of the sticking points with
        their normal rows alone; then the contact forces with every sticking point's tangential velocity held at
        zero, its friction φ ≥ 0 along −â⁰ (a point without tendency takes none), normal forces λ_n ≥ 0 and each
        sticking contact within its exact cone, Σ φ ≤ μ_s Σ λ_n: K P z = r (P the forces' directions, z = (λ_n,
        φ)), the least-norm z, or where the rows are redundant the least-distance one that keeps the conditions
        (:func:`.complementarity.least_distance`). They hold when such z exists, pushes at every active point
        beyond :attr:`force_tol` and leaves no open one accelerating into its shape; then the sticks are kept.
        Returns (holds, tendency): where no z keeps the cones, tendency (sticking points in index order, 3) the
        unit a⁰ (world; 0 without tendency), the directions they would slip in; else None.

        The onset's contact problem (:meth:`_onset_modes`) approximates each cone by a pyramid and ends at one
        vertex solution where the forces are not unique: a rod in a V-groove (two contacts, four rim points,
        their rows redundant) can carry its weight by any mix of normal forces and friction across the faces, and
        the onset set all four points slipping at 10 % below the groove's limit (0.05 m in 0.5 s, unflagged:
        sliding friction lies on the cone). With the friction's directions free, the sharing can also wedge the
        rod (friction across the faces pressing it in raises the normal forces and the cones with them) and hold
        it above the limit; against the tendency it cannot."""
        modes = self.modes(state)
        C, F, c, pts, kind, geo = self.rows(ev.bs, state)
        idx, t1, t2 = geo[0], geo[5], geo[6]
        k, stick = len(idx), modes[idx] == STICK
        ns = int(stick.sum())
        AFt = self.constrained_inverse(dyn, ev, F.T)
        K, r = C @ AFt, -(C @ vd0 + c)
        lam0 = pushing_solution(K[:k, :k], r[:k], np.arange(k))
        a = C[k:] @ (vd0 + AFt[:, :k] @ lam0) + c[k:]
        a1, a2 = a[:ns], a[ns:]
        size = np.hypot(a1, a2)
        needs = size > 1e-12 * (1.0 + float(np.max(size, initial=0.0)))
        cols = np.flatnonzero(needs)
        P = np.zeros((k + 2 * ns, k + len(cols)))
        P[:k, :k] = np.eye(k)
        P[k + cols, k + np.arange(len(cols))] = -a1[cols] / size[cols]
        P[k + ns + cols, k + np.arange(len(cols))] = -a2[cols] / size[cols]
        KP = K @ P
        U, s, Vt = np.linalg.svd(KP)
        rank = int(np.sum(s > RCOND * s[0])) if len(s) and s[0] > 0 else 0
        z = Vt[:rank].T @ ((U[:, :rank].T @ r) / s[:rank])
        if np.max(np.abs(KP @ z - r), initial=0.0) > 1e-9 * max(1.0, float(np.max(np.abs(r), initial=0.0))):
            return False, None  # friction against the tendency cannot hold the sticking points
        # the conditions D z ≥ 0: z ≥ 0, then per sticking contact μ_s Σ λ_n − Σ φ ≥ 0
        sticking = np.flatnonzero(stick)
        owners = self.owner[idx[sticking]]
        cones = []
        for o in np.unique(owners):
            row = np.zeros(len(z))
            here = sticking[owners == o]
            row[here] = self.mu_s[idx[here[0]]]
            row[k + np.flatnonzero(np.isin(sticking[cols], here))] = -1.0
            cones.append(row)
        D = np.vstack([np.eye(len(z))] + cones)
        round_off = 1e-12 * float(np.max(np.abs(z), initial=1.0))
        if (D @ z).min() < -round_off:
            w = least_distance(D @ Vt[rank:].T, -D @ z) if rank < len(z) else None
            if w is None:
                tendency = np.where(needs[:, None], (a1[:, None] * t1[stick] + a2[:, None] * t2[stick])
                                    / np.maximum(size, 1e-300)[:, None], 0.0)
                return False, tendency
            z = z + Vt[rank:].T @ w
        lam_n = np.zeros(self.n)
        lam_n[idx] = z[:k]
        vd = vd0 + AFt @ (P @ z)
        return not len(self._complementarity_breaks(dyn, ev, state, candidates, vd, lam_n)), None

    def _onset_modes(self, dyn, ev, vd0, state, candidates):
        """The candidates' modes from the contact problem at the accelerations (Trinkle, Pang, Sudarsky &
        Lo 1997, with the friction cone as a pyramid of four directions ±t₁, ±t₂, t₁ along the friction the
        point needs to stick, so that the pyramid holds the whole cone there; with t₁, t₂ the contact's own axes
        it held 1/(cos φ + sin φ) of it, 71 % at φ = 45°, and a box on a slope diagonal to them slid from
        tan θ = 0.71 μ_s): per candidate
        point its normal force λ_n ≥ 0 ⊥ g̈ ≥ 0, and per point at rest (mode STICK on entry) friction
        forces β_k ≥ 0 along d_k ⊥ d_k·a_t + σ ≥ 0 and σ ≥ 0 ⊥ μ_s λ_n − Σ β_k ≥ 0, a_t the tangential
        acceleration of the point (m/s²); a moving point's friction is −μ_d λ_n ŝ as in :meth:`solve`. With
        v̇ = v̇₀ + A Fᵀ λ this is a linear complementarity problem in (λ_n, β, σ), non-symmetric, solved by
        :func:`.complementarity.lemke`. A point at rest sticks, unless σ > 0: then it slips along its a_t
        (σ ≈ |a_t|), so the slip develops along ŝ for every coupling of
        the contacts (the single-contact rule, slip against the friction the point needs to stick, does
        not ensure that). Which points open is left to :meth:`resolve_modes`' least-index choice: where
        the points are redundant (a box's four corners) Lemke's vertex solution carries the load on some of
        them and leaves the others at λ_n = 0, where the least-norm forces share it. Sets the slip modes
        and directions in ``state`` when Lemke's algorithm finds the solution; otherwise leaves the entry
        modes."""
        C, F, c, pts, kind, geo = self.rows(ev.bs, state, idx=candidates)
        m = len(candidates)
        r = (len(C) - m) // 2
        rest = np.flatnonzero(self.modes(state)[candidates] == STICK)
        # each pyramid turned so that its first direction lies along the friction the point needs to stick
        friction_needed = self.solve(dyn, ev, vd0, state)[4][candidates[rest]]
        t1, t2 = geo[5][rest], geo[6][rest]
        turn = np.arctan2(np.sum(friction_needed * t2, 1), np.sum(friction_needed * t1, 1))
        cs, sn = np.cos(turn)[:, None], np.sin(turn)[:, None]
        t1, t2 = cs * t1 + sn * t2, cs * t2 - sn * t1
        T = np.vstack([cs * C[m: m + r] + sn * C[m + r:], cs * C[m + r:] - sn * C[m: m + r]])
        c1, c2 = c[m: m + r], c[m + r:]
        cT = np.concatenate([cs[:, 0] * c1 + sn[:, 0] * c2, cs[:, 0] * c2 - sn[:, 0] * c1])
        D = np.vstack([T[:r], -T[:r], T[r:], -T[r:]])
        rows = np.vstack([C[:m], D])
        AFt = self.constrained_inverse(dyn, ev, np.vstack([F[:m], D]).T)
        G = np.zeros((m + 5 * r, m + 5 * r))
        G[: m + 4 * r, : m + 4 * r] = rows @ AFt
        E = np.tile(np.eye(r), (4, 1))
        G[m: m + 4 * r, m + 4 * r:] = E
        G[m + 4 * r:, m: m + 4 * r] = -E.T
        G[m + 4 * r + np.arange(r), rest] = self.mu_s[candidates[rest]]
        b = np.concatenate([rows @ vd0 + np.concatenate([c[:m], cT[:r], -cT[:r], cT[r:], -cT[r:]]), np.zeros(r)])
        # redundant normal rows (a block's four feet: rank 3) make the problem degenerate, and Lemke's pivots
        # ended on a ray where every foot had to slip: a compliance of 10⁻⁹ of the stiffest row's on each
        # normal row (constraint force mixing) makes it regular and moves the accelerations by 10⁻⁹ of theirs
        G[np.arange(m), np.arange(m)] += ONSET_COMPLIANCE * float(np.max(np.abs(np.diag(G)[:m]), initial=0.0))
        z = lemke(G, b)
        if z is None:
            return
        vd = vd0 + AFt @ z[: m + 4 * r]
        a_t = (T[:r] @ vd + cT[:r])[:, None] * t1 + (T[r:] @ vd + cT[r:])[:, None] * t2
        beta = z[m: m + 4 * r].reshape(4, r)
        friction = (beta[0] - beta[1])[:, None] * t1 + (beta[2] - beta[3])[:, None] * t2
        sigma = z[m + 4 * r:]
        scale = max(1.0, float(np.max(np.abs(b))))
        S = state[: STATE_WIDTH * self.n].reshape(-1, STATE_WIDTH)
        for j, i in enumerate(candidates[rest]):
            if sigma[j] > 1e-9 * scale:
                direction = a_t[j] if np.linalg.norm(a_t[j]) > 1e-9 * scale else -friction[j]
                S[i, 0] = SLIP
                S[i, 1:] = direction / max(np.linalg.norm(direction), 1e-300)

    def _consistent_slips(self, dyn, ev, vd0, state, starting):
        """Turn the slip directions ŝ of the points ``starting`` (slipping from rest) together until each one's
        tangential acceleration a_t lies along its own ŝ, a_t = α ŝ with α > 0: Newton's method on their angles
        φ in the tangent planes (ŝ = cos φ t₁ + sin φ t₂), on the residuals a_t·(−sin φ t₁ + cos φ t₂), the
        Jacobian by differences of :meth:`solve`. Each contact's direction chosen on its own (against the
        friction it needed to stick, or along the onset's acceleration with the others fixed) is not such a set
        where the contacts are coupled: a ladder slipping at its floor and its wall at once took slips leaning
        4 % out of its plane and twisted, 2.2e-4 m off the closed form in 0.3 s at 0.1 % past its slip angle.
        Keeps the new directions (and returns True) only where Newton converges to within 10⁻⁹ (1 + |a_t|) m/s²
        with every α > 0 and every active point still pushing; otherwise restores the old ones."""
        if not len(starting):
            return False
        S = state[: STATE_WIDTH * self.n].reshape(-1, STATE_WIDTH)
        _, _, _, _, Jp, c, t1, t2 = self.kinematics(ev.bs, starting, state)
        old = S[starting, 1:].copy()
        phi = np.arctan2(np.sum(old * t2, 1), np.sum(old * t1, 1))

        def residual(phi):
            cs, sn = np.cos(phi), np.sin(phi)
            S[starting, 1:] = cs[:, None] * t1 + sn[:, None] * t2
            vd, _, _, lam_n, _ = self.solve(dyn, ev, vd0, state)
            a = np.einsum("kiv,v->ki", Jp, vd)
            a1, a2 = np.sum(a * t1, 1) + c[:, 1], np.sum(a * t2, 1) + c[:, 2]
            return -sn * a1 + cs * a2, cs * a1 + sn * a2, np.hypot(a1, a2), lam_n

        r, along, size, lam_n = residual(phi)
        if np.all(np.abs(r) <= 1e-9 * (1.0 + size)):
            S[starting, 1:] = old
            return False
        for _ in range(_SLIP_NEWTON_ITERATIONS):
            jac = np.empty((len(starting), len(starting)))
            for j in range(len(starting)):
                moved = phi.copy()
                moved[j] += _SLIP_ANGLE_STEP
                jac[:, j] = (residual(moved)[0] - r) / _SLIP_ANGLE_STEP
            phi = phi + np.clip(np.linalg.lstsq(jac, -r, rcond=None)[0], -0.5, 0.5)
            r, along, size, lam_n = residual(phi)
            if np.all(np.abs(r) <= 1e-9 * (1.0 + size)):
                live = np.flatnonzero(self.modes(state) > OPEN)
                if np.all(along > 0) and np.all(lam_n[live] > self.force_tol[live]):
                    return True
                break
        S[starting, 1:] = old
        return False

    def _backward_onsets(self, bs, state, starting, vd):
        """Of the points ``starting`` to slip from rest, those whose tangential acceleration at v̇ = ``vd``
        opposes their slip direction (a_t·ŝ below 10⁻⁹ (1 + |a_t|) m/s²): their slip would stop at once. Where
        the sticking rows are redundant and others slip, the accelerations depend on how the forces are
        shared (rigid contacts with friction are not unique there), and the sharing the evaluation takes
        (least |λ|) can turn a slip chosen by :meth:`_onset_modes` back; such a point sticks instead."""
        if not len(starting):
            return starting
        n, _, _, _, Jp, c, t1, t2 = self.kinematics(bs, starting, state)
        a = np.einsum("kiv,v->ki", Jp, vd)
        a_t = (np.sum(a * t1, 1) + c[:, 1])[:, None] * t1 + (np.sum(a * t2, 1) + c[:, 2])[:, None] * t2
        along = np.sum(a_t * self.slip_dirs(state)[starting], 1)
        return starting[along < -1e-9 * (1.0 + np.linalg.norm(a_t, axis=1))]

    def _complementarity_breaks(self, dyn, ev, state, candidates, vd, lam_n, relaxed=False):
        """Positions in ``candidates`` (ascending) of the points that break complementarity at the
        accelerations vd (nv,): active with λ_n ≤ :attr:`force_tol` (``relaxed``: ≤ −:attr:`force_tol`), or
        open with g̈ = J_n v̇ + c_n below −G :attr:`force_tol`, the acceleration that force would give the
        point (G = J_n A J_nᵀ its inverse effective mass with the joints; at most its inverse mass with the
        other contacts too, so that a point opened for a force below the tolerance is not closed again for
        the acceleration it takes)."""
        live = self.modes(state)[candidates] > OPEN
        wrong = live & (lam_n[candidates] <= (-1.0 if relaxed else 1.0) * self.force_tol[candidates])
        shut = candidates[~live]
        if len(shut):
            n, _, _, _, Jp, c, _, _ = self.kinematics(ev.bs, shut, state)
            Jn = np.einsum("ki,kiv->kv", n, Jp)
            inverse_mass = np.einsum("kv,vk->k", Jn, self.constrained_inverse(dyn, ev, Jn.T))
            wrong[~live] = Jn @ vd + c[:, 0] < -inverse_mass * self.force_tol[shut]
        return np.flatnonzero(wrong)

    def cone_rows(self, idx, stick, t1, t2, lam):
        """The sticking contacts' friction cones as rows (D, 0) over the active rows' forces λ of :meth:`rows`
        (normal forces of the points ``idx``, then t₁ and t₂ forces of the sticking ones): D λ ≥ 0 keeps each
        contact's Σ λ_t within the regular polygon of :data:`CONE_SIDES` sides inscribed in its cone,
        d_j · Σ λ_t ≤ cos(π/sides) μ_s Σ λ_n, with a vertex along the contact's friction in ``lam`` (the
        least-norm forces; t₁ where it has none) so that the polygon holds the cone's whole friction in that
        direction (and 1 − cos(π/sides) = 7.6 % less at most in others), d_j in the tangent plane of the
        contact's first sticking point. Where redundant rows leave the sharing free, the contact solve keeps
        the friction there (:func:`.complementarity.pushing_solution`): with the least-norm sharing a block on
        four feet, equal tangential forces on unequal normal ones, slid down an incline 10 % below its friction
        angle."""
        k, ns = len(idx), int(stick.sum())
        sticking = np.flatnonzero(stick)
        owners = self.owner[idx[sticking]]
        groups = [sticking[owners == o] for o in np.unique(owners) if self.mu_s[idx[sticking[owners == o]][0]] > 0]
        if not groups:
            return np.zeros((0, len(lam))), np.zeros(0)
        where = np.full(k, -1)
        where[sticking] = np.arange(ns)
        sides = np.arange(CONE_SIDES)
        D = np.zeros((CONE_SIDES * len(groups), len(lam)))
        for a, pts in enumerate(groups):
            rows = D[CONE_SIDES * a: CONE_SIDES * (a + 1)]
            e1, e2 = t1[pts[0]], t2[pts[0]]
            friction = lam[k + where[pts]] @ t1[pts] + lam[k + ns + where[pts]] @ t2[pts]
            angle = math.atan2(friction @ e2, friction @ e1) + np.pi * (2 * sides + 1) / CONE_SIDES
            d = np.cos(angle)[:, None] * e1 + np.sin(angle)[:, None] * e2
            rows[:, pts] = np.cos(np.pi / CONE_SIDES) * self.mu_s[idx[pts]]
            rows[:, k + where[pts]] = -d @ t1[pts].T
            rows[:, k + ns + where[pts]] = -d @ t2[pts].T
        return D, np.zeros(len(D))

    def cone_violations(self, state, lam_n, f_t):
        """Contacts (owners) whose sticking points need more than μ_s Σ λ_n of friction (beyond round-off:
        their :meth:`cone_values` are negative)."""
        return [o for o, value in self.cone_values(state, lam_n, f_t).items() if value < 0.0]

    def cone_values(self, state, lam_n, f_t):
        """Per sticking contact (owner) its friction margin plus the round-off allowed in it, 10⁻⁹ of the
        largest normal force (N), as {owner: value}: the switching function of a slip, negative exactly
        where :meth:`resolve_modes` sets the contact slipping (with the margin alone, a stick chosen within
        the allowance, at the cone's edge, is switched again at once and without end)."""
        allowance = 1e-9 * float(np.max(np.abs(lam_n), initial=0.0))
        return {o: margin + allowance for o, margin in self.friction_margins(state, lam_n, f_t).items()}

    def friction_cones(self):
        """(contact name, μ_s) of the declared contacts with static friction and at least one point: the run's
        friction-cone check (:mod:`.invariants`)."""
        owners, first = np.unique(self.owner[: self.np], return_index=True)
        return [(self.names[o], float(self.mu_s[i])) for o, i in zip(owners, first) if self.mu_s[i] > 0]

    def friction_margins(self, state, lam_n, f_t):
        """Per sticking contact (owner): μ_s Σ λ_n − |Σ λ_t| (N; < 0 outside the cone), as {owner: value}."""
        modes = self.modes(state)
        out = {}
        for o in np.unique(self.owner[modes == STICK]):
            pts = np.flatnonzero((self.owner == o) & (modes == STICK))
            out[int(o)] = float(self.mu_s[pts[0]] * lam_n[pts].sum() - np.linalg.norm(f_t[pts].sum(0)))
        return out

    def report(self, bs, state, lam_n=None, f_t=None):
        """Outputs per declared contact (suffixes :data:`.contacts.CONTACT_OUTPUTS`): active (1/0: a
        point in the equations), normal force N and friction force N (magnitudes of the sums over the
        points), slip speed m/s (largest over the active points), penetration m (≥ 0; the gap's
        violation, round-off) and the deepest point (``point_x`` … m, assembly frame; while apart,
        midway between the shapes' closest points)."""
        nc, m = len(self.names), self.np
        lam_n = np.zeros(m) if lam_n is None else lam_n[:m]
        f_t = np.zeros((m, 3)) if f_t is None else f_t[:m]
        n, delta, x, _, vt = self.geometry(bs)
        live = self.modes(state)[:m] > OPEN
        owner = self.owner[:m]
        fn_sum, ft_sum = np.zeros((nc, 3)), np.zeros((nc, 3))
        np.add.at(fn_sum, owner, lam_n[:, None] * n)
        np.add.at(ft_sum, owner, f_t)
        active, slip, depth = np.zeros(nc), np.zeros(nc), np.zeros(nc)
        np.maximum.at(active, owner, live.astype(float))
        np.maximum.at(slip, owner, np.where(live, np.linalg.norm(vt, axis=1), 0.0))
        np.maximum.at(depth, owner, np.maximum(delta, 0.0))
        return {"active": active, "normal_force": np.linalg.norm(fn_sum, axis=1),
                "friction_force": np.linalg.norm(ft_sum, axis=1), "slip_velocity": slip, "penetration": depth,
                **_point_columns(x[:m][deepest_points(owner, delta[:m], nc)])}

    def limit_report(self, bs, state, lam_n=None):
        """Outputs per unilateral limit (suffixes :data:`.stops.STOP_OUTPUTS`): active 1/0, force (N m or N,
        ≥ 0, the push back into the range), penetration (rad or m past the limit; round-off)."""
        nl = self.limits.n
        lam = np.zeros(2 * nl) if lam_n is None else lam_n[self.np:]
        live = (self.modes(state)[self.np:] > OPEN).reshape(nl, 2)
        g = self.gaps(bs, state)[0][self.np:].reshape(nl, 2)
        return {"limit_active": np.any(live, axis=1).astype(float), "limit_force": lam.reshape(nl, 2).sum(1),
                "limit_penetration": np.maximum(-g.min(axis=1), 0.0)}

    def check_formulation(self, name):
        """A MechanismError unless the formulation ``name`` runs unilateral contacts."""
        if name != "projection":
            raise MechanismError(f"unilateral contact(s) {', '.join(map(repr, self.names))} run with the projection "
                                 f"formulation only, not {name!r}",
                                 hint="use --formulation projection (the default), or method = \"compliant\"")


class _Moved:
    """A body state's poses and velocities (what :meth:`.stops.JointStops.coordinates` reads)."""

    def __init__(self, A, rc, vc, w):
        self.A, self.rc, self.vc, self.w = A, rc, vc, w


def _with_velocities(dyn, ev, v):
    """ev's body state with the velocities v."""
    if v is ev.v:
        return ev.bs
    from .mass import body_state

    return body_state(dyn.model, dyn.mass, ev.q, v)
