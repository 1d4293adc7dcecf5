"""Declared contacts, compliant method (issue 16), against independent references.

References: the closed-form free fall and bounce of a ball (impact time sqrt(2 h0/g), apex
e² h0), a direct integration of the point-mass Hunt–Crossley equation (restitution), the
closed-form sliding of a block on an incline a = g (sin θ − μ_d cos θ) and its sticking when
tan θ < μ_s, the central impact of two spheres (momentum and Newton's restitution law), and
the energy balance E − E0 − W_nc with W_nc the contacts' dissipated work.
"""

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from cadmotion.errors import MechanismError, ModelFileError, SolverError
from cadmotion.importers.modelfile import parse_model, read_model_file
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import simulate
from cadmotion.kernel.dynamics.contacts import restitution_factor

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "dynamics"
G = 9.81


def _sample(name, **changes):
    """The sample's parsed TOML with top-level or per-contact changes (``contact=dict``)."""
    data = tomllib.loads((SAMPLES / f"{name}.cadmotion.toml").read_text())
    for c in data.get("contacts", []):
        c.update(changes.get("contact", {}))
    return data


# ---------------------------------------------------------------------------- the force law
@pytest.mark.parametrize("e", [0.3, 0.8, 0.95])
def test_restitution_factor_rebounds_a_point_mass_with_that_restitution(e):
    # m δ̈ = −k δ^n (1 + α δ̇), α = ξ(e)/v0, from δ = 0 at speed v0 until δ = 0 again (scipy, tight)
    m, k, n, v0 = 0.7, 3e5, 1.5, 2.3
    alpha = restitution_factor(e) / v0

    def f(t, y):
        d = max(y[0], 0.0)
        return [y[1], -k * d ** n * (1 + alpha * y[1]) / m]

    out = lambda t, y: y[0] if t > 1e-6 else 1.0  # noqa: E731
    out.terminal, out.direction = True, -1
    sol = solve_ivp(f, (0, 1), [0.0, v0], events=out, rtol=1e-12, atol=1e-14, method="DOP853")
    assert sol.t_events[0].size == 1
    assert -sol.y_events[0][0][1] / v0 == pytest.approx(e, abs=1e-6)


def test_restitution_factor_tends_to_hunt_crossley_linearised_form():
    # α v0 = 3 (1 − e)/2 to first order in 1 − e (Hunt & Crossley 1975)
    for e in (0.999, 0.99):
        assert restitution_factor(e) == pytest.approx(1.5 * (1 - e), rel=2 * (1 - e))


# ---------------------------------------------------------------------------- bouncing ball
H0, R, E_REST, K, M = 1.0, 0.05, 0.8, 1e7, 1.0


def _hertz_duration(v):
    """Duration (s) of an undamped Hertz impact of the ball at speed v: 2.9432 δmax / v."""
    dmax = (5 * M * v * v / (4 * K)) ** 0.4
    return 2.9432 * dmax / v


@pytest.fixture(scope="module")
def ball():
    model = compile_model(read_model_file(SAMPLES / "bouncing_ball.cadmotion.toml"))
    return simulate(model, times=np.linspace(0.0, 2.0, 4001), rtol=1e-8, atol=1e-10)


def test_ball_first_touches_the_floor_at_the_free_fall_time(ball):
    assert ball.complete, ball.message
    t = ball.time
    active = ball.extra["ball_floor.active"]
    t1 = math.sqrt(2 * H0 / G)
    first = t[np.argmax(active > 0)]
    # the first frame in contact is the first output frame after t1 (frames every 0.5 ms, below
    # the contact's duration)
    v1 = G * t1
    assert t1 <= first <= t1 + (t[1] - t[0]) + 1e-12
    assert t[1] - t[0] < _hertz_duration(v1)
    assert np.all(active[t < t1] == 0)


def _apexes(motion):
    """Heights (m) of the ball's lowest point at the tops of its flights after each bounce."""
    z = motion.position[:, motion.parts.index("ball"), 2] - R
    vz = motion.velocity[:, motion.parts.index("ball"), 2]
    tops = np.flatnonzero((vz[:-1] > 0) & (vz[1:] <= 0))
    return np.array([z[i: i + 2].max() for i in tops])


