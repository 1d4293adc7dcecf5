"""Stiff dynamics: the IFToMM stiff flyball governor (A05) with every method that runs it.

For ``samples/dynamics/flyball_governor.cadmotion.toml`` (10 s, 100 output frames) prints, per
formulation / integrator / setting: accepted steps, evaluations of the right-hand side (or of
the index-3 residual), factorisations, the wall and CPU time (medians of ``--repeat`` runs after a
warm-up in the same process, so numba compilation is not counted; the runs go round-robin over
the methods, so on a shared machine each median sees the same load), the drift of the axial
angular momentum max |L_z − L_z(0)| / L_z(0), the largest rise of the total energy between
frames (J; kinetic + gravity + springs — the dampers only take energy out, so any rise is an
integration error) and the slider's position error at 10 s against DOP853 at rtol 1e-10,
atol 1e-12. L_z and the energy are computed here from the motion and the model file.

Rows:
  automatic choice           no method given: what :func:`.stiffness.default_method` picks (Radau in
                             the compiled loop at rtol = atol = 1e-8, :data:`.stiffness.STIFF_ATOL`)
  projection / DOP853        the explicit method (rtol 1e-8, atol 1e-10)
  index3 / generalized-alpha ρ∞ = 0.9, fixed steps dt; the full Newton matrix
  index3 / HHT               ρ∞ = 0.9 (α = −0.053)
  index3 newton=mass         the earlier iteration matrix [M_q, Φqᵀ; Φq, 0] (step halving)
  projection / Radau compiled the compiled Radau IIA loop (cadmotion.kernel.dynamics._radau) with
                             the compiled analytic Jacobian: at the defaults and at rtol = atol = 1e-8
  projection / Radau, BDF    scipy (rtol = atol = 1e-8) with the analytic Jacobian of
                             :mod:`cadmotion.kernel.dynamics.implicit` (what the formulations pass)

Each run (warm-up included) is capped at ``--time-cap`` wall seconds (SIGALRM, POSIX): a method
that is too slow prints "time cap".

    python benchmarks/stiff.py [--repeat 3] [--time-cap 60] [--quick] [--only automatic,DOP853]

BLAS is pinned to one thread unless the variables are set.
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
# timed runs measure the compiled code, built in this process when the cache lacks it (a user's
# first run would integrate on numpy and leave the compiling to the background warm-up)
os.environ.setdefault("CADMOTION_DYNAMICS_FAST", "compile")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from timecap import TimeCap, capped  # noqa: E402

from cadmotion.importers.modelfile import read_model_file  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics.forward import run  # noqa: E402
from cadmotion.kernel.dynamics.mass import rotation  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "samples", "dynamics", "flyball_governor.cadmotion.toml")
T_END, STEPS = 10.0, 100


def invariants(m, mdl):
    """(L_z (nt,), E (nt,)) from the motion and the model file's masses, inertias and springs."""
    g = np.asarray(mdl.spec.gravity, float)
    L, E = np.zeros(m.nt), np.zeros(m.nt)
    parts = {p.name: p for p in mdl.spec.parts}
    for p in mdl.spec.parts:
        if p.fixed:
            continue
        b = m.part_index(p.name)
        I = np.asarray(p.inertia, float)
        I = I if I.shape == (3, 3) else np.diag(I)
        for k in range(m.nt):
            X = m.pose(p.name, m.time[k])
            R, r = X[:3, :3], X[:3, 3]
            rho = R @ np.asarray(p.com, float)
            w = m.angular_velocity[k, b]
            vc = m.velocity[k, b] + np.cross(w, rho)
            Jw = R @ I @ R.T @ w
            L[k] += p.mass * np.cross(r + rho, vc)[2] + Jw[2]
            E[k] += 0.5 * p.mass * vc @ vc + 0.5 * w @ Jw - p.mass * g @ (r + rho)
    for f in mdl.spec.forces:
        par = dict(f.params)
        ends = []
        for part, P in zip(f.parts, f.points):
            p0 = parts[part]
            ends.append((part, rotation(np.asarray(p0.orientation, float)).T @ (np.asarray(P) - p0.position)))
        for k in range(m.nt):
            a, b = (m.pose(part, m.time[k]) @ np.append(x, 1.0) for part, x in ends)
            E[k] += 0.5 * par["stiffness"] * (np.linalg.norm(b[:3] - a[:3]) - par["free_length"]) ** 2
    return L, E


