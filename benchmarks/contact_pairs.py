"""Compliant box–box contacts (issue 16 item 1): the cost of their 160 points per pair, with and without the
broad phase.

A row of N boxes (0.1 m cubes, 1 kg, 20 mm apart) resting on a long fixed base box, the first pushed at 1 m/s
along the row, frictionless, restitution 0.8: a chain of box–box impacts runs along it while every box keeps its
four corners on the base. Declared by pattern (``pairs = "all"``): N(N + 1)/2 box–box pairs (N(N − 1)/2 between
the cubes, N with the base), each 16 corner and 144 edge–edge points. T s simulated by projection / DOP853
(rtol 1e-8, atol 1e-10) on the compiled right-hand side in the compiled loop, with the broad phase (the default)
and without
(``options={"activation": False}``), and on the numpy right-hand side over T/10 (one run). Prints per case the
median wall time of ``CM_REPEAT`` runs (default 3), evaluations, µs per evaluation, points evaluated, in touch,
features tested (the broad phase's second stage: corners, edges against the other box) and box pairs' least-overlap
axes computed (one per box taken as S, by the first corner or edge crossing that needs it) per evaluation; then
whether the boxes are in their order along x at the end, their x (m) and v_x (m/s), the largest position
difference between the two compiled runs and the total momentum along the row at the end (N s, the base takes
none along x: frictionless).

    python benchmarks/contact_pairs.py [N [T]]     (default 8 boxes, 0.2 s)

The cubes' faces are coplanar (tops, bottoms, facing sides): a cube's corners lie on the next one's faces. Since
2026-11-27 (branch ``box-sat``) a box corner in or on the other box is pushed along the pair's least-overlap
separating axis (:func:`cadmotion.kernel.dynamics.contacts._least_overlap`, as ODE's dBoxBox), on which coplanar
sides overlap fully; before, its depth was 0 and the first cube passed through the second. Measured that day
(``python benchmarks/contact_pairs.py``, load average 4.6–5.4, other sessions' work): the impulse runs along the
row as Newton's law has it for equal masses, each impact leaving (1 − e)/2 of the incoming speed behind —
at 0.2 s, v_x = [0.1, 0.09, 0.081, 0.073, 0.066, 0.059, 0.531, 0] m/s (six impacts; the seventh box 1 mm from
the last), boxes in order, momentum 1.000000 N s; with T = 0.3 s the last box leaves at 0.478 m/s = 0.9⁷.
Since 2026-11-27 evening (branch ``boxbox-manifold``) each vertex of the patch between two cubes is counted once
(it is a corner of both: 8 points before, 4 now, as offset sideways): softer impacts, the same v_x to 3 decimals.
Since 2026-11-27 late evening (branch ``compliant``) an edge crossing between facing faces counts whichever way the
edges tilt and a corner is measured below the other box's facing face: this row's run is the same to every count
(4,796 evaluations, the same x and v_x); the broad phase's edge gap subtracts twice the pair's least overlap.
benchmarks/README.md has the costs.
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
os.environ.setdefault("CADMOTION_DYNAMICS_FAST", "compile")  # time the compiled code (built here if need be)

import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from cadmotion.importers.modelfile import parse_model  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics.forward import prepare  # noqa: E402
from cadmotion.kernel.dynamics.formulations import get_formulation  # noqa: E402

REPEAT = int(os.environ.get("CM_REPEAT", "3"))
A, GAP = 0.1, 0.02


def row_of_boxes(n):
    parts = {"base": {"fixed": True}}
    for i in range(n):
        parts[f"box{i + 1:02d}"] = {"position": [i * (A + GAP), 0.0, 0.05 + A / 2], "mass": 1.0,
                                    "inertia": [A * A / 6] * 3}
    shape = {"box*": {"box": [A, A, A]}, "base": {"box": [4.0, 0.4, 0.1]}}
    return {"units": "m", "gravity": [0, 0, -9.81], "parts": parts,
            "initial_velocity": {"box01": {"velocity": [1.0, 0, 0]}},
            "contacts": [{"name": "row", "pairs": "all", "shape": shape, "method": "compliant", "stiffness": 1e7,
                          "exponent": 1.5, "restitution": 0.8}]}


def solve(model, t_end, **options):
    """(wall s, result, formulation): t_end s (50 frames), projection / DOP853."""
    dyn, q0, v0, angles, refs = prepare(model, 0.0)
    form = get_formulation("projection")(dyn, angles=angles, refs=refs, **options)
    t0 = time.perf_counter()
    result = form.solve(np.linspace(0.0, t_end, 51), q0, v0, integrator="DOP853", rtol=1e-8, atol=1e-10)
    return time.perf_counter() - t0, result, form


def main(n, t_end):
    model = compile_model(parse_model(row_of_boxes(n), source=f"row of {n} boxes"))
    solve(model, 0.002)  # compile / warm the caches
    rows = {}
    for label, span, options, repeat in (("compiled, broad phase", t_end, {}, REPEAT),
                                         ("compiled, every point", t_end, {"activation": False}, REPEAT),
                                         ("numpy right-hand side", t_end / 10, {"fast": False}, 1)):
        walls = []
        for _ in range(repeat):
            wall, result, form = solve(model, span, **options)
            walls.append(wall)
        fast = form._fast
        counts = fast.contact_stats / fast.contact_stats[0] if fast is not None else (1,) + (np.nan,) * 4
        counts = tuple(counts) + (np.nan,) * (5 - len(counts))  # an older tree: fewer counters
        rows[label] = (statistics.median(walls), result, span, form.nfev, counts)
        print(f"{label}: {result.message or 'complete'}", flush=True)
    points = len(model.spec.contacts) * 160
    on_x = rows["compiled, broad phase"][1].q[-1].reshape(n, 7)[:, 0]
    on_v = rows["compiled, broad phase"][1].v[-1].reshape(n, 6)[:, 0]
    in_order = bool(np.all(np.diff(on_x) > 0))
    print(f"{n} boxes, {len(model.spec.contacts)} box–box pairs, "
          f"{points} points; boxes in their order along x at the end: {in_order} "
          f"(x {np.round(on_x, 3).tolist()}, v_x {np.round(on_v, 3).tolist()} m/s); "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"{'case':<22} {'T s':>6} {'wall s':>8} {'evaluations':>11} {'us/eval':>8} {'points/eval':>11} "
          f"{'touching':>8} {'features/eval':>13} {'axes/eval':>9}")
    for label, (wall, result, span, nfev, counts) in rows.items():
        print(f"{label:<22} {span:>6g} {wall:>8.2f} {nfev:>11} {wall / nfev * 1e6:>8.1f} {counts[1]:>11.1f} "
              f"{counts[2]:>8.2f} {counts[3]:>13.1f} {counts[4]:>9.2f}")
    on, off = rows["compiled, broad phase"][1], rows["compiled, every point"][1]
    k = min(len(on.t), len(off.t))
    v = on.v[-1].reshape(n, 6)  # per box: velocity of the com, angular velocity
    per_eval = {label: row[0] / row[3] for label, row in rows.items()}
    print(f"every point / broad phase per evaluation "
          f"{per_eval['compiled, every point'] / per_eval['compiled, broad phase']:.1f}x; numpy / compiled "
          f"{per_eval['numpy right-hand side'] / per_eval['compiled, broad phase']:.0f}x; max |dq| between the "
          f"compiled runs {float(np.max(np.abs(on.q[:k] - off.q[:k]))):.1e}; momentum along x at the end "
          f"{float(np.sum(v[:, 0])):.6f} N s (1 at the start)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8, float(sys.argv[2]) if len(sys.argv) > 2 else 0.2)
