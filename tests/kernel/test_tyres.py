"""The tyre force element (``type = "tyre"``) against closed forms.

A test rig: a cart on a prismatic joint along x (free, or driven at speed V), an axle on a
prismatic joint along z on the cart, the wheel on a revolute joint on the axle (its spin axis
yawed by ψ from y). References: the static deflection m g / k; a free-rolling wheel keeps its
speed (no slip, no force); at a fixed slip angle the lateral force is the magic formula of the
documented slip angle and the load m g, balanced by the cart's lateral reaction; a quarter car
driven over a cosine bump moves as the linear two-mass model of the same road, integrated by scipy.
"""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from cadmotion.errors import MechanismError, ModelFileError
from cadmotion.importers.modelfile import read_model_file
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import simulate

G = 9.81
R = 0.3                  # unloaded radius, m
K_T, C_T = 2.0e5, 1500.0  # vertical stiffness N/m, damping N s/m
M_AXLE, M_WHEEL = 15.0, 10.0
LONG = (10.0, 1.65, 1.0, 0.0)
LAT = (8.0, 1.3, 0.9, -1.0)
V_EPS = 0.5


def mf(x, B, C, D, E):
    return D * math.sin(C * math.atan(B * x - E * (B * x - math.atan(B * x))))


def rig(tmp_path, *, speed=0.0, driven=False, yaw=0.0, z_wheel=R, spin=0.0, cart_fixed=False, body=None,
        bumps=(), tyre_extra=""):
    """The rig's model file; ``body`` = (mass, k_s, c_s, free_length) adds a sprung mass on the cart
    0.3 m above the wheel centre, joined to the axle by a vertical spring-damper."""
    ax = (-math.sin(yaw), math.cos(yaw), 0.0)
    quat = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))
    cart = "fixed = true" if cart_fixed else "mass = 50.0\ninertia = [1, 1, 1]"
    text = f"""
units = "m"
gravity = [0, 0, -{G}]
[parts.ground]
fixed = true
[parts.cart]
position = [0, 0, {z_wheel}]
{cart}
[parts.axle]
position = [0, 0, {z_wheel}]
mass = {M_AXLE}
inertia = [0.2, 0.2, 0.2]
[parts.wheel]
position = [0, 0, {z_wheel}]
orientation = [{quat[0]!r}, 0, 0, {quat[3]!r}]
mass = {M_WHEEL}
inertia = [0.5, 0.9, 0.5]
[[joints]]
name = "axle_z"
type = "prismatic"
parts = ["cart", "axle"]
origin = [0, 0, {z_wheel}]
axis = [0, 0, 1]
[[joints]]
name = "spin"
type = "revolute"
parts = ["axle", "wheel"]
origin = [0, 0, {z_wheel}]
axis = [{ax[0]!r}, {ax[1]!r}, 0]
[[forces]]
name = "tyre"
type = "tyre"
parts = ["wheel"]
center = [0, 0, {z_wheel}]
axis = [{ax[0]!r}, {ax[1]!r}, 0]
radius = {R}
stiffness = {K_T}
damping = {C_T}
longitudinal = {list(LONG)}
lateral = {list(LAT)}
low_speed = {V_EPS}
road = {{ bumps = {[list(b) for b in bumps]} }}
{tyre_extra}
"""
    if not cart_fixed:
        text += """
[[joints]]
name = "cart_x"
type = "prismatic"
parts = ["ground", "cart"]
origin = [0, 0, 0]
axis = [1, 0, 0]
"""
    if driven:
        text += f'[[drivers]]\njoint = "cart_x"\nexpression = "{speed!r}*t"\n'
    if body is not None:
        m_s, k_s, c_s, l0 = body
        text += f"""
[parts.body]
position = [0, 0, {z_wheel + 0.3}]
mass = {m_s}
inertia = [20, 20, 20]
[[joints]]
name = "body_z"
type = "prismatic"
parts = ["cart", "body"]
origin = [0, 0, {z_wheel + 0.3}]
axis = [0, 0, 1]
[[forces]]
name = "suspension"
type = "spring-damper"
parts = ["axle", "body"]
points = [[0, 0, {z_wheel}], [0, 0, {z_wheel + 0.3}]]
stiffness = {k_s}
damping = {c_s}
free_length = {l0}
"""
    for part in ("cart", "axle", "wheel") + (("body",) if body is not None else ()):
        if part == "cart" and cart_fixed:
            continue
        w = f"angular_velocity = [{spin * ax[0]!r}, {spin * ax[1]!r}, 0]" if part == "wheel" else ""
        text += f"[initial_velocity.{part}]\nvelocity = [{speed!r}, 0, 0]\n{w}\n"
    path = tmp_path / "rig.cadmotion.toml"
    path.write_text(text)
    return compile_model(read_model_file(path))


