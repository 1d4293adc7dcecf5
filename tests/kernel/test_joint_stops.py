"""Joint limits act as compliant stops in dynamics (issue 16 item 2), against closed forms.

References: a rod pendulum released from horizontal towards a stop at θ_s (impact speed from
energy conservation, rebound speed e ω_impact, rebound height e² times the drop), a free slider
on a prismatic joint hitting its end stop (a point mass under the Hunt–Crossley law alone: the
restitution root makes the rebound speed exactly e v), the energy balance E − E0 − W_nc, and the
same model without limits (limits never reached change nothing).
"""

import math

import numpy as np
import pytest

from cadmotion.errors import MechanismError, ModelFileError, SolverError
from cadmotion.importers.modelfile import parse_model
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import simulate
from cadmotion.kernel.dynamics.contacts import restitution_factor
from cadmotion.kernel.dynamics.stops import STOP_DURATION

G = 9.81
# a uniform rod, 1 m, 1 kg, pivoted at one end: I about the pivot = m L²/3, com at L/2
M, L = 1.0, 1.0
I_PIVOT = M * L * L / 3.0
LC = L / 2.0


def _pendulum(limits=None, **joint):
    """A rod pivoted at the origin about +z, released at rest from horizontal along +x (θ = 0), gravity −y."""
    j = dict(name="pivot", type="revolute", parts=["ground", "rod"], origin=[0, 0, 0], axis=[0, 0, 1], **joint)
    if limits is not None:
        j["limits"] = {"angle": list(limits)}
    return {"units": "m", "gravity": [0, -G, 0],
            "parts": {"ground": {"fixed": True},
                      "rod": {"position": [0, 0, 0], "mass": M, "com": [LC, 0, 0],
                              "inertia": [1e-6, M * L * L / 12, M * L * L / 12]}},
            "joints": [j]}


def _run(data, t_end, frames, **options):
    """The motion of ``data`` at ``frames`` frames over ``t_end`` s, without the global error estimate (each test
    checks its run against a closed form; the estimate over a stop's impacts is checked on the pendulum below)."""
    options.setdefault("estimate_error", False)
    return simulate(compile_model(parse_model(data)), times=np.linspace(0.0, t_end, frames), **options)


def _rate(motion):
    """The rod's angular velocity about +z (rad/s)."""
    return motion.angular_velocity[:, motion.parts.index("rod"), 2]


# ---------------------------------------------------------------------------- pendulum against a stop
THETA_S, E_STOP = -math.pi / 4, 0.7


@pytest.fixture(scope="module")
def pendulum_run():
    """(Motion, DynamicsResult) of the pendulum swinging onto its stop, its global error estimated."""
    from cadmotion.kernel.dynamics.forward import run

    data = _pendulum([THETA_S, 1.0], limit_restitution=E_STOP)
    return run(compile_model(parse_model(data)), times=np.linspace(0.0, 1.0, 4001), rtol=1e-9, atol=1e-11)


@pytest.fixture(scope="module")
def pendulum(pendulum_run):
    return pendulum_run[0]


def test_the_global_error_estimate_holds_across_the_stops_impacts(pendulum_run):
    """The run's companion (at a tenth of the tolerances) locates the impacts anew: the estimate is there and within
    its allowance — no false alarm from an event both runs locate, each to its own tolerance."""
    motion, result = pendulum_run
    (check,) = [c for c in result.invariants.checks if c.name == "motion.error"]
    assert not check.broken and 0 < check.max_drift < check.allowed, check.line()


def _gravity_tolerance(omega):
    """The relative change of the rebound speed by gravity during the stop: at most the gravity
    torque's impulse over the contact, m g L_c cos θ_s · t_c, over I ω (t_c = STOP_DURATION, the
    duration of the default linear stop)."""
    return M * G * LC * math.cos(THETA_S) * STOP_DURATION / (I_PIVOT * omega)


def test_pendulum_hits_the_stop_at_the_speed_energy_conservation_gives(pendulum):
    assert pendulum.complete, pendulum.message
    active = pendulum.extra["pivot.limit_active"]
    first = np.argmax(active > 0)
    assert first > 0 and np.all(active[:first] == 0)
    omega_impact = math.sqrt(2 * M * G * LC * -math.sin(THETA_S) / I_PIVOT)
    # the last free frame before the stop: within a frame (0.25 ms) of the impact
    w = _rate(pendulum)[first - 1]
    assert -w == pytest.approx(omega_impact, rel=0.25e-3 * G / omega_impact + 1e-6)
    assert pendulum.coordinate("pivot.angle")[first - 1] >= THETA_S


