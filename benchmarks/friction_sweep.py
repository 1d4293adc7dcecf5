"""Unilateral contacts with Coulomb friction beyond their samples: five models around their stick/slip limits, every
run against its closed form, and whether the run's own checks (:mod:`cadmotion.kernel.dynamics.invariants`, e.g.
``contacts.friction``: force outside a friction cone) flagged it.

Each model is written here, in the incline's frame where there is one (x down the slope, gravity tilted by θ):

* ``block``: a box (1 kg, 0.2 × 0.1 × 0.1 m: one contact, four corners) on an incline falling along a heading of 0°
  or 30° across it, μ_s = μ, μ_d = 0.8 μ, from rest: sticks for tan θ < μ_s (stays put), slides for tan θ > μ_s
  with a = g (sin θ − μ_d cos θ). Error: the largest distance from ½ a t² d (m, d the fall line).
* ``roll``: a solid sphere (R = 50 mm, 1 kg, I = 2/5 m R²) from rest on an incline, μ: rolls without slip at
  a = 5/7 g sin θ where that takes friction within the cone, 2/7 m g sin θ ≤ μ m g cos θ (tan θ ≤ 7/2 μ); beyond
  it slides at a = g (sin θ − μ cos θ). Error: the largest distance of the centre from ½ a t² along x (m).
* ``spin``: the sphere launched along a level floor at v₀ with spin ω₀ about y (rolling needs v = R ω), μ: it
  slides, the friction μ m g against the slip v − R ω, until v = R ω at t* = 2 |v₀ − R ω₀| / (7 μ g), then
  rolls at v_f = (5 v₀ + 2 R ω₀) / 7. Errors: the stick event's time against t* (s), the centre's distance from
  the piecewise closed form (m).
* ``groove``: a rod (cylinder R = 20 mm, 0.2 m, 1 kg) lying in a V-groove whose faces rise at α = 45° on either
  side (two contacts, two rim points each), the groove's axis down a slope θ, μ_s = μ, μ_d = 0.8 μ: each face
  pushes N = m g cos θ / (2 cos α), so the rod is held for tan θ < μ_s / cos α and slides above at
  a = g (sin θ − μ_d cos θ / cos α). (A ball would roll in the groove about the line through its two contact
  points, held by no friction.) Error: the largest distance from ½ a t² along the groove (m).
* ``ladder``: a ladder (1 kg, L = 1 m between the axes of its end rungs, cylinders r = 20 mm across it, 0.4 m wide)
  leaning at θ from the floor against a wall (x = 0), from rest, μ₁ at the floor, μ₂ at the wall (two contacts,
  two rim points each). With both frictions at their cones' edges, the torque balance about the centre gives the
  slip angle (L/2)(1 − μ₁ μ₂) cos θ − μ₁ L sin θ = μ₁ r (1 + μ₂) (r → 0: tan θ = (1 − μ₁ μ₂) / (2 μ₁)): steeper
  it stands, flatter both ends slip (neither can stick while the other moves), the foot out and the top down,
  with the initial angular acceleration of the 3 × 3 linear system of the two forces' balance and the torque's
  (``ladder_accelerations``), and after it θ(t) of that one-degree-of-freedom equation integrated by scipy's
  DOP853 at rtol 1e-12 while the wall pushes. Error: the largest distance of the centre from the reference (m).

The V-groove's and the ladder's models and closed forms are the spec tests' (``tests/kernel/
test_friction_beyond_samples.py``), imported from there.

Each swept at tan θ = its limit × (1 + ρ), ρ = −0.1, −1e-3, +1e-3, +0.1 (the spin at four launches), two μ each,
over the integrators and tolerances (atol = rtol / 100) and output frames. A run is *off* when it is incomplete or
further from its closed form than :data:`OFF` (m or s); *flagged* when its checks raised an invariant event; an off
run that is not flagged is a defect (*wrong-unflagged*). Prints a table per model, every run off or flagged, and a
summary line.

    python benchmarks/friction_sweep.py [--quick] [block] [roll] [spin] [groove] [ladder]   (default: all models)

``--quick``: DOP853 and Radau at rtol 1e-6 and 1e-9, 20 frames (192 runs, a few minutes); the full sweep: DOP853,
RK45, Radau, BDF and LSODA at rtol 1e-4, 1e-6, 1e-8, 1e-10, 20 and 100 frames.
"""
import math
import os
import sys
import time

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from cadmotion.importers.modelfile import parse_model  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics.forward import run  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "kernel"))
from test_friction_beyond_samples import (GROOVE_ALPHA, groove_acceleration, groove_model,  # noqa: E402
                                          ladder_centres, ladder_model, ladder_slip_angle)  # (the spec tests' forms)

