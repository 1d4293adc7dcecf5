"""Interference along a motion, against hand-computed contact times, depths and clearances.

Motions are built directly (closed-form poses and exact velocities), so the expected
values follow from elementary geometry.
"""

import math
from pathlib import Path

import numpy as np
import pytest

cq = pytest.importorskip("cadquery")

from cadmotion.errors import MechanismError
from cadmotion.kernel.motion import Motion
from cadmotion.kernel.spec import JointSpec, MechanismSpec, PartSpec
from cadmotion.plugin.interference import BROAD_PHASES, find_interference

GRIPPER = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "step-gripper" / "gripper.step"


def rigid_motion(t, parts):
    """A Motion from closed forms: ``parts`` maps a name to ``(pos(t), vel(t), angle(t), rate(t))``,
    a translation of the part frame and a rotation about z by ``angle`` (rad)."""
    nt, nb = len(t), len(parts)
    pos = np.zeros((nt, nb, 3))
    vel = np.zeros((nt, nb, 3))
    quat = np.zeros((nt, nb, 4))
    om = np.zeros((nt, nb, 3))
    for b, (pf, vf, af, rf) in enumerate(parts.values()):
        pos[:, b] = pf(t)
        vel[:, b] = vf(t)
        ang = af(t)
        quat[:, b, 0] = np.cos(ang / 2)
        quat[:, b, 3] = np.sin(ang / 2)
        om[:, b, 2] = rf(t)
    zero = np.zeros((nt, nb, 3))
    return Motion(time=t, parts=list(parts), position=pos, quaternion=quat, velocity=vel,
                  angular_velocity=om, acceleration=zero, angular_acceleration=zero)


def still(x=0.0, y=0.0, z=0.0):
    return (lambda t: np.tile([x, y, z], (len(t), 1)), lambda t: np.zeros((len(t), 3)),
            lambda t: np.zeros(len(t)), lambda t: np.zeros(len(t)))


def sliding(p0, v):
    p0, v = np.asarray(p0, float), np.asarray(v, float)
    return (lambda t: p0 + np.outer(t, v), lambda t: np.tile(v, (len(t), 1)),
            lambda t: np.zeros(len(t)), lambda t: np.zeros(len(t)))


def turning(omega):
    return (lambda t: np.zeros((len(t), 3)), lambda t: np.zeros((len(t), 3)),
            lambda t: omega * t, lambda t: np.full(len(t), omega))


def box(dx, dy, dz, at=(0, 0, 0)):
    return cq.Workplane().box(dx, dy, dz).translate(at).val().wrapped


def sphere(r, at=(0, 0, 0)):
    return cq.Workplane().sphere(r).translate(at).val().wrapped


def spec_of(shapes, joints=(), fixed=()):
    return MechanismSpec(parts=tuple(PartSpec(n, fixed=n in fixed, shape=s) for n, s in shapes.items()),
                         joints=tuple(joints), name="test")


# --------------------------------------------------------------------------- first contact


def test_cube_driven_into_a_wall_touches_at_gap_over_speed_and_sinks_by_the_travel():
    # wall: 40 mm cube at the origin; a 10 mm cube starts 13 mm from it at 0.1 m/s
    gap, v, t_end = 0.013, 0.1, 0.2
    x0 = 0.020 + 0.005 + gap
    spec = spec_of({"wall": box(0.04, 0.04, 0.04), "cube": box(0.01, 0.01, 0.01)}, fixed=("wall",))
    t = np.linspace(0.0, t_end, 41)
    motion = rigid_motion(t, {"wall": still(), "cube": sliding([x0, 0, 0], [-v, 0, 0])})
    report = find_interference(motion, spec)
    assert report.collides and len(report.collisions) == 1
    hit = report.collisions[0]
    assert set(hit.parts) == {"wall", "cube"}
    assert hit.first_time == pytest.approx(gap / v, abs=1e-6)
    assert hit.kind == "penetration" and hit.min_distance == 0.0
    # the cube's front face ends v (t_end - t_c) deep inside the wall, its deepest point
    assert hit.depth == pytest.approx(v * t_end - gap, abs=1e-9)
    assert hit.depth_time == pytest.approx(t_end)
    assert hit.moving and hit.joints == ()