def test_pendulum_rebounds_with_e_times_the_impact_speed(pendulum):
    active = pendulum.extra["pivot.limit_active"]
    inside = np.flatnonzero(active > 0)
    inside = inside[: np.argmax(np.r_[np.diff(inside), 2] > 1) + 1]  # the first impact's frames
    # one contact, no chatter: the rod is off the stop for its whole swing back
    assert inside.size and np.all(active[inside[-1] + 1: inside[-1] + 1000] == 0)
    before, after = inside[0] - 1, inside[-1] + 1
    w = _rate(pendulum)
    # the free swing just before and after: bring both back to the stop angle by energy conservation
    th = pendulum.coordinate("pivot.angle")

    def at_stop(k):
        return math.sqrt(w[k] ** 2 + 2 * M * G * LC * (math.sin(th[k]) - math.sin(THETA_S)) / I_PIVOT)

    omega_in, omega_out = at_stop(before), at_stop(after)
    omega_ref = math.sqrt(2 * M * G * LC * -math.sin(THETA_S) / I_PIVOT)
    assert omega_in == pytest.approx(omega_ref, rel=1e-6)
    assert w[after] > 0
    assert omega_out / omega_in == pytest.approx(E_STOP, rel=_gravity_tolerance(E_STOP * omega_in))


def test_pendulum_rises_to_the_height_restitution_predicts(pendulum):
    # com height y = L_c sin θ; the drop to the stop is h0 = −L_c sin θ_s, the rise after it e² h0
    th = pendulum.coordinate("pivot.angle")
    active = pendulum.extra["pivot.limit_active"] > 0
    first_off = np.argmax(active) + np.argmin(active[np.argmax(active):])  # the first frame off the stop
    second_on = first_off + np.argmax(active[first_off:])  # the next impact
    top = th[first_off:second_on].max()
    h0 = -LC * math.sin(THETA_S)
    rise = LC * (math.sin(top) - math.sin(THETA_S))
    tol = 2 * _gravity_tolerance(E_STOP * math.sqrt(2 * M * G * h0 / I_PIVOT))
    assert rise == pytest.approx(E_STOP ** 2 * h0, rel=tol)


def test_pendulum_energy_never_rises_and_its_loss_is_the_stop_work(pendulum):
    ex = pendulum.extra
    E = ex["energy.kinetic"] + ex["energy.potential"]
    W = ex["work.nonconservative"]
    assert np.all(np.diff(E) <= 1e-8)
    assert np.all(np.diff(W) <= 1e-12)
    assert np.max(np.abs(E - E[0] - W)) < 1e-6
    # the impact took (1 − e²) of the kinetic energy at the stop, up to gravity during it
    h0 = -LC * math.sin(THETA_S)
    omega = math.sqrt(2 * M * G * h0 / I_PIVOT)
    mid = np.argmin(np.abs(pendulum.time - 0.5))  # between the first impact and the second
    assert -W[mid] / (M * G * h0) == pytest.approx(1 - E_STOP ** 2, abs=2 * _gravity_tolerance(E_STOP * omega))


def test_pendulum_stop_outputs_are_zero_off_the_stop_and_the_law_on_it(pendulum):
    ex = pendulum.extra
    active = ex["pivot.limit_active"] > 0
    pen, force = ex["pivot.limit_penetration"], ex["pivot.limit_force"]
    assert np.all(pen[~active] == 0) and np.all(force[~active] == 0)
    th = pendulum.coordinate("pivot.angle")
    # penetration past the lower limit, from the joint angle
    assert np.allclose(pen[active], THETA_S - th[active], atol=1e-12)
    # the default stiffness: a linear stop of duration t_c on the rod's inertia about the pivot; the
    # Hunt–Crossley law F = k δ (1 + ξ(e) δ̇/δ̇⁻) with δ̇ = −θ̇ (lower stop) and δ̇⁻ the impact speed
    k = I_PIVOT * (math.pi / STOP_DURATION) ** 2
    omega = math.sqrt(2 * M * G * LC * -math.sin(THETA_S) / I_PIVOT)
    first = np.flatnonzero(active)
    first = first[first < first[0] + 100]
    law = k * pen[first] * (1 + restitution_factor(E_STOP) * -_rate(pendulum)[first] / omega)
    assert np.allclose(force[first], law, rtol=1e-3)
    assert pen.max() < 0.05 * math.pi / 4  # a stiff stop: little past the limit


