"""Inverse dynamics: what a run promises beyond its efforts at the frames (benchmarks/inverse_sweep.py).

Models written here with closed forms: a carriage on a vertical slide against gravity and a
spring-damper (F = m (ÿ + g) + the spring's pull), a slider-crank driven from its slider (dead
centre where the crank and rod align), the four-bar sample without its driver.
"""

import math

import numpy as np
import pytest

from cadmotion.errors import DrivingError
from cadmotion.importers.modelfile import parse_model
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import inverse_dynamics

G = 9.81
MASS = 5.0
K, C, L0, F0 = 800.0, 25.0, 0.6, 15.0
ANCHOR, POINT = (0.0, 1.0, 0.0), (0.0, 0.2, 0.0)


def lift(expression="0.1*sin(3*t) + 0.05*t", joint=None, contacts=None, parts=None):
    """A carriage (5 kg) on a vertical prismatic rail, a spring-damper from a point 1 m up."""
    data = {"units": "m", "gravity": [0, -G, 0],
            "parts": {"ground": {"fixed": True},
                      "carriage": {"position": [0, 0, 0], "mass": MASS, "inertia": [0.02, 0.03, 0.04]}},
            "joints": [dict({"name": "rail", "type": "prismatic", "parts": ["ground", "carriage"],
                             "origin": [0, 0, 0], "axis": [0, 1, 0]}, **(joint or {}))],
            "forces": [{"name": "spring", "type": "spring-damper", "parts": ["ground", "carriage"],
                        "points": [list(ANCHOR), list(POINT)], "stiffness": K, "damping": C, "free_length": L0,
                        "preload": F0}],
            "drivers": [{"joint": "rail", "coordinate": "disp", "expression": expression}]}
    if parts:
        data["parts"].update(parts)
    if contacts:
        data["contacts"] = contacts
    return compile_model(parse_model(data, source="lift.toml"))


def lift_energy(y, yd):
    """T + V of the lift at height y (m) and speed ẏ: kinetic, gravity, spring (V = ½ k (l − l0)² − F0 (l − l0))."""
    stretch = (ANCHOR[1] - POINT[1] - y) - L0
    return 0.5 * MASS * yd ** 2 + MASS * G * y + 0.5 * K * stretch ** 2 - F0 * stretch


# ---------------------------------------------------------------------------- work
@pytest.mark.parametrize("steps", [4, 20])
def test_nonconservative_work_is_the_energy_gained_exactly_at_any_frame_spacing(steps):
    """The efforts make the driven motion a solution, so the work of the driver and the damper is
    Δ(T + V) at every frame; the trapezoidal rule over 4 frames was 28 % off."""
    m = inverse_dynamics(lift(), t_end=1.5, steps=steps)
    t = m.time
    y, yd = 0.1 * np.sin(3 * t) + 0.05 * t, 0.3 * np.cos(3 * t) + 0.05
    E = lift_energy(y, yd)
    scale = np.ptp(E)
    assert np.max(np.abs(m.extra["work.nonconservative"] - (E - E[0]))) < 1e-9 * scale
    assert np.max(np.abs(m.extra["energy.total"] - m.extra["energy.total"][0] - (E - E[0]))) < 1e-9 * scale


def test_effort_of_the_lift_is_weight_inertia_and_spring():
    m = inverse_dynamics(lift(), t_end=1.5, steps=10)
    t = m.time
    y, yd, ydd = 0.1 * np.sin(3 * t) + 0.05 * t, 0.3 * np.cos(3 * t) + 0.05, -0.9 * np.sin(3 * t)
    # u points from the anchor down to the carriage's point, l = 0.8 − y: the spring's force on the
    # carriage is f u = −f ŷ, f = −k (l − l0) − c l̇ + F0
    f = -K * (ANCHOR[1] - POINT[1] - y - L0) - C * (-yd) + F0
    effort = MASS * (ydd + G) + f
    np.testing.assert_allclose(m.extra["rail.driver.effort"], effort, rtol=0, atol=1e-9 * np.max(np.abs(effort)))


