"""A mechanism its joints hold in a plane is solved in that plane (kernel/dynamics/planar.py).

The compiled evaluations of such a mechanism take only its in-plane constraint rows, with each
part's inverse mass seen through the plane; the output frames still carry every reaction. Each
run is checked against mechanics computed here: energy conservation and closed joints from the
frames' poses, a rod spinning under gravity across its plane against Newton–Euler in closed form,
and the tilted copy of a mechanism against the mechanism turned back.
"""

import math

import numpy as np
import pytest

from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import fast
from cadmotion.kernel.dynamics.equations import Dynamics
from cadmotion.kernel.dynamics.forward import run
from cadmotion.kernel.dynamics.planar import planar_reduction

pytestmark = pytest.mark.skipif(not fast.available(), reason="the planar reduction is of the compiled evaluation")

G = 9.81


def _rod(name, start, angle, length=1.0, mass=1.0):
    """A uniform rod part from ``start`` at ``angle`` (rad, about z) in the plane z = 0."""
    c, s = math.cos(angle / 2), math.sin(angle / 2)
    inertia = mass * length ** 2 / 12
    return name, dict(position=list(start), orientation=[c, 0, 0, s], mass=mass, com=[length / 2, 0, 0],
                      inertia=[1e-6, inertia, inertia])


def _turn(tilt, about=0):
    """(rotation matrix, Euler parameters) of ``tilt`` rad about world axis ``about``."""
    tq = np.zeros(4)
    tq[0], tq[1 + about] = math.cos(tilt / 2), math.sin(tilt / 2)
    e0, e = tq[0], tq[1:]
    turn = (2 * e0 ** 2 - 1) * np.eye(3) + 2 * np.outer(e, e) + 2 * e0 * np.array(
        [[0, -e[2], e[1]], [e[2], 0, -e[0]], [-e[1], e[0], 0]])
    return turn, tq


def _chain(n_links=6, tilt=0.0, about=0):
    """A closed regular polygon of unit rods, one of them fixed, hanging in the plane z = 0 (P2 of the
    peer benchmarks, at N = n_links), the whole mechanism turned by ``tilt`` rad about world axis ``about``."""
    angles = [-math.pi / 2 + 2 * math.pi * k / n_links for k in range(n_links)]
    points = [np.zeros(3)]
    for a in angles[:-1]:
        points.append(points[-1] + [math.cos(a), math.sin(a), 0.0])
    turn, tq = _turn(tilt, about)
    parts = {"link0": dict(fixed=True, position=[0, 0, 0], orientation=list(tq))}
    for k in range(1, n_links):
        name, part = _rod(f"link{k}", points[k], angles[k])
        part["position"] = list(turn @ points[k])
        part["orientation"] = list(_quat_mul(tq, np.array(part["orientation"])))
        parts[name] = part
    joints = [dict(name=f"j{k}", type="revolute", parts=[f"link{(k - 1) % n_links}", f"link{k}"],
                   origin=list(turn @ points[k]), axis=list(turn @ [0, 0, 1.0])) for k in range(n_links)]
    return dict(units="m", gravity=[0, -G, 0], parts=parts, joints=joints)


def _quat_mul(a, b):
    a0, a1, a2, a3 = a
    b0, b1, b2, b3 = b
    return np.array([a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3, a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2,
                     a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1, a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0])


def _ends(motion, k):
    """The rods' start and end points (n, 3) at frame k."""
    names = [n for n in motion.parts if n.startswith("link") and n != "link0"]
    starts = np.array([motion.pose(n, motion.time[k])[:3, 3] for n in names])
    ends = np.array([(motion.pose(n, motion.time[k]) @ [1.0, 0, 0, 1])[:3] for n in names])
    return starts, ends