# ---------------------------------------------------------------------------- slider against its end stop
V0, HI = 2.0, 0.1


def _slider(e=0.6, limits=(-1.0, HI), **joint):
    j = dict(name="rail", type="prismatic", parts=["ground", "slider"], origin=[0, 0, 0], axis=[1, 0, 0],
             limit_restitution=e, **joint)
    if limits is not None:
        j["limits"] = {"disp": list(limits)}
    else:
        del j["limit_restitution"]
    return {"units": "m", "gravity": [0, 0, -G],
            "parts": {"ground": {"fixed": True},
                      "slider": {"position": [0, 0, 0], "mass": 2.0, "inertia": [0.01, 0.01, 0.01]}},
            "joints": [j], "initial_velocity": {"slider": {"velocity": [V0, 0, 0]}}}


@pytest.mark.parametrize("e", [0.3, 0.9])
def test_slider_hits_its_end_stop_and_rebounds_at_e_times_its_speed(e):
    m = _run(_slider(e), 0.2, 801, rtol=1e-10, atol=1e-12)
    assert m.complete, m.message
    x = m.coordinate("rail.disp")
    v = m.velocity[:, m.parts.index("slider"), 0]
    active = m.extra["rail.limit_active"] > 0
    first = np.argmax(active)
    # free flight at V0 until the stop at x = HI: the first frame past HI is the first one active (the
    # stop is reached at a frame's time, t = HI / V0 = frame 200, so that frame or the next one, as
    # round-off puts x on either side of HI)
    assert HI / V0 - 1e-12 <= m.time[first] <= HI / V0 + m.time[1] * (1 + 1e-9)
    assert np.all(x[:first] <= HI)
    after = np.flatnonzero(~active & (m.time > m.time[first]))[0]
    # no other force along the rail: the restitution root is exact for a point mass
    assert v[after] == pytest.approx(-e * V0, rel=1e-6)
    assert np.all(v[after:] == pytest.approx(-e * V0, rel=1e-6))
    assert m.extra["rail.limit_force"].max() > 0


def test_slider_stop_force_is_along_the_rail_only():
    m = _run(_slider(0.5), 0.1, 401, rtol=1e-10, atol=1e-12)
    active = m.extra["rail.limit_active"] > 0
    # the stop pushes along x: it changes neither the vertical reaction (m g) nor the slider's y, z
    p = m.position[:, m.parts.index("slider")]
    assert np.allclose(p[:, 1:], 0, atol=1e-9)
    assert active.any()


# ---------------------------------------------------------------------------- limits never reached
def test_limits_never_reached_change_nothing():
    # the rod swings between θ = 0 and −π: limits at [−3.5, 0.5] are never touched
    a = _run(_pendulum([-3.5, 0.5]), 2.0, 201, rtol=1e-10, atol=1e-12)
    b = _run(_pendulum(None), 2.0, 201, rtol=1e-10, atol=1e-12)
    assert np.all(a.extra["pivot.limit_active"] == 0)
    assert np.max(np.abs(a.coordinate("pivot.angle") - b.coordinate("pivot.angle"))) < 1e-8
    assert np.max(np.abs(a.extra["energy.total"] - b.extra["energy.total"])) < 1e-8


# ---------------------------------------------------------------------------- not stepped over
@pytest.mark.parametrize("rtol", [1e-4, 1e-6, 1e-9])
def test_the_stop_is_never_stepped_over_at_any_tolerance(rtol):
    # a fast slider (20 m/s) against a stiff stop: at any tolerance, and with only two output frames,
    # it rebounds at e V0 instead of running through the stop
    data = _slider(0.5, limit_stiffness=1e8)
    data["initial_velocity"]["slider"]["velocity"] = [20.0, 0, 0]
    m = _run(data, 0.05, 2, rtol=rtol, atol=rtol * 1e-2)
    assert m.complete, m.message
    v = m.velocity[-1, m.parts.index("slider"), 0]
    assert v == pytest.approx(-10.0, rel=1e-3)
    # back along the rail at e V0 from the stop (the stop's duration, 0.45 ms here, in the tolerance)
    assert m.coordinate("rail.disp")[-1] == pytest.approx(HI - 10.0 * (0.05 - HI / 20.0), abs=5e-3)


# ---------------------------------------------------------------------------- input and kinematics
def test_stop_keys_without_limits_are_an_error_naming_the_joint():
    data = _pendulum(None, limit_restitution=0.5)
    with pytest.raises(ModelFileError, match="pivot.*limit_restitution"):
        parse_model(data)


