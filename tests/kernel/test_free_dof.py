"""Under-driven mechanisms on request (``free_dof="minimal"``, OndselSolver's quasi-kinematic
mode): the free coordinates move as little as the joints allow.  Checked against closed
forms of the driven motion, the constraint equations themselves and the first-order
condition of the nearest pose, and an OndselSolver file without drivers."""

import warnings
from pathlib import Path

import numpy as np
import pytest

from cadmotion.errors import DrivingError
from cadmotion.importers.modelfile import tomllib  # tomli before Python 3.11
from cadmotion.kernel import compile_model, kinematics
from cadmotion.kernel.system import AngleState, System

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
OMEGA = 2.0  # rad/s of the driven crank
R = 0.4  # m, crank pin radius


def crank_with_ball_jointed_body(origin_at_ball=True):
    """A crank turned at OMEGA about z and a free body hanging on its pin by a spherical
    joint: 3 rotations of the body are free.  The body's frame origin is at the ball
    (``origin_at_ball``) or 2.3 m beside it (the parts then span L = 2.7 m)."""
    body_pos = [R, 0.0, 0.0] if origin_at_ball else [R + 2.3, 0.1, 0.0]
    return {
        "parts": {"ground": {"fixed": True}, "crank": {"position": [0, 0, 0]}, "body": {"position": body_pos}},
        "joints": [
            {"name": "pivot", "type": "revolute", "parts": ["ground", "crank"], "origin": [0, 0, 0],
             "axis": [0, 0, 1]},
            {"name": "ball", "type": "spherical", "parts": ["crank", "body"], "origin": [R, 0.0, 0.0]},
        ],
        "drivers": [{"joint": "pivot", "expression": f"{OMEGA}*t"}],
    }


def test_without_the_option_an_under_driven_mechanism_is_refused_as_before(build):
    with pytest.raises(DrivingError, match="leave 3 degree"):
        kinematics(compile_model(build(crank_with_ball_jointed_body())), t_end=1, steps=10)


def test_an_unknown_free_dof_mode_is_refused(build):
    with pytest.raises(DrivingError, match="free_dof"):
        kinematics(compile_model(build(crank_with_ball_jointed_body())), t_end=1, steps=10, free_dof="held")


def test_drivers_that_fix_the_same_motion_twice_are_still_refused(build):
    data = crank_with_ball_jointed_body()
    data["drivers"].append({"name": "again", "joint": "pivot", "expression": f"{OMEGA}*t"})
    with pytest.raises(DrivingError, match="over-determine"):
        kinematics(compile_model(build(data)), t_end=1, steps=10, free_dof="minimal")


def test_a_ball_jointed_body_translates_with_the_crank_pin_and_does_not_spin(build):
    motion = kinematics(compile_model(build(crank_with_ball_jointed_body())), t_end=2.0, steps=80,
                        free_dof="minimal")
    assert motion.complete
    t = motion.time
    b = motion.part_index("body")
    c, s = np.cos(OMEGA * t), np.sin(OMEGA * t)
    zero = np.zeros_like(t)
    np.testing.assert_allclose(motion.position[:, b], R * np.c_[c, s, zero], atol=1e-9)
    np.testing.assert_allclose(motion.velocity[:, b], R * OMEGA * np.c_[-s, c, zero], atol=1e-9)
    np.testing.assert_allclose(motion.acceleration[:, b], -R * OMEGA**2 * np.c_[c, s, zero], atol=1e-8)
    np.testing.assert_allclose(motion.angular_velocity[:, b], 0.0, atol=1e-12)
    np.testing.assert_allclose(motion.angular_acceleration[:, b], 0.0, atol=1e-12)
    np.testing.assert_allclose(np.abs(motion.quaternion[:, b, 0]), 1.0, atol=1e-12)  # never turned
    [note] = [e for e in motion.events if e.kind == "free-dof"]
    assert "3 degree(s) of freedom free" in note.message and "minimally" in note.message


def _four_bar_beside_a_driven_crank():
    """The sample four-bar with its driver removed, and a separate driven crank beside it."""
    data = tomllib.loads((SAMPLES / "four_bar.cadmotion.toml").read_text())
    data.pop("drivers")
    data["parts"]["arm"] = {"position": [0.0, 0.0, 1.0]}
    data["joints"].append({"name": "E", "type": "revolute", "parts": ["ground", "arm"], "origin": [0.0, 0.0, 1.0],
                           "axis": [1, 0, 0]})
    data["drivers"] = [{"joint": "E", "expression": "3*t + 0.5*t**2"}]
    return data


