"""STEP assemblies of the mechanism at one time, or one file per output frame.

Each part with a shape becomes a component of one top-level assembly, placed at its pose
``motion.pose(part, t)`` (cubic Hermite positions, slerp orientations, so ``t`` need not
be an output time). The XCAF document keeps the names (component label = part name,
product label = name of the first part using that shape) and the part colours
(``XCAFDoc_ColorGen`` on the product; one product per distinct (shape, colour) pair, so a
product shared by many parts is written once). Parts without a shape are left out with a
warning.

Units: shapes are in metres (the unit of :class:`~cadmotion.kernel.spec.PartSpec`) and the
XCAF document says so (``XCAFDoc_DocumentTool.SetLengthUnit``); the file declares
millimetres (``STEP_UNIT``), the unit CAD systems expect, and OCCT scales the values on
writing. OCCT's process-wide ``write.step.unit`` is set for the write and restored after;
``xstep.cascade.unit`` is neither read nor changed. The OCCT side is
:mod:`cadmotion.geometry.step_writing`.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

from ...errors import OutputError
from ...geometry.shapes import compound, is_empty
from .atomic import atomic_path, check_writable_dir
from .scene import PALETTE, part_specs

__all__ = ["write_step", "write_step_frames", "frame_file_name", "check_time", "STEP_UNIT"]

#: unit declared in the written files (OCCT name)
STEP_UNIT = "MM"


def _pose(motion, b, part, t):
    """X_WP at time t; Motion.pose needs two frames, so a one-frame run is read directly."""
    if motion.nt == 1:
        from ...kernel.motion import quat_to_matrix

        X = np.eye(4)
        X[:3, :3] = quat_to_matrix(motion.quaternion[0, b])
        X[:3, 3] = motion.position[0, b]
        return X
    return motion.pose(part, t)


def as_compound(shape):
    """A compound holding ``shape`` (a location can then be put on the whole)."""
    return compound([shape])


def _document(motion, t, specs):
    """An XCAF document holding the assembly at time ``t``; returns (doc, omitted part names)."""
    from ...geometry.step_writing import XcafAssembly

    spec = getattr(motion, "spec", None)
    assembly = XcafAssembly(str(getattr(spec, "name", "") or "mechanism"))
    products, omitted = {}, []
    for b, part in enumerate(motion.parts):
        ps = specs.get(part)
        if ps is None or is_empty(ps.shape):
            omitted.append(part)
            continue
        rgba = tuple(ps.color) if ps.color is not None else PALETTE[b % len(PALETTE)]
        key = (id(ps.shape), rgba)
        if key not in products:
            # one product per (shape, colour); a second colour of the same shape is a copy
            products[key] = assembly.add_product(ps.shape, part, rgba,
                                                 copy_geometry=any(k[0] == key[0] for k in products))
        assembly.add_component(products[key], _pose(motion, b, part, t), part)
    assembly.finish()
    return assembly.doc, omitted, len(products)


def _write_document(doc, path):
    from ...geometry.step_writing import write_step as write_xcaf

    with atomic_path(path) as tmp:
        write_xcaf(doc, tmp, STEP_UNIT, where=str(path))


def check_time(motion, t):
    """The time to write: ``t`` checked against the run, or its last time if None."""
    if motion.nt == 0:
        raise OutputError("the run has no frames, there is no pose to write", where="STEP output")
    t0, t1 = float(motion.time[0]), float(motion.time[-1])
    if t is None:
        return t1
    t = float(t)
    tol = 1e-9 * max(1.0, abs(t0), abs(t1))
    if not math.isfinite(t) or t < t0 - tol or t > t1 + tol:
        raise OutputError(f"time {t!r} s is outside the run ({t0!r} to {t1!r} s)",
                          where="STEP output", hint="choose a time inside the run with --at")
    return min(max(t, t0), t1)


def write_step(motion, path, at=None):
    """Write the assembly at time ``at`` (s; default the last frame) to the STEP file ``path``.

    Raises
    ------
    OutputError
        When ``at`` is outside the run, no part has a shape, or the file cannot be written.
    """
    t = check_time(motion, at)
    specs = part_specs(motion)
    doc, omitted, nproducts = _document(motion, t, specs)
    if nproducts == 0:
        raise OutputError("no part has CAD geometry, there is nothing to write to STEP",
                          where=str(path), hint="write .csv, .glb or .html outputs instead")
    if omitted:
        warnings.warn(f"STEP output leaves out {len(omitted)} part(s) without CAD geometry: "
                      + ", ".join(omitted[:10]) + (" ..." if len(omitted) > 10 else ""), stacklevel=2)
    _write_document(doc, path)
    return Path(path)


def frame_file_name(k, nt):
    """Name of frame ``k`` of ``nt`` in a STEP frame folder: ``frame_0007.step``."""
    return f"frame_{k:0{max(4, len(str(nt - 1)))}d}.step"


def write_step_frames(motion, directory):
    """Write one STEP file per output frame into ``directory`` (created if missing).

    Returns the list of paths written, in frame order. Files of an earlier, longer run
    are left alone (with a warning): nothing already on disk is deleted.
    """
    directory = Path(directory)
    if motion.nt == 0:
        raise OutputError("the run has no frames, there is nothing to write", where=str(directory))
    if directory.exists() and not directory.is_dir():
        raise OutputError(f"{str(directory)!r} is a file, not a folder", where=str(directory),
                          hint="give a folder name ending with '/' for one STEP file per frame")
    if not directory.exists():
        check_writable_dir(directory.parent if str(directory.parent) else Path("."), directory)
        directory.mkdir()
    check_writable_dir(directory)
    specs = part_specs(motion)
    written, omitted = [], []
    for k, t in enumerate(np.asarray(motion.time, float)):
        doc, omitted, nproducts = _document(motion, float(t), specs)
        if nproducts == 0:
            raise OutputError("no part has CAD geometry, there is nothing to write to STEP",
                              where=str(directory), hint="write .csv, .glb or .html outputs instead")
        path = directory / frame_file_name(k, motion.nt)
        _write_document(doc, path)
        written.append(path)
    if omitted:
        warnings.warn(f"STEP frames leave out {len(omitted)} part(s) without CAD geometry: "
                      + ", ".join(omitted[:10]), stacklevel=2)
    names = {p.name for p in written}
    stale = sorted(p.name for p in directory.glob("frame_*.step") if p.name not in names)
    if stale:
        warnings.warn(f"{directory}: {len(stale)} frame file(s) from an earlier run left in place "
                      f"({stale[0]} ...)", stacklevel=2)
    return written
