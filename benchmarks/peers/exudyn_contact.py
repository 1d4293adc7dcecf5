"""The shared contact problems in Exudyn, the peer beside ``benchmarks/contact_peers.py``.

Run with an interpreter that has Exudyn (``PEERS_VENV``, see ``../README.md``); prints one JSON
line per case and step size h (``EX_H``, s): wall time (the median of ``EX_REPEAT`` runs, default
3, of ``SolveDynamic`` alone) and the error against the closed form (the ball's impacts and apexes
from one more run with a position sensor at every step).

Problems (SI; the same as cadmotion's samples ``block_on_incline*`` and ``bouncing_ball*``, and as
``mujoco_contact.py``):

* block on an incline, θ = 20°, in the incline's frame (x down the slope, z normal to it, gravity
  9.81 [sin θ, 0, −cos θ] m/s²): a 1 kg block (inertia 1.6667e-3, 4.1667e-3, 4.1667e-3 kg m²) on four
  spherical feet (R = 5 mm, centres at (±0.1, ±0.05, −0.05) m from its origin) on the plane z = 0,
  touching at t = 0, released from rest, 1 s. ``slide``: μ = 0.2 (tan θ = 0.364 > μ), the closed form
  x(1 s) = ½ g (sin θ − μ cos θ) = 0.75584 m; ``stick``: μ = 0.5 > tan θ, x(t) = 0. Exudyn's contact
  friction has one coefficient (``dynamicFriction``), regularised below ``frictionProportionalZone``
  v_r (here 1e-3 m/s, its default): a block held by friction creeps at v_r tan θ / μ.
* ball dropped on a floor: R = 0.05 m, 1 kg, its lowest point 1 m above the floor, restitution
  e = 0.8, 2 s; impacts at t1 = sqrt(2 h0/g) = 0.45152 s and t2 = t1 (1 + 2e) = 1.17396 s, apex
  heights e² h0 = 0.64 m and e⁴ h0 = 0.4096 m.

Model: ``CreateRigidBody`` (Euler-parameter node) and, per foot or ball, ``CreateSphereQuadContact``
— two ``ObjectContactSphereTriangle`` on a 4 × 4 m ground quad, each with its ``NodeGenericData``
(gap, stick/slip, impact speed) for the discontinuous (post-Newton) iteration — with cadmotion's
compliant law: Hertz stiffness (exponent 1.5; 1e6 N/m^1.5 on the incline, 1e7 for the ball) and
``impactModel`` 2 (Gonthier / Carvalho–Martins damping from the restitution coefficient; 0.5 on the
incline, 0.8 for the ball). Integrator: ``SolveDynamic``'s generalised-α (spectral radius 0.9) at
a fixed step h, Newton tolerances 1e-10 / 1e-12.
"""
import json
import math
import os
import statistics
import sys
import time

import exudyn as exu
import numpy as np
from exudyn.itemInterface import ObjectGround, SensorNode
from exudyn.utilities import RigidBodyInertia

G, TH = 9.81, math.radians(20.0)
STEPS = [float(h) for h in os.environ.get("EX_H", "1e-3,1e-4").split(",")]
REPEAT = int(os.environ.get("EX_REPEAT", "3"))
E_REST, H0, R_BALL = 0.8, 1.0, 0.05
QUAD = [[-2.0, -2.0, 0.0], [2.0, -2.0, 0.0], [2.0, 2.0, 0.0], [-2.0, 2.0, 0.0]]


def incline(mu):
    """The block on its four feet; returns (SystemContainer, mbs, the block's node, None)."""
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    ground = mbs.AddObject(ObjectGround())
    inertia = RigidBodyInertia(mass=1.0, inertiaTensor=np.diag([0.0016667, 0.0041667, 0.0041667]))
    block = mbs.CreateRigidBody(referencePosition=[0, 0, 0.055], inertia=inertia,
                                gravity=[G * math.sin(TH), 0.0, -G * math.cos(TH)], returnDict=True)
    for x in (0.1, -0.1):
        for y in (0.05, -0.05):
            mbs.CreateSphereQuadContact(itemNumbers=[block["bodyNumber"], ground], localPosition0=[x, y, -0.05],
                                        sphereRadius=0.005, quadPoints=QUAD, includeEdges=0, dynamicFriction=mu,
                                        contactStiffness=1e6, contactStiffnessExponent=1.5,
                                        restitutionCoefficient=0.5, impactModel=2)
    return SC, mbs, block["nodeNumber"]


