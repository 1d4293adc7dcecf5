"""samples/cam: a CadQuery-built disc cam and a spring-loaded flat-faced follower (STEP).

The cam pair reads the cam's outline from the STEP file's face, so the follower's motion is
checked against the design law the CAD was built from (make_cam.lift, cycloidal rise and
return) and its load and lift-off speed against the closed form N = m (s̈ + g) + k (c0 + s).
The same follower pushed by a compliant contact on the vertices of the cam's tessellated
B-spline face (``mesh``, no cam pair) follows that law to within the tessellation's deflection
and the contact's penetration.
"""

import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("OCP")

from cadmotion.importers import load  # noqa: E402
from cadmotion.importers.drive_option import with_drivers  # noqa: E402
from cadmotion.kernel import compile_model, kinematics  # noqa: E402
from cadmotion.kernel.dynamics import inverse_dynamics  # noqa: E402
from cadmotion.plugin.run_analysis import run_spec  # noqa: E402

FOLDER = Path(__file__).resolve().parents[2] / "samples" / "cam"
SAMPLE = FOLDER / "cam_follower.cadmotion.toml"
K, C0, G = 300.0, 0.024, 9.81  # the return spring (N/m, its compression at the base circle, m), gravity


def design():
    spec = importlib.util.spec_from_file_location("make_cam", FOLDER / "make_cam.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def sample():
    spec = load(SAMPLE)
    return spec, next(p.mass for p in spec.parts if p.name == "follower")


def law(theta):
    """(s, s″) of the design law at cam angles θ, in m and m/rad²."""
    values = np.array([design().lift(x) for x in np.atleast_1d(theta)])
    return values[:, 0] * 1e-3, values[:, 2] * 1e-3


def test_follower_lift_from_the_cad_outline_is_the_design_law(sample):
    spec, _ = sample
    motion = kinematics(compile_model(spec), t_end=1.0, steps=360)
    th = 2 * np.pi * motion.time
    s, s2 = law(th)
    np.testing.assert_allclose(motion.coordinate("slide.disp"), s, atol=1e-9)  # m: 1 µm of a 12 mm lift / 1e4
    # the cycloidal law's jerk jumps at the ends of the rise and return; the law's C4 spline
    # rounds it over one sample (0.5°): the acceleration is within 0.5 % of its peak there
    acc = motion.acceleration[:, motion.part_index("follower"), 1]
    assert np.max(np.abs(acc - s2 * (2 * np.pi) ** 2)) < 5e-3 * np.max(np.abs(s2)) * (2 * np.pi) ** 2


def test_lift_off_speed_and_time_match_the_closed_form(sample):
    spec, m = sample
    th = np.linspace(0.0, 2 * np.pi, 20001)
    s, s2 = law(th)
    falling = s2 < 0
    omega_star = float(np.sqrt(np.min((m * G + K * (C0 + s[falling])) / (-m * s2[falling]))))
    for factor, lifts in ((0.97, False), (1.03, True)):
        omega = factor * omega_star
        model = compile_model(with_drivers(spec, [f"shaft={omega!r}*t"]))
        motion = inverse_dynamics(model, kinematics(model, t_end=2 * np.pi / omega, steps=720))
        N = m * s2 * omega**2 + m * G + K * (C0 + s)
        expected = np.interp(omega * motion.time, th, N)
        assert np.max(np.abs(motion.extra["contact.force"] - expected)) < 5e-3 * np.max(np.abs(N))
        events = [e for e in motion.events if e.kind == "lift-off"]
        assert bool(events) == lifts
        if lifts:
            t_exact = th[np.flatnonzero(N < 0)[0]] / omega
            assert events[0].time == pytest.approx(t_exact, abs=2 * math.pi / omega / 20000)


DEFLECTION = 0.05e-3  # m, the tessellation's linear deflection (the model file's `mesh = 0.05`, mm)


@pytest.fixture(scope="module")
def pushed_by_mesh_contact(tmp_path_factory):
    """The sample without its cam pair: the follower's flat foot (its CAD face, a plane) against the
    vertices of the cam's side face (a periodic B-spline) tessellated at DEFLECTION; over the rise."""
    text = SAMPLE.read_text()
    text, pairs = re.subn(r'\[\[joints\]\]\nname = "contact".*?near = \[25, 0, 10\] \}\n', "", text, flags=re.S)
    assert pairs == 1
    text = text.replace('step = "cam_follower.step"', f'step = "{(FOLDER / "cam_follower.step").as_posix()}"')
    text = text.replace("t_end = 1.0", "t_end = 0.36").replace("steps = 360", "steps = 130")
    text += """
[parts.follower]
density = 2700

[[contacts]]
name = "cam_foot"
parts = ["cam", "follower"]
shape = [{ face = [40, 0, 5], mesh = 0.05 }, { face = [0, 30, 5] }]
method = "compliant"
stiffness = 1e7
damping = 1e5
"""
    path = tmp_path_factory.mktemp("cam") / "cam_mesh.cadmotion.toml"
    path.write_text(text)
    spec = load(path)
    run = run_spec(spec, "dynamic")
    assert run.motion.complete and not run.result.invariants.broken
    return spec, run.motion


def test_a_tessellated_b_spline_cam_face_becomes_points_on_the_surface(pushed_by_mesh_contact):
    """Every vertex lies on the cam's outline (the design law's envelope, r_b + s at the top at θ = 0)
    within the deflection, and they span the face's 10 mm width."""
    spec, _ = pushed_by_mesh_contact
    kind, numbers = spec.contacts[0].shapes[0]
    assert kind == "points"
    points = np.reshape(numbers, (-1, 3))
    outline = np.array(design().outline(3600)) * 1e-3
    gap = np.min(np.linalg.norm(points[:, None, :2] - outline[None], axis=2), axis=1)
    assert np.max(gap) < DEFLECTION + 2e-6          # the outline's own sampling: 3600 points, ≤ 2 µm chords
    assert points[:, 2].min() == pytest.approx(0.0, abs=1e-9) and points[:, 2].max() == pytest.approx(0.010)


def test_follower_on_the_tessellated_cam_follows_the_design_law(pushed_by_mesh_contact):
    """The foot rests on the highest vertex: below the law by at most the deflection plus the
    contact's penetration, and above it by at most 10 µm (the foot's small hops from vertex to vertex)."""
    _, motion = pushed_by_mesh_contact
    s, _ = law(2 * np.pi * motion.time)
    error = motion.coordinate("slide.disp") - s
    depth = np.max(motion.extra["cam_foot.penetration"])
    assert depth < 0.1e-3
    assert np.min(error) > -(DEFLECTION + depth) - 1e-6
    assert np.max(error) < 1e-5
    assert np.max(np.abs(error)) < 0.1e-3           # m: 0.1 mm of a 12 mm rise