G = 9.81
OFF = 1e-5  # m or s: a run further than this from its closed form is off
RATIOS = (-0.1, -1e-3, 1e-3, 0.1)
QUICK = dict(integrators=("DOP853", "Radau"), tolerances=(1e-6, 1e-9), frames=(20,))
FULL = dict(integrators=("DOP853", "RK45", "Radau", "BDF", "LSODA"), tolerances=(1e-4, 1e-6, 1e-8, 1e-10),
            frames=(20, 100))


def _tilted(theta, heading=0.0):
    """Gravity (m/s²) of a slope θ (rad) falling along the heading (rad) in the xy plane."""
    return [G * math.sin(theta) * math.cos(heading), G * math.sin(theta) * math.sin(heading), -G * math.cos(theta)]


def _run(data, kw):
    """(motion, flagged checks, wall s) of one run; ``kw`` the integrator's settings and the frames."""
    t0 = time.perf_counter()
    motion, _ = run(compile_model(parse_model(data, source="friction sweep")), **kw)
    flags = sorted({e.message.split(":")[0] for e in motion.events if e.kind == "invariant"})
    return motion, flags, time.perf_counter() - t0


def _centre(motion, part):
    return motion.position[:, motion.parts.index(part)]


# ---------------------------------------------------------------------------- the models and their closed forms
def block(rho, mu, heading_deg, kw, t_end=0.5):
    """A box from rest on a slope tan θ = μ_s (1 + ρ) along the heading: error (m) from stick / Coulomb slide."""
    th, psi = math.atan(mu * (1 + rho)), math.radians(heading_deg)
    data = {"units": "m", "gravity": _tilted(th, psi),
            "parts": {"incline": {"fixed": True},
                      "block": {"position": [0, 0, 0.05], "mass": 1.0, "inertia": [0.0016667, 0.0041667, 0.0041667]}},
            "contacts": [{"name": "box", "parts": ["block", "incline"], "friction": {"static": mu, "dynamic": 0.8 * mu},
                          "shape": [{"box": [0.2, 0.1, 0.1]}, {"plane": {}}]}]}
    motion, flags, wall = _run(data, dict(kw, t_end=t_end))
    a = G * (math.sin(th) - 0.8 * mu * math.cos(th)) if math.tan(th) > mu else 0.0
    down = np.array([math.cos(psi), math.sin(psi), 0.0])
    xyz = _centre(motion, "block") - [0, 0, 0.05]
    err = float(np.max(np.linalg.norm(xyz - 0.5 * a * motion.time[:, None] ** 2 * down, axis=1)))
    return motion, flags, wall, (err,), f"block μ_s {mu:g}, tan θ = μ_s (1 {rho:+g}), heading {heading_deg:g}°"


