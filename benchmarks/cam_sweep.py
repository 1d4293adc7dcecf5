"""Cam followers beyond their sample (issue 16 item 3): disc cams designed in code from a closed-form law,
their outlines handed to cadmotion as points or as a CadQuery B-spline face, every run against the law.

Closed forms (the cam turns counter-clockwise by θ; the follower slides along u = +y on the line x = e; H the
lift, β the rise's span, x = (θ − θ₀)/β its fraction, r_b the base circle):

* laws of the rise (the return mirrors it): harmonic s = H (1 − cos πx)/2; cycloidal s = H (x − sin 2πx / 2π);
  3-4-5 polynomial s = H (10x³ − 15x⁴ + 6x⁵); laid out as rise–return (R-R, 180° each) or dwell–rise–dwell–
  return (D-R-D-R: rise 0–120°, dwell, return 180–300°, dwell). s′, s″ are their exact derivatives; the
  follower's velocity is s′ θ̇, its acceleration s″ θ̇² + s′ θ̈.
* the outline that makes a follower move by s(θ): a flat face normal to u has the support function
  h(ψ) = r_b + s(π/2 − ψ) and touches c(ψ) = h (cos ψ, sin ψ) + h′ (−sin ψ, cos ψ) (convex while
  r_b + s + s″ > 0); a point or a roller of radius r has its centre at P = (e, d₀ + s), d₀ = √((r_b + r)² − e²),
  the outline is the pitch curve turned back, R(−θ)(P − r ν), ν ∥ (e − s′, d₀ + s) the contact normal, and the
  pressure angle (between ν and the slide, positive towards −x) is α = atan2(s′ − e, d₀ + s); a flat face has
  α = 0. A roller is undercut where the pitch curve bends tighter than r (the outline folds over itself).
* a spring-loaded follower (mass m, gravity g along −u, spring k compressed by c₀ at s = 0) at constant cam
  speed ω presses on the cam with N = m (s″ ω² + g) + k (c₀ + s); it lifts off above
  ω* = min over s″ < 0 of √((m g + k (c₀ + s)) / (−m s″)), first where N < 0.

Sections (each prints a table; a run is "off" when an error exceeds its bound — s 1e-8 m, v and a 1e-6 and 1e-4 of
their peaks, α 1e-4 rad; a lift-off reported or missed against the closed form, its time more than one frame's span
away, the load 1e-4 of its peak — and "flagged" when the run's own checks report it: an exception, a refusal, an
invariant event, an incomplete run):

* ``law``: cadmotion's law from a 720-point outline (``lift_law``) against s, s′, s″ and α, for the flat face,
  the point and the roller (8 mm), centred and offset (8 and 10 mm), base circles 30 and 12 mm (pressure angles to
  56°), every law and layout (harmonic, cycloidal, 3-4-5; R-R, D-R-D-R, D-R-D-R over 60°). s″ is left out within one
  law sample (0.5°) of the segment ends, where a jump lies inside the law's own sample interval. A cam that the
  follower cannot stay on (the outline folds over, or is hollow under a flat face) must be refused.
* ``undercut``: a roller on the cam designed for it (cycloidal rise over 60°, pitch base 30 mm; the pitch curve's
  tightest bend ρ = 16.13 mm at the nose) at r = 0.5 … 1.5 ρ; a flat face on base circles 12 … 4 mm (the outline
  folds over below r_b + s + s″ = 0); rollers of 10, 30, 40 mm on the point follower's cam (hollow 33.6 mm: a
  roller that fits is checked against a brute-force offset of the outline). Beyond the limits: refused, not a lift.
* ``kinematics``: driven runs over a turn at 3, 8, 36, 360, 720 frames and 1, 10, 50 turns/s, and a cam
  accelerating from rest (θ = π t², two turns, 40 and 400 frames): s, v = s′ θ̇, a = s″ θ̇² + s′ θ̈ and α.
* ``cad``: the outline from a CadQuery B-spline face through 36 … 1440 points of the design outline, sampled by
  ``geometry_refs.face_outline`` (what ``profile = { part, near }`` reads; 720 points there) at 360 … 2880 points:
  how s and s″ converge to the design law with the fit (the B-spline is the cam; its own distance from the design
  law is the fit's, not cadmotion's).
* ``dynamics``: the spring-loaded flat follower (m = 0.2 kg, k = 300 N/m, c₀ = 24 mm, gravity) at 0.97, 0.99,
  1.003, 1.01, 1.03 ω* for four laws: inverse dynamics at 720, 72, 24 frames a turn; at 0.99 and 1.01 ω* forward
  runs with DOP853, RK45, Radau, BDF, LSODA at rtol 1e-6 and 1e-9 (atol rtol/1000), 720 frames, and DOP853 at 72.

    python benchmarks/cam_sweep.py [law] [undercut] [kinematics] [cad] [dynamics]     (default: all; ~8 min)
"""
import math
import os
import sys
import time

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

