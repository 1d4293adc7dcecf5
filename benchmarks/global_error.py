"""What the global error estimate (``motion.error``, kernel/dynamics/global_error.py) costs, and how close it is.

Two tables:

* *Against a closed form*: the rod pendulum of ``tests/kernel/test_global_error.py`` released 1° below its top
  (6 s, 50 frames; θ(t) by Jacobi's elliptic functions) and released at 30°, over integrators and settings: the
  run's true error (its rod's largest |Δr_c| + ρ |Δθ| against the closed form, m), the estimate, the allowance,
  whether the run flagged it (``motion.error`` broken), and whether any run is *wrong-unflagged* (true error
  beyond the allowance, not flagged).
* *Cost*: every model of ``samples/dynamics`` and ``samples/vehicles`` at its own span and default method, wall time
  with the estimate and without (``estimate_error=False``), medians of ``REPEATS`` alternating runs in one process
  (compiled code loaded once before), and the estimate against its allowance.

    python benchmarks/global_error.py [pendulum] [samples]        (default: both)
"""
import math
import os
import sys
import time
import warnings
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "kernel"))
from test_global_error import SPAN, FRAMES, _pendulum, _true_error  # noqa: E402  (the spec tests' model)

from cadmotion.importers.modelfile import parse_model, read_model_file  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics.forward import run  # noqa: E402
from cadmotion.plugin.run_analysis import time_span  # noqa: E402

REPEATS = 3
SETTINGS = ([dict(integrator="RK4", dt=dt) for dt in (0.04, 0.02, 0.01, 0.005, 0.002)]
            + [dict(formulation="index3", integrator="generalized-alpha", dt=dt) for dt in (0.02, 0.005, 0.001)]
            + [dict(integrator=i, rtol=r, atol=r / 100) for i in ("DOP853", "RK45", "Radau", "BDF", "LSODA")
               for r in (1e-4, 1e-6, 1e-8, 1e-10)]
            + [dict(formulation="projection", integrator="DOP853", rtol=r, atol=r / 100) for r in (1e-4, 1e-6, 1e-8)])


def _check(result):
    found = [c for c in result.invariants.checks if c.name == "motion.error"]
    return found[0] if found else None


def pendulum():
    """The closed-form table (module docstring)."""
    print("\nrelease  setting                                        true m    estimate m  allowed m  flagged  verdict")
    counts = dict(runs=0, flagged=0, wrong_unflagged=0, no_estimate=0)
    for degrees in (179.0, 30.0):
        model = compile_model(parse_model(_pendulum(math.radians(degrees)), source="pendulum.toml"))
        for setting in SETTINGS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                motion, result = run(model, SPAN, FRAMES, **setting)
            counts["runs"] += 1
            check = _check(result)
            true = _true_error(motion, math.radians(degrees)) if motion.complete else float("nan")
            if check is None:
                counts["no_estimate"] += 1
                print(f"{degrees:5.0f}°  {_name(setting):<46} {true:9.2e}  (none: {result.invariants.skipped})")
                continue
            broken = check.broken or not motion.complete
            wrong = (not true <= check.allowed) and not broken
            counts["flagged"] += broken
            counts["wrong_unflagged"] += wrong
            print(f"{degrees:5.0f}°  {_name(setting):<46} {true:9.2e}  {check.max_drift:9.2e}  {check.allowed:9.2e}  "
                  f"{'yes' if broken else 'no':<7}  {'WRONG-UNFLAGGED' if wrong else ''}")
    print(" ".join(f"{k}: {v}" for k, v in counts.items()))


def _name(setting):
    return ", ".join(f"{k} {v}" for k, v in setting.items())


def samples():
    """The cost table (module docstring)."""
    files = sorted((ROOT / "samples" / "dynamics").glob("*.cadmotion.toml")) + sorted(
        (ROOT / "samples" / "vehicles").glob("*.cadmotion.toml"))
    print(f"\n{'model':<28} {'method':<28} {'with s':>8} {'without s':>10} {'ratio':>6}  motion.error")
    ratios = []
    for path in files:
        spec = read_model_file(path)
        model = compile_model(spec)
        t_end, steps = time_span(spec)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run(model, t_end, steps)  # compiled code loaded (or compiled) before the timing
            walls = {True: [], False: []}
            for _ in range(REPEATS):
                for estimate in (True, False):
                    start = time.perf_counter()
                    motion, result = run(model, t_end, steps, estimate_error=estimate)
                    walls[estimate].append(time.perf_counter() - start)
                    if estimate:
                        check = _check(result)
        with_, without = float(np.median(walls[True])), float(np.median(walls[False]))
        ratios.append(with_ / without)
        method = f"{result.formulation} / {result.integrator}"
        print(f"{path.name.removesuffix('.cadmotion.toml'):<28} {method:<28} {with_:8.3f} {without:10.3f} "
              f"{with_ / without:6.2f}  {check.line() if check else result.invariants.skipped}")
    print(f"ratio with / without: median {np.median(ratios):.2f}, range {min(ratios):.2f}–{max(ratios):.2f}")


def main(argv):
    print(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "load", os.getloadavg())
    for name, job in (("pendulum", pendulum), ("samples", samples)):
        if not argv or name in argv:
            job()
    print(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "load", os.getloadavg())


if __name__ == "__main__":
    main(sys.argv[1:])
