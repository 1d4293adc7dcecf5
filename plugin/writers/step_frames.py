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
``xstep.cascade.unit`` is neither read nor changed.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from pathlib import Path

import numpy as np

from ...errors import OutputError
from .atomic import atomic_path, check_writable_dir
from .scene import PALETTE, part_specs

__all__ = ["write_step", "write_step_frames", "frame_file_name", "check_time", "STEP_UNIT"]

#: unit declared in the written files (OCCT name)
STEP_UNIT = "MM"


@contextlib.contextmanager
def _interface_static(values):
    """Temporarily set OCCT ``Interface_Static`` string parameters."""
    from OCP.Interface import Interface_Static

    old = {}
    for key, value in values.items():
        old[key] = Interface_Static.CVal_s(key)
        Interface_Static.SetCVal_s(key, value)
    try:
        yield
    finally:
        for key, value in old.items():
            if value:
                Interface_Static.SetCVal_s(key, value)


@contextlib.contextmanager
def _quiet_occt():
    """Keep OCCT's transfer statistics off stdout (only failures are printed) while writing."""
    from OCP.Message import Message, Message_Gravity

    printers = list(Message.DefaultMessenger_s().Printers())
    levels = [p.GetTraceLevel() for p in printers]
    for p in printers:
        p.SetTraceLevel(Message_Gravity.Message_Fail)
    try:
        yield
    finally:
        for p, level in zip(printers, levels):
            p.SetTraceLevel(level)


def _location(X):
    """TopLoc_Location of a 4x4 rigid transform (m)."""
    from OCP.gp import gp_Trsf
    from OCP.TopLoc import TopLoc_Location

    R, p = X[:3, :3], X[:3, 3]
    # re-orthonormalise against round-off so that gp_Trsf accepts the matrix
    u, _, vt = np.linalg.svd(R)
    R = u @ vt
    trsf = gp_Trsf()
    trsf.SetValues(*(float(v) for v in (R[0, 0], R[0, 1], R[0, 2], p[0],
                                        R[1, 0], R[1, 1], R[1, 2], p[1],
                                        R[2, 0], R[2, 1], R[2, 2], p[2])))
    return TopLoc_Location(trsf)


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
    from OCP.BRep import BRep_Builder
    from OCP.TopoDS import TopoDS_Compound

    compound = TopoDS_Compound()
    builder = BRep_Builder()
    builder.MakeCompound(compound)
    builder.Add(compound, shape)
    return compound


def _document(motion, t, specs):
    """An XCAF document holding the assembly at time ``t``; returns (doc, omitted part names)."""
    from OCP.Quantity import Quantity_Color, Quantity_ColorRGBA, Quantity_TOC_sRGB
    from OCP.TCollection import TCollection_ExtendedString
    from OCP.TDataStd import TDataStd_Name
    from OCP.TDocStd import TDocStd_Document
    from OCP.XCAFApp import XCAFApp_Application
    from OCP.XCAFDoc import XCAFDoc_ColorGen, XCAFDoc_DocumentTool

    app = XCAFApp_Application.GetApplication_s()
    doc = TDocStd_Document(TCollection_ExtendedString("XmlXCAF"))
    app.InitDocument(doc)
    XCAFDoc_DocumentTool.SetLengthUnit_s(doc, 1.0)  # shapes are in metres
    shapes = XCAFDoc_DocumentTool.ShapeTool_s(doc.Main())
    colors = XCAFDoc_DocumentTool.ColorTool_s(doc.Main())

    def name(label, text):
        TDataStd_Name.Set_s(label, TCollection_ExtendedString(text))

    spec = getattr(motion, "spec", None)
    top = shapes.NewShape()
    name(top, str(getattr(spec, "name", "") or "mechanism"))
    products, omitted = {}, []
    for b, part in enumerate(motion.parts):
        ps = specs.get(part)
        if ps is None or ps.shape is None or ps.shape.IsNull():
            omitted.append(part)
            continue
        rgba = tuple(ps.color) if ps.color is not None else PALETTE[b % len(PALETTE)]
        key = (id(ps.shape), rgba)
        if key not in products:
            # a fresh compound per (shape, colour): OCCT 7.9 writes the colour of a
            # compound product but not of a bare solid. STEP styles attach to the geometry,
            # so a second colour of the same shape needs a copy of the geometry.
            shape = ps.shape
            if any(k[0] == key[0] for k in products):
                from OCP.BRepBuilderAPI import BRepBuilderAPI_Copy
                shape = BRepBuilderAPI_Copy(shape).Shape()
            label = shapes.AddShape(as_compound(shape), False)
            name(label, part)
            r, g, bl = (min(max(float(c), 0.0), 1.0) for c in rgba[:3])
            alpha = float(rgba[3]) if len(rgba) > 3 else 1.0
            colors.SetColor(label, Quantity_ColorRGBA(Quantity_Color(r, g, bl, Quantity_TOC_sRGB), alpha),
                            XCAFDoc_ColorGen)
            products[key] = label
        component = shapes.AddComponent(top, products[key], _location(_pose(motion, b, part, t)))
        name(component, part)
    shapes.UpdateAssemblies()
    return doc, omitted, len(products)


def _write_document(doc, path):
    from OCP.IFSelect import IFSelect_ReturnStatus
    from OCP.STEPCAFControl import STEPCAFControl_Writer
    from OCP.STEPControl import STEPControl_StepModelType
    from OCP.XSControl import XSControl_WorkSession

    writer = STEPCAFControl_Writer(XSControl_WorkSession(), False)  # also initialises the statics
    with _interface_static({"write.step.unit": STEP_UNIT}), _quiet_occt():
        writer.SetColorMode(True)
        writer.SetNameMode(True)
        if not writer.Transfer(doc, STEPControl_StepModelType.STEPControl_AsIs):
            raise OutputError("OCCT could not translate the assembly to STEP", where=str(path))
        with atomic_path(path) as tmp:
            status = writer.Write(str(tmp))
            if status != IFSelect_ReturnStatus.IFSelect_RetDone:
                raise OutputError(f"OCCT failed to write STEP ({status})", where=str(path),
                                  hint="check free space and permissions")


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
