"""Degrees of freedom from the Jacobian's rank, redundancy by joint, drivers, lock-up."""

import numpy as np
import pytest
from scipy.optimize import least_squares
from scipy.spatial.transform import Rotation

from pathlib import Path

from cadmotion.errors import AssemblyError, DrivingError, SingularityError
from cadmotion.importers import load
from cadmotion.kernel import compile_model, kinematics, mobility

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_planar_four_bar_in_3d_has_three_redundant_equations_and_one_dof():
    model = compile_model(load(SAMPLES / "four_bar.cadmotion.toml"))
    mob = mobility(model)
    assert mob.dof == 1
    assert mob.gruebler == -2  # 6·3 − 4·5: the spatial count says it cannot move
    assert len(mob.redundant) == 3
    assert set(mob.redundant_joints) <= {"A", "B", "C", "D"}
    assert mob.dof_driven == 0


def cardan(beta):
    s2 = [np.cos(beta), np.sin(beta), 0.0]
    return {
        "parts": {"ground": {"fixed": True}, "shaft_in": {}, "shaft_out": {}},
        "joints": [
            {"name": "in", "type": "revolute", "parts": ["ground", "shaft_in"], "origin": [-1, 0, 0], "axis": [1, 0, 0]},
            {"name": "out", "type": "revolute", "parts": ["ground", "shaft_out"],
             "origin": [float(np.cos(beta)), float(np.sin(beta)), 0.0], "axis": s2},
            {"name": "cross", "type": "universal", "parts": ["shaft_in", "shaft_out"], "origin": [0, 0, 0],
             "axis": [0, 0, 1], "axis2": [float(-np.sin(beta)), float(np.cos(beta)), 0.0]},
        ],
        "drivers": [{"joint": "in", "expression": "t"}],
    }


def test_cardan_joint_output_angle_follows_tan_relation(build):
    beta = 0.5
    motion = kinematics(compile_model(build(cardan(beta))), t_end=2 * np.pi, steps=400)
    t1 = motion.coordinate("in.angle")
    expected = np.unwrap(np.arctan2(np.sin(t1) * np.cos(beta), np.cos(t1)))  # tan θ2 = cos β tan θ1
    np.testing.assert_allclose(motion.coordinate("out.angle"), expected, atol=1e-9)


def dh(theta, a, alpha):
    T = np.eye(4)
    T[:3, :3] = Rotation.from_euler("z", theta).as_matrix() @ Rotation.from_euler("x", alpha).as_matrix()
    T[:3, 3] = Rotation.from_euler("z", theta).as_matrix() @ np.array([a, 0, 0])
    return T


def bennett_frames(a=0.3, alpha=0.5):
    beta = np.arcsin(np.sin(alpha) * 0.5 / a)  # a/sin α = b/sin β with b = 0.5
    lengths, twists = [a, 0.5, a, 0.5], [alpha, beta, alpha, beta]

    def loop(th):
        T = np.eye(4)
        for k in range(4):
            T = T @ dh(th[k], lengths[k], twists[k])
        return np.r_[T[:3, 3], Rotation.from_matrix(T[:3, :3]).as_rotvec()]

    sol = least_squares(lambda x: loop(np.r_[0.7, x]), x0=[1.0, -0.7, -1.0], xtol=1e-15, ftol=1e-15, gtol=1e-15)
    th = np.r_[0.7, sol.x]
    assert np.abs(loop(th)).max() < 1e-12  # the loop closes: a real Bennett configuration
    frames, T = [], np.eye(4)
    for k in range(4):
        frames.append(T.copy())
        T = T @ dh(th[k], lengths[k], twists[k])
    return frames


def bennett_joint_origins(theta0, a=0.3, alpha=0.5):
    """The world origins of joints j1, j2, j3 of :func:`bennett_spec` (arrays (n, 3)) with the first joint's
    Denavit–Hartenberg angle at ``theta0`` (rad, n values): the loop of four DH transforms closed by least squares,
    each solution starting from the previous one (the branch of the initial pose, θ0 = 0.7)."""
    beta = np.arcsin(np.sin(alpha) * 0.5 / a)
    lengths, twists = [a, 0.5, a, 0.5], [alpha, beta, alpha, beta]

    def chain(th):
        T, out = np.eye(4), []
        for k in range(4):
            T = T @ dh(th[k], lengths[k], twists[k])
            out.append(T)
        return out

    def closure(x, t0):
        T = chain(np.r_[t0, x])[-1]
        return np.r_[T[:3, 3], Rotation.from_matrix(T[:3, :3]).as_rotvec()]

    x = least_squares(closure, [1.0, -0.7, -1.0], args=(0.7,), xtol=1e-15, ftol=1e-15, gtol=1e-15).x
    origins = []
    for t0 in theta0:
        x = least_squares(closure, x, args=(t0,), xtol=1e-15, ftol=1e-15, gtol=1e-15).x
        assert np.abs(closure(x, t0)).max() < 1e-12
        origins.append([T[:3, 3] for T in chain(np.r_[t0, x])[:3]])
    return np.array(origins).transpose(1, 0, 2)


