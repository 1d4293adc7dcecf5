"""Parts that start interpenetrating, moved apart before a dynamic run (on request).

CAD assemblies often place parts a little into each other (a pin modelled at its nominal size in a
hole of the same size, a part dropped onto another by eye). A declared contact between parts that
start interpenetrating is an error by default (:meth:`.contacts.Contacts.initial_state` names the
pair and the depth). With ``resolve_penetration`` the run first moves the parts apart with the least
change of the initial pose that keeps the joints and drivers assembled and leaves every declared
contact at most touching, and reports what it moved.

Method: Gauss–Newton steps on the assembled pose q (position and Euler parameters of every moving
part, m and 1). Each step is the least-norm Δq with Φq Δq = 0 (the joints and drivers to first
order) and G Δq = −(δ + ``margin``) for the contact points that penetrate (δ > 0, m) or come within
``margin`` of it at some iterate (held there, so the parts end touching, not further apart than
needed), G = ∂δ/∂q by central differences of the contact geometry; the pose is then pulled
back onto the joints by :func:`~cadmotion.kernel.kinematics.assemble`. When no pose change separates
a pair (the joints hold the parts in place), the error names the pair and what is left of its depth.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...errors import AssemblyError, MechanismError

__all__ = ["resolve_initial_penetration", "Separation"]

#: m; the gap left between parts that were moved apart (so round-off does not put them back inside)
MARGIN = 1e-9
#: m; the largest penetration accepted after the resolution
TOUCH_TOL = 1e-12
#: m; how close the parts moved apart end to ``margin`` apart (the assembly's own tolerance)
HOLD_TOL = 1e-10


@dataclasses.dataclass(frozen=True)
class Separation:
    """One contact whose parts started inside each other: its name, the parts and the depth (m)."""

    contact: str
    parts: tuple
    depth: float

    def message(self):
        """One line for the run summary."""
        return f"{self.contact} ({self.parts[0]} / {self.parts[1]}): {self.depth:.6g} m"


def _contact_sets(dyn):
    """The declared contacts of the dynamics (compliant and unilateral) that have points."""
    forces = dyn.forces
    return [c for c in (forces.contacts, forces.contact_constraints) if c is not None and getattr(c, "n", 0)]


def _penetrations(sets, bs):
    """δ (points,) m of every contact point (> 0 inside), the sets in order."""
    out = []
    for c in sets:
        delta = c.geometry(bs)[1]
        out.append(delta[: getattr(c, "np", len(delta))])
    return np.concatenate(out) if out else np.zeros(0)


def _labels(sets, model):
    """(contact name, (part S, part O)) per contact point, the sets in order."""
    out = []
    for c in sets:
        m = getattr(c, "np", len(c.s))
        out += [(c.names[c.owner[i]], (model.body_names[c.s[i]], model.body_names[c.o[i]])) for i in range(m)]
    return out


def resolve_initial_penetration(model, t0=0.0, *, margin=MARGIN, max_iter=30):
    """(model with the separated initial pose, [:class:`Separation`, ...] of the pairs moved apart).

    ``model`` is returned unchanged (and the list is empty) when no declared contact starts
    interpenetrating. Raises :class:`~cadmotion.errors.AssemblyError` when the initial pose does
    not assemble, and :class:`~cadmotion.errors.MechanismError` naming the pairs that no pose
    change allowed by the joints separates.
    """
    from ..kinematics import assemble
    from ..model import _readonly
    from ..system import AngleState, System
    from .equations import Dynamics
    from .mass import body_state

    dyn = Dynamics(model)
    sets = _contact_sets(dyn)
    if not sets:
        return model, []
    angles = AngleState(model, model.q0)
    asm = assemble(model, model.q0, t0, angles)
    if not asm.success:
        raise AssemblyError(asm.message, where=model.spec.source or None,
                            hint="check the joint frames, or move the parts closer to an assembled pose")
    q = asm.q
    zero_v = np.zeros(dyn.nv)
    labels = _labels(sets, model)

    def depth(q):
        return _penetrations(sets, body_state(model, dyn.mass, q, zero_v))

    delta0 = depth(q)
    if not np.any(delta0 > TOUCH_TOL):
        return model, []
    system = System(model)
    h = 1e-7
    delta = delta0
    held = np.zeros(len(delta0), bool)  # the points brought to touch: they end exactly ``margin`` apart
    for _ in range(max_iter):
        held |= delta > -margin
        if not np.any(delta > TOUCH_TOL) and np.all(np.abs(delta[held] + margin) <= HOLD_TOL):
            break
        G = np.empty((int(held.sum()), model.nq))
        for j in range(model.nq):
            dq = np.zeros(model.nq)
            dq[j] = h
            G[:, j] = (depth(q + dq)[held] - depth(q - dq)[held]) / (2 * h)
        J = system.jacobian_dense(q, t0, angles)
        A = np.vstack([J, G])
        b = np.concatenate([np.zeros(len(J)), -(delta[held] + margin)])
        q = q + np.linalg.lstsq(A, b, rcond=None)[0]
        asm = assemble(model, q, t0, angles)
        if not asm.success:
            raise AssemblyError(f"moving the interpenetrating parts apart broke the assembly: {asm.message}",
                                where=model.spec.source or None,
                                hint="move the parts apart in the CAD model (or the model file's positions)")
        q = asm.q
        delta = depth(q)
    stuck = np.flatnonzero(delta > TOUCH_TOL)
    if len(stuck):
        pairs = "; ".join(f"{labels[i][0]} ({labels[i][1][0]} / {labels[i][1][1]}) still {delta[i]:.6g} m inside"
                          for i in stuck[:5])
        raise MechanismError(f"the joints keep parts inside each other: {pairs}", where=model.spec.source or None,
                             hint="the joints allow no motion that separates them: fix the CAD positions, "
                                  "or remove the contact")
    first = {}
    for i in np.flatnonzero(delta0 > TOUCH_TOL):
        name, parts = labels[i]
        first[name] = Separation(name, parts, max(float(delta0[i]), first[name].depth if name in first else 0.0))
    return dataclasses.replace(model, q0=_readonly(np.asarray(q, float))), list(first.values())
