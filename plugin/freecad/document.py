"""A FreeCAD document as a mechanism: parts, joints and drivers read with FreeCAD's own API.

Runs inside FreeCAD (``import FreeCAD`` must work); numpy, scipy and sympy are the only
other modules needed. Geometry and mass properties come from FreeCAD's Part module.

Where the joints come from (the first source that has any):

1. **Assembly workbench** (FreeCAD 1.x): an ``Assembly::AssemblyObject`` with joints in
   its ``Assembly::JointGroup``. FreeCAD writes the document (``Document.saveCopy``) to a
   temporary ``.FCStd`` that :func:`cadmotion.importers.fcstd.read_fcstd` interprets with
   ``geometry=False`` (so the joint frames are exactly those of the FCStd importer); the
   parts are then bound to the live objects by their internal names and their mass
   properties are taken from FreeCAD's shapes. Part frames are the objects' ``Placement``
   relative to the assembly, and that is what is written back. FreeCAD 0.20 opening a
   1.x document loads the parts but not the assembly: the joints are then read from the
   document's saved file (:func:`saved_assembly`) and the poses from the open document.
2. **Workbench joints**: the ``App::FeaturePython`` objects made by
   :mod:`cadmotion.plugin.freecad.joints` (property ``CadmotionJoint``). Their parts are
   the mechanism's parts; a joint whose ``Part1`` is empty joins ``Part2`` to the world.
   Part frames are the objects' global placements.
3. **A model file beside the document**: ``<document>.cadmotion.toml`` (see
   :mod:`cadmotion.importers.modelfile`), naming parts by their FreeCAD ``Label``. Its
   ``step`` key is ignored (the parts are the document's), ``density``/``material`` of a
   part set its mass; geometry references (``axis = {part = ..., face = ...}``) need OCP
   and are not available inside FreeCAD.

Units: FreeCAD works in mm; every spec produced here is SI (m, kg, s, rad). The world
frame W is the document's global frame (the assembly's frame for source 1).
"""

from __future__ import annotations

import os
import tempfile
import warnings
from dataclasses import dataclass, field, replace
from typing import Dict, List

import numpy as np

from ...errors import MechanismError, ModelFileError
from ...importers.materials import part_density
from ...kernel.rotations import matrix_to_quaternion
from ...kernel.spec import DriverSpec, Frame, JointSpec, MechanismSpec, PartSpec
from .placements import MM, _app, global_placement, matrix_placement, placement_matrix, set_global_placement

__all__ = [
    "MM", "WORLD", "REQUIRED_MODULES", "missing_modules", "check_dependencies",
    "placement_matrix", "matrix_placement", "global_placement", "set_global_placement",
    "PartBinding", "DocumentModel", "document_spec", "shape_parts", "part_names",
    "mass_properties", "is_cadmotion_object", "workbench_joints", "assemblies", "saved_assembly", "sidecar_path",
    "report_error",
]

WORLD = "world"
"""Name of the fixed world part that joints with an empty ``Part1`` attach to."""

REQUIRED_MODULES = ("numpy", "scipy", "sympy")

# object types that only group other objects (descended into, never parts themselves)
_GROUP_TYPES = {"App::DocumentObjectGroup", "App::DocumentObjectGroupPython", "App::LinkGroup",
                "App::Part", "App::Origin"}
_SKIP_TYPES = {"App::Origin", "App::Line", "App::Plane", "App::Point", "Spreadsheet::Sheet",
               "App::TextDocument", "App::VarSet", "Assembly::JointGroup", "Assembly::ViewGroup",
               "Assembly::BomGroup", "Assembly::SimulationGroup", "Sketcher::SketchObject",
               "App::MaterialObjectPython"}


# --------------------------------------------------------------------------- environment
def missing_modules():
    """Names of the modules the kernel needs that this Python cannot import."""
    import importlib

    missing = []
    for name in REQUIRED_MODULES:
        try:
            importlib.import_module(name)
        except Exception:
            missing.append(name)
    return missing


def check_dependencies():
    """Raise :class:`CadmotionError` naming the missing modules and how to install them."""
    missing = missing_modules()
    if missing:
        from ...errors import CadmotionError

        raise CadmotionError(
            f"this FreeCAD's Python lacks {', '.join(missing)}, which cadmotion's solver needs",
            where="FreeCAD",
            hint="install them for FreeCAD's Python: on Debian/Ubuntu `apt-get install "
                 + " ".join(f"python3-{m}" for m in missing)
                 + "`; elsewhere `python -m pip install " + " ".join(missing)
                 + "` with FreeCAD's own python")


