"""Unilateral contacts (issue 16): impacts, persistent contact, stick/slip, against independent references.

References: the free fall and Newton bounce of a ball in closed form (impact times, apex heights e^(2k) h0,
the end of the Zeno sequence t∞ = t1 (1 + 2e/(1 − e))); Newton's cradle — the quarter period of a compound
pendulum from the complete elliptic integral K, the impact speed from energy conservation, and for e < 1 the
sequence of binary collisions of equal masses computed here in one dimension; a block on an incline (sliding
a = g (sin θ − μ_d cos θ), sticking when tan θ < μ_s with the friction force m g sin θ); a cylinder rolling
down an incline (a = 2/3 g sin θ) and its transition from sliding at t* = v0 / (2 μ g cos θ − a_slip); the
energy balance E − E0 − W_nc with the impacts' losses in W_nc.
"""

import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.special import ellipk

from cadmotion.errors import ModelFileError, SolverError, MechanismError
from cadmotion.importers.modelfile import parse_model
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics.forward import run
from cadmotion.kernel.dynamics.unilateral import PLASTIC_SPEED

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "dynamics"
G = 9.81
TH = math.radians(20.0)


def _data(name):
    return tomllib.loads((SAMPLES / f"{name}.cadmotion.toml").read_text())


def _run(data, **kw):
    motion, result = run(compile_model(parse_model(data, source="test.toml")), **kw)
    assert motion.complete, motion.message
    assert not [e for e in motion.events if e.kind == "invariant"], [e.message for e in motion.events]
    return motion, result


def _balance(motion):
    E, W = motion.extra["energy.total"], motion.extra["work.nonconservative"]
    return float(np.max(np.abs(E - E[0] - W)))


# ---------------------------------------------------------------------------- the bouncing ball
def test_ball_bounces_at_the_closed_form_times_and_apex_heights():
    data = _data("bouncing_ball_unilateral")
    e, h0, R = 0.8, 1.0, 0.05
    v1 = math.sqrt(2 * G * h0)
    impacts = [math.sqrt(2 * h0 / G)]
    for k in range(1, 6):
        impacts.append(impacts[-1] + 2 * e ** k * v1 / G)
    apexes = [impacts[k] + e ** (k + 1) * v1 / G for k in range(5)]
    motion, result = _run(data, times=np.array([0.0] + apexes))
    hits = [ev.time for ev in motion.events if ev.kind == "impact"]
    assert np.allclose(hits[:5], impacts[:5], atol=1e-9, rtol=0), (hits, impacts)
    z = motion.position[1:, motion.parts.index("ball"), 2] - R
    expected = [e ** (2 * (k + 1)) * h0 for k in range(5)]
    assert np.allclose(z, expected, atol=1e-8, rtol=0)
    assert _balance(motion) < 1e-9
    # the impacts' losses are the non-conservative work: m g (h0 − apex) at each apex
    W = motion.extra["work.nonconservative"][1:]
    assert np.allclose(W, -G * (h0 - np.array(expected)), atol=1e-8)


def test_zeno_bounces_end_in_a_persistent_contact_carrying_the_weight():
    data = _data("bouncing_ball_unilateral")
    e, h0, R = 0.8, 1.0, 0.05
    t1 = math.sqrt(2 * h0 / G)
    t_inf = t1 * (1 + 2 * e / (1 - e))
    motion, result = _run(data, t_end=5.0, steps=10)
    hits = [ev for ev in motion.events if ev.kind == "impact"]
    # the tail below the plastic speed (bounces of at most 2 v_p/(g (1 − e)) in all) is cut off
    assert t_inf - 2 * PLASTIC_SPEED / (G * (1 - e)) <= hits[-1].time <= t_inf
    closes = [ev for ev in motion.events if ev.kind == "contact"]
    assert closes and closes[-1].time == pytest.approx(hits[-1].time, abs=1e-12)
    b = motion.parts.index("ball")
    assert motion.position[-1, b, 2] == pytest.approx(R, abs=1e-10)
    assert motion.extra["ball_floor.active"][-1] == 1.0
    assert motion.extra["ball_floor.normal_force"][-1] == pytest.approx(G, rel=1e-9)
    assert motion.extra["work.nonconservative"][-1] == pytest.approx(-G * h0, rel=1e-9)
    assert _balance(motion) < 1e-9
    assert any("impact(s)" in n and "time with k contacts active" in n for n in result.notes)


def test_a_box_dropped_flat_rebounds_on_its_four_corners_at_once():
    # four corners impact at the same instant: one complementarity problem with four redundant rows
    e, h = 0.5, 0.2
    data = {"units": "m", "gravity": [0, 0, -G],
            "parts": {"floor": {"fixed": True},
                      "box": {"position": [0, 0, 0.05 + h], "mass": 1.0, "inertia": [0.0016667, 0.0041667, 0.0041667]}},
            "contacts": [{"name": "box_floor", "parts": ["box", "floor"], "restitution": e,
                          "shape": [{"box": [0.2, 0.1, 0.1]}, {"plane": {}}]}]}
    t1 = math.sqrt(2 * h / G)
    motion, _ = _run(data, times=np.array([0.0, t1 + 1e-6]))
    hits = [ev for ev in motion.events if ev.kind == "impact"]
    assert len(hits) == 4 and all(ev.time == pytest.approx(t1, abs=1e-9) for ev in hits)
    assert motion.velocity[-1, 1, 2] == pytest.approx(e * math.sqrt(2 * G * h) - G * 1e-6, abs=1e-8)
    assert np.max(np.abs(motion.angular_velocity[-1, 1])) < 1e-9
    assert motion.extra["work.nonconservative"][-1] == pytest.approx(-(1 - e * e) * G * h, rel=1e-7)


