"""Simulate a FreeCAD document and keep the result in it (headless or in the GUI).

>>> from cadmotion.plugin.freecad import simulate_document               # doctest: +SKIP
>>> run = simulate_document("crank.step", joints=[...], drivers=[...],   # doctest: +SKIP
...                         t_end=1.0, steps=50, at=0.25, save_as="crank.FCStd")

The motion is stored in the document as a hidden ``App::FeaturePython`` called
``CadmotionMotion`` (no Python proxy, so the document opens anywhere). Its properties,
all read-only in the property editor::

    Time                    FloatList, s, nt values
    PartNames               StringList, nb part names
    PartObjects             StringList, the internal names of their objects ("" for the world)
    PartFrames              StringList, "global" or "local" (see document.PartBinding)
    Positions               FloatList, m, nt x nb x 3, C order, world frame
    Quaternions             FloatList, nt x nb x 4 (w, x, y, z)
    Velocities, AngularVelocities, Accelerations, AngularAccelerations
                            FloatList, nt x nb x 3 (m/s, rad/s, m/s^2, rad/s^2)
    JointColumns            StringList, "<joint>.<angle|disp>"
    JointValues             FloatList, len(JointColumns) x nt (rad, m)
    Complete, Message       false / why, when the run stopped early
    Events                  StringList, "<kind> at t = <time, s> s: <message>"
    TEnd, Steps, Analysis   the run's settings
    ShownTime               the time the document's placements show

Placements: after a run the parts are placed at ``at`` (default: the first frame, the
assembled initial pose); :func:`show_time` places them at any other time (cubic Hermite
positions, slerp orientations between frames). Nothing in the document changes when
the simulation fails.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np

from ...errors import CadImportError, MechanismError, OutputError
from .document import (WORLD, DocumentModel, PartBinding, check_dependencies, document_spec,
                       shape_parts)

__all__ = ["simulate_document", "import_step", "DocumentRun", "store_motion", "load_motion",
           "show_time", "motion_object", "export_motion", "MOTION_OBJECT", "run_summary", "report_run"]

MOTION_OBJECT = "CadmotionMotion"

_ARRAYS = (("Positions", "position", 3), ("Quaternions", "quaternion", 4),
           ("Velocities", "velocity", 3), ("AngularVelocities", "angular_velocity", 3),
           ("Accelerations", "acceleration", 3), ("AngularAccelerations", "angular_acceleration", 3))


@dataclass
class DocumentRun:
    """The outcome of :func:`simulate_document`."""

    document: object                     # the FreeCAD document
    motion: object                       # cadmotion.kernel.Motion
    model: DocumentModel
    saved: Optional[str] = None          # the file written, if any
    timings: Dict[str, float] = field(default_factory=dict)

    @property
    def spec(self):
        """The mechanism description read from the document."""
        return self.model.spec


def _app():
    import FreeCAD

    return FreeCAD


def import_step(path, name=None):
    """A new document holding the STEP file's parts (FreeCAD's importer, merge off).

    Link arrays (several instances of one product) are shown as separate element objects,
    so each instance can be a part. Headless FreeCAD 0.20 crashes in
    ``Import.insert(path, doc)`` and with ``merge=True``; the document *name* and
    ``merge=False`` are used.
    """
    App = _app()
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise CadImportError("STEP file not found", where=path)
    with open(path, "rb") as fh:
        head = fh.read(64).lstrip(b"\xef\xbb\xbf").lstrip()
    if not head.startswith(b"ISO-10303-21"):
        raise CadImportError("not a STEP file (it does not start with 'ISO-10303-21;')", where=path)
    import Import

    stem = os.path.splitext(os.path.basename(path))[0]
    doc = App.newDocument(name or "".join(c if c.isalnum() else "_" for c in stem) or "cadmotion")
    try:
        Import.insert(path, doc.Name, merge=False)
    except Exception as exc:
        App.closeDocument(doc.Name)
        raise CadImportError(f"FreeCAD could not import the STEP file: {exc}", where=path) from None
    for obj in doc.Objects:
        if obj.TypeId in ("App::Link", "App::LinkPython") and getattr(obj, "ElementCount", 0) > 0:
            obj.ShowElement = True
    if not shape_parts(doc):
        App.closeDocument(doc.Name)
        raise CadImportError("the STEP file holds no solid", where=path,
                             hint="export solids (closed bodies) from the CAD system")
    return doc


def _by_label(doc, name, where):
    if name in (WORLD, "ground", None):
        return None
    hits = [o for o in doc.Objects if o.Label == name] or [o for o in [doc.getObject(name)] if o is not None]
    parts = {o.Name for o in shape_parts(doc)}
    hits = [o for o in hits if o.Name in parts] or hits
    if not hits:
        raise MechanismError(f"{where}: no part called {name!r} in the document",
                             hint="parts: " + ", ".join(o.Label for o in shape_parts(doc)[:30]))
    if len(hits) > 1:
        raise MechanismError(f"{where}: {len(hits)} objects are labelled {name!r}",
                             hint="use the internal names (" + ", ".join(o.Name for o in hits) + ")")
    return hits[0]


def add_joints(doc, joints, *, units="mm", fixed=()):
    """Create workbench joint objects from model-file style dicts.

    Each dict has ``type``, ``parts = [first, second]`` (labels or internal names;
    ``"world"`` for the global frame), ``origin`` and ``axis`` (global frame, ``units``),
    optional ``name``, ``xaxis``, ``driver`` (expression, rad or mm) and ``pitch``.
    ``fixed`` names parts to ground (a fixed joint to the world each).
    """
    from ...importers.modelfile import UNITS
    from .joints import make_joint

    if units not in UNITS:
        raise MechanismError(f"unknown length unit {units!r}", hint=f"use one of {', '.join(UNITS)}")
    to_mm = UNITS[units] / 1e-3
    made = []
    for name in fixed:
        obj = _by_label(doc, name, f"fixed part {name!r}")
        made.append(make_joint(doc, "fixed", None, obj, name=f"Ground_{obj.Name}"))
    for k, j in enumerate(joints):
        where = f"joint #{k + 1} {j.get('name', '')!r}"
        unknown = set(j) - {"name", "type", "parts", "origin", "axis", "xaxis", "driver", "pitch",
                            "driver_coordinate"}
        if unknown:
            raise MechanismError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        ps = j.get("parts")
        if not isinstance(ps, (list, tuple)) or len(ps) != 2:
            raise MechanismError(f"{where}: `parts` must name two parts")
        o1, o2 = (_by_label(doc, p, where) for p in ps)
        if o2 is None:
            o1, o2 = o2, o1
        origin = np.asarray(j.get("origin", (0, 0, 0)), float) * to_mm
        made.append(make_joint(doc, j.get("type", "revolute"), o1, o2, origin, j.get("axis", (0, 0, 1)),
                               xaxis=j.get("xaxis"), name=j.get("name"), driver=j.get("driver", ""),
                               driver_coordinate=j.get("driver_coordinate", "auto"),
                               pitch=float(j.get("pitch", 0.0)) * to_mm))
    return made


def _open(path_or_doc, joints, fixed, units):
    """(document, created, sidecar) for a document, an .FCStd path or a STEP path."""
    App = _app()
    if not isinstance(path_or_doc, (str, os.PathLike)):
        return path_or_doc, False, None
    path = os.path.abspath(os.fspath(path_or_doc))
    ext = os.path.splitext(path)[1].lower()
    if ext in (".step", ".stp"):
        doc = import_step(path)
        sidecar = os.path.splitext(path)[0] + ".cadmotion.toml"
        return doc, True, sidecar
    if ext == ".fcstd":
        if not os.path.isfile(path):
            raise CadImportError("no such file", where=path)
        for d in App.listDocuments().values():
            if os.path.abspath(d.FileName or "") == path:
                return d, False, None
        return App.openDocument(path), True, None
    raise CadImportError(f"cannot simulate a {ext or 'suffix-less'} file in FreeCAD", where=path,
                         hint="give a .FCStd or a STEP file, or a FreeCAD document")


def simulate_document(path_or_doc, *, t_end=None, steps=None, analysis="kinematic", joints=None,
                      drivers=(), fixed=(), units="mm", at=None, save_as=None, save=True,
                      density=1000.0, options=None, close=False, progress=None):
    """Simulate a FreeCAD document (or a STEP/.FCStd file), store the motion in it, save it.

    Parameters
    ----------
    path_or_doc : FreeCAD document, or the path of an ``.FCStd`` or STEP file. A STEP file
        is imported into a new document; its joints come from ``joints``/``fixed`` (made
        into workbench joint objects) or from ``<name>.cadmotion.toml`` beside it.
    t_end, steps : end time (s) and number of output intervals; default the model's
        settings, else 1 s and 100.
    analysis : "kinematic" (every DOF driven), "dynamic" (forward dynamics) or "inverse"
        (the driven motion with the driver efforts and joint reactions it takes).
    joints : model-file style dicts (see :func:`add_joints`), created as joint objects.
    drivers : DriverSpec or dicts like ``[[drivers]]`` entries (rad; lengths in ``units``).
    fixed : part labels to ground.
    at : time whose pose the document keeps (s); None: the first frame; "end": the last.
    save_as : file to save to. Default: the document's own file; for a STEP input the
        ``.FCStd`` beside it (never overwritten unless named here). A FreeCAD 1.x Assembly
        document opened in FreeCAD 0.20 needs ``save_as`` (or ``save=False``): 0.20 would
        save it without the assembly and its joints.
    save : False leaves the document unsaved.
    density : kg/m^3, material name or mapping part -> either.
    options : extra keyword arguments of the kernel's ``kinematics``/``simulate``.
    close : close the document after saving (documents opened here only).

    Returns
    -------
    DocumentRun

    Raises
    ------
    CadmotionError (and subclasses) with what went wrong; the document is then unchanged.
    """
    import time

    check_dependencies()
    tick = time.perf_counter()
    timings = {}
    doc, created, sidecar = _open(path_or_doc, joints, fixed, units)
    timings["open"] = time.perf_counter() - tick
    try:
        if joints or fixed:
            add_joints(doc, joints or (), units=units, fixed=fixed)
        tick = time.perf_counter()
        model = document_spec(doc, drivers=drivers, density=density,
                              sidecar=sidecar if sidecar and os.path.isfile(sidecar) else None,
                              units=units)
        timings["read"] = time.perf_counter() - tick
        if save and save_as is None and model.origin == "saved-assembly":
            raise OutputError("saving would overwrite the document without its Assembly and joints, which "
                              "this FreeCAD cannot load", where=doc.FileName,
                              hint="pass save_as= another file, or save=False")
        tick = time.perf_counter()
        motion = run_model(model.spec, t_end=t_end, steps=steps, analysis=analysis,
                           options=options, progress=progress)
        timings["simulate"] = time.perf_counter() - tick
        report_run(motion)
        store_motion(doc, motion, model, analysis=analysis)
        t_show = motion.time[0] if at is None else (motion.time[-1] if at == "end" else float(at))
        show_time(doc, t_show)
        saved = None
        if save:
            tick = time.perf_counter()
            saved = _save(doc, path_or_doc, save_as, created)
            timings["save"] = time.perf_counter() - tick
    except BaseException:
        if created and close:
            _app().closeDocument(doc.Name)
        raise
    if close and created:
        _app().closeDocument(doc.Name)
    return DocumentRun(doc, motion, model, saved, timings)


def run_model(spec, *, t_end=None, steps=None, analysis="kinematic", options=None, progress=None):
    """Compile and run a spec through the run service (:func:`~cadmotion.plugin.run_analysis.run_spec`):
    the kernel's Motion with ``spec`` attached. ``analysis``: kinematic, dynamic or inverse;
    ``options``: further keyword arguments of the kernel's solver."""
    from ..run_analysis import run_spec

    return run_spec(spec, analysis, t_end=t_end, steps=steps, progress=progress, solver_options=options).motion


