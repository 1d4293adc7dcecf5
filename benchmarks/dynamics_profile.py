"""Where the time of a compiled DOP853 run goes (issue 15 item 4): P1 and the P2 chains.

For each model: the compiled DOP853 loop (:meth:`cadmotion.kernel.dynamics.fast.FastRHS.dop853`)
over the benchmark's span with the singular-configuration watch and the projection each on and
off (the run's own settings are "watch on, projection 1e-10" for P2, "watch on, no projection
needed" for P1), and one call of each part of an evaluation timed inside compiled code (a numba
loop of 5000 calls, so no Python dispatch): body kinematics, the constraint groups (joint rows,
γ, Φ), ``stage_rhs`` (forces, the factor of S, λ, v̇), of it the factor of S alone, the singular
measure (one probe's factorisation) and the whole evaluation ``rhs``.

Times are CPU seconds of this process (``time.process_time``), the minimum of REPEAT runs: on a
shared machine they vary less than wall times (the load is printed). Model set-up is not timed.

    python benchmarks/dynamics_profile.py [p1] [N ...]      (default: p1 10 20)

Environment: PEERS_REPEAT (default 9), CM_TOL (P1's rtol = atol, default 1e-9). Prints one JSON line per model.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared", "peers"))
os.environ.setdefault("CADMOTION_DYNAMICS_FAST", "compile")

import numba  # noqa: E402
import numpy as np  # noqa: E402
from bench_common import P1, P2  # noqa: E402

from cadmotion.importers.modelfile import read_model_file  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics import _kernels as K  # noqa: E402
from cadmotion.kernel.dynamics.contract import SINGULAR_ZONE  # noqa: E402
from cadmotion.kernel.dynamics.fast import fast_rhs  # noqa: E402
from cadmotion.kernel.dynamics.forward import prepare  # noqa: E402

REPEAT = int(os.environ.get("PEERS_REPEAT", "9"))
P1_TOL = float(os.environ.get("CM_TOL", "1e-9"))  # P1's rtol = atol
CALLS = 5000
SAMPLE_P1 = os.path.join(HERE, "..", "samples", "dynamics", "slider_crank_torque.cadmotion.toml")


def cpu(fn, repeat=REPEAT):
    """(minimum CPU seconds of fn() over ``repeat`` calls, its last result)."""
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def part_timers(module):
    """numba loops calling each part of one evaluation ``n`` times (the model module's rhs, groups)."""
    rhs, groups = module["rhs"], module["groups"]

    @numba.njit
    def t_rhs(n, y, df, di, dd, ws):
        for _ in range(n):
            rhs(0.0, y, df, di, dd, ws)

    @numba.njit
    def t_kinematics(n, y, df, di, dd, ws):
        for _ in range(n):
            K.stage_kinematics(y, df, di, ws)

    @numba.njit
    def t_groups(n, y, df, di, dd, ws):
        for _ in range(n):
            groups(0.0, y, df, di, dd, ws, True)

    @numba.njit
    def t_stage_rhs(n, y, df, di, dd, ws):
        for _ in range(n):
            K.stage_rhs(0.0, y, df, di, dd, ws)

    @numba.njit
    def t_factor(n, y, df, di, dd, ws):
        for _ in range(n):
            K._factor(df, di, dd, ws)

    @numba.njit
    def t_singular(n, y, df, di, dd, ws):
        for _ in range(n):
            K.singularity(df, di, dd, ws)

    return {"rhs": t_rhs, "kinematics": t_kinematics, "groups": t_groups, "stage_rhs": t_stage_rhs,
            "factor_S": t_factor, "singular_measure": t_singular}


def profile(name, model, times, tol, ptol):
    dyn, q0, v0, angles, refs = prepare(model)
    f = fast_rhs(dyn, angles, refs)
    y0 = np.concatenate([q0, v0, [0.0]])
    f(times[0], y0)
    snapshot = f.dd.copy()
    times = np.asarray(times, float)
    out = dict(model=name, bodies=dyn.nmov, kept_rows=int(len(dyn.rows)), band_width=int(f.bw), rtol_atol=tol,
               projection_tol=ptol)
    for label, zone, pt in (("loop", SINGULAR_ZONE, ptol), ("loop_no_watch", 0.0, ptol),
                            ("loop_no_projection", SINGULAR_ZONE, None), ("loop_neither", 0.0, None)):
        def loop():
            f.restore(snapshot)
            return f.dop853(times, y0, tol, tol, project_tol=pt, zone=zone)
        t, (status, _, _, stats, _) = cpu(loop)
        out[label] = dict(cpu_s=t, status=status, evaluations=int(stats[1]), steps=int(stats[2]),
                          projections=int(stats[3]), us_per_evaluation=1e6 * t / stats[1])
    args = (y0, f.df, f.di, f.dd, f.ws)
    for part, timer in part_timers(f.rhs_fn.py_func.__globals__).items():
        timer(10, *args)
        out[f"{part}_us"] = 1e6 * cpu(lambda: timer(CALLS, *args), 5)[0] / CALLS
    out["load_average"] = os.getloadavg()[0]
    return out


def main(argv):
    import p2  # chain_spec (the benchmark itself runs only as a script)

    for arg in argv or ["p1", "10", "20"]:
        if arg == "p1":
            model = compile_model(read_model_file(SAMPLE_P1))
            print(json.dumps(profile("P1", model, [0.0] + list(P1["t_out"]), P1_TOL, None)), flush=True)
        else:
            n = int(arg)
            model = compile_model(p2.chain_spec(n))
            print(json.dumps(profile(f"P2 N={n}", model, [0.0, P2["t_probe"], P2["t_end"]], 1e-8, 1e-10)),
                  flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