def test_a_ball_held_by_three_planes_slides_down_the_crease_of_the_two_that_hold_it():
    # A ball touching three planes at rest under gravity. Opening the point of the most negative λ_n
    # first (n3's: λ = 17.7, −14.7, −17.0 N with all three held) leaves the ball on n1 alone, accelerating
    # into n3 (g̈ = −1.3 m/s²); the complementary
    # choice holds it on n1 and n3 and lets it leave n2: it slides down their crease, a = (g·d) d,
    # d = n1 × n3, with the forces m (a − g) = λ1 n1 + λ3 n3 (λ ≥ 0) and n2·a > 0.
    R = 0.05
    normals = np.array([[-3, 0, 2], [-1, -2, -2], [-1, 1, 1]], float)
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    planes = [{"name": f"plane{k + 1}", "parts": ["ball", "corner"],
               "shape": [{"sphere": R}, {"plane": {"point": list(-(R + 1e-12) * n), "normal": list(n)}}]}
              for k, n in enumerate(normals)]
    data = {"units": "m", "gravity": [0, 0, -G],
            "parts": {"corner": {"fixed": True}, "ball": {"mass": 1.0, "inertia": [1e-3] * 3}},
            "contacts": planes}
    motion, result = _run(data, t_end=0.2, steps=4)
    g = np.array([0.0, 0.0, -G])
    d = np.cross(normals[0], normals[2])
    d /= np.linalg.norm(d)
    a = (g @ d) * d
    assert normals[1] @ a > 1.0  # the ball leaves the plane n2
    lam = np.linalg.lstsq(normals[[0, 2]].T, a - g, rcond=None)[0]
    assert np.all(lam > 1.0)
    t = motion.time
    assert np.allclose(motion.position[:, 1], 0.5 * t[:, None] ** 2 * a, rtol=0, atol=1e-9)
    ex = motion.extra
    for k, expected in ((0, lam[0]), (1, 0.0), (2, lam[1])):
        assert np.allclose(ex[f"plane{k + 1}.normal_force"][1:], expected, rtol=1e-7, atol=1e-9)
    assert not [ev for ev in motion.events if ev.kind in ("impact", "contact") and ev.time > 0]
    assert _balance(motion) < 1e-9


@pytest.mark.parametrize("height, kind", [(1e-12, "approach"), (-1e-12, "approach"), (1e-6, "gap")])
def test_an_open_point_is_watched_by_its_gap_when_apart_and_by_its_approach_when_touching(height, kind):
    # within the touching band the gap is round-off (either sign): a zero of it would be found again at once
    # after every switch; the approach's zero, at 2 CLOSED_SPEED, lies past the impact threshold
    from cadmotion.kernel.dynamics.formulations import get_formulation
    from cadmotion.kernel.dynamics.forward import prepare
    from cadmotion.kernel.dynamics.hybrid import EventDriver
    from cadmotion.kernel.dynamics.unilateral import CLOSED_SPEED

    data = _data("bouncing_ball_unilateral")
    data["parts"]["ball"]["position"][2] = data["contacts"][0]["shape"][0]["sphere"] + height
    model = compile_model(parse_model(data, source="ball.toml"))
    dyn, q0, v0, angles, refs = prepare(model, 0.0)
    form = get_formulation("projection")(dyn, angles=angles, refs=refs)
    driver = EventDriver(form, None, 1e-8, 1e-10)
    v0[2] = 0.01  # rising
    kinds, values, _ = driver.kinds(0.0, form.initial_state(0.0, q0, v0))
    assert kinds == [(kind, 0)]
    assert values[0] == pytest.approx(height if kind == "gap" else 0.01 + 2 * CLOSED_SPEED, rel=1e-6)


# ---------------------------------------------------------------------------- Newton's cradle
def _cradle(e, t_extra):
    data = _data("newtons_cradle")
    data["contacts"][0]["restitution"] = e
    R, L, m, th0 = 0.025, 0.3, 0.5, math.radians(20)
    Ip = m * L * L + 0.4 * m * R * R  # about the pivot
    quarter = math.sqrt(Ip / (m * G * L)) * ellipk(math.sin(th0 / 2) ** 2)
    v0 = L * math.sqrt(2 * m * G * L * (1 - math.cos(th0)) / Ip)
    motion, result = _run(data, times=np.array([0.0, quarter + 1e-9] + list(t_extra(quarter))))
    return motion, quarter, v0, (R, L, th0)


