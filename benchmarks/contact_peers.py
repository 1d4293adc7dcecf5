"""Contacts beside the peers (issue 16 item 6): cadmotion's two contact methods, MuJoCo and Exudyn on
shared contact problems with closed-form answers.

The problems (SI; cadmotion's samples, and the same models in ``peers/mujoco_contact.py`` and
``peers/exudyn_contact.py``):

* ``incline_slide`` / ``incline_stick``: a 1 kg block on four spherical feet (R = 5 mm) on a 20° incline,
  released from rest, 1 s (``samples/dynamics/block_on_incline*.cadmotion.toml``). Slide: μ_s = 0.3,
  μ_d = 0.2 < tan 20° = 0.364, x(1 s) = ½ g (sin θ − μ_d cos θ) = 0.75577 m. Stick: μ_s = 0.5, μ_d = 0.4,
  x(t) = 0. Error: |x(1 s) − x_ref| of the block's origin (m).
* ``ball``: a 1 kg ball, R = 0.05 m, dropped from 1 m (its lowest point) on a floor, e = 0.8, 2 s
  (``samples/dynamics/bouncing_ball*.cadmotion.toml``). Impacts at t1 = sqrt(2 h0/g) = 0.45152 s and
  t2 = t1 (1 + 2e) = 1.17396 s, apexes e² h0 = 0.64 m and e⁴ h0 = 0.4096 m. Errors: of each impact time (s)
  and each apex (m). A compliant contact lasts a few ms (≈ 4 ms here, Hertz, 4.4 m/s): the ball leaves the
  floor that much after t1, so a compliant model's t2 is late by about that much whatever its step.

cadmotion runs each sample as a user would, ``run(model, t_end, steps)`` with the method it picks
itself, with ``method = "compliant"`` (Hunt–Crossley / Hertz, regularised Coulomb) and ``"unilateral"``
(impacts and Coulomb stick/slip as events), over the same span for both (the block 1 s in 100 output
frames, the ball 2 s in 400). Wall time: the median of ``CM_REPEAT`` runs (default 3) after one warm-up
run; it includes forming the output frames (the peers' timed runs record nothing), not the companion run of the
global error estimate (``estimate_error=False``: the peers estimate none). The block's error
comes from the last of them, the ball's from one more run with output frames every 0.1 ms (the compliant
ball's impact time is its first frame in contact; a unilateral impact is an event with its time). The
peers' scripts run with the interpreter of ``PEERS_VENV`` (default ``/tmp/peers-venv``, see
``../shared/peers/README.md``) when it exists, from a temporary directory; their rows follow cadmotion's.

BLAS is pinned to one thread, as in ../shared/peers/run_all.sh.

    python benchmarks/contact_peers.py
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
os.environ.setdefault("CADMOTION_DYNAMICS_FAST", "compile")

import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from cadmotion.importers.modelfile import parse_model  # noqa: E402
from cadmotion.kernel import compile_model  # noqa: E402
from cadmotion.kernel.dynamics.forward import run  # noqa: E402

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parent / "samples" / "dynamics"
REPEAT = int(os.environ.get("CM_REPEAT", "3"))
PEERS_PY = Path(os.environ.get("PEERS_VENV", "/tmp/peers-venv")) / "bin" / "python"
G, TH, E_REST, H0, R_BALL = 9.81, math.radians(20.0), 0.8, 1.0, 0.05
SAMPLE = {("incline", "compliant"): "block_on_incline", ("incline", "unilateral"): "block_on_incline_unilateral",
          ("ball", "compliant"): "bouncing_ball", ("ball", "unilateral"): "bouncing_ball_unilateral"}


def model(problem, method, case=None):
    """The compiled sample; the stick case with μ_s = 0.5, μ_d = 0.4 on every foot."""
    data = tomllib.loads((SAMPLES / f"{SAMPLE[problem, method]}.cadmotion.toml").read_text())
    if case == "stick":
        for c in data["contacts"]:
            c["friction"] = {"static": 0.5, "dynamic": 0.4}
    return compile_model(parse_model(data, source=f"{SAMPLE[problem, method]} ({case or problem})"))


def timed(m, t_end, steps):
    run(m, t_end, steps)  # warm-up: compiles what the cache lacks
    walls = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        motion, result = run(m, t_end, steps, estimate_error=False)  # the integration, as the peers run it
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls), f"{result.formulation}/{result.integrator}", motion


def incline(method, case):
    m = model("incline", method, case)
    wall, how, motion = timed(m, 1.0, 100)
    x = float(motion.position[-1, motion.parts.index("block"), 0])
    x_ref = 0.5 * G * (math.sin(TH) - 0.2 * math.cos(TH)) if case == "slide" else 0.0
    return dict(engine="cadmotion", problem=f"incline_{case}", settings=f"{method} ({how})", dt="auto",
                error_m=abs(x - x_ref), wall_time_s=wall)


def ball(method):
    m = model("ball", method)
    wall, how, _ = timed(m, 2.0, 400)
    motion, _ = run(m, 2.0, 20000)
    t, z = motion.time, motion.position[:, motion.parts.index("ball"), 2] - R_BALL
    if method == "unilateral":
        starts = np.array([e.time for e in motion.events if e.kind == "impact"])
    else:
        active = motion.extra["ball_floor.active"] > 0
        starts = t[1:][active[1:] & ~active[:-1]]
    apexes = [float(z[(t > a) & (t < b)].max()) for a, b in zip(starts[:2], list(starts[1:3]) + [t[-1]])]
    t1 = math.sqrt(2 * H0 / G)
    return dict(engine="cadmotion", problem="ball", settings=f"{method} ({how})", dt="auto",
                impacts_s=[float(s) for s in starts[:2]], impacts_ref_s=[t1, t1 * (1 + 2 * E_REST)],
                apex_m=apexes, apex_ref_m=[E_REST ** 2 * H0, E_REST ** 4 * H0], wall_time_s=wall)


def peers():
    """The peers' JSON rows (none without the peers' interpreter)."""
    if not PEERS_PY.exists():
        print(f"(no peers: {PEERS_PY} not found)")
        return []
    rows = []
    for script in ("mujoco_contact.py", "exudyn_contact.py"):
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run([str(PEERS_PY), str(HERE / "peers" / script)], cwd=tmp, capture_output=True,
                                 text=True, timeout=1800)
        if out.returncode:
            print(f"({script} failed: {out.stderr.strip().splitlines()[-1:]})")
        rows += [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return rows


def show(row):
    if row["problem"] == "ball":
        dt = [abs(a - b) for a, b in zip(row["impacts_s"], row["impacts_ref_s"])]
        dh = [abs(a - b) for a, b in zip(row["apex_m"], row["apex_ref_m"])]
        err = f"t1 {dt[0]:.2g} s, t2 {dt[1]:.2g} s; apexes {dh[0]:.2g}, {dh[1]:.2g} m"
    else:
        err = f"{row['error_m']:.2g} m"
    cells = (row["problem"], row["engine"], row["settings"], row["dt"], f"{row['wall_time_s']:.3g}", err)
    print("| " + " | ".join(map(str, cells)) + " |")


def main():
    print("| problem | engine | settings | step s | wall s | error |")
    print("|---|---|---|---|---|---|")
    for method in ("compliant", "unilateral"):
        for case in ("slide", "stick"):
            show(incline(method, case))
        show(ball(method))
    for row in peers():
        show(row)


if __name__ == "__main__":
    sys.exit(main())