def test_ball_rebounds_to_e_squared_times_its_drop_height(ball):
    apex = _apexes(ball)
    assert len(apex) >= 2
    v = math.sqrt(2 * G * H0)
    for k, h in enumerate(apex[:2]):
        # gravity acts during the contact too: the rebound speed e v differs from the contact-only
        # one by at most g t_c, so |h / h_ref − 1| ≤ 2 g t_c/(e v) (t_c the Hertz duration at v);
        # plus the output sampling of the apex (0.5 ms frames at zero vertical speed: g dt²/2)
        ref = E_REST ** (2 * (k + 1)) * H0
        tol = 2 * G * _hertz_duration(v) / (E_REST * v) * ref + G * 0.0005 ** 2
        assert abs(h - ref) <= tol, (k, h, ref, tol)
        v *= E_REST


def test_ball_energy_never_rises_and_its_loss_is_the_contact_work(ball):
    ex = ball.extra
    T, V, W = ex["energy.kinetic"], ex["energy.potential"], ex["work.nonconservative"]
    E = T + V
    assert np.all(np.diff(E) <= 1e-7)  # mechanical energy (elastic contact energy included) never rises
    assert np.all(np.diff(W) <= 1e-12)  # the contact only takes energy out
    assert np.max(np.abs(E - E[0] - W)) < 1e-6
    # after the first bounce the ball has lost (1 − e²) of its energy to the contact, up to the
    # same gravity-during-contact effect as the apex
    v = math.sqrt(2 * G * H0)
    after = (ball.time > 0.6) & (ball.time < 1.0)
    loss = -W[after][0] / (M * G * H0)
    assert loss == pytest.approx(1 - E_REST ** 2, abs=2 * G * _hertz_duration(v) / v)


def test_ball_outputs_name_every_contact_quantity(ball):
    ex = ball.extra
    for c in ("active", "normal_force", "friction_force", "slip_velocity", "penetration"):
        assert f"ball_floor.{c}" in ex
    inside = ex["ball_floor.active"] > 0
    # force and penetration only while touching
    assert np.all(ex["ball_floor.normal_force"][~inside] == 0) and np.all(ex["ball_floor.penetration"][~inside] == 0)
    # penetration from the ball's height; during the first impact the force is Hunt–Crossley's
    # k δ^1.5 (1 + ξ(e) δ̇/v1) with δ̇ = −v_z and v1 = sqrt(2 g h0) the free-fall impact speed
    z = ball.position[:, ball.parts.index("ball"), 2]
    vz = ball.velocity[:, ball.parts.index("ball"), 2]
    assert np.allclose(ex["ball_floor.penetration"], np.maximum(R - z, 0.0), atol=1e-15)
    first = inside & (ball.time < 0.6)
    assert first.sum() >= 5
    v1 = math.sqrt(2 * G * H0)
    delta = R - z[first]
    law = K * delta ** 1.5 * (1 - restitution_factor(E_REST) * vz[first] / v1)
    assert np.allclose(ex["ball_floor.normal_force"][first], law, rtol=1e-3)
    assert np.all(ex["ball_floor.friction_force"] < 1e-9)  # a vertical bounce has no slip


@pytest.mark.parametrize("steps, rtol", [(2, 1e-6), (2, 1e-8), (400, 1e-6), (40, 1e-10)])
def test_ball_is_never_stepped_over_whatever_the_output_interval_or_tolerance(steps, rtol):
    # two output frames over 2 s (the integrator free to take long steps) or many: the same
    # bounce, the same final state to the tolerance's order
    model = compile_model(read_model_file(SAMPLES / "bouncing_ball.cadmotion.toml"))
    m = simulate(model, t_end=2.0, steps=steps, rtol=rtol, atol=rtol * 1e-2)
    ref = simulate(model, t_end=2.0, steps=2, rtol=1e-11, atol=1e-13)
    assert m.complete and ref.complete
    assert m.position[-1, m.parts.index("ball"), 2] == pytest.approx(ref.position[-1, ref.parts.index("ball"), 2], abs=2e3 * rtol + 2e-6)
    # (the impact speed each contact records depends on where its first step lands, ≤ 1e-3 of the
    # contact's duration in: ~1e-6 relative per impact)
    assert m.velocity[-1, m.parts.index("ball"), 2] == pytest.approx(ref.velocity[-1, ref.parts.index("ball"), 2], abs=2e3 * rtol + 2e-5)
    # and the bounce happened: at 2 s the ball has lost energy to three impacts
    assert ref.extra["work.nonconservative"][-1] < -0.6 * M * G * H0