def roll(rho, mu, kw, t_end=0.5):
    """A sphere from rest on a slope tan θ = 7/2 μ (1 + ρ): error (m) from rolling / Coulomb sliding."""
    R = 0.05
    th = math.atan(3.5 * mu * (1 + rho))
    data = {"units": "m", "gravity": _tilted(th),
            "parts": {"incline": {"fixed": True},
                      "ball": {"position": [0, 0, R], "mass": 1.0, "inertia": [0.4 * R * R] * 3}},
            "contacts": [{"name": "ball_incline", "parts": ["ball", "incline"], "friction": mu,
                          "shape": [{"sphere": R}, {"plane": {}}]}]}
    motion, flags, wall = _run(data, dict(kw, t_end=t_end))
    rolls = 2.0 / 7.0 * math.sin(th) <= mu * math.cos(th)
    a = 5.0 / 7.0 * G * math.sin(th) if rolls else G * (math.sin(th) - mu * math.cos(th))
    x = _centre(motion, "ball") - [0, 0, R]
    err = float(np.max(np.linalg.norm(x - 0.5 * a * motion.time[:, None] ** 2 * [1, 0, 0], axis=1)))
    return motion, flags, wall, (err,), f"sphere μ {mu:g}, tan θ = 7/2 μ (1 {rho:+g})"


def spin(v0, r_w0, mu, kw):
    """A sphere launched at v₀ (m/s) with spin R ω₀ (m/s) on a level floor: errors (stick time s, centre m)."""
    R = 0.05
    t_star = 2.0 * abs(v0 - r_w0) / (7.0 * mu * G)
    sign = math.copysign(1.0, v0 - r_w0)  # the slip's direction: the friction is −μ m g sign
    v_f = (5.0 * v0 + 2.0 * r_w0) / 7.0
    data = {"units": "m", "gravity": [0, 0, -G],
            "parts": {"floor": {"fixed": True},
                      "ball": {"position": [0, 0, R], "mass": 1.0, "inertia": [0.4 * R * R] * 3}},
            "initial_velocity": {"ball": {"velocity": [v0, 0, 0], "angular_velocity": [0, r_w0 / R, 0]}},
            "contacts": [{"name": "ball_floor", "parts": ["ball", "floor"], "friction": mu,
                          "shape": [{"sphere": R}, {"plane": {}}]}]}
    motion, flags, wall = _run(data, dict(kw, t_end=t_star + 0.2))
    t = motion.time
    x_star = v0 * t_star - 0.5 * sign * mu * G * t_star ** 2
    x_ref = np.where(t < t_star, v0 * t - 0.5 * sign * mu * G * t ** 2, x_star + v_f * (t - t_star))
    x = _centre(motion, "ball") - [0, 0, R]
    sticks = [e.time for e in motion.events if e.kind == "contact" and "slip → stick" in e.message]
    t_err = abs(sticks[0] - t_star) if sticks else math.inf
    err = float(np.max(np.linalg.norm(x - x_ref[:, None] * [1, 0, 0], axis=1)))
    return motion, flags, wall, (t_err, err), f"spin v₀ {v0:g} m/s, R ω₀ {r_w0:g} m/s, μ {mu:g}"


def groove(rho, mu, kw, t_end=0.5):
    """A rod in a V-groove (faces at α) down a slope tan θ = μ_s / cos α (1 + ρ): error (m) from held / sliding."""
    tan_theta = mu / math.cos(GROOVE_ALPHA) * (1 + rho)
    motion, flags, wall = _run(groove_model(tan_theta, mu), dict(kw, t_end=t_end))
    a = groove_acceleration(tan_theta, mu)
    x = _centre(motion, "rod") - _centre(motion, "rod")[0]
    err = float(np.max(np.linalg.norm(x - 0.5 * a * motion.time[:, None] ** 2 * [1, 0, 0], axis=1)))
    return motion, flags, wall, (err,), f"V-groove μ_s {mu:g}, tan θ = μ_s / cos α (1 {rho:+g})"


