"""Kinematics benchmarks: prints figures (medians of repeats), asserts nothing.

    python benchmarks/kinematics.py            # all
    python benchmarks/kinematics.py --quick    # smaller N list, one repeat

1. Slider-crank (samples/slider_crank.cadmotion.toml), 1,000 output frames: position,
   velocity and acceleration; wall time after compile (goal of issue 15: ≤ 0.1 s).
2. Planar closed loop of N revolute-jointed links (a regular N-gon, link 0 fixed),
   N − 3 joints driven (all but three a third of the loop apart): time per frame against N
   (goal: linear, ≤ 10 ms per frame at N = 1000).
3. Compile time of an N-joint model, cold (first in process) and warm.
4. ``--break-even``: where the compiled kinematic step (kernel/kinematics_fast.py) starts to
   pay for a small model: the slider-crank for n frames in a new process each, timed from
   before the ``kinematics`` call (so loading numba and the compiled module's machine code
   counts) and for the whole process (wall and CPU), numpy stepper (``CADMOTION_KINEMATICS_FAST=0``) and
   compiled step (``=compile``, its machine code already cached) alternately, medians;
   ``CADMOTION_BACKEND`` is unset there, as for a user.

BLAS is pinned to one thread (``OPENBLAS_NUM_THREADS=1`` etc., as the other benchmarks) unless
the variables are already set: the first threaded LAPACK call of a process starts OpenBLAS's
thread pool (0.1–0.2 s on a busy 2-core machine), which made the first loop size that crossed
its threshold look 50× slower per frame than the next.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def closed_loop(N):
    from cadmotion.importers.modelfile import parse_model

    P = np.zeros((N + 1, 2))
    for k in range(N):
        a = -2 * math.pi * k / N
        P[k + 1] = P[k] + [math.cos(a), math.sin(a)]
    parts = {"link0": {"fixed": True}}
    parts.update({f"link{k}": {"position": [float(P[k, 0]), float(P[k, 1]), 0.0]} for k in range(1, N)})
    joints = [{"name": f"j{k}", "type": "revolute", "parts": [f"link{(k - 1) % N}", f"link{k}"],
               "origin": [float(P[k, 0]), float(P[k, 1]), 0.0], "axis": [0, 0, 1]} for k in range(N)]
    # the three undriven joints sit a third of the loop apart, so the three rigid arcs between
    # them close like a well-shaped triangle (adjacent free joints would form a nearly straight,
    # nearly singular dyad); small drive amplitudes keep the loop closable
    free = {0, N // 3, 2 * N // 3}
    amp = 0.3 / N
    drivers = [{"joint": f"j{k}", "expression": f"{amp}*(sin(t + {k % 7}) - sin({k % 7}))"}
               for k in range(N) if k not in free]
    return parse_model({"parts": parts, "joints": joints, "drivers": drivers}, source=f"<closed loop N={N}>")


def median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


#: one kinematic run of a model file for n frames: prints the seconds of the call and of the process
_ONE_RUN = """
import sys, time
from cadmotion.importers import load
from cadmotion.kernel import compile_model, kinematics
model = compile_model(load(sys.argv[1]))
t0 = time.perf_counter()
kinematics(model, t_end=2.0, steps=int(sys.argv[2]))
print(time.perf_counter() - t0)
"""


def break_even(repeat, frames=(200, 500, 1000, 1500, 3000)):
    """Seconds of the slider-crank's kinematics for n frames in a new process, numpy stepper
    against the compiled step (see the module docstring, item 4)."""
    model_file = str(ROOT / "samples" / "slider_crank.cadmotion.toml")
    env = {k: v for k, v in os.environ.items() if k != "CADMOTION_BACKEND"}
    modes = {"numpy": "0", "compiled": "compile"}

    def once(mode, n):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", _ONE_RUN, model_file, str(n)], capture_output=True, text=True,
                             env=dict(env, CADMOTION_KINEMATICS_FAST=modes[mode]), check=True).stdout
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return float(out.split()[-1]), wall, cpu

    for mode in modes:  # compile (or load) once, outside the timings
        once(mode, 10)
    print("slider-crank in a new process: kinematics call s / whole process s (its CPU s), medians of", repeat)
    print(f"{'frames':>7} {'numpy':>22} {'compiled':>22}")
    for n in frames:
        runs = {mode: [] for mode in modes}
        for _ in range(repeat):
            for mode in modes:
                runs[mode].append(once(mode, n))
        cells = [f"{statistics.median(c for c, _, _ in r):.3f} / {statistics.median(w for _, w, _ in r):.2f} "
                 f"({statistics.median(u for _, _, u in r):.2f})" for r in runs.values()]
        print(f"{n:>7} {cells[0]:>22} {cells[1]:>22}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--break-even", action="store_true", help="only item 4 of the module docstring")
    args = ap.parse_args()
    repeat = 1 if args.quick else 3
    if args.break_even:
        break_even(repeat)
        return
    from cadmotion.importers import load
    from cadmotion.kernel import compile_model, kinematics
    from cadmotion.kernel.symbolic.codegen import default_backend

    print(f"backend: {default_backend()}")
    model = compile_model(load(ROOT / "samples" / "slider_crank.cadmotion.toml"))
    kinematics(model, t_end=2.0, steps=10)  # warm-up (numba compile or cache load)
    wall, motion = median_time(lambda: kinematics(model, t_end=2.0, steps=1000), repeat)
    th = motion.time**2
    x = 0.1 * np.cos(th) + np.sqrt(0.09 - (0.1 * np.sin(th)) ** 2)
    err = np.abs(motion.position[:, motion.part_index("slider"), 0] - x).max()
    print(f"slider-crank, 1000 frames: {wall:.3f} s (median of {repeat}), max slider error {err:.1e} m")

    Ns = [10, 30, 100, 300] if args.quick else [10, 30, 100, 300, 1000]
    print("closed loop of N links, N-3 joints driven, 20 frames:")
    print(f"{'N':>6} {'nq':>7} {'compile s':>10} {'ms/frame':>9} {'us/frame/link':>14} {'max gap m':>10}")
    for N in Ns:
        spec = closed_loop(N)
        t0 = time.perf_counter()
        m = compile_model(spec)
        t_compile = time.perf_counter() - t0
        kinematics(m, t_end=0.1, steps=1)
        wall, mo = median_time(lambda: kinematics(m, t_end=1.0, steps=20), repeat)
        if not mo.complete:
            print(f"{N:>6} stopped: {mo.message}")
            continue
        per_frame = wall / 21
        # joint gap: both markers of every joint coincide (check through the kernel's own Φ is not independent;
        # use positions: link k's frame origin is vertex k, which must equal link k-1's far end)
        from cadmotion.kernel.motion import quat_to_matrix

        gaps = []
        for k in range(1, N):
            a, b = mo.part_index(f"link{k - 1}"), mo.part_index(f"link{k}")
            R = quat_to_matrix(mo.quaternion[-1, a])
            ang = -2 * math.pi * (k - 1) / N
            end = mo.position[-1, a] + R @ np.array([math.cos(ang), math.sin(ang), 0.0])
            gaps.append(np.linalg.norm(end - mo.position[-1, b]))
        print(f"{N:>6} {m.nq:>7} {t_compile:>10.3f} {1e3 * per_frame:>9.2f} {1e6 * per_frame / N:>14.1f} "
              f"{max(gaps):>10.1e}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