_INFO_EVENTS = ("assembly", "stats")   # events that report, not warn


def run_summary(motion):
    """(one line on the frames, warnings): what a run or a stored motion says.

    A stop (lock-up, singular position, interruption) is one warning naming the time the
    analysis gave it (its event's time, the same as in its message); the last frame's
    time is said apart from it, so two times never read as the same thing.
    """
    m = motion
    text = f"{m.nt} frames, t = {m.time[0]:g} .. {m.time[-1]:g} s"
    if not m.complete:
        text += " (stopped early: the last frame is the last pose reached)"
    warnings = []
    for e in m.events:
        if e.kind in _INFO_EVENTS:
            text += f"\n{e.message}"
        else:
            warnings.append(e.message or f"{e.kind} at t = {e.time:.6g} s")
    if not m.complete and m.message and m.message not in warnings:
        warnings.append(m.message)
    return text, warnings


def report_run(motion):
    """Print the run's summary to FreeCAD's report view: a message, and a warning per stop."""
    App = _app()
    text, warnings = run_summary(motion)
    App.Console.PrintMessage(f"cadmotion: {text}\n")
    for w in warnings:
        App.Console.PrintWarning(f"cadmotion: {w}\n")


def _save(doc, source, save_as, created):
    """Save ``doc`` (see :func:`simulate_document`); the path written, or None.

    Without FreeCAD's GUI the file gets the view data the GUI needs to show its parts,
    kept from the file the document was opened from where the GUI saved it (:mod:`.guidoc`).
    """
    headless = not getattr(_app(), "GuiUp", False)
    previous = None
    if headless and doc.FileName and os.path.isfile(doc.FileName):
        from .guidoc import read_gui_data

        previous = read_gui_data(doc.FileName)     # the GUI's view data, which this save drops
    path = _save_file(doc, source, save_as)
    if path is not None and headless:
        from .guidoc import add_gui_document, document_visibility

        add_gui_document(path, document_visibility(doc), previous=previous)
    return path