def test_contact_between_frames_is_found_when_a_plate_passes_through_a_wall():
    # frames only every 0.5 s: the 2 mm plate is 30 mm before the 2 mm wall, then 30 mm past it
    spec = spec_of({"wall": box(0.002, 0.05, 0.05), "plate": box(0.002, 0.02, 0.02)})
    v = 0.12
    t = np.array([0.0, 0.5, 1.0])
    motion = rigid_motion(t, {"wall": still(), "plate": sliding([-0.032, 0, 0], [v, 0, 0])})
    report = find_interference(motion, spec)
    hit = report.collisions[0]
    # faces meet when the plate's front (x + 1 mm) reaches the wall's back (-1 mm)
    assert hit.first_time == pytest.approx((-0.002 + 0.032) / v, abs=1e-6)
    assert hit.kind == "penetration"


def bar_and_post(omega=2.0, w=0.02, post_at=(0.11, 0.07), s=0.02):
    """A bar (x -w/2..0.2, |y| <= w/2) turning about z, and a square post, corner at post_at."""
    a, b = post_at
    shapes = {"bar": box(0.2 + w / 2, w, 0.01, ((0.2 - w / 2) / 2, 0, 0)),
              "post": box(s, s, 0.02, (a + s / 2, b + s / 2, 0))}
    # the bar's leading face y' = w/2 sweeps the post; the first corner it meets decides
    corners = [(a, b), (a + s, b), (a, b + s), (a + s, b + s)]
    theta = min(math.atan2(y, x) - math.asin(w / 2 / math.hypot(x, y)) for x, y in corners)
    return shapes, theta / omega


@pytest.mark.parametrize("broad", sorted(BROAD_PHASES))
def test_turning_bar_meets_a_post_when_its_face_reaches_the_first_corner(broad):
    omega = 2.0
    shapes, t_hit = bar_and_post(omega)
    spec = spec_of(shapes, fixed=("post",))
    t = np.linspace(0.0, 0.6, 61)
    motion = rigid_motion(t, {"bar": turning(omega), "post": still()})
    report = find_interference(motion, spec, broad=broad)
    hit = report.collisions[0]
    assert hit.first_time == pytest.approx(t_hit, abs=1e-6)
    assert hit.kind == "penetration"
    assert report.stats["unproven_intervals"] == 0


# --------------------------------------------------------------------------- joints and static pairs


def hinge_spec():
    """A square shaft turning about z whose end sits 2 mm deep in a block (z -10..10 mm), as a
    pin modelled with interference would: the shaft runs from z = 8 mm up."""
    shapes = {"post": box(0.04, 0.04, 0.02),
              "bar": box(0.01, 0.01, 0.1, (0, 0, 0.058))}
    joint = JointSpec("hinge", "revolute", ("post", "bar"))
    return spec_of(shapes, joints=[joint], fixed=("post",))


def hinge_motion():
    t = np.linspace(0.0, 1.0, 21)
    return rigid_motion(t, {"post": still(), "bar": turning(0.5)})


def test_jointed_parts_are_left_out_by_default():
    report = find_interference(hinge_motion(), hinge_spec())
    assert not report.collides
    assert report.stats["pairs_excluded"] == 1


def test_jointed_parts_are_checked_on_request_against_the_joint_clearance():
    spec, motion = hinge_spec(), hinge_motion()
    report = find_interference(motion, spec, exclude_jointed=False)
    hit = report.collisions[0]
    assert hit.joints == ("hinge",) and hit.first_time == 0.0 and hit.kind == "penetration"
    assert hit.depth == pytest.approx(0.002, abs=2e-4)
    # allowing 3 mm of penetration at the joint clears it; 1 mm does not
    assert not find_interference(motion, spec, exclude_jointed=False, joint_clearance=-0.003).collides
    assert find_interference(motion, spec, exclude_jointed=False, joint_clearance=-0.001).collides


def test_parts_fastened_together_are_listed_as_static_not_as_collisions():
    spec = spec_of({"base": box(0.1, 0.1, 0.01), "block": box(0.02, 0.02, 0.02, (0, 0, 0.015)),
                    "arm": box(0.05, 0.01, 0.01, (0.1, 0, 0.2))}, fixed=("base", "block"))
    t = np.linspace(0.0, 1.0, 11)
    motion = rigid_motion(t, {"base": still(), "block": still(), "arm": turning(1.0)})
    report = find_interference(motion, spec)
    assert not report.collides
    assert [set(p.parts) for p in report.static] == [{"base", "block"}]
    assert report.static[0].kind == "contact" and not report.static[0].moving
    counted = find_interference(motion, spec, check_static=True)
    assert counted.collides and counted.collisions[0].first_time == 0.0


