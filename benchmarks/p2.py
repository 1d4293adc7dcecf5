"""P2 closed chain of N links in cadmotion (peer benchmark, see ../shared/peers/README.md).

A regular N-gon of 1 m / 1 kg rods hanging below the fixed link 0, built in 3-D: N−1 moving
bodies in absolute coordinates (Euler parameters), N revolute joints (5 equations each; 3 of
them are redundant for the planar loop and are found by the rank-revealing step). Released
from rest, 0..10 s. Formulation ``projection`` (index 1, positions and velocities projected
onto the joints after steps whenever they are violated by more than CM_PROJECTION_TOL = 1e-10),
integrator DOP853 at rtol = atol = CM_TOL (1e-8), run by the compiled DOP853 loop
(kernel/dynamics/_dop853.py; ``integrator`` in the JSON says which loop ran).

Environment: CM_TOL, CM_FORMULATION, CM_INTEGRATOR, CM_DT, CM_OPTIONS (the formulation's options as JSON,
e.g. '{"alpha": 10, "beta": 10}' for ``recursive``); PEERS_P2_N, PEERS_REPEAT.
Prints one JSON line (as a script; importing it gives ``chain_spec``, as benchmarks/dynamics_profile.py does).
"""
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared", "peers"))
from bench_common import (P2, GRAVITY, p2_polygon, p2_N_list, p2_closure_violation, p2_energy_from_links,  # noqa: E402
                          emit, timed_runs, Stopwatch, rod_inertia)

import numpy as np  # noqa: E402

from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics.forward import describe_methods, run  # noqa: E402
from cadmotion.kernel.spec import Frame, JointSpec, MechanismSpec, PartSpec  # noqa: E402

# timed runs measure the compiled code, built in this process when the cache lacks it (a user's
# first run would integrate on numpy and leave the compiling to the background warm-up)
os.environ.setdefault("CADMOTION_DYNAMICS_FAST", "compile")
TOL = float(os.environ.get("CM_TOL", "1e-8"))
FORMULATION = os.environ.get("CM_FORMULATION", "projection")
METHOD = {name: summary for name, summary, *_ in describe_methods()[0]}[FORMULATION]  # the label's words
INTEGRATOR = os.environ.get("CM_INTEGRATOR", "DOP853")
DT = float(os.environ["CM_DT"]) if os.environ.get("CM_DT") else None
PTOL = float(os.environ.get("CM_PROJECTION_TOL", "1e-10"))
OPTIONS = {**({"tol": PTOL} if FORMULATION == "projection" else {}),
           **json.loads(os.environ.get("CM_OPTIONS", "{}"))} or None
L, m = P2["L"], P2["m"]


def chain_spec(N):
    """The P2 mechanism as a MechanismSpec: link k from P_k to P_k+1, link 0 fixed."""
    P, alpha = p2_polygon(N)
    I = rod_inertia(m, L)
    parts = []
    for k in range(N):
        q = (math.cos(alpha[k] / 2), 0.0, 0.0, math.sin(alpha[k] / 2))
        parts.append(PartSpec(f"link{k}", fixed=(k == 0), position=(P[k, 0], P[k, 1], 0.0), orientation=q,
                              mass=m, com=(0.5 * L, 0.0, 0.0), inertia=((1e-6, 0, 0), (0, I, 0), (0, 0, I))))
    joints = []
    for k in range(N):
        a, b = (k - 1) % N, k
        # the joint frame: at P_k, z axis = +z, in each part's frame (parts are rotated by alpha)
        frames = []
        for part in (a, b):
            ca, sa = math.cos(alpha[part]), math.sin(alpha[part])
            d = P[k] - P[part]
            s = (ca * d[0] + sa * d[1], -sa * d[0] + ca * d[1], 0.0)
            R = ((ca, sa, 0.0), (-sa, ca, 0.0), (0.0, 0.0, 1.0))  # world axes in the part frame
            frames.append(Frame(s, R))
        joints.append(JointSpec(f"j{k}", "revolute", (f"link{a}", f"link{b}"), tuple(frames)))
    return MechanismSpec(parts=tuple(parts), joints=tuple(joints), gravity=GRAVITY, name=f"p2-{N}")


def metrics(motion, N, k):
    """Max joint gap, energy (bench_common's formula) and joint N//2 position at frame k."""
    starts = np.zeros((N, 2))
    ends = np.zeros((N, 2))
    angles = np.zeros(N - 1)
    omegas = np.zeros(N - 1)
    vstarts = np.zeros((N - 1, 2))
    for i in range(N):
        b = motion.part_index(f"link{i}")
        X = motion.pose(f"link{i}", motion.time[k])
        starts[i] = X[:2, 3]
        ends[i] = (X @ np.array([L, 0, 0, 1.0]))[:2]
        if i > 0:
            q = motion.quaternion[k, b]
            angles[i - 1] = 2 * math.atan2(q[3], q[0])
            omegas[i - 1] = motion.angular_velocity[k, b, 2]
            vstarts[i - 1] = motion.velocity[k, b, :2]
    E = p2_energy_from_links(starts[1:], angles, omegas, vstarts)[0]
    return p2_closure_violation(starts, ends), E, starts[N // 2]


def main():
    results = []
    for N in p2_N_list():
        with Stopwatch() as sw_build:
            model = compile_model(chain_spec(N))
            run(model, 0.01, 1, formulation=FORMULATION, integrator=INTEGRATOR, rtol=TOL, atol=TOL, dt=DT,
                options=OPTIONS, estimate_error=False)  # warm up
        times = [0.0, P2["t_probe"], P2["t_end"]]

        def run_once():
            t0 = time.perf_counter()
            motion, res = run(model, times=times, formulation=FORMULATION, integrator=INTEGRATOR, rtol=TOL, atol=TOL,
                              dt=DT, options=OPTIONS, estimate_error=False)
            return time.perf_counter() - t0, (motion, res)

        wall, walls, (motion, res) = timed_runs(run_once)
        gap0, E0, _ = metrics(motion, N, 0)
        _, _, probe = metrics(motion, N, 1)
        gap, E1, _ = metrics(motion, N, motion.nt - 1)
        results.append(dict(N=N, build_time_s=sw_build.dt, wall_time_s=wall, wall_times_s=walls,
                            wall_per_sim_s=wall / P2["t_end"], constraint_violation_end=gap,
                            energy_initial_J=E0, energy_drift_J=E1 - E0, energy_drift_rel=(E1 - E0) / abs(E0),
                            finite=bool(motion.complete and np.all(np.isfinite(motion.position))),
                            t_reached=float(motion.time[-1]), n_rhs_evals=res.nfev, n_steps=res.nsteps,
                            probe_t=P2["t_probe"], probe_xy=probe.tolist(), message=motion.message))
        print(results[-1], file=sys.stderr)
    emit(dict(engine="cadmotion", problem="P2",
              integrator=f"{'compiled' if 'DOP853 in the compiled loop' in res.notes else 'scipy'} {INTEGRATOR} on the "
                         f"{FORMULATION} formulation ({METHOD}), compiled right-hand side",
              settings=f"rtol=atol={TOL}" + (f", dt={DT}" if DT else "")
              + (f", projection tol {PTOL}" if OPTIONS else ""),
              results=results))


if __name__ == "__main__":
    main()