def cases(quick):
    out = [("automatic choice (no method given)", dict()),
           ("projection / DOP853", dict(formulation="projection"))]
    for dt in ((1e-2,) if quick else (1e-2, 5e-3, 1e-3)):
        out.append((f"index3 / generalized-alpha dt={dt:g}", dict(formulation="index3", dt=dt)))
    for dt in ((1e-2,) if quick else (1e-2, 5e-3)):
        out.append((f"index3 / HHT dt={dt:g}", dict(formulation="index3", integrator="HHT", dt=dt)))
    if not quick:
        out.append(("index3 / generalized-alpha dt=0.01 newton=mass",
                    dict(formulation="index3", dt=1e-2, options={"newton": "mass"})))
    # the compiled Radau loop (_radau.py) at the default tolerances and at rtol = atol = 1e-8, then scipy's
    # Radau and BDF iterating with the analytic Jacobian of implicit.py
    out.append(("projection / Radau compiled, rtol 1e-8 atol 1e-10", dict(integrator="Radau")))
    out.append(("projection / Radau compiled, rtol=atol=1e-8", dict(integrator="Radau", rtol=1e-8, atol=1e-8)))
    out.append(("projection / Radau scipy, rtol=atol=1e-8", dict(integrator="Radau", rtol=1e-8, atol=1e-8,
                                                                 options={"compiled_loop": False})))
    out.append(("projection / BDF scipy, rtol=atol=1e-8", dict(integrator="BDF", rtol=1e-8, atol=1e-8)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--time-cap", type=float, default=60.0)
    ap.add_argument("--quick", action="store_true", help="the defaults, index3 at dt = 0.01, Radau and BDF only")
    ap.add_argument("--only", default="",
                    help="comma-separated parts of the method names to run (e.g. 'automatic,DOP853')")
    args = ap.parse_args()
    mdl = compile_model(read_model_file(MODEL))
    ref, _ = run(mdl, T_END, STEPS, rtol=1e-10, atol=1e-12)
    z_ref = ref.position[-1, ref.part_index("slider"), 2]
    only = [w.strip() for w in args.only.split(",") if w.strip()]
    todo = [(label, kw) for label, kw in cases(args.quick) if not only or any(w in label for w in only)]
    load0 = os.getloadavg()[0]
    # warm-up (loads the compiled code), then the timed runs round-robin over the methods, so each
    # method's median sees the same load on a shared machine
    walls, cpus, last, capped_out = {}, {}, {}, set()
    for label, kw in todo:
        try:
            capped(args.time_cap, run, mdl, 0.05, 1, **kw)
        except TimeCap:
            capped_out.add(label)
    for _ in range(max(1, args.repeat)):
        for label, kw in todo:
            if label in capped_out:
                continue
            try:
                t0, c0 = time.perf_counter(), time.process_time()
                last[label] = capped(args.time_cap, run, mdl, T_END, STEPS, **kw)
                walls.setdefault(label, []).append(time.perf_counter() - t0)
                cpus.setdefault(label, []).append(time.process_time() - c0)
            except TimeCap:
                capped_out.add(label)
    print(f"A05 stiff flyball governor, {T_END:g} s, {STEPS} frames; wall and CPU = medians of {args.repeat} warm "
          f"runs, round-robin over the methods; cap {args.time_cap:g} s per run; load {load0:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end; slider z(10 s) = {z_ref:.10f} m (DOP853 rtol 1e-10, atol 1e-12)")
    head = (f"{'method':52s} {'steps':>7s} {'evals':>8s} {'factor':>7s} {'wall s':>8s} {'cpu s':>7s} "
            f"{'L_z drift':>10s} {'max dE+ J':>10s} {'slider err m':>12s}")
    print(head)
    print("-" * len(head))
    for label, kw in todo:
        if label in capped_out:
            print(f"{label:52s} time cap ({args.time_cap:g} s)")
            continue
        m, res = last[label]
        wall, cpu = np.median(walls[label]), np.median(cpus[label])
        if not kw:
            label += f": {res.formulation} / {res.integrator} rtol {res.rtol:g} atol {res.atol:g}"
        if not m.complete:
            print(f"{label:52s} stopped at t = {m.time[-1]:.4g} s: {m.message}")
            continue
        L, E = invariants(m, mdl)
        drift = np.max(np.abs(L - L[0])) / abs(L[0])
        rise = float(np.max(np.diff(E)))
        zerr = abs(m.position[-1, m.part_index("slider"), 2] - z_ref)
        print(f"{label:52s} {res.nsteps:7d} {res.nfev:8d} {res.nfactor:7d} {wall:8.3f} {cpu:7.3f} "
              f"{drift:10.2e} {rise:10.2e} {zerr:12.2e}", flush=True)


if __name__ == "__main__":
    main()
