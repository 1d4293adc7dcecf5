"""Cam pairs: a follower kept on a cam, checked against closed forms.

The cam is an eccentric disc (radius R, centre e off the shaft): its followers' lifts are
known exactly — a flat face e(1 − cos θ), a roller or point on the line through the shaft
−e cos θ + sqrt((R + r)² − e² sin²θ) (shifted to 0 at θ = 0) — and so is the contact force
of a spring-loaded flat follower, N = m s̈ + k (c0 + s), whose sign change is the lift-off.
"""

import math

import numpy as np
import pytest

from cadmotion.errors import ModelFileError
from cadmotion.importers import load
from cadmotion.kernel import compile_model, kinematics
from cadmotion.kernel.cams import CamCode, CamLaw, lift_law
from cadmotion.kernel.dynamics import inverse_dynamics

R, E = 0.040, 0.010  # m: the disc's radius and eccentricity


def disc(n=72, radius=R, ecc=E):
    """Points of the eccentric disc's outline, its centre at (0, −e) at θ = 0 (m)."""
    ph = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    return np.column_stack([radius * np.cos(ph), -ecc + radius * np.sin(ph)])


def exact_lift(theta, shape, r=0.0):
    cx, cy = E * np.sin(theta), -E * np.cos(theta)
    s = cy + (R if shape == "flat" else np.sqrt((R + r) ** 2 - cx**2))
    s0 = -E + (R if shape == "flat" else R + r)
    return s - s0


@pytest.mark.parametrize("shape,r", [("flat", 0.0), ("point", 0.0), ("roller", 0.008)])
def test_lift_law_from_a_sampled_disc_matches_the_closed_form(shape, r):
    law = lift_law(disc(), shape, radius=r, point=(0.0, 0.0), direction=(0.0, 1.0))
    theta = np.linspace(-3.0, 9.0, 241)  # beyond one turn: the law is periodic
    np.testing.assert_allclose(law(theta), exact_lift(theta, shape, r), atol=1e-11)
    h = 1e-4  # the law's derivatives against differences of the closed form
    d1 = (exact_lift(theta + h, shape, r) - exact_lift(theta - h, shape, r)) / (2 * h)
    d2 = (exact_lift(theta + h, shape, r) - 2 * exact_lift(theta, shape, r) + exact_lift(theta - h, shape, r)) / h**2
    np.testing.assert_allclose(law(theta, 1), d1, atol=1e-9)
    np.testing.assert_allclose(law(theta, 2), d2, atol=2e-8)


def test_cam_code_jacobian_and_gamma_match_finite_differences():
    """Φq by central differences in q; γ = −d²Φ/dt² along q + q̇ t (q̈ = 0)."""
    rng = np.random.default_rng(3)
    law = CamLaw(np.linspace(0, 2 * np.pi, 24, endpoint=False),
                 0.01 * np.sin(np.linspace(0, 2 * np.pi, 24, endpoint=False)) + 0.003)
    for follower in ("disp", "angle"):
        code = CamCode([law], follower)
        n = 2
        Q = np.zeros((n, 28))
        for k in range(4):
            Q[:, 7 * k:7 * k + 3] = rng.normal(size=(n, 3))
            p = rng.normal(size=(n, 4))
            Q[:, 7 * k + 3:7 * k + 7] = p / np.linalg.norm(p, axis=1, keepdims=True)
        QD = rng.normal(size=Q.shape)
        M = np.zeros((n, 48))
        for k in range(4):
            M[:, 12 * k:12 * k + 3] = rng.normal(size=(n, 3))
            M[:, 12 * k + 3:12 * k + 12] = np.eye(3).reshape(-1)
        S, F, W = np.zeros((n, 1)), np.zeros((n, 3)), np.zeros((n, 2 if follower == "angle" else 1))
        J = code.jac(Q, M, S, F, W)[:, 0]
        h = 1e-6
        for c in range(28):
            dq = np.zeros_like(Q)
            dq[:, c] = h
            fd = (code.phi(Q + dq, M, S, F, W) - code.phi(Q - dq, M, S, F, W))[:, 0] / (2 * h)
            np.testing.assert_allclose(J[:, c], fd, atol=1e-7)
        h = 1e-4
        d2 = (code.phi(Q + h * QD, M, S, F, W) - 2 * code.phi(Q, M, S, F, W) + code.phi(Q - h * QD, M, S, F, W))
        np.testing.assert_allclose(code.gamma(Q, QD, M, S, F, W), -d2 / h**2, atol=1e-5 * (1 + np.abs(d2 / h**2).max()))
        assert np.all(code.phit(Q, M, S, F, W) == 0)


