"""Read a live CadQuery assembly (``cq.Assembly``) into a MechanismSpec.

>>> from cadmotion.importers import from_cadquery             # doctest: +SKIP
>>> spec = from_cadquery(assy, joints=[...], drivers=[...], fixed=["base"])

Parts
-----
Every node of the assembly that holds a shape (``Assembly.objects`` entries with an
``obj``) is one rigid part, named by its key in ``assy.objects`` (``"crank"``,
``"arm/link2"`` for nested ones). Its frame is the node's location composed with its
parents' (``X_WP``); its shape is the node's ``obj`` (a Workplane's solids or a Shape),
scaled to metres for mass properties and the writers. Lengths in cadquery are read in
``length_unit`` (``"mm"`` by default, CadQuery's convention).

Joints
------
Either ``joints``: dicts like a model file's ``[[joints]]`` entries (see
:mod:`cadmotion.importers.modelfile`), lengths in ``length_unit``, assembly frame at the
assembly's current pose. ``origin``/``axis`` may also be geometry references
``{"part": "crank", "edge": "circle", "near": [x, y, z]}`` (``face`` = cylinder, cone,
plane, sphere, ...; ``near`` in ``length_unit``), resolved on the part's shape.

Or, when ``joints`` is None, the assembly's own constraints (``assy.constrain(...)``),
grouped by the pair of objects they connect:

==========================================  =============================================
constraints between two objects             joint
==========================================  =============================================
``Point`` + ``Axis``                        revolute: origin at the first Point's centre,
                                            axis along the first object's Axis entity
``Plane``                                   revolute about the first face's normal through
                                            its centre (the planes may still turn)
``Point`` alone                             spherical at the first entity's centre
``PointOnLine``                             point-on-line (the line on the second object)
``PointInPlane``                            point-on-plane (the plane on the second object)
``Fixed`` (one object)                      that part is fixed
``Axis`` alone, ``FixedPoint``,             MechanismError: not a joint; pass ``joints=``
``FixedAxis``, ``FixedRotation``, ...
==========================================  =============================================

Drivers are dicts like ``[[drivers]]`` entries (angles in rad, lengths in
``length_unit``); joints made from constraints are named ``<object1>-<object2>``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import MechanismError

__all__ = ["from_cadquery", "assembly_spec", "assembly_parts", "constraint_joints"]


# --------------------------------------------------------------------------- parts
def _loc_matrix(loc):
    """4x4 (assembly units) of a cq.Location."""
    from ..geometry.placements import matrix_of_location

    return matrix_of_location(loc.wrapped)


def _matrix_loc(X):
    """The cq.Location of a 4x4 pose (assembly units)."""
    import cadquery as cq

    from ..geometry.placements import trsf_of_matrix

    return cq.Location(trsf_of_matrix(X))


def _nodes(assy):
    """(key, node, X_W_node in assembly units, parent key) depth first, parents first."""
    out = []
    keys = {id(node): key for key, node in assy.objects.items()}

    def walk(node, X_parent, parent):
        X = X_parent @ _loc_matrix(node.loc)
        key = keys.get(id(node), node.name)
        out.append((key, node, X, parent))
        for child in node.children:
            walk(child, X, key)

    walk(assy, np.eye(4), None)
    return out


def _shape_of(obj):
    """The TopoDS_Shape of a node's obj (Workplane, Shape, or None)."""
    import cadquery as cq

    if obj is None:
        return None
    if isinstance(obj, cq.Workplane):
        shapes = [v for v in obj.vals() if isinstance(v, cq.Shape)]
        if not shapes:
            return None
        return (shapes[0] if len(shapes) == 1 else cq.Compound.makeCompound(shapes)).wrapped
    if isinstance(obj, cq.Shape):
        return obj.wrapped
    return None


@dataclass(frozen=True)
class _Part:
    name: str
    node: object
    X: np.ndarray           # X_WP, assembly units
    shape_m: object         # TopoDS_Shape in the part frame, metres


