"""Absolute against relative coordinates (issue 17): the slider-crank and a generated loop of N pairs.

Per model, for the absolute formulation ``projection`` (compiled right-hand side when numba is
there), ``semi-recursive`` compiled (``kernel/dynamics/fast_tree.py``: its evaluation and the
compiled RK4 loop) and on its numpy dense and sparse paths, and ``recursive`` (its default;
``recursive compiled``, the tree module's recursive stage and loops; on numpy with the two solves
forced: ``recursive dense``, the assembled M̄'s Cholesky factor, and ``recursive ABA``, the
articulated-body passes of ``kernel/dynamics/articulated.py``, compiled):

- ``eval``: the median wall time of one evaluation of the state derivative ẏ (the integrator's
  call, at the initial state; ``CM_EVALS`` calls, default 200);
- ``per s``: the wall time per simulated second of a fixed-step RK4 run at h = 1 ms (``absolute``:
  the compiled RK4 loop of ``kernel/dynamics/_rk4.py``; ``absolute, Python RK4 loop``: the same
  right-hand side stepped by the Python loop, option ``compiled_loop = false``)
  (``--t-sim`` simulated seconds, default 1 s; the integrator's projections and the output
  frames included), and the final position difference from the absolute run (m).

Models: the slider-crank under the crank torque 0.01·e^(−t) N m (``samples/dynamics/
slider_crank_torque``; the issue's 60 s at 1 ms is 60 × ``per s``) and the closed chain of
N revolute pairs written by ``samples/dynamics/make_closed_chain.py`` (N − 3 DOF; 5 closure
equations of rank 2 in the relative coordinates); and one evaluation on the 40-plate lattice
(``samples/dynamics/plate_lattice``: spherical joints, a wide tree whose M̄ is sparse).

BLAS is pinned to one thread (as ``lattice.py``); compiled modules are compiled in the run when not
cached (``CADMOTION_DYNAMICS_FAST=compile``). The machine is shared: the load average is printed
with the figures.

    python benchmarks/relative.py [--n 10 20 50 100 200 300] [--t-sim 1.0] [--skip-runs] [--method absolute ...]
    python benchmarks/relative.py --skip-runs --stage --method "recursive dense" --method "recursive ABA"
    python benchmarks/relative.py --n --no-lattice --t-sim 60 --method absolute --method "absolute, Python RK4 loop"
    python benchmarks/relative.py --n --no-lattice --t-sim 60 --method absolute --method "semi-recursive compiled"
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
os.environ.setdefault("CADMOTION_DYNAMICS_FAST", "compile")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from cadmotion.importers import load  # noqa: E402
from cadmotion.importers.modelfile import parse_model  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics.formulations import FORMULATIONS  # noqa: E402
from cadmotion.kernel.dynamics.forward import prepare, run  # noqa: E402

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "dynamics"
EVALS = int(os.environ.get("CM_EVALS", "200"))
METHODS = (("absolute", "projection", None), ("absolute, Python RK4 loop", "projection", {"compiled_loop": False}),
           ("semi-recursive compiled", "semi-recursive", {"sparse": False}),
           ("semi-recursive dense", "semi-recursive", {"sparse": False, "fast": False}),
           ("semi-recursive sparse", "semi-recursive", {"sparse": True}), ("recursive", "recursive", None),
           ("recursive compiled", "recursive", {"fast": True}),
           ("recursive dense", "recursive", {"aba": False, "fast": False}),
           ("recursive ABA", "recursive", {"aba": True, "fast": False}))


def closed_chain(n):
    spec = importlib.util.spec_from_file_location("_cm_closed_chain", SAMPLES / "make_closed_chain.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return compile_model(parse_model(tomllib.loads(module.closed_chain_toml(n)), source=f"closed chain N = {n}"))


def eval_time(model, formulation, options):
    """Median wall time (s) of one ẏ evaluation at the initial state."""
    dyn, q0, v0, angles, refs = prepare(model)
    form = FORMULATIONS[formulation](dyn, angles=angles, refs=refs, **(options or {}))
    form.rtol = form.atol = 1e-10
    y = form.initial_state(0.0, q0, v0)
    form.rhs(0.0, y)
    walls = []
    for _ in range(EVALS):
        t0 = time.perf_counter()
        form.rhs(0.0, y)
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls)


def run_time(model, formulation, options, t_sim):
    """(wall seconds per simulated second, final q) of RK4 at 1 ms over t_sim seconds."""
    run(model, 0.01, 1, formulation=formulation, integrator="RK4", dt=1e-3, options=options,
        estimate_error=False)  # warm-up
    t0 = time.perf_counter()
    motion, res = run(model, t_sim, 10, formulation=formulation, integrator="RK4", dt=1e-3, options=options,
                      rtol=1e-8, atol=1e-8, estimate_error=False)
    wall = time.perf_counter() - t0
    if not res.success:
        raise RuntimeError(res.message)
    return wall / t_sim, res.q[-1]


def solve_time(model, options):
    """(stage, passes): median wall times (s) at the initial state of ``recursive``'s M̄⁻¹ stage —
    the forces less the bias inertia, the dense M̄ and its Cholesky factor or the articulated-body
    factor, applied to Q̄ and to the closure rows C_rᵀ (``--stage``; the kinematics and the model's
    absolute quantities left out) — and of the articulated-body factor and solves alone (None on
    the dense path)."""
    dyn, q0, v0, angles, refs = prepare(model)
    form = FORMULATIONS["recursive"](dyn, angles=angles, refs=refs, **options)
    _, zd, q, v, b, Z, rc = form._state(0.0, form.initial_state(0.0, q0, v0))
    ev = dyn.evaluate(q, v, 0.0, refs)
    Ct = np.ascontiguousarray(form._closure(ev, b, rc).T)
    g = form._body_terms(ev, b, Z, rc, zd)[0]
    stage = form._articulated if form.aba else form._dense

    def passes():
        aba = form._aba.factor(form._mass, ev.bs.J, rc, b)
        aba.solve(np.zeros(form.tree.nz), g)
        aba.solve(Ct)

    def median(fn):
        walls = []
        for _ in range(EVALS + 1):
            t0 = time.perf_counter()
            fn()
            walls.append(time.perf_counter() - t0)
        return statistics.median(walls[1:])

    return median(lambda: stage(ev, b, Z, rc, zd)[0](Ct)), median(passes) if form.aba else None


def table(label, model, t_sim, runs, methods, stage=False):
    print(f"\n{label}: {model.nq // 7} moving parts")
    ref_q = None
    for name, formulation, options in methods:
        e = eval_time(model, formulation, options)
        line = f"  {name:24s} eval {1e6 * e:9.1f} us"
        if stage and formulation == "recursive" and "aba" in (options or {}):
            st, passes = solve_time(model, options)
            line += f"   M^-1 stage {1e6 * st:9.1f} us" + (f" (passes {1e6 * passes:7.1f} us)" if passes else "")
        if runs:
            per_s, q = run_time(model, formulation, options, t_sim)
            diff = "" if ref_q is None else f", |dq| vs absolute {np.max(np.abs(q - ref_q)):.1e}"
            ref_q = q if ref_q is None else ref_q
            line += f"   per simulated s (RK4, 1 ms) {per_s:8.4f} s{diff}"
        print(line, flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="*", default=[10, 20, 50, 100, 200, 300])
    ap.add_argument("--t-sim", type=float, default=1.0)
    ap.add_argument("--run-n-max", type=int, default=50, help="largest N also run (not only evaluated)")
    ap.add_argument("--skip-runs", action="store_true")
    ap.add_argument("--method", action="append", choices=[m[0] for m in METHODS],
                    help="repeatable; default: all (the first given is the |dq| reference)")
    ap.add_argument("--no-lattice", action="store_true", help="skip the plate lattice's evaluations")
    ap.add_argument("--stage", action="store_true",
                    help="also time recursive dense / recursive ABA's M^-1 stage alone (factor, Q and C_r^T solves) "
                         "and the articulated-body passes alone")
    args = ap.parse_args(argv)
    methods = [m for name in args.method for m in METHODS if m[0] == name] if args.method else METHODS
    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores shared); medians of {EVALS} evaluations")
    table("slider-crank, torque 0.01 exp(-t)", compile_model(load(SAMPLES / "slider_crank_torque.cadmotion.toml")),
          args.t_sim, not args.skip_runs, methods, args.stage)
    for n in args.n:
        table(f"closed chain N = {n}", closed_chain(n), args.t_sim, not args.skip_runs and n <= args.run_n_max,
              methods, args.stage)
    if not args.no_lattice:
        table("plate lattice (a wide tree of spherical joints, rotational spring-dampers)",
              compile_model(load(SAMPLES / "plate_lattice.cadmotion.toml")), args.t_sim, False, methods, args.stage)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
