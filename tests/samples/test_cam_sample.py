"""samples/cam: a CadQuery-built disc cam and a spring-loaded flat-faced follower (STEP).

The cam pair reads the cam's outline from the STEP file's face, so the follower's motion is
checked against the design law the CAD was built from (make_cam.lift, cycloidal rise and
return) and its load and lift-off speed against the closed form N = m (s̈ + g) + k (c0 + s).
"""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("OCP")

from cadmotion.importers import load  # noqa: E402
from cadmotion.importers.drive_option import with_drivers  # noqa: E402
from cadmotion.kernel import compile_model, kinematics  # noqa: E402
from cadmotion.kernel.dynamics import inverse_dynamics  # noqa: E402

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