def test_cradle_with_e_1_passes_momentum_and_energy_to_the_last_ball():
    motion, quarter, v0, (R, L, th0) = _cradle(1.0, lambda q: [2 * q])
    hits = [ev for ev in motion.events if ev.kind == "impact"]
    assert len(hits) == 4 and all(abs(ev.time - quarter) < 1e-8 for ev in hits)  # a 1e-9 m position error at rtol 1e-8
    vx = motion.velocity[1, 1:, 0]
    assert np.allclose(vx[:4], 0.0, atol=1e-7)
    assert vx[4] == pytest.approx(v0, rel=1e-7)
    # the last ball rises to the first one's release height a quarter period later
    z5 = motion.position[2, 5, 2]
    assert z5 == pytest.approx(L * (1 - math.cos(th0)), abs=1e-8)
    assert abs(motion.extra["work.nonconservative"][-1]) < 1e-9
    assert _balance(motion) < 1e-8


def _collisions_1d(v, e):
    """Binary collisions of equal masses in a row, touching, until none approach (Newton's law per pair)."""
    v = list(v)
    while True:
        pairs = [i for i in range(len(v) - 1) if v[i] - v[i + 1] > 1e-12]
        if not pairs:
            return np.array(v)
        for i in pairs:
            ei = e if v[i] - v[i + 1] >= PLASTIC_SPEED else 0.0
            a, b = v[i], v[i + 1]
            v[i], v[i + 1] = 0.5 * (a + b - ei * (a - b)), 0.5 * (a + b + ei * (a - b))


@pytest.mark.parametrize("e", [0.5, 0.9])
def test_cradle_with_e_below_1_follows_the_sequence_of_binary_collisions(e):
    motion, quarter, v0, _ = _cradle(e, lambda q: [])
    expected = _collisions_1d([v0, 0, 0, 0, 0], e)
    vx = motion.velocity[1, 1:, 0]
    assert np.allclose(vx, expected, atol=1e-7 * v0), (vx, expected)
    # momentum kept (v0 the closed-form speed at the bottom, reached by the integrator to its rtol 1e-8);
    # the kinetic energy lost is the impacts' work
    assert vx.sum() == pytest.approx(v0, rel=1e-8)
    assert _balance(motion) < 1e-8


# ---------------------------------------------------------------------------- friction
def test_block_slides_with_the_closed_form_acceleration():
    motion, _ = _run(_data("block_on_incline_unilateral"))
    a = G * (math.sin(TH) - 0.2 * math.cos(TH))
    x = motion.position[:, motion.parts.index("block"), 0]
    assert np.allclose(x, 0.5 * a * motion.time ** 2, atol=1e-9)
    assert _balance(motion) < 1e-9


def test_box_on_the_incline_slides_and_below_the_friction_angle_sticks():
    data = _data("block_on_incline_unilateral")
    box = dict(data["contacts"][0])
    box.update(name="box", shape=[{"box": [0.2, 0.1, 0.1], "center": [0, 0, -0.005]}, {"plane": {}}])
    data["contacts"] = [box]
    motion, _ = _run(data)
    x = motion.position[:, motion.parts.index("block"), 0]
    assert np.allclose(x, 0.5 * G * (math.sin(TH) - 0.2 * math.cos(TH)) * motion.time ** 2, atol=1e-9)
    box["friction"] = {"static": 0.5, "dynamic": 0.4}  # tan 20° = 0.364 < 0.5
    motion, _ = _run(data)
    assert np.max(np.abs(motion.position[:, motion.parts.index("block"), :2])) < 1e-12
    assert motion.extra["box.friction_force"][-1] == pytest.approx(G * math.sin(TH), rel=1e-9)
    assert motion.extra["box.normal_force"][-1] == pytest.approx(G * math.cos(TH), rel=1e-9)



def _incline(data, tan_theta, heading):
    """``data`` with gravity tilted to a slope of tan θ = ``tan_theta`` falling along the heading (rad) in
    the incline's xy plane (the block keeps its place: the slope runs across its feet at that angle)."""
    th = math.atan(tan_theta)
    data["gravity"] = [G * math.sin(th) * math.cos(heading), G * math.sin(th) * math.sin(heading), -G * math.cos(th)]
    return th


@pytest.mark.parametrize("heading", [0.0, 22.5, 30.0, 45.0])
@pytest.mark.parametrize("below", [0.1, 1e-3])
def test_a_block_on_four_feet_below_the_friction_angle_sticks_whatever_way_the_slope_runs(below, heading):
    # four feet are four contacts, each with its own cone; the downhill feet carry more of the weight, so the
    # least-norm sharing (equal friction on each foot) left the uphill ones outside their cones, and from the
    # friction's direction at 22.5° to the contact axes, the friction pyramid of the contact problem held only
    # 1/(cos 22.5° + sin 22.5°) = 77 % of the cone: the block slid on all four feet (0.33 m in 1 s at 10 %
    # below the angle), reported as success. Rigid feet stick if any sharing keeps every foot in its cone, which
    # one does exactly when tan θ ≤ μ_s: the friction in proportion to the normal forces.
    data = _data("block_on_incline_unilateral")
    th = _incline(data, 0.3 * (1 - below), math.radians(heading))
    motion, _ = _run(data, t_end=0.5, steps=25)
    xy = motion.position[:, motion.parts.index("block"), :2]
    assert np.max(np.abs(xy - xy[0])) < 1e-12
    feet = [c["name"] for c in data["contacts"]]
    friction = sum(motion.extra[f"{f}.friction_force"][-1] for f in feet)
    normal = sum(motion.extra[f"{f}.normal_force"][-1] for f in feet)
    assert normal == pytest.approx(G * math.cos(th), rel=1e-9)
    assert friction >= G * math.sin(th) * (1 - 1e-9)  # the feet's frictions (magnitudes) hold m g sin θ between them
    for f in feet:
        assert motion.extra[f"{f}.friction_force"][-1] <= 0.3 * motion.extra[f"{f}.normal_force"][-1] * (1 + 1e-9)