from cadmotion.importers.modelfile import parse_model  # noqa: E402
from cadmotion.kernel import compile_model, kinematics  # noqa: E402
from cadmotion.kernel.cams import lift_law  # noqa: E402
from cadmotion.kernel.dynamics import inverse_dynamics  # noqa: E402
from cadmotion.kernel.dynamics.forward import run  # noqa: E402

G = 9.81
TWO_PI = 2 * math.pi


# ------------------------------------------------------------------------------------------ closed forms
def rise(kind, x):
    """(s, ds/dx, d²s/dx²) of a unit rise at fractions x in [0, 1]."""
    if kind == "harmonic":
        return (1 - np.cos(np.pi * x)) / 2, np.pi / 2 * np.sin(np.pi * x), np.pi**2 / 2 * np.cos(np.pi * x)
    if kind == "cycloidal":
        return (x - np.sin(TWO_PI * x) / TWO_PI, 1 - np.cos(TWO_PI * x), TWO_PI * np.sin(TWO_PI * x))
    if kind == "3-4-5":
        return (10 * x**3 - 15 * x**4 + 6 * x**5, 30 * x**2 - 60 * x**3 + 30 * x**4,
                60 * x - 180 * x**2 + 120 * x**3)
    raise ValueError(kind)


LAYOUTS = {"R-R": ((0.0, math.pi), (math.pi, math.pi)),  # (start, span) of the rise and of the return
           "D-R-D-R": ((0.0, math.radians(120)), (math.pi, math.radians(120))),
           "D-R-D-R 60°": ((0.0, math.radians(60)), (math.pi, math.radians(60)))}


class Law:
    """A cam law s(θ) (m) of a rise of H and its return, laid out by ``LAYOUTS[layout]``."""

    def __init__(self, kind, layout, lift):
        self.kind, self.layout, self.H = kind, layout, lift
        self.name = f"{kind} {layout}"

    def __call__(self, theta, derivative=0):
        th = np.mod(np.asarray(theta, float), TWO_PI)
        (a0, b0), (a1, b1) = LAYOUTS[self.layout]
        out = np.zeros_like(th)
        if derivative == 0:
            out[(th >= a0 + b0) & (th < a1)] = self.H
        for (a, b), sign, base in (((a0, b0), 1.0, 0.0), ((a1, b1), -1.0, self.H)):
            sel = (th >= a) & (th < a + b)
            parts = rise(self.kind, (th[sel] - a) / b)
            value = parts[derivative] * self.H / b**derivative
            out[sel] = (base + sign * value) if derivative == 0 else sign * value
        return out

    def jumps(self):
        """Cam angles (rad) where s″ jumps (the harmonic rise's ends)."""
        if self.kind != "harmonic":
            return ()
        (a0, b0), (a1, b1) = LAYOUTS[self.layout]
        return (a0, a0 + b0, a1, a1 + b1)


def outline(law, shape, base, r=0.0, e=0.0, n=720):
    """Points (n, 2) of the cam's outline in its frame at θ = 0 (m) for the follower, and the curve's
    smallest (convex, concave) radii of curvature that matter (flat: of the outline, signed, and inf;
    roller/point: of the pitch curve)."""
    th = np.linspace(0.0, TWO_PI, n, endpoint=False)
    s, s1, s2 = law(th), law(th, 1), law(th, 2)
    if shape == "flat":
        psi = np.pi / 2 - th
        h, dh = base + s, -s1
        pts = np.column_stack([h * np.cos(psi) - dh * np.sin(psi), h * np.sin(psi) + dh * np.cos(psi)])
        return pts, (float(np.min(base + s + s2)), math.inf)
    d0 = math.sqrt((base + r) ** 2 - e**2)
    P = np.column_stack([np.full_like(th, e), d0 + s])
    nu = np.column_stack([e - s1, d0 + s])
    nu /= np.linalg.norm(nu, axis=1)[:, None]
    C = P - r * nu
    c, sn = np.cos(-th), np.sin(-th)
    pts = np.column_stack([c * C[:, 0] - sn * C[:, 1], sn * C[:, 0] + c * C[:, 1]])
    # the pitch curve's radius of curvature, from its points in the cam frame
    pc = np.column_stack([c * P[:, 0] - sn * P[:, 1], sn * P[:, 0] + c * P[:, 1]])
    return pts, _min_radius(pc)