@pytest.mark.parametrize("method", [dict(rtol=1e-10, atol=1e-12), dict(formulation="index3", dt=1e-3)],
                         ids=["projection", "index3"])
def test_the_static_deflection_is_the_load_over_the_stiffness(tmp_path, method):
    """Dropped from touching the road, the wheel settles at δ = (m_axle + m_wheel) g / k (index-1 with
    the compiled right-hand side, and index-3 generalised-α with the tyres' differenced tangent)."""
    model = rig(tmp_path, cart_fixed=True)
    motion = simulate(model, t_end=1.5, steps=15, **method)
    delta = (M_AXLE + M_WHEEL) * G / K_T
    assert motion.extra["tyre.deflection"][-1] == pytest.approx(delta, rel=1e-8)
    assert motion.extra["tyre.normal_force"][-1] == pytest.approx((M_AXLE + M_WHEEL) * G, rel=1e-8)
    z = motion.position[-1, motion.part_index("wheel"), 2]
    assert z == pytest.approx(R - delta, abs=1e-10)


def test_a_free_rolling_wheel_keeps_its_speed(tmp_path):
    """Rolling at ω = V/ρ (ρ = R − δ, the loaded radius) on the flat road the tyre has no slip, so no
    longitudinal force: the free cart keeps V = 10 m/s, and the energy is conserved."""
    delta = (M_AXLE + M_WHEEL) * G / K_T
    V = 10.0
    model = rig(tmp_path, speed=V, z_wheel=R - delta, spin=V / (R - delta))
    motion = simulate(model, t_end=2.0, steps=20, rtol=1e-10, atol=1e-12)
    cart = motion.part_index("cart")
    assert np.max(np.abs(motion.velocity[:, cart, 0] - V)) < 1e-7
    assert np.max(np.abs(motion.extra["tyre.longitudinal_force"])) < 1e-4
    assert np.max(np.abs(motion.extra["tyre.slip_ratio"])) < 1e-9
    assert motion.position[-1, cart, 0] == pytest.approx(2.0 * V, abs=1e-6)
    E = motion.extra["energy.total"]
    assert np.max(np.abs(E - E[0])) < 1e-6 * E[0]


@pytest.mark.parametrize("yaw_deg", [-3.0, 2.0])
def test_at_a_fixed_slip_angle_the_lateral_force_is_the_magic_formula(tmp_path, yaw_deg):
    """The cart is driven at V along x with the wheel yawed by ψ: the contact point slides sideways at
    V_sy = −V sin ψ, so α = atan(−V sin ψ / √(V² cos² ψ + v_ε²)) and F_y = −m g MF(α); the cart's
    prismatic joint takes the whole rig's lateral force, −F_y cos ψ."""
    yaw = math.radians(yaw_deg)
    delta = (M_AXLE + M_WHEEL) * G / K_T
    V = 8.0
    model = rig(tmp_path, speed=V, driven=True, yaw=yaw, z_wheel=R - delta, spin=V * math.cos(yaw) / (R - delta))
    motion = simulate(model, t_end=0.5, steps=5, rtol=1e-10, atol=1e-12)
    alpha = math.atan(-V * math.sin(yaw) / math.hypot(V * math.cos(yaw), V_EPS))
    load = (M_AXLE + M_WHEEL) * G
    fy = -load * mf(alpha, *LAT)
    assert motion.extra["tyre.slip_angle"][-1] == pytest.approx(alpha, rel=1e-9)
    assert motion.extra["tyre.normal_force"][-1] == pytest.approx(load, rel=1e-6)
    assert motion.extra["tyre.lateral_force"][-1] == pytest.approx(fy, rel=1e-6)
    assert np.sign(fy) == np.sign(yaw)  # a wheel steered left pushes left
    assert motion.extra["cart_x.fy"][-1] == pytest.approx(-fy * math.cos(yaw), rel=1e-6)


