"""The shared contact problems in MuJoCo, the peer beside ``benchmarks/contact_peers.py``.

Run with an interpreter that has MuJoCo (``PEERS_VENV``, see ``../README.md``); prints one JSON
line per case and contact setting: wall time (the median of ``MJ_REPEAT`` runs, default 3, of
``mj_step`` alone) and the error against the closed form (from one more run that records every step).

Problems (SI; the same as cadmotion's samples ``block_on_incline*`` and ``bouncing_ball*``):

* block on an incline, θ = 20°, in the incline's frame (x down the slope, z normal to it, gravity
  9.81 [sin θ, 0, −cos θ] m/s²): a 1 kg block (inertia 1.6667e-3, 4.1667e-3, 4.1667e-3 kg m²) on four
  spherical feet (R = 5 mm, centres at (±0.1, ±0.05, −0.05) m from its origin) on the plane z = 0,
  touching at t = 0, released from rest, 1 s. ``slide``: μ = 0.2 (tan θ = 0.364 > μ), the closed form
  x(t) = ½ g (sin θ − μ cos θ) t², x(1 s) = 0.75584 m; ``stick``: μ = 0.5 > tan θ, x(t) = 0.
  MuJoCo has one friction coefficient per geom (no static/dynamic pair): the slide uses μ_d, the
  stick μ_s, the only one that matters in each.
* ball dropped on a floor: R = 0.05 m, 1 kg, its lowest point 1 m above the floor, restitution
  e = 0.8, 2 s. Closed form: impacts at t1 = sqrt(2 h0/g) = 0.45152 s, t2 = t1 + 2 e sqrt(2 h0/g)
  = 1.17396 s; apex heights e² h0 = 0.64 m, e⁴ h0 = 0.4096 m. MuJoCo has no restitution coefficient:
  a contact is a damped spring on the penetration (``solref = "τ ζ"``: time constant τ, damping ratio
  ζ), whose rebound ratio is exp(−ζπ/sqrt(1 − ζ²)), so ζ = −ln e / sqrt(π² + ln² e) = 0.0709.

Settings (``MJ_SETTINGS``, comma-separated): ``default`` — MuJoCo's own (Euler, dt = 2 ms, pyramidal
cone, impratio 1, solref 0.02 1, solimp 0.9 0.95 0.001; the ball's solref 0.02 ζ); ``tuned`` —
implicitfast, elliptic cone, impratio 100 (friction nearly hard against the normal force), solver
tolerance 1e-10; on the incline dt = 0.2 ms, solref τ = 2 ms, solimp dmax 0.99 (τ = 0.4 ms makes the feet
chatter: the block hops 3 mm and slides 4 mm too far; dt = 0.05 ms at τ = 2 ms: 2.3 mm too far); for the
ball dt = 0.05 ms, τ = 5 ms, dmax 0.9999 (its contact a damped oscillator of period 2π τ ζ, resolved by
45 steps; at τ = 0.4 ms it diverges, at dt = 0.2 ms the apex is 12 % high).
"""
import json
import math
import os
import statistics
import sys
import time

import mujoco
import numpy as np

G, TH = 9.81, math.radians(20.0)
REPEAT = int(os.environ.get("MJ_REPEAT", "3"))
SETTINGS = os.environ.get("MJ_SETTINGS", "default,tuned").split(",")
E_REST, H0, R_BALL = 0.8, 1.0, 0.05
ZETA = -math.log(E_REST) / math.hypot(math.pi, math.log(E_REST))


def option(setting, gravity, dt):
    gx, gy, gz = gravity
    if setting == "default":
        return (f'<option gravity="{gx:.17g} {gy:.17g} {gz:.17g}" timestep="0.002"/>', 0.002,
                'solref="0.02 1" solimp="0.9 0.95 0.001"')
    return (f'<option gravity="{gx:.17g} {gy:.17g} {gz:.17g}" timestep="{dt}" integrator="implicitfast" '
            f'cone="elliptic" impratio="100" tolerance="1e-10"/>', dt, 'solimp="0.99 0.99 0.001" solref="0.002 1"')