def _min_radius(pts):
    """(smallest convex, smallest concave) radius of curvature (m) of a closed polygon, by circumcircles."""
    a, b, c = np.roll(pts, 1, axis=0), pts, np.roll(pts, -1, axis=0)
    ab, bc, ca = b - a, c - b, a - c
    cross = ab[:, 0] * bc[:, 1] - ab[:, 1] * bc[:, 0]
    area = 0.5 * float(np.sum(pts[:, 0] * np.roll(pts[:, 1], -1) - np.roll(pts[:, 0], -1) * pts[:, 1]))
    k = 2 * cross / (np.linalg.norm(ab, axis=1) * np.linalg.norm(bc, axis=1) * np.linalg.norm(ca, axis=1))
    k = k * np.sign(area)
    return (1.0 / max(float(np.max(k)), 1e-300), 1.0 / max(float(-np.min(k)), 1e-300))


def pressure(law, shape, base, r=0.0, e=0.0, theta=None):
    """The closed-form pressure angle α(θ) (rad)."""
    if shape == "flat":
        return np.zeros_like(theta)
    d0 = math.sqrt((base + r) ** 2 - e**2)
    return np.arctan2(law(theta, 1) - e, d0 + law(theta))


# ------------------------------------------------------------------------------------------ models
M_F, K_S, C0 = 0.2, 300.0, 0.024  # the follower's mass (kg), the spring (N/m) and its compression at s = 0 (m)


def model_data(law, shape, base, r=0.0, e=0.0, n=720, omega=TWO_PI, expression=None, gravity=G, points=None):
    """A model file (dict, metres) of the cam on a shaft along z at the origin, the follower on a slide along +y
    through (e, d₀) (its tip, roller centre or face at the base circle), a return spring of K_S compressed by C0."""
    pts = outline(law, shape, base, r, e, n)[0] if points is None else np.asarray(points)[:, :2]
    y0 = base if shape == "flat" else math.sqrt((base + r) ** 2 - e**2)
    cam = {"name": "contact", "type": "cam", "joints": ["shaft", "slide"], "follower": shape,
           "profile": [[float(x), float(y), 0.0] for x, y in pts]}
    if shape == "roller":
        cam["radius"] = r
    return {
        "units": "m", "gravity": [0.0, -gravity, 0.0],
        "parts": {"frame": {"fixed": True},
                  "cam": {"position": [0, 0, 0], "mass": 2.0, "inertia": [1e-3, 1e-3, 2e-3]},
                  "follower": {"position": [e, y0, 0], "mass": M_F, "inertia": [1e-5, 1e-5, 1e-5]}},
        "joints": [{"name": "shaft", "type": "revolute", "parts": ["frame", "cam"], "origin": [0, 0, 0],
                    "axis": [0, 0, 1]},
                   {"name": "slide", "type": "prismatic", "parts": ["frame", "follower"], "origin": [e, y0, 0],
                    "axis": [0, 1, 0]},
                   cam],
        "forces": [{"name": "return_spring", "type": "spring-damper", "parts": ["frame", "follower"],
                    "points": [[e, y0 + 0.1, 0], [e, y0, 0]], "stiffness": K_S, "free_length": 0.1 + C0}],
        "drivers": [{"joint": "shaft", "expression": expression or f"{float(omega)!r}*t"}],
    }


def compiled(data):
    return compile_model(parse_model(data, source="cam_sweep.toml"))


def lift_off_speed(law, m=M_F, k=K_S, c0=C0, g=G):
    """ω* (rad/s) and the function N(θ, ω) of the closed form."""
    th = np.linspace(0.0, TWO_PI, 200001)
    s, s2 = law(th), law(th, 2)
    falling = s2 < 0
    omega = float(np.sqrt(np.min((m * g + k * (c0 + s[falling])) / (-m * s2[falling]))))
    return omega, lambda theta, w: m * (law(theta, 2) * w**2 + g) + k * (c0 + law(theta))