def _save_file(doc, source, save_as):
    if save_as is not None:
        path = os.path.abspath(os.fspath(save_as))
        folder = os.path.dirname(path)
        if not os.path.isdir(folder):
            raise OutputError("the folder does not exist", where=path)
        doc.saveAs(path)
        return path
    if doc.FileName:
        doc.save()
        return doc.FileName
    if isinstance(source, (str, os.PathLike)):
        path = os.path.splitext(os.path.abspath(os.fspath(source)))[0] + ".FCStd"
        if os.path.exists(path):
            raise OutputError("will not overwrite an existing document", where=path,
                              hint="pass save_as= to choose the file (or the same name to overwrite)")
        doc.saveAs(path)
        return path
    return None


# --------------------------------------------------------------------------- storage
def motion_object(doc, create=False):
    """The document's ``CadmotionMotion`` object (None if it has none and not ``create``)."""
    obj = doc.getObject(MOTION_OBJECT)
    if obj is not None and "CadmotionMotion" in obj.PropertiesList:
        return obj
    for o in doc.Objects:
        if "CadmotionMotion" in o.PropertiesList:
            return o
    if not create:
        return None
    obj = doc.addObject("App::FeaturePython", MOTION_OBJECT)
    add = obj.addProperty
    add("App::PropertyBool", "CadmotionMotion", "Motion", "marks the stored cadmotion result")
    add("App::PropertyFloatList", "Time", "Motion", "output times, s")
    add("App::PropertyStringList", "PartNames", "Motion", "part names")
    add("App::PropertyStringList", "PartObjects", "Motion", "internal names of the parts' objects")
    add("App::PropertyStringList", "PartFrames", "Motion", "global or local placement per part")
    for prop, _, _ in _ARRAYS:
        add("App::PropertyFloatList", prop, "Motion", f"{prop}: nt x nb x k, C order, SI units, world frame")
    add("App::PropertyStringList", "JointColumns", "Motion", "joint coordinate columns")
    add("App::PropertyFloatList", "JointValues", "Motion", "joint coordinates, columns x nt (rad, m)")
    add("App::PropertyBool", "Complete", "Motion", "false: the run stopped early")
    add("App::PropertyString", "Message", "Motion", "why the run stopped")
    add("App::PropertyStringList", "Events", "Motion", "what the analysis noticed")
    add("App::PropertyFloat", "TEnd", "Settings", "end time, s")
    add("App::PropertyInteger", "Steps", "Settings", "output intervals")
    add("App::PropertyString", "Analysis", "Settings", "kinematic or dynamic")
    add("App::PropertyFloat", "ShownTime", "Settings", "time the placements show, s")
    for p in obj.PropertiesList:
        if obj.getGroupOfProperty(p) in ("Motion", "Settings"):
            obj.setEditorMode(p, 1)
    obj.setEditorMode("CadmotionMotion", 2)
    try:
        obj.Visibility = False
    except Exception:
        pass
    return obj


