"""Unilateral contacts beyond their samples (issue 16): the bouncing ball and the block on four feet, swept over
the integrators, their tolerances, the restitution, the slope and the direction it runs across the feet; every
run against its closed form, and whether the run's own checks flagged it.

* ``ball``: ``samples/dynamics/bouncing_ball_unilateral`` with e = 0.8, 1 and 0.3; the first three impacts at
  t₁ = √(2 h₀/g), t_(k+1) = t_k + 2 e^k √(2 g h₀)/g and the apexes e^(2k) h₀ (h₀ = 1 m), frames at the apexes.
* ``block``: ``samples/dynamics/block_on_incline_unilateral`` (1 kg on four spherical feet, μ_s = 0.3,
  μ_d = 0.2), the slope tan θ = 0.3 (1 + r) for r = −0.1, −1e-3, +1e-3, +0.1 falling along a heading of 0° or 30°
  across the feet, the block launched up the slope at 1 m/s: it slows at g (sin θ + μ_d cos θ), stops at
  t_s = v₀ / that, then sticks (tan θ < μ_s) or slides back at g (sin θ − μ_d cos θ); 1 s, 50 frames. Error:
  the largest distance from the closed form along the slope, and the largest drift across it.

Integrators DOP853, RK45, RK23, Radau, BDF and LSODA at rtol 1e-4, 1e-6, 1e-8, 1e-10 (atol = rtol / 100);
RK4 is refused for unilateral contacts (checked once). Prints one line per integrator and tolerance: the runs,
those incomplete, flagged by the run's checks or off the closed form by more than 1e-5 (m or s), and the worst
errors; then every such run.

    python benchmarks/unilateral_sweep.py [ball] [block]      (default: both)
"""
import math
import os
import sys
import time
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

from cadmotion.errors import SolverError  # noqa: E402
from cadmotion.importers.modelfile import parse_model  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics.forward import run  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "dynamics"
G = 9.81
INTEGRATORS = ("DOP853", "RK45", "RK23", "Radau", "BDF", "LSODA")
TOLERANCES = (1e-4, 1e-6, 1e-8, 1e-10)
OFF = 1e-5  # m or s: a run further than this from its closed form is listed


def _sample(name):
    return tomllib.loads((SAMPLES / f"{name}.cadmotion.toml").read_text())


def _run(data, **kw):
    """(motion, flagged checks, wall s) of one run."""
    t0 = time.perf_counter()
    motion, _ = run(compile_model(parse_model(data, source="sweep.toml")), **kw)
    flags = [e.message.split(":")[0] for e in motion.events if e.kind == "invariant"]
    return motion, flags, time.perf_counter() - t0


def ball(e, integrator, rtol):
    """Errors (impact times s, apex heights m) of the ball with restitution e."""
    data = _sample("bouncing_ball_unilateral")
    data["contacts"][0]["restitution"] = e
    h0, radius = 1.0, 0.05
    v1 = math.sqrt(2 * G * h0)
    impacts = [math.sqrt(2 * h0 / G)]
    for k in range(1, 3):
        impacts.append(impacts[-1] + 2 * e ** k * v1 / G)
    apexes = [impacts[k] + e ** (k + 1) * v1 / G for k in range(3)]
    motion, flags, wall = _run(data, times=np.array([0.0] + apexes), integrator=integrator, rtol=rtol,
                               atol=rtol / 100)
    hits = [ev.time for ev in motion.events if ev.kind == "impact"][:3]
    z = motion.position[1:, motion.parts.index("ball"), 2] - radius
    t_err = float(np.max(np.abs(np.array(hits) - impacts))) if len(hits) == 3 else math.inf
    apex_err = float(np.max(np.abs(z - [e ** (2 * (k + 1)) * h0 for k in range(3)])))
    return dict(complete=motion.complete, flags=flags, wall=wall, errors=(t_err, apex_err),
                case=f"ball e = {e}")


def block(r, heading_deg, integrator, rtol, v0=1.0):
    """Errors (along the slope, across it; m) of the block launched up a slope tan θ = 0.3 (1 + r)."""
    data = _sample("block_on_incline_unilateral")
    th, psi = math.atan(0.3 * (1 + r)), math.radians(heading_deg)
    down = np.array([math.cos(psi), math.sin(psi)])
    data["gravity"] = [G * math.sin(th) * down[0], G * math.sin(th) * down[1], -G * math.cos(th)]
    data["initial_velocity"] = {"block": {"velocity": [-v0 * down[0], -v0 * down[1], 0.0]}}
    motion, flags, wall = _run(data, t_end=1.0, steps=50, integrator=integrator, rtol=rtol, atol=rtol / 100)
    t = motion.time
    xy = motion.position[:, motion.parts.index("block"), :2] - motion.position[0, motion.parts.index("block"), :2]
    a_up = G * (math.sin(th) + 0.2 * math.cos(th))
    t_s = v0 / a_up
    a_down = G * (math.sin(th) - 0.2 * math.cos(th)) if math.tan(th) > 0.3 else 0.0
    along = np.where(t < t_s, -v0 * t + 0.5 * a_up * t ** 2,
                     -0.5 * v0 * t_s + 0.5 * a_down * np.maximum(t - t_s, 0.0) ** 2)
    errors = (float(np.max(np.abs(xy @ down - along))), float(np.max(np.abs(xy @ np.array([-down[1], down[0]])))))
    return dict(complete=motion.complete, flags=flags, wall=wall, errors=errors,
                case=f"block tan θ = 0.3 × (1 {r:+g}), heading {heading_deg:g}°")


def sweep(cases, labels):
    """Runs ``cases(integrator, rtol)`` (a list of runs) for every integrator and tolerance; prints the table."""
    print(f"| integrator | rtol | runs | incomplete | flagged | off > {OFF:g} | worst errors ({labels}) | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    listed = []
    for integrator in INTEGRATORS:
        for rtol in TOLERANCES:
            rows = cases(integrator, rtol)
            worst = np.max([row["errors"] for row in rows], axis=0)
            off = [row for row in rows if max(row["errors"]) > OFF]
            bad = [row for row in rows if not row["complete"] or row["flags"] or row in off]
            listed += [(integrator, rtol, row) for row in bad]
            print(f"| {integrator} | {rtol:g} | {len(rows)} | {sum(not row['complete'] for row in rows)} | "
                  f"{sum(bool(row['flags']) for row in rows)} | {len(off)} | "
                  f"{' / '.join(f'{w:.2g}' for w in worst)} | {sum(row['wall'] for row in rows):.1f} |")
    for integrator, rtol, row in listed:
        print(f"  {integrator} rtol {rtol:g}, {row['case']}: complete {row['complete']}, errors "
              f"{' / '.join(f'{w:.3g}' for w in row['errors'])}, flagged {row['flags']}")


def main(which):
    if "ball" in which:
        print("\nBall: impact times (s) / apex heights (m)\n")
        sweep(lambda integrator, rtol: [ball(e, integrator, rtol) for e in (0.8, 1.0, 0.3)], "t s / apex m")
        try:
            ball(0.8, "RK4", 1e-3)
        except SolverError as exc:
            print(f"\nRK4: refused ({str(exc).splitlines()[0]})")
    if "block" in which:
        print("\nBlock launched up the slope: along / across the slope (m)\n")
        sweep(lambda integrator, rtol: [block(r, heading, integrator, rtol) for r in (-0.1, -1e-3, 1e-3, 0.1)
                                        for heading in (0.0, 30.0)], "along m / across m")


if __name__ == "__main__":
    main(sys.argv[1:] or ["ball", "block"])