def _jump_distance(law, theta):
    """Distance (rad) from each θ to the nearest angle where the law's s″ or s‴ may jump (segment ends)."""
    ends = [a for a, b in LAYOUTS[law.layout]] + [a + b for a, b in LAYOUTS[law.layout]]
    return np.min([np.abs((theta - j + np.pi) % TWO_PI - np.pi) for j in ends], axis=0)


def _errors(law, shape, base, r, e, theta, s, v, a, alpha, rate=1.0, accel=0.0):
    """(s m, v rel, a rel, α rad) errors of a run's series against the closed form; a is left out within one law
    sample (0.5°) of the segment ends, where the jump lies inside the law's own sample interval."""
    th = np.asarray(theta)
    s_ex = law(th)
    v_ex = law(th, 1) * rate
    a_ex = law(th, 2) * rate**2 + law(th, 1) * accel
    vpeak = max(float(np.max(np.abs(law(FINE, 1)))) * float(np.max(np.abs(rate))), 1e-300)
    apeak = max(float(np.max(np.abs(law(FINE, 2)))) * float(np.max(np.abs(rate))) ** 2, 1e-300)
    ok = _jump_distance(law, th) > TWO_PI / 720 + 1e-9
    ea = float(np.max(np.abs(a - a_ex)[ok])) / apeak if ok.any() else 0.0
    al = pressure(law, shape, base, r, e, th)
    return (float(np.max(np.abs(s - s_ex))), float(np.max(np.abs(v - v_ex))) / vpeak, ea,
            float(np.max(np.abs(alpha - al))))


FINE = np.linspace(0.0, TWO_PI, 14401)
KINDS = ("harmonic", "cycloidal", "3-4-5")
BOUNDS = (1e-8, 1e-6, 1e-4, 1e-4)  # s m, v / peak, a / peak, α rad
LABELS = "s m / v rel / a rel / α rad"


def _row(case, errors, flagged=False, note=""):
    off = any(x > b for x, b in zip(errors, BOUNDS))
    return dict(case=case, errors=errors, off=off, flagged=flagged, note=note)


def _print(rows, header):
    print(f"\n{header}\n")
    print(f"| case | {LABELS} | off | flagged |")
    print("|---|---|---|---|")
    for row in rows:
        errs = " / ".join(f"{x:.1e}" for x in row["errors"])
        print(f"| {row['case']} | {errs}{(' ' + row['note']) if row['note'] else ''} | {'off' if row['off'] else ''} | "
              f"{'flagged' if row['flagged'] else ''} |")
    worst = np.max([row["errors"] for row in rows if row["errors"]], axis=0)
    print(f"\n{len(rows)} cases, {sum(r['off'] for r in rows)} off, {sum(r['flagged'] for r in rows)} flagged; "
          f"worst {' / '.join(f'{w:.2g}' for w in worst)}")


# ------------------------------------------------------------------------------------------ sections
FOLLOWERS = (("flat", 0.0, 0.0), ("point", 0.0, 0.0), ("point", 0.0, 0.008), ("roller", 0.008, 0.0),
             ("roller", 0.008, 0.010))


def section_law():
    rows = []
    for kind in KINDS:
        for layout in ("R-R", "D-R-D-R", "D-R-D-R 60°"):
            law = Law(kind, layout, 0.012)
            for shape, r, e in FOLLOWERS:
                for base in (0.030, 0.012):
                    case = f"{law.name}, {shape} r = {r * 1e3:g} mm e = {e * 1e3:g} mm, r_b = {base * 1e3:g} mm"
                    pts, (rho, _) = outline(law, shape, base, r, e)
                    feasible = _simple(pts) and rho > r
                    try:
                        fit = lift_law(pts, shape, radius=r, point=(e, 0.0), direction=(0.0, 1.0))
                    except ValueError as exc:
                        rows.append(_row(case, (), flagged=True, note=f"refused: {str(exc)[:60]}"))
                        rows[-1]["off"] = feasible
                        continue
                    amax = float(np.degrees(np.max(np.abs(pressure(law, shape, base, r, e, FINE)))))
                    errs = _errors(law, shape, base, r, e, FINE, fit(FINE), fit(FINE, 1), fit(FINE, 2),
                                   fit.pressure_angle(FINE))
                    rows.append(_row(case, errs, note=f"(α max {amax:.0f}°)" if amax > 40 else ""))
                    if not feasible:
                        rows[-1]["off"] = True
                        rows[-1]["note"] += " a lift for an infeasible cam"
    _print([r for r in rows if r["errors"]] + [r for r in rows if not r["errors"]],
           "Law from a 720-point outline (lift_law): s, s′, s″ and α against the closed form")


