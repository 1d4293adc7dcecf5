"""Per-frame outputs of a dynamic (or inverse-dynamic) analysis: reactions, efforts, energy.

Reactions. The constraint force on the bodies is −Jvᵀ λ; restricted to the rows of one
joint and to the joint's second part j it is a force F (N) at j's com and a moment n_c
(N m) about it. It is reported at the origin P of the joint's marker on its first part,
in assembly axes:  F,  T = n_c + (r_c,j − P) × F  (``<joint>.fx .fy .fz .tx .ty .tz``).
The Jacobian columns of fixed parts are part of each joint's generated block, so the
reaction on a fixed second part comes out the same way.

Driver efforts. A driving constraint θ − f(t) = 0 (or s − f(t), u·P − f(t)) acts on its
second part with the generalised force −λ along the driven coordinate: the effort is
``<driver>.effort`` = −λ (N m about the joint axis, or N along it / along u).

Contacts (:mod:`.contacts`): ``<contact>.active`` (1 while the shapes touch, else 0),
``.normal_force`` (N), ``.friction_force`` (N, magnitude), ``.slip_velocity`` (m/s, magnitude of
the tangential relative velocity at the contact point), ``.penetration`` (m, 0 while apart),
``.point_x``, ``.point_y``, ``.point_z`` (m, assembly frame: the contact's deepest point; while
apart, midway between the shapes' closest points; the animations mark it while the contact is
active). Unilateral
contacts (:mod:`.unilateral`) report the same series: active while a point is in the equations, the
normal and friction forces of their constraint rows, the penetration only as round-off.

Joint limits as stops (:mod:`.stops`): ``<joint>.limit_active`` (1 while the coordinate is past a
limit), ``.limit_force`` (N m about, or N along, the joint axis; ≥ 0, the push back into the
range), ``.limit_penetration`` (rad or m past the limit, 0 inside); ``<joint>.angle.limit_*`` and
``<joint>.disp.limit_*`` for a cylindrical joint that limits both.

Tyres (:mod:`.tyres`): ``<tyre>.normal_force`` (N), ``.longitudinal_force`` (N, along the heading),
``.lateral_force`` (N), ``.slip_ratio`` (1), ``.slip_angle`` (rad), ``.deflection`` (m, 0 off the road).

Redundant rows: λ is the minimum-norm solution over all rows (see
:meth:`~.equations.Dynamics.full_multipliers`); the joints whose rows take part in a
redundancy are listed, their reactions are not unique.
"""

from __future__ import annotations

import numpy as np

from .mass import cross

from ..motion import Event

__all__ = ["FrameOutputs", "CompiledFrameOutputs", "reactions_event", "lift_off_events"]


