"""The workbench's own joint objects, stored in the FreeCAD document.

A joint is an ``App::FeaturePython`` with these properties (group ``Joint``)::

    Type        revolute, prismatic, cylindrical, spherical, planar, fixed, universal,
                point-on-line, point-on-plane, parallel, perpendicular, screw
    Part1       the first part (empty: the world, i.e. the document's global frame)
    Part2       the second part
    Origin      joint frame origin, mm, in Part1's own coordinates (global if Part1 is empty)
    Axis        joint axis (z of the joint frame), in the same coordinates
    XAxis       reference direction (x of the joint frame); (0, 0, 0) chooses one
    Placement2  (hidden) the joint frame in Part2's own coordinates, mm
    Enabled     false leaves the joint out
    Pitch       screw joints: advance per turn, mm

and, group ``Driver``::

    Driver            time expression in ``t`` (s), e.g. ``2*pi*t``; empty: not driven.
                      Angles in rad, displacements in mm (FreeCAD's length unit).
    DriverCoordinate  auto (the joint's first coordinate), angle or disp

Frames: the joint frame on each part is stored in that part's own coordinates, so the
joint moves with its parts when their placements change. It is made from the document's
pose when the joint is created (both frames coincide there) and again whenever
``Origin``, ``Axis``, ``XAxis``, ``Part1`` or ``Part2`` is edited. The data is plain
properties: a document saved with joints opens and simulates without the Python proxy.

Joints are made by :func:`make_joint` (numbers, global frame) or :func:`joint_from_selection`
(two parts and an edge, face or vertex that defines the axis, as selected in the GUI).

Axis from geometry (global coordinates):

================  ===========================================================
element           origin, axis
================  ===========================================================
circular edge     centre of the circle, its normal
straight edge     middle of the edge, its direction
cylinder, cone    centre of the face projected on the axis, the axis
planar face       centre of the face, its outward normal
spherical face    centre of the sphere, z of the sphere
vertex            the point; axis only for spherical and fixed joints (z)
================  ===========================================================
"""

from __future__ import annotations

import os

import numpy as np

from ...errors import MechanismError
from ...kernel.spec import DriverSpec, TimeFunctionSpec
from ...kernel.rotations import invert_pose
from .placements import MM, global_placement, matrix_placement, placement_matrix

__all__ = ["JOINT_KINDS", "make_joint", "joint_from_selection", "joint_markers", "joint_driver",
           "axis_from_element", "refresh_markers", "JointProxy", "JointViewProvider", "icon_path", "SelectionError"]

#: joint types the workbench offers, with what the axis means
JOINT_KINDS = ("revolute", "prismatic", "cylindrical", "spherical", "planar", "fixed", "universal",
               "point-on-line", "point-on-plane", "parallel", "perpendicular", "screw")
_POINT_ONLY = ("spherical", "fixed")
_DRIVER_COORDS = ("auto", "angle", "disp")


class SelectionError(MechanismError):
    """The selection does not define the parts or the axis a joint needs."""


# --------------------------------------------------------------------------- geometry
def _vec(v):
    return np.array([v.x, v.y, v.z], float)


