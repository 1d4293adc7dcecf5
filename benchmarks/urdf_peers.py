"""A URDF robot read by cadmotion and by Pinocchio from the same file: the same motion?

The double pendulum of ``../shared/data/urdf-double-pendulum`` (Gepetto's example-robot-data), gravity along −y
(its links start horizontal to it), its joints' ``<dynamics damping>`` acting, 2 s from rest:

* cadmotion: ``importers/urdf.py`` → projection / DOP853 at rtol 1e-10 (compiled loop);
* Pinocchio 4.1 (``pinocchio.buildModelFromUrdf``, in the peers' venv, ``PEERS_VENV``, default /tmp/peers-venv):
  its articulated-body algorithm with τ = −d q̇, integrated by scipy's DOP853 at rtol 1e-12;
* the Lagrange equations of the two links written from the file's numbers (``tests/importers/test_urdf.py``).

Prints the largest difference of each joint angle between the three (rad) and each run's wall time. Pinocchio's
time is its Python-driven integration (a call of ABA per evaluation), not a like-for-like speed figure.

Run: ``PYTHONPATH=... python benchmarks/urdf_peers.py``.

``corpus [PATTERN ...]``: every URDF of example-robot-data (``ROBOTS``, default the copy installed with Pinocchio in
the peers' venv; files whose path contains one of the PATTERNs) read by both, each robot falling from its zero
configuration at rest for ``T_CORPUS`` s under gravity −9.81 along z, its joints' damping acting, limits left out
(Pinocchio's ABA has none): every link frame's origin and axes compared at ``FRAMES_CORPUS`` frames.
cadmotion runs the method it picks for the model at rtol 1e-10, atol 1e-12; Pinocchio integrates its ABA by scipy's
DOP853 at rtol 1e-12 in the tangent space at the zero configuration (q = integrate(q0, δ), δ̇ = dIntegrate⁻¹ v, so
that free-flyer and planar joints integrate right). Pinocchio's ABA takes no mimic joints: mimics are left out of both
(each mimicking joint moves on its own; ``tests/importers/test_urdf.py`` checks the couplers). Prints per
robot: links, degrees of freedom (both), the largest position (m) and rotation (rad) difference of any link frame,
each run's wall time, the invariants cadmotion's run reports, or why a robot was not compared (a cadmotion run is
ended with its child process after ``CAP_CORPUS`` s wall); then a count.

    python benchmarks/urdf_peers.py corpus [PATTERN ...]

``sweep [--quick] [PATTERN ...]``: the dynamics beyond its tuned settings, on robots of different kinds
(``SWEEP_ROBOTS``: the double pendulum, the UR5 and Panda arms, the Solo-12 and ANYmal quadrupeds, the Bolt biped,
the Talos humanoid, the TriFinger-edu finger; ``--quick`` the first four of them and fewer settings; PATTERNs pick
robots by path, of the list or, a PATTERN that names none of it, of the corpus). Each robot falls as in ``corpus``
(0.5 s, damping acting, limits and mimics left out; URDF's root link is fixed, as Pinocchio reads it without a root
joint), gravity ``GRAVITY_SWEEP`` tilted from −z. Pinocchio's reference is computed once per robot (rtol 1e-12),
then cadmotion runs every formulation of ``FORMULATIONS`` with every integrator: the error-controlled ones
(``SWEEP_ADAPTIVE``) at rtol ``SWEEP_RTOLS`` (atol = rtol/100), the fixed-step ones (RK4 on the index-1 and relative
formulations, generalized-alpha and HHT on index3) at steps ``SWEEP_DTS``. A run is:

* *agree*: an error-controlled run's largest link-frame error is within what its tolerance warrants,
  ``Δx ≤ 100 rtol · max(L, 5 cm)`` and ``ΔR ≤ 100 rtol · max(Θ, 0.05)``, L (m) and Θ the largest displacement
  and rotation-matrix change of any link in the reference motion: rtol bounds the local error of a step relative to
  the state, and a hundred times it is generous for an accumulation of local errors over 0.5 s of a fall, not for a
  wrong equation. A motion that amplifies errors (the Panda tumbling for 2 s: Pinocchio's own DOP853 at rtol 1e-10
  is 4.6e-8 m off its 1e-12 run) warrants more: at least ten times Pinocchio's own error at the same rtol (its
  DOP853 run once per robot and tolerance).
  A fixed-step run asks for no tolerance: its error is warranted by its
  step, estimated independently of Pinocchio from the same run at the step a quarter as large (Richardson, the
  method's order p: e(dt) ≈ |x_dt − x_dt/4| 4^p/(4^p − 1), the finer run's e/4^p); agree within
  ``max(10 e, 1e-6 L)``, and never with an error above a tenth of the motion (a run that far off should say so).
  The formulations that hold the joints only approximately by design (``APPROXIMATE``: penalty, Baumgarte,
  augmented Lagrangian) get ten times the joint gap the run reports (``violation.position``) on top;
* *flagged*: off, and the run says so (an ``invariant`` or ``failed`` event, ``complete`` False; a run that stopped
  is flagged whatever its frames before the stop) — acceptable;
* *DEFECT*: off and reported as success; or another formulation or integrator ran than the one asked for; or an
  exception that is not one of the project's errors (``cadmotion.errors``);
* *refused*: a ``CadmotionError`` before the run (an unsupported pair, a model the formulation does not take);
* *beyond the cap*: not done in ``CAP_SWEEP`` s wall (its child process is ended; a tighter tolerance of the same
  pair is then not tried).

Prints one line per run, a table of the off runs and the worst agreeing ones, and the counts.

    python benchmarks/urdf_peers.py sweep [--quick] [--rtol=R,...] [--time=T] [--formulation=F,...] [PATTERN ...]

(``--rtol`` other tolerances, ``--time`` another span (s), ``--formulation`` only those; the compiled library is
used, as ``CADMOTION_DYNAMICS_FAST=compile`` asks; ``CADMOTION_DYNAMICS_FAST=0`` sweeps the numpy path a first run
takes.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
URDF = ROOT.parent / "shared" / "data" / "urdf-double-pendulum" / "double_pendulum_simple.urdf"
GRAVITY, DAMPING, T_END, STEPS = (0.0, -9.81, 0.0), 0.05, 2.0, 40

#: run in the peers' venv: Pinocchio's ABA with the joints' damping, from rest, integrated by scipy
PINOCCHIO = """
import json, sys, time
import numpy as np, pinocchio as pin
from scipy.integrate import solve_ivp
path, gravity, damping, t_end, steps = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), \
    int(sys.argv[5])