@pytest.mark.parametrize("key,value", [("limit_restitution", 1.5), ("limit_stiffness", 0.0),
                                       ("limit_restitution", -0.1)])
def test_stop_parameters_out_of_range_are_an_error(key, value):
    with pytest.raises(ModelFileError, match=key):
        parse_model(_pendulum([-1.0, 1.0], **{key: value}))


def test_a_joint_that_starts_outside_its_limits_is_an_error_naming_it():
    with pytest.raises(MechanismError, match="pivot.*outside its limits"):
        _run(_pendulum([0.2, 1.0]), 0.1, 3)


def test_formulations_that_cannot_record_impact_speeds_refuse_stops():
    with pytest.raises(SolverError, match="pivot"):
        _run(_pendulum([-1.0, 1.0]), 0.1, 3, formulation="index3")


def test_kinematic_runs_with_limits_keep_reporting_them():
    from cadmotion.plugin.check import check

    data = _pendulum([-0.5, 0.5])
    data["drivers"] = [{"joint": "pivot", "expression": "-t"}]
    report = check(parse_model(data), t_end=1.0, steps=10, interference=False)
    assert [lim["joint"] for lim in report.limits] == ["pivot"]


# ---------------------------------------------------------------------------- cylindrical: both coordinates
def test_cylindrical_joint_stops_its_angle_and_its_slide_each_with_its_own_outputs():
    # a sleeve spinning on a vertical cylindrical joint and sliding down under gravity: no torque about
    # the axis but the stop's, so the spin rebounds at exactly −e times its speed; the slide lands on
    # its lower stop and stays there
    e = 0.5
    data = {"units": "m", "gravity": [0, 0, -G],
            "parts": {"ground": {"fixed": True},
                      "sleeve": {"position": [0, 0, 0], "mass": 1.0, "com": [0.2, 0, 0],
                                 "inertia": [0.01, 0.01, 0.01]}},
            "joints": [{"name": "c", "type": "cylindrical", "parts": ["ground", "sleeve"], "origin": [0, 0, 0],
                        "axis": [0, 0, 1], "limits": {"angle": [-10.0, 1.0], "disp": [-0.05, 10.0]},
                        "limit_restitution": e}],
            "initial_velocity": {"sleeve": {"angular_velocity": [0, 0, 5.0], "velocity": [0, 1.0, 0]}}}
    m = _run(data, 0.5, 2001, rtol=1e-9, atol=1e-11)
    assert m.complete, m.message
    ex = m.extra
    for coord in ("angle", "disp"):
        for c in ("limit_active", "limit_force", "limit_penetration"):
            assert f"c.{coord}.{c}" in ex
    w = m.angular_velocity[:, m.parts.index("sleeve"), 2]
    spin = np.flatnonzero(ex["c.angle.limit_active"] > 0)
    assert spin.size and np.all(np.diff(spin) == 1)
    assert w[spin[-1] + 1] / w[spin[0] - 1] == pytest.approx(-e, rel=1e-6)
    # the slide: free fall of 0.05 m onto the stop (v = sqrt(2 g h)), then resting on it at the static
    # penetration m g / k, k the default stiffness of the sleeve's mass
    vz = m.velocity[:, m.parts.index("sleeve"), 2]
    slide = np.flatnonzero(ex["c.disp.limit_active"] > 0)
    assert vz[slide[0] - 1] == pytest.approx(-math.sqrt(2 * G * 0.05), abs=G * m.time[1])
    k = 1.0 * (math.pi / STOP_DURATION) ** 2
    assert ex["c.disp.limit_penetration"][-1] == pytest.approx(G / k, rel=1e-2)
    E, W = ex["energy.total"], ex["work.nonconservative"]
    assert np.max(np.abs(E - E[0] - W)) < 1e-6


@pytest.mark.parametrize("integrator", ["Radau", "BDF"])
def test_implicit_integrators_give_the_same_rebound(integrator):
    # their Jacobian leaves the stops out (Newton still converges): the rebound height is the law's
    m = _run(_pendulum([THETA_S, 1.0], limit_restitution=E_STOP), 0.8, 801, rtol=1e-7, atol=1e-9,
             integrator=integrator)
    assert m.complete, m.message
    th = m.coordinate("pivot.angle")
    active = m.extra["pivot.limit_active"] > 0
    off = np.argmax(active) + np.argmin(active[np.argmax(active):])
    h0 = -LC * math.sin(THETA_S)
    rise = LC * (math.sin(th[off:].max()) - math.sin(THETA_S))
    omega = math.sqrt(2 * M * G * h0 / I_PIVOT)
    assert rise == pytest.approx(E_STOP ** 2 * h0, rel=2 * _gravity_tolerance(E_STOP * omega))