@pytest.mark.parametrize("heading", [0.0, 30.0, 45.0])
def test_the_block_on_four_feet_above_the_friction_angle_slides_down_the_slope_with_the_coulomb_acceleration(
        heading):
    data = _data("block_on_incline_unilateral")
    th = _incline(data, 0.3 * (1 + 1e-3), math.radians(heading))
    motion, _ = _run(data, t_end=0.5, steps=25)
    xy = motion.position[:, motion.parts.index("block"), :2]
    down = np.array([math.cos(math.radians(heading)), math.sin(math.radians(heading))])
    a = G * (math.sin(th) - 0.2 * math.cos(th))
    assert np.allclose(xy - xy[0], 0.5 * a * motion.time[:, None] ** 2 * down, atol=1e-9, rtol=0)


@pytest.mark.parametrize("integrator", ["DOP853", "Radau"])
def test_a_block_pushed_up_a_slope_steeper_than_its_friction_angle_stops_and_slides_back(integrator):
    # up the slope it slows at g (sin θ + μ_d cos θ), stops at t_s = v0 / that, then slides back at
    # g (sin θ − μ_d cos θ). At the stop every foot must start to slip at once: the contact problem's normal
    # rows are redundant (four feet, rank 3), Lemke's pivots ended on a ray, the feet were set slipping one at a
    # time, and two of them were held sticking 0.39 N beyond their cones (Radau, rtol 1e-4, the slope at 30°
    # across the feet); the block stayed where it stopped
    data = _data("block_on_incline_unilateral")
    heading = math.radians(30.0)
    th = _incline(data, 0.33, heading)
    down = np.array([math.cos(heading), math.sin(heading)])
    data["initial_velocity"] = {"block": {"velocity": [*(-1.0 * down), 0.0]}}
    motion, _ = _run(data, t_end=1.0, steps=50, integrator=integrator, rtol=1e-4, atol=1e-6)
    xy = motion.position[:, motion.parts.index("block"), :2]
    t = motion.time
    a_up, a_down = G * (math.sin(th) + 0.2 * math.cos(th)), G * (math.sin(th) - 0.2 * math.cos(th))
    t_s = 1.0 / a_up
    x_s = -0.5 / a_up
    along = np.where(t < t_s, -t + 0.5 * a_up * t ** 2, x_s + 0.5 * a_down * np.maximum(t - t_s, 0.0) ** 2)
    assert np.allclose(xy - xy[0], along[:, None] * down, atol=1e-7, rtol=0)


def test_a_box_below_the_friction_angle_sticks_when_the_slope_runs_diagonal_to_the_world_axes():
    # one contact (the box's corners) on a slope at 45° to the contact's axes: the friction pyramid of the
    # contact problem held μ_s/√2 there, so from tan θ = 0.71 μ_s the box slid at once
    data = _data("block_on_incline_unilateral")
    box = dict(data["contacts"][0])
    box.update(name="box", shape=[{"box": [0.2, 0.1, 0.1], "center": [0, 0, -0.005]}, {"plane": {}}])
    data["contacts"] = [box]
    th = _incline(data, 0.3 * 0.95, math.radians(45.0))
    motion, _ = _run(data, t_end=0.5, steps=25)
    xy = motion.position[:, motion.parts.index("block"), :2]
    assert np.max(np.abs(xy - xy[0])) < 1e-12
    assert motion.extra["box.friction_force"][-1] == pytest.approx(G * math.sin(th), rel=1e-9)


def test_friction_beyond_the_static_cone_at_a_frame_breaks_the_runs_friction_check():
    # the box sticking on the incline (tan 20° < μ_s = 0.5) carries m g sin θ of friction, inside μ_s m g cos θ:
    # the check holds; friction beyond μ_s N injected from one frame on (a stick held outside its cone) breaks
    # it there, by the excess
    from dataclasses import replace

    from cadmotion.kernel.dynamics.forward import check_run, prepare

    data = _data("block_on_incline_unilateral")
    box = dict(data["contacts"][0])
    box.update(name="box", shape=[{"box": [0.2, 0.1, 0.1], "center": [0, 0, -0.005]}, {"plane": {}}],
               friction={"static": 0.5, "dynamic": 0.4})
    data["contacts"] = [box]
    model = compile_model(parse_model(data, source="test.toml"))
    motion, result = _run(data)
    friction = [c for c in result.invariants.checks if c.name == "contacts.friction"]
    assert len(friction) == 1 and not friction[0].broken
    k0, excess = 40, 0.05 * G
    F = motion.extra["box.friction_force"].copy()
    F[k0:] = 0.5 * motion.extra["box.normal_force"][k0:] + excess
    held = replace(motion, extra={**motion.extra, "box.friction_force": F}, events=[])
    report = check_run(prepare(model)[0], held, result, formulation="projection", integrator="DOP853",
                       rtol=1e-8, atol=1e-8)
    assert [c.name for c in report.broken] == ["contacts.friction"]
    assert report.broken[0].first_time == pytest.approx(motion.time[k0])
    assert report.broken[0].max_drift == pytest.approx(excess, rel=1e-9)
    assert "friction cone" in report.broken[0].message()

