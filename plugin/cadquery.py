"""CadQuery front end: simulate a live ``cq.Assembly`` and move it.

>>> from cadmotion.plugin.cadquery import simulate                  # doctest: +SKIP
>>> motion = simulate(assy, joints=[{"type": "revolute", "parts": ["base", "crank"],
...                                  "origin": [0, 0, 0], "axis": [0, 0, 1]}],
...                   drivers=[{"joint": "joint1", "expression": "2*pi*t"}],
...                   fixed=["base"], t_end=1.0, steps=50)
>>> motion.apply(assy, 0.25)          # the assembly's parts move to t = 0.25 s
>>> for t, moved in motion.frames(assy): ...
>>> motion                            # in Jupyter: the HTML player (_repr_html_)

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

import math
from dataclasses import dataclass, field, fields, replace
from typing import Dict, List, Optional

import numpy as np

from ..errors import MechanismError
from ..kernel.motion import Motion

__all__ = ["simulate", "assembly_spec", "assembly_parts", "CadQueryMotion", "apply", "frames",
           "ocp_animation", "constraint_joints"]


# --------------------------------------------------------------------------- parts
def _loc_matrix(loc):
    """4x4 (assembly units) of a cq.Location."""
    T = loc.wrapped.Transformation()
    return np.array([[T.Value(r, c) for c in range(1, 5)] for r in range(1, 4)] + [[0, 0, 0, 1]], float)


def _matrix_loc(X):
    import cadquery as cq
    from OCP.gp import gp_Trsf

    t = gp_Trsf()
    t.SetValues(*X[0, :4], *X[1, :4], *X[2, :4])
    return cq.Location(t)


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


def _scaled(shape, scale):
    from OCP.BRepBuilderAPI import BRepBuilderAPI_Transform
    from OCP.gp import gp_Pnt, gp_Trsf

    if scale == 1.0:
        return shape
    t = gp_Trsf()
    t.SetScale(gp_Pnt(0, 0, 0), scale)
    return BRepBuilderAPI_Transform(shape, t, True).Shape()


@dataclass(frozen=True)
class _Part:
    name: str
    node: object
    X: np.ndarray           # X_WP, assembly units
    shape_m: object         # TopoDS_Shape in the part frame, metres


def assembly_parts(assy, length_unit="mm"):
    """The parts of ``assy``: key -> (node, X_WP in metres, shape in metres)."""
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
        parts[key] = (node, Xm, _scaled(shape, scale))
    if not parts:
        raise MechanismError(f"the assembly {assy.name!r} holds no shapes", hint="add parts with assy.add(...)")
    return parts


def _part_specs(parts, density, fixed):
    from ..importers.asmt import matrix_to_quaternion
    from ..importers.massprops import volume_properties
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


# --------------------------------------------------------------------------- motion
@dataclass
class CadQueryMotion(Motion):
    """A Motion that knows the cq.Assembly it came from and can move it."""

    length_unit: str = "mm"

    def _scale(self):
        from ..importers.modelfile import UNITS

        return UNITS[self.length_unit]

    def apply(self, assy, t):
        """Move the parts of ``assy`` (in place) to their poses at ``t``; returns ``assy``."""
        return apply(self, assy, t)

    def frames(self, assy, times=None):
        """Yield ``(t, assembly)`` with a moved copy of ``assy`` for each time (default: every frame)."""
        return frames(self, assy, times)

    def animation(self, assy=None, speed=1.0, show=True):
        """An ``ocp_vscode.Animation`` of the motion (None when ocp_vscode is not installed)."""
        return ocp_animation(self, assy if assy is not None else getattr(self.spec, "cad", None), speed=speed,
                             show=show)

    def export(self, paths, **options):
        """Write the motion through :func:`cadmotion.plugin.writers.write_outputs`."""
        from .writers import write_outputs

        return write_outputs(self, paths, **options)

    def _repr_html_(self):
        """A self-contained HTML player (Jupyter), in an iframe so its script runs."""
        import html

        from .writers.html import html_page

        page = html_page(self)
        return (f'<iframe srcdoc="{html.escape(page, quote=True)}" style="width:100%;height:640px;border:0" '
                'sandbox="allow-scripts"></iframe>')


def _wrap(motion, length_unit):
    kw = {f.name: getattr(motion, f.name) for f in fields(Motion)}
    return CadQueryMotion(**kw, length_unit=length_unit)


def simulate(assy, joints=None, drivers=None, *, t_end=1.0, steps=100, length_unit="mm", fixed=None,
             density=1000.0, analysis="kinematic", gravity=(0.0, 0.0, 0.0), **options):
    """Simulate a cq.Assembly; returns a :class:`CadQueryMotion` (SI units like every Motion).

    Parameters
    ----------
    assy : cadquery.Assembly, at the initial pose
    joints : list of model-file style dicts, or None to use the assembly's constraints
    drivers : list of ``[[drivers]]`` style dicts
    t_end, steps : output times linspace(0, t_end, steps + 1), s
    length_unit : the assembly's length unit ("mm")
    fixed : part keys fixed to the world
    density : kg/m^3, a material name, or a mapping part key -> either
    analysis : "kinematic" or "dynamic"; ``options`` go to the kernel's solver
    """
    from ..kernel import compile_model

    spec = assembly_spec(assy, joints, drivers, length_unit=length_unit, fixed=fixed, density=density,
                         gravity=gravity)
    model = compile_model(spec)
    if analysis == "kinematic":
        from ..kernel import kinematics

        motion = kinematics(model, t_end=t_end, steps=steps, **options)
    elif analysis == "dynamic":
        from ..kernel.dynamics import simulate as dyn

        motion = dyn(model, t_end, steps, **options)
    else:
        raise MechanismError(f"unknown analysis {analysis!r}", hint="use 'kinematic' or 'dynamic'")
    if motion.spec is None:
        motion.spec = spec
    return _wrap(motion, length_unit)


def apply(motion, assy, t):
    """Set each part node's ``loc`` so that it sits at its pose at time ``t`` (in place)."""
    from ..importers.modelfile import UNITS

    scale = UNITS[getattr(motion, "length_unit", "mm")]
    world = {}
    for key, node, X, parent in _nodes(assy):
        X_parent = world.get(parent, np.eye(4)) if parent is not None else np.eye(4)
        if key in motion.parts:
            P = motion.pose(key, t)
            P[:3, 3] /= scale
            node.loc = _matrix_loc(np.linalg.inv(X_parent) @ P)
            world[key] = P
        else:
            world[key] = X_parent @ _loc_matrix(node.loc)
    return assy