def axis_from_element(shape, jtype="revolute"):
    """Origin (mm) and unit axis of one edge, face or vertex, in the shape's coordinates.

    Raises :class:`SelectionError` when the element defines no axis for ``jtype``.
    """
    import Part

    kind = shape.ShapeType
    if kind == "Edge":
        curve = shape.Curve
        if isinstance(curve, (Part.Circle, getattr(Part, "ArcOfCircle", Part.Circle))) and hasattr(curve, "Center"):
            return _vec(curve.Center), _unit(_vec(curve.Axis))
        if isinstance(curve, (Part.Line, getattr(Part, "LineSegment", Part.Line))):
            a, b = _vec(shape.Vertexes[0].Point), _vec(shape.Vertexes[-1].Point)
            return 0.5 * (a + b), _unit(b - a)
        raise SelectionError(f"the selected edge is a {type(curve).__name__}, which defines no axis",
                             hint="select a circular or straight edge, or a planar, cylindrical, "
                                  "conical or spherical face")
    if kind == "Face":
        surf = shape.Surface
        com = _vec(shape.CenterOfMass)
        name = type(surf).__name__
        if name in ("Cylinder", "Cone"):
            d = _unit(_vec(surf.Axis))
            p0 = _vec(surf.Center if name == "Cylinder" else surf.Apex)
            return p0 + np.dot(com - p0, d) * d, d
        if name == "Plane":
            u0, u1, v0, v1 = shape.ParameterRange
            uv = shape.Surface.parameter(shape.CenterOfMass)
            n = shape.normalAt(*uv) if uv else shape.normalAt(0.5 * (u0 + u1), 0.5 * (v0 + v1))
            return com, _unit(_vec(n))
        if name == "Sphere":
            return _vec(surf.Center), np.array([0.0, 0.0, 1.0])
        if name == "Toroid":
            return _vec(surf.Center), _unit(_vec(surf.Axis))
        raise SelectionError(f"the selected face is a {name} surface, which defines no axis",
                             hint="select a planar, cylindrical, conical or spherical face, "
                                  "or a circular or straight edge")
    if kind == "Vertex":
        if jtype in _POINT_ONLY:
            return _vec(shape.Point), np.array([0.0, 0.0, 1.0])
        raise SelectionError(f"a vertex defines a point but no axis, and a {jtype} joint needs one",
                             hint="select a circular or straight edge, or a face")
    raise SelectionError(f"a {kind} defines no axis", hint="select one edge, face or vertex")


def _unit(v):
    n = np.linalg.norm(v)
    if n < 1e-12:
        raise SelectionError("the element's direction has zero length")
    return v / n


def _frame_rotation(axis, xaxis=None):
    from ...importers.modelfile import joint_frame

    x = None if xaxis is None or np.linalg.norm(xaxis) < 1e-12 else xaxis
    try:
        return joint_frame((0, 0, 0), axis, x)
    except ValueError as exc:
        raise MechanismError(str(exc)) from None


# --------------------------------------------------------------------------- objects
class StatelessProxy:
    """FreeCAD proxy objects that keep nothing in the saved document (their data lives in
    the object's properties)."""

    def dumps(self):
        """Nothing to save (FreeCAD's serialisation hook)."""
        return None

    def loads(self, state):
        """Nothing to restore (FreeCAD's serialisation hook)."""
        return None

    __getstate__ = dumps

    def __setstate__(self, state):
        return None


class JointProxy(StatelessProxy):
    """Python proxy of a joint object: keeps ``Placement2`` in step with edits."""

    def __init__(self, obj):
        obj.Proxy = self

    def execute(self, obj):
        """FreeCAD recompute hook: a joint has no shape to rebuild."""
        pass

    def onChanged(self, obj, prop):
        """Refresh the joint's marker frames when its origin, axes or parts change (not while
        the document is restored)."""
        if prop not in ("Origin", "Axis", "XAxis", "Part1", "Part2"):
            return
        if getattr(obj.Document, "Restoring", False) or "Restore" in getattr(obj, "State", ()):
            return
        if getattr(obj, "Part2", None) is None or getattr(self, "_quiet", False):
            return
        try:
            refresh_markers(obj)
        except Exception:
            pass


class JointViewProvider(StatelessProxy):
    """View provider of joint objects: an icon, no geometry."""

    def __init__(self, vobj):
        vobj.Proxy = self

    def attach(self, vobj):
        """FreeCAD hook: remember the joint object."""
        self.Object = vobj.Object

    def getIcon(self):
        """The joint's tree icon."""
        return icon_path("Cadmotion_Joint")

    def getDisplayModes(self, vobj):
        """One display mode (a joint draws nothing)."""
        return ["Default"]

    def getDefaultDisplayMode(self):
        """The only display mode."""
        return "Default"

    def onChanged(self, vobj, prop):
        """Nothing to redraw."""
        pass


