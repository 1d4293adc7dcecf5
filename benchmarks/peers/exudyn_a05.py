"""The IFToMM stiff flyball governor (A05) in Exudyn, the peer beside ``benchmarks/stiff.py``.

Run with an interpreter that has Exudyn (``PEERS_VENV``, see ``../README.md``); prints one
JSON line per step size h (``EX_H``, s): wall time (the median of ``EX_REPEAT`` runs, default
3), the slider's height at 10 s, the drift of the axial angular momentum
max |L_z − L_z(0)| / L_z(0) and the largest rise of the total energy between output frames
(J; kinetic + gravity + springs, which the dampers can only lower).

Model as Exudyn's own example ``Examples/stiffFlyballGovernorKT.py`` builds it: one
``ObjectKinematicTree`` of four links — the shaft (revolute about z at the origin, 0.01 ×
0.01 × 1 m, 3000 kg/m³), the slider on it (prismatic along z, 0.1 m cube, 3 kg, its centre at
z = 0.5 m) and two rods hinged at (±0.05, 0, 1) m (revolutes about y, 1 × 0.01 × 0.01 m,
0.3 kg, each with a 5 kg point mass at its far end), pointing outward 30° below the
horizontal —, two ``SpringDamper`` objects from the rods' midpoints to the slider's sides
(K = 8e5 N/m, C = 4e4 N s/m, rest length 0.5 m), gravity 9.81 m/s² along −z, the shaft
spinning at 2π rad/s; 10 s. Integrator as in the example: ``TrapezoidalIndex2`` (its
generalised-α family, spectral radius 0.7) at a fixed step h with modified Newton
(at most 2 iterations per Jacobian), Newton tolerances 1e-6 (the example's; ``EX_TOL``),
100 output frames for the sensors.
"""
import json
import math
import os
import sys
import time

import exudyn as exu
import numpy as np
from exudyn.itemInterface import (NodeGenericODE2, ObjectGround, ObjectKinematicTree, MarkerKinematicTreeRigid,
                                  SensorKinematicTree, SpringDamper)
from exudyn.utilities import InertiaCuboid, InertiaMassPoint, RotationMatrixY

T_END, FRAMES = 10.0, 100
G = [0.0, 0.0, -9.81]
K_SPRING, C_SPRING, L0 = 8e5, 4e4, 0.5
STEPS = [float(h) for h in os.environ.get("EX_H", "5e-3,1e-3,5e-4,2e-4").split(",")]
REPEAT = int(os.environ.get("EX_REPEAT", "3"))
TOL = float(os.environ.get("EX_TOL", "1e-6"))
OMEGA0 = 2.0 * math.pi
BETA0 = math.radians(30.0)


def build():
    """(SC, mbs, per-link sensors, spring-end sensors, link masses, COMs, inertias at the COM)."""
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    mbs.AddObject(ObjectGround(referencePosition=[0, 0, 0]))
    rod = (InertiaCuboid(density=3000, sideLengths=[1.0, 0.01, 0.01]).Translated([0.5, 0, 0])
           + InertiaMassPoint(mass=5.0).Translated([1.0, 0, 0]))
    inertias = [InertiaCuboid(density=3000, sideLengths=[0.01, 0.01, 1.0]),
                InertiaCuboid(density=3000, sideLengths=[0.1, 0.1, 0.1]), rod, rod]
    node = mbs.AddNode(NodeGenericODE2(referenceCoordinates=[0.0] * 4, initialCoordinates=[0.0] * 4,
                                       initialCoordinates_t=[OMEGA0, 0, 0, 0], numberOfODE2Coordinates=4))
    offsets = [[0, 0, 0.5], [0, 0, 0.0], [0.05, 0, 0.5], [-0.05, 0, 0.5]]  # each relative to its parent
    turns = [np.eye(3), np.eye(3), RotationMatrixY(BETA0), RotationMatrixY(math.pi - BETA0)]
    masses, coms, inertia_com = [], exu.Vector3DList(), exu.Matrix3DList()
    transforms, joint_offsets = exu.Matrix3DList(), exu.Vector3DList()
    for i, J in enumerate(inertias):
        masses.append(J.Mass())
        coms.Append(J.COM())
        inertia_com.Append(J.InertiaCOM())
        transforms.Append(turns[i])
        joint_offsets.Append(offsets[i])
    tree = mbs.AddObject(ObjectKinematicTree(
        nodeNumber=node, jointTypes=[exu.JointType.RevoluteZ, exu.JointType.PrismaticZ, exu.JointType.RevoluteY,
                                     exu.JointType.RevoluteY],
        linkParents=[-1, 0, 0, 0], jointTransformations=transforms, jointOffsets=joint_offsets,
        linkInertiasCOM=inertia_com, linkCOMs=coms, linkMasses=masses, baseOffset=[0.0, 0.0, 0.0], gravity=G))
    ends = []
    for rod_link, side in ((2, 0.05), (3, -0.05)):
        a = mbs.AddMarker(MarkerKinematicTreeRigid(objectNumber=tree, linkNumber=1, localPosition=[side, 0, 0]))
        b = mbs.AddMarker(MarkerKinematicTreeRigid(objectNumber=tree, linkNumber=rod_link, localPosition=[0.5, 0, 0]))
        mbs.AddObject(SpringDamper(markerNumbers=[a, b], stiffness=K_SPRING, damping=C_SPRING, referenceLength=L0))
        ends.append([_sensor(mbs, tree, 1, [side, 0, 0], exu.OutputVariableType.Position),
                     _sensor(mbs, tree, rod_link, [0.5, 0, 0], exu.OutputVariableType.Position)])
    links = []
    for i in range(4):
        com = list(inertias[i].COM())
        links.append({kind: _sensor(mbs, tree, i, com, kind) for kind in (
            exu.OutputVariableType.Position, exu.OutputVariableType.Velocity,
            exu.OutputVariableType.AngularVelocity, exu.OutputVariableType.RotationMatrix)})
    mbs.Assemble()
    return SC, mbs, links, ends, masses, [np.asarray(J.InertiaCOM()) for J in inertias]