def _lift_table(mu, phi=math.radians(60.0), arm=0.3):
    """A parallelogram lift table (x-y plane, gravity −y): two 1 kg arms of length ``arm`` pivoted on the
    ground at (0, 0) and (0.4, 0) at the angle phi, carrying a 2 kg platform by its two ends; the platform
    rests on a floor on four spherical feet (R = 5 mm), friction μ. Its closed loop of revolute joints is
    redundant in 3-D, and so are the feet (the platform only translates): the contact rows carry the
    round-off of the joints' elimination."""
    c, s = arm * math.cos(phi), arm * math.sin(phi)
    w, z = math.cos(phi / 2), math.sin(phi / 2)
    rod = f"inertia = [1e-6, {arm * arm / 12!r}, {arm * arm / 12!r}]\ncom = [{arm / 2!r}, 0, 0]\nmass = 1.0"
    text = f"""units = "m"
gravity = [0, -9.81, 0]
[parts.ground]
fixed = true
[parts.arm_a]
orientation = [{w!r}, 0, 0, {z!r}]
{rod}
[parts.arm_d]
position = [0.4, 0, 0]
orientation = [{w!r}, 0, 0, {z!r}]
{rod}
[parts.platform]
position = [{c!r}, {s!r}, 0]
mass = 2.0
com = [0.2, 0, 0]
inertia = [0.01, 0.03, 0.03]
"""
    for name, a, b, origin in (("A", "ground", "arm_a", (0.0, 0.0)), ("D", "ground", "arm_d", (0.4, 0.0)),
                               ("B", "arm_a", "platform", (c, s)), ("C", "arm_d", "platform", (0.4 + c, s))):
        text += f"""[[joints]]
name = "{name}"
type = "revolute"
parts = ["{a}", "{b}"]
origin = [{origin[0]!r}, {origin[1]!r}, 0]
axis = [0, 0, 1]
"""
    for k, (x, zf) in enumerate(((0.05, 0.05), (0.05, -0.05), (0.35, 0.05), (0.35, -0.05))):
        text += f"""[[contacts]]
name = "foot{k}"
parts = ["platform", "ground"]
shape = [{{ sphere = 0.005, center = [{x!r}, -0.05, {zf!r}] }}, {{ plane = {{ point = [0, {s - 0.055!r}, 0], normal = [0, 1, 0] }} }}]
friction = {mu!r}
"""
    return tomllib.loads(text)


@pytest.mark.parametrize("mu", [0.0, 0.05, 0.5])
def test_a_lift_table_resting_on_four_feet_stays_and_its_feet_push_as_the_statics_say(mu):
    # reference, by virtual work on the one-degree-of-freedom linkage (the platform translates on a circle of
    # radius l: δy = l cos φ δφ, δx = −l sin φ δφ; each arm's centre of mass rises by half that): the floor's
    # normal force N and friction F_x (along x on the platform) satisfy N cos φ + F_x sin φ = (m_p + m_a) g cos φ,
    # whichever share they take (the feet are redundant); without friction N = (m_p + m_a) g. Every foot
    # pushes (N_k ≥ 0) within its cone, no foot opens, and the table does not move. Before the contacts'
    # least squares set a rank threshold (complementarity.RCOND), the round-off of the joints' elimination
    # was inverted into feet forces of 0 to 15 N where 7.36 N is each one's share, two feet opened, and with
    # friction the contacts switched without end at t = 0.
    motion, _ = _run(_lift_table(mu), t_end=0.2, steps=4)
    phi = math.radians(60.0)
    assert not [e.message for e in motion.events if e.kind == "contact" and "→ open" in e.message]
    platform = motion.position[:, motion.parts.index("platform")]
    assert np.max(np.abs(platform - platform[0])) < 1e-12
    normal = np.array([motion.extra[f"foot{k}.normal_force"] for k in range(4)])
    friction = np.array([motion.extra[f"foot{k}.friction_force"] for k in range(4)])
    assert np.all(normal > 0) and np.all(friction <= mu * normal * (1 + 1e-9))
    # the outputs give each friction force's magnitude: |F| ≤ Σ |f_k| (a pair may also pull along ±z)
    N, F = normal.sum(0), friction.sum(0)
    assert np.all(np.abs(3.0 * G - N) * math.cos(phi) <= F * math.sin(phi) * (1 + 1e-9) + 1e-9)
    if mu == 0.0:
        assert np.allclose(normal, 3.0 * G / 4, rtol=1e-9)


def _disc(mu, v0=0.0):
    """The rolling-disc sample with friction μ and initial speed v0 down the slope."""
    data = _data("rolling_disc")
    data["contacts"][0]["friction"] = mu
    data["initial_velocity"]["disc"]["velocity"] = [v0, 0, 0]
    return data


