"""The compiled kinematic step (kernel/kinematics_fast.py) moves mechanisms as the closed forms say.

Each run here compiles the frame loop in the process (``CADMOTION_KINEMATICS_FAST=compile``)
and counts the frames the compiled loop computed, so a test cannot pass on the numpy stepper
alone. References are closed forms (slider-crank, four-bar circle intersection, loop gaps from
the output positions), not the numpy path; the numpy path's results are compared beside them
to round-off (1e-12 relative).
"""

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")

from cadmotion.errors import AssemblyError  # noqa: E402
from cadmotion.importers import load  # noqa: E402
from cadmotion.kernel import compile_model, kinematics  # noqa: E402
from cadmotion.kernel import kinematics_fast  # noqa: E402
from cadmotion.kernel.kinematics_fast import CompiledFrames, compiled_frames  # noqa: E402
from cadmotion.kernel.system import System  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture
def compiled(monkeypatch):
    """Compile in the run; the returned list collects the frames each compiled call did."""
    monkeypatch.setenv("CADMOTION_KINEMATICS_FAST", "compile")
    frames = []
    original = CompiledFrames.run

    def counted(self, k0, k1, *args, **kwargs):
        k = original(self, k0, k1, *args, **kwargs)
        frames.append(k - k0)
        return k

    monkeypatch.setattr(CompiledFrames, "run", counted)
    return frames


def numpy_run(monkeypatch, model, **kwargs):
    """The same run on the numpy stepper only."""
    monkeypatch.setenv("CADMOTION_KINEMATICS_FAST", "0")
    try:
        return kinematics(model, **kwargs)
    finally:
        monkeypatch.setenv("CADMOTION_KINEMATICS_FAST", "compile")


def assert_same_motion(a, b, rtol=1e-12):
    """Two motions agree to round-off, relative to each quantity's largest value."""
    assert len(a.time) == len(b.time)
    for name in ("position", "quaternion", "velocity", "angular_velocity", "acceleration", "angular_acceleration"):
        x, y = getattr(a, name), getattr(b, name)
        assert np.abs(x - y).max() <= rtol * max(1.0, np.abs(y).max()), name
    for ca, cb in zip(a.joint_coordinates, b.joint_coordinates):
        np.testing.assert_allclose(ca.values, cb.values, atol=1e-12, err_msg=ca.joint)


def rotation_angle_z(quat):
    return np.unwrap(2 * np.arctan2(quat[:, 3], quat[:, 0]))


def test_slider_crank_over_several_turns_matches_its_closed_form(compiled, monkeypatch):
    # θ = t² up to 9 rad: the crank angle passes ±π, so the driver's winding is followed
    model = compile_model(load(SAMPLES / "slider_crank.cadmotion.toml"))
    m = kinematics(model, t_end=3.0, steps=600)
    assert m.complete, m.message
    assert sum(compiled) == 600
    t = m.time
    th, w, al = t**2, 2 * t, 2.0
    L1, L2 = 0.1, 0.3
    r = np.sqrt(L2**2 - (L1 * np.sin(th)) ** 2)
    x = L1 * np.cos(th) + r
    # ẋ and ẍ of x(θ(t)) by the chain rule
    dx = -L1 * np.sin(th) - L1**2 * np.sin(th) * np.cos(th) / r
    ddx = -L1 * np.cos(th) - L1**2 * np.cos(2 * th) / r - L1**4 * (np.sin(th) * np.cos(th)) ** 2 / r**3
    s, c = m.part_index("slider"), m.part_index("crank")
    np.testing.assert_allclose(m.position[:, s, 0], x, atol=1e-12)
    np.testing.assert_allclose(m.velocity[:, s, 0], dx * w, atol=1e-11)
    np.testing.assert_allclose(m.acceleration[:, s, 0], ddx * w**2 + dx * al, atol=1e-10)
    np.testing.assert_allclose(rotation_angle_z(m.quaternion[:, c]), th, atol=1e-12)
    np.testing.assert_allclose(m.angular_velocity[:, c, 2], w, atol=1e-11)
    np.testing.assert_allclose(m.angular_acceleration[:, c, 2], al, atol=1e-10)
    np.testing.assert_allclose(m.coordinate("crank_pivot.angle"), th, atol=1e-12)
    assert np.abs(m.position[:, :, 2]).max() < 1e-14
    assert_same_motion(m, numpy_run(monkeypatch, model, t_end=3.0, steps=600))