def test_frames_beyond_a_table_driver_s_rows_are_an_event_naming_the_driver():
    """The lift driven by a table of 5 rows over [0, 1] s, run to 1.5 s: the frames after 1 s take the spline's end
    cubic piece extrapolated, efforts of a motion the table does not give, which was said nowhere. Inside the rows
    the effort is still m (ÿ + g) + the spring's pull with ÿ the not-a-knot spline's (scipy's CubicSpline, the law
    kernel/expressions.py documents), and no event."""
    from dataclasses import replace

    from scipy.interpolate import CubicSpline

    from cadmotion.kernel.spec import TimeFunctionSpec

    rows = ((0.0, 0.0), (0.25, 0.04), (0.5, 0.05), (0.75, 0.03), (1.0, 0.0))
    spec = lift("t").spec
    (drv,) = spec.drivers
    table = compile_model(replace(spec, drivers=(replace(drv, function=TimeFunctionSpec(table=rows)),)))
    inside = inverse_dynamics(table, t_end=1.0, steps=8)
    assert not [e for e in inside.events if e.kind == "table-extrapolated"]
    spline = CubicSpline(*np.array(rows).T)
    t = inside.time
    y, yd, ydd = spline(t), spline(t, 1), spline(t, 2)
    effort = MASS * (ydd + G) - K * (ANCHOR[1] - POINT[1] - y - L0) + C * yd + F0
    np.testing.assert_allclose(inside.extra["rail.driver.effort"], effort, rtol=0, atol=1e-9 * np.max(np.abs(effort)))
    beyond = inverse_dynamics(table, t_end=1.5, steps=12)
    ev = [e for e in beyond.events if e.kind == "table-extrapolated"]
    assert len(ev) == 1 and ev[0].items == ("rail.driver",) and abs(ev[0].time - 1.125) < 1e-12
    assert "extrapolated" in ev[0].message and "4 of 13" in ev[0].message


# ---------------------------------------------------------------------------- a freedom left free
def test_a_freedom_the_drivers_leave_free_is_refused_naming_it():
    """A carriage on a cylindrical rail driven along it can still spin about it: the error names
    ``rail.angle`` and says what to do, before any frame is computed."""
    model = lift(joint={"type": "cylindrical"})
    with pytest.raises(DrivingError) as info:
        inverse_dynamics(model, t_end=1.0, steps=10)
    text = str(info.value)
    assert "rail.angle" in text and "rail.disp" not in text.split("hint")[0].split("leave")[1]
    assert "inverse dynamics needs every degree of freedom driven" in text
    assert "[[drivers]]" in text and "dynamic" in text


def test_the_run_service_gives_the_inverse_message_not_the_kinematic_one():
    """`cadmotion run --analysis inverse` (plugin.run_analysis) refused a free freedom with the
    kinematics' message, which names no coordinate and offers --free-dof minimal (refused for inverse)."""
    from cadmotion.plugin.run_analysis import run_analysis

    with pytest.raises(DrivingError) as info:
        run_analysis(lift(joint={"type": "cylindrical"}), "inverse", 1.0, 10)
    assert "rail.angle" in str(info.value) and "minimal" not in str(info.value)


def test_a_kinematic_motion_with_free_coordinates_is_not_taken_for_a_driven_one():
    """inverse_dynamics(model, motion) of a motion whose free coordinates moved minimally
    (free_dof='minimal') would return least-squares efforts: refused as well."""
    from cadmotion.kernel import kinematics

    model = lift(joint={"type": "cylindrical"})
    motion = kinematics(model, 1.0, 10, free_dof="minimal")
    with pytest.raises(DrivingError, match="rail.angle"):
        inverse_dynamics(model, motion)


