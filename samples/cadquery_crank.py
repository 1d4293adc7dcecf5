"""A slider-crank built in CadQuery, simulated with cadmotion, exported as an animation.

Run it::

    python samples/cadquery_crank.py [OUT_FOLDER]

It writes ``cadquery_crank.html`` (3-D player with plots) and ``cadquery_crank.glb`` into
OUT_FOLDER (default: the current folder), and ``cadquery_crank.step``, the assembly at
its initial pose (the file the FreeCAD tests import).

The mechanism (mm, initial pose, crank at 30 degrees)::

    base    fixed plate under everything, a hole at the crank pivot (0, 0)
    crank   40 mm between its holes, turns about z at the origin
    rod     120 mm between its holes, pinned to the crank and to the slider
    slider  block sliding along x, its pin on the x axis

Joints are given as model-file style dicts (lengths in mm, the assembly's unit); the
crank turns once per second (``2*pi*t`` rad).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

CRANK = 40.0        # mm, crank pivot to crank pin
ROD = 120.0         # mm, crank pin to wrist pin
ANGLE0 = 30.0       # degrees, initial crank angle

PIN = (CRANK * math.cos(math.radians(ANGLE0)), CRANK * math.sin(math.radians(ANGLE0)))
SLIDER_X = PIN[0] + math.sqrt(ROD**2 - PIN[1] ** 2)
ROD_ANGLE = math.degrees(math.atan2(-PIN[1], SLIDER_X - PIN[0]))

#: joints in the assembly frame at the initial pose, mm
JOINTS = [
    {"name": "pivot", "type": "revolute", "parts": ["base", "crank"], "origin": [0, 0, 0], "axis": [0, 0, 1]},
    {"name": "crank_pin", "type": "revolute", "parts": ["crank", "rod"], "origin": [PIN[0], PIN[1], 6],
     "axis": [0, 0, 1]},
    {"name": "wrist_pin", "type": "revolute", "parts": ["rod", "slider"], "origin": [SLIDER_X, 0, 14],
     "axis": [0, 0, 1]},
    {"name": "slide", "type": "prismatic", "parts": ["base", "slider"], "origin": [SLIDER_X, 0, 0],
     "axis": [1, 0, 0]},
]
DRIVERS = [{"joint": "pivot", "expression": "2*pi*t"}]
FIXED = ["base"]


def _bar(length, width, thickness, hole=8.0):
    """A bar along local x from a hole at the origin to a hole at (length, 0), z from 0 up."""
    import cadquery as cq

    return (cq.Workplane("XY").center(length / 2, 0)
            .box(length + width, width, thickness, centered=(True, True, False))
            .faces(">Z").workplane(centerOption="ProjectedOrigin", origin=(0, 0, 0))
            .pushPoints([(0, 0), (length, 0)]).hole(hole))


def build_assembly():
    """The slider-crank as a ``cq.Assembly`` named ``slider_crank`` (parts in mm)."""
    import cadquery as cq

    base = (cq.Workplane("XY").center(80, 0).box(220, 60, 10, centered=(True, True, False))
            .translate((0, 0, -20))
            .faces(">Z").workplane(centerOption="ProjectedOrigin", origin=(0, 0, 0))
            .pushPoints([(0, 0)]).hole(8))
    crank = _bar(CRANK, 16, 6)
    rod = _bar(ROD, 12, 6)
    slider = (cq.Workplane("XY").box(30, 20, 14, centered=(True, True, False))
              .faces(">Z").workplane(centerOption="ProjectedOrigin", origin=(0, 0, 0)).hole(8))
    assy = cq.Assembly(name="slider_crank")
    assy.add(base, name="base", color=cq.Color(0.6, 0.6, 0.65))
    assy.add(crank, name="crank", loc=cq.Location((0, 0, 0), (0, 0, 1), ANGLE0), color=cq.Color(0.85, 0.3, 0.2))
    assy.add(rod, name="rod", loc=cq.Location((PIN[0], PIN[1], 8), (0, 0, 1), ROD_ANGLE),
             color=cq.Color(0.2, 0.5, 0.85))
    assy.add(slider, name="slider", loc=cq.Location((SLIDER_X, 0, 16)), color=cq.Color(0.3, 0.7, 0.3))
    return assy


def export_step(assy, path):
    """Write the assembly as a STEP file (mm) with its part names."""
    assy.export(str(path), "STEP")
    return Path(path)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else Path(".")
    out.mkdir(parents=True, exist_ok=True)
    from cadmotion.plugin.cadquery import simulate

    assy = build_assembly()
    export_step(assy, out / "cadquery_crank.step")
    motion = simulate(assy, JOINTS, DRIVERS, fixed=FIXED, t_end=1.0, steps=60, length_unit="mm")
    written = motion.export([out / "cadquery_crank.html", out / "cadquery_crank.glb"], plot="crank,slider")
    x = motion.position[:, motion.part_index("slider"), 0]
    print(f"slider stroke {1e3 * (x.max() - x.min()):.2f} mm (expected {2 * CRANK:.0f} mm)")
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
