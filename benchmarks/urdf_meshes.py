"""URDF robots with mesh visuals: every URDF file of Gepetto's example-robot-data read by cadmotion.

For each robot (``importers/urdf.py`` → :mod:`cadmotion.importers.mesh_files`) prints the mesh visuals read and
not read (with the reasons the "not read" warning gives, counted), the triangles read and the read time; then the
total and the worst time. A robot the reader refuses (for its joints) has its links' visuals read alone, as the
reader reads them, and is marked so. Then writes robots (``--html``, default ur5) to HTML animations in /tmp, to be
looked at: a kinematic run of 1 s with every joint at rest (the robot at its zero configuration), and the
HTML's size.

The corpus: ``URDF_CORPUS``, default the example-robot-data of the peers' venv
(``/tmp/peers-venv/lib/python3.11/site-packages/cmeel.prefix/share/example-robot-data/robots``). COLLADA files
need pycollada on the path.

Run: ``PYTHONPATH=... python benchmarks/urdf_meshes.py [--only STEM ...] [--html STEM|FILE ...] [--no-html]``.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time
import warnings
from pathlib import Path

CORPUS = Path(os.environ.get(
    "URDF_CORPUS",
    "/tmp/peers-venv/lib/python3.11/site-packages/cmeel.prefix/share/example-robot-data/robots"))


def _triangles(shape):
    from cadmotion.geometry.triangulation import triangulated_faces

    return 0 if shape is None else sum(len(f.triangles) for f in triangulated_faces(shape))


def _visuals_only(path):
    """The links' shapes and the not-read list of a URDF file the reader refuses (for its joints): its
    visuals read link by link, as :func:`read_urdf` reads them."""
    import xml.etree.ElementTree as ET

    from cadmotion.importers import urdf

    reader, root, ignored = urdf._Reader(path), ET.parse(path).getroot(), []
    colours = urdf._named_colours(reader, root)
    shapes = [urdf._visuals(reader, link, colours, ignored)[0] for link in root.findall("link")]
    return shapes, ignored


def read_one(path):
    """(seconds, meshes referenced, not-read reasons, triangles, refusal or None) of one URDF file: read by
    :func:`read_urdf`, or its visuals alone when it refuses the file (the refusal's first line)."""
    from cadmotion.errors import CadImportError
    from cadmotion.importers.urdf import read_urdf

    text = path.read_text(errors="replace")
    referenced = len(re.findall(r"<visual\b(?:(?!</visual>).)*?<mesh\b", text, re.S))
    refused = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        try:
            shapes = [p.shape for p in read_urdf(path).parts]
            items = [i for w in caught for i in str(w.message).split("; ")]
        except CadImportError as exc:
            refused = str(exc).splitlines()[0].split(": ", 1)[-1]
            start = time.perf_counter()
            shapes, items = _visuals_only(path)
        seconds = time.perf_counter() - start
    reasons = [re.sub(r"^.*? <mesh> \S+ \((?:unreadable: )?(.*)\)$", r"\1", i) for i in items if " <mesh> " in i]
    reasons = [r.split(": /")[0] for r in reasons]  # the reason without the file's path
    return seconds, referenced, reasons, sum(_triangles(s) for s in shapes), refused


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="URDF file stems to read (default: all)")
    parser.add_argument("--html", nargs="*", default=["ur5_robot"],
                        help="URDF file stems of the corpus, or URDF files, written to /tmp/<stem>.html and .glb")
    parser.add_argument("--no-html", action="store_true")
    args = parser.parse_args(argv)
    corpus = sorted(CORPUS.rglob("*.urdf"))
    files = [f for f in corpus if f.stem in args.only] if args.only else corpus
    if not files:
        sys.exit(f"no URDF file under {CORPUS} (set URDF_CORPUS)")
    # OCP and pycollada are imported once before the first timed read
    import cadmotion.geometry.meshes  # noqa: F401
    from OCP.Poly import Poly_Triangulation  # noqa: F401
    try:
        import collada  # noqa: F401
    except ImportError:
        print("pycollada is not installed: COLLADA meshes are not read")
    print(f"{'robot':<44} {'meshes':>6} {'read':>5} {'not':>4} {'triangles':>10} {'s':>7}  not read")
    total, worst, all_reasons, totals, refusals = 0.0, (0.0, None), collections.Counter(), [0, 0, 0], 0
    for path in files:
        name = f"{path.parent.parent.name}/{path.stem}"
        seconds, referenced, reasons, triangles, refused = read_one(path)
        refusals += refused is not None
        total += seconds
        worst = max(worst, (seconds, name))
        counted = collections.Counter(reasons)
        all_reasons.update(counted)
        totals = [totals[0] + referenced, totals[1] + len(reasons), totals[2] + triangles]
        print(f"{name:<44} {referenced:>6} {referenced - len(reasons):>5} {len(reasons):>4} {triangles:>10} "
              f"{seconds:>7.3f}  " + ", ".join(f"{n} × {r}" for r, n in counted.items())
              + (f" [visuals only; refused: {refused[:70]}]" if refused else ""))
    print(f"\n{len(files)} robots: {totals[0]} mesh visuals, {totals[0] - totals[1]} read, {totals[1]} not read, "
          f"{totals[2]} triangles; read in {total:.2f} s in all, the slowest {worst[0]:.2f} s ({worst[1]}); "
          f"{refusals} robots refused by the reader (their joints), their visuals read alone")
    for reason, n in all_reasons.most_common():
        print(f"  not read: {n} × {reason}")
    for name in [] if args.no_html else args.html:
        write_html(Path(name) if Path(name).is_file() else next((f for f in corpus if f.stem == name), None))


def write_html(path):
    """A kinematic run of the robot at rest (1 s, 10 frames) written to /tmp/<stem>.html and .glb; prints the
    times and sizes."""
    if path is None:
        print("no such robot for the HTML")
        return
    from cadmotion.importers.urdf import read_urdf
    from cadmotion.plugin.run_analysis import run_spec
    from cadmotion.plugin.writers import write_outputs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        spec = read_urdf(path)
        read = time.perf_counter() - start
        motion = run_spec(spec, "kinematic", t_end=1.0, steps=10, free_dof="minimal").motion
        run = time.perf_counter() - start - read
        outputs = [Path("/tmp") / f"{path.stem}.html", Path("/tmp") / f"{path.stem}.glb"]
        start = time.perf_counter()
        write_outputs(motion, outputs)
        written = time.perf_counter() - start
    sizes = ", ".join(f"{o} {o.stat().st_size / 1e6:.1f} MB" for o in outputs)
    print(f"\n{path.stem}: read {read:.2f} s, run {run:.2f} s, HTML and GLB written in {written:.2f} s: {sizes}")


if __name__ == "__main__":
    main()