def test_bennett_linkage_is_mobile_although_grubler_says_it_is_not(build):
    F = bennett_frames()
    parts = ["ground", "l1", "l2", "l3"]
    joints = []
    for k in range(4):
        joints.append({"name": f"J{k + 1}", "type": "revolute", "parts": [parts[k], parts[(k + 1) % 4]],
                       "origin": F[k][:3, 3].tolist(), "axis": F[k][:3, 2].tolist()})
    joints[0]["parts"] = ["ground", "l1"]
    joints[3]["parts"] = ["l3", "ground"]
    spec = build({"parts": {"ground": {"fixed": True}, "l1": {}, "l2": {}, "l3": {}}, "joints": joints,
                  "drivers": [{"joint": "J1", "expression": "0.5*t"}]})
    model = compile_model(spec)
    mob = mobility(model)
    assert mob.gruebler == -2
    assert mob.dof == 1
    motion = kinematics(model, t_end=2.0, steps=200)
    assert motion.complete
    # the linkage really moves: every link turns
    for name in ("l1", "l2", "l3"):
        q = motion.quaternion[:, motion.part_index(name)]
        assert 2 * np.arccos(min(1.0, abs(np.dot(q[0], q[-1])))) > 0.1


def test_a_driven_bennett_linkage_carries_each_joint_where_its_dh_loop_closes(build):
    """Driven at its first joint, each link of the Bennett linkage carries the next joint's origin where the
    Denavit–Hartenberg loop, closed by least squares from the driven angle, puts it (to 1e-9 m)."""
    F = bennett_frames()
    parts = ["ground", "l1", "l2", "l3"]
    joints = [{"name": f"J{k + 1}", "type": "revolute", "parts": [parts[k], parts[(k + 1) % 4]],
               "origin": F[k][:3, 3].tolist(), "axis": F[k][:3, 2].tolist()} for k in range(4)]
    spec = build({"parts": {"ground": {"fixed": True}, "l1": {}, "l2": {}, "l3": {}}, "joints": joints,
                  "drivers": [{"joint": "J1", "expression": "0.5*t"}]})
    motion = kinematics(compile_model(spec), t_end=2.0, steps=40)
    want = bennett_joint_origins(0.7 + 0.5 * motion.time)
    for k, link in enumerate(("l1", "l2", "l3")):
        local = np.linalg.solve(motion.pose(link, 0.0), np.r_[want[k, 0], 1.0])
        got = np.array([(motion.pose(link, t) @ local)[:3] for t in motion.time])
        np.testing.assert_allclose(got, want[k], rtol=0, atol=1e-9)
    assert np.linalg.norm(want[1, -1] - want[1, 0]) > 0.1  # the linkage really moved


def test_under_driven_mechanism_is_refused_with_its_free_dof(build):
    data = cardan(0.5)
    data["drivers"] = []
    with pytest.raises(DrivingError, match="1 degree"):
        kinematics(compile_model(build(data)), t_end=1, steps=10)


def test_conflicting_joints_cannot_assemble_and_are_named(build):
    data = {
        "parts": {"ground": {"fixed": True}, "bar": {}},
        "joints": [
            {"name": "p1", "type": "revolute", "parts": ["ground", "bar"], "origin": [0, 0, 0], "axis": [0, 0, 1]},
            {"name": "p2", "type": "distance", "parts": ["ground", "bar"], "points": [[1, 0, 0], [0.2, 0, 0]],
             "length": 2.0},
        ],
        "drivers": [{"joint": "p1", "expression": "t"}],
    }
    with pytest.raises(AssemblyError) as info:
        kinematics(compile_model(build(data)), t_end=1, steps=10)
    assert "conflicting: " in str(info.value)
    assert "p1" in str(info.value) and "p2" in str(info.value)


def test_parts_slightly_off_their_joints_are_pulled_on_with_little_change(build):
    # markers are fixed in the parts; then the output shaft is displaced by 2.4 mm,
    # as CAD files with per-part joint frames often leave it
    from dataclasses import replace

    from cadmotion.kernel import assemble

    spec = build(cardan(0.3))
    offset = np.array([0.002, -0.001, 0.001])
    parts = tuple(replace(p, position=tuple(np.add(p.position, offset))) if p.name == "shaft_out" else p
                  for p in spec.parts)
    model = compile_model(replace(spec, parts=parts))
    result = assemble(model)
    assert result.success and result.residual < 1e-10
    assert 0.5 * np.linalg.norm(offset) < result.moved["shaft_out"] < 1.5 * np.linalg.norm(offset)
    assert result.moved["shaft_in"] < 1e-12  # nothing asks the input shaft to move
    motion = kinematics(model, t_end=1, steps=10)
    assert motion.complete