# ---------------------------------------------------------------------------- singular configurations
def slider_crank(expression, scale=1.0):
    """Crank 0.1 m (1 kg), rod 0.3 m (2 kg), slider 1 kg (lengths times ``scale``), the crank at 60°,
    gravity −y; the slider driven."""
    r, ln, th = 0.1 * scale, 0.3 * scale, math.pi / 3
    B = [r * math.cos(th), r * math.sin(th), 0.0]
    x0 = r * math.cos(th) + math.sqrt(ln * ln - (r * math.sin(th)) ** 2)
    S = [x0, 0.0, 0.0]
    i2 = scale * scale
    data = {"units": "m", "gravity": [0, -G, 0], "parts": {
        "ground": {"fixed": True},
        "crank": {"position": [0, 0, 0], "mass": 1.0, "com": [B[0] / 2, B[1] / 2, 0],
                  "inertia": [1e-5 * i2, 8e-4 * i2, 8e-4 * i2]},
        "rod": {"position": B, "mass": 2.0, "com": [(S[0] - B[0]) / 2, -B[1] / 2, 0],
                "inertia": [2e-5 * i2, .015 * i2, .015 * i2]},
        "slider": {"position": S, "mass": 1.0, "inertia": [2e-4 * i2, 2e-4 * i2, 2e-4 * i2]}},
        "joints": [{"name": "pivot", "type": "revolute", "parts": ["ground", "crank"], "origin": [0, 0, 0],
                    "axis": [0, 0, 1]},
                   {"name": "pin", "type": "revolute", "parts": ["crank", "rod"], "origin": B, "axis": [0, 0, 1]},
                   {"name": "wrist", "type": "revolute", "parts": ["rod", "slider"], "origin": S, "axis": [0, 0, 1]},
                   {"name": "slide", "type": "prismatic", "parts": ["ground", "slider"], "origin": S,
                    "axis": [1, 0, 0]}],
        "drivers": [{"joint": "slide", "expression": expression}]}
    return compile_model(parse_model(data, source="slider_crank.toml")), r + ln - x0


@pytest.mark.parametrize("steps", [4, 20])
def test_passing_dead_centre_between_frames_is_an_event_naming_the_driver_and_the_time(steps):
    """Driven from its slider to top dead centre at t = 1 s and back, the crank goes on through it:
    between the frames either side the slider's force passes through infinity. The run says so."""
    model, _ = slider_crank(reach_expr())
    m = inverse_dynamics(model, t_end=1.6, steps=steps)
    events = [e for e in m.events if e.kind == "singular"]
    assert len(events) == 1, m.events
    ev = events[0]
    assert ev.items == ("slide.driver",) and "slide.driver" in ev.message
    assert abs(ev.time - 1.0) < 0.5 * 1.6 / steps


def _dead_centre_slider_crank():
    """A slider-crank drawn at top dead centre (crank 0.1 m and rod 0.3 m along x), driven from its slider."""
    return {"units": "m", "parts": {"ground": {"fixed": True}, "crank": {"position": [0, 0, 0]},
                                    "rod": {"position": [0.1, 0, 0]}, "slider": {"position": [0.4, 0, 0]}},
            "joints": [{"name": "pivot", "type": "revolute", "parts": ["ground", "crank"], "origin": [0, 0, 0],
                        "axis": [0, 0, 1]},
                       {"name": "pin", "type": "revolute", "parts": ["crank", "rod"], "origin": [0.1, 0, 0],
                        "axis": [0, 0, 1]},
                       {"name": "wrist", "type": "revolute", "parts": ["rod", "slider"], "origin": [0.4, 0, 0],
                        "axis": [0, 0, 1]},
                       {"name": "slide", "type": "prismatic", "parts": ["ground", "slider"], "origin": [0.4, 0, 0],
                        "axis": [1, 0, 0]}],
            "drivers": [{"joint": "slide", "expression": "-0.01*t**2"}]}


def _rsur_sample(driven):
    """samples/rsur_spatial (0.5 kg parts, 1e-3 kg m²) with its driver on ``driven`` (its own: the crank's, 2πt)."""
    import tomllib
    from pathlib import Path

    data = tomllib.loads((Path(__file__).resolve().parents[2] / "samples" / "rsur_spatial.cadmotion.toml").read_text())
    data.pop("simulation")
    for name in ("crank", "coupler", "rocker"):
        data["parts"][name].update(mass=0.5, inertia=[1e-3, 1e-3, 1e-3])
    data["drivers"] = [{"joint": driven, "expression": "0.1*t" if driven != "crank_pivot" else "2*pi*t"}]
    return data


@pytest.mark.parametrize("data, free", [(_dead_centre_slider_crank(), "pivot.angle"),
                                        (_rsur_sample("rocker_pivot"), "crank_pivot.angle")],
                         ids=["slider-crank-at-dead-centre", "rsur-sample-from-its-rocker"])
