"""The IFToMM N-four-bar (A02, N = 2) in Exudyn, the peer beside ``benchmarks/singular.py``.

Run with an interpreter that has Exudyn (``PEERS_VENV``, see ``../README.md``); prints one
JSON line per step size: B0(10 s) error against the exact value, energy drift, wall time.

Model (SI, motion in the x–y plane, gravity 9.81 m/s² along −y): three vertical 1 m / 1 kg
thin rods pivoting on the ground at x = 0, 1, 2; two 1 m / 1 kg couplers joining their tops;
seven revolutes. Exudyn: ObjectRigidBody2D per rod (absolute coordinates x, y, φ at the
centre of mass), RevoluteJoint2D, index-3 generalised-α at a fixed step h (its default
spectral radius 0.9 unless ``EX_RHO`` is set), Newton tolerances 1e-10 / 1e-12.
B0 (top of the first rod) starts at (0, 1) moving at +1 m/s; exact energy 35.835 J; exact
B0(10 s) = (0.328458111541, 0.944518538179) (IFToMM library of computational benchmark
problems; cadmotion's test derives the 1-DOF reduction 3θ̈ + 34.335 cos θ = 0 independently).
"""
import json
import math
import os
import sys
import time

import exudyn as exu
from exudyn.itemInterface import (Gravity, MarkerBodyMass, MarkerBodyPosition, NodeRigidBody2D, ObjectGround,
                                  ObjectRigidBody2D, RevoluteJoint2D)

G, L, M, T_END = 9.81, 1.0, 1.0, 10.0
B0_EXACT = (0.328458111541, 0.944518538179)
E_EXACT = 35.835
STEPS = [float(h) for h in os.environ.get("EX_H", "1e-2,1e-3,1e-4").split(",")]
RHO = float(os.environ.get("EX_RHO", "0.9"))


def rod(mbs, centre, phi, velocity, omega):
    """A uniform rod (node at its centre, local x along it); its start and end markers."""
    n = mbs.AddNode(NodeRigidBody2D(referenceCoordinates=[centre[0], centre[1], phi],
                                    initialVelocities=[velocity[0], velocity[1], omega]))
    b = mbs.AddObject(ObjectRigidBody2D(mass=M, inertia=M * L * L / 12.0, nodeNumber=n))
    start = mbs.AddMarker(MarkerBodyPosition(bodyNumber=b, localPosition=[-0.5 * L, 0, 0]))
    end = mbs.AddMarker(MarkerBodyPosition(bodyNumber=b, localPosition=[0.5 * L, 0, 0]))
    mbs.AddLoad(Gravity(markerNumber=mbs.AddMarker(MarkerBodyMass(bodyNumber=b)), loadVector=[0, -G, 0]))
    return n, start, end


def build():
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    ground = mbs.AddObject(ObjectGround(referencePosition=[0, 0, 0]))
    rods = [rod(mbs, (k, 0.5), math.pi / 2, (0.5, 0.0), -1.0) for k in range(3)]  # top moves at +1 m/s
    couplers = [rod(mbs, (k + 0.5, 1.0), 0.0, (1.0, 0.0), 0.0) for k in range(2)]
    for k, (_, start, end) in enumerate(rods):
        pivot = mbs.AddMarker(MarkerBodyPosition(bodyNumber=ground, localPosition=[float(k), 0, 0]))
        mbs.AddObject(RevoluteJoint2D(markerNumbers=[pivot, start]))
    for k, (_, start, end) in enumerate(couplers):
        mbs.AddObject(RevoluteJoint2D(markerNumbers=[rods[k][2], start]))
        mbs.AddObject(RevoluteJoint2D(markerNumbers=[rods[k + 1][2], end]))
    mbs.Assemble()
    return SC, mbs, [r[0] for r in rods + couplers]


def state(mbs, n):
    p = mbs.GetNodeOutput(n, exu.OutputVariableType.Position)
    v = mbs.GetNodeOutput(n, exu.OutputVariableType.Velocity)
    q = mbs.GetNodeOutput(n, exu.OutputVariableType.Coordinates)
    w = mbs.GetNodeOutput(n, exu.OutputVariableType.Coordinates_t)
    return p[0], p[1], mbs.GetNode(n)["referenceCoordinates"][2] + q[2], v[0], v[1], w[2]


def energy(mbs, nodes):
    E = 0.0
    for n in nodes:
        x, y, phi, vx, vy, w = state(mbs, n)
        E += 0.5 * M * (vx * vx + vy * vy) + 0.5 * M * L * L / 12.0 * w * w + M * G * y
    return E


def run(h):
    SC, mbs, nodes = build()
    ss = exu.SimulationSettings()
    ss.solution.file.write = False
    ss.solution.sensors.writePeriod = T_END
    ss.timeIntegration.endTime = T_END
    ss.timeIntegration.numberOfSteps = int(round(T_END / h))
    ss.timeIntegration.verboseMode = 0
    ss.timeIntegration.newton.relativeTolerance = 1e-10
    ss.timeIntegration.newton.absoluteTolerance = 1e-12
    ss.timeIntegration.generalizedAlpha.spectralRadius = RHO
    E0 = energy(mbs, nodes)
    t0 = time.perf_counter()
    try:
        mbs.SolveDynamic(ss)
    except exu.SolverError as e:  # the Newton iteration fails (at a singular configuration)
        return dict(engine="exudyn", version=exu.__version__, problem="A02", h=h, rho=RHO,
                    error=f"{e} at t = {mbs.systemData.GetTime():.6g} s", wall_time_s=time.perf_counter() - t0)
    wall = time.perf_counter() - t0
    x, y, phi = state(mbs, nodes[0])[:3]
    b0 = (x + 0.5 * L * math.cos(phi), y + 0.5 * L * math.sin(phi))
    return dict(engine="exudyn", version=exu.__version__, problem="A02", integrator="generalized-alpha (index 3)",
                h=h, rho=RHO, steps=int(round(T_END / h)), wall_time_s=wall,
                b0=b0, b0_error_m=math.hypot(b0[0] - B0_EXACT[0], b0[1] - B0_EXACT[1]),
                energy_start_J=E0, energy_drift_J=energy(mbs, nodes) - E0)


if __name__ == "__main__":
    for h in STEPS:
        sys.stdout.write(json.dumps(run(h)) + "\n")
        sys.stdout.flush()