def store_motion(doc, motion, model, *, analysis="kinematic"):
    """Write ``motion`` into the document's ``CadmotionMotion`` object (made if missing)."""
    obj = motion_object(doc, create=True)
    nt, nb = motion.nt, len(motion.parts)
    obj.Time = [float(t) for t in motion.time]
    obj.PartNames = list(motion.parts)
    obj.PartObjects = [model.bindings[p].obj.Name if p in model.bindings else "" for p in motion.parts]
    obj.PartFrames = [model.bindings[p].frame if p in model.bindings else "" for p in motion.parts]
    for prop, attr, k in _ARRAYS:
        a = np.asarray(getattr(motion, attr), float).reshape(nt * nb * k)
        setattr(obj, prop, [float(v) for v in a])
    obj.JointColumns = [jc.column for jc in motion.joint_coordinates]
    obj.JointValues = [float(v) for jc in motion.joint_coordinates for v in jc.values]
    obj.Complete = bool(motion.complete)
    obj.Message = str(motion.message or "")
    obj.Events = [_event_text(e) for e in motion.events]
    obj.TEnd = float(motion.time[-1]) if nt else 0.0
    obj.Steps = max(nt - 1, 0)
    obj.Analysis = analysis
    return obj


def load_motion(doc):
    """(Motion, bindings) from the document's stored motion; (None, {}) if there is none.

    ``bindings`` maps part names to :class:`PartBinding` objects for the parts whose
    objects still exist.
    """
    from ...kernel.motion import JointCoordinate, Motion

    obj = motion_object(doc)
    if obj is None or not obj.Time:
        return None, {}
    t = np.array(obj.Time, float)
    nt, nb = len(t), len(obj.PartNames)
    arrays = {}
    for prop, attr, k in _ARRAYS:
        vals = np.array(getattr(obj, prop), float)
        if vals.size != nt * nb * k:
            raise MechanismError(f"the stored motion's {prop} has {vals.size} values, expected {nt * nb * k}",
                                 where=f"{doc.Name}: {obj.Name}", hint="simulate again")
        arrays[attr] = vals.reshape(nt, nb, k)
    jv = np.array(obj.JointValues, float).reshape(len(obj.JointColumns), nt) if obj.JointColumns else []
    jcs = [JointCoordinate(c.rsplit(".", 1)[0], c.rsplit(".", 1)[1], jv[i]) for i, c in enumerate(obj.JointColumns)]
    motion = Motion(time=t, parts=list(obj.PartNames), joint_coordinates=jcs, complete=bool(obj.Complete),
                    message=obj.Message, events=[_stored_event(text) for text in obj.Events], **arrays)
    bindings = {}
    frames = list(obj.PartFrames) + [""] * nb
    for name, objname, frame in zip(obj.PartNames, obj.PartObjects, frames):
        o = doc.getObject(objname) if objname else None
        if o is not None:
            bindings[name] = PartBinding(name, o, frame or "global")
    return motion, bindings