CAM_FILE = """
units = "mm"
gravity = [0, 0, 0]
[parts.ground]
fixed = true
[parts.cam]
position = [0, 0, 0]
mass = 0.5
inertia = [1e-4, 1e-4, 2e-4]
[parts.follower]
position = [0, 30, 0]
mass = 0.2
inertia = [1e-5, 1e-5, 1e-5]
[[joints]]
name = "shaft"
type = "revolute"
parts = ["ground", "cam"]
origin = [0, 0, 0]
axis = [0, 0, 1]
[[joints]]
name = "slide"
type = "prismatic"
parts = ["ground", "follower"]
origin = [0, 30, 0]
axis = [0, 1, 0]
[[joints]]
name = "contact"
type = "cam"
joints = ["shaft", "slide"]
FOLLOWER
profile = PROFILE
[[forces]]
name = "return_spring"
type = "spring-damper"
parts = ["ground", "follower"]
points = [[0, 100, 0], [0, 30, 0]]
stiffness = 200
free_length = 90
[[drivers]]
joint = "shaft"
expression = "OMEGA*t"
"""


def cam_model(tmp_path, follower='follower = "flat"', omega=2 * np.pi, **edits):
    pts = np.column_stack([disc() * 1e3, np.zeros(72)]).round(9).tolist()
    text = CAM_FILE.replace("FOLLOWER", follower).replace("PROFILE", str(pts)).replace("OMEGA", repr(omega))
    for old, new in edits.items():
        text = text.replace(old, new)
    path = tmp_path / "cam.cadmotion.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("follower,shape,r", [('follower = "flat"', "flat", 0.0),
                                              ('follower = "roller"\nradius = 8\ncontact = [0, 38, 0]', "roller",
                                               0.008)])
def test_driven_cam_gives_the_follower_lift_velocity_and_acceleration(tmp_path, follower, shape, r):
    omega = 2 * np.pi
    motion = kinematics(compile_model(load(cam_model(tmp_path, follower, omega))), t_end=1.0, steps=40)
    t = motion.time
    th = omega * t
    s = motion.coordinate("slide.disp")
    np.testing.assert_allclose(s, exact_lift(th, shape, r), atol=1e-10)
    k = motion.part_index("follower")
    h = 1e-3  # central differences of the closed form: truncation ~h², round-off ~eps/h²
    v = (exact_lift(th + h, shape, r) - exact_lift(th - h, shape, r)) / (2 * h) * omega
    a = (exact_lift(th + h, shape, r) - 2 * exact_lift(th, shape, r) + exact_lift(th - h, shape, r)) / h**2 * omega**2
    np.testing.assert_allclose(motion.velocity[:, k, 1], v, atol=1e-7)
    np.testing.assert_allclose(motion.acceleration[:, k, 1], a, atol=2e-6)
    # the pressure angle: between the contact normal (disc centre → roller centre, or the face's
    # normal) and the slide, positive towards −x (the slide +y turned +90°)
    cx, cy = E * np.sin(th), -E * np.cos(th)
    if shape == "flat":
        alpha = np.zeros_like(th)
    else:
        normal = np.column_stack([-cx, exact_lift(th, shape, r) + R + r - E - cy])
        alpha = np.arctan2(-normal[:, 0], normal[:, 1])
    np.testing.assert_allclose(motion.extra["contact.pressure_angle"], alpha, atol=1e-8)
    if shape == "flat":  # exactly: v = e ω sin θ, a = e ω² cos θ
        np.testing.assert_allclose(motion.velocity[:, k, 1], E * omega * np.sin(th), atol=1e-9)
        np.testing.assert_allclose(motion.acceleration[:, k, 1], E * omega**2 * np.cos(th), atol=1e-6)


