"""Write the Andrews' squeezer sample: the seven-body planar mechanism of Schiehlen's benchmark set.

Source of every number: the Test Set for IVP Solvers (Bari; Mazzia & Magherini), problem
``andrews`` (``andrews.f``), which is Hairer & Wanner, *Solving Ordinary Differential Equations II*,
section VII.7 (after Manning and Schiehlen's "Multibody Systems Handbook"). The test set writes the
mechanism in 7 angles y = (β, Θ, γ, Φ, δ, Ω, ε) with 6 closure equations g(y) = 0; this script
builds the same mechanism from parts and revolute joints, with the geometry read off those
equations, in the x-y plane of the assembly frame (all joint axes +z):

- K1 turns about the origin O (absolute angle β, driven by the torque mom = 0.033 N m); its pin
  P1 = rr (cos β, sin β); centre of mass at ra along it.
- K2 hangs on K1 at P1 (absolute angle β + Θ); its other end is E = P1 − d (cos, sin)(β + Θ);
  centre of mass at da from P1 towards E.
- K3 turns about B (angle γ): E = B + ss (sin γ, −cos γ); the spring point
  D = B + sd (cos γ, sin γ) + sc (sin γ, −cos γ); centre of mass at √(sa² + sb²) from B.
- K5 turns about A (angle δ), its pin F = A + zt (cos δ, sin δ); K4 hangs on K5 at F (absolute angle
  Φ + δ), E = F + e (sin, −cos)(Φ + δ), centre of mass at e − ea from F towards E.
- K7 turns about A (angle ε), its pin G = A + u (sin ε, −cos ε); K6 hangs on K7 at G (absolute angle
  Ω + ε), E = G + zf (cos, sin)(Ω + ε), centre of mass at zf − fa from G towards E.
- K2, K3, K4 and K6 meet at E: three revolute joints there (K2–K3, K2–K4, K2–K6).
- A spring (c0 = 4530 N/m, free length l0 = 0.07785 m, no damping) between D on K3 and the fixed
  point C.

Ten revolute joints, seven parts: three independent loops, 1 DOF. There is no gravity (the test
set has none). The inertias i1..i7 are about the axis through the centre of mass; the two
out-of-plane moments never act (every angular velocity stays along z, a principal axis), and are
set equal to it. The joint angles are the test set's coordinates minus their initial values:
β = β0 + beta.angle, Θ = Θ0 + Theta.angle, γ = γ0 + gamma.angle, δ = δ0 + delta.angle,
Φ = Φ0 + Phi.angle, ε = ε0 + epsilon.angle, Ω = Ω0 + Omega.angle.

    python samples/dynamics/make_andrews_squeezer.py [-o andrews_squeezer.cadmotion.toml]

The output is deterministic.
"""

from __future__ import annotations

import argparse
import math
import os

__all__ = ["CONSTANTS", "Y0", "ANGLES", "points", "squeezer_toml", "main"]

# andrews.f's parameter block (SI units: kg, m, kg m^2, N/m, N m).
CONSTANTS = dict(
    m1=0.04325, m2=0.00365, m3=0.02373, m4=0.00706, m5=0.07050, m6=0.00706, m7=0.05498,
    xa=-0.06934, ya=-0.00227, xb=-0.03635, yb=0.03273, xc=0.014, yc=0.072, c0=4530.0,
    i1=2.194e-6, i2=4.410e-7, i3=5.255e-6, i4=5.667e-7, i5=1.169e-5, i6=5.667e-7, i7=1.912e-5,
    d=28e-3, da=115e-4, e=2e-2, ea=1421e-5, rr=7e-3, ra=92e-5, l0=7785e-5,
    ss=35e-3, sa=1874e-5, sb=1043e-5, sc=18e-3, sd=2e-2, ta=2308e-5, tb=916e-5,
    u=4e-2, ua=1228e-5, ub=449e-5, zf=2e-2, zt=4e-2, fa=1421e-5, mom=33e-3,
)

# The consistent initial angles of andrews.f (rad), at rest.
ANGLES = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")
Y0 = dict(
    beta=-0.0617138900142764496358948458001, Theta=0.0, gamma=0.455279819163070380255912382449,
    Phi=0.222668390165885884674473185609, delta=0.487364979543842550225598953530,
    Omega=-0.222668390165885884674473185609, epsilon=1.23054744454982119249735015568,
)


def _rot(a):
    return (math.cos(a), math.sin(a))


def points(y=None):
    """Points of the mechanism (m, assembly frame) and absolute angles of K1..K7 (rad) at angles ``y``."""
    y = dict(Y0 if y is None else y)
    c = CONSTANTS
    b, th, ga, ph, de, om, ep = (y[k] for k in ANGLES)
    A, B, C = (c["xa"], c["ya"]), (c["xb"], c["yb"]), (c["xc"], c["yc"])
    P1 = (c["rr"] * math.cos(b), c["rr"] * math.sin(b))
    E = (P1[0] - c["d"] * math.cos(b + th), P1[1] - c["d"] * math.sin(b + th))
    D = (B[0] + c["sd"] * math.cos(ga) + c["sc"] * math.sin(ga), B[1] + c["sd"] * math.sin(ga) - c["sc"] * math.cos(ga))
    F = (A[0] + c["zt"] * math.cos(de), A[1] + c["zt"] * math.sin(de))
    G = (A[0] + c["u"] * math.sin(ep), A[1] - c["u"] * math.cos(ep))
    pts = dict(O=(0.0, 0.0), A=A, B=B, C=C, D=D, E=E, F=F, G=G, P1=P1)
    angle = dict(K1=b, K2=b + th, K3=ga, K4=ph + de, K5=de, K6=om + ep, K7=ep)
    return pts, angle


