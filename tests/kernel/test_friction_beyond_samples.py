"""Unilateral contacts with Coulomb friction at several contacts at once, against closed forms (found by
``benchmarks/friction_sweep.py``, which imports the models and references from here).

References: a rod lying in a V-groove whose faces rise at α on either side, the groove down a slope θ: each face
pushes N = m g cos θ / (2 cos α), so the rod is held for tan θ < μ_s / cos α and slides above at
a = g (sin θ − μ_d cos θ / cos α). A ladder against a wall, rungs of radius r at its ends, μ₁ at the floor and μ₂
at the wall: with both frictions at their cones' edges the torque balance about its centre gives the slip angle
(L/2)(1 − μ₁ μ₂) cos θ − μ₁ L sin θ = μ₁ r (1 + μ₂); flatter, both ends slip and θ(t) follows the one-degree-of-freedom
equation of :func:`ladder_accelerations` (integrated here by scipy at rtol 1e-12).
"""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from cadmotion.importers.modelfile import parse_model
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics.forward import run

G = 9.81
GROOVE_ALPHA = math.radians(45.0)
LADDER_L, LADDER_R, LADDER_M = 1.0, 0.02, 1.0
LADDER_I = LADDER_M * LADDER_L ** 2 / 12  # about the centre, in the wall's normal plane (kg m²)


def groove_model(tan_theta, mu, alpha=GROOVE_ALPHA, R=0.02, length=0.2):
    """A 1 kg rod (cylinder R, length along x) in a V-groove along x whose faces rise at α, gravity tilted down x
    by θ; μ_s = μ, μ_d = 0.8 μ on each face (two contacts, two rim points each)."""
    th = math.atan(tan_theta)
    across = (3 * R * R + length ** 2) / 12
    faces = [{"name": f"face_{side}", "parts": ["rod", "groove"], "friction": {"static": mu, "dynamic": 0.8 * mu},
              "shape": [{"cylinder": [R, length], "axis": [1, 0, 0]},
                        {"plane": {"point": [0, 0, 0], "normal": [0, -s * math.sin(alpha), math.cos(alpha)]}}]}
             for side, s in (("left", 1.0), ("right", -1.0))]
    return {"units": "m", "gravity": [G * math.sin(th), 0.0, -G * math.cos(th)],
            "parts": {"groove": {"fixed": True},
                      "rod": {"position": [0, 0, R / math.cos(alpha)], "mass": 1.0,
                              "inertia": [0.5 * R * R, across, across]}},
            "contacts": faces}


def groove_acceleration(tan_theta, mu, alpha=GROOVE_ALPHA):
    """The rod's acceleration down the groove (m/s²): 0 where it is held, else Coulomb sliding with μ_d = 0.8 μ."""
    th = math.atan(tan_theta)
    if tan_theta < mu / math.cos(alpha):
        return 0.0
    return G * (math.sin(th) - 0.8 * mu * math.cos(th) / math.cos(alpha))


def ladder_model(theta, mu1, mu2):
    """The ladder (LADDER_M kg, LADDER_L m between its rungs' axes, rungs r = LADDER_R, 0.4 m wide) at θ from the
    floor (z = 0) against the wall (x = 0), from rest; μ₁ at the floor, μ₂ at the wall. Its part's x runs from
    the foot to the top: a turn of π + θ about y."""
    L, r, psi = LADDER_L, LADDER_R, math.pi + theta
    rungs = [{"name": name, "parts": ["ladder", "room"], "friction": mu,
              "shape": [{"cylinder": [r, 0.4], "center": [x, 0, 0], "axis": [0, 1, 0]},
                        {"plane": {"point": [0, 0, 0], "normal": normal}}]}
             for name, mu, x, normal in (("foot", mu1, -0.5 * L, [0, 0, 1]), ("top", mu2, 0.5 * L, [1, 0, 0]))]
    return {"units": "m", "gravity": [0, 0, -G],
            "parts": {"room": {"fixed": True},
                      "ladder": {"position": [r + 0.5 * L * math.cos(theta), 0, r + 0.5 * L * math.sin(theta)],
                                 "orientation": [math.cos(psi / 2), 0, math.sin(psi / 2), 0], "mass": LADDER_M,
                                 "inertia": [1e-3, LADDER_I, LADDER_I]}},
            "contacts": rungs}


def ladder_slip_angle(mu1, mu2, L=LADDER_L, r=LADDER_R):
    """The floor angle θ (rad) below which the ladder slips: a cos θ − b sin θ = c, the torque balance about its
    centre with the floor's friction −μ₁ N₁ and the wall's +μ₂ N₂, N₂ = μ₁ N₁."""
    a, b, c = 0.5 * L * (1 - mu1 * mu2), mu1 * L, mu1 * r * (1 + mu2)
    return math.acos(c / math.hypot(a, b)) - math.atan2(b, a)


def ladder_accelerations(theta, theta_d, mu1, mu2, L=LADDER_L, r=LADDER_R, m=LADDER_M, I=LADDER_I):
    """(θ̈ rad/s², N₁ N, N₂ N) of the ladder with both ends slipping (the foot out, the top down): the centre
    (r + L/2 cos θ, r + L/2 sin θ) in (x, z), the floor's force (−μ₁ N₁, N₁) at (r + L cos θ, 0), the wall's
    (N₂, μ₂ N₂) at (0, r + L sin θ), the ladder's direction at φ = π − θ from x toward z; rows m ẍ_G, m z̈_G,
    I φ̈ = the torques about the centre."""
    s, c = math.sin(theta), math.cos(theta)
    h = 0.5 * L
    K = np.array([[-m * h * s, mu1, -1.0],
                  [m * h * c, -1.0, -mu2],
                  [-I, -(h * c - mu1 * (r + h * s)), mu2 * (r + h * c) + h * s]])
    rhs = np.array([m * h * c * theta_d ** 2, m * h * s * theta_d ** 2 - m * G, 0.0])
    return np.linalg.solve(K, rhs)