# ---------------------------------------------------------------------------- block on incline
THETA = math.radians(20.0)


def _block(mu_s, mu_d, vs=None):
    contact = dict(friction=dict(static=mu_s, dynamic=mu_d))
    if vs is not None:
        contact["stiction_velocity"] = vs
    data = _sample("block_on_incline", contact=contact)
    return compile_model(parse_model(data, source="block_on_incline (test)"))


def test_block_slides_with_the_coulomb_acceleration():
    mu_s, mu_d = 0.3, 0.2
    assert math.tan(THETA) > mu_s
    m = simulate(_block(mu_s, mu_d), t_end=1.0, steps=50, rtol=1e-8, atol=1e-10)
    assert m.complete, m.message
    t, v = m.time, m.velocity[:, m.parts.index("block"), 0]
    a_ref = G * (math.sin(THETA) - mu_d * math.cos(THETA))
    # after the feet settle (a few ms) the slip speed is far above the stiction velocity: μ = μ_d
    sel = t >= 0.2
    a = np.polyfit(t[sel], v[sel], 1)[0]
    assert a == pytest.approx(a_ref, rel=1e-4)
    x = m.position[:, m.parts.index("block"), 0]
    assert x[-1] == pytest.approx(0.5 * a_ref * t[-1] ** 2, rel=2e-3)
    # the four normal forces carry the weight's normal component
    N = sum(m.extra[f"foot_{p}.normal_force"][-1] for p in ("front_left", "front_right", "back_left", "back_right"))
    assert N == pytest.approx(M * G * math.cos(THETA), rel=1e-4)
    assert np.all(np.diff(m.extra["work.nonconservative"]) <= 1e-12)


def test_block_sticks_when_the_slope_is_below_the_static_friction_angle():
    mu_s, mu_d, vs = 0.5, 0.4, 1e-3
    assert math.tan(THETA) < mu_s
    m = simulate(_block(mu_s, mu_d, vs), t_end=0.5, steps=10, rtol=1e-8, atol=1e-10)
    assert m.complete, m.message
    # after the feet settle (the first frame, 50 ms; they slip while the normal force builds up)
    # the regularised law holds it with a creep below the stiction velocity: |Δx| ≤ v_s Δt, where a
    # slide would cover ½ g (sin θ − μ_d cos θ) t² (negative here: no slide is possible)
    x = m.position[:, m.parts.index("block"), 0]
    assert abs(x[1] - x[0]) < 1e-4
    assert np.all(np.abs(x[1:] - x[1]) <= vs * (m.time[1:] - m.time[1]) + 1e-9)
    assert np.all(np.abs(m.velocity[-3:, m.parts.index("block"), 0]) < vs)
    for p in ("front_left", "back_right"):
        assert np.all(m.extra[f"foot_{p}.slip_velocity"][1:] < vs)


# ---------------------------------------------------------------------------- two spheres
def _two_balls(e, v0=1.0):
    return {
        "units": "m",
        "parts": {"a": {"position": [0, 0, 0], "mass": 1.0, "inertia": [4e-4] * 3},
                  "b": {"position": [0.3, 0, 0], "mass": 2.0, "inertia": [8e-4] * 3}},
        "initial_velocity": {"a": {"velocity": [v0, 0, 0]}},
        "contacts": [{"name": "ab", "parts": ["a", "b"], "shape": [{"sphere": 0.05}, {"sphere": 0.05}],
                      "method": "compliant", "restitution": e, "stiffness": 1e6, "exponent": 1.5}],
    }


@pytest.mark.parametrize("e", [1.0, 0.6])
def test_central_impact_of_two_spheres_follows_newtons_law(e):
    m1, m2, v0 = 1.0, 2.0, 1.0
    model = compile_model(parse_model(_two_balls(e, v0), source="two balls"))
    m = simulate(model, t_end=0.5, steps=5, rtol=1e-9, atol=1e-11)
    assert m.complete, m.message
    va, vb = m.velocity[-1, m.parts.index("a"), 0], m.velocity[-1, m.parts.index("b"), 0]
    # momentum, and the separation speed e times the approach speed (point masses: exact)
    assert m1 * va + m2 * vb == pytest.approx(m1 * v0, abs=1e-8)
    assert vb - va == pytest.approx(e * v0, abs=1e-5)
    assert m.extra["ab.active"][-1] == 0