def _sensor(mbs, tree, link, local, kind):
    return mbs.AddSensor(SensorKinematicTree(objectNumber=tree, linkNumber=link, localPosition=local,
                                             outputVariableType=kind, storeInternal=True, writeToFile=False))


def invariants(mbs, links, ends, masses, inertia_com):
    """(time, L_z, E) per stored frame from the links' COM position and velocity, angular
    velocity and rotation (global frame) and the springs' end points."""
    data = {i: {k: mbs.GetSensorStoredData(s) for k, s in link.items()} for i, link in enumerate(links)}
    t = data[0][exu.OutputVariableType.Position][:, 0]
    L, E = np.zeros(len(t)), np.zeros(len(t))
    for i, m in enumerate(masses):
        r = data[i][exu.OutputVariableType.Position][:, 1:]
        v = data[i][exu.OutputVariableType.Velocity][:, 1:]
        w = data[i][exu.OutputVariableType.AngularVelocity][:, 1:]
        R = data[i][exu.OutputVariableType.RotationMatrix][:, 1:].reshape(-1, 3, 3)
        Jw = np.einsum("kij,jl,kml,km->ki", R, inertia_com[i], R, w)  # R I Rᵀ ω
        L += m * np.cross(r, v)[:, 2] + Jw[:, 2]
        E += 0.5 * m * np.sum(v * v, 1) + 0.5 * np.sum(w * Jw, 1) - m * (r @ np.asarray(G))
    for a, b in ends:
        pa, pb = mbs.GetSensorStoredData(a)[:, 1:], mbs.GetSensorStoredData(b)[:, 1:]
        E += 0.5 * K_SPRING * (np.linalg.norm(pb - pa, axis=1) - L0) ** 2
    return t, L, E


def run(h):
    SC, mbs, links, ends, masses, inertia_com = build()
    ss = exu.SimulationSettings()
    ss.solution.file.write = False
    ss.solution.sensors.writePeriod = T_END / FRAMES
    ss.timeIntegration.endTime = T_END
    ss.timeIntegration.numberOfSteps = int(round(T_END / h))
    ss.timeIntegration.verboseMode = 0
    ss.timeIntegration.generalizedAlpha.computeInitialAccelerations = True
    ss.timeIntegration.generalizedAlpha.spectralRadius = 0.7
    ss.timeIntegration.newton.useModifiedNewton = True
    ss.timeIntegration.newton.maxModifiedNewtonIterations = 2
    ss.timeIntegration.newton.numericalDifferentiation.jacobianConnectorDerivative = False
    ss.timeIntegration.newton.relativeTolerance = TOL
    ss.timeIntegration.newton.absoluteTolerance = TOL
    out = dict(engine="exudyn", version=exu.__version__, problem="A05", integrator="TrapezoidalIndex2 (kinematic tree)",
               h=h, newton_tol=TOL, steps=int(round(T_END / h)))
    t0 = time.perf_counter()
    try:
        mbs.SolveDynamic(ss, solverType=exu.DynamicSolverType.TrapezoidalIndex2)
    except exu.SolverError as e:
        return dict(out, error=f"{e} at t = {mbs.systemData.GetTime():.6g} s", wall_time_s=time.perf_counter() - t0)
    out["wall_time_s"] = time.perf_counter() - t0
    t, L, E = invariants(mbs, links, ends, masses, inertia_com)
    z = mbs.GetSensorStoredData(links[1][exu.OutputVariableType.Position])[-1, 3]
    return dict(out, frames=len(t), t_last=float(t[-1]), slider_z=float(z), L_z0=float(L[0]),
                L_z_drift=float(np.max(np.abs(L - L[0])) / abs(L[0])), max_energy_rise_J=float(np.max(np.diff(E))))


if __name__ == "__main__":
    for h in STEPS:
        runs = [run(h) for _ in range(max(1, REPEAT))]
        out = dict(runs[-1], wall_time_s=float(np.median([r["wall_time_s"] for r in runs])), repeat=len(runs))
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