def test_a_quarter_car_over_a_bump_moves_as_the_two_mass_model(tmp_path):
    """A sprung mass on a spring-damper over the axle and wheel, the cart driven at V over a cosine
    bump: the vertical motion is the two-mass model m_s z̈_s = −m_s g + f_s, m_u z̈_u = −m_u g − f_s + f_n
    with f_s = −k_s (z_s − z_u − l0) − c_s (ż_s − ż_u), f_n = max(0, k_t δ + c_t δ̇),
    δ = h(V t) − z_u + R (the slip forces are horizontal and go to the cart)."""
    m_s, k_s, c_s = 400.0, 3.0e4, 2000.0
    m_u = M_AXLE + M_WHEEL
    xc, H, L, V = 3.0, 0.05, 1.0, 5.0
    delta0 = (m_s + m_u) * G / K_T
    z0 = R - delta0
    l0 = 0.3 + m_s * G / k_s
    model = rig(tmp_path, speed=V, driven=True, z_wheel=z0, spin=V / z0, body=(m_s, k_s, c_s, l0),
                bumps=[(xc, H, L)])
    T = 1.5
    motion = simulate(model, t_end=T, steps=150, rtol=1e-10, atol=1e-12)

    def road(x):
        u = x - xc
        if abs(u) >= L / 2:
            return 0.0, 0.0
        return 0.5 * H * (1 + math.cos(2 * math.pi * u / L)), -H * math.pi / L * math.sin(2 * math.pi * u / L)

    def rhs(t, y):
        zs, vs, zu, vu = y
        fs = -k_s * (zs - zu - l0) - c_s * (vs - vu)
        h, hp = road(V * t)
        d, dd = h - zu + R, hp * V - vu
        fn = max(0.0, K_T * d + C_T * dd) if d > 0 else 0.0
        return [vs, -G + fs / m_s, vu, -G + (-fs + fn) / m_u]

    ref = solve_ivp(rhs, (0, T), [z0 + 0.3, 0.0, z0, 0.0], t_eval=motion.time, rtol=1e-11, atol=1e-13,
                    method="DOP853", max_step=1e-3)
    zs = motion.position[:, motion.part_index("body"), 2]
    zu = motion.position[:, motion.part_index("wheel"), 2]
    assert np.ptp(zs) > 0.02  # the bump moves the body
    assert np.max(np.abs(zs - ref.y[0])) < 1e-6
    assert np.max(np.abs(zu - ref.y[2])) < 1e-6
    E, W = motion.extra["energy.total"], motion.extra["work.nonconservative"]
    assert np.max(np.abs(E - E[0] - W)) < 1e-6 * np.max(np.abs(E))


@pytest.mark.parametrize("extra, words", [
    ("radius = -0.3", "`radius` must be positive"),
    ("stiffness = 0", "`stiffness` must be positive"),
    ("damping = -1", "`damping` must not be negative"),
    ("longitudinal = [10, 1.65, 0.0, 0.0]", "D = 0.0"),
    ("lateral = [8, 1.3, 0.9, 1.5]", "E = 1.5"),
    ("lateral = [-8, 1.3, 0.9, 0]", "B = -8.0"),
    ("low_speed = 0", "`low_speed`"),
    ("axis = [0, 0, 1]", "vertical"),
    ("road = { bumps = [[1, 0.1, 0]] }", "length > 0"),
    ("parts = [\"ground\"]", "fixed part"),
])
def test_out_of_range_coefficients_are_errors_naming_the_tyre(tmp_path, extra, words):
    rig(tmp_path, cart_fixed=True)
    path = tmp_path / "rig.cadmotion.toml"
    lines = path.read_text().splitlines()
    start = lines.index('name = "tyre"')
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("["))
    key = extra.split(" =")[0]
    block = [ln for ln in lines[start:end] if not ln.startswith(f"{key} =")]
    path.write_text("\n".join(lines[:start] + [extra] + block + lines[end:]))
    bad = compile_model(read_model_file(path))
    with pytest.raises(MechanismError, match="'tyre'") as err:
        simulate(bad, t_end=0.01, steps=1)
    assert words in str(err.value)


def test_a_tyre_in_a_millimetre_file_reads_its_lengths_in_millimetres(tmp_path):
    """radius, center, road height and bumps follow `units`; stiffness, damping and the magic-formula
    numbers stay SI; `road` takes only `height` and `bumps`."""
    text = """
units = "mm"
[parts.ground]
fixed = true
[parts.wheel]
mass = 10.0
inertia = [0.5, 0.9, 0.5]
[[forces]]
name = "tyre"
type = "tyre"
parts = ["wheel"]
center = [0, 850, 350]
axis = [0, 1, 0]
radius = 350
stiffness = 3.5e5
damping = 300
longitudinal = [12, 1.65, 1.0, 0.1]
lateral = [9, 1.35, 0.95, -0.5]
road = { height = 10, bumps = [[12000, 60, 900]] }
"""
    path = tmp_path / "mm.cadmotion.toml"
    path.write_text(text)
    force = read_model_file(path).forces[0]
    params = dict(force.params)
    assert force.points[0] == pytest.approx((0.0, 0.85, 0.35))
    assert params["radius"] == pytest.approx(0.35)
    assert params["road_height"] == pytest.approx(0.01)
    assert params["bumps"][0] == pytest.approx((12.0, 0.06, 0.9))
    assert params["stiffness"] == 3.5e5 and params["lateral"] == (9.0, 1.35, 0.95, -0.5)
    path.write_text(text.replace("height = 10,", "slope = 0.1,"))
    with pytest.raises(ModelFileError, match="slope"):
        read_model_file(path)
