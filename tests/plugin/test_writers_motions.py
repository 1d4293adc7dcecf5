"""Motions with closed-form poses for the writer tests (no kernel needed), and checks of them.

``turntable``: a fixed ``base`` box, a ``crank`` (a box 0.1 x 0.02 x 0.01 m whose frame
origin is at the world origin) turning about z at ``OMEGA`` rad/s, and a ``slider``
(a cylinder) moving along x as ``x = 0.2 + A sin(OMEGA t)``. Velocities and accelerations
are the exact derivatives.
"""

import numpy as np

from cadmotion.kernel.motion import Event, JointCoordinate, Motion
from cadmotion.kernel.spec import MechanismSpec, PartSpec

OMEGA = 2.0          # rad/s
A = 0.05             # m


def shapes():
    import cadquery as cq

    return {
        "base": cq.Workplane().box(0.3, 0.1, 0.01).translate((0.1, 0, -0.02)).val().wrapped,
        "crank": cq.Workplane().box(0.1, 0.02, 0.01).translate((0.05, 0, 0)).val().wrapped,
        "slider": cq.Workplane().cylinder(0.02, 0.015).val().wrapped,
    }


def turntable(nt=21, duration=None, *, with_shapes=True, shape_map=None, complete=True):
    duration = np.pi / OMEGA if duration is None else duration
    t = np.linspace(0.0, duration, nt)
    names = ["base", "crank", "slider"]
    nb = len(names)
    pos = np.zeros((nt, nb, 3))
    vel = np.zeros((nt, nb, 3))
    acc = np.zeros((nt, nb, 3))
    quat = np.zeros((nt, nb, 4))
    quat[..., 0] = 1.0
    w = np.zeros((nt, nb, 3))
    th = OMEGA * t
    quat[:, 1, 0] = np.cos(th / 2)
    quat[:, 1, 3] = np.sin(th / 2)
    w[:, 1, 2] = OMEGA
    pos[:, 2, 0] = 0.2 + A * np.sin(th)
    vel[:, 2, 0] = A * OMEGA * np.cos(th)
    acc[:, 2, 0] = -A * OMEGA**2 * np.sin(th)
    if shape_map is None and with_shapes:
        shape_map = shapes()
    shape_map = shape_map or {}
    colors = {"base": (0.5, 0.5, 0.5), "crank": (0.9, 0.3, 0.1), "slider": (0.1, 0.4, 0.9, 1.0)}
    spec = MechanismSpec(
        parts=tuple(PartSpec(n, fixed=(n == "base"), color=colors[n], shape=shape_map.get(n),
                             com=(0.05, 0.0, 0.0) if n == "crank" else (0.0, 0.0, 0.0))
                    for n in names),
        name="turntable")
    return Motion(
        time=t, parts=names, position=pos, quaternion=quat, velocity=vel,
        angular_velocity=w, acceleration=acc, angular_acceleration=np.zeros((nt, nb, 3)),
        joint_coordinates=[JointCoordinate("crank_pivot", "angle", th),
                           JointCoordinate("slide", "disp", A * np.sin(th))],
        extra={"energy": 0.5 * np.cos(th) ** 2, "crank_pivot.torque": np.full(nt, 0.25)},
        events=[Event("limit", t[nt // 2], "slide at its end")],
        complete=complete, message="" if complete else "stopped: singular at t=1.2", spec=spec)


def carousel(nt, n_instances=100, n_shapes=20):
    """``n_instances`` moving parts sharing ``n_shapes`` distinct shapes, turning about z."""
    import cadquery as cq

    protos = [cq.Workplane().box(0.01 + 0.001 * k, 0.01, 0.005).edges("|Z").fillet(0.002).val().wrapped
              for k in range(n_shapes)]
    t = np.linspace(0.0, 1.0, nt)
    names = [f"p{i:03d}" for i in range(n_instances)]
    phase = 2 * np.pi * np.arange(n_instances) / n_instances
    ang = phase[None, :] + t[:, None]                       # (nt, nb)
    pos = np.stack([0.3 * np.cos(ang), 0.3 * np.sin(ang), np.zeros_like(ang)], axis=-1)
    quat = np.stack([np.cos(ang / 2), 0 * ang, 0 * ang, np.sin(ang / 2)], axis=-1)
    vel = np.stack([-0.3 * np.sin(ang), 0.3 * np.cos(ang), np.zeros_like(ang)], axis=-1)
    acc = -np.stack([0.3 * np.cos(ang), 0.3 * np.sin(ang), np.zeros_like(ang)], axis=-1)
    w = np.zeros_like(pos)
    w[..., 2] = 1.0
    spec = MechanismSpec(parts=tuple(PartSpec(n, shape=protos[i % n_shapes]) for i, n in enumerate(names)),
                         name="carousel")
    return Motion(time=t, parts=names, position=pos, quaternion=quat, velocity=vel,
                  angular_velocity=w, acceleration=acc, angular_acceleration=np.zeros_like(pos), spec=spec)


# --- the sample motions are themselves consistent (so other tests can trust them) ---

def test_turntable_velocities_are_derivatives_of_positions():
    m = turntable(nt=2001, with_shapes=False)
    t = m.time
    v_fd = np.gradient(m.position, t, axis=0, edge_order=2)
    a_fd = np.gradient(m.velocity, t, axis=0, edge_order=2)
    assert np.allclose(v_fd, m.velocity, atol=1e-5)
    assert np.allclose(a_fd, m.acceleration, atol=1e-4)
    assert np.allclose(np.linalg.norm(m.quaternion, axis=-1), 1.0)


def test_turntable_crank_pose_is_a_rotation_about_z():
    m = turntable(nt=5, with_shapes=False)
    X = m.pose("crank", m.time[-1])           # half a turn
    assert np.allclose(X[:3, :3], np.diag([-1.0, -1.0, 1.0]), atol=1e-12)