def assembly_parts(assy, length_unit="mm"):
    """The parts of ``assy``: key -> (node, X_WP in metres, shape in metres)."""
    from ..geometry.placements import scaled
    from ..importers.modelfile import UNITS

    if length_unit not in UNITS:
        raise MechanismError(f"unknown length unit {length_unit!r}", hint=f"use one of {', '.join(UNITS)}")
    scale = UNITS[length_unit]
    parts = {}
    for key, node, X, _ in _nodes(assy):
        shape = _shape_of(node.obj)
        if shape is None:
            continue
        Xm = X.copy()
        Xm[:3, 3] *= scale
        parts[key] = (node, Xm, scaled(shape, scale))
    if not parts:
        raise MechanismError(f"the assembly {assy.name!r} holds no shapes", hint="add parts with assy.add(...)")
    return parts


def _part_specs(parts, density, fixed):
    from ..importers.asmt import matrix_to_quaternion
    from ..geometry.mass_properties import volume_properties
    from ..kernel.spec import PartSpec

    specs = {}
    for key, (node, X, shape) in parts.items():
        props = volume_properties(shape)
        rho = density.get(key, 1000.0) if isinstance(density, dict) else density
        if isinstance(rho, str):
            from ..importers.materials import density_of

            rho = density_of(rho)
        mass, com, inertia = props.with_density(float(rho)) if not props.is_empty else (None, (0.0, 0.0, 0.0), None)
        color = tuple(node.color.toTuple()) if node.color is not None else None
        specs[key] = PartSpec(name=key, fixed=key in fixed, position=tuple(map(float, X[:3, 3])),
                              orientation=tuple(map(float, matrix_to_quaternion(X[:3, :3]))),
                              mass=mass, com=tuple(com), inertia=inertia, color=color, shape=shape,
                              path=key, source=f"cq.Assembly: {key}")
    return specs


# --------------------------------------------------------------------------- constraints
def _vec(v):
    return np.array([v.x, v.y, v.z], float)


def _entity(c, k, parts_X):
    """The k-th entity of a constraint, located in the assembly frame (assembly units)."""
    arg, subloc = c.args[k], c.sublocs[k]
    located = arg.located(subloc * arg.location())
    X = parts_X[c.objects[k]]
    return located, X


def _point(shape, X):
    p = _vec(shape.Center())
    return X[:3, :3] @ p + X[:3, 3]


def _axis(shape, X):
    import cadquery as cq

    if isinstance(shape, cq.Face):
        d = _vec(shape.normalAt())
    elif isinstance(shape, cq.Edge) and shape.geomType() == "CIRCLE":
        d = _vec(shape.normal())
    elif isinstance(shape, cq.Edge):
        d = _vec(shape.tangentAt())
    else:
        raise MechanismError(f"cannot take an axis from a {type(shape).__name__}")
    return X[:3, :3] @ d


def constraint_joints(assy, length_unit="mm"):
    """(joint dicts, fixed part keys) from the assembly's constraints (see the module doc)."""
    from ..importers.modelfile import UNITS

    if length_unit not in UNITS:
        raise MechanismError(f"unknown length unit {length_unit!r}")
    X_by = {key: X for key, _, X, _ in _nodes(assy)}
    fixed, pairs = [], {}
    for c in assy.constraints:
        if c.kind == "Fixed":
            fixed.append(c.objects[0])
            continue
        if len(c.objects) != 2:
            raise MechanismError(f"the {c.kind} constraint on {c.objects[0]!r} is not a joint between two parts",
                                 where="cq.Assembly constraints", hint="pass joints= explicitly")
        pairs.setdefault(tuple(c.objects), []).append(c)
    joints = []
    for (a, b), cs in pairs.items():
        kinds = [c.kind for c in cs]
        name = f"{a}-{b}"
        where = f"constraints between {a!r} and {b!r} ({', '.join(kinds)})"
        first = {k: c for c, k in reversed(list(zip(cs, kinds)))}
        if "Point" in first and "Axis" in first:
            s, X = _entity(first["Point"], 0, X_by)
            origin = _point(s, X)
            s, X = _entity(first["Axis"], 0, X_by)
            j = {"type": "revolute", "origin": origin, "axis": _axis(s, X)}
        elif "Plane" in first:
            s, X = _entity(first["Plane"], 0, X_by)
            j = {"type": "revolute", "origin": _point(s, X), "axis": _axis(s, X)}
        elif kinds == ["Point"] or set(kinds) == {"Point"}:
            s, X = _entity(first["Point"], 0, X_by)
            j = {"type": "spherical", "origin": _point(s, X)}
        elif "PointOnLine" in first:
            s, X = _entity(first["PointOnLine"], 1, X_by)
            j = {"type": "point-on-line", "origin": _point(s, X), "axis": _axis(s, X)}
            a, b = b, a
        elif "PointInPlane" in first:
            s, X = _entity(first["PointInPlane"], 1, X_by)
            j = {"type": "point-on-plane", "origin": _point(s, X), "axis": _axis(s, X)}
            a, b = b, a
        else:
            raise MechanismError(f"{where}: cadmotion has no joint for this combination",
                                 where="cq.Assembly constraints",
                                 hint="use Point+Axis (revolute), Plane, Point (spherical), PointOnLine, "
                                      "PointInPlane, or pass joints= explicitly")
        j["name"] = name
        j["parts"] = [a, b]
        j["origin"] = [float(v) for v in j["origin"]]
        if "axis" in j:
            j["axis"] = [float(v) for v in j["axis"]]
        joints.append(j)
    return joints, fixed


