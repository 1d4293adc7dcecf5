"""P1 slider-crank under a crank torque in cadmotion (peer benchmark, see ../shared/peers/README.md).

The model is the sample ``samples/dynamics/slider_crank_torque.cadmotion.toml``: crank, rod and
slider in absolute coordinates (Euler parameters), three revolute joints and a prismatic joint
built in 3-D (3 redundant equations, found and left out automatically), gravity, and the torque
0.01·exp(−t) N·m on the crank as a whitelisted expression (compiled into the model's generated
module, so the compiled DOP853 loop runs). Formulation ``projection`` (index 1, positions and
velocities projected onto the joints after steps), integrator DOP853 at rtol = atol = CM_TOL (1e-9);
CM_COMPILED_LOOP=0 runs scipy's DOP853 loop on the same compiled right-hand side instead. The wall
time is the whole ``run`` call (assembly, integration and the output frames at t = 0.5, 1, 1.5, 2 s),
after a warm-up run that loads the compiled code.

Environment: CM_TOL, CM_FORMULATION, CM_INTEGRATOR, CM_DT, CM_COMPILED_LOOP, CM_OPTIONS (the formulation's options
as JSON, e.g. '{"planar": false}'); PEERS_REPEAT. Prints one JSON line.
"""
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared", "peers"))
from bench_common import P1, emit, timed_runs, Stopwatch  # noqa: E402

import numpy as np  # noqa: E402

from cadmotion.importers.modelfile import read_model_file  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics.forward import describe_methods, run  # noqa: E402

# timed runs measure the compiled code, built in this process when the cache lacks it (a user's
# first run would integrate on numpy and leave the compiling to the background warm-up)
os.environ.setdefault("CADMOTION_DYNAMICS_FAST", "compile")
TOL = float(os.environ.get("CM_TOL", "1e-9"))
FORMULATION = os.environ.get("CM_FORMULATION", "projection")
METHOD = {name: summary for name, summary, *_ in describe_methods()[0]}[FORMULATION]  # the label's words
INTEGRATOR = os.environ.get("CM_INTEGRATOR", "DOP853")
DT = float(os.environ["CM_DT"]) if os.environ.get("CM_DT") else None
OPTIONS = {"compiled_loop": os.environ.get("CM_COMPILED_LOOP", "1") != "0",
           **json.loads(os.environ.get("CM_OPTIONS", "{}"))}
SAMPLE = os.path.join(HERE, "..", "samples", "dynamics", "slider_crank_torque.cadmotion.toml")
TIMES = [0.0] + list(P1["t_out"])

with Stopwatch() as sw_build:
    model = compile_model(read_model_file(SAMPLE))
    run(model, times=TIMES, formulation=FORMULATION, integrator=INTEGRATOR, rtol=TOL, atol=TOL, dt=DT,
        options=OPTIONS, estimate_error=False)  # warm up


def run_once():
    t0 = time.perf_counter()
    out = run(model, times=TIMES, formulation=FORMULATION, integrator=INTEGRATOR, rtol=TOL, atol=TOL, dt=DT,
              options=OPTIONS, estimate_error=False)
    return time.perf_counter() - t0, out


wall, walls, (motion, res) = timed_runs(run_once)
crank = (math.pi / 4 + motion.coordinate("crank_pivot.angle"))[1:]
slider_x = motion.position[1:, motion.part_index("slider"), 0]
X_rod = motion.pose("rod", TIMES[-1])
gap = float(np.linalg.norm((X_rod @ np.array([0.3, 0, 0, 1.0]))[:3] - motion.position[-1, motion.part_index("slider")]))
emit(dict(engine="cadmotion", problem="P1",
          integrator=("compiled DOP853 loop" if "DOP853 in the compiled loop" in res.notes else f"scipy {INTEGRATOR}")
                     + f" on the {FORMULATION} formulation ({METHOD}), compiled right-hand side",
          settings=f"rtol=atol={TOL}" + (f", dt={DT}" if DT else ""),
          t=P1["t_out"], crank_angle=crank.tolist(), slider_x=slider_x.tolist(),
          constraint_violation_end=gap, n_rhs_evals=res.nfev, n_steps=res.nsteps,
          complete=motion.complete, message=motion.message,
          build_time_s=sw_build.dt, wall_time_s=wall, wall_times_s=walls))