def test_spring_loaded_follower_load_and_lift_off_time_match_the_closed_form(tmp_path):
    """N = m s̈ + k (c0 + s), s = e(1 − cos ωt): positive at 1 turn/s; at 12 turns/s it turns
    negative where cos ωt = −k (c0 + e) / (m e ω² − k e)."""
    m, k, c0 = 0.2, 200.0, 0.020
    for turns, lifts in ((1.0, False), (12.0, True)):
        omega = 2 * np.pi * turns
        model = compile_model(load(cam_model(tmp_path, omega=omega)))
        motion = inverse_dynamics(model, kinematics(model, t_end=1.0 / turns, steps=400))
        th = omega * motion.time
        s = E * (1 - np.cos(th))
        N = m * E * omega**2 * np.cos(th) + k * (c0 + s)
        np.testing.assert_allclose(motion.extra["contact.force"], N, atol=1e-6 * np.abs(N).max())
        events = [e for e in motion.events if e.kind == "lift-off"]
        assert bool(events) == lifts
        if lifts:
            t_exact = math.acos(-k * (c0 + E) / (m * E * omega**2 - k * E)) / omega
            assert events[0].time == pytest.approx(t_exact, abs=1e-5)
            assert "contact" in events[0].message and "lifts off" in events[0].message


def test_oscillating_follower_follows_a_tabulated_law(tmp_path):
    """A rocker on a revolute, law φ = 0.2 sin θ + 0.05 sin 2θ given as a table (rad)."""
    theta = np.linspace(0, 2 * np.pi, 180, endpoint=False)
    table = np.column_stack([theta, 0.2 * np.sin(theta) + 0.05 * np.sin(2 * theta)]).tolist()
    path = cam_model(tmp_path)
    text = path.read_text()
    text = text.replace('[parts.follower]\nposition = [0, 30, 0]', '[parts.follower]\nposition = [60, 0, 0]')
    text = text.replace('type = "prismatic"\nparts = ["ground", "follower"]\norigin = [0, 30, 0]\naxis = [0, 1, 0]',
                        'type = "revolute"\nparts = ["ground", "follower"]\norigin = [60, 0, 0]\naxis = [0, 0, 1]')
    start = text.index('follower = "flat"')
    end = text.index("[[forces]]")
    text = text[:start] + f"law = {table}\n" + text[end:]
    path.write_text(text)
    motion = kinematics(compile_model(load(path)), t_end=1.0, steps=50)
    th = 2 * np.pi * motion.time
    phi = 0.2 * np.sin(th) + 0.05 * np.sin(2 * th)
    np.testing.assert_allclose(motion.coordinate("slide.angle"), phi, atol=1e-10)
    alpha = -(0.2 * np.sin(th) + 0.2 * np.sin(2 * th)) * (2 * np.pi) ** 2
    np.testing.assert_allclose(motion.angular_acceleration[:, motion.part_index("follower"), 2], alpha, atol=1e-6)


@pytest.mark.parametrize("edit,expected", [
    ({'joints = ["shaft", "slide"]': 'joints = ["shaft"]'}, "a cam needs `joints"),
    ({'follower = "flat"': 'follower = "mushroom"'}, "unknown follower 'mushroom'"),
    ({'follower = "flat"': 'follower = "roller"'}, "a roller follower needs `radius`"),
    ({'follower = "flat"': 'follower = "flat"\nlaw = [[0, 0], [1, 0], [2, 0], [3, 0], [4, 0], [5, 0]]'},
     "either `law"),
])
def test_bad_cam_input_names_the_joint(tmp_path, edit, expected):
    with pytest.raises(ModelFileError, match=expected) as err:
        load(cam_model(tmp_path, **edit))
    assert "'contact'" in str(err.value)


def test_a_cam_on_joints_of_the_wrong_kind_is_refused(tmp_path):
    from cadmotion.errors import MechanismError

    path = cam_model(tmp_path, **{'type = "prismatic"\nparts = ["ground", "follower"]':
                                  'type = "cylindrical"\nparts = ["ground", "follower"]'})
    with pytest.raises(MechanismError, match="follower's a prismatic or revolute joint"):
        compile_model(load(path))