def _event_text(e):
    return f"{e.kind} at t = {e.time!r} s: {e.message}"


def _stored_event(text):
    """The Event of one ``Events`` entry (``"<kind> at t = <s> s: <message>"``)."""
    import re

    from ...kernel.motion import Event

    m = re.match(r"(\S+) at t = (\S+) s: (.*)\Z", text, re.DOTALL)
    if m is None:
        return Event("note", float("nan"), text)
    try:
        time = float(m.group(2))
    except ValueError:
        time = float("nan")
    return Event(m.group(1), time, m.group(3))


def show_time(doc, t, motion=None, bindings=None):
    """Place the parts at time ``t`` of the stored (or given) motion; returns the time shown."""
    if motion is None or bindings is None:
        motion, bindings = load_motion(doc)
    if motion is None:
        raise MechanismError(f"the document {doc.Label!r} holds no simulation result",
                             hint="simulate it first")
    t = float(np.clip(t, motion.time[0], motion.time[-1]))
    # parents before children, so a part inside another part is placed last
    order = sorted(bindings.values(), key=lambda b: len(getattr(b.obj, "Parents", []) and b.obj.Parents[0][1] or ""))
    for b in order:
        b.set_matrix(motion.pose(b.name, t))
    obj = motion_object(doc)
    if obj is not None:
        obj.ShownTime = t
    return t