ICON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "icons")


def icon_path(command):
    """The SVG icon of a command (or ``Cadmotion_Joint``, ``Cadmotion_Workbench``), a file path."""
    return os.path.join(ICON_DIR, f"{command}.svg")


def _add_properties(obj):
    props = obj.PropertiesList
    add = lambda t, n, g, d: n in props or obj.addProperty(t, n, g, d)
    add("App::PropertyBool", "CadmotionJoint", "Joint", "marks a cadmotion joint")
    obj.setEditorMode("CadmotionJoint", 2)
    add("App::PropertyEnumeration", "Type", "Joint", "joint type")
    obj.Type = list(JOINT_KINDS)
    add("App::PropertyLinkGlobal", "Part1", "Joint", "first part; empty: the world (global frame)")
    add("App::PropertyLinkGlobal", "Part2", "Joint", "second part")
    add("App::PropertyString", "Part1Name", "Joint", "internal name of Part1 when the joint was made")
    add("App::PropertyString", "Part2Name", "Joint", "internal name of Part2 when the joint was made")
    obj.setEditorMode("Part1Name", 1)
    obj.setEditorMode("Part2Name", 1)
    add("App::PropertyVector", "Origin", "Joint", "joint origin, mm, in Part1's coordinates")
    add("App::PropertyVector", "Axis", "Joint", "joint axis, in Part1's coordinates")
    add("App::PropertyVector", "XAxis", "Joint", "reference x direction, Part1's coordinates; 0 = automatic")
    add("App::PropertyPlacement", "Placement2", "Joint", "joint frame in Part2's coordinates, mm")
    obj.setEditorMode("Placement2", 2)
    add("App::PropertyBool", "Enabled", "Joint", "false leaves the joint out of the simulation")
    add("App::PropertyFloat", "Pitch", "Joint", "screw joints: advance per turn, mm")
    add("App::PropertyString", "Driver", "Driver",
        "time expression in t (s): rad for angles, mm for displacements; empty = not driven")
    add("App::PropertyEnumeration", "DriverCoordinate", "Driver", "driven coordinate")
    obj.DriverCoordinate = list(_DRIVER_COORDS)


def make_joint(doc, jtype, part1, part2, origin=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), *,
               xaxis=None, name=None, driver="", driver_coordinate="auto", pitch=0.0):
    """Add a joint object to ``doc``.

    Parameters
    ----------
    jtype : one of :data:`JOINT_KINDS`
    part1 : document object, or None for the world
    part2 : document object
    origin : joint origin in the global frame, mm, at the document's current pose
    axis, xaxis : joint axis and optional reference direction, global frame
    driver : time expression (rad or mm), empty for none

    Returns
    -------
    The new ``App::FeaturePython`` object.
    """
    if jtype not in JOINT_KINDS:
        raise MechanismError(f"unknown joint type {jtype!r}", hint="use one of " + ", ".join(JOINT_KINDS))
    if part2 is None:
        raise MechanismError("a joint needs a second part")
    if part1 is not None and part1.Name == part2.Name:
        raise MechanismError(f"a joint cannot connect {part2.Label!r} to itself")
    axis = np.asarray(axis, float)
    if np.linalg.norm(axis) < 1e-12:
        raise MechanismError("the joint axis has zero length")
    R = _frame_rotation(axis, None if xaxis is None else np.asarray(xaxis, float))
    X_WM = np.eye(4)
    X_WM[:3, :3] = R
    X_WM[:3, 3] = np.asarray(origin, float) * MM
    X_W1 = np.eye(4) if part1 is None else placement_matrix(global_placement(part1))
    X_1M = invert_pose(X_W1) @ X_WM
    import FreeCAD as App

    obj = doc.addObject("App::FeaturePython", name or f"{jtype.capitalize().replace('-', '')}Joint")
    _add_properties(obj)
    proxy = JointProxy(obj)
    proxy._quiet = True
    try:
        obj.Type = jtype
        obj.Part1 = part1
        obj.Part2 = part2
        obj.Part1Name = part1.Name if part1 is not None else ""
        obj.Part2Name = part2.Name
        obj.Origin = App.Vector(*(X_1M[:3, 3] / MM))
        obj.Axis = App.Vector(*X_1M[:3, 2])
        obj.XAxis = App.Vector(*X_1M[:3, 0]) if xaxis is not None else App.Vector(0, 0, 0)
        obj.Enabled = True
        obj.CadmotionJoint = True
        obj.Pitch = float(pitch)
        obj.Driver = driver or ""
        obj.DriverCoordinate = driver_coordinate
    finally:
        proxy._quiet = False
    refresh_markers(obj)
    _attach_view(obj)
    return obj


