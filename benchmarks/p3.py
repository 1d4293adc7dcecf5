"""P3 double pendulum in cadmotion (peer benchmark, see ../shared/peers/README.md).

The model is the sample ``samples/dynamics/double_pendulum.cadmotion.toml``: two rods in absolute
coordinates (Euler parameters) and two revolute joints built in 3-D, released from rest with both
rods horizontal (E(0) = 0). Formulation ``projection``, integrator DOP853 at
rtol = atol = CM_TOL (3e-13; the motion is chaotic, the tip error grows with the tolerance), run
by the compiled DOP853 loop (kernel/dynamics/_dop853.py: scipy's method and step control, the
whole integration in compiled code; ``integrator`` in the JSON says which loop ran).
The wall time is the whole ``run`` call (assembly, integration, the output frame at t = 10 s).

Environment: CM_TOL, CM_FORMULATION, CM_INTEGRATOR, CM_DT; PEERS_REPEAT. Prints one JSON line.
"""
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared", "peers"))
from bench_common import P3, p3_energy, p3_tip, emit, timed_runs, Stopwatch  # noqa: E402


from cadmotion.importers.modelfile import read_model_file  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics.forward import run  # noqa: E402

# timed runs measure the compiled code, built in this process when the cache lacks it (a user's
# first run would integrate on numpy and leave the compiling to the background warm-up)
os.environ.setdefault("CADMOTION_DYNAMICS_FAST", "compile")
TOL = float(os.environ.get("CM_TOL", "3e-13"))
FORMULATION = os.environ.get("CM_FORMULATION", "projection")
INTEGRATOR = os.environ.get("CM_INTEGRATOR", "DOP853")
DT = float(os.environ["CM_DT"]) if os.environ.get("CM_DT") else None
SAMPLE = os.path.join(HERE, "..", "samples", "dynamics", "double_pendulum.cadmotion.toml")
TIMES = [0.0, P3["t_end"]]

with Stopwatch() as sw_build:
    model = compile_model(read_model_file(SAMPLE))
    run(model, times=[0.0, 0.1], formulation=FORMULATION, integrator=INTEGRATOR, rtol=TOL, atol=TOL, dt=DT,
        estimate_error=False)


def run_once():
    t0 = time.perf_counter()
    out = run(model, times=TIMES, formulation=FORMULATION, integrator=INTEGRATOR, rtol=TOL, atol=TOL, dt=DT,
              estimate_error=False)
    return time.perf_counter() - t0, out


def angles(motion, k):
    """Absolute rod angles and rates (about +z) at frame k."""
    out = []
    for name in ("link1", "link2"):
        b = motion.part_index(name)
        q = motion.quaternion[k, b]
        out.append((2 * math.atan2(q[3], q[0]), motion.angular_velocity[k, b, 2]))
    return out


wall, walls, (motion, res) = timed_runs(run_once)
(p1, w1), (p2, w2) = angles(motion, -1)
tip = p3_tip(p1, p2)
(a1, v1), (a2, v2) = angles(motion, 0)
E0, E1 = p3_energy(a1, a2, v1, v2), p3_energy(p1, p2, w1, w2)
emit(dict(engine="cadmotion", problem="P3",
          integrator=f"{'compiled' if 'DOP853 in the compiled loop' in res.notes else 'scipy'} {INTEGRATOR} on the "
                     f"index-1 equations in absolute coordinates ({FORMULATION}), compiled right-hand side",
          settings=f"rtol=atol={TOL}" + (f", dt={DT}" if DT else ""),
          tip_x=tip[0], tip_y=tip[1], energy_end_J=E1, energy_drift_J=E1 - E0,
          n_rhs_evals=res.nfev, n_steps=res.nsteps, complete=motion.complete, message=motion.message,
          build_time_s=sw_build.dt, wall_time_s=wall, wall_times_s=walls))