# ---------------------------------------------------------------------------- unilateral limits: bouncing to rest
def _sleeve(method="unilateral", e=0.5):
    """A sleeve (1 kg, com 0.2 m off a vertical cylindrical joint) spinning at 5 rad/s and falling 0.05 m onto the
    lower limit of its slide: it bounces (e) down to rest on it."""
    return {"units": "m", "gravity": [0, 0, -G],
            "parts": {"ground": {"fixed": True},
                      "sleeve": {"position": [0, 0, 0], "mass": 1.0, "com": [0.2, 0, 0],
                                 "inertia": [0.01, 0.01, 0.01]}},
            "joints": [{"name": "c", "type": "cylindrical", "parts": ["ground", "sleeve"], "origin": [0, 0, 0],
                        "axis": [0, 0, 1], "limits": {"angle": [-10.0, 1.0], "disp": [-0.05, 10.0]},
                        "limit_restitution": e, "limit_method": method}],
            "initial_velocity": {"sleeve": {"angular_velocity": [0, 0, 5.0]}}}


def test_a_slide_bouncing_to_rest_on_its_unilateral_limit_does_not_fall_through_it():
    # the bounces shrink by e each; a step that ends with the slide 1e-7 m above its limit (inside the touching band,
    # its gap > 0: no root) and falling used to leave it unwatched, and it fell 0.19 m through the limit (BDF,
    # rtol 1e-7). Closed form: at rest on the limit (within its touching band, 1e-7 m), carrying m g
    m = _run(_sleeve(), 0.5, 51, integrator="BDF", rtol=1e-7, atol=1e-9)
    assert m.complete, m.message
    z = m.position[:, m.parts.index("sleeve"), 2]
    assert z.min() >= -0.05 - 2e-7
    assert m.extra["c.disp.limit_force"][-1] == pytest.approx(G, rel=1e-6)
    # the spin rebounds once at −e times its speed: nothing else turns the sleeve about the axis (to 100 rtol)
    w = m.angular_velocity[:, m.parts.index("sleeve"), 2]
    assert w[-1] == pytest.approx(-0.5 * w[0], rel=1e-5)


# ---------------------------------------------------------------------------- the run's own checks
def _fast_slider(n=1.0):
    data = _slider(0.5, limit_stiffness=1e8, limit_exponent=n)
    data["initial_velocity"]["slider"]["velocity"] = [20.0, 0, 0]
    return data


@pytest.mark.parametrize("integrator,rtol", [("RK45", 1e-10), ("Radau", 1e-7), ("LSODA", 1e-10)])
def test_an_accurate_run_through_a_stiff_stop_is_not_flagged(integrator, rtol):
    # the checks counted the steps inside a stop at the flight's rate and flagged "steps" on runs that rebound at
    # e v0 to 1e-6: the stops are compliant contacts of the joint coordinate for the checks too
    from cadmotion.kernel.dynamics.forward import run

    m, r = run(compile_model(parse_model(_fast_slider())), times=np.array([0.0, 0.01]), integrator=integrator,
               rtol=rtol, atol=rtol * 1e-2)
    assert m.velocity[-1, m.parts.index("slider"), 0] == pytest.approx(-10.0, rel=1e-5)
    assert not r.invariants.broken, [c.line() for c in r.invariants.broken]


def test_a_fixed_step_that_does_not_resolve_a_stop_is_flagged():
    # RK4 at dt = 0.4 ms through a stop that lasts t_c = π sqrt(m / k) = 0.44 ms: h π / t_c = 2.8, no error bound
    # holds (it rebounds at 2 e v0 instead of e v0); the checks say so
    from cadmotion.kernel.dynamics.forward import run

    m, r = run(compile_model(parse_model(_fast_slider())), times=np.array([0.0, 0.01]), integrator="RK4", dt=4e-4)
    assert "steps.resolution" in [c.name for c in r.invariants.broken]


