"""Write the chain-drive sample: a roller chain on two equal sprockets, roller–tooth contacts (issue 16).

Geometry (ISO 606 08B-like, in the x-y plane, z the sprockets' axes): pitch p = 12.7 mm, z = 16
teeth, pitch radius r = p / (2 sin(π/z)) = 32.55 mm; N links (even, > z), centre distance
C = (N − z) p / 2, so the chain lies exactly on the two pitch polygons and the two straight spans at
the initial pose (sprocket A at the origin, B at (C, 0)). Link k runs from roller k to roller k + 1
(revolute joint k + 1 there, axis z; joint 0 closes the loop); its roller, a sphere of radius
R_r = 4 mm, sits at its start. The teeth are spheres of radius R_t on a circle of radius r − 4 mm,
midway between the roller seats, so a seated roller rests on the two teeth beside it; R_t leaves a
clearance of 10 µm at the initial pose (no part starts inside another).

Every roller is declared against every tooth of both sprockets: 2 z N contacts, compliant by default
(k = 1e9 N/m^1.5, Hertz exponent, damping λ, friction 0.1), or with ``--method unilateral`` unilateral
constraints active only while a roller touches a tooth, with restitution e = 0 and friction 0.1. Plastic
impacts because a seated roller sits between two teeth 10 µm from each, where a rebound only strikes the
other tooth again: with e = 0.3 the 60-link drive's first 5 ms take 440 impacts (30 s, against 139 at
e = 0; 2026-11-27); the oil film and the bush of a real chain take most of that energy, and e = 0 seats the
roller at its first strike. μ = 0.1, lubricated steel on
steel (the compliant sample's). Sprocket A is driven at a constant
speed, φ_A = −ω t (clockwise, 1 rev/s; the chain and sprocket B start at rest, so the first teeth
strike their rollers: a contact closing at a known speed is never stepped over, while one started
by an acceleration from rest could be), sprocket B carries a viscous brake τ_B = −c φ̇_B.
No gravity. Masses: a link 8 g (rod of length p), a sprocket 0.3 kg.

    python samples/dynamics/make_chain_drive.py [--links 60] [--t-end 0.2] [--method compliant|unilateral]
        [-o chain_drive.cadmotion.toml]

Checks (benchmarks/contacts.py): the driven sprocket's mean speed equals the driver's (equal teeth:
the chain passes the same number of teeth per second over each), and the run's energy balance.
"""

from __future__ import annotations

import argparse
import math
import os

__all__ = ["chain_drive_toml", "pitch_radius", "main", "PITCH", "TEETH"]

PITCH = 0.0127          # m
TEETH = 16
ROLLER = 0.004          # m, roller radius
SEAT = 0.004            # m, the teeth's centres sit this far inside the pitch circle
CLEARANCE = 1e-5        # m, between a seated roller and its teeth at the initial pose
LINK_MASS = 0.008       # kg
SPROCKET_MASS = 0.3     # kg
SPROCKET_INERTIA = 1.6e-4  # kg m^2 about the axis (a 33 mm disc of 0.3 kg: m r² / 2)
OMEGA = 2.0 * math.pi   # rad/s, the driver's speed
BRAKE = 0.5             # N m s, the driven sprocket's viscous brake
STIFFNESS = 1e9         # N/m^1.5
DAMPING = 1e9           # N s/m^2.5 (Hunt–Crossley λ: α = λ/k = 1 s/m)
FRICTION = 0.1
RESTITUTION = 0.0       # unilateral method: a roller's impact on a tooth (plastic; see the docstring)
METHODS = ("compliant", "unilateral")


def pitch_radius(teeth=TEETH, pitch=PITCH):
    """r = p / (2 sin(π/z)), m."""
    return pitch / (2.0 * math.sin(math.pi / teeth))


def _f(x):
    x = float(x)
    return repr(0.0 if x == 0.0 else x)


def _v(xs):
    return "[" + ", ".join(_f(x) for x in xs) + "]"


