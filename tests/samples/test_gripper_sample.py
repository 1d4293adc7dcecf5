"""samples/gripper: the online-robotics servo gripper (STEP, 108 parts) with the joints of its
real mechanism. Checked against facts that do not come from the solver: a hand count of its
mobility, the pin holes of the STEP file, and a closed-form solution of the jaw's four-bar."""

import math
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("OCP")

from cadmotion.importers import load  # noqa: E402
from cadmotion.importers.drive_option import with_drivers  # noqa: E402
from cadmotion.importers.geometry_refs import find_geometry, world_shape  # noqa: E402
from cadmotion.kernel import AngleState, assemble, compile_model, kinematics, mobility  # noqa: E402
from cadmotion.plugin.interference import find_interference  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "gripper" / "gripper.cadmotion.toml"
MM = 1e-3
# the STEP file spells "Peça" as "Pe\X\87a" (a CP850 byte; ISO 8859-1 makes it the control U+0087)
HORN2 = "SG90 - Micro Servo 9g - Tower Pro.3_Peça:1_2"
JAW, CARRIER, CRANK, SCREW = "Laserteil 9:1", "Laserteil 6:1", "Laserteil 8:1", "M2x10:3"
OPEN, CLOSED = -0.18, 0.96  # rad, the jaw servo's driven range (see the model file)

pytestmark = [pytest.mark.slow,  # ~15-40 s: the STEP read, two kinematic runs, four interference runs
              pytest.mark.skipif(not SAMPLE.with_name("gripper.step").exists(), reason="gripper.step missing")]


def servo_angle(t):
    """The model file's jaw driver, written out here (rad)."""
    return 0.39 + 0.57 * np.sin(np.pi * np.asarray(t) - 0.75352)


@pytest.fixture(scope="module")
def spec():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # STEP import notes
        return load(SAMPLE)


@pytest.fixture(scope="module")
def model(spec):
    return compile_model(spec)


@pytest.fixture(scope="module")
def motion(model):
    return kinematics(model, t_end=2.0, steps=100)


def hole(spec, part, near_mm, radius_mm):
    """Point (m) and direction of the cylindrical face of ``part`` nearest ``near_mm``."""
    ref = find_geometry(world_shape(spec.part(part)), "cylinder", np.asarray(near_mm) * MM, part=part)
    assert ref.radius == pytest.approx(radius_mm * MM, abs=1e-7), (part, near_mm, ref.radius)
    return ref.point, ref.direction


def rotation(u, angle):
    u = np.asarray(u) / np.linalg.norm(u)
    K = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


# ------------------------------------------------------------------------------ mobility


def test_mobility_is_the_hand_count_one_per_servo(spec, model):
    # Planar Gruebler count of the two essential chains (5 moving links, 7 revolutes each):
    #   lift: base | horn 1, rod 1, Laserteil 3, Laserteil 4, carrier   -> 3*5 - 2*7 = 1
    #   jaw:  carrier | horn 2, rod 2, Laserteil 8, Laserteil 7, jaw 9  -> 3*5 - 2*7 = 1
    # The other copies of Laserteil 3 and 4 (three each) and 7 (two) add no freedom when
    # their pivots repeat their partner's exactly: checked here on the STEP pin holes.
    hand = 2 * (3 * 5 - 2 * 7)
    lift = {"Laserteil 3:1": -26.52, "Laserteil 3:2": 25.32, "Laserteil 3:3": -16.12, "Laserteil 3:4": 16.12}
    lift4 = {"Laserteil 4:1": -25.32, "Laserteil 4:2": 25.32, "Laserteil 4:3": -16.12, "Laserteil 4:4": 16.12}
    spans = []
    for links, (ya, za, yb, zb) in ((lift, (56.08, -151, 21.08, -176)), (lift4, (31.88, -151, -3.12, -176))):
        for name, x in links.items():
            (a, da), (b, db) = hole(spec, name, (x, ya, za), 1.45), hole(spec, name, (x, yb, zb), 1.45)
            assert abs(da[0]) == pytest.approx(1.0, abs=1e-9) and abs(db[0]) == pytest.approx(1.0, abs=1e-9)
            spans.append((b - a)[1:])
    np.testing.assert_allclose(spans, [[-0.035, -0.025]] * 8, atol=1e-6)  # one parallelogram, 8 links
    jaw = {"Laserteil 7:1": (5.0, 8.49), "Laserteil 7:2": (5.0, -0.71),
           "Laserteil 7:3": (21.72, -0.71), "Laserteil 8:1": (21.72, 9.69)}
    spans = []
    for name, (x, y) in jaw.items():
        a, _ = hole(spec, name, (x, y, -205.99), 1.45)
        b, _ = hole(spec, name, (x + 13.71, y, -220.55), 1.45)
        spans.append((b - a)[[0, 2]])
    np.testing.assert_allclose(spans, [spans[0]] * 4, atol=1e-6)
    assert np.linalg.norm(spans[0]) == pytest.approx(0.020, abs=1e-6)  # 20 mm links

    mob = mobility(model)
    assert mob.dof == hand == 2
    assert mob.dof_driven == 0
    moving = sum(not p.fixed for p in spec.parts)
    kinds = [j.type for j in spec.joints]
    assert sorted(set(kinds)) == ["fixed", "revolute"]
    assert mob.gruebler == 6 * moving - 5 * kinds.count("revolute") - 6 * kinds.count("fixed") == -42
    assert len(mob.redundant) == mob.dof - mob.gruebler == 44  # duplicated links, planar loops in 3-D