model = pin.buildModelFromUrdf(path)
model.gravity.linear = np.array(gravity)
data = model.createData()
def rhs(t, y):
    q, v = y[:model.nq], y[model.nq:]
    return np.concatenate([v, pin.aba(model, data, q, v, -damping * v)])
times = np.linspace(0.0, t_end, steps + 1)
start = time.perf_counter()
sol = solve_ivp(rhs, (0.0, t_end), np.zeros(model.nq + model.nv), method="DOP853", rtol=1e-12, atol=1e-14,
                t_eval=times)
print(json.dumps(dict(q=sol.y[:model.nq].T.tolist(), wall=time.perf_counter() - start, nfev=int(sol.nfev),
                      names=list(model.names)[1:], version=pin.__version__)))
"""


def cadmotion_run():
    from cadmotion.importers.urdf import read_urdf
    from cadmotion.kernel import compile_model
    from cadmotion.kernel.dynamics import simulate

    model = compile_model(read_urdf(URDF, gravity=GRAVITY))
    options = dict(formulation="projection", integrator="DOP853", rtol=1e-10, atol=1e-12)
    simulate(model, t_end=0.1, steps=2, **options)  # warm-up: loads the compiled code
    start = time.perf_counter()
    motion = simulate(model, t_end=T_END, steps=STEPS, **options)
    wall = time.perf_counter() - start
    return np.stack([motion.coordinate("joint1.angle"), motion.coordinate("joint2.angle")], axis=1), wall, motion


def pinocchio_run():
    python = Path(os.environ.get("PEERS_VENV", "/tmp/peers-venv")) / "bin" / "python"
    if not python.exists():
        return None, f"no peers venv at {python.parent.parent} (see ../shared/peers/README.md)"
    out = subprocess.run([str(python), "-c", PINOCCHIO, str(URDF), json.dumps(GRAVITY), str(DAMPING), str(T_END),
                          str(STEPS)], capture_output=True, text=True, timeout=600)
    if out.returncode:
        return None, out.stderr.strip().splitlines()[-1]
    return json.loads(out.stdout.strip().splitlines()[-1]), ""


ROBOTS = Path(os.environ.get("ROBOTS", str(Path(os.environ.get("PEERS_VENV", "/tmp/peers-venv")) / "lib" / "python3.11"
                                        / "site-packages" / "cmeel.prefix" / "share" / "example-robot-data"
                                        / "robots")))
T_CORPUS, FRAMES_CORPUS, CAP_CORPUS = 0.5, 10, 120.0

#: run in the peers' venv: each robot's fall by Pinocchio's ABA, its link frames' world poses at the output times
PINOCCHIO_CORPUS = """
import json, sys, time
import numpy as np, pinocchio as pin
from scipy.integrate import solve_ivp
path, t_end, steps = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
model = pin.buildModelFromUrdf(path)
model.gravity.linear = np.array(json.loads(sys.argv[4]) if len(sys.argv) > 4 else [0.0, 0.0, -9.81])
data, q0 = model.createData(), pin.neutral(model)
def rhs(t, y):
    d, v = y[:model.nv], y[model.nv:]
    q = pin.integrate(model, q0, d)
    J = pin.dIntegrate(model, q0, d, pin.ArgumentPosition.ARG1)
    return np.concatenate([np.linalg.solve(J, v), pin.aba(model, data, q, v, -model.damping * v)])