def four_bar_reference(theta, a=0.1, b=0.3, c=0.25, d=0.3):
    """Coupler pin B and rocker angle of the sample four-bar at crank angle theta (rad)."""
    B = np.stack([a * np.cos(theta), a * np.sin(theta)], -1)
    D = np.array([d, 0.0])
    dist = np.linalg.norm(D - B, axis=-1)
    x = (b**2 - c**2 + dist**2) / (2 * dist)
    h = np.sqrt(b**2 - x**2)
    u = (D - B) / dist[:, None]
    C = B + x[:, None] * u + h[:, None] * np.stack([-u[:, 1], u[:, 0]], -1)
    return B, np.unwrap(np.arctan2(C[:, 1] - D[1], C[:, 0] - D[0]))


def test_redundant_planar_four_bar_matches_the_circle_intersection_with_no_out_of_plane_motion(compiled, monkeypatch):
    # four revolutes in 3-D: three of Φq's rows are redundant and dropped from the solves; the
    # velocities and accelerations come from all rows (least squares), so the out-of-plane
    # angular rates are round-off
    model = compile_model(load(SAMPLES / "four_bar.cadmotion.toml"))
    m = kinematics(model, t_end=1.0, steps=500)
    assert m.complete and sum(compiled) == 500
    B, rocker = four_bar_reference(np.pi / 2 + 2 * np.pi * m.time)
    np.testing.assert_allclose(m.position[:, m.part_index("coupler"), :2], B, atol=1e-12)
    r = m.part_index("rocker")
    np.testing.assert_allclose(rotation_angle_z(m.quaternion[:, r]), rocker - rocker[0], atol=1e-12)
    # the rocker's angular velocity against a central difference of the reference angle
    h = 1e-6
    _, up = four_bar_reference(np.pi / 2 + 2 * np.pi * (m.time + h))
    _, down = four_bar_reference(np.pi / 2 + 2 * np.pi * (m.time - h))
    np.testing.assert_allclose(m.angular_velocity[:, r, 2], (up - down) / (2 * h), atol=1e-7)
    assert np.abs(m.angular_velocity[:, :, :2]).max() < 1e-12
    assert np.abs(m.angular_acceleration[:, :, :2]).max() < 1e-10
    assert_same_motion(m, numpy_run(monkeypatch, model, t_end=1.0, steps=500))


