"""Write the STEP file of the gripper sample (run once; gripper_block.step is committed).

    python samples/gripper_block/make_gripper_block.py

A parallel two-finger gripper picks a block off a table, built with CadQuery (millimetres, the
unit of the file; z up, gravity along −z). The palm slides on a vertical prismatic joint (the lift,
driven); each finger slides on the palm along x, pushed towards the block by a constant force
F_GRIP (the actuator) with a viscous damper. The block rests on the table between the open fingers.

Why it is a check: each finger is in equilibrium along its slide only when the pad's normal force
equals the actuator's force, N = F_GRIP, whatever the contact law; while the block is carried,
the pads' friction forces together lift it, 2 F_t = m (g + a) with a the lift's acceleration,
which the finger can only give while 2 μ_s F_GRIP ≥ m (g + a). With the sample's numbers the
block is carried (:func:`required_friction`); with μ below m g / (2 F_GRIP) it stays on the table.
"""

import math
from pathlib import Path

HERE = Path(__file__).resolve().parent
BLOCK = (40.0, 30.0, 30.0)        # mm, the block's edges along x, y, z (it stands on the table at z = 0)
BLOCK_DENSITY = 2700.0            # kg/m³ (aluminium)
GAP = 10.0                        # mm, between each open finger and the block
FINGER = (10.0, 30.0, 75.0)       # mm, a finger plate's edges (x thickness, y depth, z height)
FINGER_BOTTOM = 5.0               # mm, the fingers' lower ends above the table
PALM_Z = FINGER_BOTTOM + FINGER[2]  # mm, the palm's underside
PALM = (120.0, 30.0, 10.0)        # mm
F_GRIP = 5.0                      # N, each finger's actuator force
LIFT = 40.0                       # mm, the lift's travel
LIFT_START, LIFT_TIME = 0.15, 0.3  # s, when the lift starts and how long its cycloidal rise takes


def block_mass():
    """The block's mass (kg) from its edges and density."""
    return BLOCK[0] * BLOCK[1] * BLOCK[2] * 1e-9 * BLOCK_DENSITY


def lift(t):
    """The palm's lift (m) at time ``t`` (s): a cycloidal rise of LIFT in LIFT_TIME from LIFT_START
    (zero velocity and acceleration at both ends)."""
    s = min(max((t - LIFT_START) / LIFT_TIME, 0.0), 1.0)
    return LIFT * 1e-3 * (s - math.sin(2 * math.pi * s) / (2 * math.pi))


def lift_acceleration(t):
    """d²(lift)/dt² (m/s²) at ``t`` (s)."""
    s = (t - LIFT_START) / LIFT_TIME
    if s <= 0.0 or s >= 1.0:
        return 0.0
    return 2 * math.pi * LIFT * 1e-3 / LIFT_TIME ** 2 * math.sin(2 * math.pi * s)


def required_friction(g=9.81):
    """The least static friction coefficient (-) with which the pads carry the block through the
    lift: m (g + a_max) / (2 F_GRIP)."""
    a_max = 2 * math.pi * LIFT * 1e-3 / LIFT_TIME ** 2
    return block_mass() * (g + a_max) / (2 * F_GRIP)


def assembly():
    import cadquery as cq

    asm = cq.Assembly(name="gripper_block")
    table = cq.Workplane("XY").box(200, 120, 10, centered=(True, True, False)).translate((0, 0, -10))
    asm.add(table, name="table", color=cq.Color(0.55, 0.45, 0.35))
    block = cq.Workplane("XY").box(*BLOCK, centered=(True, True, False))
    asm.add(block, name="block", color=cq.Color(0.85, 0.3, 0.2))
    palm = cq.Workplane("XY").box(*PALM, centered=(True, True, False)).translate((0, 0, PALM_Z))
    asm.add(palm, name="palm", color=cq.Color(0.6, 0.6, 0.65))
    inner = BLOCK[0] / 2 + GAP
    for side, sign in (("left", -1.0), ("right", 1.0)):
        finger = (cq.Workplane("XY").box(*FINGER, centered=(True, True, False))
                  .translate((sign * (inner + FINGER[0] / 2), 0, FINGER_BOTTOM)))
        asm.add(finger, name=f"finger_{side}", color=cq.Color(0.2, 0.5, 0.85))
    return asm


if __name__ == "__main__":
    assembly().export(str(HERE / "gripper_block.step"))
    print("wrote", HERE / "gripper_block.step")
    print(f"block mass {block_mass():.6g} kg, required friction {required_friction():.4g}")