def test_an_initial_pose_at_a_toggle_of_the_driven_mechanism_is_refused_as_singular_not_as_free(data, free):
    """Drawn at a toggle of the driven mechanism, the drivers leave a freedom to first order only: the slider-crank
    at dead centre, driven from its slider, and the RSUR sample driven from its rocker (at its assembly pose the
    crank's pin moves along y, (0, 0.08, 0) m/rad, orthogonal to the coupler, which lies in the xz-plane: the
    rocker is at its extreme). Both were refused as "the drivers leave 1 free: <crank> can move", with the advice
    to drive it too, which over-constrains them. The error says it is a singular configuration and names the
    crank; the RSUR sample driven at its crank (regular there) runs."""
    with pytest.raises(DrivingError) as info:
        inverse_dynamics(compile_model(parse_model(data, source="toggle.toml")), t_end=0.5, steps=5)
    text = str(info.value)
    assert "singular configuration" in text and "toggle" in text and free in text
    assert "leave 1 free" not in text and "add a [[drivers]]" not in text
    m = inverse_dynamics(compile_model(parse_model(_rsur_sample("crank_pivot"), source="rsur.toml")), t_end=0.5,
                         steps=5)
    assert m.complete and not [e for e in m.events if e.kind in ("singular", "near-singular")]


def reach_expr():
    r, ln, th = 0.1, 0.3, math.pi / 3
    x0 = r * math.cos(th) + math.sqrt(ln * ln - (r * math.sin(th)) ** 2)
    return f"{r + ln - x0!r}*(1 - (1 - t)**2)"


@pytest.mark.parametrize("scale", [1.0, 0.01])
def test_a_crank_driven_through_its_turns_has_no_singular_event(scale):
    """The crank-driven slider-crank (3 redundant rows, whose redundant set moves with the crank) is
    regular everywhere: no event, however the rows chosen at the start fare, and at 1/100 scale
    (a 1 mm crank, whose rotation columns are 1e-3 of its translation columns)."""
    model, _ = slider_crank("0", scale)
    spec = model.spec
    from dataclasses import replace

    from cadmotion.kernel.spec import DriverSpec, TimeFunctionSpec

    driven = compile_model(replace(spec, drivers=(DriverSpec("motor", TimeFunctionSpec("2*pi*t + 0.3*sin(5*t)"),
                                                              joint="pivot", coordinate="angle"),)))
    m = inverse_dynamics(driven, t_end=2.0, steps=20)
    assert m.complete
    assert [e.kind for e in m.events if e.kind not in ("reactions-not-unique",)] == []


def test_a_run_stopped_by_a_lock_up_names_the_driver_whose_effort_grows_without_bound():
    """Driven from its slider past top dead centre (x beyond r + l), the kinematics locks up; the
    inverse run adds which driver's effort grows without bound, and when."""
    model, reach = slider_crank("0.2*t")
    m = inverse_dynamics(model, t_end=1.0, steps=20)
    assert not m.complete
    ev = [e for e in m.events if e.kind == "effort-unbounded"]
    assert ev and ev[0].items == ("slide.driver",)
    assert abs(ev[0].time - reach / 0.2) < 0.05


