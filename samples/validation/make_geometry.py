"""Write the STEP files of the validation samples (run once; the .step files are committed).

    python samples/validation/make_geometry.py

Lengths in millimetres (the unit written into the files). Every part is a separate
instance whose placement puts its frame at its first joint, so the part frames mean
something. The links lie in separate layers (z ranges) wherever parts that are not
connected by a joint must not touch:

clean.step    four-bar crank-rocker (the proportions of samples/four_bar): ground rail
              z -6..0, crank z 0..6, coupler z 6..12, rocker z 12..18.
toggle.step   slider-crank, crank 50, rod 150, crank at 60 deg: rail z -6..0, crank z 0..6,
              rod z 6..12, slider z 12..24.
collide.step  a bar turning about a pin at the origin (x -10..200, y -10..10, z 0..10 in
              its frame) and a round post of radius 10 at (120, 80), z 0..20, on a base
              plate z -5..0.
"""

import math
import re
from pathlib import Path

import cadquery as cq

HERE = Path(__file__).resolve().parent


def link(length, width, z0, thick):
    """A slot from (0, 0) to (length, 0) with round ends, z0..z0+thick, in its own frame."""
    return (cq.Workplane("XY", origin=(0, 0, z0)).center(length / 2, 0)
            .slot2D(length + width, width).extrude(thick))


def placed(angle_deg, x, y):
    return cq.Location(cq.Vector(x, y, 0), cq.Vector(0, 0, 1), angle_deg)


def clean():
    a, b, c, d = 100.0, 300.0, 250.0, 300.0
    B = (0.0, 100.0)
    C = (261.506227481982, 247.01868244594594)
    asm = cq.Assembly(name="clean")
    asm.add(cq.Workplane("XY", origin=(-30, -20, -6)).box(d + 60, 40, 6, centered=False),
            name="ground", color=cq.Color(0.6, 0.6, 0.6))
    asm.add(link(a, 20, 0, 6), name="crank", loc=placed(90.0, 0, 0), color=cq.Color(0.85, 0.3, 0.2))
    ang_bc = math.degrees(math.atan2(C[1] - B[1], C[0] - B[0]))
    asm.add(link(b, 20, 6, 6), name="coupler", loc=placed(ang_bc, *B), color=cq.Color(0.2, 0.5, 0.85))
    ang_dc = math.degrees(math.atan2(C[1], C[0] - d))
    asm.add(link(c, 20, 12, 6), name="rocker", loc=placed(ang_dc, d, 0), color=cq.Color(0.3, 0.7, 0.3))
    return asm


def toggle():
    r, l, th = 50.0, 150.0, math.radians(60.0)
    B = (r * math.cos(th), r * math.sin(th))
    x0 = B[0] + math.sqrt(l * l - B[1] ** 2)
    asm = cq.Assembly(name="toggle")
    asm.add(cq.Workplane("XY", origin=(-30, -20, -6)).box(290, 40, 6, centered=False),
            name="ground", color=cq.Color(0.6, 0.6, 0.6))
    asm.add(link(r, 16, 0, 6), name="crank", loc=placed(60.0, 0, 0), color=cq.Color(0.85, 0.3, 0.2))
    ang = math.degrees(math.atan2(-B[1], x0 - B[0]))
    asm.add(link(l, 16, 6, 6), name="rod", loc=placed(ang, *B), color=cq.Color(0.2, 0.5, 0.85))
    asm.add(cq.Workplane("XY", origin=(0, 0, 12)).rect(30, 20).extrude(12), name="slider",
            loc=placed(0.0, x0, 0), color=cq.Color(0.3, 0.7, 0.3))
    return asm


def collide():
    asm = cq.Assembly(name="collide")
    asm.add(cq.Workplane("XY", origin=(-20, -20, -5)).box(240, 140, 5, centered=False),
            name="ground", color=cq.Color(0.6, 0.6, 0.6))
    asm.add(cq.Workplane("XY").circle(10).extrude(20), name="post", loc=placed(0.0, 120, 80),
            color=cq.Color(0.3, 0.7, 0.3))
    asm.add(cq.Workplane("XY", origin=(-10, -10, 0)).box(210, 20, 10, centered=False), name="bar",
            color=cq.Color(0.85, 0.3, 0.2))
    return asm


def write(asm, path):
    """Export as STEP with a fixed time stamp (OCCT may still order the colour records differently)."""
    asm.export(str(path), exportType="STEP")
    text = path.read_text()
    text = re.sub(r"FILE_NAME\('([^']*)','[^']*'", r"FILE_NAME('\1','2026-01-01T00:00:00'", text, count=1)
    path.write_text(text)


if __name__ == "__main__":
    for make in (clean, toggle, collide):
        path = HERE / f"{make.__name__}.step"
        write(make(), path)
        print("wrote", path)
