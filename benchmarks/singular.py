"""IFToMM A02, the N-four-bar through its singular configurations: every formulation, integrator
and tolerance, against the exact solution.

The model is ``samples/dynamics/n_four_bar.cadmotion.toml`` (N = 2: ten flat, singular
configurations in 10 s). The reference is independent of cadmotion: the 1-DOF reduction
3 θ̈ + 34.335 cos θ = 0 (θ the rods' angle, θ(0) = π/2, θ̇(0) = −1 rad/s) integrated by scipy's
DOP853 at 1e-13; it reproduces the published B0(10 s) = (0.328458111541, 0.944518538179) m.

Prints one line per run: formulation, integrator, tolerance (or step), accepted steps,
right-hand-side evaluations, median wall time of ``CM_REPEAT`` runs (default 3; the first,
compiling, run is not timed), the error of B0 at 10 s (m), the largest energy deviation from
35.835 J, and the crossings of singular configurations. ``--quick`` runs the default
formulation only.

    python benchmarks/singular.py [--quick]
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

from cadmotion.importers import load
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics.forward import run

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "dynamics" / "n_four_bar.cadmotion.toml"
ENERGY = 35.835
# timed runs measure the compiled code, built in this process when the cache lacks it (a user's
# first run would integrate on numpy and leave the compiling to the background warm-up)
os.environ.setdefault("CADMOTION_DYNAMICS_FAST", "compile")
REPEAT = int(os.environ.get("CM_REPEAT", "3"))
TOLERANCES = (1e-6, 1e-8, 1e-10, 1e-12)


def exact_b0(t_end=10.0):
    sol = solve_ivp(lambda _, y: [y[1], -34.335 / 3.0 * np.cos(y[0])], (0.0, t_end), [np.pi / 2, -1.0],
                    method="DOP853", rtol=1e-13, atol=1e-13)
    return np.array([np.cos(sol.y[0, -1]), np.sin(sol.y[0, -1])])


def b0(model, q):
    i = model.body_index("rod0")
    w, z = q[7 * i + 3], q[7 * i + 6]
    th = np.arctan2(2 * w * z, w * w - z * z)
    return np.array([np.cos(th), np.sin(th)])


def measure(model, reference, **kw):
    run(model, 0.1, 1, **kw)  # compile and warm the caches
    walls = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        motion, res = run(model, 10.0, 100, **kw)
        walls.append(time.perf_counter() - t0)
    error = float(np.linalg.norm(b0(model, res.q[-1]) - reference)) if res.success else float("nan")
    drift = float(np.max(np.abs(motion.extra["energy.total"] - ENERGY))) if motion.nt else float("nan")
    crossings = sum("singular configuration crossed" in n for n in res.notes)
    return res, statistics.median(walls), error, drift, crossings


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the default formulation only")
    args = parser.parse_args(argv)
    model = compile_model(load(SAMPLE))
    reference = exact_b0()
    cases = [("projection", "DOP853", dict(rtol=t, atol=t), f"tol {t:g}") for t in TOLERANCES]
    if not args.quick:
        for form in ("baumgarte", "penalty", "augmented-lagrangian", "partitioning"):
            cases += [(form, "DOP853", dict(rtol=t, atol=t), f"tol {t:g}") for t in (1e-8, 1e-10)]
        for integ in ("RK45", "Radau", "BDF", "LSODA"):
            cases.append(("projection", integ, dict(rtol=1e-10, atol=1e-10), "tol 1e-10"))
        cases.append(("projection", "RK4", dict(dt=1e-3), "dt 1e-3"))
        cases += [("index3", "generalized-alpha", dict(dt=h), f"dt {h:g}") for h in (1e-3, 1e-4)]
    print(f"{'formulation':22s} {'integrator':18s} {'setting':10s} {'steps':>8s} {'evals':>9s} {'wall s':>8s} "
          f"{'B0 error m':>11s} {'|ΔE| J':>9s} {'crossings':>9s}  status")
    for form, integ, kw, label in cases:
        res, wall, error, drift, crossings = measure(model, reference, formulation=form, integrator=integ, **kw)
        print(f"{form:22s} {integ:18s} {label:10s} {res.nsteps:8d} {res.nfev:9d} {wall:8.3f} {error:11.2e} "
              f"{drift:9.2e} {crossings:9d}  {'ok' if res.success else res.message[:60]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