class FrameOutputs:
    """Accumulates the extra series of a Motion frame by frame."""

    def __init__(self, dyn):
        self.dyn = dyn
        model = dyn.model
        self.joint_groups = [(k, gr) for k, gr in enumerate(dyn.groups) if gr["g"].kind == "joint"]
        self.driver_groups = [(k, gr) for k, gr in enumerate(dyn.groups) if gr["g"].kind == "driver"]
        self.cam_groups = [(k, gr) for k, gr in enumerate(dyn.groups) if gr["g"].template.startswith("cam-")]
        self.series = {}
        names = ["energy.kinetic", "energy.potential", "energy.total", "work.nonconservative",
                 "violation.position", "violation.velocity"]
        for _, gr in self.joint_groups:
            for name in gr["g"].names:
                names += [f"{name}.{c}" for c in ("fx", "fy", "fz", "tx", "ty", "tz")]
        for _, gr in self.driver_groups:
            names += [f"{name}.effort" for name in gr["g"].names]
        for _, gr in self.cam_groups:
            names += [f"{name}.force" for name in gr["g"].names]
        from .contacts import CONTACT_OUTPUTS

        for contacts in (dyn.forces.contacts, dyn.forces.contact_constraints):
            if contacts is not None:
                names += [f"{name}.{c}" for name in contacts.names for c in CONTACT_OUTPUTS]
        from .tyres import TYRE_OUTPUTS

        if dyn.forces.tyres is not None:
            names += [f"{name}.{c}" for name in dyn.forces.tyres.names for c in TYRE_OUTPUTS]
        from .stops import STOP_OUTPUTS

        for stops in (dyn.forces.stops, getattr(dyn.forces.contact_constraints, "limits", None)):
            if stops is not None:
                names += [f"{prefix}.{c}" for prefix in stops.prefixes for c in STOP_OUTPUTS]
        self.names = names
        self.rows = {n: [] for n in names}
        first = np.cumsum([0] + [gr["n"] for gr in dyn.groups])
        #: per joint group: its instances' first row among all the groups' instances and, per
        #: instance, its six reaction series (fx, fy, fz, tx, ty, tz)
        self._joint_series = [(first[k], [[self.rows[f"{name}.{c}"] for c in ("fx", "fy", "fz", "tx", "ty", "tz")]
                                          for name in gr["g"].names]) for k, gr in self.joint_groups]
        #: per driver and cam group: its first row and its instances' series
        self._load_series = [(gr["row0"], [self.rows[f"{name}.{kind}"] for name in gr["g"].names])
                             for groups, kind in ((self.driver_groups, "effort"), (self.cam_groups, "force"))
                             for _, gr in groups]
        self.not_unique = set()
        self.model = model

    def add(self, t, q, v, work, angles, refs, vd=None):
        """One frame. ``vd`` given: inverse dynamics (λ from the motion's accelerations).

        Returns (v̇, q̈) at the frame.
        """
        dyn = self.dyn
        constraints = dyn.forces.contact_constraints
        contact_forces = None
        for attempt in range(2):
            ev = dyn.evaluate(q, v, t, refs)
            try:
                if vd is None and constraints is not None:
                    # the active unilateral contacts' forces act on the bodies as applied forces do
                    vd0, _ = dyn.accelerations(ev)
                    contact_forces = constraints.solve(dyn, ev, vd0, dyn.forces.contact_modes(refs))
                    ev.f = ev.f + contact_forces[1]
                    ev.Minv_f = ev.Minv_f + dyn.minv(ev.bs, contact_forces[1])
                if vd is None:
                    vd_out, lam_r = dyn.accelerations(ev)
                else:
                    g = ev.f - dyn.mass_times(ev.bs, vd)
                    vd_out = vd
                    lam_r = ev.solve_S(ev.minv_jt() @ g) if len(dyn.rows) else np.zeros(0)
                break
            except np.linalg.LinAlgError:
                if attempt:
                    raise
                # the rows kept at t0 became dependent (the redundant set of a loop moves with
                # the configuration, e.g. a planar N-gon): choose the independent rows again here
                dyn.set_rows(ev.J, ev.bs)
        vd = vd_out
        lam, N = dyn.full_multipliers(ev, lam_r)
        if N.shape[1]:
            involved = np.flatnonzero(np.any(np.abs(N) > 1e-9 * max(1.0, np.abs(N).max()), axis=1))
            for r in involved:
                self.not_unique.add(dyn.row_labels[r][0])
        wrenches = dyn.constraint_wrenches(ev, lam)
        bs = ev.bs
        qf = np.concatenate([q, dyn.model.q_fixed]).reshape(dyn.model.nb, 7)
        for j, (k, gr) in enumerate(self.joint_groups):
            g = gr["g"]
            w = wrenches[k][:, 1, :]
            bi, bj = g.bodies[:, 0], g.bodies[:, 1]
            P = qf[bi, :3] + np.einsum("nij,nj->ni", bs.A[bi], g.markers[:, 0:3])
            F = w[:, :3]
            T = w[:, 3:] + cross(bs.rc[bj] - P, F)
            _append_rows(self._joint_series[j][1], np.concatenate([F, T], axis=1))
        self._append_loads(lam)
        lam_n, f_t = (contact_forces[3], contact_forces[4]) if contact_forces is not None else (None, None)
        self._append_elements(bs, refs, work, lam_n, f_t)
        phi = dyn.phi(q, t, angles)
        out = self.rows
        out["violation.position"].append(float(np.linalg.norm(phi)))
        out["violation.velocity"].append(float(np.linalg.norm(ev.J @ v + ev.phit)))
        self.jacobian = ev.J  # Jv (every row) at this frame, for a caller that watches it (inverse dynamics)
        return vd, dyn.qdd(bs, v, vd)

    def _append_loads(self, lam):
        """The drivers' efforts and the cams' forces of a frame: −λ of their rows (a driver's θ − f(t),
        a cam's Φ = m_b − L(θ_a): the driven or follower coordinate is loaded by −λ)."""
        for row0, series in self._load_series:
            for i, column in enumerate(series):
                column.append(-lam[row0 + i])

    def _append_elements(self, bs, refs, work, lam_n=None, f_t=None):
        """A frame's energies, work and force elements' series (contacts, unilateral contacts and
        their limits with their normal and friction forces ``lam_n``, ``f_t``, tyres, stops) at the
        body state ``bs``."""
        dyn, out = self.dyn, self.rows
        T_kin = dyn.kinetic(bs)
        V = dyn.forces.potential(bs, refs)
        out["energy.kinetic"].append(T_kin)
        out["energy.potential"].append(V)
        out["energy.total"].append(T_kin + V)
        out["work.nonconservative"].append(work)
        contacts = dyn.forces.contacts
        if contacts is not None:
            for c, values in contacts.report(bs, dyn.forces.contact_state(refs)).items():
                for name, value in zip(contacts.names, values):
                    out[f"{name}.{c}"].append(float(value))
        constraints = dyn.forces.contact_constraints
        if constraints is not None:
            for c, values in constraints.report(bs, dyn.forces.contact_modes(refs), lam_n, f_t).items():
                for name, value in zip(constraints.names, values):
                    out[f"{name}.{c}"].append(float(value))
            if constraints.limits.n:
                for c, values in constraints.limit_report(bs, dyn.forces.contact_modes(refs), lam_n).items():
                    for prefix, value in zip(constraints.limits.prefixes, values):
                        out[f"{prefix}.{c}"].append(float(value))
        tyres = dyn.forces.tyres
        if tyres is not None:
            for c, values in tyres.report(bs).items():
                for name, value in zip(tyres.names, values):
                    out[f"{name}.{c}"].append(float(value))
        stops = dyn.forces.stops
        if stops is not None:
            for c, values in stops.report(bs, dyn.forces.stop_state(refs)).items():
                for prefix, value in zip(stops.prefixes, values):
                    out[f"{prefix}.{c}"].append(float(value))

    def extra(self):
        """The recorded series, {name: ndarray of shape (n_frames,)}, in SI units, for ``Motion.extra``."""
        return {k: np.asarray(v, float) for k, v in self.rows.items()}