def _energy(motion, k, gravity):
    """T + V of the moving rods at frame k, from their poses, com velocities and spins."""
    E = 0.0
    for name in motion.parts:
        if name == "link0" or not name.startswith("link"):
            continue
        b = motion.part_index(name)
        X = motion.pose(name, motion.time[k])
        com = (X @ [0.5, 0, 0, 1])[:3]
        w = motion.angular_velocity[k, b]
        v = motion.velocity[k, b] + np.cross(w, com - X[:3, 3])  # the part frame's origin velocity → com
        R = X[:3, :3]
        J = R @ np.diag([1e-6, 1 / 12, 1 / 12]) @ R.T
        E += 0.5 * v @ v + 0.5 * w @ J @ w - np.dot(gravity, com)
    return E


def test_a_closed_planar_chain_is_solved_in_its_plane_and_keeps_its_energy_and_its_joints(build):
    model = compile_model(build(_chain(6)))
    reduction = planar_reduction(Dynamics(model))
    assert reduction is not None and reduction.axis == 2
    assert len(reduction.rows) == 2 * 6  # two rows per revolute (its pin in the plane), of five
    motion, res = run(model, times=[0, 0.5, 1, 2, 3], formulation="projection", rtol=1e-9, atol=1e-9,
                      options={"tol": 1e-10})
    assert motion.complete
    assert any("plane normal to z" in n for n in res.notes)
    g = np.array([0, -G, 0])
    E0 = _energy(motion, 0, g)
    for k in range(motion.nt):
        starts, ends = _ends(motion, k)
        assert np.max(np.abs(starts[1:] - ends[:-1])) < 1e-9  # each rod starts where the one before ends
        assert np.max(np.abs(starts[:, 2])) < 1e-12 and np.max(np.abs(ends[:, 2])) < 1e-12  # in its plane
        assert abs(_energy(motion, k, g) - E0) < 1e-6 * 6 * G
    assert not [e for e in motion.events if e.kind == "invariant"]


def test_a_tilted_plane_is_solved_in_3d_and_moves_as_the_upright_one_turned(build):
    """A plane normal to no world axis keeps every row; its motion is the upright chain's, turned."""
    tilt = 0.5
    upright, tilted = compile_model(build(_chain(5))), compile_model(build(_chain(5, tilt)))
    assert planar_reduction(Dynamics(tilted)) is None
    # gravity turned with the mechanism, so that the two are the same mechanics
    spec = _chain(5, tilt)
    turn = np.array([[1, 0, 0], [0, math.cos(tilt), -math.sin(tilt)], [0, math.sin(tilt), math.cos(tilt)]])
    spec["gravity"] = list(turn @ [0, -G, 0])
    tilted = compile_model(build(spec))
    kw = dict(times=[0, 1.0], formulation="projection", rtol=1e-10, atol=1e-10, options={"tol": 1e-11})
    a, ra = run(upright, **kw)
    b, rb = run(tilted, **kw)
    assert any("plane normal to z" in n for n in ra.notes) and not any("plane normal" in n for n in rb.notes)
    for name in ("link1", "link2", "link3"):
        pa, pb = a.pose(name, 1.0), b.pose(name, 1.0)
        assert np.allclose(turn @ pa[:3, 3], pb[:3, 3], atol=1e-7)


@pytest.mark.parametrize("about, axis", [(1, 0), (0, 1)])
def test_a_chain_in_a_plane_normal_to_x_or_y_keeps_those_rows_and_moves_as_the_upright_one_turned(build, about,
                                                                                                   axis):
    """The chain turned a quarter turn about y (its plane normal to x) or about x (normal to y): each pin
    keeps its two in-plane components (the revolute's row variant for that axis), and the motion is the
    upright chain's turned, gravity turned with it."""
    turn, _ = _turn(math.pi / 2, about)
    spec = _chain(5, math.pi / 2, about)
    spec["gravity"] = list(turn @ [0, -G, 0])
    upright, turned = compile_model(build(_chain(5))), compile_model(build(spec))
    dyn = Dynamics(turned)
    reduction = planar_reduction(dyn)
    assert reduction is not None and reduction.axis == axis
    (pins,) = [gr for gr in dyn.groups if gr["g"].template == "revolute"]
    kept = set(reduction.rows.tolist())
    for i in range(pins["g"].n):  # each pin keeps its in-plane components of d
        assert [e for e in range(5) if pins["row0"] + 5 * i + e in kept] == [e for e in range(3) if e != axis]
    kw = dict(times=[0, 1.0], formulation="projection", rtol=1e-10, atol=1e-10, options={"tol": 1e-11})
    a, _ = run(upright, **kw)
    b, rb = run(turned, **kw)
    assert any(f"plane normal to {'xyz'[axis]}" in n for n in rb.notes)
    for name in ("link1", "link2", "link3"):
        assert np.allclose(turn @ a.pose(name, 1.0)[:3, 3], b.pose(name, 1.0)[:3, 3], atol=1e-7)


