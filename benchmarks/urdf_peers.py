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
    main()
