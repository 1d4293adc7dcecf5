"""The vehicle samples (issue 17): cost of one evaluation of the state derivative and wall time per
simulated second, van and truck, RK4 at h = 1 ms, beside the semi-recursive method's published figures.

Cuadrado, Dopico, Naya, González / Hidalgo & García de Jalón report, for the same 5 s straight run over
bumps with RK4 at 1 ms (20,000 evaluations of ẏ) on a Xeon 5160 at 3 GHz in C/C++: the IVECO Daily van
(17 DOF) 2.43 s, 122 µs per evaluation; the tractor with a semi-trailer (40 DOF) 5.14 s, 257 µs. Our
samples are built like theirs but are not theirs (15 and 16 moving parts, 18 and 41 DOF; massless
links as distance constraints).

Per formulation in ``--formulation`` (default: every name of :data:`FORMULATIONS` that the installed
cadmotion has):

(a) ``eval_us``: one evaluation of ẏ = [q̇, v̇, P_nc] by the compiled right-hand side that the
    integrator calls (:class:`cadmotion.kernel.dynamics.fast.FastRHS`: body kinematics, the
    generated joint code, the force elements and the tyres, the Schur complement and its band
    Cholesky), median of 2000 calls at the initial state and at the state 2.5 s into the run;
    ``eval_numpy_us`` the same by the numpy path (:mod:`cadmotion.kernel.dynamics.equations`).
    Formulations without a compiled right-hand side report the integration loop's wall time per
    evaluation instead (``eval_from_loop_us``), an upper bound.
(b) ``wall_per_simulated_s``: the whole ``run`` of 5 s (RK4, dt = 1 ms, the sample's output frames:
    assembly, consistent velocities, the integration, reactions, energies, the self-checks),
    median of ``PEERS_REPEAT`` runs after a warm-up, divided by 5 s; ``loop_per_simulated_s`` only
    the evaluations (evaluations × eval time). ``loop``: ``compiled`` (the RK4 loop of
    :mod:`cadmotion.kernel.dynamics._rk4`, one compiled call for the run, where the formulation has
    it) or ``python`` (the Python RK4 loop, option ``compiled_loop = false``); both by default,
    one after the other in the same process.

    python benchmarks/vehicle.py [--formulation projection] [--t-end 5] [--loop compiled]    # ~1 min warm

BLAS is pinned to one thread (as the peers' harness does). Prints one JSON line per sample and
formulation; the first run of a model structure on a machine compiles it (minutes, not timed).
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from cadmotion.importers.modelfile import read_model_file  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics import FORMULATIONS as AVAILABLE  # noqa: E402
from cadmotion.kernel.dynamics.fast import fast_rhs  # noqa: E402
from cadmotion.kernel.dynamics.forward import prepare, run  # noqa: E402
from cadmotion.kernel.dynamics.mass import body_state  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = {"van": os.path.join(HERE, "..", "samples", "vehicles", "van.cadmotion.toml"),
           "truck": os.path.join(HERE, "..", "samples", "vehicles", "truck.cadmotion.toml")}
#: the published semi-recursive figures (µs per evaluation of ẏ, C/C++, Xeon 5160 3 GHz)
PUBLISHED_US = {"van": 122.0, "truck": 257.0}
#: formulations to compare: the absolute one today; relative-coordinate ones join by name when they exist
FORMULATIONS = ("projection", "semi-recursive", "recursive")
REPEAT = int(os.environ.get("PEERS_REPEAT", "3"))
DT = 1e-3


def median_call_time(fn, n=2000):
    ts = np.empty(n)
    for k in range(n):
        t0 = time.perf_counter()
        fn()
        ts[k] = time.perf_counter() - t0
    return float(np.median(ts))


def state_at(model, dyn, motion, k):
    """The integrator's state y = [q, v, 0] of frame k of a Motion (q: r, p; v: v_com, ω)."""
    q, v = [], []
    for b in range(dyn.nmov):
        i = motion.part_index(model.body_names[b])
        q += list(motion.position[k, i]) + list(motion.quaternion[k, i])
    q = np.array(q)
    bs = body_state(model, dyn.mass, q, np.zeros(dyn.nv))
    for b in range(dyn.nmov):
        i = motion.part_index(model.body_names[b])
        w = motion.angular_velocity[k, i]
        v += list(motion.velocity[k, i] + np.cross(w, bs.rho[b])) + list(w)
    return np.concatenate([q, np.array(v), [0.0]])


