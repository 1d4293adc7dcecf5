"""The 40-plate lattice (issue 5): wall time of 4 s simulated, and the cost of one evaluation
of the equations of motion of this 40-body closed-loop model.

(a) ``run`` of ``samples/dynamics/plate_lattice.cadmotion.toml`` over its 4 s and 200 output
    frames, with the defaults of ``cadmotion run --analysis dynamic`` (formulation
    ``projection``, DOP853, rtol = 1e-8, atol = 1e-10), after a warm-up run that loads the
    compiled code. The whole call is timed: assembly, consistent velocities, redundancy
    analysis, integration, and the output frames (reactions, energies, violations).
    Target: faster than real time (< 4 s wall).
(b) one evaluation of ẏ = [q̇, v̇, P_nc] by the compiled right-hand side
    (:class:`cadmotion.kernel.dynamics.fast.FastRHS`, what the integrator calls): body
    kinematics, the generated constraint Jacobian and γ of 52 spherical joints (156 rows),
    the force elements (gravity, 51 3-D rotational spring-dampers), the Schur complement
    S = Jv M⁻¹ Jvᵀ in band storage, its band Cholesky and the solve for λ and v̇. Median over
    many calls at the initial state and at the state after 2 s. Target: < 1 ms. For
    comparison, the same evaluation by the numpy reference path of ``equations.py``.

    python benchmarks/lattice.py            # ~30 s;  PEERS_REPEAT=5 for more repeats

BLAS is pinned to one thread, as in ../shared/peers/run_all.sh (on this shared 2-core
machine a threaded OpenBLAS made the dense linear algebra of the output frames 10x slower).
Prints one JSON line.
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
# timed runs measure the compiled code, built in this process when the cache lacks it (a user's
# first run would integrate on numpy and leave the compiling to the background warm-up)
os.environ.setdefault("CADMOTION_DYNAMICS_FAST", "compile")

import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from cadmotion.importers.modelfile import read_model_file  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics.energy import energy_balance  # noqa: E402
from cadmotion.kernel.dynamics.fast import fast_rhs  # noqa: E402
from cadmotion.kernel.dynamics.forward import prepare, run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "..", "samples", "dynamics", "plate_lattice.cadmotion.toml")
REPEAT = int(os.environ.get("PEERS_REPEAT", "3"))
FORMULATION = os.environ.get("CM_FORMULATION", "projection")
INTEGRATOR = os.environ.get("CM_INTEGRATOR", "DOP853")
RTOL = float(os.environ.get("CM_RTOL", "1e-8"))
ATOL = float(os.environ.get("CM_ATOL", "1e-10"))


def median_call_time(fn, n=2000):
    ts = np.empty(n)
    for k in range(n):
        t0 = time.perf_counter()
        fn()
        ts[k] = time.perf_counter() - t0
    return float(np.median(ts))


def main():
    t0 = time.perf_counter()
    spec = read_model_file(SAMPLE)
    model = compile_model(spec)
    settings = dict(spec.settings)
    t_end, steps = settings.get("t_end", 4.0), int(settings.get("steps", 200))
    kw = dict(formulation=FORMULATION, integrator=INTEGRATOR, rtol=RTOL, atol=ATOL, estimate_error=False)
    run(model, 0.01, 1, **kw)  # load (or compile, the first time on a machine) the compiled code
    build = time.perf_counter() - t0
    walls = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        motion, res = run(model, t_end, steps, **kw)
        walls.append(time.perf_counter() - t0)
    wall = float(np.median(walls))

    # (b) one evaluation of the equations of motion
    dyn, q0, v0, angles, refs = prepare(model)
    f = fast_rhs(dyn, angles, refs)
    k_mid = int(np.argmin(np.abs(motion.time - 2.0)))
    states = {"t=0": np.concatenate([q0, v0, [0.0]])}
    # the state at t = 2 s from the run, in the integrator's variables (q: r, p; v: v_com, ω)
    from cadmotion.kernel.dynamics.mass import body_state

    mq, mv = [], []
    for b in range(dyn.nmov):
        name = model.body_names[b]
        i = motion.part_index(name)
        mq += list(motion.position[k_mid, i]) + list(motion.quaternion[k_mid, i])
    q_mid = np.array(mq)
    bs = body_state(model, dyn.mass, q_mid, np.zeros(dyn.nv))
    for b in range(dyn.nmov):
        i = motion.part_index(model.body_names[b])
        w = motion.angular_velocity[k_mid, i]
        vc = motion.velocity[k_mid, i] + np.cross(w, bs.rho[b])
        mv += list(vc) + list(w)
    states["t=2"] = np.concatenate([q_mid, np.array(mv), [0.0]])
    eval_fast, eval_numpy = {}, {}
    for label, y in states.items():
        f(2.0, y)
        eval_fast[label] = median_call_time(lambda: f(2.0, y))
        q, v = y[: dyn.nq], y[dyn.nq: dyn.nq + dyn.nv]

        def numpy_eval():
            ev = dyn.evaluate(q, v, 2.0, refs)
            return dyn.accelerations(ev)

        numpy_eval()
        eval_numpy[label] = median_call_time(numpy_eval, n=200)
    out = dict(
        benchmark="plate_lattice", sample=os.path.relpath(SAMPLE, os.path.join(HERE, "..")),
        bodies=dyn.nmov, constraint_rows=int(dyn.nc), kept_rows=int(len(dyn.rows)), band_width=int(f.bw),
        formulation=FORMULATION, integrator=INTEGRATOR, rtol=RTOL, atol=ATOL, t_end=t_end, frames=steps + 1,
        wall_time_s=wall, wall_times_s=walls, real_time_factor=t_end / wall, build_time_s=build,
        n_steps=res.nsteps, n_rhs_evals=res.nfev, n_projections=res.nproject, complete=motion.complete,
        energy_balance_rel=energy_balance(motion),
        energy_drift_over_max_T=float(np.max(np.abs(motion.extra["energy.total"] - motion.extra["energy.total"][0]
                                                    - motion.extra["work.nonconservative"]))
                                      / np.max(motion.extra["energy.kinetic"])),
        max_violation_position=float(np.max(motion.extra["violation.position"])),
        eval_fast_median_s=eval_fast, eval_numpy_median_s=eval_numpy,
        load_average=os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    )
    print(json.dumps(out))
    print(f"lattice, {t_end:g} s simulated ({FORMULATION}/{INTEGRATOR}, rtol={RTOL:g}, atol={ATOL:g}): "
          f"wall {wall:.3f} s (median of {REPEAT}), {res.nsteps} steps, {res.nfev} evaluations; "
          f"one evaluation of the equations of motion: {1e3 * eval_fast['t=0']:.3f} ms (t=0), "
          f"{1e3 * eval_fast['t=2']:.3f} ms (t=2 s) compiled; numpy path {1e3 * eval_numpy['t=2']:.2f} ms",
          file=sys.stderr)


if __name__ == "__main__":
    main()