class CompiledFrameOutputs(FrameOutputs):
    """:class:`FrameOutputs` of a run on the compiled library: each frame's accelerations,
    minimum-norm multipliers and joint reactions from one compiled evaluation
    (:meth:`.fast.FastRHS.frame`, the same equations and formulas, equal to round-off), the
    energies and the force elements' series from its body kinematics. A frame the compiled
    evaluation cannot take (not finite; the redundant rows chosen before no longer the dependent
    ones, :meth:`.fast.FastRHS._rows_hold`) goes through the numpy outputs."""

    def __init__(self, dyn, fast):
        super().__init__(dyn)
        self.fast = fast
        self._deferred = []  # (series index, q, t, angles) of the frames whose |Φ| extra() evaluates

    def add(self, t, q, v, work, angles, refs, vd=None):
        """One frame (see :meth:`FrameOutputs.add`), returning (v̇, None): the caller takes q̈ of
        such frames together (:func:`~.mass.accelerations_to_qdd` over frames); inverse dynamics
        (``vd`` given) and the frames the compiled evaluation cannot take go through the numpy
        outputs."""
        if vd is not None:
            return super().add(t, q, v, work, angles, refs, vd)
        dyn = self.dyn
        frame = self.fast.frame(t, np.concatenate([q, v, [work]]), angles, refs)
        if frame is None:
            return super().add(t, q, v, work, angles, refs)
        from .mass import BodyState

        nmov = dyn.nmov
        qf = frame["qf"].reshape(-1, 7)
        bs = BodyState(qf[:, 3:], frame["A"], frame["rho"], frame["rc"], frame["vc"], frame["w"], frame["E"][:nmov],
                       frame["Jw"][:nmov], frame["Jwinv"][:nmov])
        lam, wrench = frame["lam"], frame["wrench"]
        for r in np.flatnonzero(frame["involved"]):
            self.not_unique.add(dyn.row_labels[r][0])
        for first, series in self._joint_series:
            _append_rows(series, wrench[first: first + len(series)])
        self._append_loads(lam)
        self._append_elements(bs, refs, work)
        out = self.rows
        deferred = out["violation.position"]  # |Φ| of every frame at once, in extra()
        self._deferred.append((len(deferred), q, t, angles))
        deferred.append(np.nan)
        out["violation.velocity"].append(float(np.linalg.norm(frame["vres"])))
        return frame["vd"], None

    def extra(self):
        """As :meth:`FrameOutputs.extra`, the violations |Φ| of the compiled frames evaluated
        together (:meth:`~cadmotion.kernel.system.System.phi_frames`, with the frames'
        coordinates as they are)."""
        if self._deferred:
            index, Q, times, angles = zip(*self._deferred)
            norms = np.linalg.norm(self.dyn.system.phi_frames(np.array(Q), times, angles), axis=1)
            series = self.rows["violation.position"]
            for i, value in zip(index, norms):
                series[i] = float(value)
            self._deferred = []
        return super().extra()


