"""Write the STEP file of the cam sample (run once; cam_follower.step is committed).

    python samples/cam/make_cam.py

A disc cam designed for a flat-faced translating follower whose slide passes through the
cam shaft, built with CadQuery from its lift law (millimetres, the unit of the file):

    base circle r_b = 30, lift H = 12; turning the cam by θ (counter-clockwise seen from +z)
    rise 0..120°, dwell 120..180°, return 180..300°, dwell 300..360°, both cycloidal:
    s = H (x − sin(2πx)/(2π)), x the fraction of the rise (1 − that on the return).

The follower sits above the cam (+y), so the cam's point that faces it after a turn θ is the
one at polar angle ψ = 90° − θ in the cam's frame: the cam's support function is
h(ψ) = r_b + s(90° − ψ), and its outline is the envelope of the follower's face,
c(ψ) = h (cos ψ, sin ψ) + h′(ψ) (−sin ψ, cos ψ), interpolated by a periodic B-spline through
360 points. :func:`lift` is the law, used by the sample's test as the closed form.
"""

import math
from pathlib import Path

import cadquery as cq

HERE = Path(__file__).resolve().parent
R_BASE, LIFT = 30.0, 12.0  # mm
RISE, DWELL_HIGH, RETURN = math.radians(120), math.radians(60), math.radians(120)
THICK = 10.0  # mm, the cam's width (z 0..10)


def lift(theta):
    """(s, ds/dθ, d²s/dθ²) of the design law at cam angle θ (rad; mm, mm/rad, mm/rad²)."""
    th = theta % (2 * math.pi)
    if th < RISE:
        x, dx, sign, base = th / RISE, 1 / RISE, 1.0, 0.0
    elif th < RISE + DWELL_HIGH:
        return LIFT, 0.0, 0.0
    elif th < RISE + DWELL_HIGH + RETURN:
        x, dx, sign, base = (th - RISE - DWELL_HIGH) / RETURN, 1 / RETURN, -1.0, LIFT
    else:
        return 0.0, 0.0, 0.0
    s = LIFT * (x - math.sin(2 * math.pi * x) / (2 * math.pi))
    ds = LIFT * (1 - math.cos(2 * math.pi * x)) * dx
    dds = LIFT * 2 * math.pi * math.sin(2 * math.pi * x) * dx * dx
    return base + sign * s, sign * ds, sign * dds


def outline(n=360):
    """Points of the cam's outline in its frame (mm), the envelope of the follower's face."""
    pts = []
    for k in range(n):
        psi = 2 * math.pi * k / n
        s, ds, _ = lift(math.pi / 2 - psi)
        h, dh = R_BASE + s, -ds  # dh/dψ = −s′(90° − ψ)
        pts.append((h * math.cos(psi) - dh * math.sin(psi), h * math.sin(psi) + dh * math.cos(psi)))
    return pts


def assembly():
    asm = cq.Assembly(name="cam_follower")
    frame = (cq.Workplane("XY", origin=(0, 0, -8)).rect(120, 40).extrude(6)          # base plate under the cam
             .union(cq.Workplane("XY", origin=(-20, 60, -8)).rect(10, 80).extrude(30)))  # the guide's post
    asm.add(frame, name="frame", color=cq.Color(0.6, 0.6, 0.6))
    cam = cq.Workplane("XY").spline(outline(), periodic=True).close().extrude(THICK)
    cam = cam.union(cq.Workplane("XY", origin=(0, 0, -2)).circle(8).extrude(THICK + 4))  # hub on the shaft
    asm.add(cam, name="cam", color=cq.Color(0.85, 0.3, 0.2))
    # the follower: a flat foot (its face at y = r_b, touching the base circle) and a stem up +y
    foot = cq.Workplane("XY", origin=(0, R_BASE + 2, THICK / 2)).box(50, 4, THICK)
    stem = cq.Workplane("XZ", origin=(0, R_BASE + 4, THICK / 2)).circle(5).extrude(-70)
    asm.add(foot.union(stem), name="follower", color=cq.Color(0.2, 0.5, 0.85))
    return asm


if __name__ == "__main__":
    assembly().export(str(HERE / "cam_follower.step"))
    print("wrote", HERE / "cam_follower.step")