def _attach_view(obj):
    try:
        import FreeCAD as App

        if App.GuiUp and obj.ViewObject is not None:
            JointViewProvider(obj.ViewObject)
    except Exception:
        pass


def _part1_frame(joint):
    """X_P1M (4x4, m) from Origin/Axis/XAxis."""
    R = _frame_rotation(_vec(joint.Axis), _vec(joint.XAxis))
    X = np.eye(4)
    X[:3, :3] = R
    X[:3, 3] = _vec(joint.Origin) * MM
    return X


def refresh_markers(joint):
    """Recompute ``Placement2`` so both joint frames coincide at the document's current pose."""
    _check_refs(joint)
    X_1M = _part1_frame(joint)
    X_W1 = np.eye(4) if joint.Part1 is None else placement_matrix(global_placement(joint.Part1))
    X_W2 = placement_matrix(global_placement(joint.Part2))
    joint.Placement2 = matrix_placement(invert_pose(X_W2) @ X_W1 @ X_1M)


def _check_refs(joint):
    doc = joint.Document
    for k in (1, 2):
        obj = getattr(joint, f"Part{k}")
        stored = getattr(joint, f"Part{k}Name", "")
        if obj is None or getattr(obj, "Document", None) is None or doc.getObject(obj.Name) is None:
            if k == 1 and not stored:
                continue  # the world
            what = f"the object {stored!r}" if stored else "no part"
            raise MechanismError(
                f"joint {joint.Label!r}: Part{k} refers to {what}, which is not in the document "
                "(deleted?)", where=f"{doc.Name}: {joint.Name}",
                hint=f"set Part{k} of the joint to an existing part, or delete the joint")


def joint_markers(joint):
    """((Part1 object or None, X_P1M), (Part2 object, X_P2M)) of a joint, 4x4 in metres."""
    _check_refs(joint)
    if joint.Type not in JOINT_KINDS:
        raise MechanismError(f"joint {joint.Label!r} has the unknown type {joint.Type!r}")
    X1 = _part1_frame(joint)
    X2 = placement_matrix(joint.Placement2)
    return (joint.Part1, X1), (joint.Part2, X2)


def joint_driver(joint, name=None):
    """The joint's driver as a DriverSpec (None when ``Driver`` is empty)."""
    text = (getattr(joint, "Driver", "") or "").strip()
    if not text:
        return None
    from ...kernel.symbolic.templates import TEMPLATES

    name = name or joint.Label
    coord = getattr(joint, "DriverCoordinate", "auto")
    measures = TEMPLATES[joint.Type].measures if joint.Type in TEMPLATES else ()
    if coord == "auto":
        if not measures:
            raise MechanismError(f"joint {joint.Label!r} ({joint.Type}) has no coordinate to drive",
                                 where=joint.Name, hint="clear its Driver")
        coord = measures[0]
    elif coord not in measures:
        raise MechanismError(f"joint {joint.Label!r} ({joint.Type}) has no {coord!r} coordinate",
                             where=joint.Name, hint="coordinates: " + (", ".join(measures) or "none"))
    fn = TimeFunctionSpec(expression=text, scale=MM if coord == "disp" else 1.0)
    return DriverSpec(name=f"{name}.driver", function=fn, joint=name, coordinate=coord,
                      source=f"{joint.Document.Name}: {joint.Label}.Driver")