def incline_xml(setting, mu):
    opt, dt, sol = option(setting, (G * math.sin(TH), 0.0, -G * math.cos(TH)), 2e-4)
    feet = "\n".join(f'      <geom type="sphere" size="0.005" pos="{x} {y} -0.05" friction="{mu} 0 0" condim="3" '
                     f'mass="0" {sol}/>' for x in (0.1, -0.1) for y in (0.05, -0.05))
    return dt, f"""
<mujoco model="block_on_incline">
  {opt}
  <worldbody>
    <geom type="plane" size="1 1 0.1" friction="{mu} 0 0" condim="3" {sol}/>
    <body name="block" pos="0 0 0.055">
      <freejoint/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.0016667 0.0041667 0.0041667"/>
{feet}
    </body>
  </worldbody>
</mujoco>"""


def ball_xml(setting):
    opt, dt, sol = option(setting, (0.0, 0.0, -G), 5e-5)
    if setting != "default":  # the restitution: the contact's damping ratio ζ(e)
        sol = f'solimp="0.9999 0.9999 0.001" solref="0.005 {ZETA:.6f}"'
    else:
        sol = f'solref="0.02 {ZETA:.6f}" solimp="0.9 0.95 0.001"'
    return dt, f"""
<mujoco model="bouncing_ball">
  {opt}
  <worldbody>
    <geom type="plane" size="2 2 0.1" condim="1" {sol}/>
    <body name="ball" pos="0 0 {H0 + R_BALL}">
      <freejoint/>
      <geom type="sphere" size="{R_BALL}" mass="1" condim="1" {sol}/>
    </body>
  </worldbody>
</mujoco>"""


def timed(model, n):
    walls = []
    for _ in range(REPEAT):
        d = mujoco.MjData(model)
        t0 = time.perf_counter()
        mujoco.mj_step(model, d, nstep=n)
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls), walls


def incline(setting, case):
    mu = 0.2 if case == "slide" else 0.5
    dt, xml = incline_xml(setting, mu)
    model = mujoco.MjModel.from_xml_string(xml)
    n = int(round(1.0 / dt))
    wall, walls = timed(model, n)
    d = mujoco.MjData(model)
    mujoco.mj_step(model, d, nstep=n)
    x = float(d.qpos[0])
    x_ref = 0.5 * G * (math.sin(TH) - mu * math.cos(TH)) if case == "slide" else 0.0
    return dict(engine="mujoco", version=mujoco.__version__, problem=f"incline_{case}", settings=setting, dt=dt,
                mu=mu, x_end_m=x, x_ref_m=x_ref, error_m=abs(x - x_ref), wall_time_s=wall, wall_times_s=walls)


def ball(setting):
    dt, xml = ball_xml(setting)
    model = mujoco.MjModel.from_xml_string(xml)
    n = int(round(2.0 / dt))
    wall, walls = timed(model, n)
    d = mujoco.MjData(model)
    z = np.empty(n + 1)
    ncon = np.empty(n + 1, dtype=int)
    z[0], ncon[0] = d.qpos[2] - R_BALL, 0
    for i in range(n):
        mujoco.mj_step(model, d)
        z[i + 1], ncon[i + 1] = d.qpos[2] - R_BALL, d.ncon
    t = np.arange(n + 1) * dt
    starts = t[1:][(ncon[1:] > 0) & (ncon[:-1] == 0)]  # contact first seen at the end of that step
    impacts = [float(s) for s in starts[:2]]
    apexes = []
    for a, b in zip(starts[:2], list(starts[1:3]) + [t[-1]]):
        seg = (t > a) & (t < b)
        apexes.append(float(z[seg].max()))
    t1 = math.sqrt(2 * H0 / G)
    t_ref = [t1, t1 + 2 * E_REST * t1]
    h_ref = [E_REST ** 2 * H0, E_REST ** 4 * H0]
    return dict(engine="mujoco", version=mujoco.__version__, problem="ball", settings=setting, dt=dt, zeta=ZETA,
                impacts_s=impacts, impacts_ref_s=t_ref, apex_m=apexes, apex_ref_m=h_ref,
                impact_error_s=max(abs(a - b) for a, b in zip(impacts, t_ref)),
                apex_error_m=max(abs(a - b) for a, b in zip(apexes, h_ref)), wall_time_s=wall, wall_times_s=walls)


if __name__ == "__main__":
    for s in SETTINGS:
        for row in (incline(s, "slide"), incline(s, "stick"), ball(s)):
            sys.stdout.write(json.dumps(row) + "\n")
            sys.stdout.flush()
