"""Formulation comparison: every dynamics formulation on the same samples, one table.

For each sample (default: the conservative four-bar and the double pendulum of
``samples/dynamics``) and each formulation, prints wall time, integrator steps, right-hand
side (or residual) evaluations, the largest position and velocity constraint violation over
the output frames and the largest energy drift |E − E0| relative to the largest kinetic
energy. ODE formulations run DOP853 at rtol = atol = CM_TOL (1e-9); ``index3`` runs the
generalised-α method with step CM_DT (1e-3 s).

    python benchmarks/formulations.py [--t-end 2] [sample.cadmotion.toml ...]
"""
import argparse
import os
import sys
import time

import numpy as np

from cadmotion.importers.modelfile import read_model_file
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics import FORMULATIONS
from cadmotion.kernel.dynamics.forward import run

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = [os.path.join(HERE, "..", "samples", "dynamics", f"{n}.cadmotion.toml") for n in ("four_bar", "double_pendulum")]
TOL = float(os.environ.get("CM_TOL", "1e-9"))
DT = float(os.environ.get("CM_DT", "1e-3"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("samples", nargs="*", default=DEFAULT)
    ap.add_argument("--t-end", type=float, default=2.0)
    ap.add_argument("--steps", type=int, default=100)
    args = ap.parse_args(argv)
    for path in args.samples:
        model = compile_model(read_model_file(path))
        print(f"\n{os.path.basename(path)}  ({args.t_end:g} s, {args.steps} frames; DOP853 rtol=atol={TOL:g}; "
              f"index3 dt={DT:g})")
        print(f"{'formulation':22s} {'wall [s]':>9s} {'steps':>7s} {'evals':>8s} {'max |Phi|':>10s} "
              f"{'max |Phi_dot|':>13s} {'energy drift':>12s}  note")
        for name in FORMULATIONS:
            kw = dict(dt=DT) if name == "index3" else dict(rtol=TOL, atol=TOL)
            run(model, 0.01, 1, formulation=name, **kw)  # load compiled code
            t0 = time.perf_counter()
            motion, res = run(model, args.t_end, args.steps, formulation=name, **kw)
            wall = time.perf_counter() - t0
            E = motion.extra["energy.total"] - motion.extra["work.nonconservative"]
            drift = np.max(np.abs(E - E[0])) / max(np.max(motion.extra["energy.kinetic"]), 1e-300)
            note = "" if motion.complete else motion.message[:60]
            print(f"{name:22s} {wall:9.3f} {res.nsteps:7d} {res.nfev:8d} {np.max(motion.extra['violation.position']):10.2e} "
                  f"{np.max(motion.extra['violation.velocity']):13.2e} {drift:12.2e}  {note}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