def test_a_frame_next_to_a_parallelogram_flat_configuration_is_an_event_naming_the_pins():
    """The IFToMM A02 N-four-bar driven by its first rod through the flat configuration (rods along
    the ground line, t = π/3): the rod's torque stays 3 θ̈ + 34.335 cos θ, but the pins' forces grow
    as 1/θ (3.9e4 N at the frame 6e-4 rad away), which was said nowhere."""
    from dataclasses import replace
    from pathlib import Path

    from cadmotion.importers.modelfile import read_model_file
    from cadmotion.kernel.spec import DriverSpec, TimeFunctionSpec

    spec = read_model_file(Path(__file__).resolve().parents[2] / "samples" / "dynamics" / "n_four_bar.cadmotion.toml")
    spec = replace(spec, drivers=(DriverSpec("motor", TimeFunctionSpec("-1.5*t"), joint="A0", coordinate="angle"),),
                   initial_velocities=())
    m = inverse_dynamics(compile_model(spec), t_end=2.0, steps=21)
    theta = math.pi / 2 - 1.5 * m.time
    # The frame 4e-4 rad past the flat configuration, which the run flags as near-singular, is held to 1e-4
    # relative, every other frame to 1e-6: there the kept rows' smallest singular value is ≈ 1.3e-5 of their
    # largest, so a pose converged to round-off of Φ is fixed only to ≈ 1e-11 along its near-null direction, and
    # the velocities and accelerations solved at it inherit that error amplified by 1/σ and 1/σ². Since the
    # kinematics reaches that frame in sub-steps (the determinant's sign check) its effort was 1.9e-3 N m off
    # (5.5e-5; the rods' spins 2.6e-7 rad/s off); the tree before landed 1.5e-7 off. Since the position polish
    # refactorises near a singular pose even at a residual of a few hundred ε, it is 1.9e-7 off again; the
    # allowance stays 1e-4, what the frame's σ leaves (the kinematics flags it near-singular too, one event).
    flat = np.abs(theta) < 1e-3
    assert flat.sum() == 1
    np.testing.assert_allclose(m.extra["motor.effort"][~flat], 34.335 * np.cos(theta[~flat]), rtol=0, atol=1e-6)
    np.testing.assert_allclose(m.extra["motor.effort"][flat], 34.335 * np.cos(theta[flat]), rtol=1e-4)
    near = [e for e in m.events if e.kind == "near-singular"]
    assert len(near) == 1 and abs(near[0].time - math.pi / 3) < 2.0 / 21
    assert {"B1_left", "B2"} <= set(near[0].items)
    # the kinematics' own warning on that frame (its velocities and accelerations, kernel/near_singular.py) is
    # merged into this one, with its estimates per frame
    assert "may be off by up to" in near[0].message
    assert m.extra["near_singular.acceleration_error"][flat] > 0


# ---------------------------------------------------------------------------- limits and contacts
def test_a_driven_motion_past_a_joint_limit_says_so_and_what_the_effort_includes():
    compliant = inverse_dynamics(lift("0.1*sin(3*t)", joint={"limits": {"disp": [-1.0, 0.05]}}), t_end=1.0,
                                 steps=50)
    ev = [e for e in compliant.events if e.kind == "limit"]
    assert len(ev) == 1 and ev[0].items == ("rail",)
    assert abs(ev[0].time - math.asin(0.5) / 3) < 0.02 + 1e-9 and "push back" in ev[0].message
    unilateral = inverse_dynamics(lift("0.1*sin(3*t)", joint={"limits": {"disp": [-1.0, 0.05]},
                                                              "limit_method": "unilateral"}), t_end=1.0, steps=50)
    kinds = [e.kind for e in unilateral.events]
    assert "unilateral" in kinds and "limit" in kinds
    assert "no force" in next(e for e in unilateral.events if e.kind == "limit").message


def test_a_restitution_contact_damps_with_the_speed_at_the_touch():
    """A sphere on the carriage pressed into a floor plane: F_n = k δ^1.5 (1 + ξ(e) δ̇/δ̇⁻), δ̇⁻ the
    penetration rate at the touch (here 0.3 cos(3 t_touch), sin(3 t_touch) = 0.7). Each frame took a
    fresh energy estimate before: 32 % off at any frame count."""
    from cadmotion.kernel.dynamics.contacts import restitution_factor

    contacts = [{"name": "bump", "parts": ["carriage", "floor"], "method": "compliant", "stiffness": 1e5,
                 "restitution": 0.5,
                 "shape": [{"sphere": 0.05}, {"plane": {"point": [0, -0.12, 0], "normal": [0, 1, 0]}}]}]
    model = lift("-0.1*sin(3*t)", contacts=contacts, parts={"floor": {"fixed": True}})
    m = inverse_dynamics(model, t_end=1.0, steps=200)
    t = m.time
    y = -0.1 * np.sin(3 * t)
    d = np.maximum(-0.12 - (y - 0.05), 0.0)
    dd = 0.3 * np.cos(3 * t)
    v_minus = 0.3 * math.cos(math.asin(0.7))
    N = np.where(d > 0, 1e5 * d ** 1.5 * (1 + restitution_factor(0.5) * dd / v_minus), 0.0)
    N = np.maximum(N, 0.0)
    assert np.max(np.abs(m.extra["bump.normal_force"] - N)) < 1e-6 * np.max(N)
