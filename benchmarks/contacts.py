"""Unilateral contacts (issue 16): the time the active set saves, against every declared contact kept.

A row of N balls (R = 50 mm, 1 kg) resting on a floor, 20 mm apart, the first one pushed at 1 m/s
along the row: a chain of impacts (e = 0.9, frictionless) passes along it while every ball keeps its
floor contact. The contacts are declared by pattern, ``pairs = "all"``: the N(N − 1)/2 ball pairs and the
N ball–floor pairs. With activation (the default) the equations hold only the rows of the contacts that
touch (the N floor contacts, and none of the ball pairs between their impacts); without
(``options={"activation": False}``) every declared contact's rows are formed and solved at every
evaluation, the open ones with λ = 0 — the same motion, checked here to 1e-6 m.

Prints, per N: declared contacts, the mean number active (time-weighted, from the run's note), impacts,
the median wall time of ``CM_REPEAT`` runs (default 3) of 1 s simulated with and without activation,
their ratio and the largest position difference between the two runs.

BLAS is pinned to one thread, as in ../shared/peers/run_all.sh and ``lattice.py`` (on this shared 2-core
machine a threaded OpenBLAS makes small dense solves many times slower).

    python benchmarks/contacts.py [N ...]        (default N = 5 10 20)
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
# timed runs measure the compiled code, built in this process when the cache lacks it (a user's
# first run would integrate on numpy and leave the compiling to the background warm-up)
os.environ.setdefault("CADMOTION_DYNAMICS_FAST", "compile")

import re  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from cadmotion.importers.modelfile import parse_model  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics.forward import run  # noqa: E402

REPEAT = int(os.environ.get("CM_REPEAT", "3"))
R, GAP = 0.05, 0.02


def row_of_balls(n):
    parts = {"floor": {"fixed": True}}
    for i in range(n):
        parts[f"ball{i + 1:02d}"] = {"position": [i * (2 * R + GAP), 0.0, R], "mass": 1.0,
                                     "inertia": [0.001, 0.001, 0.001]}
    shape = {"ball*": {"sphere": R}, "floor": {"plane": {}}}
    return {"units": "m", "gravity": [0, 0, -9.81], "parts": parts,
            "initial_velocity": {"ball01": {"velocity": [1.0, 0, 0]}},
            "contacts": [{"name": "row", "pairs": "all", "shape": shape, "restitution": 0.9}]}


def timed(model, activation):
    walls = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        motion, result = run(model, 1.0, 20, options={"activation": activation})
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls), motion, result


def mean_active(result):
    for note in result.notes:
        m = re.search(r"time with k contacts active: (.*)$", note)
        if m:
            shares = [tuple(map(float, re.findall(r"[0-9.e+-]+", part)))[:2] for part in m.group(1).split(", ")]
            total = sum(s for _, s in shares)
            return sum(k * s for k, s in shares) / total
    return float("nan")


def main(sizes):
    print(f"{'N':>4} {'declared':>9} {'active':>7} {'impacts':>8} {'activation s':>13} {'all rows s':>11} "
          f"{'ratio':>6} {'max |dq| m':>11}")
    for n in sizes:
        model = compile_model(parse_model(row_of_balls(n), source=f"row of {n} balls"))
        run(model, 0.05, 1)  # warm the caches
        t_on, m_on, r_on = timed(model, True)
        t_off, m_off, r_off = timed(model, False)
        impacts = sum(e.kind == "impact" for e in m_on.events)
        dq = float(np.max(np.abs(m_on.position - m_off.position)))
        declared = len(model.spec.contacts)
        print(f"{n:>4} {declared:>9} {mean_active(r_on):>7.2f} {impacts:>8} {t_on:>13.3f} {t_off:>11.3f} "
              f"{t_off / t_on:>6.1f} {dq:>11.2e}", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [5, 10, 20])