# --------------------------------------------------------------------------- export
class _FreeCADMeshes:
    """MeshCache for FreeCAD shapes (mm, object frame) -> meshes in metres."""

    def __init__(self, tolerance=0.1):
        self.tolerance = tolerance
        self._meshes = {}
        self.tessellations = 0

    def get(self, shape):
        from ..writers.tessellate import Mesh

        key = id(shape)
        hit = self._meshes.get(key)
        if hit is not None and hit[0] is shape:
            return hit[1]
        mesh = None
        try:
            bb = shape.BoundBox
            tol = max(self.tolerance, 1e-3 * bb.DiagonalLength) if bb.isValid() else self.tolerance
            pts, tris = shape.tessellate(tol)
        except Exception:
            pts, tris = [], []
        if tris:
            P = np.array([[p.x, p.y, p.z] for p in pts], float) * 1e-3
            T = np.array(tris, np.int64)
            tri_pts = P[T]                                       # (ntri, 3, 3)
            n = np.cross(tri_pts[:, 1] - tri_pts[:, 0], tri_pts[:, 2] - tri_pts[:, 0])
            ln = np.linalg.norm(n, axis=1, keepdims=True)
            n = np.divide(n, ln, out=np.zeros_like(n), where=ln > 0)
            mesh = Mesh(tri_pts.reshape(-1, 3).astype(np.float32), np.repeat(n, 3, axis=0).astype(np.float32),
                        np.arange(3 * len(T), dtype=np.uint32).reshape(-1, 3))
        self.tessellations += 1
        self._meshes[key] = (shape, mesh)
        return mesh

    def __len__(self):
        return len(self._meshes)


def export_motion(motion, paths, *, plot=None, at=None, doc=None, bindings=None):
    """Write ``motion`` through cadmotion's writers from inside FreeCAD.

    ``.csv .json .png .svg`` go through :func:`cadmotion.plugin.writers.write_outputs`;
    ``.glb .gltf .html`` are tessellated with FreeCAD's Part module; ``.step``/``.stp``
    write the document's parts at time ``at`` with FreeCAD's STEP exporter (the document's
    placements are restored afterwards). Returns the list of files written.
    """
    from ..writers import check_outputs, write_outputs
    from ..writers.gltf import write_glb, write_gltf
    from ..writers.html import write_html
    from ..writers.scene import build_scene

    jobs = check_outputs(paths)
    written = []
    plain = [p for k, p in jobs if k in (".csv", ".json", ".png", ".svg")]
    if plain:
        written += write_outputs(motion, plain, plot=plot)
    meshes = [(k, p) for k, p in jobs if k in (".glb", ".gltf", ".html")]
    if meshes:
        scene = build_scene(motion, cache=_FreeCADMeshes())
        for k, p in meshes:
            fn = {".glb": write_glb, ".gltf": write_gltf}.get(k)
            written.append(fn(motion, p, scene=scene) if fn else write_html(motion, p, plot=plot, scene=scene))
    steps = [p for k, p in jobs if k in (".step", ".stp")]
    if steps:
        if doc is None or bindings is None:
            raise OutputError("a STEP export from FreeCAD needs the document", where=str(steps[0]))
        import Import

        t = motion.time[-1] if at is None else float(at)
        saved = {n: b.obj.Placement.copy() for n, b in bindings.items()}
        try:
            show_time(doc, t, motion, bindings)
            for p in steps:
                from ..writers.atomic import atomic_path

                with atomic_path(p) as tmp:
                    Import.export([b.obj for b in bindings.values()], str(tmp))
                written.append(p)
        finally:
            for n, b in bindings.items():
                b.obj.Placement = saved[n]
    from pathlib import Path

    return [Path(p) for p in written]
