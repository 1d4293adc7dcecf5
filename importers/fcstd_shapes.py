"""The shapes of an ``.FCStd`` document's objects, from their stored BReps (through
:mod:`cadmotion.geometry`, OCP imported only when a shape is read): each object's shape in its
own frame in metres (links and containers resolved), its mass properties, and the kind and
radius of a sub-element (``Edge12``, ``Face3``) that a ``Distance`` joint names."""

from __future__ import annotations

import re

import numpy as np

from ..errors import CadImportError
from ..geometry import analytic, ocp_available, placements, shapes
from ..geometry.brep import read_brep
from ..geometry.mass_properties import volume_properties
from ..kernel.rotations import invert_pose
from .fcstd_document import GROUP_TYPES, MM, placement_pose

__all__ = ["BrepShapes", "local_shape", "mass_properties", "element_geometry"]


class BrepShapes:
    """Loads BRep members on demand and caches shapes per member."""

    def __init__(self, arc):
        self.arc = arc
        self.cache = {}

    def brep(self, obj):
        """The object's stored shape (document units, with its stored location), or None."""
        p = obj.prop("Shape")
        member = p.get("file") if p is not None else None
        if not member:
            return None
        if member in self.cache:
            return self.cache[member]
        data = self.arc.read(member)
        shape = None
        if data.strip():
            shape = read_brep(data)
            if shape is None:
                raise CadImportError("cannot read the BRep shape",
                                     where=f"{self.arc.path}: member {member!r}")
        self.cache[member] = shape
        return shape


def _moved(shape, X):
    """``shape`` moved by the rigid 4x4 pose X (a location, no geometry copy)."""
    if np.array_equal(X, np.eye(4)):
        return shape
    return placements.moved(shape, X)


def local_shape(doc, geo, obj, depth=0):
    """Shape of ``obj`` in its own frame, in metres, or None (cached: links share it)."""
    key = ("local", obj.name)
    if key not in geo.cache:
        geo.cache[key] = _make_local_shape(doc, geo, obj, depth)
    return geo.cache[key]


def _make_local_shape(doc, geo, obj, depth):
    if depth > 20:
        raise CadImportError(f"links nest deeper than 20 levels at {obj.label()!r}", where=doc.arc.path)
    if obj.type in ("App::Link", "App::LinkPython"):
        target = doc.obj(obj.link("LinkedObject"))
        if target is None:
            raise CadImportError(f"link {obj.label()!r} points to a missing object", where=doc.arc.path)
        s = local_shape(doc, geo, target, depth + 1)
        if s is not None and obj.boolean("LinkTransform", False) and target.prop("Placement") is not None:
            s = _moved(s, placement_pose(target.prop("Placement"), doc.where(obj.label())))
        return s
    if obj.type in ("App::Part", "Assembly::AssemblyObject", "Assembly::AssemblyLink") or \
            ("Shape" not in obj.props and obj.links("Group")):
        kids = []
        for n in obj.links("Group"):
            o = doc.obj(n)
            if o is None or not doc.is_part_like(o) and o.type not in GROUP_TYPES:
                continue
            s = local_shape(doc, geo, o, depth + 1)
            if s is not None and o.prop("Placement") is not None:
                s = _moved(s, placement_pose(o.prop("Placement"), doc.where(o.label())))
            if s is not None:
                kids.append(s)
        return shapes.compound(kids) if kids else None
    raw = geo.brep(obj)
    if raw is None:
        return None
    X = np.eye(4)
    if obj.prop("Placement") is not None:
        X = placement_pose(obj.prop("Placement"), doc.where(obj.label()))
    # The stored shape carries the placement as its location (mm): the shape in the
    # object's frame is X^-1 L s0 with s0 the location-free shape.  Scale s0 to metres and
    # keep the (usually identity) remainder X^-1 L as a location: exact geometry.
    L = placements.location_matrix(raw)
    L[:3, 3] *= MM
    D = invert_pose(X) @ L
    if np.allclose(D, np.eye(4), rtol=0.0, atol=1e-12):
        D = np.eye(4)
    return _moved(placements.scaled(placements.located(raw), MM), D)


def mass_properties(shape, density):
    """Mass (kg), centre of mass (m) and inertia about it (kg m², shape axes) of a shape in metres."""
    return volume_properties(shape).with_density(density)


def element_geometry(doc, geo, holder, element, item):
    """(kind, radius) of a sub-element like 'Edge12': the kind is 'Point', 'Line', 'Circle',
    'Curve', 'Plane', 'Cylinder', 'Sphere', 'Torus', 'Cone' or 'Surface' (None for the
    whole object) and the radius (m) of a circle, cylinder or sphere (0 otherwise).

    A vertex is a point whatever the shape, so it needs neither the shape nor OCP; the
    other kinds are read from the stored BRep (OCP), which must hold the element.
    """
    m = re.fullmatch(r"(Vertex|Edge|Face)(\d+)", element or "")
    if m is None:
        return None, 0.0
    kind, idx = m.group(1), int(m.group(2))
    if not ocp_available():
        if kind == "Vertex":
            return "Point", 0.0
        raise CadImportError(f"{item}: the kind of {element} (line, circle, plane, cylinder, ...) "
                             "decides which joint a FreeCAD Distance joint is, and reading it "
                             "needs OCP, which is not installed", where=doc.arc.path,
                             hint='pip install "cadmotion[cad]"')
    target = doc.target(holder)
    shape = geo.brep(target)
    if shape is None:
        if kind == "Vertex":
            return "Point", 0.0
        raise CadImportError(f"{item}: cannot find the shape holding {element}", where=doc.arc.path)
    sub = shapes.sub_shape(shape, kind.lower(), idx)
    if sub is None:
        raise CadImportError(f"{item}: {element} does not exist in {target.label()!r}", where=doc.arc.path)
    if kind == "Vertex":
        return "Point", 0.0
    if kind == "Edge":
        t = analytic.curve_kind(sub)
        if t == "circle":
            return "Circle", analytic.radius(sub, t) * MM
        return ("Line" if t == "line" else "Curve"), 0.0
    t = analytic.surface_kind(sub)
    if t in ("cylinder", "sphere"):
        return t.capitalize(), analytic.radius(sub, t) * MM
    return {"plane": "Plane", "torus": "Torus", "cone": "Cone"}.get(t, "Surface"), 0.0