def bench(name, formulation, t_end, loop="compiled"):
    spec = read_model_file(SAMPLES[name])
    model = compile_model(spec)
    steps = int(round(t_end / dict(spec.settings).get("t_end", t_end) * dict(spec.settings).get("steps", 250)))
    options = {"compiled_loop": loop == "compiled"} if "compiled_loop" in AVAILABLE[formulation].defaults else None
    kw = dict(formulation=formulation, integrator="RK4", dt=DT, options=options, estimate_error=False)
    t0 = time.perf_counter()
    run(model, 0.01, 1, **kw)  # load (or compile, the first time on a machine) the compiled code
    build = time.perf_counter() - t0
    walls = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        motion, res = run(model, t_end, steps, **kw)
        walls.append(time.perf_counter() - t0)
    wall = float(np.median(walls))
    out = dict(benchmark="vehicle", sample=name, formulation=formulation, integrator="RK4",
               loop="compiled" if "RK4 in the compiled loop" in res.notes else "python", dt=DT, t_end=t_end,
               bodies=len(model.body_names) - 1, wall_s=wall, wall_times_s=walls, wall_per_simulated_s=wall / t_end,
               n_steps=res.nsteps, n_rhs_evals=res.nfev, complete=motion.complete,
               invariants_broken=[c.name for c in res.invariants.broken], build_time_s=build,
               published_eval_us=PUBLISHED_US[name])
    dyn, q0, v0, angles, refs = prepare(model)
    f = fast_rhs(dyn, angles, refs) if formulation == "projection" else None
    if f is not None:
        k_mid = int(np.argmin(np.abs(motion.time - 0.5 * t_end)))
        evals, evals_np = {}, {}
        for label, y in (("t=0", np.concatenate([q0, v0, [0.0]])),
                         (f"t={motion.time[k_mid]:g}", state_at(model, dyn, motion, k_mid))):
            f(0.0, y)
            evals[label] = 1e6 * median_call_time(lambda: f(0.0, y))
            q, v = y[: dyn.nq], y[dyn.nq: dyn.nq + dyn.nv]

            def numpy_eval():
                return dyn.accelerations(dyn.evaluate(q, v, 0.0, refs))

            numpy_eval()
            evals_np[label] = 1e6 * median_call_time(numpy_eval, n=200)
        eval_us = float(np.median(list(evals.values())))
        out.update(eval_us=evals, eval_numpy_us=evals_np, dof=int(dyn.nv - len(dyn.rows)),
                   kept_rows=int(len(dyn.rows)), band_width=int(f.bw),
                   loop_per_simulated_s=res.nfev * eval_us * 1e-6 / t_end,
                   ratio_to_published=eval_us / PUBLISHED_US[name])
    else:
        out.update(eval_from_loop_us=1e6 * wall / max(res.nfev, 1))
    out["load_average"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--formulation", action="append", help="repeatable; default: those of FORMULATIONS present")
    parser.add_argument("--sample", action="append", choices=sorted(SAMPLES))
    parser.add_argument("--t-end", type=float, default=5.0)
    parser.add_argument("--loop", action="append", choices=("compiled", "python"),
                        help="RK4 loop, repeatable; default: both")
    args = parser.parse_args(argv)
    formulations = args.formulation or [f for f in FORMULATIONS if f in AVAILABLE]
    for name in args.sample or ("van", "truck"):
        for formulation in formulations:
            for loop in args.loop or ("compiled", "python"):
                if loop == "compiled" and "compiled_loop" not in AVAILABLE[formulation].defaults:
                    continue  # no compiled loop: its Python loop is the "python" line
                print(json.dumps(bench(name, formulation, args.t_end, loop)), flush=True)


if __name__ == "__main__":
    main()