def _simple(pts):
    """Whether the polygon does not cross itself (O(n²), for the sweep's own check)."""
    a, b = pts, np.roll(pts, -1, axis=0)
    n = len(pts)
    for i in range(n):
        d, c = b[i] - a[i], b - a
        den = d[0] * c[:, 1] - d[1] * c[:, 0]
        w = a - a[i]
        with np.errstate(divide="ignore", invalid="ignore"):
            s = (w[:, 0] * c[:, 1] - w[:, 1] * c[:, 0]) / den
            t = (w[:, 0] * d[1] - w[:, 1] * d[0]) / den
        j = np.arange(n)
        near = (np.abs(j - i) <= 1) | (np.abs(j - i) == n - 1)
        if np.any((s > 0) & (s < 1) & (t > 0) & (t < 1) & ~near):
            return False
    return True


def section_undercut():
    """Cams followers cannot stay on: each must be refused; the feasible ones next to them must follow the law."""
    rows = []
    nose = Law("cycloidal", "D-R-D-R 60°", 0.012)
    rho = outline(nose, "point", 0.030, n=2880)[1][0]  # the pitch curve's tightest bend (the nose), 16.13 mm
    cases = [(f"roller r = {f:g} ρ_pitch ({f * rho * 1e3:.2f} mm) on its own cam, pitch base 30 mm", nose, "roller",
              0.030 - f * rho, f * rho, f * rho, f < 1) for f in (0.5, 0.9, 0.99, 1.01, 1.1, 1.5)]
    cyc = Law("cycloidal", "D-R-D-R", 0.012)
    for base in (0.012, 0.008, 0.006, 0.004):
        rad = outline(cyc, "flat", base)[1][0]
        cases.append((f"flat face, {cyc.name}, r_b = {base * 1e3:g} mm (r_b + s + s″ ≥ {rad * 1e3:.2f} mm)", cyc,
                      "flat", base, 0.0, 0.0, rad > 0))
    hollow = outline(nose, "point", 0.030, n=2880)[1][1]  # the point cam's hollow: 33.56 mm
    for r in (0.010, 0.030, 0.040):
        cases.append((f"roller r = {r * 1e3:g} mm on the point follower's cam (hollow {hollow * 1e3:.1f} mm)", nose,
                      "roller", 0.030, r, 0.0, r < hollow))
    for case, law, shape, base, r, r_design, feasible in cases:
        pts = outline(law, shape if r_design or shape == "flat" else "point", base, r_design)[0]
        try:
            fit = lift_law(pts, shape, radius=r)
        except ValueError as exc:
            rows.append(dict(case=case, errors=(), off=feasible, flagged=True, note=f"refused: {str(exc)[:70]}…"))
            continue
        if r_design == r:  # on its own cam: the design law
            errs = _errors(law, shape, base, r, 0.0, FINE, fit(FINE), fit(FINE, 1), fit(FINE, 2),
                           fit.pressure_angle(FINE))
            rows.append(_row(case, errs))
        else:  # another roller on the point cam: its centre on the outline's offset; compare s only with that
            th = FINE[::20]
            rows.append(_row(case, (float(np.max(np.abs(fit(th) - _offset_lift(pts, r, th)))), 0.0, 0.0, 0.0),
                             note="(s against the outline's offset curve)"))
        if not feasible:
            rows[-1]["off"] = True
            rows[-1]["note"] += " a lift for an infeasible cam"
    _print(rows, "Undercut and hollow cams: refused, or the law")