# ---------------------------------------------------------------------------- bad input
def _ball_data(**contact):
    data = _sample("bouncing_ball")
    data["contacts"][0].update(contact)
    return data


@pytest.mark.parametrize("change, words", [
    (dict(method="unilateral"), ["ball_floor", "stiffness", "unilateral", "compliant"]),
    (dict(parts=["ball", "nowhere"]), ["ball_floor", "unknown part", "nowhere"]),
    (dict(restitution=-0.1), ["ball_floor", "restitution", "negative"]),
    (dict(friction=-0.2), ["ball_floor", "friction", "negative"]),
    (dict(friction={"static": 0.2, "dynamic": 0.3}), ["ball_floor", "dynamic", "static"]),
    (dict(shape=[{"cylinder": [1, 1]}, {"box": [1, 1, 1]}]), ["ball_floor", "cylinder", "box", "not built"]),
    (dict(shape=[{"plane": {}}, {"plane": {}}]), ["ball_floor", "plane", "not built"]),
    (dict(shape=[{"sphere": 0.05}]), ["ball_floor", "shape"]),
])
def test_bad_contact_tables_are_refused_naming_the_contact(change, words):
    with pytest.raises(ModelFileError) as err:
        parse_model(_ball_data(**change), source="ball.toml")
    text = str(err.value)
    for w in words:
        assert w in text, text


def test_a_missing_method_is_the_unilateral_default_which_takes_no_compliant_keys():
    data = _ball_data()
    del data["contacts"][0]["method"]
    with pytest.raises(ModelFileError, match="stiffness.*default"):
        parse_model(data, source="ball.toml")


def test_contact_between_welded_or_fixed_parts_is_refused():
    data = _ball_data()
    data["joints"] = [{"name": "glue", "type": "fixed", "parts": ["floor", "ball"], "origin": [0, 0, 1.05]}]
    with pytest.raises(MechanismError, match=r"ball_floor.*welded.*glue"):
        simulate(compile_model(parse_model(data, source="ball.toml")), t_end=0.01, steps=1)
    data = _ball_data()
    data["parts"]["ball"]["fixed"] = True
    with pytest.raises(MechanismError, match=r"ball_floor.*both fixed"):
        simulate(compile_model(parse_model(data, source="ball.toml")), t_end=0.01, steps=1)


def test_parts_that_start_interpenetrating_are_refused_with_the_depth_and_pair():
    data = _ball_data()
    data["parts"]["ball"]["position"] = [0, 0, 0.04]
    with pytest.raises(MechanismError, match=r"ball_floor.*'ball' and 'floor'.*0\.01 m"):
        simulate(compile_model(parse_model(data, source="ball.toml")), t_end=0.01, steps=1)


def test_formulations_that_cannot_record_impact_speeds_refuse_restitution_contacts():
    model = compile_model(read_model_file(SAMPLES / "bouncing_ball.cadmotion.toml"))
    with pytest.raises(SolverError, match=r"(?s)ball_floor.*damping"):
        simulate(model, t_end=0.01, steps=1, formulation="index3")


def test_damping_form_runs_in_index3_and_dissipates():
    data = _ball_data()
    del data["contacts"][0]["restitution"]
    data["contacts"][0]["damping"] = 5e5  # N s/m^2.5: α = 0.05 s/m, e ≈ 1 − (2/3) α v ≈ 0.85 at 4.4 m/s
    model = compile_model(parse_model(data, source="ball.toml"))
    # (4,000 steps; the estimate's companion, 8,000 more, is left out: the balance below is the check)
    m = simulate(model, t_end=0.8, steps=160, formulation="index3", dt=2e-4, estimate_error=False)
    assert m.complete, m.message
    W = m.extra["work.nonconservative"]
    assert W[-1] < -0.05 * M * G * H0  # the damper took energy at the impact
    E = m.extra["energy.total"]
    assert np.max(np.abs(E - E[0] - W)) < 0.01 * M * G * H0


