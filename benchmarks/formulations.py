"""Formulation comparison: every dynamics formulation on the same samples, one table.

For each sample (default: the two 6-link pendulums and the 40-plate lattice of
``samples/dynamics``, the comparison issue 5 asks for) and each formulation, prints wall
time, integrator steps, right-hand side (or residual) evaluations, the largest position and
velocity constraint violation over the output frames and the largest energy drift
|E − W_nc − E0| (W_nc: work of the dampers) relative to the largest kinetic energy. ODE
formulations run DOP853 at rtol = atol = CM_TOL (1e-9); ``index3`` runs the generalised-α
method with step CM_DT (1e-3 s).

Each run (warm-up included) is capped at ``--time-cap`` seconds of wall time (default 60;
SIGALRM, so on POSIX only): a formulation that is too slow is reported as "time cap" with
no figures instead of holding up the table; one that fails reports its message.

    python benchmarks/formulations.py [--t-end 2] [--time-cap 60] [sample.cadmotion.toml ...]

BLAS is pinned to one thread, as in ../shared/peers/run_all.sh.
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
# timed runs measure the compiled code, built in this process when the cache lacks it (a user's
# first run would integrate on numpy and leave the compiling to the background warm-up)
os.environ.setdefault("CADMOTION_DYNAMICS_FAST", "compile")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from timecap import TimeCap, capped  # noqa: E402

from cadmotion.importers.modelfile import read_model_file  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics import FORMULATIONS  # noqa: E402
from cadmotion.kernel.dynamics.forward import run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = [os.path.join(HERE, "..", "samples", "dynamics", f"{n}.cadmotion.toml")
           for n in ("two_pendulums", "plate_lattice")]
TOL = float(os.environ.get("CM_TOL", "1e-9"))
DT = float(os.environ.get("CM_DT", "1e-3"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("samples", nargs="*", default=DEFAULT)
    ap.add_argument("--t-end", type=float, default=2.0)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--time-cap", type=float, default=60.0, help="wall seconds per run, warm-up included (0: none)")
    ap.add_argument("--formulations", default=",".join(FORMULATIONS), help="comma separated (default: all)")
    args = ap.parse_args(argv)
    for path in args.samples:
        model = compile_model(read_model_file(path))
        print(f"\n{os.path.basename(path)}  ({args.t_end:g} s, {args.steps} frames; DOP853 rtol=atol={TOL:g}; "
              f"index3 dt={DT:g}; cap {args.time_cap:g} s per run)")
        print(f"{'formulation':22s} {'wall [s]':>9s} {'steps':>7s} {'evals':>8s} {'max |Phi|':>10s} "
              f"{'max |Phi_dot|':>13s} {'energy drift':>12s}  note")
        sys.stdout.flush()
        for name in args.formulations.split(","):
            kw = dict(dt=DT) if name == "index3" else dict(rtol=TOL, atol=TOL)
            kw["estimate_error"] = False  # the integration alone, as the peers run it
            t0 = time.perf_counter()

            def both():
                run(model, 0.01, 1, formulation=name, **kw)  # load compiled code
                t1 = time.perf_counter()
                out = run(model, args.t_end, args.steps, formulation=name, **kw)
                return time.perf_counter() - t1, out

            try:
                wall, (motion, res) = capped(args.time_cap, both)
            except TimeCap:
                print(f"{name:22s} {'>' + format(time.perf_counter() - t0, '.0f'):>9s} {'-':>7s} {'-':>8s} {'-':>10s} "
                      f"{'-':>13s} {'-':>12s}  time cap ({args.time_cap:g} s, warm-up included) reached")
                sys.stdout.flush()
                continue
            except Exception as exc:  # a formulation that cannot handle the model
                print(f"{name:22s} {'-':>9s} {'-':>7s} {'-':>8s} {'-':>10s} {'-':>13s} {'-':>12s}  "
                      f"failed: {type(exc).__name__}: {str(exc)[:80]}")
                sys.stdout.flush()
                continue
            E = motion.extra["energy.total"] - motion.extra["work.nonconservative"]
            drift = np.max(np.abs(E - E[0])) / max(np.max(motion.extra["energy.kinetic"]), 1e-300)
            note = "" if motion.complete else f"stopped at t = {motion.time[-1]:.3g} s: " + motion.message[:60]
            print(f"{name:22s} {wall:9.3f} {res.nsteps:7d} {res.nfev:8d} "
                  f"{np.max(motion.extra['violation.position']):10.2e} "
                  f"{np.max(motion.extra['violation.velocity']):13.2e} {drift:12.2e}  {note}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