def test_gravity_across_the_plane_is_carried_by_the_pin_not_by_the_motion(build):
    """A rod spinning in a horizontal plane about a vertical pin: gravity (−z) lies across the plane of
    motion. Newton–Euler for a rotation about a fixed axis at constant rate ω: the pin pushes the rod
    with F = (−m ω² c_x, −m ω² c_y, m g) and a moment τ = (m g c_y, −m g c_x, 0) about the pin
    (c the centre of mass from the pin), and the spin stays ω."""
    m, L, w0 = 2.0, 1.0, 3.0
    data = dict(units="m", gravity=[0, 0, -G],
                parts=dict(ground=dict(fixed=True),
                           rod=dict(position=[0, 0, 0], mass=m, com=[L / 2, 0, 0],
                                    inertia=[1e-6, m * L ** 2 / 12, m * L ** 2 / 12])),
                joints=[dict(name="pin", type="revolute", parts=["ground", "rod"], origin=[0, 0, 0], axis=[0, 0, 1])],
                initial_velocity=dict(rod=dict(angular_velocity=[0, 0, w0])))
    model = compile_model(build(data))
    motion, res = run(model, t_end=2.0, steps=20, formulation="projection", rtol=1e-10, atol=1e-10)
    assert any("plane normal to z" in n for n in res.notes)
    b = motion.part_index("rod")
    assert np.allclose(motion.angular_velocity[:, b], [0, 0, w0], atol=1e-8)
    for k in range(motion.nt):
        c = (motion.pose("rod", motion.time[k]) @ [L / 2, 0, 0, 1])[:3]
        assert abs(c[2]) < 1e-12  # it does not sink
        F = [motion.extra[f"pin.{s}"][k] for s in ("fx", "fy", "fz")]
        T = [motion.extra[f"pin.{s}"][k] for s in ("tx", "ty", "tz")]
        assert np.allclose(F, [-m * w0 ** 2 * c[0], -m * w0 ** 2 * c[1], m * G], atol=1e-6)
        assert np.allclose(T, [m * G * c[1], -m * G * c[0], 0.0], atol=1e-6)


def test_a_spatial_mechanism_and_the_option_off_keep_every_row(build):
    """A double pendulum whose second pin is turned across the first moves in 3-D: no plane holds it."""
    _, upper = _rod("upper", (0, 0, 0), 0.0)
    _, lower = _rod("lower", (1, 0, 0), 0.0)
    spatial = dict(units="m", gravity=[0, -G, 0], parts=dict(ground=dict(fixed=True), upper=upper, lower=lower),
                   joints=[dict(name="shoulder", type="revolute", parts=["ground", "upper"], origin=[0, 0, 0],
                                axis=[0, 0, 1]),
                           dict(name="elbow", type="revolute", parts=["upper", "lower"], origin=[1, 0, 0],
                                axis=[1, 0, 0])])
    assert planar_reduction(Dynamics(compile_model(build(spatial)))) is None
    model = compile_model(build(_chain(5)))
    motion, res = run(model, times=[0, 0.2], formulation="projection", options={"planar": False})
    assert motion.complete and not any("plane normal" in n for n in res.notes)