def _clone(node):
    import cadquery as cq

    new = cq.Assembly(node.obj, loc=node.loc, name=node.name, color=node.color)
    for child in node.children:
        new.add(_clone(child))
    return new


def frames(motion, assy, times=None):
    """Yield ``(t, moved copy of assy)`` for each time (default: the motion's frames)."""
    times = motion.time if times is None else times
    for t in times:
        yield float(t), apply(motion, _clone(assy), float(t))


def ocp_animation(motion, assy, speed=1.0, show=True):
    """Animate ``assy`` in OCP CAD Viewer (VS Code); None when ``ocp_vscode`` is absent.

    The assembly is shown at its initial pose and each moving part gets a translation
    (``t``) and a quaternion (``q``) track, relative to its initial placement in its
    parent's frame, as three-cad-viewer's Animation expects.
    """
    try:
        import ocp_vscode
    except ImportError:
        return None
    from ..importers.modelfile import UNITS
    from ..importers.asmt import matrix_to_quaternion

    if assy is None:
        raise MechanismError("ocp_animation needs the assembly")
    scale = UNITS[getattr(motion, "length_unit", "mm")]
    if show:
        ocp_vscode.show(assy)
    anim = ocp_vscode.Animation(assy)
    paths = {}
    for key, node, X, parent in _nodes(assy):
        paths[key] = (paths[parent] if parent is not None else "") + "/" + node.name
    times = [float(t) for t in motion.time]
    for key, node, X0, parent in _nodes(assy):
        if key not in motion.parts:
            continue
        tv, qv = [], []
        for t in times:
            P = motion.pose(key, t)
            P[:3, 3] /= scale
            # offsets from the initial pose: position p - p0, rotation R R0^T (about the
            # node's own origin), as three-cad-viewer adds them to the initial placement
            tv.append([float(v) for v in P[:3, 3] - X0[:3, 3]])
            w, x, y, z = matrix_to_quaternion(P[:3, :3] @ X0[:3, :3].T)
            qv.append([float(x), float(y), float(z), float(w)])
        if np.allclose(tv, tv[0]) and np.allclose(qv, qv[0]):
            continue
        anim.add_track(paths[key], "t", times, tv)
        anim.add_track(paths[key], "q", times, qv)
    anim.animate(speed)
    return anim