def test_driving_the_rocker_past_its_extreme_reports_lockup_at_the_toggle_time():
    # Drive the four-bar's rocker joint D at 1 rad/s: the rocker's extreme is where
    # crank and coupler are collinear, |C − A| = a + b, so the motion must stop there.
    spec = load(SAMPLES / "four_bar.cadmotion.toml")
    from dataclasses import replace

    from cadmotion.kernel.spec import DriverSpec, TimeFunctionSpec

    spec = replace(spec, drivers=(DriverSpec("rocker", TimeFunctionSpec("t"), joint="D"),))
    a, b, c, d = 0.1, 0.3, 0.25, 0.3
    C0 = np.array([0.26150623, 0.24701868])
    phi0 = np.arctan2(C0[1], C0[0] - d)
    # C on circle |C−A| = a+b and |C−D| = c: angle at D by the cosine rule
    cosang = (c**2 + d**2 - (a + b) ** 2) / (2 * c * d)
    phi_ext = np.pi - np.arccos(cosang)  # angle of C − D measured from +x
    t_star = -(phi_ext - phi0)  # D measures ground relative to the rocker: opposite sign
    assert t_star > 0
    motion = kinematics(compile_model(spec), t_end=1.0, steps=1000)
    assert not motion.complete
    stop = [e for e in motion.events if e.kind in ("lockup", "singular")]
    assert stop, motion.events
    assert t_star - 0.01 <= stop[0].time <= t_star + 0.002


def test_a_lockup_names_one_time_in_its_event_and_its_message():
    # Coarse output steps: the lock-up is found inside a split step, between output times.
    # Its event, its message and the run's message must all name that one time.
    import re
    from dataclasses import replace

    from cadmotion.kernel.spec import DriverSpec, TimeFunctionSpec

    spec = load(SAMPLES / "four_bar.cadmotion.toml")
    spec = replace(spec, drivers=(DriverSpec("rocker", TimeFunctionSpec("t"), joint="D"),))
    motion = kinematics(compile_model(spec), t_end=1.0, steps=10)
    (lockup,) = [e for e in motion.events if e.kind == "lockup"]
    named = float(re.search(r"t = ([0-9.e+-]+) s", lockup.message).group(1))
    assert lockup.time == pytest.approx(named, rel=1e-5)
    assert motion.message == lockup.message
    assert motion.time[-1] < lockup.time < motion.time[-1] + 0.1   # between the last frame and the next


def test_euler_313_angles_are_refused_at_their_singularity():
    model = compile_model(load(SAMPLES / "slider_crank.cadmotion.toml"), parametrization="euler-313")
    with pytest.raises(SingularityError, match="crank"):
        kinematics(model, t_end=1, steps=10)


def test_euler_313_angles_solve_the_same_motion_away_from_the_singularity(build):
    # a single revolute about a tilted axis, parts tilted so θ stays away from 0
    q = Rotation.from_euler("x", 0.8).as_quat()  # x, y, z, w
    data = {"parts": {"g": {"fixed": True}, "b": {"orientation": [q[3], q[0], q[1], q[2]]}},
            "joints": [{"name": "h", "type": "revolute", "parts": ["g", "b"], "origin": [0, 0, 0], "axis": [0, 1, 0]}],
            "drivers": [{"joint": "h", "expression": "0.3*sin(t)"}]}
    a = kinematics(compile_model(build(data)), t_end=1, steps=20)
    b = kinematics(compile_model(build(data), parametrization="euler-313"), t_end=1, steps=20)
    np.testing.assert_allclose(np.abs(np.einsum("ki,ki->k", a.quaternion[:, 1], b.quaternion[:, 1])), 1, atol=1e-12)
    np.testing.assert_allclose(a.angular_velocity, b.angular_velocity, atol=1e-9)
    np.testing.assert_allclose(a.angular_acceleration, b.angular_acceleration, atol=1e-8)


def test_drivers_that_fix_the_same_motion_twice_are_refused_even_if_they_agree_at_the_start():
    from dataclasses import replace

    from cadmotion.kernel.spec import DriverSpec, TimeFunctionSpec

    spec = load(SAMPLES / "slider_crank.cadmotion.toml")
    both = spec.drivers + (DriverSpec("slide_drive", TimeFunctionSpec("0.01*t"), joint="slide"),)
    with pytest.raises(DrivingError, match="over-determine.*slide_drive"):
        kinematics(compile_model(replace(spec, drivers=both)), t_end=1, steps=10)


