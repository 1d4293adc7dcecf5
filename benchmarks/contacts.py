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

Compliant contacts, the chain drive (``chain``): the sample of ``samples/dynamics/make_chain_drive.py``
(LINKS links on two 16-tooth sprockets, every roller against every tooth, 32 · LINKS contacts), T s
simulated by projection / DOP853 (rtol 1e-6, atol 1e-8; tightened to 1e-8 by the closed loop) on the
compiled right-hand side in the compiled loop, with the broad phase (the default: only the points of the
body pairs whose bounding spheres meet, and of those the ones whose roller and tooth are near, are
evaluated) and without (``options={"activation": False}``: every declared point evaluated at every
evaluation), and on the numpy right-hand side over T/10 (one run: it is ~100 times slower). Prints per case
the median wall time of ``CM_REPEAT`` runs, evaluations, µs per evaluation, points evaluated, in touch and
features tested per evaluation; then the ratios, the largest position difference between the two compiled
runs, and the checks: the driven sprocket's mean speed over the second half against the driver's (equal
teeth), and the run's own invariant checks (:mod:`cadmotion.kernel.dynamics.invariants`: the energy balance
T + V − T0 − V0 − W, W the work of the driver, the brake and the contacts' damping and friction; the joints'
violations).

    python benchmarks/contacts.py chain [LINKS [T]]     (default 60 links, 0.02 s)

Unilateral contacts, the chain drive (``chain-unilateral``): the same sample written with
``--method unilateral`` (every roller against every tooth as a unilateral contact, e = 0, μ = 0.1), T s
simulated by projection / DOP853 (rtol 1e-6, atol 1e-8) on the numpy right-hand side with the event-driven
switches of :mod:`cadmotion.kernel.dynamics.hybrid`, with activation (the default: the rows of the touching
rollers only) and with every declared contact's rows in the equations (``options={"activation": False}``)
over T_ALL s (default T; where T_ALL differs, activation over T_ALL as well, for the comparison at the same
span): one run each, ``CM_REPEAT`` ignored — a run takes minutes. Prints per case the
wall time, wall time per simulated second, steps, evaluations, ms per evaluation, the mean number of
contacts active, impacts and contact switches; then, over T_ALL, the ratio of the wall times and the
largest position difference of the two runs, and over T the driven sprocket's mean speed over the second
half against the driver's and the run's own checks.

    python benchmarks/contacts.py chain-unilateral [LINKS [T [T_ALL]]]     (default 60 links, 0.005 s)
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
        motion, result = run(model, 1.0, 20, options={"activation": activation}, estimate_error=False)
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


def chain_run(model, t_end, **options):
    """(wall s, result, formulation): the chain drive over t_end s (100 frames), projection / DOP853."""
    from cadmotion.kernel.dynamics.forward import prepare
    from cadmotion.kernel.dynamics.formulations import get_formulation

    dyn, q0, v0, angles, refs = prepare(model, 0.0)
    form = get_formulation("projection")(dyn, angles=angles, refs=refs, **options)
    times = np.linspace(0.0, t_end, 101)
    t0 = time.perf_counter()
    result = form.solve(times, q0, v0, integrator="DOP853", rtol=1e-6, atol=1e-8)
    return time.perf_counter() - t0, result, form