# ------------------------------------------------------------------------------ motion


def test_assembles_and_moves_without_locking(model, motion):
    # what `cadmotion check` calls "cannot assemble" and "locks": assembly, then a complete
    # driven motion with no lock-up, singular configuration or branch jump
    asm = assemble(model, model.q0, 0.0, AngleState(model, model.q0))
    assert asm.success and asm.residual < 1e-10, asm.message
    assert not asm.message  # the redundant equations agree: the CAD pivots are consistent
    assert max(asm.moved.values()) < 1e-6  # the CAD pose is already assembled (to CAD round-off)
    assert motion.complete, motion.message
    assert not [e for e in motion.events if e.kind in ("lockup", "singular", "branch")]
    theta = motion.coordinate("jaw servo.angle")
    np.testing.assert_allclose(theta, servo_angle(motion.time), atol=1e-4)
    assert theta.min() == pytest.approx(OPEN, abs=1e-4) and theta.max() == pytest.approx(CLOSED, abs=1e-4)
    np.testing.assert_allclose(motion.coordinate("lift servo.angle"), 0.0, atol=1e-12)


def test_parallelogram_keeps_the_jaw_orientation_and_the_carrier_still(motion):
    R0 = motion.pose(JAW, 0.0)[:3, :3]
    for t in motion.time:
        np.testing.assert_allclose(motion.pose(JAW, t)[:3, :3] @ R0.T, np.eye(3), atol=1e-9)
        np.testing.assert_allclose(motion.pose(CARRIER, t), motion.pose(CARRIER, 0.0), atol=1e-12)
    crank = motion.coordinate("Laserteil 8:1 base.angle")
    assert np.ptp(crank) > 1.0  # while the links turn through more than a radian


def test_jaw_travel_matches_a_closed_form_four_bar_from_the_pin_holes(spec, motion):
    # servo shaft S (horn bore, axis u), horn hole H0, rod hole C0 and pivot P of
    # Laserteil 8, and its jaw pivot J0: all from the STEP holes, mm -> m
    S, u = hole(spec, HORN2, (-4.37, 13.94, -193.0), 1.05)
    H0, _ = hole(spec, HORN2, (-9.84, 14.64, -179.63), 0.6)
    C0, _ = hole(spec, CRANK, (22.07, 9.69, -193.99), 0.6)
    P, _ = hole(spec, CRANK, (21.72, 9.69, -205.99), 1.45)
    J0, _ = hole(spec, CRANK, (35.43, 9.69, -220.55), 1.45)
    flat = lambda p: p - np.dot(p - S, u) * u  # noqa: E731  (all axes are parallel to u)
    H0, C0, P, J0 = map(flat, (H0, C0, P, J0))
    rod, rocker = np.linalg.norm(H0 - C0), np.linalg.norm(C0 - P)
    assert rod == pytest.approx(0.035, abs=2e-5)  # push rod 2 is 35 mm between its bends
    assert np.linalg.norm(H0 - S) == pytest.approx(0.01445, abs=2e-5) and rocker == pytest.approx(0.012, abs=2e-5)

    e1 = (P - S) / np.linalg.norm(P - S)
    e2 = np.cross(u, e1)
    to2 = lambda p: np.array([np.dot(p - S, e1), np.dot(p - S, e2)])  # noqa: E731
    C_prev = to2(C0)
    p2 = to2(P)
    X0 = motion.pose(JAW, 0.0)[:3, 3]
    for t in motion.time:
        H = to2(S + rotation(u, float(servo_angle(t))) @ (H0 - S))
        # C: on the circle (P, rocker) at distance `rod` from H; the branch nearest the last one
        d = np.linalg.norm(H - p2)
        a = (rocker**2 - rod**2 + d**2) / (2 * d)
        h = math.sqrt(rocker**2 - a**2)
        m = p2 + a * (H - p2) / d
        n = np.array([-(H - p2)[1], (H - p2)[0]]) / d
        C = min((m + h * n, m - h * n), key=lambda c: np.linalg.norm(c - C_prev))
        C_prev = C
        v0, v1 = to2(C0) - p2, C - p2
        psi = math.atan2(v0[0] * v1[1] - v0[1] * v1[0], np.dot(v0, v1))  # about e1 x e2 = u
        expected = rotation(u, psi) @ (J0 - P) - (J0 - P)
        np.testing.assert_allclose(motion.pose(JAW, t)[:3, 3] - X0, expected, atol=1e-7)
    # at the closed end the jaw has swung 19.9 mm towards the fixed finger, 4.5 mm down
    k = int(np.argmax(servo_angle(motion.time)))
    dx = motion.pose(JAW, motion.time[k])[:3, 3] - X0
    assert dx * 1e3 == pytest.approx([-19.855, 0.0, -4.478], abs=2e-3)