def ball():
    """The ball over the floor; returns (SystemContainer, mbs, the ball's node)."""
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    ground = mbs.AddObject(ObjectGround())
    inertia = RigidBodyInertia(mass=1.0, inertiaTensor=np.diag([0.001, 0.001, 0.001]))
    b = mbs.CreateRigidBody(referencePosition=[0, 0, H0 + R_BALL], inertia=inertia, gravity=[0, 0, -G],
                            returnDict=True)
    mbs.CreateSphereQuadContact(itemNumbers=[b["bodyNumber"], ground], sphereRadius=R_BALL, quadPoints=QUAD,
                                includeEdges=0, contactStiffness=1e7, contactStiffnessExponent=1.5,
                                restitutionCoefficient=E_REST, impactModel=2)
    return SC, mbs, b["nodeNumber"]


def settings(h, t_end):
    ss = exu.SimulationSettings()
    ss.solution.file.write = False
    ss.solution.sensors.writePeriod = h
    ss.timeIntegration.endTime = t_end
    ss.timeIntegration.numberOfSteps = int(round(t_end / h))
    ss.timeIntegration.verboseMode = 0
    ss.timeIntegration.newton.relativeTolerance = 1e-10
    ss.timeIntegration.newton.absoluteTolerance = 1e-12
    return ss


def solve(build, h, t_end, sensor=False):
    """(wall time s of SolveDynamic, mbs, node, sensor or None) for a freshly built model."""
    SC, mbs, node = build()
    s = mbs.AddSensor(SensorNode(nodeNumber=node, storeInternal=True, writeToFile=False,
                                 outputVariableType=exu.OutputVariableType.Position)) if sensor else None
    mbs.Assemble()
    t0 = time.perf_counter()
    mbs.SolveDynamic(settings(h, t_end))
    return time.perf_counter() - t0, mbs, node, s


def timed(build, h, t_end):
    walls = [solve(build, h, t_end)[0] for _ in range(REPEAT)]
    return statistics.median(walls), walls


def run_incline(case, h):
    mu = 0.2 if case == "slide" else 0.5
    build = lambda: incline(mu)  # noqa: E731
    wall, walls = timed(build, h, 1.0)
    _, mbs, node, _ = solve(build, h, 1.0)
    x = float(mbs.GetNodeOutput(node, exu.OutputVariableType.Position)[0])
    x_ref = 0.5 * G * (math.sin(TH) - mu * math.cos(TH)) if case == "slide" else 0.0
    return dict(engine="exudyn", version=exu.__version__, problem=f"incline_{case}", settings="generalized-alpha",
                dt=h, mu=mu, x_end_m=x, x_ref_m=x_ref, error_m=abs(x - x_ref), wall_time_s=wall, wall_times_s=walls)


def run_ball(h):
    wall, walls = timed(ball, h, 2.0)
    _, mbs, node, s = solve(ball, h, 2.0, sensor=True)
    data = mbs.GetSensorStoredData(s)
    t, z = data[:, 0], data[:, 3] - R_BALL
    touching = z < 0
    starts = t[1:][touching[1:] & ~touching[:-1]]
    impacts = [float(v) for v in starts[:2]]
    apexes = [float(z[(t > a) & (t < b)].max()) for a, b in zip(starts[:2], list(starts[1:3]) + [t[-1]])]
    t1 = math.sqrt(2 * H0 / G)
    t_ref, h_ref = [t1, t1 * (1 + 2 * E_REST)], [E_REST ** 2 * H0, E_REST ** 4 * H0]
    return dict(engine="exudyn", version=exu.__version__, problem="ball", settings="generalized-alpha", dt=h,
                impacts_s=impacts, impacts_ref_s=t_ref, apex_m=apexes, apex_ref_m=h_ref,
                impact_error_s=max(abs(a - b) for a, b in zip(impacts, t_ref)),
                apex_error_m=max(abs(a - b) for a, b in zip(apexes, h_ref)), wall_time_s=wall, wall_times_s=walls)


if __name__ == "__main__":
    for h in STEPS:
        for row in (run_incline("slide", h), run_incline("stick", h), run_ball(h)):
            sys.stdout.write(json.dumps(row) + "\n")
            sys.stdout.flush()