def closed_loop(build, N):
    """A regular N-gon of unit links (link0 fixed), all joints but three a third apart driven."""
    P = np.zeros((N + 1, 2))
    for k in range(N):
        a = -2 * math.pi * k / N
        P[k + 1] = P[k] + [math.cos(a), math.sin(a)]
    parts = {"link0": {"fixed": True}}
    parts.update({f"link{k}": {"position": [float(P[k, 0]), float(P[k, 1]), 0.0]} for k in range(1, N)})
    joints = [{"name": f"j{k}", "type": "revolute", "parts": [f"link{(k - 1) % N}", f"link{k}"],
               "origin": [float(P[k, 0]), float(P[k, 1]), 0.0], "axis": [0, 0, 1]} for k in range(N)]
    free = {0, N // 3, 2 * N // 3}
    drivers = [{"joint": f"j{k}", "expression": f"{0.3 / N}*(sin(t + {k % 7}) - sin({k % 7}))"}
               for k in range(N) if k not in free]
    return build({"parts": parts, "joints": joints, "drivers": drivers}), free


def test_driven_closed_loop_stays_closed_and_follows_its_drivers(build, compiled, monkeypatch):
    N = 9
    spec, free = closed_loop(build, N)
    model = compile_model(spec)
    m = kinematics(model, t_end=2.0, steps=40)
    assert m.complete and sum(compiled) == 40
    # every joint closes: link k's frame origin is link k−1's far end, from the output poses
    from cadmotion.kernel.motion import quat_to_matrix

    for f in range(len(m.time)):
        for k in range(1, N + 1):
            a, b = m.part_index(f"link{k - 1}"), m.part_index(f"link{k % N}")
            ang = -2 * math.pi * (k - 1) / N
            end = m.position[f, a] + quat_to_matrix(m.quaternion[f, a]) @ np.array([math.cos(ang), math.sin(ang), 0])
            origin = m.position[f, b] if k < N else np.zeros(3)
            assert np.linalg.norm(end - origin) < 1e-12, (f, k)
    # the driven joints' relative angles are the drivers' functions (rad)
    for k in range(N):
        if k not in free:
            expected = 0.3 / N * (np.sin(m.time + k % 7) - math.sin(k % 7))
            np.testing.assert_allclose(m.coordinate(f"j{k}.angle") - m.coordinate(f"j{k}.angle")[0], expected,
                                       atol=1e-12)
    assert_same_motion(m, numpy_run(monkeypatch, model, t_end=2.0, steps=40))


def rocker_driven_four_bar():
    from cadmotion.kernel.spec import DriverSpec, TimeFunctionSpec

    spec = load(SAMPLES / "four_bar.cadmotion.toml")
    return replace(spec, drivers=(DriverSpec("rocker", TimeFunctionSpec("t"), joint="D"),))


def test_a_lockup_is_reported_as_on_the_numpy_path_at_the_toggle_time(compiled, monkeypatch):
    # the rocker driven at 1 rad/s reaches its extreme where crank and coupler are collinear
    # (|C − A| = a + b): the compiled loop hands the frame it cannot solve to the numpy stepper,
    # which splits the step and reports the lock-up
    a, b, c, d = 0.1, 0.3, 0.25, 0.3
    C0 = np.array([0.26150623, 0.24701868])
    phi_ext = np.pi - np.arccos((c**2 + d**2 - (a + b) ** 2) / (2 * c * d))
    t_star = np.arctan2(C0[1], C0[0] - d) - phi_ext  # D measures ground relative to the rocker: opposite sign
    model = compile_model(rocker_driven_four_bar())
    m = kinematics(model, t_end=1.0, steps=1000)
    assert not m.complete
    assert sum(compiled) > 0.9 * len(m.time)
    stops = [e for e in m.events if e.kind in ("lockup", "singular")]
    assert stops and t_star - 0.01 <= stops[0].time <= t_star + 0.002
    ref = numpy_run(monkeypatch, model, t_end=1.0, steps=1000)
    assert [(e.kind, e.time, e.message) for e in m.events] == [(e.kind, e.time, e.message) for e in ref.events]
    assert m.message == ref.message
    assert_same_motion(m, ref, rtol=1e-9)


def test_an_assembly_failure_is_reported_as_on_the_numpy_path(build, compiled, monkeypatch):
    # a revolute about z at the origin, and a distance of 2 m between points 1.2 m apart at most
    data = {"parts": {"ground": {"fixed": True}, "bar": {}},
            "joints": [{"name": "p1", "type": "revolute", "parts": ["ground", "bar"], "origin": [0, 0, 0],
                        "axis": [0, 0, 1]},
                       {"name": "p2", "type": "distance", "parts": ["ground", "bar"],
                        "points": [[1, 0, 0], [0.2, 0, 0]], "length": 2.0}],
            "drivers": [{"joint": "p1", "expression": "t"}]}
    model = compile_model(build(data))
    with pytest.raises(AssemblyError) as fast:
        kinematics(model, t_end=1.0, steps=500)
    monkeypatch.setenv("CADMOTION_KINEMATICS_FAST", "0")
    with pytest.raises(AssemblyError) as slow:
        kinematics(model, t_end=1.0, steps=500)
    assert str(fast.value) == str(slow.value) and "p1" in str(fast.value) and "p2" in str(fast.value)
    assert compiled == []


def test_short_runs_and_structures_not_compiled_yet_stay_on_numpy(monkeypatch):
    model = compile_model(load(SAMPLES / "slider_crank.cadmotion.toml"))
    system = System(model)
    monkeypatch.delenv("CADMOTION_BACKEND", raising=False)
    monkeypatch.delenv("CADMOTION_KINEMATICS_FAST", raising=False)
    short = np.linspace(0.0, 1.0, kinematics_fast.MIN_FRAMES)
    assert compiled_frames(model, system, short) is None  # loading numba would cost more than it saves
    long = np.linspace(0.0, 1.0, kinematics_fast.MIN_FRAMES + 1)
    requested = []
    monkeypatch.setattr("cadmotion.kernel.symbolic.codegen.marker_ready", lambda marker: False)
    monkeypatch.setattr("cadmotion.kernel.symbolic.codegen.request_module_warmup", requested.append)
    assert compiled_frames(model, system, long) is None  # not compiled yet: numpy now, warm-up for the next run
    (path,) = requested
    assert path.name.startswith("kinematics-") and path.is_file()
    monkeypatch.undo()
    monkeypatch.delenv("CADMOTION_BACKEND", raising=False)
    monkeypatch.delenv("CADMOTION_KINEMATICS_FAST", raising=False)
    from cadmotion.kernel.symbolic import warmup

    assert warmup.main([f"module:{path}"]) == 0  # the background warm-up's job: compile, write the ready marker
    assert path.with_suffix(".ready").is_file()
    assert isinstance(compiled_frames(model, system, long), CompiledFrames)
    monkeypatch.setenv("CADMOTION_BACKEND", "numpy")  # no numba (FreeCAD's Python): never compiled
    assert compiled_frames(model, system, long) is None


def test_progress_hears_of_every_frame_once_and_in_order(compiled):
    # the compiled loop runs 256 frames a call; the callback still gets each frame, as on numpy
    model = compile_model(load(SAMPLES / "slider_crank.cadmotion.toml"))
    heard = []
    m = kinematics(model, t_end=2.0, steps=600, progress=lambda k, nt: heard.append((k, nt)))
    assert m.complete and sum(compiled) == 600
    assert heard == [(k, 601) for k in range(1, 601)]