def _offset_lift(pts, r, theta):
    """A roller's centre height on the line x = 0 over a cam outline (brute force over a dense polygon of the
    outline's periodic cubic spline): the highest y at distance r from the outline, less its value at θ = 0 (m);
    an independent check, at each θ."""
    from scipy.interpolate import CubicSpline

    dense = np.linspace(0, 1, 100 * len(pts), endpoint=False)
    tau = np.linspace(0, 1, len(pts) + 1)
    P = CubicSpline(tau, np.vstack([pts, pts[:1]]), bc_type="periodic")(dense)
    out = []
    for th in np.concatenate([[0.0], theta]):
        c, s = math.cos(th), math.sin(th)
        Q = P @ np.array([[c, s], [-s, c]])  # the cam turned by θ
        inside = np.abs(Q[:, 0]) <= r
        out.append(np.max(Q[inside, 1] + np.sqrt(r**2 - Q[inside, 0] ** 2)))
    return np.array(out[1:]) - out[0]


def section_kinematics():
    """Driven runs: the follower's s, v, a and α against the law, over frame counts and cam speeds."""
    rows = []
    for law in (Law("cycloidal", "D-R-D-R", 0.012), Law("harmonic", "D-R-D-R", 0.012), Law("3-4-5", "R-R", 0.012)):
        for shape, r, e in (("flat", 0.0, 0.0), ("roller", 0.008, 0.010)):
            base = 0.030
            for turns in (1.0, 10.0, 50.0):
                data = model_data(law, shape, base, r, e, omega=TWO_PI * turns)
                model = compiled(data)
                for frames in (3, 8, 36, 360, 720):
                    rows.append(_kinematic_row(model, law, shape, base, r, e, f"{turns:g} turn/s, {frames} frames",
                                               1.0 / turns, frames, lambda t, w=TWO_PI * turns: (w * t, w, 0.0)))
            # a cam accelerating from rest: θ = π t² over two turns
            model = compiled(model_data(law, shape, base, r, e, expression="pi*t^2"))
            for frames in (40, 400):
                rows.append(_kinematic_row(model, law, shape, base, r, e, f"θ = π t², 2 turns, {frames} frames", 2.0,
                                           frames, lambda t: (math.pi * t**2, TWO_PI * t, TWO_PI)))
    _print(rows, "Driven kinematics: follower lift, velocity, acceleration and pressure angle")


def _kinematic_row(model, law, shape, base, r, e, label, t_end, frames, cam):
    case = f"{law.name}, {shape}{f' r = {r * 1e3:g} mm e = {e * 1e3:g} mm' if shape == 'roller' else ''}, {label}"
    try:
        motion = kinematics(model, t_end=t_end, steps=frames)
    except Exception as exc:  # noqa: BLE001 - the sweep reports every failure as a flagged run
        return dict(case=case, errors=(), off=True, flagged=True, note=f"{type(exc).__name__}: {str(exc)[:60]}")
    th, rate, accel = cam(motion.time)
    k = motion.part_index("follower")
    errs = _errors(law, shape, base, r, e, th, motion.coordinate("slide.disp"), motion.velocity[:, k, 1],
                   motion.acceleration[:, k, 1], motion.extra["contact.pressure_angle"], rate, accel)
    flagged = not motion.complete or any(ev.kind == "invariant" for ev in motion.events)
    return _row(case, errs, flagged)


def section_cad():
    """The outline from a CadQuery B-spline face: how s and s″ converge with the fit and with the outline's samples."""
    import cadquery as cq

    from cadmotion.importers import geometry_refs

    rows = []
    for law, shape, r in ((Law("cycloidal", "D-R-D-R", 0.012), "flat", 0.0),
                          (Law("harmonic", "D-R-D-R", 0.012), "flat", 0.0),
                          (Law("3-4-5", "R-R", 0.012), "roller", 0.008)):
        for fit_points, samples in ((36, 720), (90, 720), (180, 720), (360, 720), (720, 720), (1440, 720),
                                    (360, 360), (360, 1440), (360, 2880), (1440, 2880)):
            case = f"{law.name}, {shape}, B-spline through {fit_points} points, outline sampled at {samples}"
            pts = outline(law, shape, 0.030 - r, r, n=fit_points)[0] * 1e3  # mm, as CadQuery models are
            cam = cq.Workplane("XY").spline([tuple(p) for p in pts], periodic=True).close().extrude(10)
            P = geometry_refs.face_outline(cam.val().wrapped, [pts[0][0], pts[0][1], 10], samples=samples)
            try:
                fit = lift_law(P[:, :2] * 1e-3, shape, radius=r)
            except ValueError as exc:
                rows.append(dict(case=case, errors=(), off=True, flagged=True, note=f"refused: {str(exc)[:60]}"))
                continue
            errs = _errors(law, shape, 0.030 - r, r, 0.0, FINE, fit(FINE), fit(FINE, 1), fit(FINE, 2),
                           fit.pressure_angle(FINE))
            rows.append(_row(case, errs))
    _print(rows, "Outline from a CadQuery B-spline face (geometry_refs.face_outline)")