# ----------------------------------------------------------------- outlines a follower cannot stay on
def cycloidal_nose_cam(r, pitch_base=0.030, lift=0.012, n=720):
    """Outline (n, 2) of a cam designed for a roller of radius r (r = 0: a point) on the line x = 0:
    cycloidal rise of ``lift`` over 0..60°, return over 180..240°. Its pitch curve (the roller centre
    turned back, R(−θ) (0, R_p + s)) bends tightest, radius 16.13 mm, at the top of the rise; the
    outline is the pitch curve less r along the normal ν ∥ (−s′, R_p + s); beyond r = 16.13 mm it folds
    over itself (undercut). Its hollow, at the start of the return, has radius 33.56 mm + r."""
    th = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    beta = np.pi / 3
    s, s1 = np.zeros_like(th), np.zeros_like(th)
    for start, sign, base in ((0.0, 1.0, 0.0), (np.pi, -1.0, lift)):
        sel = (th >= start) & (th < start + beta)
        x = (th[sel] - start) / beta
        s[sel] = base + sign * lift * (x - np.sin(2 * np.pi * x) / (2 * np.pi))
        s1[sel] = sign * lift * (1 - np.cos(2 * np.pi * x)) / beta
    s[(th >= beta) & (th < np.pi)] = lift
    nu = np.column_stack([-s1, pitch_base + s])
    nu /= np.linalg.norm(nu, axis=1)[:, None]
    C = np.column_stack([np.zeros_like(th), pitch_base + s]) - r * nu
    c, sn = np.cos(th), np.sin(th)
    return np.column_stack([c * C[:, 0] + sn * C[:, 1], -sn * C[:, 0] + c * C[:, 1]]), s


def test_a_roller_within_the_pitch_curves_bend_follows_the_design_law():
    pts, s = cycloidal_nose_cam(0.99 * 0.016128)
    law = lift_law(pts, "roller", radius=0.99 * 0.016128)
    np.testing.assert_allclose(law(np.linspace(0, 2 * np.pi, 720, endpoint=False)), s, atol=1e-9)


def test_an_undercut_roller_cam_is_refused_not_given_a_lift():
    """Designed for a roller 10 % beyond the pitch curve's bend, the outline folds over itself; the
    old code offset the fold back out and returned the design law, which the cut cam cannot give.
    Fails on the old code (no error)."""
    pts, _ = cycloidal_nose_cam(1.1 * 0.016128)
    with pytest.raises(ValueError, match="outline crosses itself"):
        lift_law(pts, "roller", radius=1.1 * 0.016128)


def test_a_flat_face_on_a_hollow_cam_is_refused():
    """A flat face bridges the hollow of the point follower's cam (radius 33.6 mm): it would jump
    across, its lift has a corner there. Fails on the old code (a smooth law through the corner)."""
    pts, _ = cycloidal_nose_cam(0.0)
    with pytest.raises(ValueError, match="flat-faced follower needs a convex cam"):
        lift_law(pts, "flat")


def test_a_roller_bigger_than_the_cams_hollow_is_refused():
    """Fails on the old code (a law for a roller that cannot reach the hollow's bottom)."""
    pts, _ = cycloidal_nose_cam(0.0)
    lift_law(pts, "roller", radius=0.030)  # fits the 33.6 mm hollow
    with pytest.raises(ValueError, match=r"roller \(radius 0.04 m\) does not fit the cam's hollow"):
        lift_law(pts, "roller", radius=0.040)


def test_an_outline_off_the_plane_normal_to_the_cam_axis_is_refused(tmp_path):
    """A tilted section of the disc (z = 0.2 x) projected onto the cam plane is an ellipse, not the
    disc: the old code projected it silently. Fails on the old code."""
    from cadmotion.errors import MechanismError

    path = cam_model(tmp_path)
    pts = np.column_stack([disc() * 1e3, 0.2 * disc()[:, 0] * 1e3]).round(9).tolist()
    text = path.read_text()
    start = text.index("profile = [")
    path.write_text(text[:start] + f"profile = {pts}" + text[text.index("\n", start):])
    with pytest.raises(MechanismError, match="cam 'contact': the cam's outline is not in a plane normal to the cam"):
        compile_model(load(path))


# ----------------------------------------------------------------- laws whose acceleration jumps
H_DRDR, BETA = 0.012, 2 * np.pi / 3  # m, rad: harmonic rise over 0..120°, return over 180..300°


def harmonic_drdr(theta, derivative=0):
    """Dwell–rise–dwell–return, both harmonic: s = H (1 − cos πx)/2; s″ jumps at 0, 120, 180, 300°."""
    th = np.mod(theta, 2 * np.pi)
    out = np.where((th >= BETA) & (th < np.pi), H_DRDR, 0.0) if derivative == 0 else np.zeros_like(th)
    for start, sign, base in ((0.0, 1.0, 0.0), (np.pi, -1.0, H_DRDR)):
        sel = (th >= start) & (th < start + BETA)
        x = (th[sel] - start) / BETA
        part = [(1 - np.cos(np.pi * x)) / 2, np.pi / 2 * np.sin(np.pi * x), np.pi**2 / 2 * np.cos(np.pi * x)]
        value = H_DRDR * part[derivative] / BETA**derivative
        out[sel] = base + sign * value if derivative == 0 else sign * value
    return out