def ladder(rho, mu1, mu2, kw, t_end=0.3):
    """The ladder from rest at tan θ = tan θ_slip (1 + ρ): error (m) of its centre from standing / both ends
    slipping (the reference integrated while the wall pushes)."""
    theta0 = math.atan(math.tan(ladder_slip_angle(mu1, mu2)) * (1 + rho))
    motion, flags, wall = _run(ladder_model(theta0, mu1, mu2), dict(kw, t_end=t_end))
    err = float(np.max(np.linalg.norm(_centre(motion, "ladder") - ladder_centres(theta0, mu1, mu2, motion.time),
                                      axis=1)))
    return motion, flags, wall, (err,), f"ladder μ₁ {mu1:g}, μ₂ {mu2:g}, tan θ = tan θ_slip (1 {rho:+g})"


MODELS = {
    "block": lambda kw: [block(rho, mu, h, kw) for rho in RATIOS for mu in (0.3, 0.6) for h in (0.0, 30.0)],
    "roll": lambda kw: [roll(rho, mu, kw) for rho in RATIOS for mu in (0.1, 0.3)],
    "spin": lambda kw: [spin(v0, rw, mu, kw) for v0, rw in ((2.0, 0.0), (2.0, -1.0), (1.0, 3.0), (2.0, -6.0))
                        for mu in (0.2, 0.5)],
    "groove": lambda kw: [groove(rho, mu, kw) for rho in RATIOS for mu in (0.3, 0.6)],
    "ladder": lambda kw: [ladder(rho, m1, m2, kw) for rho in RATIOS for m1, m2 in ((0.3, 0.3), (0.5, 0.2))],
}


# ---------------------------------------------------------------------------- the sweep
def sweep(name, settings):
    """Runs the model ``name`` over the settings; prints its table; returns [(setting, run)] of every run."""
    print(f"\n{name}: errors m (spin: stick time s / centre m)\n")
    print(f"| integrator | rtol | frames | runs | off > {OFF:g} | flagged | wrong-unflagged | worst error | wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    out = []
    for integrator in settings["integrators"]:
        for rtol in settings["tolerances"]:
            for frames in settings["frames"]:
                kw = dict(integrator=integrator, rtol=rtol, atol=rtol / 100, steps=frames)
                rows = [dict(complete=m.complete, message=m.message, flags=f, wall=w, errors=e, case=c)
                        for m, f, w, e, c in MODELS[name](kw)]
                for row in rows:
                    row["off"] = not row["complete"] or max(row["errors"]) > OFF
                off = [row for row in rows if row["off"]]
                print(f"| {integrator} | {rtol:g} | {frames} | {len(rows)} | {len(off)} | "
                      f"{sum(bool(row['flags']) for row in off)} | {sum(not row['flags'] for row in off)} | "
                      f"{max(max(row['errors']) for row in rows):.2g} | {sum(row['wall'] for row in rows):.1f} |",
                      flush=True)
                out += [((integrator, rtol, frames), row) for row in rows]
    return out


def main(argv):
    settings = QUICK if "--quick" in argv else FULL
    names = [a for a in argv if a in MODELS] or list(MODELS)
    t0 = time.perf_counter()
    runs = []
    for name in names:
        runs += sweep(name, settings)
    print("\nRuns off or flagged:")
    for (integrator, rtol, frames), row in runs:
        if row["off"] or row["flags"]:
            kind = "off, flagged" if row["off"] and row["flags"] else "OFF, UNFLAGGED" if row["off"] else "flagged"
            print(f"  {kind}: {integrator} rtol {rtol:g} {frames} frames, {row['case']}: errors "
                  f"{' / '.join(f'{e:.3g}' for e in row['errors'])}, flags {row['flags']}"
                  f"{'' if row['complete'] else ', incomplete: ' + row['message']}")
    off = [row for _, row in runs if row["off"]]
    print(f"\nsummary: {len(runs)} runs, {len(off)} off, {sum(bool(r['flags']) for r in off)} flagged, "
          f"{sum(not r['flags'] for r in off)} wrong-unflagged, "
          f"{sum(bool(r['flags']) and not r['off'] for _, r in runs)} flagged within tolerance; "
          f"wall {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
