"""The bundled samples move as closed-form references say they must.

Positions to 1e-9 m / rad, velocities and accelerations against analytic derivatives
(slider-crank) or central differences of the reference positions (four-bar, RSUR).
"""

from pathlib import Path

import numpy as np
import sympy as sp
from scipy.optimize import brentq

from cadmotion.importers import load
from cadmotion.importers.modelfile import parse_model
from cadmotion.kernel import compile_model, kinematics
from cadmotion.kernel.motion import turn_angles

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def run(name, t_end, steps):
    model = compile_model(load(SAMPLES / f"{name}.cadmotion.toml"))
    motion = kinematics(model, t_end=t_end, steps=steps)
    assert motion.complete, motion.message
    return motion


def rotation_angle_z(quat):
    """Rotation angle about +z of quaternions (w, x, y, z) that rotate about z only."""
    return np.unwrap(2 * np.arctan2(quat[:, 3], quat[:, 0]))


def test_slider_crank_matches_closed_form_position_velocity_acceleration():
    m = run("slider_crank", 2.0, 400)
    t = sp.Symbol("t")
    L1, L2 = sp.Rational(1, 10), sp.Rational(3, 10)
    th = t**2
    x = L1 * sp.cos(th) + sp.sqrt(L2**2 - (L1 * sp.sin(th)) ** 2)
    fx = [sp.lambdify(t, e, "numpy") for e in (x, x.diff(t), x.diff(t, 2))]
    s = m.part_index("slider")
    np.testing.assert_allclose(m.position[:, s, 0], fx[0](m.time), atol=1e-9)
    np.testing.assert_allclose(m.velocity[:, s, 0], fx[1](m.time), atol=1e-8)
    np.testing.assert_allclose(m.acceleration[:, s, 0], fx[2](m.time), atol=1e-7)
    c = m.part_index("crank")
    np.testing.assert_allclose(rotation_angle_z(m.quaternion[:, c]), m.time**2, atol=1e-9)
    np.testing.assert_allclose(m.angular_velocity[:, c, 2], 2 * m.time, atol=1e-8)
    np.testing.assert_allclose(m.angular_acceleration[:, c, 2], 2.0, atol=1e-7)
    # everything stays in the plane z = 0
    assert np.abs(m.position[:, :, 2]).max() < 1e-12
    np.testing.assert_allclose(m.coordinate("crank_pivot.angle"), m.time**2, atol=1e-9)


def four_bar_reference(theta, a=0.1, b=0.3, c=0.25, d=0.3):
    B = np.stack([a * np.cos(theta), a * np.sin(theta)], -1)
    D = np.array([d, 0.0])
    dist = np.linalg.norm(D - B, axis=-1)
    x = (b**2 - c**2 + dist**2) / (2 * dist)
    h = np.sqrt(b**2 - x**2)
    u = (D - B) / dist[:, None]
    perp = np.stack([-u[:, 1], u[:, 0]], -1)
    C = B + x[:, None] * u + h[:, None] * perp
    return B, C, np.unwrap(np.arctan2(C[:, 1] - D[1], C[:, 0] - D[0]))


def test_four_bar_matches_circle_intersection():
    m = run("four_bar", 1.0, 500)
    B, C, phi = four_bar_reference(np.pi / 2 + 2 * np.pi * m.time)
    np.testing.assert_allclose(m.position[:, m.part_index("coupler"), :2], B, atol=1e-9)
    rocker = rotation_angle_z(m.quaternion[:, m.part_index("rocker")])
    np.testing.assert_allclose(rocker, phi - phi[0], atol=1e-9)
    # angular velocity of the rocker against central differences of the reference angle
    h = 1e-6
    _, _, phi_p = four_bar_reference(np.pi / 2 + 2 * np.pi * (m.time + h))
    _, _, phi_m = four_bar_reference(np.pi / 2 + 2 * np.pi * (m.time - h))
    np.testing.assert_allclose(m.angular_velocity[:, m.part_index("rocker"), 2], (phi_p - phi_m) / (2 * h), atol=1e-6)
    assert set(m.events) == set()