# ---------------------------------------------------------------------------- bad input names the joint and the fix
@pytest.mark.parametrize("jtype,limits", [("revolute", {"disp": [-0.1, 0.1]}), ("prismatic", {"angle": [-1.0, 1.0]})])
def test_a_limit_on_a_coordinate_the_joint_does_not_have_is_an_error(jtype, limits):
    # a revolute joint's disp limit was dropped without a word: the stop the user asked for never acted
    data = _pendulum(None, limit_restitution=0.5)
    data["joints"][0].update(type=jtype, limits=limits)
    with pytest.raises(MechanismError, match=f"pivot.*has no {next(iter(limits))} coordinate") as info:
        _run(data, 0.1, 3)
    assert "limits = {" in str(info.value)  # what to write instead


@pytest.mark.parametrize("joint,what", [(dict(limits=[1.0, -1.0]), "lower < upper"),
                                        (dict(limits=[-1.0, 1.0], limit_restitution=0.01), "unilateral"),
                                        (dict(limits=[0.2, 1.0]), "within its limits")])
def test_stop_errors_say_what_to_do(joint, what):
    with pytest.raises(MechanismError, match="pivot") as info:
        _run(_pendulum(**joint), 0.1, 3)
    assert what in str(info.value)


@pytest.mark.parametrize("integrator", ["DOP853", "Radau"])
def test_resting_on_a_unilateral_limit_is_not_flagged_at_tight_tolerances(integrator):
    # a 1 kg slider dropped 0.05 m onto its lower unilateral limit bounces to rest on it (e = 0.5); closing the
    # last gap within the touching band (≤ 1e-7 m) moved it against gravity without booking that energy, and the
    # energy check flagged every run at rtol ≤ 1e-9. Closed form: at rest on the limit, carrying m g
    from cadmotion.kernel.dynamics.forward import run

    data = {"units": "m", "gravity": [0, 0, -G],
            "parts": {"ground": {"fixed": True}, "slider": {"position": [0, 0, 0], "mass": 1.0,
                                                            "inertia": [0.01, 0.01, 0.01]}},
            "joints": [{"name": "rail", "type": "prismatic", "parts": ["ground", "slider"], "origin": [0, 0, 0],
                        "axis": [0, 0, 1], "limits": {"disp": [-0.05, 10.0]}, "limit_restitution": 0.5,
                        "limit_method": "unilateral"}]}
    m, r = run(compile_model(parse_model(data)), t_end=0.5, steps=10, integrator=integrator, rtol=1e-10,
               atol=1e-12)
    assert m.complete, m.message
    assert m.position[-1, m.parts.index("slider"), 2] == pytest.approx(-0.05, abs=1.1e-7)
    assert m.extra["rail.limit_force"][-1] == pytest.approx(G, rel=1e-6)
    assert not r.invariants.broken, [c.line() for c in r.invariants.broken]


def test_a_run_that_restarts_at_many_impacts_is_not_flagged_for_its_steps():
    # a slider between unilateral limits 1 mm either side of it at 20 m/s, e = 0.9: 23 impacts in 10 ms, each
    # restarting BDF from a small step at order 1; the steps check did not count the restarts and flagged an
    # exact run (166 steps against 100). Closed form: impacts w / v0, then 2 w / (e^k v0) apart; |v| = e^k v0
    from cadmotion.kernel.dynamics.forward import run

    w, v0, e = 1e-3, 20.0, 0.9
    data = {"units": "m", "gravity": [0, 0, 0],
            "parts": {"ground": {"fixed": True}, "slider": {"position": [0, 0, 0], "mass": 2.0,
                                                            "inertia": [0.01, 0.01, 0.01]}},
            "joints": [{"name": "rail", "type": "prismatic", "parts": ["ground", "slider"], "origin": [0, 0, 0],
                        "axis": [1, 0, 0], "limits": {"disp": [-w, w]}, "limit_restitution": e,
                        "limit_method": "unilateral"}],
            "initial_velocity": {"slider": {"velocity": [v0, 0, 0]}}}
    hits, t, v = [], w / v0, v0
    while t < 0.01:
        hits.append(t)
        v *= e
        t += 2 * w / v
    m, r = run(compile_model(parse_model(data)), t_end=0.01, steps=10, integrator="BDF", rtol=1e-8, atol=1e-10)
    impacts = [ev.time for ev in m.events if ev.kind == "impact"]
    assert len(impacts) == len(hits) == 23
    assert np.allclose(impacts, hits, rtol=1e-6)
    assert abs(m.velocity[-1, m.parts.index("slider"), 0]) == pytest.approx(e ** 23 * v0, rel=1e-6)
    assert not r.invariants.broken, [c.line() for c in r.invariants.broken]