# ---------------------------------------------------------------------------- tangent
def test_contact_tangent_is_the_hertz_stiffness_and_hunt_crossley_damping():
    # a ball pressed δ into a fixed floor, at rest: K_zz = n k δ^(n−1), D_zz = λ δ^n (closed form,
    # d/dδ of k δ^n + λ δ^n δ̇ with δ̇ = −v_z); no moment about the centre, nothing from rotating it
    from cadmotion.kernel.dynamics.equations import Dynamics
    from cadmotion.kernel.dynamics.mass import body_state

    lam, delta = 5e5, 2e-3
    data = _ball_data(friction=0.0)
    del data["contacts"][0]["restitution"]
    data["contacts"][0]["damping"] = lam
    model = compile_model(parse_model(data, source="ball.toml"))
    dyn = Dynamics(model)
    q = model.q0.copy()
    b = dyn.model.body_index("ball")
    q[7 * b + 2] = R - delta
    bs = body_state(model, dyn.mass, q, np.zeros(dyn.nv))
    refs = np.zeros(1)
    Kt, Dt = dyn.forces.tangent(bs, 0.0, refs)
    rows = slice(6 * b, 6 * b + 6)
    Kb, Db = Kt[rows, rows], Dt[rows, rows]
    assert Kb[2, 2] == pytest.approx(1.5 * K * delta ** 0.5, rel=1e-6)
    assert Db[2, 2] == pytest.approx(lam * delta ** 1.5, rel=1e-6)
    others = np.ones((6, 6), bool)
    others[2, 2] = False
    assert np.max(np.abs(Kb[others])) < 1e-6 * Kb[2, 2]
    assert np.max(np.abs(Db[others])) < 1e-6 * Db[2, 2]


@pytest.mark.parametrize("integrator", ["Radau", "BDF"])
def test_implicit_integrators_bounce_the_ball_like_the_explicit_one(ball, integrator):
    model = compile_model(read_model_file(SAMPLES / "bouncing_ball.cadmotion.toml"))
    m = simulate(model, t_end=1.0, steps=200, integrator=integrator, rtol=1e-7, atol=1e-9)
    assert m.complete, m.message
    z = m.position[:, m.parts.index("ball"), 2]
    ref = np.interp(m.time, ball.time, ball.position[:, ball.parts.index("ball"), 2])
    assert np.max(np.abs(z - ref)) < 1e-3


def test_a_box_slides_down_the_incline_on_its_corners_with_the_coulomb_acceleration():
    # the block as one box contact (its bottom face touching the incline at t = 0): the four
    # bottom corners carry it, the top four never touch
    mu_s, mu_d = 0.3, 0.2
    data = _sample("block_on_incline")
    first = dict(data["contacts"][0])
    first.update(name="box", shape=[{"box": [0.2, 0.1, 0.11]}, {"plane": {"normal": [0, 0, 1]}}],
                 friction={"static": mu_s, "dynamic": mu_d})
    data["contacts"] = [first]
    m = simulate(compile_model(parse_model(data, source="box on incline")), t_end=1.0, steps=50, rtol=1e-8,
                 atol=1e-10)
    assert m.complete, m.message
    t, v = m.time, m.velocity[:, m.parts.index("block"), 0]
    sel = t >= 0.2
    a = np.polyfit(t[sel], v[sel], 1)[0]
    assert a == pytest.approx(G * (math.sin(THETA) - mu_d * math.cos(THETA)), rel=1e-4)
    assert m.extra["box.normal_force"][-1] == pytest.approx(M * G * math.cos(THETA), rel=1e-4)
    assert m.extra["box.friction_force"][-1] == pytest.approx(mu_d * M * G * math.cos(THETA), rel=1e-4)
    assert np.all(m.extra["box.active"][1:] == 1)


