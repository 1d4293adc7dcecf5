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
model.gravity.linear = np.array([0.0, 0.0, -9.81])
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


def _cadmotion_fall(path):
    """One robot's fall by cadmotion (module docstring): a dict of its links' world poses at the output times, the
    wall time, the run's summary and what it broke; or ``error``. Run in a child process: a compiled loop cannot be
    interrupted from Python, so a run beyond the cap is ended with its process."""
    import warnings
    from dataclasses import replace

    from cadmotion.importers.urdf import read_urdf
    from cadmotion.kernel import compile_model
    from cadmotion.kernel.dynamics import simulate
    from cadmotion.kernel.dynamics.conditioning import ConditioningWarning
    from cadmotion.kernel.rotations import quat_to_matrix

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # the diagnosis before a long run, on stderr as it is made (a run beyond the cap returns nothing)
            warnings.simplefilter("always", ConditioningWarning)
            warnings.showwarning = lambda message, *_: print(f"  {Path(path).name} flagged at "
                                                             f"{time.strftime('%H:%M:%S', time.gmtime())} UTC: "
                                                             f"{message}", file=sys.stderr, flush=True)
            spec = read_urdf(path, gravity=(0.0, 0.0, -9.81))
            spec = replace(spec, joints=tuple(replace(j, limits=()) for j in spec.joints
                                              if not j.name.endswith(".mimic")))
            model = compile_model(spec)
            start = time.perf_counter()
            motion = simulate(model, t_end=T_CORPUS, steps=FRAMES_CORPUS, rtol=1e-10, atol=1e-12)
            wall = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001 - the corpus run names every failure and goes on
        return dict(error=f"{type(exc).__name__}: {str(exc).splitlines()[0][:240]}")
    poses = {name: [np.concatenate([motion.position[i, k], quat_to_matrix(motion.quaternion[i, k]).ravel()])
                    for i in range(motion.nt)] for k, name in enumerate(motion.parts)}
    return dict(poses=poses, wall=wall, links=len(spec.parts), complete=motion.complete,
                stats=next((e.message for e in motion.events if e.kind == "stats"), ""),
                broken=[e.message for e in motion.events if e.kind in ("invariant", "failed")],
                flagged=any(e.kind == "conditioning" for e in motion.events))


def corpus(patterns):
    """The corpus comparison (module docstring)."""
    import multiprocessing

    python = Path(os.environ.get("PEERS_VENV", "/tmp/peers-venv")) / "bin" / "python"
    files = sorted(f for f in ROBOTS.rglob("*.urdf") if not patterns or any(p in str(f) for p in patterns))
    print(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "load", os.getloadavg(), f"{len(files)} files")
    verdicts = {}
    for path in files:
        name = str(path.relative_to(ROBOTS))
        with multiprocessing.get_context("fork").Pool(1) as pool:
            try:
                cm = pool.apply_async(_cadmotion_fall, (str(path),)).get(CAP_CORPUS)
            except multiprocessing.TimeoutError:
                verdicts[name] = "cadmotion beyond the cap"
                print(f"{name}: cadmotion not done after {CAP_CORPUS:g} s wall")
                continue
        if "error" in cm:
            verdicts[name] = "cadmotion failed"
            print(f"{name}: cadmotion failed: {cm['error']}")
            continue
        out = subprocess.run([str(python), "-c", PINOCCHIO_CORPUS, str(path), str(T_CORPUS), str(FRAMES_CORPUS)],
                             capture_output=True, text=True, timeout=3600)
        if out.returncode:
            verdicts[name] = "Pinocchio failed"
            print(f"{name}: Pinocchio failed: {(out.stderr.strip().splitlines() or ['?'])[-1][:240]}")
            continue
        pin = json.loads(out.stdout.strip().splitlines()[-1])
        dx = dr = 0.0
        for link, poses in pin["frames"].items():
            if link in cm["poses"]:
                d = np.abs(np.asarray(cm["poses"][link]) - np.asarray(poses))
                dx, dr = max(dx, float(d[:, :3].max())), max(dr, float(d[:, 3:].max()))
        ok = dx < 1e-6 and dr < 1e-6 and cm["complete"] and not cm["broken"]
        verdicts[name] = "agree" if ok else "differ"
        print(f"{name}: {cm['links']} links, {pin['nv']} dof; max |Δx| {dx:.2e} m, |ΔR| {dr:.2e}; "
              f"cadmotion {cm['wall']:.2f} s ({cm['stats'][:90]}), Pinocchio {pin['wall']:.2f} s "
              f"({pin['nfev']} evaluations); {'; '.join(cm['broken']) or 'invariants kept'}"
              f"{'; flagged (conditioning)' if cm['flagged'] else ''} -> {verdicts[name]}")
    counts = {v: sum(1 for x in verdicts.values() if x == v) for v in sorted(set(verdicts.values()))}
    print("; ".join(f"{v}: {n}" for v, n in counts.items()))


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
    else:
        main()