def chain_model(links, t_end, method):
    """The compiled chain-drive sample of ``samples/dynamics/make_chain_drive.py`` (100 frames)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples", "dynamics"))
    import tomllib

    from make_chain_drive import chain_drive_toml

    return compile_model(parse_model(tomllib.loads(chain_drive_toml(links, t_end, 100, method)),
                                     source=f"chain drive, {links} links, {method}"))


def chain(links, t_end):
    model = chain_model(links, t_end, "compliant")
    chain_run(model, 0.002)  # compile / warm the caches
    rows = {}
    cases = (("compiled, broad phase", t_end, {}, REPEAT),
             ("compiled, every point", t_end, {"activation": False}, REPEAT),
             ("numpy right-hand side", t_end / 10, {"fast": False}, 1))
    for label, span, options, repeat in cases:
        walls = []
        for _ in range(repeat):
            wall, result, form = chain_run(model, span, **options)
            walls.append(wall)
        fast = form._fast
        counts = fast.contact_stats / fast.contact_stats[0] if fast is not None else (1,) + (np.nan,) * 3
        rows[label] = (statistics.median(walls), result, span, form.nfev, counts)
        print(f"{label}: {result.message or 'complete'}; {'; '.join(result.notes)}", flush=True)
    print(f"{'case':<22} {'T s':>6} {'wall s':>8} {'wall/T':>8} {'evaluations':>11} {'us/eval':>8} "
          f"{'points/eval':>11} {'touching':>8} {'features/eval':>13}")
    for label, (wall, result, span, nfev, counts) in rows.items():
        print(f"{label:<22} {span:>6g} {wall:>8.2f} {wall / span:>8.0f} {nfev:>11} {wall / nfev * 1e6:>8.1f} "
              f"{counts[1]:>11.1f} {counts[2]:>8.2f} {counts[3]:>13.1f}")
    on, off = rows["compiled, broad phase"][1], rows["compiled, every point"][1]
    n = min(len(on.t), len(off.t))
    motion, result = run(model, t_end, 100, rtol=1e-6, atol=1e-8)
    wa = motion.angular_velocity[:, motion.parts.index("sprocket_a"), 2]
    wb = motion.angular_velocity[:, motion.parts.index("sprocket_b"), 2]
    half = motion.time >= t_end / 2
    per_s = {label: row[0] / row[2] for label, row in rows.items()}
    print(f"{links} links, {len(model.spec.contacts)} declared contacts: broad phase / every point "
          f"{per_s['compiled, every point'] / per_s['compiled, broad phase']:.2f}x, max |dq| "
          f"{float(np.max(np.abs(on.q[:n] - off.q[:n]))):.1e} m; numpy / compiled per simulated s "
          f"{per_s['numpy right-hand side'] / per_s['compiled, broad phase']:.1f}x; "
          f"mean wB / wA over the second half {np.mean(wb[half]) / np.mean(wa[half]):.4f}; "
          f"the run's checks: {'; '.join(check.line() for check in result.invariants.checks)}")


def unilateral_chain_run(model, t_end, activation):
    """(wall s, motion, result): the unilateral chain drive over t_end s, 100 frames."""
    t0 = time.perf_counter()
    motion, result = run(model, t_end, 100, rtol=1e-6, atol=1e-8, options={"activation": activation},
                         estimate_error=False)
    return time.perf_counter() - t0, motion, result


def chain_unilateral(links, t_end, t_all):
    model = chain_model(links, t_end, "unilateral")
    run(model, 1e-5, 1, rtol=1e-6, atol=1e-8)  # warm the kinematics' caches
    cases = [("activation", t_end, True)] + ([("activation", t_all, True)] if t_all != t_end else []) + \
        [("all rows", t_all, False)]
    rows = {}
    for label, span, activation in cases:
        wall, motion, result = unilateral_chain_run(model, span, activation)
        rows[label, span] = (wall, motion, result)
        print(f"{label}, {span:g} s: {motion.message or 'complete'}; {'; '.join(result.notes)}", flush=True)
    print(f"{'case':<11} {'T s':>7} {'wall s':>8} {'wall/T':>9} {'steps':>6} {'evaluations':>11} {'ms/eval':>8} "
          f"{'active':>7} {'impacts':>8} {'switches':>8}")
    for (label, span), (wall, motion, result) in rows.items():
        impacts = sum(e.kind == "impact" for e in motion.events)
        switches = sum(e.kind == "contact" for e in motion.events)
        print(f"{label:<11} {span:>7g} {wall:>8.1f} {wall / span:>9.0f} {result.nsteps:>6} {result.nfev:>11} "
              f"{wall / result.nfev * 1e3:>8.2f} {mean_active(result):>7.2f} {impacts:>8} {switches:>8}")
    (w_on, m_on, _), (w_all, m_all, _) = rows["activation", t_all], rows["all rows", t_all]
    m_long, r_long = rows["activation", t_end][1:]
    wa = m_long.angular_velocity[:, m_long.parts.index("sprocket_a"), 2]
    wb = m_long.angular_velocity[:, m_long.parts.index("sprocket_b"), 2]
    half = m_long.time >= t_end / 2
    print(f"{links} links, {len(model.spec.contacts)} declared contacts, over {t_all:g} s: all rows / activation "
          f"{w_all / w_on:.1f}x, max |dq| {float(np.max(np.abs(m_on.position - m_all.position))):.1e} m; over "
          f"{t_end:g} s: mean wB / wA over the second half {np.mean(wb[half]) / np.mean(wa[half]):.4f}; the run's "
          f"checks: {'; '.join(check.line() for check in r_long.invariants.checks)}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["chain-unilateral"]:
        args = sys.argv[2:]
        t_end = float(args[1]) if len(args) > 1 else 0.005
        chain_unilateral(int(args[0]) if args else 60, t_end, float(args[2]) if len(args) > 2 else t_end)
    elif sys.argv[1:2] == ["chain"]:
        chain(int(sys.argv[2]) if len(sys.argv) > 2 else 60, float(sys.argv[3]) if len(sys.argv) > 3 else 0.02)
    else:
        main([int(a) for a in sys.argv[1:]] or [5, 10, 20])