def test_an_undriven_four_bar_is_held_while_a_driven_crank_beside_it_follows_its_closed_form(build):
    model = compile_model(build(_four_bar_beside_a_driven_crank()))
    motion = kinematics(model, t_end=1.5, steps=60, free_dof="minimal")
    assert motion.complete
    t = motion.time
    for name in ("crank", "coupler", "rocker"):
        k = motion.part_index(name)
        np.testing.assert_allclose(motion.position[:, k], np.broadcast_to(motion.position[0, k], motion.position[:, k].shape), atol=1e-12)
        np.testing.assert_allclose(motion.quaternion[:, k], np.broadcast_to(motion.quaternion[0, k], motion.quaternion[:, k].shape), atol=1e-12)
        np.testing.assert_allclose(motion.velocity[:, k], 0.0, atol=1e-12)
        np.testing.assert_allclose(motion.angular_velocity[:, k], 0.0, atol=1e-12)
    a = motion.part_index("arm")
    theta, theta_d, theta_dd = 3 * t + 0.5 * t**2, 3 + t, np.ones_like(t)
    np.testing.assert_allclose(motion.coordinate("E.angle"), theta, atol=1e-9)
    np.testing.assert_allclose(motion.angular_velocity[:, a], np.c_[theta_d, 0 * t, 0 * t], atol=1e-9)
    np.testing.assert_allclose(motion.angular_acceleration[:, a], np.c_[theta_dd, 0 * t, 0 * t], atol=1e-8)
    [note] = [e for e in motion.events if e.kind == "free-dof"]
    assert "1 degree(s) of freedom free" in note.message


def _state(model, motion, k):
    """(q, q̇) of frame k from the motion's poses (Euler parameters = unit quaternions)."""
    nqb = model.nqb
    idx = [model.body_index(n) for n in motion.parts]
    q = np.zeros(model.nq)
    qd = np.zeros(model.nq)
    for j, b in enumerate(idx):
        if model.body_fixed[b]:
            continue
        a = model.body_qadr[b]
        p = motion.quaternion[k, j]
        w = motion.angular_velocity[k, j]
        q[a:a + 3], q[a + 3:a + nqb] = motion.position[k, j], p
        qd[a:a + 3] = motion.velocity[k, j]
        # ṗ = ½ [0, ω] ⊗ p, ω in the world frame
        w0, wv = 0.0, w
        qd[a + 3] = 0.5 * (w0 * p[0] - wv @ p[1:])
        qd[a + 4:a + 7] = 0.5 * (w0 * p[1:] + p[0] * wv + np.cross(wv, p[1:]))
    return q, qd


def test_velocities_satisfy_the_velocity_equations_and_poses_are_nearest_to_the_last(build):
    model = compile_model(build(crank_with_ball_jointed_body(origin_at_ball=False)))
    motion = kinematics(model, t_end=1.0, steps=50, free_dof="minimal")
    assert motion.complete
    system = System(model)
    b = motion.part_index("body")
    assert np.abs(motion.angular_velocity[:, b]).max() > 1e-3  # off the ball, the body must turn a little
    for k in (0, 17, 50):
        q, qd = _state(model, motion, k)
        angles = AngleState(model, q)
        J = system.jacobian_dense(q, motion.time[k], angles)
        J = J.toarray() if hasattr(J, "toarray") else np.asarray(J)
        phit = system.phit(q, motion.time[k], angles)
        np.testing.assert_allclose(J @ qd, -phit, atol=1e-12)
        assert np.abs(system.phi(q, motion.time[k], angles)).max() < 1e-9
    # nearest pose: q_k − q_{k−1}, in the metric (m for positions, L·(Euler parameters) for
    # orientations), has no component along the free motions Φq allows at q_k
    L = 2.7  # m, the spread of the part positions (crank at 0, body at (2.7, 0.1, 0))
    w = np.ones(model.nq)
    for bb in range(model.nb):
        if not model.body_fixed[bb]:
            w[model.body_qadr[bb] + 3:model.body_qadr[bb] + model.nqb] = L
    for k in (1, 25, 50):
        q0, _ = _state(model, motion, k - 1)
        q1, _ = _state(model, motion, k)
        J = system.jacobian_dense(q1, motion.time[k], AngleState(model, q1))
        J = J.toarray() if hasattr(J, "toarray") else np.asarray(J)
        Js = J / w  # Jacobian in the weighted coordinates w·q
        _, sv, vt = np.linalg.svd(Js)
        null = vt[np.sum(sv > 1e-9 * sv[0]):]
        assert null.shape[0] == 3  # the body's three free rotations
        dq = w * (q1 - q0)
        assert np.linalg.norm(null @ dq) < 1e-7 * np.linalg.norm(dq)


