"""Interference checking of the 108-part gripper (issue 7: 200 frames "in tens of seconds").

``samples/gripper``: the STEP file is read and the jaw driven over its 2 s with 200 output
intervals (201 frames); then every part is checked against every other along the motion,
with the sample's ``[check]`` exceptions, once per broad phase. Timed: ``find_interference``
alone (geometry preparation, broad phase, exact distances), after one warm-up call that
loads the compiled kernels; the STEP read and the kinematics are printed beside it.

    python benchmarks/interference.py [--steps 200]

BLAS is pinned to one thread, as in the other benchmarks. Prints one JSON line per broad phase.
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

from cadmotion.importers import load  # noqa: E402
from cadmotion.kernel import MechanismSpec, PartSpec, compile_model, kinematics  # noqa: E402
from cadmotion.plugin.check import ignored_pairs  # noqa: E402
from cadmotion.plugin.interference import BROAD_PHASES, find_interference  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "..", "samples", "gripper", "gripper.cadmotion.toml")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = load(SAMPLE)
    t_read = time.perf_counter() - t0
    t0 = time.perf_counter()
    motion = kinematics(compile_model(spec), t_end=2.0, steps=args.steps)
    t_kin = time.perf_counter() - t0
    ignore = ignored_pairs(spec, spec.setting("check.ignore"))
    # load the compiled kernels on two parts (the others without shape)
    two = MechanismSpec(parts=tuple(p if k < 2 else PartSpec(p.name) for k, p in enumerate(spec.parts)),
                        joints=spec.joints)
    find_interference(motion, two)
    for broad in sorted(BROAD_PHASES):
        t0 = time.perf_counter()
        report = find_interference(motion, spec, broad=broad, ignore=ignore, near=1e-3)
        wall = time.perf_counter() - t0
        print(json.dumps(dict(benchmark="gripper_interference", broad=broad, parts=report.stats["parts"],
                              frames=report.stats["frames"], wall_time_s=round(wall, 3),
                              step_read_s=round(t_read, 3), kinematics_s=round(t_kin, 3),
                              collisions=len(report.collisions), near=len(report.near),
                              pairs_moving=report.stats["pairs_moving"], candidates=report.stats["candidates"])))
        print(f"gripper, {report.stats['parts']} parts, {report.stats['frames']} frames, broad={broad}: "
              f"{wall:.1f} s ({len(report.collisions)} collisions, {len(report.near)} close pairs)", flush=True)


if __name__ == "__main__":
    main()