def report_error(exc, title="Cadmotion", dialog=True):
    """Print ``exc`` to FreeCAD's report view (and, with the GUI up, show a dialog); the text.

    cadmotion's own errors print their message (what, where, hint); anything else prints
    its type and message, with the traceback in the log.
    """
    import traceback

    from ...errors import CadmotionError

    App = _app()
    text = str(exc) if isinstance(exc, CadmotionError) else f"{type(exc).__name__}: {exc}"
    App.Console.PrintError(f"cadmotion: {text}\n")
    if not isinstance(exc, CadmotionError):
        App.Console.PrintLog("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    if dialog and getattr(App, "GuiUp", False):
        try:
            import FreeCADGui
            from PySide import QtGui

            QtGui.QMessageBox.critical(FreeCADGui.getMainWindow(), title, text)
        except Exception:
            pass
    return text


@dataclass
class PartBinding:
    """A mechanism part and the document object that shows it.

    ``frame`` is ``"global"`` (the part frame is the object's global placement) or
    ``"local"`` (its own ``Placement``, for parts of an Assembly-workbench assembly).
    """

    name: str
    obj: object
    frame: str = "global"

    def matrix(self):
        """X_WP (4x4, m) of the object as the document has it now."""
        plc = global_placement(self.obj) if self.frame == "global" else self.obj.Placement
        return placement_matrix(plc)

    def set_matrix(self, X):
        """Move the object so that its part frame is X (4x4, m)."""
        plc = matrix_placement(X)
        if self.frame == "global":
            set_global_placement(self.obj, plc)
        else:
            self.obj.Placement = plc


@dataclass
class DocumentModel:
    """What :func:`document_spec` found: the spec and the objects of its parts."""

    spec: MechanismSpec
    bindings: Dict[str, PartBinding]
    origin: str                       # "assembly", "saved-assembly", "workbench" or "sidecar"
    warnings: List[str] = field(default_factory=list)


# --------------------------------------------------------------------------- parts
def is_cadmotion_object(obj):
    """True for the workbench's own objects (joints, the stored motion, the panel's settings)."""
    props = getattr(obj, "PropertiesList", ())
    return "CadmotionJoint" in props or "CadmotionMotion" in props or "CadmotionSettings" in props


def _has_solids(obj):
    try:
        import Part

        shape = Part.getShape(obj, "", transform=False)
    except Exception:
        return False
    return shape is not None and not shape.isNull() and len(shape.Solids) > 0


def _is_link_array(obj):
    return obj.TypeId in ("App::Link", "App::LinkPython") and getattr(obj, "ElementCount", 0) > 0


def shape_parts(doc):
    """Objects that are rigid bodies with solid geometry, in tree order.

    Top-level objects are walked as FreeCAD's tree shows them; groups (``App::Part``,
    ``App::LinkGroup``, folders) are descended into, link arrays are expanded into their
    elements (``ShowElement`` must be on for the elements to exist as objects), and every
    other object whose shape has solids is one part.
    """
    out, seen = [], set()

    def visit(obj):
        if obj is None or obj.Name in seen or is_cadmotion_object(obj) or obj.TypeId in _SKIP_TYPES:
            return
        seen.add(obj.Name)
        if obj.TypeId in _GROUP_TYPES:
            children = list(getattr(obj, "Group", []) or [])
            if obj.TypeId == "App::LinkGroup":
                children = list(getattr(obj, "ElementList", []) or [])
            for child in children:
                visit(child)
            return
        if _is_link_array(obj):
            for child in getattr(obj, "ElementList", []) or []:
                visit(child)
            return
        if _has_solids(obj):
            out.append(obj)

    for obj in doc.Objects:
        inlist = [o for o in obj.InList if not is_cadmotion_object(o)]
        if not inlist:
            visit(obj)
    return out


def part_names(objs):
    """Object name -> part name: the Label, or the internal Name where labels repeat."""
    labels = [o.Label for o in objs]
    return {o.Name: (o.Label if labels.count(o.Label) == 1 and o.Label != WORLD else o.Name) for o in objs}


def mass_properties(obj, density=1000.0):
    """(mass kg, com m in the object's frame, inertia kg m^2 about the com) of its solids.

    ``(None, (0, 0, 0), None)`` when the object has no solid volume.
    """
    import Part

    shape = Part.getShape(obj, "", transform=False)
    solids = [s for s in shape.Solids if abs(s.Volume) > 1e-12]
    if not solids:
        return None, (0.0, 0.0, 0.0), None
    vols = np.array([abs(s.Volume) for s in solids]) * MM**3
    coms = np.array([[s.CenterOfMass.x, s.CenterOfMass.y, s.CenterOfMass.z] for s in solids]) * MM
    V = vols.sum()
    com = (vols[:, None] * coms).sum(axis=0) / V
    J = np.zeros((3, 3))
    for s, v, c in zip(solids, vols, coms):
        m = s.MatrixOfInertia  # about the solid's centre of mass, unit density, mm^5
        I = np.array([[m.A11, m.A12, m.A13], [m.A21, m.A22, m.A23], [m.A31, m.A32, m.A33]]) * MM**5
        if s.Volume < 0:
            I = -I
        d = c - com
        J += I + v * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
    rho = float(density)
    return float(rho * V), tuple(map(float, com)), tuple(tuple(map(float, r)) for r in rho * J)


def _color(obj):
    vo = getattr(obj, "ViewObject", None)
    try:
        c = vo.ShapeColor if vo is not None else None
    except Exception:
        c = None
    return tuple(float(x) for x in c[:3]) if c else None


def _local_shape(obj):
    import Part

    try:
        return Part.getShape(obj, "", transform=False)
    except Exception:
        return None


def _part_spec(binding, density, fixed=False):
    X = binding.matrix()
    mass, com, inertia = mass_properties(binding.obj, density)
    return PartSpec(
        name=binding.name, fixed=fixed, position=tuple(map(float, X[:3, 3])),
        orientation=tuple(map(float, matrix_to_quaternion(X[:3, :3]))), mass=mass, com=com,
        inertia=inertia, color=_color(binding.obj), shape=_local_shape(binding.obj),
        path=binding.obj.FullName if hasattr(binding.obj, "FullName") else binding.obj.Name,
        source=f"{binding.obj.Document.Name}: {binding.obj.Label} ({binding.obj.Name}, {binding.obj.TypeId})")


def _world_part():
    return PartSpec(name=WORLD, fixed=True, source="the document's global frame")


# --------------------------------------------------------------------------- sources
def workbench_joints(doc):
    """The workbench's joint objects of ``doc`` (see :mod:`.joints`), in document order."""
    return [o for o in doc.Objects if "CadmotionJoint" in getattr(o, "PropertiesList", ())]


def assemblies(doc):
    """Assembly-workbench assemblies (FreeCAD 1.x) that hold at least one joint."""
    out = []
    for o in doc.Objects:
        if o.TypeId != "Assembly::AssemblyObject":
            continue
        groups = [g for g in getattr(o, "Group", []) if g.TypeId == "Assembly::JointGroup"]
        if any("JointType" in j.PropertiesList or "ObjectToGround" in j.PropertiesList
               for g in groups for j in g.Group):
            out.append(o)
    return out


def sidecar_path(doc):
    """``<document>.cadmotion.toml`` beside the document's file, or None if it has no file."""
    fname = getattr(doc, "FileName", "") or ""
    if not fname:
        return None
    base = os.path.splitext(fname)[0]
    return base + ".cadmotion.toml"


def document_spec(doc, *, drivers=(), density=1000.0, sidecar=None, units="mm"):
    """Read ``doc`` into a mechanism, from the first joint source it has (see the module doc).

    Parameters
    ----------
    doc : FreeCAD document
    drivers : sequence of DriverSpec or dicts like a model file's ``[[drivers]]`` entries
        (``{"joint": "crank", "expression": "2*pi*t"}``; angles in rad, lengths in
        ``units``); added to the drivers the document itself defines (a driver for a
        joint that already has one replaces it). Drivers typed in the task panel and
        saved in the document (:mod:`.settings`) replace the document's own first.
    density : kg/m^3, a material name, or a mapping part name -> either.
    sidecar : path of a model file to use when the document has no joints; default
        :func:`sidecar_path`.
    units : length unit of ``drivers`` given as dicts (model-file unit names).

    Returns
    -------
    DocumentModel

    Raises
    ------
    MechanismError
        No solid in the document, no joints from any source, a joint that refers to a
        deleted object or to something without solids.
    CadImportError, ModelFileError
        An assembly or model file that cannot be read.
    """
    parts = shape_parts(doc)
    if not parts and not assemblies(doc):
        raise MechanismError(f"the document {doc.Label!r} has no solid parts to simulate",
                             where=doc.FileName or doc.Name,
                             hint="import or model solids (a STEP assembly, Part or PartDesign bodies) first")
    if assemblies(doc):
        model = _assembly_model(doc, assemblies(doc)[0], density)
    elif saved_assembly(doc):
        model = _saved_assembly_model(doc, density)
    elif workbench_joints(doc):
        model = _workbench_model(doc, density)
    else:
        path = sidecar or sidecar_path(doc)
        if path is None or not os.path.isfile(path):
            raise MechanismError(
                f"the document {doc.Label!r} has no joints", where=doc.FileName or doc.Name,
                hint="add joints with the Cadmotion workbench (select two parts and an edge or face), "
                     "or write a model file "
                     + (repr(os.path.basename(path)) if path else "'<document>.cadmotion.toml'")
                     + " beside the document")
        model = _sidecar_model(doc, parts, path, density)
    model = _with_panel_drivers(doc, model)
    if drivers:
        model = replace(model, spec=_with_drivers(model.spec, drivers, units))
    return model


def _with_panel_drivers(doc, model):
    """The model with the drivers typed in the task panel and saved in the document."""
    from .settings import apply_drivers, read_settings

    stored = read_settings(doc)
    if stored is None or not stored.drivers:
        return model
    spec, notes = apply_drivers(model.spec, stored.drivers)
    return replace(model, spec=spec, warnings=list(model.warnings) + notes)


def _with_drivers(spec, drivers, units):
    from ...importers.modelfile import UNITS, parse_model

    extra = []
    dicts = []
    for d in drivers:
        if isinstance(d, DriverSpec):
            extra.append(d)
        elif isinstance(d, dict):
            dicts.append(d)
        else:
            raise MechanismError(f"a driver must be a DriverSpec or a dict, got {type(d).__name__}")
    if dicts:
        if units not in UNITS:
            raise ModelFileError(f"unknown length unit {units!r}", hint=f"use one of {', '.join(UNITS)}")
        data = {"units": units, "parts": {"_": {}}, "drivers": dicts}
        from ...kernel.symbolic.templates import TEMPLATES

        types = {j.name: j.type for j in spec.joints}
        for d in parse_model(data, source="drivers").drivers:
            if d.joint is not None and d.coordinate is None and d.joint in types:
                measures = TEMPLATES[types[d.joint]].measures if types[d.joint] in TEMPLATES else ()
                if measures:
                    scale = UNITS[units] if measures[0] == "disp" else 1.0
                    fn = replace(d.function, scale=scale)
                    d = replace(d, coordinate=measures[0], function=fn)
            extra.append(d)
    names = {j.name for j in spec.joints}
    pnames = {p.name for p in spec.parts}
    for d in extra:
        if d.joint is not None and d.joint not in names:
            raise MechanismError(f"driver {d.name!r} names the joint {d.joint!r}, which the mechanism "
                                 "does not have", hint="joints: " + ", ".join(sorted(names)))
        if d.part is not None and d.part not in pnames:
            raise MechanismError(f"driver {d.name!r} names the part {d.part!r}, which the mechanism "
                                 "does not have", hint="parts: " + ", ".join(sorted(pnames)))
    replaced = {(d.joint, d.coordinate) for d in extra if d.joint} | {(d.part, d.coordinate) for d in extra if d.part}
    kept = [d for d in spec.drivers
            if (d.joint or d.part, d.coordinate) not in replaced and not (d.joint and (d.joint, None) in replaced)]
    return replace(spec, drivers=tuple(kept) + tuple(extra))


# -- 1. Assembly workbench -------------------------------------------------------------
def _read_assembly(path, assembly, label, where):
    from ...importers.fcstd import read_fcstd

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            spec = read_fcstd(path, geometry=False, assembly=assembly)
        except ImportError as exc:  # Distance joints need OCP to classify elements
            raise MechanismError(
                f"the assembly {label!r} has a joint that needs OCP to interpret ({exc})", where=where,
                hint="replace Distance joints by Revolute/Slider/... joints, or run "
                     "`cadmotion run` on the saved .FCStd outside FreeCAD") from None
    return spec, [str(w.message) for w in caught]


def _bind_assembly(doc, spec, asm_name, density, notes, live_poses=False, origin="assembly"):
    """Bind the parts of an Assembly spec to the document's objects by internal name.

    ``live_poses`` takes each part's initial pose from its object's Placement (the
    document in memory) instead of the file the spec was read from.
    """
    bindings, parts = {}, []
    for p in spec.parts:
        objname = p.path.rsplit("/", 1)[-1]
        obj = doc.getObject(objname) if objname != asm_name else None
        if obj is None or not _has_solids(obj):
            parts.append(p)  # the assembly's own frame (ground): nothing to move
            continue
        b = PartBinding(p.name, obj, "local")
        bindings[p.name] = b
        mass, com, inertia = mass_properties(obj, part_density(density, p.name))
        pose = {}
        if live_poses:
            X = b.matrix()
            pose = dict(position=tuple(float(v) for v in X[:3, 3]),
                        orientation=tuple(float(v) for v in matrix_to_quaternion(X[:3, :3])))
        parts.append(replace(p, mass=mass, com=com, inertia=inertia, color=_color(obj),
                             shape=_local_shape(obj), **pose))
    spec = replace(spec, parts=tuple(parts), source=doc.FileName or doc.Name)
    return DocumentModel(spec, bindings, origin, notes)


def _assembly_model(doc, asm, density):
    fd, tmp = tempfile.mkstemp(suffix=".FCStd", prefix="cadmotion-")
    os.close(fd)
    try:
        doc.saveCopy(tmp)
        spec, notes = _read_assembly(tmp, asm.Name, asm.Label, doc.FileName or doc.Name)
    finally:
        os.unlink(tmp)
    return _bind_assembly(doc, spec, asm.Name, density, notes)


def saved_assembly(doc):
    """True when the document's file holds Assembly-workbench objects this FreeCAD did not load.

    FreeCAD 0.20 opens a 1.x Assembly document with its parts but without the
    ``Assembly::AssemblyObject`` (an unknown type there) and with the joints' proxies
    blocked; the joints are still in the file, where
    :func:`cadmotion.importers.fcstd.read_fcstd` reads them.
    """
    import zipfile

    fname = getattr(doc, "FileName", "") or ""
    if assemblies(doc) or not os.path.isfile(fname):
        return False
    try:
        with zipfile.ZipFile(fname) as zf:
            return b'type="Assembly::AssemblyObject"' in zf.read("Document.xml")
    except (OSError, KeyError, zipfile.BadZipFile):
        return False


def _saved_assembly_model(doc, density):
    spec, notes = _read_assembly(doc.FileName, None, doc.Label, doc.FileName)
    notes.append("joints read from the saved file (this FreeCAD has no Assembly workbench); "
                 "part poses from the open document")
    return _bind_assembly(doc, spec, None, density, notes, live_poses=True, origin="saved-assembly")


# -- 2. workbench joint objects --------------------------------------------------------
def _workbench_model(doc, density):
    from .joints import joint_markers, joint_driver

    joints = [j for j in workbench_joints(doc) if getattr(j, "Enabled", True)]
    if not joints:
        raise MechanismError(f"every joint of the document {doc.Label!r} is disabled",
                             where=doc.FileName or doc.Name, hint="enable at least one joint")
    used, order = {}, []
    resolved = []
    for j in joints:
        (o1, X1), (o2, X2) = joint_markers(j)
        resolved.append((j, o1, X1, o2, X2))
        for o in (o1, o2):
            if o is not None and o.Name not in used:
                used[o.Name] = o
                order.append(o)
    names = part_names(order)
    bindings = {names[o.Name]: PartBinding(names[o.Name], o, "global") for o in order}
    fixed_objs = {o2.Name for j, o1, _, o2, _ in resolved if o1 is None and j.Type == "fixed"}
    parts = []
    world_used = any(o1 is None for _, o1, _, _, _ in resolved)
    if world_used:
        parts.append(_world_part())
    for o in order:
        b = bindings[names[o.Name]]
        if not _has_solids(o):
            raise MechanismError(f"the object {o.Label!r} ({o.Name}) that a joint names has no solid",
                                 where=doc.FileName or doc.Name,
                                 hint="joints connect solid parts; pick the part's body or feature")
        parts.append(_part_spec(b, part_density(density, b.name), fixed=o.Name in fixed_objs))
    specs, drivers = [], []
    jnames = set()
    for j, o1, X1, o2, X2 in resolved:
        if o1 is None and j.Type == "fixed":
            continue  # grounding: the part is fixed instead
        name = j.Label if j.Label not in jnames else j.Name
        jnames.add(name)
        p1 = WORLD if o1 is None else names[o1.Name]
        p2 = names[o2.Name]
        if p1 == p2:
            raise MechanismError(f"joint {j.Label!r} connects {p1!r} to itself", where=j.Name)
        specs.append(JointSpec(name=name, type=j.Type, parts=(p1, p2),
                               markers=(_frame(X1), _frame(X2)), params=_params(j),
                               source=f"{doc.Name}: {j.Label} ({j.Name})"))
        d = joint_driver(j, name)
        if d is not None:
            drivers.append(d)
    spec = MechanismSpec(parts=tuple(parts), joints=tuple(specs), drivers=tuple(drivers),
                         name=doc.Label, source=doc.FileName or doc.Name)
    return DocumentModel(spec, bindings, "workbench")


def _frame(X):
    return Frame(tuple(float(v) for v in X[:3, 3]), tuple(tuple(float(v) for v in r) for r in X[:3, :3]))


def _params(j):
    params = []
    if j.Type == "screw":
        params.append(("pitch", float(getattr(j, "Pitch", 0.0)) * MM))
    return tuple(params)


# -- 3. model file beside the document ---------------------------------------------------
def _sidecar_model(doc, parts, path, density):
    from ...importers.modelfile import UNITS, tomllib

    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ModelFileError(f"cannot read the model file: {exc.strerror}", where=path) from None
    except tomllib.TOMLDecodeError as exc:
        raise ModelFileError(f"TOML syntax error: {exc}", where=path) from None
    data = dict(data)
    data.pop("step", None)
    units = data.get("units", "m")
    scale = UNITS.get(units)
    if scale is None:
        raise ModelFileError(f"unknown length unit {units!r}", where=path,
                             hint=f"use one of {', '.join(UNITS)}")
    names = part_names(parts)
    by_name = {names[o.Name]: o for o in parts}
    by_name.update({o.Name: o for o in parts if o.Name not in by_name})
    table = {k: dict(v) for k, v in (data.get("parts") or {}).items() if isinstance(v, dict)}
    wanted = set(table)
    for j in data.get("joints") or []:
        if isinstance(j, dict):
            wanted.update(p for p in (j.get("parts") or []) if isinstance(p, str))
    for d in data.get("drivers") or []:
        if isinstance(d, dict) and isinstance(d.get("part"), str):
            wanted.add(d["part"])
    for f in data.get("forces") or []:
        if isinstance(f, dict):
            wanted.update(p for p in (f.get("parts") or []) if isinstance(p, str))
    wanted.update((data.get("initial_velocity") or {}).keys())
    bindings = {}
    for name in sorted(wanted):
        obj = by_name.get(name)
        entry = table.setdefault(name, {})
        if obj is None:
            if any(k in entry for k in ("position", "mass")) or entry.get("fixed"):
                continue  # a part the model file defines itself (e.g. a fixed ground)
            raise ModelFileError(f"part {name!r} is not in the document", where=path,
                                 hint="name parts by their FreeCAD label; the document has "
                                      + ", ".join(sorted(names.values())[:30]))
        rho = entry.pop("density", None)
        material = entry.pop("material", None)
        if material is not None:
            rho = material
        if rho is None:
            rho = data.get("density", data.get("material", part_density(density, name)))
        b = PartBinding(name, obj, "global")
        bindings[name] = b
        X = b.matrix()
        entry.setdefault("position", [float(v) / scale for v in X[:3, 3]])
        entry.setdefault("orientation", [float(v) for v in matrix_to_quaternion(X[:3, :3])])
        mass, com, inertia = mass_properties(obj, part_density({name: rho}, name))
        if mass is not None and "mass" not in entry:
            entry["mass"] = mass
            entry.setdefault("com", [float(v) / scale for v in com])
            I = np.asarray(inertia) / scale**2
            entry.setdefault("inertia", [I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])
    data.pop("density", None)
    data.pop("material", None)
    data["parts"] = table
    if not data.get("name"):
        data["name"] = doc.Label
    from ...importers.modelfile import parse_model

    spec = parse_model(data, source=path, base_dir=os.path.dirname(path))
    spec = replace(spec, parts=tuple(replace(p, shape=_local_shape(bindings[p.name].obj),
                                             color=p.color or _color(bindings[p.name].obj))
                                     if p.name in bindings else p for p in spec.parts))
    return DocumentModel(spec, bindings, "sidecar")