INTEGRATORS = ("DOP853", "RK45", "Radau", "BDF", "LSODA")


def section_dynamics():
    """Spring-loaded follower near its lift-off speed: lift-off reported iff ω > ω*, at the closed form's time."""
    rows = []
    for law in (Law("harmonic", "D-R-D-R", 0.012), Law("cycloidal", "D-R-D-R", 0.012), Law("3-4-5", "D-R-D-R", 0.012),
                Law("cycloidal", "R-R", 0.012)):
        omega_star, load = lift_off_speed(law)
        th = np.linspace(0.0, TWO_PI, 200001)
        for factor in (0.97, 0.99, 1.003, 1.01, 1.03):
            w = factor * omega_star
            n = load(th, w)
            t_exact = float(th[np.flatnonzero(n < 0)[0]] / w) if np.any(n < 0) else None
            model = compiled(model_data(law, "flat", 0.030, omega=w))
            runs = [("inverse", frames, None) for frames in (720, 72, 24)]
            if factor in (0.99, 1.01):
                runs += [(integrator, 720, rtol) for integrator in INTEGRATORS for rtol in (1e-6, 1e-9)]
                runs += [("DOP853", 72, 1e-9)]
            for how, frames, rtol in runs:
                t0 = time.perf_counter()
                if how == "inverse":
                    motion = inverse_dynamics(model, kinematics(model, t_end=TWO_PI / w, steps=frames))
                else:
                    motion, _ = run(model, t_end=TWO_PI / w, steps=frames, integrator=how, rtol=rtol, atol=rtol * 1e-3)
                events = [ev.time for ev in motion.events if ev.kind == "lift-off"]
                flags = [ev.message.split(":")[0] for ev in motion.events if ev.kind == "invariant"]
                span = TWO_PI / w / frames
                wrong = bool(events) != (t_exact is not None)
                t_err = abs(events[0] - t_exact) if events and t_exact is not None else 0.0
                N = motion.extra["contact.force"]
                # at a frame on a jump of s″ either side's load is right: the nearer of the two one-sided values
                sides = [np.abs(N - load(w * motion.time + d, w)) for d in (-1e-7, 0.0, 1e-7)]
                n_err = float(np.max(np.min(sides, axis=0))) / float(np.max(np.abs(n)))
                off = wrong or t_err > span or n_err > 1e-4
                rows.append(dict(law=law.name, factor=factor, how=how, frames=frames, rtol=rtol, events=events,
                                 t_exact=t_exact, t_err=t_err, n_err=n_err, off=off, flagged=bool(flags) or
                                 not motion.complete, wall=time.perf_counter() - t0, span=span))
    print("\nSpring-loaded flat follower (m = 0.2 kg, k = 300 N/m, c₀ = 24 mm, g), ω = factor × ω*\n")
    print("| law | ω / ω* | run | frames/turn | lift-off (s) | closed form (s) | |Δt| / frame | N err / N peak | off |"
          " flagged |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        how = row["how"] + (f" rtol {row['rtol']:g}" if row["rtol"] else "")
        got = f"{row['events'][0]:.6f}" if row["events"] else "none"
        exact = f"{row['t_exact']:.6f}" if row["t_exact"] is not None else "none"
        print(f"| {row['law']} | {row['factor']:g} | {how} | {row['frames']} | {got} | {exact} | "
              f"{row['t_err'] / row['span']:.2g} | {row['n_err']:.1e} | {'off' if row['off'] else ''} | "
              f"{'flagged' if row['flagged'] else ''} |")
    print(f"\n{len(rows)} runs, {sum(r['off'] for r in rows)} off, {sum(r['flagged'] for r in rows)} flagged; "
          f"worst N error {max(r['n_err'] for r in rows):.2g} of its peak; {sum(r['wall'] for r in rows):.0f} s")


def main(which):
    for name in which:
        globals()[f"section_{name}"]()


if __name__ == "__main__":
    main(sys.argv[1:] or ["law", "undercut", "kinematics", "cad", "dynamics"])