# --------------------------------------------------------------------------- selection
_CONTAINERS = {"App::DocumentObjectGroup", "App::DocumentObjectGroupPython", "App::LinkGroup", "App::Part"}


def _split(root, sub):
    """(part object, element name, sub-path below the part) of a selection path."""
    names = [n for n in sub.split(".")]
    element = names[-1] if names else ""
    chain = names[:-1]
    obj = root
    rest = list(chain)
    while (obj.TypeId in _CONTAINERS or (obj.TypeId in ("App::Link", "App::LinkPython")
                                          and getattr(obj, "ElementCount", 0) > 0)) and rest:
        nxt = obj.getSubObject(rest[0] + ".", retType=1)
        if nxt is None:
            nxt = obj.Document.getObject(rest[0])
        if nxt is None:
            break
        obj = nxt
        rest = rest[1:]
    return obj, element, ".".join(rest + [element]) if element else ".".join(rest)


def _element_global(part, subpath):
    """The selected element of ``part`` as a shape in the global frame (mm)."""
    import Part

    shape = Part.getShape(part, subpath, needSubElement=True, transform=False)
    if shape is None or shape.isNull():
        raise SelectionError(f"cannot find {subpath!r} in {part.Label!r}")
    shape = shape.copy()
    shape.transformShape(global_placement(part).toMatrix(), True)
    return shape


def joint_from_selection(doc, jtype, selection, *, name=None, driver=""):
    """A joint between the parts of a selection, its axis from a selected element.

    Parameters
    ----------
    selection : list of ``(object, subnames)`` pairs: ``subnames`` a string or a list of
        strings (``"Edge3"``, ``"Solid001.Face2"`` below a group, ``""`` for the whole
        object), as FreeCAD's ``Gui.Selection.getSelectionEx("", 0)`` gives them
        (``sel.Object``, ``sel.SubElementNames``). The parts are the objects in the
        order selected: two parts make Part1 and Part2; one part is joined to the world.
        The first selected edge/face/vertex defines the origin and axis.

    Raises
    ------
    SelectionError
        Fewer than one or more than two parts, or no element that defines an axis.
    """
    items = []
    for obj, subs in selection:
        subs = [subs] if isinstance(subs, str) else list(subs) or [""]
        for sub in subs:
            if "." in sub or obj.TypeId in _CONTAINERS:
                part, element, subpath = _split(obj, sub)
            else:
                part, element, subpath = obj, sub, sub
            items.append((part, element, subpath))
    parts = []
    for part, _, _ in items:
        if all(part.Name != p.Name for p in parts):
            parts.append(part)
    if not parts:
        raise SelectionError("nothing is selected", hint="select two parts, and an edge or face of one of them")
    if len(parts) > 2:
        raise SelectionError(f"the selection holds {len(parts)} parts ({', '.join(p.Label for p in parts)}); "
                             "a joint connects two", hint="select elements of exactly two parts")
    geo = [(part, sp) for part, element, sp in items if element]
    if not geo:
        if jtype == "fixed":
            origin = placement_matrix(global_placement(parts[-1]))[:3, 3] / MM
            axis = np.array([0.0, 0.0, 1.0])
        else:
            raise SelectionError("the selection defines no axis: no edge, face or vertex is selected",
                                 hint="select a circular edge or a cylindrical face (revolute), "
                                      "a straight edge or a planar face (prismatic)")
    else:
        errors = []
        for part, sp in geo:
            try:
                origin, axis = axis_from_element(_element_global(part, sp), jtype)
                break
            except SelectionError as exc:
                errors.append(exc)
        else:
            raise errors[0]
    part1, part2 = (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])
    return make_joint(doc, jtype, part1, part2, origin, axis, name=name, driver=driver)
