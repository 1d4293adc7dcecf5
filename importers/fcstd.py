"""Read FreeCAD 1.x Assembly-workbench documents (``.FCStd``) without FreeCAD.

An ``.FCStd`` file is a zip archive: ``Document.xml`` lists the objects and their
properties, and each shape is stored as an OpenCASCADE BRep text file
(``<Object>.Shape.brp``).  This module reads the zip defensively (no path traversal, no
zip bombs, no XML entity tricks), interprets the Assembly workbench's objects and
returns a :class:`~cadmotion.kernel.spec.MechanismSpec` in SI units.

What is read
------------
* **The assembly**: the first ``Assembly::AssemblyObject`` that no other assembly
  contains (or the one named by ``assembly=``).  Its frame is cadmotion's world frame.
* **Parts**: the objects in the assembly's ``Group`` that carry a shape:
  ``Part::*`` features, ``PartDesign::Body``, ``App::Part`` containers, nested
  assemblies (taken as rigid) and ``App::Link`` to any of those.  Objects inside
  ``App::DocumentObjectGroup`` folders are included.  A part is named by its ``Label``
  (what FreeCAD shows in the tree) unless two parts share a label, in which case the
  internal ``Name`` is used; the internal name path is kept in ``PartSpec.path``.
* **The part frame is the object's** ``Placement`` **property** (mm and a quaternion in
  Document.xml), which is what FreeCAD shows and what its solver moves.  The ``.brp``
  file stores the shape *with* its location (the same placement, relative to the
  containing object), so the shape in the part frame is
  ``X_WP⁻¹ · brp_shape``.  For an ``App::Link`` the part frame is the link's own
  ``Placement`` and the shape is the linked object's shape in the linked object's frame
  (``LinkTransform = true`` keeps the linked object's placement on top).
* **Joints** (objects of the assembly's ``Assembly::JointGroup`` whose ``Proxy`` is
  ``JointObject.Joint``): ``Reference1/2`` name the moving part and the element
  (``"Crank.Edge10"``, ``"Link.Body.Face3"``), ``Placement1/2`` are the joint
  coordinate systems (JCS) relative to the object holding the element, with the
  attachment ``Offset1/2`` already applied, exactly what FreeCAD passes to
  OndselSolver.  The marker on the part is ``X_PM = X_P,holder · Placement1`` (identity
  ``X_P,holder`` when the element belongs to the part object itself).
* ``GroundedJoint`` objects (``ObjectToGround``) make their part ``fixed``.  A reference
  to the assembly's ``Origin`` or to a root-level datum attaches the joint to a fixed
  part named after the assembly (FreeCAD grounds those too).

Joint types (FreeCAD -> cadmotion)
----------------------------------
``Fixed`` -> fixed, ``Revolute`` -> revolute, ``Cylindrical`` -> cylindrical,
``Slider`` -> prismatic, ``Ball`` -> spherical, ``Parallel``, ``Perpendicular``,
``Angle`` (``Angle`` property, degrees; 0 becomes parallel), ``Distance`` (by the kind
and radius of the two elements, as FreeCAD's solver does: point-point -> distance,
point-line/cylinder-sphere -> point-line-distance, line-line/circle/cylinder ->
line-line-distance, plane-plane -> planar with the offset, point-plane -> point-on-plane,
line-plane -> line-in-plane, radii of circles, cylinders and spheres added; the table is
in :mod:`cadmotion.importers.fcstd_distance`; pairs FreeCAD only solves by its default
planar joint raise :class:`CadImportError`).
``Gears``, ``Belt``, ``RackPinion`` and ``Screw`` are lowered the way FreeCAD lowers
them onto OndselSolver (``GearJoint`` with radii ``Distance``/``Distance2``, a negative
second radius for a belt, ``RackPinionJoint`` with the pitch radius ``Distance``,
``ScrewJoint`` with the pitch ``Distance``) and then expressed as cadmotion couplers by
:func:`cadmotion.importers.asmt.ondsel_coupler`.

Markers are normalised as in the ``.asmt`` reader: a marker J whose z axis faces
marker I's is turned half a turn about its x axis (FreeCAD often saves revolute JCS that
way; the constraint is the same), and the frames are made to coincide at the initial pose
by turning marker J about z and moving it along the axis
(:func:`cadmotion.importers.asmt.zero_joint_coordinates`), so every joint coordinate
starts at zero.  The world position and axis of marker I are FreeCAD's JCS 1.

Limits: ``EnableLengthMin/Max`` with ``LengthMin/Max`` (mm) become ``disp`` limits of
sliders and cylindrical joints, ``EnableAngleMin/Max`` with ``AngleMin/Max`` (degrees)
``angle`` limits of revolute and cylindrical joints (a missing side is ±inf), shifted
to the coordinates that start at zero.

Deactivated joints (``Activated = false`` in FreeCAD 1.0, ``Suppressed = true`` later)
are skipped with a :class:`UserWarning` that names them, unless
``include_deactivated=True``.  Parts that no included joint connects to a grounded part
are not moved by FreeCAD; by default (``unconnected="fix"``) they become fixed, again
with a warning; ``unconnected="free"`` leaves them free.

When the saved pose does not satisfy a joint (FreeCAD's solver drops constraints it
finds redundant and can leave, e.g., revolute axes 0.02 rad apart when the geometry does
not close), a :class:`UserWarning` names the joints and the size of the violation.

Units: FreeCAD stores mm and degrees; everything is converted to m and rad.  Shapes are
scaled to metres too.  Mass properties use ``density`` (kg/m³, default 1000, or a
material name, or a mapping part name -> density or material name).

This module interprets the assembly; the file's layers are read by :mod:`.fcstd_archive`
(the zip, checked), :mod:`.fcstd_document` (Document.xml and placements),
:mod:`.fcstd_shapes` (the BReps, through :mod:`cadmotion.geometry`) and
:mod:`.fcstd_colours` (GuiDocument.xml); :mod:`.fcstd_distance` decides ``Distance`` joints.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from dataclasses import dataclass, replace
from typing import Dict, Optional

import numpy as np

from ..errors import CadImportError
from ..kernel.rotations import invert_pose
from ..kernel.spec import Frame, JointSpec, MechanismSpec, PartSpec
from .fcstd_archive import MAX_COMPRESSION_RATIO, MAX_MEMBER_BYTES, MAX_TOTAL_BYTES, Archive
from .fcstd_colours import part_color, view_colors
from .fcstd_distance import SUPPORTED_PAIRS, map_distance_joint
from .fcstd_document import GROUP_TYPES, MM, DocumentObject, parse_document, placement_pose
from .fcstd_shapes import BrepShapes, element_geometry, local_shape, mass_properties
from .materials import part_density
from .asmt import (align_axes, joint_violations, matrix_to_quaternion, ondsel_coupler,
                   zero_joint_coordinates)

__all__ = ["read_fcstd", "FREECAD_JOINT_TYPES", "MAX_MEMBER_BYTES", "MAX_TOTAL_BYTES",
           "MAX_COMPRESSION_RATIO"]


#: The order of FreeCAD 1.0's ``JointType`` enumeration (used when a file stores the
#: index without the list of names).
_DEFAULT_JOINT_ENUM = ("Fixed", "Revolute", "Cylindrical", "Slider", "Ball", "Distance",
                       "Parallel", "Perpendicular", "Angle", "RackPinion", "Screw", "Gears",
                       "Belt")

#: FreeCAD joint type -> cadmotion joint type (``Distance`` and couplers depend on data).
FREECAD_JOINT_TYPES = {
    "Fixed": "fixed", "Revolute": "revolute", "Cylindrical": "cylindrical",
    "Slider": "prismatic", "Ball": "spherical", "Parallel": "parallel",
    "Perpendicular": "perpendicular", "Angle": "angle", "Distance": "distance",
    "Gears": "gear", "Belt": "belt", "RackPinion": "rack-and-pinion",
    "Screw": "rack-and-pinion",
}

_SKIP_TYPES = {"Assembly::JointGroup", "Assembly::ViewGroup", "Assembly::BomGroup",
               "Assembly::SimulationGroup", "App::Origin", "Spreadsheet::Sheet",
               "App::TextDocument", "App::VarSet"}
_DATUM_TYPES = {"App::Origin", "App::Line", "App::Plane", "App::Point", "App::LocalCoordinateSystem",
                "App::DatumElement", "PartDesign::Plane", "PartDesign::Line", "PartDesign::Point",
                "PartDesign::CoordinateSystem", "Part::DatumPlane", "Part::DatumLine",
                "Part::DatumPoint"}
_BODY_SUBOBJECT = re.compile(
    r"^(Sketcher::|PartDesign::(Plane|Line|Point|CoordinateSystem)"
    r"|App::(Line|Plane|Point|Origin|LocalCoordinateSystem))")


def _to_frame(X):
    return Frame(tuple(float(v) for v in X[:3, 3]),
                 tuple(tuple(float(v) for v in row) for row in X[:3, :3]))


# --------------------------------------------------------------------------------------
# interpretation
# --------------------------------------------------------------------------------------
@dataclass
class _Part:
    name: str            # user-facing name
    obj: DocumentObject            # the object in the assembly
    X_WP: np.ndarray     # 4x4, metres
    path: str
    fixed: bool = False


class _Document:
    def __init__(self, arc, objects, assembly):
        self.arc = arc
        self.objects = objects
        self.file = arc.name
        self.assembly = self._pick_assembly(assembly)
        self.parts: Dict[str, _Part] = {}          # object name -> part
        self.ground: Optional[_Part] = None         # for references to datums / origin

    def where(self, item):
        return f"{self.file}: {item}"

    def obj(self, name):
        return self.objects.get(name)

    def _pick_assembly(self, wanted):
        asms = [o for o in self.objects.values() if o.type == "Assembly::AssemblyObject"]
        if not asms:
            raise CadImportError("the document has no Assembly (Assembly::AssemblyObject)",
                                 where=self.arc.path,
                                 hint="create the assembly with FreeCAD 1.x's Assembly workbench")
        if wanted is not None:
            for a in asms:
                if wanted in (a.name, a.label()):
                    return a
            raise CadImportError(f"no assembly called {wanted!r}; the document has "
                                 + ", ".join(a.label() for a in asms), where=self.arc.path)
        inner = {n for a in asms for n in a.links("Group")}
        top = [a for a in asms if a.name not in inner]
        if len(top) > 1:
            warnings.warn(f"{self.file}: {len(top)} assemblies; reading {top[0].label()!r} "
                          "(choose another with assembly=...)", stacklevel=4)
        return (top or asms)[0]

    # -- parts ------------------------------------------------------------------------
    def is_part_like(self, o):
        if o is None or o.type in _SKIP_TYPES or o.type in _DATUM_TYPES or o.type in GROUP_TYPES:
            return False
        if o.type in ("App::Link", "App::LinkPython"):
            return self.is_part_like(self.obj(o.link("LinkedObject")))
        if o.type in ("App::Part", "PartDesign::Body", "Assembly::AssemblyObject",
                      "Assembly::AssemblyLink"):
            return True
        return "Shape" in o.props and o.props["Shape"].get("type", "").startswith("Part::PropertyPartShape")

    def collect_parts(self):
        order = []

        def visit(names, prefix):
            for n in names:
                o = self.obj(n)
                if o is None:
                    continue
                if o.type in GROUP_TYPES:
                    visit(o.links("Group"), prefix)
                elif self.is_part_like(o) and n not in self.parts:
                    if o.type in ("Assembly::AssemblyObject", "Assembly::AssemblyLink"):
                        warnings.warn(f"{self.file}: the sub-assembly {o.label()!r} is taken as one "
                                      "rigid part", stacklevel=5)
                    X = placement_pose(o.prop("Placement"), self.where(f"part {o.label()}"))
                    self.parts[n] = _Part(o.label(), o, X, f"{prefix}/{n}")
                    order.append(n)

        visit(self.assembly.links("Group"), self.assembly.name)
        labels = [p.name for p in self.parts.values()]
        for p in self.parts.values():
            if labels.count(p.name) > 1:
                p.name = p.obj.name
        return order

    def ground_part(self):
        if self.ground is None:
            name = self.assembly.label()
            if any(p.name == name for p in self.parts.values()):
                name = f"{name} (ground)"
            self.ground = _Part(name, self.assembly, np.eye(4), self.assembly.name, fixed=True)
        return self.ground

    # -- references --------------------------------------------------------------------
    def resolve(self, joint, index):
        """(part, X_P_holder 4x4, holder object, element name) of Reference1/2."""
        item = f"joint {joint.label()} ({joint.name}), Reference{index}"
        ref = joint.props.get(f"Reference{index}")
        if ref is None or len(ref) == 0:
            return self._resolve_legacy(joint, index, item)
        xl = ref[0]
        if xl.get("file"):
            raise CadImportError(f"{item} points into another document ({xl.get('file')})",
                                 where=self.arc.path,
                                 hint="cadmotion reads single-document assemblies; merge the parts")
        subs = [s.get("value") for s in xl.iter("Sub")]
        root = xl.get("name")
        if not subs or root is None:
            raise CadImportError(f"{item} is empty", where=self.arc.path)
        names = [root] + subs[0].split(".")
        if self.assembly.name in names:
            names = names[names.index(self.assembly.name) + 1:]
        element = names[-1]
        chain = [n for n in names[:-1] if n]
        if not chain:
            raise CadImportError(f"{item} names no object ({subs[0]!r})", where=self.arc.path)
        # the moving part: the first object of the chain that is a part (groups skipped)
        k = 0
        while k < len(chain) and self.obj(chain[k]) is not None and \
                self.obj(chain[k]).type in GROUP_TYPES:
            k += 1
        if k == len(chain) or self.obj(chain[k]) is None:
            missing = chain[min(k, len(chain) - 1)]
            raise CadImportError(f"{item} refers to the object {missing!r}, which is not in the "
                                 "document", where=self.arc.path,
                                 hint="the part was deleted; edit or delete the joint in FreeCAD")
        first = self.obj(chain[k])
        if chain[k] in self.parts:
            part = self.parts[chain[k]]
        elif first.type in _DATUM_TYPES:
            return self.ground_part(), np.eye(4), first, element
        else:
            raise CadImportError(f"{item} refers to {first.label()!r} ({first.type}), which is not "
                                 "a part of the assembly", where=self.arc.path)
        # the holder: the object the element belongs to (FreeCAD's getObjFromRef).  Walk
        # down the path composing placements; a body (or a link to one) keeps its
        # features' elements in its own frame, sketches and datums have their own.
        X = np.eye(4)
        holder = part.obj
        for n in chain[k + 1:]:
            o = self.obj(n)
            if o is None:
                raise CadImportError(f"{item} refers to the object {n!r}, which is not in the "
                                     "document", where=self.arc.path)
            kind = self.target(holder).type
            if kind == "PartDesign::Body" and not _BODY_SUBOBJECT.match(o.type):
                break
            if holder is not part.obj and kind != "PartDesign::Body" and "Shape" in holder.props:
                break
            if o.prop("Placement") is not None:
                X = X @ placement_pose(o.prop("Placement"), self.where(item))
            holder = o
        return part, X, holder, element

    def target(self, obj, depth=0):
        """The object a link points to (through chains of links), or ``obj`` itself."""
        while obj.type in ("App::Link", "App::LinkPython") and depth < 20:
            nxt = self.obj(obj.link("LinkedObject"))
            if nxt is None:
                break
            obj, depth = nxt, depth + 1
        return obj

    def _resolve_legacy(self, joint, index, item):
        """Pre-1.0 development files: Part1/Object1/Element1 instead of Reference1."""
        pname, oname = joint.link(f"Part{index}"), joint.link(f"Object{index}")
        if pname is None:
            raise CadImportError(f"{item} is missing", where=self.arc.path)
        if pname not in self.parts:
            raise CadImportError(f"{item} refers to {pname!r}, which is not a part of the assembly",
                                 where=self.arc.path)
        part = self.parts[pname]
        holder = self.obj(oname) or part.obj
        X = np.eye(4)
        if holder is not part.obj and holder.prop("Placement") is not None:
            X = invert_pose(part.X_WP) @ placement_pose(holder.prop("Placement"), self.where(item))
        el = joint.prop(f"Element{index}")
        return part, X, holder, (el.get("value") if el is not None else "")


def _joint_type(joint, where):
    p = joint.props.get("JointType")
    if p is None:
        raise CadImportError("the joint has no JointType", where=where)
    integer = p.find("Integer")
    try:
        idx = int(integer.get("value"))
    except (AttributeError, TypeError, ValueError):
        raise CadImportError("malformed JointType", where=where) from None
    lst = p.find("CustomEnumList")
    names = [e.get("value") for e in lst.findall("Enum")] if lst is not None else list(_DEFAULT_JOINT_ENUM)
    if not 0 <= idx < len(names):
        raise CadImportError(f"JointType index {idx} is out of range", where=where)
    return names[idx]


def _is_active(joint):
    if joint.boolean("Suppressed", False):
        return False
    return joint.boolean("Activated", True)


# --------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------


def _ocp_installed(path):
    """True when OCP can be imported; else a warning that the shapes are left out."""
    from ..geometry import ocp_available

    if not ocp_available():
        warnings.warn(f"{path}: OCP is not installed, the parts are read without their shapes (no mass "
                      f"properties; placeholders in the views); for them: pip install \"cadmotion[cad]\"",
                      stacklevel=3)
        return False
    return True


def read_fcstd(path, *, include_deactivated=False, geometry=None, density=1000.0,
               assembly=None, unconnected="fix"):
    """Read a FreeCAD 1.x Assembly-workbench document into a :class:`MechanismSpec`.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.FCStd`` file.
    include_deactivated : bool
        Also import joints that are deactivated in FreeCAD (``Activated = false`` /
        ``Suppressed = true``).  By default they are skipped and a :class:`UserWarning`
        lists them.
    geometry : bool
        Read the parts' BRep shapes (needs OCP) and fill ``PartSpec.shape`` (a
        ``TopoDS_Shape`` in the part frame, metres) and the mass properties.  With
        ``False`` no BRep is read and OCP is only imported for ``Distance`` joints.
        None (default): True when OCP is installed (the ``cad`` extra), else False with
        a warning.
    density : float, str or dict
        kg/m³ for every part, a material name (see :mod:`cadmotion.importers.materials`),
        or a mapping part name -> density or material (default 1000 for parts not named).
    assembly : str, optional
        Name or label of the assembly to read when the document holds several.
    unconnected : {"fix", "free"}
        What to do with parts that no imported joint links to a grounded part: FreeCAD
        leaves them where they are, which ``"fix"`` reproduces (with a warning).

    Returns
    -------
    MechanismSpec
        Parts with their initial poses (m, unit quaternions; world = assembly frame),
        ``fixed`` for grounded parts, mass (kg), centre of mass (m, part frame) and
        inertia about it (kg m², part axes) when ``geometry``; joints with markers
        ``X_PM`` in the part frames; no drivers; zero gravity (FreeCAD stores none).

    Raises
    ------
    CadImportError
        Unsafe or broken archive, missing Document.xml, no assembly, a joint that refers
        to a missing object or that cadmotion cannot express (the message names the
        joint), unreadable BRep.
    """
    if unconnected not in ("fix", "free"):
        raise ValueError("unconnected must be 'fix' or 'free'")
    if geometry is None:
        geometry = _ocp_installed(path)
    arc = Archive(path)
    try:
        return _read(arc, include_deactivated, geometry, density, assembly, unconnected)
    finally:
        arc.close()


def _read(arc, include_deactivated, geometry, density, assembly, unconnected):
    objects = parse_document(arc)
    doc = _Document(arc, objects, assembly)
    order = doc.collect_parts()
    geo = BrepShapes(arc)

    group = [doc.obj(n) for n in doc.assembly.links("Group")]
    jgroups = [o for o in group if o is not None and o.type == "Assembly::JointGroup"]
    joint_objs = [doc.obj(n) for g in jgroups for n in g.links("Group")]
    joint_objs = [o for o in joint_objs if o is not None]

    # grounded parts
    for o in joint_objs:
        if "ObjectToGround" in o.props:
            target = o.link("ObjectToGround")
            if target is None or not _is_active(o):
                continue
            if target not in doc.parts:
                raise CadImportError(f"grounded joint {o.label()} grounds {target!r}, which is not a "
                                     "part of the assembly", where=arc.path)
            doc.parts[target].fixed = True

    skipped, specs, coupler_objs = [], [], []
    names_used = set()
    for o in joint_objs:
        if "ObjectToGround" in o.props or "JointType" not in o.props:
            continue
        label = o.label()
        jname = label if label not in names_used else o.name
        names_used.add(jname)
        item = f"joint {label} ({o.name})"
        where = doc.where(item)
        if not _is_active(o) and not include_deactivated:
            skipped.append(label)
            continue
        jtype = _joint_type(o, where)
        if jtype not in FREECAD_JOINT_TYPES:
            raise CadImportError(f"joint {label} has the type {jtype!r}, which cadmotion cannot import",
                                 where=where, hint="supported: " + ", ".join(FREECAD_JOINT_TYPES))
        sides = []
        for k in (1, 2):
            part, X_PH, holder, element = doc.resolve(o, k)
            plc = placement_pose(o.prop(f"Placement{k}"), f"{where}, Placement{k}")
            sides.append((part, X_PH @ plc, holder, element))
        if sides[0][0] is sides[1][0]:
            raise CadImportError(f"joint {label} connects {sides[0][0].name} to itself", where=where)
        src = f"{arc.name}: {label} ({o.name}, {jtype})"
        if jtype in ("Gears", "Belt", "RackPinion", "Screw"):
            coupler_objs.append((o, jname, jtype, sides, src, where))
            continue
        spec = _simple_joint(doc, geo, o, jname, jtype, sides, src, where)
        specs.append(spec)

    parts_all = [doc.parts[n] for n in order] + ([doc.ground] if doc.ground is not None else [])
    pose = {p.name: (p.X_WP[:3, :3], p.X_WP[:3, 3]) for p in parts_all}
    fixed = {p.name for p in parts_all if p.fixed}
    for o, jname, jtype, sides, src, where in coupler_objs:
        specs.append(_coupler(doc, o, jname, jtype, sides, src, where, specs, pose, fixed))

    if skipped:
        warnings.warn(f"{arc.name}: skipped {len(skipped)} deactivated joint(s): "
                      + ", ".join(skipped) + " (read_fcstd(..., include_deactivated=True) imports them)",
                      stacklevel=3)

    # parts not connected to ground
    if fixed:
        adj = {p.name: set() for p in parts_all}
        for j in specs:
            if len(j.parts) == 2:
                adj[j.parts[0]].add(j.parts[1])
                adj[j.parts[1]].add(j.parts[0])
        seen, stack = set(fixed), list(fixed)
        while stack:
            for q in adj[stack.pop()]:
                if q not in seen:
                    seen.add(q)
                    stack.append(q)
        loose = [p for p in parts_all if p.name not in seen]
        if loose and unconnected == "fix":
            for p in loose:
                p.fixed = True
            warnings.warn(f"{arc.name}: {len(loose)} part(s) not connected to a grounded part are "
                          "fixed where they are (as FreeCAD leaves them): "
                          + ", ".join(p.name for p in loose), stacklevel=3)
    else:
        warnings.warn(f"{arc.name}: no part is grounded (FreeCAD would not solve this assembly)",
                      stacklevel=3)

    colors = view_colors(arc)
    part_specs = []
    for p in parts_all:
        mass = inertia = shape = None
        com = (0.0, 0.0, 0.0)
        if geometry and p is not doc.ground:
            shape = local_shape(doc, geo, p.obj)
            if shape is not None:
                mass, com, inertia = mass_properties(shape, part_density(density, p.name))
        part_specs.append(PartSpec(
            name=p.name, fixed=p.fixed, position=tuple(float(v) for v in p.X_WP[:3, 3]),
            orientation=matrix_to_quaternion(p.X_WP[:3, :3]), mass=mass, com=com,
            inertia=inertia, shape=shape, path=p.path, color=part_color(doc, colors, p.obj),
            source=f"{arc.name}: {p.obj.label()} ({p.obj.name}, {p.obj.type})"))
    spec = MechanismSpec(parts=tuple(part_specs), joints=tuple(specs),
                         name=os.path.splitext(arc.name)[0], source=arc.path)
    bad = joint_violations(spec, tol=1e-6)
    if bad:
        warnings.warn(f"{arc.name}: the saved pose does not satisfy "
                      + "; ".join(f"{j} ({w} {v:.3g})" for j, w, v in bad)
                      + ". FreeCAD's solver drops constraints it finds redundant and can leave "
                      "such a pose; cadmotion has to assemble the parts first and may find the "
                      "joints incompatible.", stacklevel=3)
    return spec


def _limits(o, jtype):
    lims = []
    if jtype in ("Slider", "Cylindrical"):
        lo = o.real("LengthMin") if o.boolean("EnableLengthMin", False) else None
        hi = o.real("LengthMax") if o.boolean("EnableLengthMax", False) else None
        if lo is not None or hi is not None:
            lo = -math.inf if lo is None else lo * MM
            hi = math.inf if hi is None else hi * MM
            lims.append(("disp", (min(lo, hi), max(lo, hi))))
    if jtype in ("Revolute", "Cylindrical"):
        lo = o.real("AngleMin") if o.boolean("EnableAngleMin", False) else None
        hi = o.real("AngleMax") if o.boolean("EnableAngleMax", False) else None
        if lo is not None or hi is not None:
            lo = -math.inf if lo is None else math.radians(lo)
            hi = math.inf if hi is None else math.radians(hi)
            lims.append(("angle", (min(lo, hi), max(lo, hi))))
    return tuple(lims)


def _simple_joint(doc, geo, o, jname, jtype, sides, src, where):
    (p1, X1, h1, e1), (p2, X2, h2, e2) = sides
    ktype = FREECAD_JOINT_TYPES[jtype]
    params = ()
    if jtype == "Angle":
        ang = o.real("Angle")
        ang = abs(math.radians(ang if ang is not None else o.real("Distance", 0.0)))
        if math.fmod(ang, 2 * math.pi) < 1e-7:
            ktype = "parallel"
        else:
            params = (("angle", ang),)
    elif jtype == "Distance":
        dist = o.real("Distance", 0.0) * MM
        k1, r1 = element_geometry(doc, geo, h1, e1, f"joint {o.label()}")
        k2, r2 = element_geometry(doc, geo, h2, e2, f"joint {o.label()}")
        mapped = map_distance_joint(k1, r1, k2, r2, dist)
        if mapped is None:
            raise CadImportError(
                f"joint {o.label()} is a Distance joint between a {k1 or 'whole object'} and a "
                f"{k2 or 'whole object'} (distance {dist / MM:g} mm); FreeCAD solves such a pair "
                "as a planar joint between the two JCS, which does not follow from the geometry, "
                "so cadmotion does not import it", where=where,
                hint="reference elements of these pairs: " + ", ".join(SUPPORTED_PAIRS))
        if mapped.swap:  # FreeCAD's ranking puts this element on marker I
            (p1, X1), (p2, X2) = (p2, X2), (p1, X1)
        ktype = mapped.type
        if mapped.length is not None:
            params = (("length", mapped.length),)
        if mapped.offset:
            X1 = X1.copy()
            X1[:3, 3] += mapped.offset * X1[:3, 2]
        src = f"{src}, {mapped.freecad}"
    R2 = align_axes(ktype, p1.X_WP[:3, :3] @ X1[:3, :3], p2.X_WP[:3, :3] @ X2[:3, :3], X2[:3, :3])
    (R1, o1), (R2, o2), offsets = zero_joint_coordinates(
        ktype, (p1.X_WP[:3, :3], p1.X_WP[:3, 3]), (X1[:3, :3], X1[:3, 3]),
        (p2.X_WP[:3, :3], p2.X_WP[:3, 3]), (R2, X2[:3, 3]))
    limits = tuple((c, (lo - offsets.get(c, 0.0), hi - offsets.get(c, 0.0)))
                   for c, (lo, hi) in _limits(o, jtype))
    return JointSpec(name=jname, type=ktype, parts=(p1.name, p2.name),
                     markers=(Frame(tuple(map(float, o1)), tuple(tuple(map(float, r)) for r in R1)),
                              Frame(tuple(map(float, o2)), tuple(tuple(map(float, r)) for r in R2))),
                     params=params, limits=limits, source=src)


def _coupler(doc, o, jname, jtype, sides, src, where, specs, pose, fixed):
    (p1, X1, _, _), (p2, X2, _, _) = sides
    d1 = o.real("Distance", 0.0) * MM
    d2 = o.real("Distance2", 0.0) * MM
    if jtype in ("Gears", "Belt"):
        spec = ondsel_coupler("gear", jname, p1.name, _to_frame(X1), p2.name, _to_frame(X2), d1,
                              specs, pose, fixed, value_j=d2 if jtype == "Gears" else -d2, where=where)
        spec = replace(spec, type="belt" if jtype == "Belt" else "gear")
    elif jtype == "Screw":
        spec = ondsel_coupler("screw", jname, p1.name, _to_frame(X1), p2.name, _to_frame(X2), d1,
                              specs, pose, fixed, where=where)
    else:  # RackPinion: FreeCAD builds the rack marker from the pinion JCS (getRackPinionMarkers)
        slides = {n for j in specs if j.type in ("prismatic", "cylindrical") for n in j.parts}
        if p1.name not in slides and p2.name in slides:
            (p1, X1), (p2, X2) = (p2, X2), (p1, X1)
        W1 = p1.X_WP @ X1
        W2 = p2.X_WP @ X2
        z = W2[:3, 2]
        x = W1[:3, 2] - (W1[:3, 2] @ z) * z
        if np.linalg.norm(x) < 1e-9:
            raise CadImportError(f"rack-and-pinion {o.label()}: the rack direction is parallel to "
                                 "the pinion axis", where=where)
        x /= np.linalg.norm(x)
        WI = np.eye(4)
        WI[:3, :3] = np.column_stack([x, np.cross(z, x), z])
        WI[:3, 3] = W2[:3, 3]
        X1r = invert_pose(p1.X_WP) @ WI
        spec = ondsel_coupler("rack-pinion", jname, p1.name, _to_frame(X1r), p2.name, _to_frame(X2),
                              d1, specs, pose, fixed, where=where)
    return replace(spec, source=src)