def test_accelerations_are_the_time_derivative_of_the_velocities_where_the_free_directions_turn(build):
    # off the ball the body turns a little as it is carried; the least-norm acceleration alone
    # would miss the turning of the free directions (0.08 m/s² of 1.75 here)
    model = compile_model(build(crank_with_ball_jointed_body(origin_at_ball=False)))
    motion = kinematics(model, t_end=1.0, steps=2000, free_dof="minimal")
    b = motion.part_index("body")
    t = motion.time
    for v, a in ((motion.velocity, motion.acceleration), (motion.angular_velocity, motion.angular_acceleration)):
        dv_dt = np.gradient(v[:, b], t, axis=0)[2:-2]  # central differences, error O(h²)
        assert np.abs(a[2:-2, b]).max() > 0.5
        np.testing.assert_allclose(a[2:-2, b], dv_dt, atol=5e-5)


def test_a_long_ball_jointed_chain_swings_as_the_least_change_says_on_the_sparse_path(build):
    # 30 bodies 0.2 m long, each hung by a ball at its frame origin from the one before: 90
    # free DOF, nq = 217 (beyond the dense limit: the sparse factorisations run).  Carrying
    # the whole chain along with the crank pin would move 30 bodies; turning the first
    # ones moves fewer, at the price L²|ω|²/4 per body (Euler-parameter rates weighted by
    # L = 6.2 m, the spread of the part positions).  At t = 0 the pin moves at R·OMEGA
    # along y and every body turns about z only: a 30-unknown least-squares problem
    n, link = 30, 0.2
    parts = {"ground": {"fixed": True}, "crank": {"position": [0, 0, 0]}}
    joints = [{"name": "pivot", "type": "revolute", "parts": ["ground", "crank"], "origin": [0, 0, 0],
               "axis": [0, 0, 1]}]
    for i in range(n):
        x = R + link * i
        parts[f"b{i}"] = {"position": [x, 0, 0]}
        joints.append({"name": f"s{i}", "type": "spherical", "parts": ["crank" if i == 0 else f"b{i - 1}", f"b{i}"],
                       "origin": [x, 0, 0]})
    model = compile_model(build({"parts": parts, "joints": joints,
                                 "drivers": [{"joint": "pivot", "expression": f"{OMEGA}*t"}]}))
    from cadmotion.kernel.linalg import DENSE_LIMIT

    assert model.nq > DENSE_LIMIT
    motion = kinematics(model, t_end=1.0, steps=40, free_dof="minimal")
    assert motion.complete
    [note] = [e for e in motion.events if e.kind == "free-dof"]
    assert f"{3 * n} degree(s) of freedom free" in note.message
    # closed form at t = 0: body i translates along y at v + link·Σ_{j<i} ω_j
    L, v = R + link * (n - 1), R * OMEGA
    A = np.vstack([link * np.tril(np.ones((n, n)), -1), (L / 2) * np.eye(n)])
    rhs = np.r_[-v * np.ones(n), np.zeros(n)]
    omega = np.linalg.lstsq(A, rhs, rcond=None)[0]
    expected_v = v + link * np.r_[0.0, np.cumsum(omega)[:-1]]
    for i in (0, 1, 14, n - 1):
        k = motion.part_index(f"b{i}")
        np.testing.assert_allclose(motion.angular_velocity[0, k], [0, 0, omega[i]], atol=1e-9)
        np.testing.assert_allclose(motion.velocity[0, k], [0, expected_v[i], 0], atol=1e-9)
    assert abs(omega[0]) > 0.1  # it does swing: not a pure translation
    # the first body's frame origin is on the crank pin throughout
    t = motion.time
    np.testing.assert_allclose(motion.position[:, motion.part_index("b0")],
                               R * np.c_[np.cos(OMEGA * t), np.sin(OMEGA * t), 0 * t], atol=1e-9)


def test_an_ondselsolver_file_without_drivers_runs_held_at_its_assembled_pose():
    # FreeCAD's SphSphJt.asmt: a free body on a distance-2 sphere-sphere joint, no motion:
    # refused by default (5 DOF free), and held where the assembly put it on request
    from cadmotion.importers import load

    path = Path(__file__).resolve().parents[1] / "data" / "asmt" / "SphSphJt.asmt"
    with warnings.catch_warnings():  # the file's pose is 62.5 from its joint (the assembly fixes it)
        warnings.simplefilter("ignore")
        model = compile_model(load(path))
    with pytest.raises(DrivingError, match="5 degree"):
        kinematics(model, t_end=1, steps=10)
    motion = kinematics(model, t_end=1, steps=10, free_dof="minimal")
    assert motion.complete
    np.testing.assert_allclose(np.ptp(motion.position, axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.ptp(motion.quaternion, axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(motion.velocity, 0.0, atol=1e-12)
    [note] = [e for e in motion.events if e.kind == "free-dof"]
    assert "5 degree(s) of freedom free" in note.message