def test_driven_range_stops_short_of_the_real_stops(spec, motion):
    # only the parts of the two stops keep their geometry (the full 108-part check takes minutes)
    keep = {JAW, CARRIER, CRANK, SCREW}
    reduced = replace(spec, parts=tuple(p if p.name in keep else replace(p, shape=None) for p in spec.parts))
    report = find_interference(motion, reduced, near=3e-3)
    assert not report.collisions, report.summary()
    near = {frozenset(p.parts): p for p in report.near}
    fingers, screw = near[frozenset((JAW, CARRIER))], near[frozenset((CRANK, SCREW))]
    # closed: 1.0 mm between the finger tips; open: Laserteil 8 0.27 mm from the screw tip
    assert fingers.min_distance == pytest.approx(0.995e-3, abs=2e-5)
    assert servo_angle(fingers.min_distance_time) == pytest.approx(CLOSED, abs=2e-3)
    assert screw.min_distance == pytest.approx(0.268e-3, abs=2e-5)
    assert servo_angle(screw.min_distance_time) == pytest.approx(OPEN, abs=2e-3)


@pytest.mark.parametrize("rate, pair, stop", [(1.02, (JAW, CARRIER), 0.997), (-0.25, (CRANK, SCREW), -0.210)])
def test_beyond_the_range_the_stops_are_hit(spec, rate, pair, stop):
    # driven past its ends, the jaw servo runs into the stops the model file names
    spec2 = replace(with_drivers(spec, [f"jaw servo={rate}*t"]),
                    parts=tuple(p if p.name in pair else replace(p, shape=None) for p in spec.parts))
    report = find_interference(kinematics(compile_model(spec2), t_end=1.0, steps=20), spec2)
    assert [set(c.parts) for c in report.collisions] == [set(pair)]
    assert rate * report.collisions[0].first_time == pytest.approx(stop, abs=1e-3)


def test_the_check_ignores_only_the_jaw_pivot_stacks_and_the_horn_screw(spec):
    """The [check] exceptions are pivot-stack contacts of the jaw links (bolts, washers,
    locknuts) and the horn screw in servo 2: none can hide a lift link, push rod or finger."""
    from cadmotion.plugin.check import ignored_pairs

    pairs = ignored_pairs(spec, spec.setting("check.ignore"))
    assert len(pairs) == 21
    jaw_links = {"Laserteil 7:1", "Laserteil 7:2", "Laserteil 7:3", CRANK}
    fasteners = ("M3x20:", "M3 Washer:", "M3 Locknut:")
    for a, b in pairs:
        link = {a, b} & jaw_links
        if link:
            (other,) = {a, b} - link
            assert other.startswith(fasteners), (a, b)
        else:
            assert all(n.startswith("SG90") for n in (a, b)) and any("M2 x 4" in n for n in (a, b)), (a, b)


# ------------------------------------------------------------------------------ names


def test_servo_parts_are_named_as_their_author_wrote_them(spec, tmp_path):
    """``Pe\\X\\87a`` in the STEP text is "Peça" (code page 850), not a control character; a model
    file written against the earlier spelling (U+0087) still names the same parts."""
    names = {p.name for p in spec.parts}
    assert "SG90 - Micro Servo 9g - Tower Pro.3_Peça:1" in names
    assert not any(0x80 <= ord(c) <= 0x9F for n in names for c in n)
    legacy = tmp_path / "gripper.cadmotion.toml"
    text = SAMPLE.read_text(encoding="utf-8").replace("Peça", "Pe\\u0087a")
    legacy.write_text(text.replace('step = "', f'step = "{SAMPLE.parent.as_posix()}/'), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = load(legacy)
    assert [j.parts for j in old.joints] == [j.parts for j in spec.joints]