times = np.linspace(0.0, t_end, steps + 1)
start = time.perf_counter()
sol = solve_ivp(rhs, (0.0, t_end), np.zeros(2 * model.nv), method="DOP853", rtol=1e-12, atol=1e-14, t_eval=times)
wall = time.perf_counter() - start
frames = {}
for k in range(len(times)):
    pin.framesForwardKinematics(model, data, pin.integrate(model, q0, sol.y[:model.nv, k]))
    for f, frame in enumerate(model.frames):
        if frame.type == pin.FrameType.BODY:
            X = data.oMf[f]
            frames.setdefault(frame.name, []).append(np.concatenate([X.translation, X.rotation.ravel()]).tolist())
print(json.dumps(dict(frames=frames, wall=wall, nv=model.nv, ok=bool(sol.success), nfev=int(sol.nfev))))
"""


def _robot_spec(path, gravity):
    """A robot's spec as the corpus and the sweep run it: gravity (m/s², world), limits and mimics left out
    (Pinocchio's ABA takes neither; module docstring), the reader's warnings silenced."""
    import warnings
    from dataclasses import replace

    from cadmotion.importers.urdf import read_urdf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = read_urdf(path, gravity=gravity)
    return replace(spec, joints=tuple(replace(j, limits=()) for j in spec.joints if not j.name.endswith(".mimic")))


def _link_poses(motion):
    """{link: [[x, y, z, R row-major] per frame]}: every part's world pose (m) at the motion's frames."""
    from cadmotion.kernel.rotations import quat_to_matrix

    return {name: [np.concatenate([motion.position[i, k], quat_to_matrix(motion.quaternion[i, k]).ravel()])
                   for i in range(motion.nt)] for k, name in enumerate(motion.parts)}


def _cadmotion_fall(path):
    """One robot's fall by cadmotion (module docstring): a dict of its links' world poses at the output times, the
    wall time, the run's summary and what it broke; or ``error``. Run in a child process: a compiled loop cannot be
    interrupted from Python, so a run beyond the cap is ended with its process."""
    import warnings

    from cadmotion.kernel import compile_model
    from cadmotion.kernel.dynamics import simulate
    from cadmotion.kernel.dynamics.conditioning import ConditioningWarning

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # the diagnosis before a long run, on stderr as it is made (a run beyond the cap returns nothing)
            warnings.simplefilter("always", ConditioningWarning)
            warnings.showwarning = lambda message, *_: print(f"  {Path(path).name} flagged at "
                                                             f"{time.strftime('%H:%M:%S', time.gmtime())} UTC: "
                                                             f"{message}", file=sys.stderr, flush=True)
            spec = _robot_spec(path, (0.0, 0.0, -9.81))
            model = compile_model(spec)
            start = time.perf_counter()
            motion = simulate(model, t_end=T_CORPUS, steps=FRAMES_CORPUS, rtol=1e-10, atol=1e-12)
            wall = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001 - the corpus run names every failure and goes on
        return dict(error=f"{type(exc).__name__}: {str(exc).splitlines()[0][:240]}")
    return dict(poses=_link_poses(motion), wall=wall, links=len(spec.parts), complete=motion.complete,
                stats=next((e.message for e in motion.events if e.kind == "stats"), ""),
                broken=[e.message for e in motion.events if e.kind in ("invariant", "failed")],
                flagged=any(e.kind == "conditioning" for e in motion.events))


def corpus(patterns):
    """The corpus comparison (module docstring)."""
    python = Path(os.environ.get("PEERS_VENV", "/tmp/peers-venv")) / "bin" / "python"
    files = sorted(f for f in ROBOTS.rglob("*.urdf") if not patterns or any(p in str(f) for p in patterns))
    print(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "load", os.getloadavg(), f"{len(files)} files")
    verdicts = {}
    for path in files:
        name = str(path.relative_to(ROBOTS))
        cm = _capped(_cadmotion_fall, (str(path),), CAP_CORPUS)
        if cm is None:
            verdicts[name] = "cadmotion beyond the cap"
            print(f"{name}: cadmotion not done after {CAP_CORPUS:g} s wall")
            continue
        if "error" in cm or "crashed" in cm:
            verdicts[name] = "cadmotion failed"
            print(f"{name}: cadmotion failed: {cm.get('error') or cm['crashed']}")
            continue
        out = subprocess.run([str(python), "-c", PINOCCHIO_CORPUS, str(path), str(T_CORPUS), str(FRAMES_CORPUS)],
                             capture_output=True, text=True, timeout=3600)
        if out.returncode:
            verdicts[name] = "Pinocchio failed"
            print(f"{name}: Pinocchio failed: {(out.stderr.strip().splitlines() or ['?'])[-1][:240]}")
            continue
        pin = json.loads(out.stdout.strip().splitlines()[-1])
        dx, dr = _frame_errors(cm["poses"], pin["frames"])
        ok = dx < 1e-6 and dr < 1e-6 and cm["complete"] and not cm["broken"]
        verdicts[name] = "agree" if ok else "differ"
        print(f"{name}: {cm['links']} links, {pin['nv']} dof; max |Δx| {dx:.2e} m, |ΔR| {dr:.2e}; "
              f"cadmotion {cm['wall']:.2f} s ({cm['stats'][:90]}), Pinocchio {pin['wall']:.2f} s "
              f"({pin['nfev']} evaluations); {'; '.join(cm['broken']) or 'invariants kept'}"
              f"{'; flagged (conditioning)' if cm['flagged'] else ''} -> {verdicts[name]}")
    counts = {v: sum(1 for x in verdicts.values() if x == v) for v in sorted(set(verdicts.values()))}
    print("; ".join(f"{v}: {n}" for v, n in counts.items()))


SWEEP_ROBOTS = ("double_pendulum_description/urdf/double_pendulum_simple.urdf", "ur_description/urdf/ur5_robot.urdf",
                "solo_description/robots/solo12.urdf", "bolt_description/robots/bolt.urdf",
                "panda_description/urdf/panda.urdf", "anymal_b_simple_description/robots/anymal.urdf",
                "finger_edu_description/robots/finger_edu.urdf", "talos_data/robots/talos_reduced.urdf")
#: m/s², the sweep's gravity: 9.81 tilted from −z, so that joints about z (an arm's base, the double pendulum
#: hanging along z) move as well
GRAVITY_SWEEP = tuple(float(g) for g in 9.81 * np.array([0.3, -0.4, -0.866]) / np.linalg.norm([0.3, -0.4, -0.866]))
SWEEP_ADAPTIVE = ("DOP853", "RK45", "Radau", "BDF", "LSODA")
#: s, each a quarter of the one before (the Richardson estimate of a step's error takes the next one)
SWEEP_RTOLS, SWEEP_DTS, CAP_SWEEP = (1e-4, 1e-6, 1e-8), (8e-3, 2e-3, 5e-4), 30.0
#: ``--quick``: four robots, the tolerances' ends, a shorter cap
QUICK_ROBOTS, QUICK_RTOLS, CAP_QUICK = 4, (1e-4, 1e-8), 15.0
#: formulations that hold the joints approximately by design (:mod:`.invariants`): their error does not vanish
#: with the tolerance, and the run reports it as its joints' gap ``violation.position`` (its growth from the first
#: frame, m), which a run's allowance adds: ten times it in position, a hundred times it in the rotation entries
APPROXIMATE = ("penalty", "baumgarte", "augmented-lagrangian")
#: the fixed-step integrators' orders of global error (generalized-alpha and HHT: second order)
FIXED_ORDER = {"RK4": 4, "generalized-alpha": 2, "HHT": 2}


_SWEEP_MODEL = {}


def _sweep_run(formulation, integrator, rtol, dt, t_end=None):
    """One run of the sweep on the robot the parent compiled (``_SWEEP_MODEL``; a forked child reads it): its link
    frames' poses, what it flagged, and the formulation and integrator that ran; or why it was refused."""
    import warnings

    from cadmotion.errors import CadmotionError
    from cadmotion.kernel.dynamics.forward import run

    options = dict(rtol=rtol, atol=rtol / 100) if rtol else dict(dt=dt)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            motion, result = run(_SWEEP_MODEL["model"], t_end or _SWEEP_MODEL["t_end"], FRAMES_CORPUS,
                                 formulation=formulation,
                                 integrator=integrator, **options)
            wall = time.perf_counter() - start
    except CadmotionError as exc:
        return dict(refused=f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    except Exception as exc:  # noqa: BLE001 - an error not of the project's is a finding of the sweep
        return dict(crashed=f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    poses = _link_poses(motion)
    gap = motion.extra.get("violation.position")
    gap = float(np.nanmax(np.abs(gap) - np.abs(gap[0]))) if gap is not None and len(gap) else 0.0
    return dict(poses=poses, wall=wall, complete=bool(motion.complete), ran=(result.formulation, result.integrator),
                gap=gap,
                nt=motion.nt, stats=next((e.message for e in motion.events if e.kind == "stats"), ""),
                broken=[f"{e.kind}: {e.message}" for e in motion.events if e.kind in ("invariant", "failed")])


def _capped(function, args, cap):
    """``function(*args)`` in a forked child process of its own process group, its value sent back; None when not
    done in ``cap`` s wall, the group then ended (a compiled loop cannot be interrupted from Python, and the
    processes it may have started — numba's compile workers — go with it)."""
    import multiprocessing
    import pickle
    import signal

    receive, send = multiprocessing.get_context("fork").Pipe(duplex=False)
    pid = os.fork()
    if pid == 0:  # the child: a group of its own, its answer pickled into the pipe
        os.setpgid(0, 0)
        try:
            send.send_bytes(pickle.dumps(function(*args)))
        finally:
            os._exit(0)
    send.close()
    try:
        if receive.poll(cap):
            try:
                return pickle.loads(receive.recv_bytes())
            except EOFError:
                return dict(crashed="the child process ended without an answer")
        return None
    finally:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        receive.close()


def _frame_errors(poses, reference):
    """The largest position (m) and rotation-matrix entry difference of any link frame between two runs' poses at
    their common frames ({link: (nt, 12)})."""
    dx = dr = 0.0
    for link, ref in reference.items():
        if link in poses:
            a, b = np.asarray(poses[link]), np.asarray(ref)
            n = min(len(a), len(b))
            d = np.abs(a[:n] - b[:n])
            dx, dr = max(dx, float(d[:, :3].max())), max(dr, float(d[:, 3:].max()))
    return dx, dr


def _sweep_robot(path, rtols, cap, python, t_end=T_CORPUS, only=()):
    """Every run of the sweep on one robot (module docstring): a list of rows (dicts)."""
    from cadmotion.kernel import compile_model
    from cadmotion.kernel.dynamics import FORMULATIONS
    from cadmotion.kernel.dynamics.integrators import REGISTRY

    name = str(path.relative_to(ROBOTS)).split("/")[-1].removesuffix(".urdf")
    _SWEEP_MODEL["t_end"] = t_end
    out = subprocess.run([str(python), "-c", PINOCCHIO_CORPUS, str(path), str(t_end), str(FRAMES_CORPUS),
                          json.dumps(GRAVITY_SWEEP)], capture_output=True, text=True, timeout=3600)
    if out.returncode:
        print(f"{name}: Pinocchio failed: {(out.stderr.strip().splitlines() or ['?'])[-1][:240]}")
        return []
    ref = json.loads(out.stdout.strip().splitlines()[-1])
    frames = {k: np.asarray(v) for k, v in ref["frames"].items()}
    size_x = max(float(np.abs(f[:, :3] - f[0, :3]).max()) for f in frames.values())
    size_r = max(float(np.abs(f[:, 3:] - f[0, 3:]).max()) for f in frames.values())
    # the motion's sensitivity: Pinocchio's own error at each tolerance swept, against its 1e-12
    own = {}
    for rtol in rtols:
        code = PINOCCHIO_CORPUS.replace("rtol=1e-12, atol=1e-14", f"rtol={rtol}, atol={rtol / 100}")
        out = subprocess.run([str(python), "-c", code, str(path), str(t_end), str(FRAMES_CORPUS),
                              json.dumps(GRAVITY_SWEEP)], capture_output=True, text=True, timeout=3600)
        own[rtol] = _frame_errors(json.loads(out.stdout.strip().splitlines()[-1])["frames"], ref["frames"]) \
            if not out.returncode else (0.0, 0.0)
    try:
        _SWEEP_MODEL["model"] = compile_model(_robot_spec(path, GRAVITY_SWEEP))
    except Exception as exc:  # noqa: BLE001 - named and skipped
        print(f"{name}: not compiled: {type(exc).__name__}: {exc}")
        return []
    print(f"{name}: {ref['nv']} dof; motion {size_x:.3f} m, rotation {size_r:.3f}; Pinocchio {ref['wall']:.1f} s; "
          f"its own error at " + ", ".join(f"rtol {r:g}: {e[0]:.1e} m, {e[1]:.1e}" for r, e in own.items()),
          flush=True)
    plan = []
    for formulation, cls in FORMULATIONS.items():
        if only and formulation not in only:
            continue
        for integrator in cls.integrators:
            if REGISTRY[integrator].fixed_step:
                plan += [(formulation, integrator, None, dt) for dt in SWEEP_DTS]
            elif integrator in SWEEP_ADAPTIVE:
                plan += [(formulation, integrator, rtol, None) for rtol in rtols]
    # the compiled code loaded (or compiled) here once, not in every child
    for formulation, integrator in {(f, i) for f, i, _, _ in plan if i in ("DOP853", "Radau", "RK4")}:
        try:
            _sweep_run(formulation, integrator, 1e-6, None, t_end=0.002)
        except Exception:  # noqa: BLE001 - the sweep's own run of the pair says what is wrong
            pass
    rows, capped, runs = [], set(), {}
    for formulation, integrator, rtol, dt in plan:
        row = dict(robot=name, formulation=formulation, integrator=integrator, rtol=rtol, dt=dt)
        rows.append(row)
        if (formulation, integrator) in capped:
            row.update(verdict="beyond the cap", why="a looser setting of the pair was")
            continue
        start = time.perf_counter()
        cm = _capped(_sweep_run, (formulation, integrator, rtol, dt), cap)
        if cm is None:
            capped.add((formulation, integrator))
            row.update(verdict="beyond the cap", why=f"not done in {cap:g} s wall")
        row["wall"] = time.perf_counter() - start
        if cm is None:
            pass
        elif "refused" in cm:
            row.update(verdict="refused", why=cm["refused"])
        elif "crashed" in cm:
            row.update(verdict="DEFECT", why="not a cadmotion error: " + cm["crashed"])
        else:
            runs[(formulation, integrator, dt)] = cm
            row["dx"], row["dr"] = _frame_errors(cm["poses"], ref["frames"])
            row["flags"] = "; ".join(cm["broken"]) + ("" if cm["complete"] else " (incomplete)")
            row["stats"] = cm["stats"]
            if cm["ran"] != (formulation, integrator):
                row.update(verdict="DEFECT", why=f"asked {formulation} / {integrator}, ran {' / '.join(cm['ran'])}")
                continue
            row["gap"] = cm["gap"]
            if rtol:
                row["allowed"] = (max(100 * rtol * max(size_x, 0.05), 10 * own[rtol][0]),
                                  max(100 * rtol * max(size_r, 0.05), 10 * own[rtol][1]))

    # the fixed-step runs' allowances: the step's error estimated from the run at a quarter of the step
    for row in rows:
        if row.get("dt") and "dx" in row and "allowed" not in row and "verdict" not in row:
            k = SWEEP_DTS.index(row["dt"])
            pair = (k, k + 1) if k + 1 < len(SWEEP_DTS) else (k - 1, k)   # each step with the next, finer one
            coarse, fine = (runs.get((row["formulation"], row["integrator"], SWEEP_DTS[j])) for j in pair)
            if coarse is None or fine is None or not (coarse["complete"] and fine["complete"]):
                row["allowed"] = (1e-6 * size_x, 1e-6 * size_r)   # no estimate: as tight as it gets
                continue
            p = FIXED_ORDER[row["integrator"]]
            ex, er = _frame_errors(coarse["poses"], fine["poses"])
            scale = 4 ** p / (4 ** p - 1) / (4 ** p if pair[1] == k else 1)
            row["allowed"] = (min(max(10 * ex * scale, 1e-6 * size_x), 0.1 * size_x),
                              min(max(10 * er * scale, 1e-6 * size_r), 0.1 * size_r))
    for row in rows:
        if "verdict" not in row and row["formulation"] in APPROXIMATE:
            # a joint gap g moves the links beyond it by about g, and turns a link of 10 cm by g / 0.1 m
            row["allowed"] = (row["allowed"][0] + 10 * row["gap"], row["allowed"][1] + 100 * row["gap"])
        if "verdict" not in row and row["flags"].endswith("(incomplete)"):
            # compared at the frames it has only: a run that stopped is off, and says so
            row.update(verdict="flagged", why=row["flags"])
        if "verdict" not in row:
            off = row["dx"] > row["allowed"][0] or row["dr"] > row["allowed"][1] or not np.isfinite(row["dx"])
            row["verdict"] = ("flagged" if row["flags"] else "DEFECT") if off else "agree"
            if off:
                row["why"] = row["flags"] or "off, reported as success"
        print(_sweep_line(row), flush=True)
    return rows


def _sweep_line(row):
    """One run of the sweep as a line of text."""
    setting = f"rtol {row['rtol']:.0e}" if row["rtol"] else f"dt {row['dt']:.0e}"
    text = f"  {row['robot']:<22} {row['formulation']:<20} {row['integrator']:<17} {setting:<11} {row['verdict']:<14}"
    if "dx" in row:
        text += (f" |Δx| {row['dx']:.1e} m (≤ {row['allowed'][0]:.1e}), |ΔR| {row['dr']:.1e} "
                 f"(≤ {row['allowed'][1]:.1e}), {row.get('wall', 0):.1f} s")
    if row.get("why"):
        text += f" — {row['why'][:160]}"
    return text


def sweep(args):
    """The sweep of formulations, integrators and tolerances on a few robots (module docstring)."""
    quick = "--quick" in args
    options = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
    patterns = [a for a in args if not a.startswith("--")]
    python = Path(os.environ.get("PEERS_VENV", "/tmp/peers-venv")) / "bin" / "python"
    robots = SWEEP_ROBOTS[:QUICK_ROBOTS] if quick and not patterns else SWEEP_ROBOTS
    robots = [ROBOTS / r for r in robots if not patterns or any(p in r for p in patterns)]
    robots += sorted(f for f in ROBOTS.rglob("*.urdf") if f not in robots and any(
        p in str(f) and not any(p in r for r in SWEEP_ROBOTS) for p in patterns))   # robots beyond the list
    rtols, cap = (QUICK_RTOLS, CAP_QUICK) if quick else (SWEEP_RTOLS, CAP_SWEEP)
    rtols = tuple(float(r) for r in options["rtol"].split(",")) if "rtol" in options else rtols
    t_end, only = float(options.get("time", T_CORPUS)), tuple(filter(None, options.get("formulation", "").split(",")))
    start = time.time()
    print(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "load", os.getloadavg(),
          f"{len(robots)} robots, rtol {', '.join(f'{r:g}' for r in rtols)}, dt {', '.join(map(str, SWEEP_DTS))} s, "
          f"cap {cap:g} s, {t_end:g} s of motion", flush=True)
    rows = []
    for path in robots:
        rows += _sweep_robot(path, rtols, cap, python, t_end, only)
    off = [r for r in rows if r["verdict"] in ("DEFECT", "flagged")]
    worst = sorted((r for r in rows if r["verdict"] == "agree"),
                   key=lambda r: -max(r["dx"] / r["allowed"][0], r["dr"] / r["allowed"][1]))[:10]
    print("\noff (DEFECT: reported as success):")
    for row in sorted(off, key=lambda r: r["verdict"]):
        print(_sweep_line(row))
    print("\nagreeing closest to their allowance:")
    for row in worst:
        print(_sweep_line(row))
    counts = {v: sum(1 for r in rows if r["verdict"] == v) for v in sorted({r["verdict"] for r in rows})}
    print(f"\n{len(rows)} runs in {time.time() - start:.0f} s: " + "; ".join(f"{v}: {n}" for v, n in counts.items()))
    print(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "load", os.getloadavg())


def main():
    sys.path.insert(0, str(ROOT / "tests" / "importers"))
    from test_urdf import lagrange_double_pendulum

    print(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "load", os.getloadavg())
    cm, wall, motion = cadmotion_run()
    phi1, phi2 = lagrange_double_pendulum(T_END, motion.time)
    lagrange = np.stack([phi1, phi2 - phi1], axis=1)
    print(f"cadmotion: {wall:.4f} s wall for {T_END} s, {len(motion.time)} frames; "
          f"{'; '.join(e.message for e in motion.events if e.kind == 'invariant') or 'invariants kept'}")
    print(f"  against Lagrange: joint1 {np.abs(cm - lagrange)[:, 0].max():.2e} rad, joint2 "
          f"{np.abs(cm - lagrange)[:, 1].max():.2e} rad")
    pin, why = pinocchio_run()
    if pin is None:
        print(f"Pinocchio: not run ({why})")
        return
    q = np.asarray(pin["q"])
    print(f"Pinocchio {pin['version']} ({', '.join(pin['names'])}): {pin['wall']:.4f} s wall, {pin['nfev']} "
          f"evaluations (scipy DOP853 rtol 1e-12 over pin.aba)")
    for name, ref in (("Lagrange", lagrange), ("cadmotion", cm)):
        d = np.abs(q - ref).max(axis=0)
        print(f"  against {name}: joint1 {d[0]:.2e} rad, joint2 {d[1]:.2e} rad")


if __name__ == "__main__":
    if sys.argv[1:2] == ["corpus"]:
        corpus(sys.argv[2:])
    elif sys.argv[1:2] == ["sweep"]:
        sweep(sys.argv[2:])
    else:
        main()