def test_a_cylinder_rolls_down_the_incline_and_rolls_after_sliding():
    motion, _ = _run(_disc(0.5), t_end=1.0, steps=10)
    x = motion.position[:, 1, 0]
    assert np.allclose(x, G * math.sin(TH) / 3 * motion.time ** 2, atol=1e-10)
    mu, v0 = 0.2, 2.0
    a_slip = G * (math.sin(TH) - mu * math.cos(TH))
    t_star = v0 / (2 * mu * G * math.cos(TH) - a_slip)  # v0 + a t = R ω(t), ω̇ = μ m g cos θ R / I
    motion, _ = _run(_disc(mu, v0), t_end=2.0, steps=20)
    sticks = [ev.time for ev in motion.events if ev.kind == "contact" and "slip → stick" in ev.message]
    assert sticks and sticks[0] == pytest.approx(t_star, abs=1e-9)
    t = motion.time
    v_ref = np.where(t < t_star, v0 + a_slip * t, v0 + a_slip * t_star + 2 / 3 * G * math.sin(TH) * (t - t_star))
    assert np.allclose(motion.velocity[:, 1, 0], v_ref, atol=1e-9)
    # the sliding phase's friction work is in the balance
    assert motion.extra["work.nonconservative"][-1] < -1.0 and _balance(motion) < 1e-8


# ---------------------------------------------------------------------------- pairs by pattern
def test_pairs_all_glob_parts_and_ignore_expand_to_the_matching_pairs():
    data = _data("newtons_cradle")
    spec = parse_model(data, source="cradle.toml")
    assert len(spec.contacts) == 10 and spec.contacts[0].name == "balls:ball1-ball2"
    data["contacts"][0]["ignore"] = [["ball1", "ball[3-5]"], "ball5"]
    names = [c.name for c in parse_model(data, source="cradle.toml").contacts]
    assert names == ["balls:ball1-ball2", "balls:ball2-ball3", "balls:ball2-ball4", "balls:ball3-ball4"]
    del data["contacts"][0]["pairs"], data["contacts"][0]["ignore"]
    data["contacts"][0]["parts"] = ["ball1", "ball[2-3]"]
    names = [c.name for c in parse_model(data, source="cradle.toml").contacts]
    assert names == ["balls:ball1-ball2", "balls:ball1-ball3"]


@pytest.mark.parametrize("change, words", [
    (dict(parts=["ball1", "wheel*"]), ["balls", "wheel*", "matches no part"]),
    (dict(pairs="all", ignore=["ball*"]), ["balls", "no pair"]),
    (dict(pairs="some"), ["balls", "pairs", "all"]),
    (dict(pairs="all", shape=[{"sphere": 0.025}, {"sphere": 0.025}]), ["balls", "shape", "table"]),
])
def test_bad_patterns_are_refused_naming_the_contact(change, words):
    data = _data("newtons_cradle")
    entry = data["contacts"][0]
    entry.pop("pairs")
    entry.update(change)
    with pytest.raises(ModelFileError) as err:
        parse_model(data, source="cradle.toml")
    for w in words:
        assert w in str(err.value), str(err.value)


def test_every_contact_kept_in_the_equations_gives_the_same_motion():
    data = _data("newtons_cradle")
    data["contacts"][0]["restitution"] = 0.8
    model = compile_model(parse_model(data, source="cradle.toml"))
    active, _ = run(model, 0.6, 6)
    kept, _ = run(model, 0.6, 6, options={"activation": False})
    assert np.max(np.abs(active.position - kept.position)) < 1e-12
    assert [e.time for e in active.events if e.kind == "impact"] == [e.time for e in kept.events if e.kind == "impact"]


@pytest.mark.parametrize("integrator", ["RK45", "Radau"])
def test_other_error_controlled_integrators_locate_the_same_impacts(integrator):
    motion, _ = _run(_data("bouncing_ball_unilateral"), t_end=1.5, steps=3, integrator=integrator, rtol=1e-10,
                     atol=1e-12)
    hits = [ev.time for ev in motion.events if ev.kind == "impact"]
    t1 = math.sqrt(2 / G)
    assert hits[:2] == pytest.approx([t1, t1 + 2 * 0.8 * math.sqrt(2 * G) / G], abs=1e-8)


def test_unilateral_contacts_run_with_the_projection_formulation_only():
    model = compile_model(parse_model(_data("bouncing_ball_unilateral"), source="ball.toml"))
    with pytest.raises((MechanismError, SolverError), match=r"ball_floor.*projection"):
        run(model, 0.1, 1, formulation="baumgarte")
    with pytest.raises(SolverError, match="error-controlled"):
        run(model, 0.1, 1, integrator="RK4")


# ---------------------------------------------------------------------------- joint limits
def _limited_pendulum(**joint):
    """A uniform rod (1 m, 1 kg) pivoted at one end about +z, released from horizontal, gravity −y,
    its angle limited to [−π/4, 1] rad."""
    j = dict(name="pivot", type="revolute", parts=["ground", "rod"], origin=[0, 0, 0], axis=[0, 0, 1],
             limits={"angle": [-math.pi / 4, 1.0]}, **joint)
    return {"units": "m", "gravity": [0, -G, 0],
            "parts": {"ground": {"fixed": True},
                      "rod": {"position": [0, 0, 0], "mass": 1.0, "com": [0.5, 0, 0],
                              "inertia": [1e-6, 1 / 12, 1 / 12]}},
            "joints": [j]}