def away_from_jumps(theta, margin):
    jumps = np.array([0.0, BETA, np.pi, np.pi + BETA])
    return np.min(np.abs((theta[:, None] - jumps + np.pi) % (2 * np.pi) - np.pi), axis=1) > margin


def test_a_law_whose_acceleration_jumps_does_not_ring():
    """A quintic spline through 720 samples overshot the acceleration jumps by 8.9 % of the peak
    (Gibbs: the same at 2880 samples), and rang for degrees around them. Fails on the old code."""
    theta = np.linspace(0, 2 * np.pi, 720, endpoint=False)
    law = CamLaw(theta, harmonic_drdr(theta))
    th = np.linspace(0, 2 * np.pi, 36001)
    peak = H_DRDR * np.pi**2 / (2 * BETA**2)
    assert np.min(law(th, 2)) > -peak * (1 + 1e-8)
    ok = away_from_jumps(th, 1e-9)
    np.testing.assert_allclose(law(th, 2)[ok], harmonic_drdr(th, 2)[ok], atol=1e-8 * peak)
    np.testing.assert_allclose(law(th, 1), harmonic_drdr(th, 1), atol=1e-10)


def test_a_flat_follower_on_a_harmonic_cams_outline_gets_its_acceleration():
    """The outline of a flat-faced follower's cam with that law (r_b = 30 mm), 1440 points; its
    curvature jumps with s″, which the outline's quintic spline also rang at. Fails on the old code."""
    psi = np.linspace(0, 2 * np.pi, 1440, endpoint=False)
    th = np.pi / 2 - psi
    h, dh = 0.030 + harmonic_drdr(th), -harmonic_drdr(th, 1)
    pts = np.column_stack([h * np.cos(psi) - dh * np.sin(psi), h * np.sin(psi) + dh * np.cos(psi)])
    law = lift_law(pts, "flat")
    t = np.linspace(0, 2 * np.pi, 36001)
    peak = H_DRDR * np.pi**2 / (2 * BETA**2)
    ok = away_from_jumps(t, 2 * np.pi / 720)  # the law's samples: the jump is within one of them
    np.testing.assert_allclose(law(t, 2)[ok], harmonic_drdr(t, 2)[ok], atol=1e-6 * peak)
    assert np.min(law(t, 2)) > -peak * (1 + 1e-6)


def harmonic_table_model(tmp_path, omega):
    """The spring-loaded cam model driven at ω (rad/s) with the harmonic dwell–rise–dwell–return law
    given as a 720-sample table (mm) instead of its profile."""
    theta = np.linspace(0, 2 * np.pi, 720, endpoint=False)
    table = np.column_stack([theta, 1e3 * harmonic_drdr(theta)]).tolist()
    path = cam_model(tmp_path, omega=omega)
    text = path.read_text()
    start = text.index('follower = "flat"')
    path.write_text(text[:start] + f"law = {table}\n" + text[text.index("[[forces]]"):])
    return compile_model(load(path))


@pytest.mark.parametrize("factor,lifts", [(0.99, False), (1.01, True)])
def test_lift_off_speed_of_a_law_whose_acceleration_jumps(tmp_path, factor, lifts):
    """N = m s″ ω² + k (c0 + s) is least at the end of the harmonic rise (s = H, s″ = −H π²/(2β²)):
    lift-off above ω* = √(k (c0 + H) / (m H π²/(2β²))). The old law's overshoot reported a lift-off
    at 0.99 ω*. Fails on the old code."""
    m, k, c0 = 0.2, 200.0, 0.020
    omega = factor * math.sqrt(k * (c0 + H_DRDR) / (m * H_DRDR * np.pi**2 / (2 * BETA**2)))
    model = harmonic_table_model(tmp_path, omega)
    motion = inverse_dynamics(model, kinematics(model, t_end=2 * np.pi / omega, steps=720))
    events = [e for e in motion.events if e.kind == "lift-off"]
    assert bool(events) == lifts
    if lifts:  # N turns negative where s″ ω² m + k (c0 + s) = 0 on the rise, before 120°
        th = np.linspace(0, BETA, 200001)
        N = m * harmonic_drdr(th, 2) * omega**2 + k * (c0 + harmonic_drdr(th))
        t_exact = th[np.flatnonzero(N < 0)[0]] / omega
        assert events[0].time == pytest.approx(t_exact, abs=2 * np.pi / omega / 720)