# --------------------------------------------------------------------------- clearance


def spheres(r1=0.01, r2=0.005, b=0.018, v=0.05, x0=-0.05):
    """Sphere B passes sphere A (at the origin) along y = b: d(t) = |(x0 + v t, b)| - r1 - r2."""
    spec = spec_of({"a": sphere(r1), "b": sphere(r2)}, fixed=("a",))
    t = np.linspace(0.0, 2.0, 81)
    motion = rigid_motion(t, {"a": still(), "b": sliding([x0, b, 0], [v, 0, 0])})
    return spec, motion


def test_minimum_clearance_of_a_close_pass_equals_the_closed_form():
    r1, r2, b, v, x0 = 0.01, 0.005, 0.018, 0.05, -0.05
    spec, motion = spheres(r1, r2, b, v, x0)
    report = find_interference(motion, spec, near=0.005)
    assert not report.collides
    (close,) = report.near
    assert close.kind == "near" and close.first_time is None
    assert close.min_distance == pytest.approx(b - r1 - r2, abs=1e-7)
    assert close.min_distance_time == pytest.approx(-x0 / v, abs=2e-3)
    # outside `near` it is not listed
    assert not find_interference(motion, spec, near=0.002).near


def test_clearance_violation_starts_when_the_gap_reaches_the_clearance():
    r1, r2, b, v, x0 = 0.01, 0.005, 0.018, 0.05, -0.05
    spec, motion = spheres(r1, r2, b, v, x0)
    c = 0.005
    report = find_interference(motion, spec, clearance=c)
    hit = report.collisions[0]
    # |(x0 + v t, b)| = r1 + r2 + c, on the approach
    t_in = (-x0 - math.sqrt((r1 + r2 + c) ** 2 - b**2)) / v
    assert hit.kind == "clearance" and hit.threshold == c
    assert hit.first_time == pytest.approx(t_in, abs=1e-6)
    assert hit.min_distance == pytest.approx(b - r1 - r2, abs=1e-7)


# --------------------------------------------------------------------------- input checks


def test_bad_arguments_are_mechanism_errors():
    spec, motion = spheres()
    with pytest.raises(MechanismError, match="broad phase"):
        find_interference(motion, spec, broad="kd-tree")
    with pytest.raises(MechanismError, match="clearance"):
        find_interference(motion, spec, clearance=-1.0)
    with pytest.raises(MechanismError, match="ignore"):
        find_interference(motion, spec, ignore=[("a", "nope")])
    with pytest.raises(MechanismError, match="spec"):
        find_interference(motion, MechanismSpec(parts=(PartSpec("a"),)))
    with pytest.raises(MechanismError, match="MechanismSpec"):
        find_interference(motion)


def test_ignored_pairs_and_parts_without_geometry_are_not_checked():
    spec, motion = spheres(b=0.0)
    assert find_interference(motion, spec).collides
    report = find_interference(motion, spec, ignore=[("b", "a")])
    assert not report.collides and report.stats["pairs_excluded"] == 1
    bare = MechanismSpec(parts=(PartSpec("a", shape=spec.part("a").shape), PartSpec("b")))
    report = find_interference(motion, bare)
    assert report.skipped == ["b"] and not report.collides


def test_report_converts_to_json_friendly_dicts():
    import json

    shapes, _ = bar_and_post()
    spec = spec_of(shapes, fixed=("post",))
    motion = rigid_motion(np.linspace(0, 0.6, 31), {"bar": turning(2.0), "post": still()})
    report = find_interference(motion, spec)
    (d,) = report.to_dicts()
    assert d["parts"] == ["bar", "post"] and d["kind"] == "penetration"
    json.dumps(report.to_dict())
    assert "bar and post collide at t = " in report.summary()


# --------------------------------------------------------------------------- speed