# --------------------------------------------------------------------------- spec
def _resolve_refs(joints, specs, scale):
    """Replace geometry references in joint dicts by numbers (assembly units)."""
    from ..importers import geometry_refs

    out = []
    for k, j in enumerate(joints):
        j = dict(j)
        for key in ("origin", "axis", "xaxis"):
            v = j.get(key)
            if isinstance(v, dict):
                part = v.get("part")
                if part not in specs:
                    raise MechanismError(f"joint #{k + 1}: `{key}` refers to unknown part {part!r}",
                                         hint="parts: " + ", ".join(specs))
                kind = v.get("face") or v.get("edge")
                near = np.asarray(v.get("near", (0, 0, 0)), float) * scale
                point, direction = geometry_refs.resolve_axis(geometry_refs.world_shape(specs[part]), kind, near,
                                                              part=part)
                j[key] = [float(x) for x in (point / scale if key == "origin" else direction)]
        out.append(j)
    return out


def assembly_spec(assy, joints=None, drivers=None, *, length_unit="mm", fixed=None, density=1000.0,
                  gravity=(0.0, 0.0, 0.0)):
    """A MechanismSpec of a cq.Assembly (see the module doc). ``cad`` is the assembly."""
    from ..importers.modelfile import UNITS, parse_model

    parts = assembly_parts(assy, length_unit)
    scale = UNITS[length_unit]
    fixed = list(fixed or ())
    if joints is None:
        joints, cfixed = constraint_joints(assy, length_unit)
        fixed += cfixed
        if not joints:
            raise MechanismError(f"the assembly {assy.name!r} has no joints and no constraints",
                                 hint="pass joints=[{...}] or add assy.constrain(...) constraints")
    for f in fixed:
        if f not in parts:
            raise MechanismError(f"fixed part {f!r} is not in the assembly", hint="parts: " + ", ".join(parts))
    specs = _part_specs(parts, density, set(fixed))
    joints = _resolve_refs(joints, specs, scale)
    table = {}
    for key, p in specs.items():
        e = {"fixed": p.fixed, "position": [v / scale for v in p.position], "orientation": list(p.orientation)}
        if p.mass is not None:
            I = np.asarray(p.inertia) / scale**2
            e.update(mass=p.mass, com=[v / scale for v in p.com],
                     inertia=[I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])
        table[key] = e
    data = {"units": length_unit, "parts": table, "joints": [dict(j) for j in joints],
            "drivers": [dict(d) for d in (drivers or [])], "name": assy.name or "assembly"}
    if any(gravity):
        data["gravity"] = [float(g) for g in gravity]
    spec = parse_model(data, source=f"cq.Assembly {assy.name!r}")
    spec = replace(spec, parts=tuple(replace(p, shape=specs[p.name].shape, color=specs[p.name].color,
                                             path=specs[p.name].path, source=specs[p.name].source)
                                     for p in spec.parts), cad=assy)
    return spec


#: the public name: ``cadmotion.importers.from_cadquery(assy, joints=..., drivers=...)``
from_cadquery = assembly_spec
