"""The run's own checks (``kernel/dynamics/invariants.py``) through compliant contacts: what they flag.

Cases (every run ``projection`` with the integrator named, undamped and frictionless contacts):

- ``drop``: a ball (R = 0.05 m, 1 kg) dropped from h0 = 0.1 m on a plane, F = k δ^n, n = 1 and 1.5,
  k = 1e4, 1e6, 1e8, 1e10, 0.4 s; RK4 at dt = T/10, T/30, T/100 (T the undamped impact's duration) at
  10 output frames (they miss most contacts) and 200 (they see the softer ones; dt is at most the
  output interval), RK4 at T/2 (10 frames), DOP853 at rtol 1e-12 (atol 1e-14), BDF at rtol 1e-4;
- ``glance``: a ball (R = 0.02 m, 0.3 kg, no gravity, 1 m/s) glancing 2.5 mm deep off a fixed 0.1 m
  cube's face, edge or corner at t = 0.1 s, n = 1.5, k = 1e5, 1e7, 1e9; DOP853, RK45, Radau, BDF and
  LSODA at rtol 1e-6, 1e-8, 1e-10 (atol rtol/100), 50 frames over 0.2 s.

Prints one line per run: the relative energy drift max |E − E0 − W|/E0, the energy allowance (J), the
steps against the step check's allowance, h ω_c for fixed-step runs, and the checks broken; then the
counts of runs flagged. Run it with another tree on PYTHONPATH for the figures of another version.

    python benchmarks/contact_invariants.py [drop|glance ...]        (default both)
"""
import math
import sys

import numpy as np

from cadmotion.importers.modelfile import parse_model
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics.forward import run

G = 9.81


def drop(k, n, R=0.05, m=1.0, h0=0.1):
    return compile_model(parse_model({
        "units": "m", "gravity": [0, 0, -G],
        "parts": {"floor": {"fixed": True},
                  "ball": {"position": [0, 0, R + h0], "mass": m, "inertia": [0.4 * m * R * R] * 3}},
        "contacts": [{"name": "c", "parts": ["ball", "floor"], "method": "compliant", "damping": 0.0,
                      "stiffness": k, "exponent": n, "shape": [{"sphere": R}, {"plane": {}}]}]}, source="drop"))


def duration(k, n, m=1.0, v=math.sqrt(2 * G * 0.1)):
    """The undamped impact's duration (s) at speed v: 2 δmax/v ∫₀¹ dx / sqrt(1 − x^(n+1))."""
    from scipy.integrate import quad

    dmax = ((n + 1) * m * v * v / (2 * k)) ** (1 / (n + 1))
    return 2 * quad(lambda x: 1 / math.sqrt(1 - x ** (n + 1)), 0, 1)[0] * dmax / v


def glance(k, where, R=0.02, m=0.3, miss=0.0025):
    h = 0.05
    if where == "face":
        p, d, e = np.array([0, 0, 1.0]), np.array([1.0, 0, -1.0]) / math.sqrt(2), np.array([0, 0, h])
    elif where == "edge":
        p, d, e = np.array([1.0, 0, 1.0]) / math.sqrt(2), np.array([1.0, 0, -1.0]) / math.sqrt(2), np.array([h, 0, h])
    else:
        p, d, e = np.ones(3) / math.sqrt(3), np.array([1.0, -1.0, 0]) / math.sqrt(2), np.array([h, h, h])
    c0 = e + (R - miss) * p - 0.1 * d
    return compile_model(parse_model({
        "units": "m", "gravity": [0, 0, 0],
        "parts": {"block": {"fixed": True},
                  "ball": {"position": c0.tolist(), "mass": m, "inertia": [0.4 * m * R * R] * 3}},
        "initial_velocity": {"ball": {"velocity": d.tolist()}},
        "contacts": [{"name": "c", "parts": ["ball", "block"], "method": "compliant", "damping": 0.0, "stiffness": k,
                      "exponent": 1.5, "shape": [{"sphere": R}, {"box": [0.1, 0.1, 0.1]}]}]}, source=f"glance {where}"))


FLAGGED = []


def show(label, motion, res):
    E, W = motion.extra["energy.total"], motion.extra["work.nonconservative"]
    drift = float(np.max(np.abs(E - E[0] - W)) / abs(E[0]))
    checks = {c.name: c for c in res.invariants.checks}
    res_line = f" hω_c {checks['steps.resolution'].max_drift:.3f}" if "steps.resolution" in checks else ""
    broken = [c.name for c in res.invariants.broken]
    if broken:
        FLAGGED.append((label, broken))
    print(f"{label:34s} dE/E0 {drift:8.2e}  allowed {checks['energy'].allowed:8.2e} J  steps {res.nsteps:7d} / "
          f"{checks['steps'].allowed:8.3g}{res_line}  {'BROKEN: ' + ', '.join(broken) if broken else 'ok'}", flush=True)


def drops():
    for n in (1.0, 1.5):
        for k in (1e4, 1e6, 1e8, 1e10):
            T, model = duration(k, n), drop(k, n)
            for frames in (10, 200):
                for div in (10, 30, 100):
                    m, r = run(model, 0.4, frames, integrator="RK4", dt=T / div)
                    show(f"n={n} k={k:.0e} RK4 T/{div} {frames} fr", m, r)
            m, r = run(model, 0.4, 10, integrator="RK4", dt=T / 2)
            show(f"n={n} k={k:.0e} RK4 T/2 10 fr", m, r)
            m, r = run(model, 0.4, 200, integrator="DOP853", rtol=1e-12, atol=1e-14)
            show(f"n={n} k={k:.0e} DOP853 1e-12", m, r)
            m, r = run(model, 0.4, 200, integrator="BDF", rtol=1e-4, atol=1e-6)
            show(f"n={n} k={k:.0e} BDF 1e-4", m, r)


def glances():
    for k in (1e5, 1e7, 1e9):
        for where in ("face", "edge", "corner"):
            model = glance(k, where)
            for integrator in ("DOP853", "RK45", "Radau", "BDF", "LSODA"):
                for rtol in (1e-6, 1e-8, 1e-10):
                    m, r = run(model, 0.2, 50, integrator=integrator, rtol=rtol, atol=rtol * 1e-2)
                    show(f"{where} k={k:.0e} {integrator} {rtol:g}", m, r)


if __name__ == "__main__":
    which = sys.argv[1:] or ["drop", "glance"]
    for case in which:
        before = len(FLAGGED)
        {"drop": drops, "glance": glances}[case]()
        print(f"{case}: {len(FLAGGED) - before} runs flagged\n")