def rollers(n, teeth=TEETH, pitch=PITCH):
    """The N roller centres (x, y) m at the initial pose, in chain order: the upper span from A's
    top to B's top, round B, the lower span back, round A."""
    r = pitch_radius(teeth, pitch)
    span = (n - teeth) // 2
    c = span * pitch
    dth = 2.0 * math.pi / teeth
    pts = [(k * pitch, r) for k in range(span)]                                         # upper span, A top → B
    pts += [(c + r * math.cos(math.pi / 2 - k * dth), r * math.sin(math.pi / 2 - k * dth))
            for k in range(teeth // 2)]                                                # round B, from its top
    pts += [(c - k * pitch, -r) for k in range(span)]                                   # lower span, B → A
    pts += [(r * math.cos(-math.pi / 2 - k * dth), r * math.sin(-math.pi / 2 - k * dth))
            for k in range(teeth // 2)]                                                # round A, from its bottom
    return pts, c


def _tooth_radius(teeth=TEETH, pitch=PITCH):
    r = pitch_radius(teeth, pitch)
    half = math.pi / teeth
    d = math.sqrt(r * r + (r - SEAT) ** 2 - 2.0 * r * (r - SEAT) * math.cos(half))
    return d - ROLLER - CLEARANCE


def _method_option(method):
    """The generator's option that writes ``method`` ('' for the default, compliant)."""
    return "" if method == "compliant" else f" --method {method}"


def _contact_law(method):
    """The model file lines of a roller–tooth contact's law in ``method`` (compliant or unilateral)."""
    if method == "compliant":
        return ['method = "compliant"', f"stiffness = {_f(STIFFNESS)}", "exponent = 1.5",
                f"damping = {_f(DAMPING)}", f"friction = {_f(FRICTION)}"]
    if method == "unilateral":
        return ['method = "unilateral"', f"restitution = {_f(RESTITUTION)}", f"friction = {_f(FRICTION)}"]
    raise ValueError(f"unknown contact method {method!r}: use one of {', '.join(METHODS)}")


def chain_drive_toml(n=60, t_end=0.2, steps=200, method="compliant"):
    """The model file text of the N-link chain drive, its roller–tooth contacts in ``method``."""
    law = _contact_law(method)
    r = pitch_radius()
    rt = _tooth_radius()
    reach = r - SEAT + rt  # a sprocket's outer radius (its teeth)
    if n % 2 or (n - TEETH) // 2 * PITCH <= 2.0 * reach:
        shortest = TEETH + 2 * (math.floor(2.0 * reach / PITCH) + 1)
        raise ValueError(f"the chain needs an even number of links, at least {shortest} (the sprockets apart), "
                         f"got {n}")
    pts, c = rollers(n)
    I_link = LINK_MASS * PITCH ** 2 / 12.0
    out = [
        f"# Roller-chain drive: {n} links on two {TEETH}-tooth sprockets, every roller declared against every",
        f"# tooth ({method} contacts; issue 16 item 6). Generated by samples/dynamics/make_chain_drive.py",
        f"# --links {n}{_method_option(method)} (do not edit; regenerate). Pitch {PITCH * 1e3:g} mm, pitch radius "
        f"{r * 1e3:.3f} mm, centre",
        f"# distance {c * 1e3:.1f} mm; sprocket A driven at 1 rev/s, B braked (viscous, {BRAKE} N m s).",
        f"# {2 * TEETH * n} contacts: {n} rollers x {2 * TEETH} teeth.",
        'units = "m"',
        "gravity = [0, 0, 0]",
        "",
        "[simulation]",
        f"t_end = {_f(t_end)}",
        f"steps = {int(steps)}",
        "",
        "[parts.frame]",
        "fixed = true",
    ]
    for name, x in (("sprocket_a", 0.0), ("sprocket_b", c)):
        out += ["", f"[parts.{name}]", f"position = {_v([x, 0, 0])}", f"mass = {_f(SPROCKET_MASS)}",
                f"inertia = {_v([SPROCKET_INERTIA / 2, SPROCKET_INERTIA / 2, SPROCKET_INERTIA])}"]
    for k in range(n):
        (x0, y0), (x1, y1) = pts[k], pts[(k + 1) % n]
        a = math.atan2(y1 - y0, x1 - x0)
        out += ["", f"[parts.link{k}]", f"position = {_v([x0, y0, 0])}",
                f"orientation = {_v([math.cos(a / 2), 0, 0, math.sin(a / 2)])}", f"mass = {_f(LINK_MASS)}",
                f"com = {_v([PITCH / 2, 0, 0])}", f"inertia = {_v([1e-9, I_link, I_link])}"]
    for name, x in (("axle_a", 0.0), ("axle_b", c)):
        out += ["", "[[joints]]", f'name = "{name}"', 'type = "revolute"',
                f'parts = ["frame", "sprocket_{name[-1]}"]', f"origin = {_v([x, 0, 0])}", "axis = [0, 0, 1]"]
    for k in range(n):
        out += ["", "[[joints]]", f'name = "pin{(k + 1) % n}"', 'type = "revolute"',
                f'parts = ["link{k}", "link{(k + 1) % n}"]', f"origin = {_v([*pts[(k + 1) % n], 0])}",
                "axis = [0, 0, 1]"]
    out += ["", "[[drivers]]", 'joint = "axle_a"',
            f'expression = "{_f(-OMEGA)}*t"',
            "", "[[forces]]", 'name = "brake"', 'type = "torque"', 'joint = "axle_b"',
            f'expression = "{_f(-BRAKE)}*qd"']
    for sprocket in ("a", "b"):
        for j in range(TEETH):
            th = math.pi / 2 + (j + 0.5) * 2.0 * math.pi / TEETH
            centre = [(r - SEAT) * math.cos(th), (r - SEAT) * math.sin(th), 0.0]
            out += ["", "[[contacts]]", f'name = "tooth_{sprocket}{j}"', f'pairs = [["link*", "sprocket_{sprocket}"]]',
                    f'shape = {{ "link*" = {{ sphere = {_f(ROLLER)} }}, "sprocket_{sprocket}" = '
                    f'{{ sphere = {_f(rt)}, center = {_v(centre)} }} }}',
                    *law]
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, default=60)
    ap.add_argument("--t-end", type=float, default=0.2)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--method", choices=METHODS, default="compliant", help="the roller–tooth contacts' method")
    ap.add_argument("-o", "--output", default=os.path.join(os.path.dirname(__file__), "chain_drive.cadmotion.toml"))
    args = ap.parse_args(argv)
    text = chain_drive_toml(args.links, args.t_end, args.steps, args.method)
    with open(args.output, "w") as fh:
        fh.write(text)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