def test_pressure_angle_of_an_offset_roller_where_the_laws_acceleration_jumps():
    """Roller r = 8 mm on the line x = e = 10 mm, pitch base 38 mm, the harmonic law: its centre
    P = (e, d0 + s), the contact normal ν ∥ (e − s′, d0 + s), α = atan2(s′ − e, d0 + s), whose slope
    jumps with s″. A cubic spline through α rang there (5e-4 rad); fails on the old code."""
    r, e, d0 = 0.008, 0.010, math.sqrt(0.038**2 - 0.010**2)
    th = np.linspace(0, 2 * np.pi, 720, endpoint=False)
    s, s1 = harmonic_drdr(th), harmonic_drdr(th, 1)
    nu = np.column_stack([e - s1, d0 + s])
    C = np.column_stack([np.full_like(th, e), d0 + s]) - r * nu / np.linalg.norm(nu, axis=1)[:, None]
    c, sn = np.cos(th), np.sin(th)
    pts = np.column_stack([c * C[:, 0] + sn * C[:, 1], -sn * C[:, 0] + c * C[:, 1]])
    law = lift_law(pts, "roller", radius=r, point=(e, 0.0))
    t = np.linspace(0, 2 * np.pi, 36001)
    alpha = np.arctan2(harmonic_drdr(t, 1) - e, d0 + harmonic_drdr(t))
    np.testing.assert_allclose(law.pressure_angle(t), alpha, atol=1e-8)
    np.testing.assert_allclose(law(t), harmonic_drdr(t), atol=1e-10)


def test_a_follower_off_the_outline_at_the_initial_pose_is_refused(tmp_path):
    """The profile of the wrong face (here: the disc shrunk to the hub's 8 mm circle) left the follower
    22 mm clear of it; the old code shifted the law to start there and ran (no lift at all). Also a
    roller whose centre is given on the cam's surface. Fails on the old code."""
    from cadmotion.errors import MechanismError

    path = cam_model(tmp_path)
    text = path.read_text()
    hub = np.column_stack([disc(radius=0.008, ecc=0.0) * 1e3, np.zeros(72)]).round(9).tolist()
    start = text.index("profile = [")
    path.write_text(text[:start] + f"profile = {hub}" + text[text.index("\n", start):])
    with pytest.raises(MechanismError, match=r"cam 'contact': the follower's face .* is 0.022 m clear of the cam"):
        compile_model(load(path))
    path = cam_model(tmp_path, 'follower = "roller"\nradius = 8')
    with pytest.raises(MechanismError, match=r"the follower's roller centre .* is 0.008 m inside the cam.*`contact`"):
        compile_model(load(path))


@pytest.mark.parametrize("factor", [0.99, 1.003])
def test_lift_off_between_coarse_frames_is_found_at_its_time(tmp_path, factor):
    """Just above ω* the load is negative only over the last 4.5° of the rise and the first of the
    return; 24 frames a turn (15°) stepped over the first window, and the old check reported the
    second one, 16 ms late (or, for a 3-4-5 law, none at all). The load is now checked between
    frames on the lift law. Fails on the old code (at 1.003 ω*)."""
    m, k, c0 = 0.2, 200.0, 0.020
    omega = factor * math.sqrt(k * (c0 + H_DRDR) / (m * H_DRDR * np.pi**2 / (2 * BETA**2)))
    model = harmonic_table_model(tmp_path, omega)
    motion = inverse_dynamics(model, kinematics(model, t_end=2 * np.pi / omega, steps=24))
    events = [e for e in motion.events if e.kind == "lift-off"]
    th = np.linspace(0, 2 * np.pi, 400001)
    N = m * harmonic_drdr(th, 2) * omega**2 + k * (c0 + harmonic_drdr(th))
    assert bool(events) == bool(np.any(N < 0))
    if events:
        assert events[0].time == pytest.approx(th[np.flatnonzero(N < 0)[0]] / omega, abs=1e-6)
        assert "between frames" in events[0].message