@pytest.mark.parametrize("e", [0.7, 0.3])
def test_pendulum_rebounds_from_a_unilateral_limit_at_minus_e_omega(e):
    I_pivot, lc, th = 1.0 / 3.0, 0.5, math.pi / 4
    omega = math.sqrt(2 * G * lc * math.sin(th) / I_pivot)  # energy from horizontal down to −π/4
    motion, _ = _run(_limited_pendulum(limit_restitution=e, limit_method="unilateral"),
                     times=np.array([0.0, 0.33, 0.35]))
    hits = [ev for ev in motion.events if ev.kind == "impact"]
    t_hit = hits[0].time
    assert f"{omega:.6g} rad/s" in hits[0].message
    # just after the impact: −e ω (the rod rebounds; gravity's change over the short interval bounded)
    motion, _ = _run(_limited_pendulum(limit_restitution=e, limit_method="unilateral"),
                     times=np.array([0.0, t_hit + 1e-7]))
    w = motion.angular_velocity[-1, 1, 2]
    assert w == pytest.approx(e * omega, abs=1e-5)
    assert abs(motion.extra["work.nonconservative"][-1] + 0.5 * I_pivot * omega ** 2 * (1 - e * e)) < 1e-6


def test_a_pendulum_at_rest_on_its_limit_carries_the_gravity_torque():
    motion, result = _run(_limited_pendulum(limit_restitution=0.5, limit_method="unilateral"), t_end=4.0, steps=4)
    assert motion.extra["pivot.limit_active"][-1] == 1.0
    assert motion.extra["pivot.limit_force"][-1] == pytest.approx(G * 0.5 * math.cos(math.pi / 4), rel=1e-8)
    assert motion.joint_coordinates[0].values[-1] == pytest.approx(-math.pi / 4, abs=1e-9)
    assert _balance(motion) < 1e-6
    assert any("unilateral joint limit" in n for n in result.notes)


def test_unilateral_limit_keys_are_checked():
    with pytest.raises(ModelFileError, match="limit_stiffness.*unilateral"):
        parse_model(_limited_pendulum(limit_method="unilateral", limit_stiffness=1e4), source="p.toml")
    with pytest.raises(ModelFileError, match="limit_method"):
        parse_model(_limited_pendulum(limit_method="rigid"), source="p.toml")