def _append_rows(series, values):
    """Append row i of ``values`` (n, k) to the k series ``series[i]`` (lists)."""
    for columns, row in zip(series, values):
        for column, value in zip(columns, row):
            column.append(value)


def reactions_event(dyn, t0, not_unique=()):
    """The ``reactions-not-unique`` Event for a model with redundant rows, or None."""
    if not len(dyn.redundant):
        return None
    labels = [dyn.row_labels[r] for r in dyn.redundant]
    eqs = ", ".join(f"{name} ({tpl} eq {e})" for name, tpl, e in labels[:8])
    more = f" and {len(labels) - 8} more" if len(labels) > 8 else ""
    joints = sorted(set(not_unique) or {name for name, _, _ in labels})
    msg = (f"{len(labels)} constraint equation(s) are redundant ({eqs}{more}): the motion is unique but the "
           f"reactions are not; the minimum-norm reactions are reported for {', '.join(joints)}")
    return Event("reactions-not-unique", float(t0), msg, tuple(joints))


def lift_off_events(dyn, times, extra, motion=None):
    """One ``lift-off`` Event per cam pair whose follower load turns negative (the cam would
    have to pull the follower: a real follower leaves the cam), at the first such time,
    interpolated (s). ``extra`` the run's series (``<cam>.force``: N along a translating
    follower's slide, N m about an oscillating follower's pivot). With the run's ``motion`` the
    load is also checked between frames, on a grid of a quarter degree of the cam's turn
    (:func:`..cams.load_between_frames`: the load's dependence on the law, fitted to the
    frames), so that frames coarser than the lift-off's window neither miss it nor find a later
    one."""
    from ..cams import load_between_frames

    events = []
    pairs = {j.name: j.joints for j in dyn.model.spec.joints if j.type == "cam"}
    for gr in dyn.groups:
        g = gr["g"]
        if not g.template.startswith("cam-"):
            continue
        for i, name in enumerate(g.names):
            f = np.asarray(extra.get(f"{name}.force", ()), float)
            if not f.size:
                continue
            tol = 1e-9 * max(1.0, float(np.max(np.abs(f))))
            ts = np.asarray(times, float)
            between = ""
            if motion is not None and name in pairs:
                law = g.code.laws[int(g.params[i, 0])]
                cam, follower = pairs[name]
                try:
                    theta = motion.coordinate(f"{cam}.angle")
                    m = motion.coordinate(f"{follower}.{'angle' if g.template == 'cam-angle' else 'disp'}")
                except KeyError:
                    theta = m = None
                # the joint coordinates are the law's own: the follower is where the law puts it
                if theta is not None and np.max(np.abs(m - law(theta))) <= 1e-6 * max(1.0, float(np.ptp(m))):
                    ts, f = load_between_frames(law, ts, theta, f)
                    between = " (checked between frames on the lift law)"
            bad = np.flatnonzero(f < -tol)
            if not bad.size:
                continue
            k = int(bad[0])
            t = float(ts[k])
            if k > 0 and f[k - 1] > f[k]:
                t = float(ts[k - 1] + (ts[k] - ts[k - 1]) * f[k - 1] / (f[k - 1] - f[k]))
            unit = "N m" if g.template == "cam-angle" else "N"
            events.append(Event("lift-off", t, f"cam {name!r}: the follower's load from the cam falls to "
                                               f"{float(np.min(f)):.4g} {unit} (negative from t = {t:.6g} s){between}: "
                                               f"the cam would have to pull, a real follower lifts off; a stiffer or "
                                               f"preloaded spring, or a lower speed, keeps it on", (name,)))
    return events