def test_rsur_spatial_linkage_follows_root_of_closure_equation():
    m = run("rsur_spatial", 1.0, 100)
    r, lr, L = 0.08, 0.15, 0.32
    D = np.array([0.30, 0.0, 0.20])

    def closure(phi, theta):
        B = np.array([r * np.cos(theta), r * np.sin(theta), 0.0])
        C = D + lr * np.array([np.cos(phi), 0.0, -np.sin(phi)])
        return np.linalg.norm(C - B) - L

    phi0 = -2.4040515245936764
    phis, prev = [], phi0
    for theta in 2 * np.pi * m.time:
        prev = brentq(closure, prev - 0.3, prev + 0.3, args=(theta,), xtol=1e-15)
        phis.append(prev)
    np.testing.assert_allclose(m.coordinate("rocker_pivot.angle"), np.array(phis) - phi0, atol=1e-9)
    # the coupler's ends stay on the crank pin and the rocker arm
    cp = m.part_index("coupler")
    B = np.stack([r * np.cos(2 * np.pi * m.time), r * np.sin(2 * np.pi * m.time), 0 * m.time], -1)
    np.testing.assert_allclose(m.position[:, cp], B, atol=1e-9)


def test_gear_pair_turns_at_the_ratio_and_in_mm_units():
    m = run("gear_pair", 2.0, 50)
    pin = 3 * np.sin(np.pi * m.time) + 2 * m.time
    np.testing.assert_allclose(m.coordinate("pinion_shaft.angle"), pin, atol=1e-10)
    np.testing.assert_allclose(m.coordinate("gear_shaft.angle"), -0.5 * pin, atol=1e-10)
    # the file is in mm: the gear's centre is 0.15 m from the pinion's
    np.testing.assert_allclose(m.position[:, m.part_index("gear"), 0], 0.15, atol=1e-12)
    np.testing.assert_allclose(m.angular_velocity[:, m.part_index("gear"), 2],
                               -0.5 * (3 * np.pi * np.cos(np.pi * m.time) + 2), atol=1e-8)


def test_coarse_output_steps_follow_the_same_motion():
    # two frames per crank revolution: the solver subdivides internally and stays on the branch
    m = run("four_bar", 1.0, 2)
    _, _, phi = four_bar_reference(np.pi / 2 + 2 * np.pi * m.time)
    rocker = rotation_angle_z(m.quaternion[:, m.part_index("rocker")])
    np.testing.assert_allclose(np.angle(np.exp(1j * rocker)), np.angle(np.exp(1j * (phi - phi[0]))), atol=1e-9)
    assert m.events == []


def test_joint_angles_keep_their_turns_between_coarse_frames():
    """The slider-crank's crank driven by θ = t² (16 rad in 4 s), written at 4 frames (up to 7 rad a frame):
    the crank's angle is t² itself, and every joint angle equals a run of 400 frames at the same times
    (a frame-to-frame change nearest zero, np.unwrap's rule, lost turns wherever a joint turned by more than
    half a turn between frames)."""
    coarse = run("slider_crank", 4.0, 4)
    dense = run("slider_crank", 4.0, 400)
    np.testing.assert_allclose(coarse.coordinate("crank_pivot.angle"), coarse.time ** 2, atol=1e-9)
    for jc in coarse.joint_coordinates:
        np.testing.assert_allclose(jc.values, dense.coordinate(jc.column)[::100], atol=1e-8, err_msg=jc.column)


def test_poses_between_coarse_frames_turn_the_right_way():
    """The slider-crank's crank driven at θ = 3 t, written at 5 frames over 10 s (6 rad a frame): the pose
    interpolated between the frames is the crank's at θ = 3 t (slerp alone turned it the short way, up to
    π rad off), and the motion the animations and the interference check interpolate has frames inserted so
    that no part turns by more than a quarter turn between two."""
    data = (SAMPLES / "slider_crank.cadmotion.toml").read_text().replace('expression = "t**2"', 'expression = "3*t"')
    m = kinematics(compile_model(parse_model(tomllib.loads(data), source="fast crank (test)")), t_end=10.0, steps=5)
    for t in np.linspace(0.0, 10.0, 41):
        R = m.pose("crank", t)[:3, :3]
        assert abs(np.angle(np.exp(1j * (np.arctan2(R[1, 0], R[0, 0]) - 3 * t)))) < 1e-9, t
    fine = m.with_turn_frames()
    assert fine.nt > m.nt and set(m.time) <= set(fine.time)
    assert np.max(np.abs(turn_angles(fine.quaternion, fine.angular_velocity, np.diff(fine.time)))) <= np.pi / 2 + 1e-12
    np.testing.assert_allclose(fine.coordinate("crank_pivot.angle"), 3 * fine.time, atol=1e-9)
    dense = run("slider_crank", 2.0, 200)
    assert dense.with_turn_frames() is dense  # nothing turns a quarter turn between its frames