def _qmul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def gripper_motion(asm, nt=201, amplitude=0.35):
    """A synthetic motion of the gripper (its STEP file has no joints): the parallelogram lift.

    The links 'Laserteil 3' and 'Laserteil 4' turn about x through the axes of their upper
    pivot bolts (M3x20 shanks at y = 56.084 and 31.884 mm, z = -150.999 mm) by
    amplitude * sin(pi t); the jaw assembly (every part whose box centre is below z = -165 mm)
    translates with the links' lower ends, (R(theta) - I)(0, -35, -25) mm; the rest is still.
    """
    from OCP.Bnd import Bnd_Box
    from OCP.BRepBndLib import BRepBndLib

    from cadmotion.kernel.motion import quat_to_matrix

    t = np.linspace(0.0, 1.0, nt)
    th = amplitude * np.sin(np.pi * t)
    thd = amplitude * np.pi * np.cos(np.pi * t)
    c, s = np.cos(th), np.sin(th)
    Rx = np.zeros((nt, 3, 3))
    Rx[:, 0, 0] = 1
    Rx[:, 1, 1], Rx[:, 1, 2], Rx[:, 2, 1], Rx[:, 2, 2] = c, -s, s, c
    omega = np.zeros((nt, 3))
    omega[:, 0] = thd
    pivots = {"Laserteil 3": np.array([0.0, 0.05608415, -0.15099946]),
              "Laserteil 4": np.array([0.0, 0.03188415, -0.15099946])}
    L = np.array([0.0, -0.035, -0.025])
    nb = len(asm.parts)
    pos = np.zeros((nt, nb, 3))
    vel = np.zeros((nt, nb, 3))
    quat = np.zeros((nt, nb, 4))
    om = np.zeros((nt, nb, 3))
    for b, part in enumerate(asm.parts):
        p0, q0 = np.array(part.position), np.array(part.orientation)
        box = Bnd_Box()
        BRepBndLib.AddOptimal_s(part.shape, box, False, False)
        centre = quat_to_matrix(q0) @ (0.5 * (np.array(box.Get()[:3]) + np.array(box.Get()[3:]))) + p0
        pivot = pivots.get(asm.product_names[asm.products[part.name]])
        if pivot is not None:
            pos[:, b] = pivot + np.einsum("kij,j->ki", Rx, p0 - pivot)
            quat[:, b] = [_qmul([np.cos(a / 2), np.sin(a / 2), 0, 0], q0) for a in th]
            om[:, b] = omega
            vel[:, b] = np.cross(omega, pos[:, b] - pivot)
        elif centre[2] < -0.165:
            pos[:, b] = p0 + np.einsum("kij,j->ki", Rx, L) - L
            vel[:, b] = np.cross(omega, np.einsum("kij,j->ki", Rx, L))
            quat[:, b] = q0
        else:
            pos[:, b] = p0
            quat[:, b] = q0
    zero = np.zeros((nt, nb, 3))
    return Motion(time=t, parts=[p.name for p in asm.parts], position=pos, quaternion=quat,
                  velocity=vel, angular_velocity=om, acceleration=zero, angular_acceleration=zero)


@pytest.mark.slow
@pytest.mark.skipif(not GRIPPER.exists(), reason="gripper STEP file not available")
@pytest.mark.parametrize("broad, frames", [("obb", 201), ("aabb", 41)])
def test_gripper_pivot_bolts_press_into_their_holes_along_the_whole_motion(broad, frames):
    """The 108-part gripper through its lift, every part against every other (both broad phases).

    How long this takes is measured by ``benchmarks/interference.py``, not here."""
    import warnings

    from cadmotion.importers.step import read_step

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asm = read_step(GRIPPER)
    motion = gripper_motion(asm, nt=frames)
    spec = MechanismSpec(parts=asm.parts, name="gripper")
    report = find_interference(motion, spec, broad=broad)
    assert report.stats["parts"] == 108 and report.stats["frames"] == frames
    # the links turn about the axes of their pivot bolts, whose 3 mm shanks sit in 2.9 mm holes
    # (radii 1.5 and 1.45 mm in the file): 0.05 mm of interference, all along the motion
    pins = [p for p in report.collisions if "M3x20" in " ".join(p.parts) and "Laserteil" in " ".join(p.parts)]
    assert len(pins) == 16
    for p in pins:
        assert p.first_time == 0.0 and p.depth == pytest.approx(5e-5, abs=1e-6), p.message