def test_slider_crank_through_a_full_turn_from_any_start_angle_is_never_singular(build):
    # a driven crank has no singular pose: starting at 138 degrees must run through
    for start in (0.0, 2.4, 4.0):
        c, s = np.cos(start), np.sin(start)
        A = [0.1 * c, 0.1 * s, 0.0]
        xb = 0.1 * c + np.sqrt(0.09 - (0.1 * s) ** 2)
        data = {
            "parts": {"ground": {"fixed": True}, "crank": {}, "rod": {"position": A}, "slider": {"position": [xb, 0, 0]}},
            "joints": [
                {"name": "pivot", "type": "revolute", "parts": ["ground", "crank"], "origin": [0, 0, 0], "axis": [0, 0, 1]},
                {"name": "pin", "type": "revolute", "parts": ["crank", "rod"], "origin": A, "axis": [0, 0, 1]},
                {"name": "wrist", "type": "revolute", "parts": ["rod", "slider"], "origin": [xb, 0, 0], "axis": [0, 0, 1]},
                {"name": "slide", "type": "prismatic", "parts": ["ground", "slider"], "origin": [xb, 0, 0], "axis": [1, 0, 0]},
            ],
            "drivers": [{"joint": "pivot", "expression": "2*pi*t"}],
        }
        motion = kinematics(compile_model(build(data)), t_end=1.0, steps=100)
        assert motion.complete, (start, motion.message)
        theta = start + 2 * np.pi * motion.time
        x = 0.1 * np.cos(theta) + np.sqrt(0.09 - (0.1 * np.sin(theta)) ** 2)
        np.testing.assert_allclose(motion.position[:, motion.part_index("slider"), 0], x, atol=1e-9)


@pytest.mark.parametrize("margin", [1e-3, 1e-5, 1e-7])
@pytest.mark.parametrize("steps", [4, 10, 40])
def test_slider_pushed_close_to_dead_centre_and_back_keeps_the_crank_on_its_side(slider_crank, margin, steps):
    # The slider goes out to `margin` short of the dead centre x = r + l and returns. Both
    # crank angles +theta and -theta fit each slider position; the continuous motion keeps
    # theta > 0 (cos theta from the triangle: l^2 = r^2 + x^2 - 2 r x cos theta). Coarse
    # output steps once let the solver land on -theta; the stepper must split the step.
    theta0 = np.radians(60)
    _, xb = slider_crank(theta0, "0")
    stroke = float(0.4 - xb - margin)
    spec, _ = slider_crank(theta0, f"{stroke!r}*(1 - (1 - t)**2)")
    motion = kinematics(compile_model(spec), t_end=2.0, steps=steps)
    x = xb + stroke * (1 - (1 - motion.time) ** 2)
    theta = np.arccos(np.clip((0.01 + x ** 2 - 0.09) / (0.2 * x), -1, 1))
    np.testing.assert_allclose(theta0 + motion.coordinate("pivot.angle"), theta, atol=1e-6)
    assert motion.events == []


def test_a_driver_that_jumps_is_reported_as_a_branch_jump_at_its_time(slider_crank):
    # sign(t - 0.5) jumps by 0.04 m at t = 0.5 s: no step size follows it continuously
    spec, _ = slider_crank(np.radians(60), "0.02*sign(t - 0.5) + 0.02")
    motion = kinematics(compile_model(spec), t_end=1.0, steps=10)
    jumps = [e.time for e in motion.events if e.kind == "branch"]
    # sign(0) = 0 is a half-way pose: one or two jumps, within the finest split (0.1 s / 2^8)
    assert jumps and all(0.5 <= t <= 0.5 + 2 * 0.1 / 2**8 + 1e-12 for t in jumps)
    assert motion.complete
    np.testing.assert_allclose(motion.coordinate("slide.disp")[-1], 0.04, atol=1e-12)


@pytest.mark.parametrize("n", [4, 400])  # dense QR, and the sparse null-space path
def test_redundancy_is_blamed_on_the_rows_not_preferred(n):
    """Rows 2k and 2k+1 repeat each other; rank_info must report the non-preferred one, whatever
    the pivoting would pick (it picks by norm: the preferred rows are made the larger ones)."""
    import scipy.sparse as sps

    from cadmotion.kernel.analysis import rank_info

    rows = []
    for k in range(n):
        e = np.zeros(n)
        e[k] = 1.0
        rows += [3.0 * e, e]  # the preferred copy first, with the larger norm
    J = np.array(rows)
    prefer = np.arange(0, 2 * n, 2)[::-1]  # every even row, in any order
    for M in (J, sps.csr_matrix(J)):
        info = rank_info(M, prefer=prefer)
        assert info.rank == n
        assert np.array_equal(info.redundant, np.arange(1, 2 * n, 2)), info.redundant[:6]
        assert np.array_equal(info.independent, np.arange(0, 2 * n, 2))
    # and the other way round: with no preference, the larger rows are kept
    plain = rank_info(J[::-1].copy())
    assert plain.rank == n