def test_the_run_summary_counts_impacts_and_json_lists_every_one(tmp_path, capsys):
    import json

    from cadmotion.plugin.cli import main

    rc = main(["run", str(SAMPLES / "bouncing_ball_unilateral.cadmotion.toml"), "--analysis", "dynamic",
               "-o", str(tmp_path / "ball.csv"), "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    events = json.loads(captured.out)["events"]
    impacts = [e for e in events if e["kind"] == "impact"]
    assert len(impacts) > 12 and impacts[0]["items"] == ["ball_floor"]
    assert captured.err.count("impact at t =") == 12
    assert f"{len(impacts) - 12} more impact event(s) ({len(impacts)} in all" in captured.err
    header = (tmp_path / "ball.csv").read_text().splitlines()[0].split(",")
    assert {"ball_floor.active", "ball_floor.normal_force"} <= set(header)


@pytest.mark.parametrize("e", [0.0, 0.6])
def test_a_slider_bounces_between_its_unilateral_limits_at_e_times_its_speed(e):
    # a 2 kg slider on a prismatic rail along x at 2 m/s, limits [−0.1, 0.1] m: impacts at x = ±0.1, each
    # rebound e times the speed (no force along the rail), times 0.05 s, then 0.2/(e·2) s later
    v0, hi = 2.0, 0.1
    data = {"units": "m", "gravity": [0, 0, -G],
            "parts": {"ground": {"fixed": True},
                      "slider": {"position": [0, 0, 0], "mass": 2.0, "inertia": [0.01, 0.01, 0.01]}},
            "joints": [dict(name="rail", type="prismatic", parts=["ground", "slider"], origin=[0, 0, 0],
                            axis=[1, 0, 0], limits={"disp": [-hi, hi]}, limit_restitution=e,
                            limit_method="unilateral")],
            "initial_velocity": {"slider": {"velocity": [v0, 0, 0]}}}
    motion, _ = _run(data, t_end=0.3, steps=3)
    hits = [ev.time for ev in motion.events if ev.kind == "impact"]
    expected = [hi / v0] + ([hi / v0 + 2 * hi / (e * v0)] if e else [])
    assert hits == pytest.approx(expected, abs=1e-10)
    # after two impacts (e > 0) it moves at +e² v0; plastic (e = 0): it rests on the upper limit
    assert motion.velocity[-1, 1, 0] == pytest.approx(e * e * v0, abs=1e-10)
    assert motion.coordinate("rail.disp")[-1] == pytest.approx(hi if not e else -hi + e * e * v0 * (0.3 - hits[-1]),
                                                                abs=1e-10)
    assert motion.extra["work.nonconservative"][-1] == pytest.approx(-0.5 * 2.0 * v0 ** 2 * (1 - e ** 4), rel=1e-9)


def test_the_contact_point_of_a_ball_gliding_on_the_floor_follows_it_on_the_floor():
    """Frictionless, resting on z = 0 and moving at 0.5 m/s along x: the contact is active at every
    frame and its point is (0.3 + 0.5 t, −0.2, 0) m, under the ball's centre."""
    spec = parse_model({"units": "m", "gravity": [0, 0, -G],
                        "parts": {"floor": {"fixed": True},
                                  "ball": {"position": [0.3, -0.2, 0.05], "mass": 1.0, "inertia": [1e-3] * 3}},
                        "initial_velocity": {"ball": {"velocity": [0.5, 0.0, 0.0]}},
                        "contacts": [{"name": "ball_floor", "parts": ["ball", "floor"],
                                      "shape": [{"sphere": 0.05}, {"plane": {}}]}]}, source="gliding ball")
    motion, _ = run(compile_model(spec), 1.0, 10)
    ex = motion.extra
    assert np.all(ex["ball_floor.active"] == 1.0)
    assert np.allclose(ex["ball_floor.point_x"], 0.3 + 0.5 * motion.time, atol=1e-9)
    assert np.allclose(ex["ball_floor.point_y"], -0.2, atol=1e-9)
    assert np.allclose(ex["ball_floor.point_z"], 0.0, atol=1e-9)


def _ball_and_block(position, velocity, gravity=-G, box=(0.4, 0.3, 0.2), e=0.8, **contact):
    """A 1 kg ball (R = 0.05 m) and a fixed box (edges ``box``, its bottom face centred on the origin)."""
    c = {"name": "ball_block", "parts": ["ball", "block"], "restitution": e,
         "shape": [{"sphere": 0.05}, {"box": list(box), "center": [0, 0, box[2] / 2]}], **contact}
    return compile_model(parse_model({
        "units": "m", "gravity": [0, 0, gravity],
        "parts": {"block": {"fixed": True}, "ball": {"position": list(position), "mass": 1.0, "inertia": [1e-3] * 3}},
        "initial_velocity": {"ball": {"velocity": list(velocity)}}, "contacts": [c]}, source="ball and block"))


def _impacts(motion):
    return [(ev.time, float(re.search(r"impact at ([0-9.e+-]+)", ev.message).group(1)))
            for ev in motion.events if ev.kind == "impact"]


def test_a_ball_dropped_on_a_box_bounces_off_its_top_face_as_off_a_floor():
    """Dropped 0.5 m onto the top (z = 0.2 m): first impact at sqrt(2 h / g), then at e times the speed."""
    motion, _ = run(_ball_and_block([0.05, 0.02, 0.75], [0, 0, 0]), 1.2, 12)
    (t1, v1), (t2, v2) = _impacts(motion)[:2]
    assert t1 == pytest.approx(math.sqrt(2 * 0.5 / G), abs=1e-9)
    v_touch = math.sqrt(2 * G * 0.5)
    assert v1 == pytest.approx(v_touch, rel=5e-6) and v2 == pytest.approx(0.8 * v_touch, rel=5e-6)  # printed to 6 digits
    assert t2 - t1 == pytest.approx(2 * 0.8 * v_touch / G, abs=1e-9)


@pytest.mark.parametrize("direction, normal", [((-1, 0, 0), (1, 0, 0)),                    # onto the face x = 0.2
                                               ((-1, -1, 0), (1, 1, 0))])                  # onto the edge (0.2, 0.15)
def test_a_ball_thrown_at_a_box_side_or_edge_rebounds_along_the_normal_there(direction, normal):
    """No gravity; the ball's centre aimed at the face's centre or square at the vertical edge: the
    normal is the face's or the diagonal, so the speed along it comes back times e, the rest kept."""
    d, n = np.array(direction, float), np.array(normal, float)
    d, n = d / np.linalg.norm(d), n / np.linalg.norm(n)
    target = np.array([0.2, 0.0, 0.1]) if normal[1] == 0 else np.array([0.2, 0.15, 0.1])
    start = target - 0.3 * d
    motion, _ = run(_ball_and_block(start, d, gravity=0.0), 0.5, 5)
    [(t1, v1)] = _impacts(motion)
    assert t1 == pytest.approx((0.3 - 0.05) / 1.0, abs=1e-9) and v1 == pytest.approx(1.0, rel=1e-6)
    v_end = np.asarray(motion.velocity).reshape(motion.nt, 2, 3)[-1, motion.parts.index("ball")]
    assert np.allclose(v_end, d - (1 + 0.8) * (d @ n) * n, atol=1e-9)


def test_a_fast_ball_does_not_pass_through_a_thin_plate_between_two_steps():
    """20 m/s at a 5 mm plate 1 m away, no gravity: the step is bounded by the gap, so the impact is
    found (at (1 − R − 2.5 mm) / 20 s) instead of the ball tunnelling through."""
    motion, _ = run(_ball_and_block([-1.0, 0.0, 0.1], [20.0, 0.0, 0.0], gravity=0.0, box=(0.005, 0.3, 0.2)), 0.2, 2)
    [(t1, v1)] = _impacts(motion)
    assert t1 == pytest.approx((1.0 - 0.05 - 0.0025) / 20.0, abs=1e-9) and v1 == pytest.approx(20.0, rel=1e-6)
