"""Write the STEP file of the Geneva-drive sample (run once; geneva.step is committed).

    python samples/geneva/make_geneva.py

An external Geneva drive of four slots, built with CadQuery (millimetres, the unit of the file):
the driver turns about z at D = (C, 0) with its pin (radius R_PIN) at the crank radius A; the
wheel turns about z at the origin. For the pin to enter and leave the slots radially, the centre
distance is C = A / sin(π/4) and the wheel's slots run radially up to its radius sqrt(C² − A²).

The wheel is built with its slots along its own x and y axes and placed turned by 45°: at the
start (driver angle ψ0 = 120°, 15° before the pin enters) the slot that takes the pin points at
the entry point. While the pin is in a slot, the slot points at the pin, so with ψ the driver's
angle (from +x, counter-clockwise) the wheel's angle is the closed form

    φ(ψ) = atan2(A sin ψ, C + A cos ψ)        for 135° ≤ ψ ≤ 225° (the wheel turns 90°, clockwise)

(:func:`wheel_angle`, used by the sample's test). Each slot's two walls are the wheel's contact
boxes in the model file (:func:`slot_walls` gives their numbers).
"""

import math
from pathlib import Path

HERE = Path(__file__).resolve().parent
A = 40.0                            # mm, crank radius (driver axis to pin axis)
C = A / math.sin(math.pi / 4)       # mm, centre distance
R_PIN = 4.0                         # mm
CLEARANCE = 0.05                    # mm, between the pin and each slot wall
SLOT_HALF = R_PIN + CLEARANCE       # mm, half the slot's width
R_WHEEL = math.sqrt(C * C - A * A)  # mm, where the slots open (the pin's entry radius)
SLOT_BOTTOM = C - A - R_PIN - 1.0   # mm, from the wheel axis
WALL = 6.0                          # mm, the wall boxes' thickness
WALL_SHORT = 3.0                    # mm, the walls end this far inside the slot's mouth (the pin comes in
                                    # along a circle, off the slot's line by A Δψ²/2 before it enters)
THICK = 10.0                        # mm, plates' thickness (z 0..10)
PSI0 = math.radians(120.0)          # the driver's angle at the start
PHI0 = math.radians(45.0)           # the wheel's angle at the start


def wheel_angle(psi):
    """The wheel's angle (rad) while the pin drives it, at the driver's angle ``psi`` (rad)."""
    return math.atan2(A * math.sin(psi), C + A * math.cos(psi))


def slot_walls():
    """[(edges (3,), centre (3,)) mm] of the wheel's eight slot walls, in the wheel's frame (slots
    along ±x and ±y), as boxes: the wheel's material on each side of each slot."""
    length = R_WHEEL - WALL_SHORT - SLOT_BOTTOM
    mid = SLOT_BOTTOM + 0.5 * length
    off = SLOT_HALF + 0.5 * WALL
    walls = []
    for sign in (1.0, -1.0):
        for side in (1.0, -1.0):
            walls.append(((length, WALL, THICK), (sign * mid, side * off, THICK / 2)))  # slot along x
            walls.append(((WALL, length, THICK), (side * off, sign * mid, THICK / 2)))  # slot along y
    return walls


def assembly():
    import cadquery as cq

    asm = cq.Assembly(name="geneva")
    frame = cq.Workplane("XY", origin=(C / 2, 0, -8)).rect(C + 110, 110).extrude(5)
    asm.add(frame, name="frame", color=cq.Color(0.6, 0.6, 0.6))
    wheel = cq.Workplane("XY").circle(R_WHEEL + 6.0).extrude(THICK)
    for angle in (0, 90, 180, 270):
        slot = (cq.Workplane("XY").rect(2 * (R_WHEEL + 10.0), 2 * SLOT_HALF)
                .extrude(THICK).translate((R_WHEEL + 10.0 + SLOT_BOTTOM, 0, 0))
                .rotate((0, 0, 0), (0, 0, 1), angle))
        wheel = wheel.cut(slot)
    wheel = wheel.cut(cq.Workplane("XY").circle(4.0).extrude(THICK))
    asm.add(wheel, name="wheel", loc=cq.Location((0, 0, 0), (0, 0, 1), math.degrees(PHI0)),
            color=cq.Color(0.2, 0.5, 0.85))
    arm = (cq.Workplane("XY").rect(A, 10).extrude(4).translate((A / 2, 0, THICK + 1))
           .union(cq.Workplane("XY").circle(8).extrude(4).translate((0, 0, THICK + 1))))
    pin = cq.Workplane("XY").circle(R_PIN).extrude(THICK + 1).translate((A, 0, 0))
    asm.add(arm.union(pin), name="driver",
            loc=cq.Location((C, 0, 0), (0, 0, 1), math.degrees(PSI0)), color=cq.Color(0.85, 0.3, 0.2))
    return asm


if __name__ == "__main__":
    assembly().export(str(HERE / "geneva.step"))
    print("wrote", HERE / "geneva.step")
    for edges, centre in slot_walls():
        print(f"{{ box = [{edges[0]:.6g}, {edges[1]:.6g}, {edges[2]:.6g}], "
              f"center = [{centre[0]:.6g}, {centre[1]:.6g}, {centre[2]:.6g}] }}")