def test_a_compliant_cylinder_lying_on_a_plane_settles_on_its_two_rims():
    # each rim carries half the weight: k δ^n = m g / 2 (a closed form for the static penetration)
    k, n, m = 1e6, 1.5, 2.0
    data = {"units": "m", "gravity": [0, 0, -G],
            "parts": {"floor": {"fixed": True},
                      "disc": {"position": [0, 0, 0.1], "orientation": [math.sqrt(0.5), math.sqrt(0.5), 0, 0],
                               "mass": m, "inertia": [0.01125, 0.01125, 0.01]}},
            "contacts": [{"name": "disc_floor", "parts": ["disc", "floor"], "method": "compliant",
                          "shape": [{"cylinder": [0.1, 0.05]}, {"plane": {}}], "stiffness": k, "exponent": n,
                          "damping": 5e7}]}  # about critically damped at the static penetration
    motion = simulate(compile_model(parse_model(data, source="disc.toml")), t_end=1.0, steps=4)
    assert motion.complete, motion.message
    delta = (m * G / (2 * k)) ** (1 / n)
    assert motion.extra["disc_floor.normal_force"][-1] == pytest.approx(m * G, rel=1e-6)
    assert motion.extra["disc_floor.penetration"][-1] == pytest.approx(delta, rel=1e-5)
    assert motion.position[-1, motion.parts.index("disc"), 2] == pytest.approx(0.1 - delta, abs=1e-8)


def test_a_compliant_ball_comes_to_rest_on_a_box_top_at_its_static_hertz_depth():
    """k = 1e7 N/m^1.5: at rest F_n = m g and the ball sits δ = (m g / k)^(2/3) into the top face."""
    spec = parse_model({"units": "m", "gravity": [0, 0, -G],
                        "parts": {"block": {"fixed": True},
                                  "ball": {"position": [0.1, -0.05, 0.2 + 0.05 + 0.01], "mass": 1.0,
                                           "inertia": [1e-3] * 3}},
                        "contacts": [{"name": "ball_block", "parts": ["ball", "block"], "method": "compliant",
                                      "stiffness": 1e7, "exponent": 1.5, "damping": 5e7,
                                      "shape": [{"sphere": 0.05}, {"box": [0.4, 0.3, 0.2], "center": [0, 0, 0.1]}]}]},
                       source="ball on block")
    motion = simulate(compile_model(spec), 1.5, 15)
    depth = (G / 1e7) ** (2 / 3)
    assert motion.extra["ball_block.normal_force"][-1] == pytest.approx(G, rel=1e-4)
    assert motion.extra["ball_block.penetration"][-1] == pytest.approx(depth, rel=1e-4)
    z = np.asarray(motion.position).reshape(motion.nt, 2, 3)[-1, motion.parts.index("ball"), 2]
    assert z == pytest.approx(0.25 - depth, abs=1e-9)


@pytest.mark.parametrize("rtol", [1e-6, 1e-8])
def test_lsoda_meets_a_compliant_contact_it_starts_far_from_and_keeps_the_energy(rtol):
    # a ball (R = 0.02 m, 0.3 kg, no gravity) glancing 2.5 mm deep off a fixed cube's edge at 1 m/s, undamped
    # (k = 1e7, n = 1.5): LSODA reads its largest step only when it starts, and from the far start it strode
    # over the contact and ended inside the cube with 833 times its energy; it is now made again where the
    # contacts' step limit halves or doubles
    from cadmotion.kernel.dynamics.forward import run

    R, m, h, miss = 0.02, 0.3, 0.05, 0.0025
    p, d = np.array([1.0, 0, 1.0]) / math.sqrt(2), np.array([1.0, 0, -1.0]) / math.sqrt(2)
    c0 = np.array([h, 0, h]) + (R - miss) * p - 0.1 * d
    model = compile_model(parse_model({
        "units": "m", "gravity": [0, 0, 0],
        "parts": {"block": {"fixed": True},
                  "ball": {"position": c0.tolist(), "mass": m, "inertia": [0.4 * m * R * R] * 3}},
        "initial_velocity": {"ball": {"velocity": d.tolist()}},
        "contacts": [{"name": "c", "parts": ["ball", "block"], "method": "compliant", "damping": 0.0,
                      "stiffness": 1e7, "exponent": 1.5, "shape": [{"sphere": R}, {"box": [0.1, 0.1, 0.1]}]}]},
        source="glance"))
    motion, result = run(model, 0.2, 50, integrator="LSODA", rtol=rtol, atol=rtol / 100)
    assert motion.complete and not result.invariants.broken
    v = motion.velocity[:, motion.parts.index("ball")]
    assert np.linalg.norm(v[-1]) == pytest.approx(1.0, rel=1e-4)  # elastic: it leaves at its speed
    assert v[-1] @ p > 1e-3  # and pushed off along the edge's normal: it met the contact
    E = motion.extra["energy.total"]
    assert np.max(np.abs(E - E[0])) < 1e-4 * E[0]