def ladder_centres(theta0, mu1, mu2, t):
    """The ladder's centre (len(t), 3) from rest at θ₀: standing at or above the slip angle, else both ends
    slipping (the reference integrated while both contacts push; an AssertionError once the wall would let go)."""
    if theta0 >= ladder_slip_angle(mu1, mu2):
        theta = np.full(len(t), theta0)
    else:
        sol = solve_ivp(lambda _, y: [y[1], ladder_accelerations(y[0], y[1], mu1, mu2)[0]], (0.0, t[-1]),
                        [theta0, 0.0], method="DOP853", rtol=1e-12, atol=1e-14, t_eval=t)
        assert all(min(ladder_accelerations(a, b, mu1, mu2)[1:]) > 0 for a, b in sol.y.T), "the ladder leaves the wall"
        theta = sol.y[0]
    return np.column_stack([LADDER_R + 0.5 * LADDER_L * np.cos(theta), np.zeros(len(t)),
                            LADDER_R + 0.5 * LADDER_L * np.sin(theta)])


def _run(data, **kw):
    motion, result = run(compile_model(parse_model(data, source="test.toml")), **kw)
    assert motion.complete, motion.message
    assert not [e for e in motion.events if e.kind == "invariant"], [e.message for e in motion.events]
    return motion


@pytest.mark.parametrize("below", [0.1, 1e-3])
def test_a_rod_in_a_v_groove_below_its_limit_is_held(below):
    # Four rim points on two faces: the sticking rows are redundant, the weight can be carried by any mix of
    # normal forces and friction across the faces. The onset's contact problem (a friction pyramid, one vertex
    # solution) set all four points slipping, and the rod slid 0.05 m in 0.5 s at 10 % below the limit, unflagged.
    mu = 0.3
    tan_theta = mu / math.cos(GROOVE_ALPHA) * (1 - below)
    motion = _run(groove_model(tan_theta, mu), t_end=0.5, steps=10)
    x = motion.position[:, motion.parts.index("rod")]
    assert np.max(np.abs(x - x[0])) < 1e-12
    for face in ("face_left", "face_right"):
        friction, normal = motion.extra[f"{face}.friction_force"], motion.extra[f"{face}.normal_force"]
        assert np.all(friction <= mu * normal * (1 + 1e-9))


@pytest.mark.parametrize("above", [1e-3, 0.1])
def test_a_rod_in_a_v_groove_above_its_limit_slides_at_the_coulomb_acceleration(above):
    # With the friction's directions free, the sharing can wedge the rod (friction across the faces pressing it in
    # raises the normal forces, and the cones with them) and hold it above the limit: μ_s = 0.6 at 0.1 % above,
    # held 0.16 m short of the closed form in 0.5 s; at 10 % above it slid 1.5e-4 m short. Friction against the
    # tendency (down the groove) cannot hold it.
    mu = 0.6
    tan_theta = mu / math.cos(GROOVE_ALPHA) * (1 + above)
    motion = _run(groove_model(tan_theta, mu), t_end=0.5, steps=10)
    x = motion.position[:, motion.parts.index("rod")] - motion.position[0, motion.parts.index("rod")]
    a = groove_acceleration(tan_theta, mu)
    assert np.allclose(x, 0.5 * a * motion.time[:, None] ** 2 * [1, 0, 0], atol=1e-9, rtol=0)


@pytest.mark.parametrize("mu1, mu2", [(0.3, 0.3), (0.5, 0.2)])
def test_a_ladder_just_past_its_slip_angle_slips_at_both_ends_in_its_plane(mu1, mu2):
    # Both ends start to slip at once. Their slip directions were each chosen on their own (against the friction each
    # needed to stick, with the other's fixed): they leaned out of the ladder's plane, and a slip slower than
    # SLIP_DIRECTION_SPEED took its direction from v_t at every step, feeding back what the friction did to v_t
    # over the step (a sideways slip of 1e-12 m/s grew twentyfold a step): the ladder twisted and fell 2.2e-4 m
    # off the closed form in 0.3 s at 0.1 % past the slip angle, unflagged.
    theta0 = math.atan(math.tan(ladder_slip_angle(mu1, mu2)) * (1 - 1e-3))
    motion = _run(ladder_model(theta0, mu1, mu2), t_end=0.3, steps=10, rtol=1e-9, atol=1e-11)
    centre = motion.position[:, motion.parts.index("ladder")]
    assert np.allclose(centre, ladder_centres(theta0, mu1, mu2, motion.time), atol=1e-8, rtol=0)
    assert np.max(np.abs(motion.angular_velocity[:, motion.parts.index("ladder"), [0, 2]])) < 1e-9
    # the initial accelerations: the closed form's θ̈ and both normal forces
    b = motion.parts.index("ladder")
    theta_dd, N1, N2 = ladder_accelerations(theta0, 0.0, mu1, mu2)
    assert motion.angular_acceleration[0, b, 1] == pytest.approx(theta_dd, rel=1e-6)
    assert motion.extra["foot.normal_force"][0] == pytest.approx(N1, rel=1e-6)
    assert motion.extra["top.normal_force"][0] == pytest.approx(N2, rel=1e-6)
