"""Joint limits as compliant stops in dynamics (issue 16 item 2).

A joint's ``limits`` (``{angle = [lo, hi]}`` rad, ``{disp = [lo, hi]}`` m; revolute, prismatic and
cylindrical joints) bound its coordinate q, measured as :class:`~cadmotion.kernel.spec.JointSpec`
defines it: the angle about z_i from x_i to x_j (rad, continuous over turns), the slide
(P_j − P_i)·z_i of the second marker's origin along the first marker's z axis (m); both zero
at the initial pose. While q is beyond a limit the stop pushes it back with the normal-force law
of the compliant contacts (:mod:`.contacts`, Hunt & Crossley):

    δ = lo − q  (lower stop)   or   δ = q − hi  (upper stop),   δ̇ its rate
    F = max(0, k δ^n (1 + α δ̇))   while δ > 0,   α = ξ(e)/δ̇⁻

(δ̇⁻ the speed of q when it reached the limit, ξ the exact restitution root
:func:`.contacts.restitution_factor`). F is a torque about z_i (N m) for an angle, a force along
z_i (N) for a slide, on the second part (+F for the lower stop, −F for the upper), its reaction
on the first part (a slide's force acts at P_j on both parts, so its power is exactly F q̇ and
the elastic part k δ^(n+1)/(n+1) is exactly conservative; it is in ``energy.potential``, the
damping's power −(F − k δ^n) δ̇ ≤ 0 in ``work.nonconservative``).

Parameters, per joint (keys of its ``[[joints]]`` table; SI units):

* ``limit_exponent`` n, default 1 (a flat stop: linear, duration independent of the speed);
* ``limit_stiffness`` k (N m/rad^n or N/m^n), default such that a stop with n = 1 lasts
  :data:`STOP_DURATION` on the pair's effective inertia about / mass along the axis
  (k = m_eff (π/t_c)², m_eff from the model's mass properties, see :attr:`JointStops.m_eff`);
* ``limit_restitution`` e in [:data:`~.contacts.MIN_RESTITUTION`, 1], default :data:`STOP_RESTITUTION`.

This is the compliant model of a stop (``limit_method = "compliant"``, the default); with
``limit_method = "unilateral"`` the limits are unilateral constraints with impacts instead
(:mod:`.unilateral`; this class then gives their coordinates, ``JointStops(model, mass, "unilateral")``).
Kinematic (driven) runs do not use the stops: ``cadmotion check`` reports limits that are passed, as before.

Not stepped over: :meth:`JointStops.step_limit` caps the explicit step as the contacts do
(half the time to the limit at the present approach speed, not less than
:data:`~.contacts.TOUCH_STEP` of the stop's duration; a tenth of the duration while in it).
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import MechanismError
from ..model import frame_matrix
from .contacts import MIN_IMPACT_SPEED, MIN_RESTITUTION, compliant_step_limit, restitution_factor

__all__ = ["JointStops", "STOP_DURATION", "STOP_RESTITUTION", "STOP_OUTPUTS", "STOP_KEYS", "STOP_JOINTS"]

#: duration (s) of a linear stop's impact that sets the default stiffness
STOP_DURATION = 2e-3
#: default coefficient of restitution of a stop
STOP_RESTITUTION = 0.5
#: the joint types whose limits act as stops, and the coordinates each takes
STOP_JOINTS = {"revolute": ("angle",), "prismatic": ("disp",), "cylindrical": ("angle", "disp")}
#: the per-joint keys (model file and :attr:`JointSpec.stop`)
STOP_KEYS = ("limit_stiffness", "limit_exponent", "limit_restitution", "limit_method")
#: output series per limited coordinate (suffixes of ``<joint>.``, or ``<joint>.<coordinate>.`` when
#: a cylindrical joint limits both)
STOP_OUTPUTS = ("limit_active", "limit_force", "limit_penetration")
_TWO_PI = 2.0 * math.pi


class JointStops:
    """The stops of a model's joint limits (see the module docstring).

    State (``state``, shape (2 n,)): each stop's continuous angle reference (rad; unused for a
    slide), then its recorded impact speed δ̇⁻ (rad/s or m/s, 0 while free). One stop per limited
    coordinate: both of its limits act on it.
    """

    def __init__(self, model, mass, method="compliant"):
        spec = model.spec
        com = mass.body_com_all
        nmov = mass.nmov
        names, out, ia, ib, di, dj, Ri, rot, lo, hi, k, n_exp, e = [], [], [], [], [], [], [], [], [], [], [], [], []
        m_eff, xj, wheres = [], [], []
        for j in spec.joints:
            if not j.limits:
                continue
            where = j.source or spec.source or None
            if j.type not in STOP_JOINTS:
                if j.stop:
                    raise MechanismError(f"joint {j.name!r} ({j.type}): limit_* keys are for the stops of "
                                         f"{', '.join(STOP_JOINTS)} joints", where=where,
                                         hint=f"remove the limit_* keys: the limits of a {j.type} joint are checked "
                                              "by `cadmotion check` only, they do not act in dynamics")
                continue  # limits of other joints stay a kinematic check only
            params = dict(j.stop)
            if params.pop("limit_method", "compliant") != method:
                continue
            for key, value in params.items():
                if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                    raise MechanismError(f"joint {j.name!r}: `{key}` must be a finite number ≥ 0, got {value!r}",
                                         where=where, hint="limit_stiffness > 0 (N m/rad^n or N/m^n), "
                                                           "limit_exponent ≥ 1, limit_restitution in [0, 1]")
            exponent = float(params.get("limit_exponent", 1.0))
            if exponent < 1.0:
                raise MechanismError(f"joint {j.name!r}: `limit_exponent` must be ≥ 1, got {exponent}", where=where,
                                     hint="below 1 the stop's stiffness is infinite at first touch")
            restitution = float(params.get("limit_restitution", STOP_RESTITUTION))
            low_e = MIN_RESTITUTION if method == "compliant" else 0.0
            if not (low_e <= restitution <= 1.0):
                raise MechanismError(f"joint {j.name!r}: `limit_restitution` must be in [{low_e}, 1], "
                                     f"got {restitution}", where=where,
                                     hint="a compliant stop's damping reaches e = 0.05 at least: for a plastic stop "
                                          "use limit_method = \"unilateral\" (e from 0)" if method == "compliant"
                                     else "give e between 0 (plastic) and 1 (elastic)")
            b = [model.body_index(p) for p in j.parts]
            (si, Rmi), (sj, Rmj) = frame_matrix(j.markers[0]), frame_matrix(j.markers[1])
            coords = [c for c, _ in j.limits]
            for coord, (low, high) in j.limits:
                if coord not in STOP_JOINTS[j.type]:
                    # a revolute joint's disp, a prismatic joint's angle: no such coordinate, the stop would never act
                    have = " and ".join(STOP_JOINTS[j.type])
                    raise MechanismError(f"joint {j.name!r} ({j.type}) has no {coord} coordinate to limit "
                                         f"(it has {have})", where=where,
                                         hint=f"limit its {have}: limits = {{{STOP_JOINTS[j.type][0]} = [lo, hi]}}, "
                                              "or remove the limit")
                if not low < high:
                    raise MechanismError(f"joint {j.name!r}: {coord} limits [{low}, {high}] need lower < upper",
                                         where=where, hint=f"give limits = {{{coord} = [lower, upper]}}, lower < "
                                                           "upper, about the initial pose (the coordinate is 0 there)")
                is_angle = coord == "angle"
                inv = []
                for body, s, R in ((b[0], si, Rmi), (b[1], sj, Rmj)):
                    if body >= nmov:
                        inv.append(0.0)
                        continue
                    z = R[:, 2]
                    if is_angle:
                        d = s - com[body]
                        perp = d - (d @ z) * z
                        inertia = z @ mass.body_inertia[body] @ z + mass.body_mass[body] * (perp @ perp)
                    else:
                        inertia = mass.body_mass[body]
                    inv.append(1.0 / inertia if inertia > 0 else np.inf)
                if sum(inv) == 0.0:
                    raise MechanismError(f"joint {j.name!r} joins two fixed parts: its limits cannot act",
                                         where=where, hint="remove its limits, or free one of its parts")
                meff = 1.0 / sum(inv)
                stiffness = float(params.get("limit_stiffness", meff * (math.pi / STOP_DURATION) ** 2))
                if stiffness <= 0:
                    raise MechanismError(f"joint {j.name!r}: `limit_stiffness` must be > 0", where=where,
                                         hint="give k in N m/rad^n (angle) or N/m^n (disp), or leave it out for "
                                              "the default (a 2 ms stop)")
                names.append(j.name)
                out.append(j.name if len(coords) == 1 else f"{j.name}.{coord}")
                ia.append(b[0])
                ib.append(b[1])
                di.append(si - com[b[0]])
                dj.append(sj - com[b[1]])
                Ri.append(Rmi)
                xj.append(Rmj[:, 0])
                rot.append(is_angle)
                lo.append(float(low))
                hi.append(float(high))
                k.append(stiffness)
                n_exp.append(exponent)
                e.append(restitution)
                m_eff.append(meff)
                wheres.append(where)
        arr = np.asarray
        #: the limited joints' names and the output prefix of each stop
        self.names, self.prefixes = names, out
        #: where each stop's joint is declared (file and table), for errors
        self.wheres = wheres
        self.n = len(names)
        self.ia, self.ib = arr(ia, int), arr(ib, int)
        self.di, self.dj = arr(di, float).reshape(-1, 3), arr(dj, float).reshape(-1, 3)
        self.Ri = arr(Ri, float).reshape(-1, 3, 3)
        #: the second marker's x axis (part frame): the angle is measured from x_i to it about z_i
        self.xj = arr(xj, float).reshape(-1, 3)
        self.rot = arr(rot, bool)
        self.lo, self.hi = arr(lo, float), arr(hi, float)
        self.k, self.exp = arr(k, float), arr(n_exp, float)
        self.e = arr(e, float)
        self.xi = arr([restitution_factor(x) if method == "compliant" else 0.0 for x in e], float)
        #: effective inertia (kg m²) or mass (kg) of the pair along the coordinate: 1/(1/m_i + 1/m_j),
        #: each part's inertia about the joint axis through its marker origin (or its mass), fixed parts ∞
        self.m_eff = arr(m_eff, float)
        self.stateful = self.n > 0

    # ------------------------------------------------------------------ coordinates
    def coordinates(self, bs, state):
        """(q (n,) rad or m, q̇ (n,), z (n, 3) the first marker's axis, world, P_j (n, 3) the second
        marker's origin, world), angles continued from the references in ``state``."""
        Ai, Aj = bs.A[self.ia], bs.A[self.ib]
        Wi = Ai @ self.Ri
        z = Wi[:, :, 2]
        Pi = bs.rc[self.ia] + np.einsum("nij,nj->ni", Ai, self.di)
        Pj = bs.rc[self.ib] + np.einsum("nij,nj->ni", Aj, self.dj)
        # angle: x_j is the second marker's x axis; both markers coincide at the initial pose
        Xj = np.einsum("nij,nj->ni", Aj, self.xj)
        raw = np.arctan2(np.sum(Wi[:, :, 1] * Xj, 1), np.sum(Wi[:, :, 0] * Xj, 1))
        ref = state[: self.n]
        theta = raw + _TWO_PI * np.round((ref - raw) / _TWO_PI)
        wrel = bs.w[self.ib] - bs.w[self.ia]
        theta_d = np.sum(z * wrel, 1)
        disp = np.sum((Pj - Pi) * z, 1)
        # d/dt of (P_j − P_i)·z_i = z·(v_Pj − v_i − ω_i × (P_j − r_i)): the velocity of P_j relative to part i
        vrel = (bs.vc[self.ib] + np.cross(bs.w[self.ib], Pj - bs.rc[self.ib])
                - bs.vc[self.ia] - np.cross(bs.w[self.ia], Pj - bs.rc[self.ia]))
        disp_d = np.sum(vrel * z, 1)
        q = np.where(self.rot, theta, disp)
        qd = np.where(self.rot, theta_d, disp_d)
        return q, qd, z, Pj, raw

    def law(self, q, qd, state):
        """(δ (n,), δ̇ (n,), sign (n,) +1 lower / −1 upper, F (n,) ≥ 0, elastic k δ^n (n,)) at q, q̇."""
        below = q < self.lo
        delta = np.where(below, self.lo - q, q - self.hi)
        sign = np.where(below, 1.0, -1.0)
        dd = -sign * qd
        active = delta > 0
        dp = np.where(active, delta, 0.0)
        elastic = self.k * dp ** self.exp
        alpha = self.xi / self.impact_speeds(dp, dd, state)
        F = np.where(active, np.maximum(0.0, elastic * (1.0 + alpha * dd)), 0.0)
        return delta, dd, sign, F, np.where(active, elastic, 0.0)

    def impact_speeds(self, delta, ddelta, state):
        """δ̇⁻ used by the restitution form: the recorded one, else the one the present (δ, δ̇) implies
        by the elastic energy (as :meth:`.contacts.Contacts.impact_speeds`), at least MIN_IMPACT_SPEED."""
        touch = np.sqrt(np.maximum(ddelta, 0.0) ** 2 + 2.0 * self.k * delta ** (self.exp + 1.0)
                        / ((self.exp + 1.0) * self.m_eff))
        rec = state[self.n:]
        return np.maximum(np.where(rec > 0, rec, touch), MIN_IMPACT_SPEED)

    # ------------------------------------------------------------------ force element interface
    def evaluate(self, bs, state, F, N):
        """Accumulate the stop torques/forces into F (nb, 3) N and moments about the com N (nb, 3)
        N m; returns the damping's power (W, ≤ 0)."""
        if not self.n:
            return 0.0
        q, qd, z, Pj, _ = self.coordinates(bs, state)
        delta, dd, sign, Fs, elastic = self.law(q, qd, state)
        g = (sign * Fs)[:, None] * z  # generalised force along +q, as a world vector
        r = self.rot[:, None]
        T = np.where(r, g, 0.0)
        f = np.where(r, 0.0, g)
        np.add.at(N, self.ib, T + np.cross(Pj - bs.rc[self.ib], f))
        np.add.at(N, self.ia, -T - np.cross(Pj - bs.rc[self.ia], f))
        np.add.at(F, self.ib, f)
        np.add.at(F, self.ia, -f)
        return float(np.sum(-(Fs - elastic) * dd))

    def potential(self, bs, state):
        """Elastic energy Σ k δ^(n+1)/(n+1) of the stops in contact (J)."""
        if not self.n:
            return 0.0
        q = self.coordinates(bs, state)[0]
        delta = np.maximum(np.maximum(self.lo - q, q - self.hi), 0.0)
        return float(np.sum(self.k * delta ** (self.exp + 1.0) / (self.exp + 1.0)))

    def initial_state(self, bs):
        """References at the initial pose (angles 0 there) and no impact; a MechanismError naming the
        joint if its coordinate starts outside its limits."""
        state = np.zeros(2 * self.n)
        if not self.n:
            return state
        q, _, _, _, raw = self.coordinates(bs, np.r_[np.zeros(self.n), state[self.n:]])
        state[: self.n] = raw
        for i in np.flatnonzero((q < self.lo - 1e-12) | (q > self.hi + 1e-12)):
            unit = "rad" if self.rot[i] else "m"
            raise MechanismError(f"joint {self.names[i]!r}: its {'angle' if self.rot[i] else 'disp'} {q[i]:.6g} {unit} "
                                 f"starts outside its limits [{self.lo[i]:.6g}, {self.hi[i]:.6g}]",
                                 where=self.wheres[i],
                                 hint="start the joint within its limits (its coordinate is 0 at the initial pose)")
        return state

    def accept(self, bs, state, velocities=False):
        """At an accepted state: continue the angle references; with velocities, record each stop's
        impact speed (0 while free)."""
        if not self.n:
            return
        q, qd, _, _, raw = self.coordinates(bs, state)
        ref = state[: self.n]
        state[: self.n] = raw + _TWO_PI * np.round((ref - raw) / _TWO_PI)
        if velocities:
            delta, dd, *_ = self.law(q, qd, state)
            state[self.n:] = np.where(delta > 0, self.impact_speeds(np.maximum(delta, 0.0), dd, state), 0.0)

    def report(self, bs, state):
        """Outputs per stop (suffixes :data:`STOP_OUTPUTS`): active 1/0, force (N m or N, ≥ 0, the
        stop's push on q) and penetration (rad or m, 0 while free)."""
        q, qd, *_ = self.coordinates(bs, state)
        delta, _, _, Fs, _ = self.law(q, qd, state)
        return {"limit_active": (delta > 0).astype(float), "limit_force": Fs,
                "limit_penetration": np.maximum(delta, 0.0)}

    def step_limit(self, bs, state):
        """The largest step (s) that cannot stride over a stop (see the module docstring)."""
        if not self.n:
            return np.inf
        q, qd, *_ = self.coordinates(bs, state)
        delta, dd, *_ = self.law(q, qd, state)
        # the nearer limit decides while free
        to_lo, to_hi = self.lo - q, q - self.hi
        near_lo = to_lo >= to_hi
        delta = np.where(near_lo, to_lo, to_hi)
        dd = np.where(near_lo, -qd, qd)
        return compliant_step_limit(delta, dd, np.maximum(np.abs(dd), state[self.n:]), self.m_eff, self.k, self.exp)
