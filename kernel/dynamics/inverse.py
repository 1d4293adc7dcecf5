"""Inverse dynamics of a driven mechanism: driver efforts and joint reactions along a motion.

For a mechanism whose drivers fix every degree of freedom, the kinematic solution gives
q, v and v̇ at every time; the multipliers then follow from the equations of motion

    Jvᵀ λ = f(q, v, t) − M v̇          (solved as S λ = Jv M⁻¹ (f − M v̇), S = Jv M⁻¹ Jvᵀ)

which is exact when the motion is a solution (the least-squares λ in the kinetic-energy
metric otherwise). Efforts are −λ of the driver rows (the motor torque or force), the
reactions come from −Jvᵀ λ per joint (see :mod:`.outputs`). Velocities and accelerations
of the centres of mass come from the Motion's part-frame values:

    v_c = v_o + ω × ρ,    v̇_c = a_o + ω̇ × ρ + ω × (ω × ρ),    ρ = A c

The non-conservative work is the trapezoidal integral of the power of the drivers,
dampers and applied loads over the output frames.
"""

from __future__ import annotations

import numpy as np

from ..kinematics import kinematics
from ..system import AngleState
from .equations import Dynamics
from .mass import cross, body_state
from .outputs import FrameOutputs, lift_off_events, reactions_event

__all__ = ["inverse_dynamics"]


def inverse_dynamics(model, motion=None, *, t_end=1.0, steps=100, t_start=0.0, **kinematics_options):
    """Driver efforts and joint reactions of a driven mechanism.

    Parameters
    ----------
    model : :class:`~cadmotion.kernel.model.Model`
    motion : a kinematic :class:`~cadmotion.kernel.motion.Motion` of this model; if None,
        :func:`~cadmotion.kernel.kinematics.kinematics` is run over
        ``linspace(t_start, t_end, steps + 1)``.

    Returns
    -------
    Motion
        A copy of the kinematic motion with the same ``extra`` series as
        :func:`~cadmotion.kernel.dynamics.simulate` (``<driver>.effort``, reactions,
        energies, violations).
    """
    if motion is None:
        motion = kinematics(model, t_end, steps, t_start=t_start, **kinematics_options)
    dyn = Dynamics(model)
    nmov = dyn.nmov
    nt = motion.nt
    order = [motion.part_index(name) for name in model.body_names[:nmov]]
    pos = motion.position[:, order]
    quat = motion.quaternion[:, order]
    vel = motion.velocity[:, order]
    om = motion.angular_velocity[:, order]
    acc = motion.acceleration[:, order]
    al = motion.angular_acceleration[:, order]
    out = FrameOutputs(dyn)
    Q = np.concatenate([pos, quat], axis=2).reshape(nt, -1)
    angles = AngleState(model, Q[0]) if nt else None
    refs = None
    work, power_prev = 0.0, None
    for k in range(nt):
        q = Q[k]
        bs = body_state(model, dyn.mass, q, np.zeros(dyn.nv))
        rho = bs.rho[:nmov]
        w = om[k]
        V = np.empty((nmov, 6))
        V[:, 3:] = w
        V[:, :3] = vel[k] + cross(w, rho)
        Vd = np.empty((nmov, 6))
        Vd[:, 3:] = al[k]
        Vd[:, :3] = acc[k] + cross(al[k], rho) + cross(w, cross(w, rho))
        if refs is None:
            refs = dyn.forces.initial_refs(bs)
            ev0 = dyn.evaluate(q, V.reshape(-1), motion.time[k], refs, with_gamma=False, with_forces=False)
            dyn.set_rows(ev0.J, ev0.bs)
        else:
            dyn.forces.accept(bs, refs)
        dyn.system.accept(q, angles)
        out.add(motion.time[k], q, V.reshape(-1), work, angles, refs, vd=Vd.reshape(-1))
        p = out._last_power
        if power_prev is not None:
            work += 0.5 * (motion.time[k] - motion.time[k - 1]) * (power_prev + p)
            out.rows["work.nonconservative"][-1] = work
        power_prev = p
    result = _copy(motion)
    result.extra.update(out.extra())
    ev = reactions_event(dyn, motion.time[0] if nt else 0.0, out.not_unique)
    if ev is not None:
        result.events.append(ev)
    result.events.extend(lift_off_events(dyn, result.time, result.extra, result))
    return result


def _copy(motion):
    from dataclasses import replace

    return replace(motion, extra=dict(motion.extra), events=list(motion.events))