def _f(x):
    x = float(x)
    return repr(0.0 if x == 0.0 else x)  # no "-0.0"


def _v(xs):
    return "[" + ", ".join(_f(x) for x in xs) + "]"


def _p(xy):
    return _v([xy[0], xy[1], 0.0])


def squeezer_toml(t_end=0.03, steps=30):
    """The model file text of Andrews' squeezer at the test set's initial state."""
    c = CONSTANTS
    pts, angle = points()
    # part: (frame origin, centre of mass in the part frame (x along the part's angle), mass, inertia)
    parts = {
        "K1": ("O", (c["ra"], 0.0), c["m1"], c["i1"]),
        "K2": ("P1", (-c["da"], 0.0), c["m2"], c["i2"]),
        "K3": ("B", (c["sb"], -c["sa"]), c["m3"], c["i3"]),
        "K4": ("F", (0.0, -(c["e"] - c["ea"])), c["m4"], c["i4"]),
        "K5": ("A", (c["ta"], c["tb"]), c["m5"], c["i5"]),
        "K6": ("G", (c["zf"] - c["fa"], 0.0), c["m6"], c["i6"]),
        "K7": ("A", (c["ua"], c["ub"]), c["m7"], c["i7"]),
    }
    # joint: (first part, second part, point); the seven angle joints carry the test set's names
    joints = [
        ("beta", "ground", "K1", "O"), ("Theta", "K1", "K2", "P1"), ("gamma", "ground", "K3", "B"),
        ("delta", "ground", "K5", "A"), ("Phi", "K5", "K4", "F"), ("epsilon", "ground", "K7", "A"),
        ("Omega", "K7", "K6", "G"), ("E_K3", "K2", "K3", "E"), ("E_K4", "K2", "K4", "E"), ("E_K6", "K2", "K6", "E"),
    ]
    out = [
        "# Andrews' squeezer (Schiehlen's seven-body mechanism; Hairer & Wanner, Solving ODEs II, VII.7;",
        "# the Bari Test Set for IVP Solvers, problem `andrews`). Generated by",
        "# samples/dynamics/make_andrews_squeezer.py (do not edit; regenerate), which explains the geometry.",
        "# Seven parts K1..K7 in the x-y plane, ten revolute joints (axes z), three loops, 1 DOF; K1 driven",
        "# by a constant torque of 0.033 N m; a spring of 4530 N/m between D on K3 and C on the ground. No",
        "# gravity. Starts at rest in the test set's consistent state. The joints beta, Theta, gamma, Phi,",
        "# delta, Omega, epsilon are the test set's angles minus their initial values; reference at",
        "# t = 0.03 s: tests/kernel/test_andrews_squeezer.py.",
        'units = "m"',
        "gravity = [0, 0, 0]",
        "",
        "[simulation]",
        f"t_end = {_f(t_end)}",
        f"steps = {int(steps)}",
        "",
        "[parts.ground]",
        "fixed = true",
    ]
    for name, (origin, com, mass, inertia) in parts.items():
        a = angle[name]
        out += [
            "",
            f"[parts.{name}]",
            f"position = {_p(pts[origin])}",
            f"orientation = {_v([math.cos(a / 2), 0.0, 0.0, math.sin(a / 2)])}",
            f"mass = {_f(mass)}",
            f"com = {_v([com[0], com[1], 0.0])}",
            f"inertia = {_v([inertia, inertia, inertia])}",
        ]
    for name, first, second, point in joints:
        out += [
            "",
            "[[joints]]",
            f'name = "{name}"',
            'type = "revolute"',
            f'parts = ["{first}", "{second}"]',
            f"origin = {_p(pts[point])}",
            "axis = [0, 0, 1]",
        ]
    out += [
        "",
        "[[forces]]",
        'name = "spring"',
        'type = "spring-damper"',
        'parts = ["K3", "ground"]',
        f"points = [{_p(pts['D'])}, {_p(pts['C'])}]",
        f"stiffness = {_f(c['c0'])}",
        "damping = 0.0",
        f"free_length = {_f(c['l0'])}",
        "",
        "[[forces]]",
        'name = "drive"',
        'type = "torque"',
        'joint = "beta"',
        f'expression = "{_f(c["mom"])}"',
    ]
    return "\n".join(out) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("-o", "--output", default=os.path.join(here, "andrews_squeezer.cadmotion.toml"))
    args = parser.parse_args(argv)
    with open(args.output, "w", encoding="utf-8") as fh:
        fh.write(squeezer_toml())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
