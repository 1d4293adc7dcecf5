"""Read a cadmotion model file (TOML) into a MechanismSpec.

The file describes a mechanism completely without CAD, or points at a STEP file for the
parts (``step = "gripper.step"``). Keys (lengths in the file's ``units``, angles in rad)::

    units = "m"                       # "m", "mm", "cm" or "in"
    gravity = [0, -9.81, 0]           # m/s^2, optional
    step = "assembly.step"            # optional: parts come from this STEP file
    unreferenced_parts = "weld"       # parts no joint/driver/force names: "weld" (default with
                                      # step) to their sub-assembly, "fix", "report" or "free"
    [simulation]                      # optional defaults for the command line
    t_end = 2.0
    steps = 200
    [check]                           # optional defaults for `cadmotion check`
    clearance = 0.0                   # gap unjointed parts must keep
    near = 1.0                        # list moving pairs closer than this
    joint_clearance = -0.05           # with check_jointed: overlap allowed to jointed parts
    check_jointed = false
    ignore = [["Link 8", "M2x10*"]]   # pairs (names or globs) whose contact is by design
    [parts.crank]
    fixed = false
    position = [0, 0, 0]              # part frame origin, assembly frame, initial pose
    orientation = [1, 0, 0, 0]        # unit quaternion w, x, y, z
    mass = 1.0                        # kg
    com = [0.05, 0, 0]                # part frame
    inertia = [Ixx, Iyy, Izz] or [Ixx, Iyy, Izz, Ixy, Ixz, Iyz]   # kg m^2 about the com
    color = [0.8, 0.2, 0.2]
    density = 7850 / material = "steel"   # STEP parts: mass from geometry
    [[joints]]
    name = "crank_pivot"
    type = "revolute"
    parts = ["ground", "crank"]
    origin = [0, 0, 0]                # joint frame, assembly frame, initial pose
    axis = [0, 0, 1]                  # joint axis (z of the joint frame)
    xaxis = [1, 0, 0]                 # optional reference direction (x of the joint frame)
    axis2 = [1, 0, 0]                 # universal: cross axis fixed in the second part
    points = [[..], [..]]             # distance: the two points (first part, second part)
    origin2 = [..]                    # point-line-, line-line-, rev-rev-distance: the point on the
                                      # second part (its line through it parallel to `axis`)
    length, angle, pitch, radius, ratio, joints = ["a", "b"], limits = {angle = [lo, hi]}
    limit_stiffness, limit_exponent, limit_restitution   # the limits as stops in dynamics (SI)
    [[joints]]                        # a cam pair (cadmotion.kernel.cams)
    type = "cam"
    joints = ["cam_shaft", "follower_slide"]
    law = [[theta, value], ...]       # or: profile = [[x, y, z], ...] / { part = "cam", near = [..] }
    follower = "flat"                 # with a profile: "flat", "point", "roller" (+ radius); contact = [..]
    limit_method = "unilateral"       # or "compliant" (default): impacts with limit_restitution, event-located
    [[drivers]]
    joint = "crank_pivot"             # or: part = "slider", coordinate = "x"
    coordinate = "angle"              # optional for single-coordinate joints
    expression = "t**2"               # or: table = [[t0, v0], [t1, v1], ...]
    [[contacts]]                      # see :mod:`cadmotion.importers.contacts`
    name = "ball_floor"
    parts = ["ball", "floor"]
    shape = [{ sphere = 0.05 }, { plane = { point = [0, 0, 0], normal = [0, 0, 1] } }]
    method = "compliant"              # "unilateral" (the issue's default) is not built yet
    restitution = 0.8                 # or damping = c (Hunt–Crossley, N s/m^(n+1))
    friction = { static = 0.5, dynamic = 0.4 }   # or one number for both
    stiffness = 1e7                   # N/m^exponent
    exponent = 1.5

A joint's frame is the same assembly-frame frame on both parts at the initial pose, so
each joint coordinate is zero there. ``axis`` and ``origin`` may also be taken from
STEP geometry: ``axis = { part = "crank", face = "cylinder", near = [x, y, z] }``.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..errors import CadImportError, ModelFileError
from ..kernel.rotations import unit_quat_to_matrix
from ..kernel.spec import (
    DriverSpec,
    ForceSpec,
    Frame,
    InitialVelocitySpec,
    JointSpec,
    MechanismSpec,
    PartSpec,
    TimeFunctionSpec,
)
from .contacts import read_contact
from .part_names import decode_c1
from .unreferenced import POLICIES, resolve_unreferenced

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

__all__ = ["read_model_file", "parse_model", "UNITS", "joint_frame"]

UNITS = {"m": 1.0, "mm": 1e-3, "cm": 1e-2, "in": 0.0254}

_TOP_KEYS = {"units", "gravity", "step", "parts", "joints", "drivers", "forces", "contacts", "initial_velocity",
             "simulation", "check", "name", "unreferenced_parts", "density", "material", "formulation"}
_PART_KEYS = {"fixed", "position", "orientation", "mass", "com", "inertia", "color", "density", "material"}
#: distance joints measured from a line of the first part (``origin``, ``axis``) to a point of the second
_LINE_DISTANCE_TYPES = ("point-line-distance", "line-line-distance", "rev-rev-distance")
_JOINT_KEYS = {"name", "type", "parts", "origin", "axis", "xaxis", "axis2", "origin2", "points", "length", "angle",
               "pitch", "radius", "ratio", "joints", "limits", "limit_stiffness", "limit_exponent",
               "limit_restitution", "limit_method", "law", "profile", "follower", "contact"}
#: the keys of a cam pair (type = "cam", :mod:`cadmotion.kernel.cams`)
_CAM_KEYS = {"name", "type", "joints", "law", "profile", "follower", "radius", "contact"}
#: a joint's stop parameters (SI: N m/rad^n or N/m^n, 1, 1), :mod:`cadmotion.kernel.dynamics.stops`
_STOP_KEYS = ("limit_stiffness", "limit_exponent", "limit_restitution")
_DRIVER_KEYS = {"name", "joint", "part", "coordinate", "expression", "table"}
_FORCE_KEYS = {"name", "type", "parts", "points", "joint", "expression", "stiffness", "damping",
               "free_length", "preload", "rotational_stiffness", "rotational_damping",
               "center", "axis", "radius", "longitudinal", "lateral", "rolling_resistance", "low_speed", "road"}
_ROAD_KEYS = {"height", "bumps"}
# force parameters in SI whatever `units` says (N/m, N s/m, N, N m/rad, N m s/rad); a bushing
# takes one number or three (per axis of its frame) for each of them
_FORCE_NUMBERS = ("stiffness", "damping", "preload", "rotational_stiffness", "rotational_damping")
_SIM_KEYS = {"t_end", "steps", "t_start"}
_CHECK_KEYS = {"clearance", "near", "joint_clearance", "check_jointed", "ignore"}
#: ``[formulation]``: the relative-coordinate formulations' choices (:mod:`cadmotion.kernel.dynamics.tree`)
_FORMULATION_KEYS = {"cut"}


def read_model_file(path):
    """Read a ``*.cadmotion.toml`` model file; returns a :class:`MechanismSpec` in SI units."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ModelFileError(f"no such model file: {path}") from None
    except OSError as exc:
        raise ModelFileError(f"cannot read model file: {exc.strerror}", where=str(path)) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ModelFileError(f"not UTF-8 text (byte {exc.start})", where=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ModelFileError(f"TOML syntax error: {exc}", where=str(path),
                             hint="see the model-file keys in the README") from None
    return parse_model(_decode_c1(data), source=str(path), base_dir=path.parent)


def _decode_c1(value):
    """Every key and string of the parsed file with C1 controls read as cp850
    (:func:`.part_names.decode_c1`: the part names the STEP reader gives)."""
    if isinstance(value, str):
        return decode_c1(value)
    if isinstance(value, dict):
        return {decode_c1(k): _decode_c1(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode_c1(v) for v in value]
    return value


class _Ctx:
    def __init__(self, source, scale):
        self.source = source
        self.scale = scale

    def err(self, item, message, hint=None):
        return ModelFileError(message, where=f"{self.source}: {item}" if item else self.source, hint=hint)

    def vec(self, item, key, value, n=3, length=True):
        if not isinstance(value, (list, tuple)) or len(value) != n or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
        ):
            raise self.err(item, f"`{key}` must be a list of {n} numbers, got {value!r}")
        arr = np.asarray(value, float)
        if not np.all(np.isfinite(arr)):
            raise self.err(item, f"`{key}` must be finite, got {value!r}")
        return arr * (self.scale if length else 1.0)

    def num(self, item, key, value, length=False, positive=False):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise self.err(item, f"`{key}` must be a number, got {value!r}")
        if positive and value <= 0:
            raise self.err(item, f"`{key}` must be positive, got {value!r}")
        return float(value) * (self.scale if length else 1.0)

    def check_keys(self, item, table, allowed):
        if not isinstance(table, dict):
            raise self.err(item, f"expected a table, got {type(table).__name__}")
        unknown = sorted(set(table) - allowed)
        if unknown:
            raise self.err(item, f"unknown key(s) {', '.join(map(repr, unknown))}",
                           hint=f"known keys: {', '.join(sorted(allowed))}")


def joint_frame(origin, axis, xaxis=None):
    """A world rotation (3, 3) whose z column is ``axis`` and x column follows ``xaxis``.

    Without ``xaxis`` the x direction is the world axis least aligned with ``axis``,
    made orthogonal to it.
    """
    z = np.asarray(axis, float)
    nz = np.linalg.norm(z)
    if nz < 1e-12:
        raise ValueError("axis has zero length")
    z = z / nz
    if xaxis is None:
        e = np.eye(3)[int(np.argmin(np.abs(z)))]
    else:
        e = np.asarray(xaxis, float)
    x = e - np.dot(e, z) * z
    nx = np.linalg.norm(x)
    if nx < 1e-9:
        raise ValueError("xaxis is parallel to axis")
    x = x / nx
    y = np.cross(z, x)
    return np.column_stack([x, y, z])


def _frame_in_part(part, origin_w, R_w):
    """Express a world frame (origin, rotation) in the part's frame at its initial pose."""
    Rp = unit_quat_to_matrix(part.orientation)
    s = Rp.T @ (origin_w - np.asarray(part.position, float))
    R = Rp.T @ R_w
    return Frame(tuple(map(float, s)), tuple(tuple(map(float, r)) for r in R))


def _inertia(ctx, item, value):
    if not isinstance(value, (list, tuple)) or len(value) not in (3, 6):
        raise ctx.err(item, f"`inertia` must be [Ixx, Iyy, Izz] or [Ixx, Iyy, Izz, Ixy, Ixz, Iyz], got {value!r}")
    v = ctx.vec(item, "inertia", value, n=len(value), length=False) * ctx.scale**2
    if len(v) == 3:
        I = np.diag(v)
    else:
        ixx, iyy, izz, ixy, ixz, iyz = v
        I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    return tuple(tuple(map(float, r)) for r in I)


def parse_model(data, source="<model>", base_dir="."):
    """Build a MechanismSpec from parsed TOML ``data`` (a dict). See the module docstring."""
    base_dir = Path(base_dir)
    ctx0 = _Ctx(source, 1.0)
    ctx0.check_keys("", data, _TOP_KEYS)
    units = data.get("units", "m")
    if units not in UNITS:
        raise ctx0.err("units", f"unknown length unit {units!r}", hint=f"use one of {', '.join(UNITS)}")
    ctx = _Ctx(source, UNITS[units])
    gravity = (tuple(ctx.vec("gravity", "gravity", data["gravity"], length=False)) if "gravity" in data
               else (0.0, 0.0, 0.0))
    settings = {"length_unit": units} if "units" in data else {}   # for the writers (plots in mm, ...)
    if "simulation" in data:
        ctx.check_keys("[simulation]", data["simulation"], _SIM_KEYS)
        for k, v in data["simulation"].items():
            settings[k] = ctx.num("[simulation]", k, v)

    if "check" in data:
        settings.update(_check_settings(ctx, data["check"]))
    if "formulation" in data:
        settings.update(_formulation_settings(ctx, data["formulation"]))

    cad = None
    step_parts = {}
    if "step" in data:
        step_parts, cad = _step_parts(ctx, data, base_dir)

    parts_table = data.get("parts", {})
    if not isinstance(parts_table, dict):
        raise ctx.err("parts", "`parts` must be a table of [parts.<name>] entries")
    parts = {}
    for name, entry in step_parts.items():
        parts[name] = entry
    for name, entry in parts_table.items():
        item = f"[parts.{name}]"
        ctx.check_keys(item, entry, _PART_KEYS)
        base = parts.get(name)
        if base is None and "step" in data and name not in step_parts:
            raise ctx.err(item, f"part {name!r} is not in the STEP file",
                          hint=f"STEP parts: {', '.join(list(step_parts)[:20])}")
        kw = {}
        if "fixed" in entry:
            if not isinstance(entry["fixed"], bool):
                raise ctx.err(item, "`fixed` must be true or false")
            kw["fixed"] = entry["fixed"]
        if "position" in entry:
            kw["position"] = tuple(ctx.vec(item, "position", entry["position"]))
        if "orientation" in entry:
            q = ctx.vec(item, "orientation", entry["orientation"], n=4, length=False)
            if abs(np.linalg.norm(q)) < 1e-12:
                raise ctx.err(item, "`orientation` must be a non-zero quaternion [w, x, y, z]")
            kw["orientation"] = tuple(q / np.linalg.norm(q))
        if "mass" in entry:
            kw["mass"] = ctx.num(item, "mass", entry["mass"])
            if kw["mass"] < 0:  # 0: a massless part, which only the joint-coordinate formulations take
                raise ctx.err(item, f"`mass` must be positive (or 0 for a massless part), got {entry['mass']!r}")
        if "com" in entry:
            kw["com"] = tuple(ctx.vec(item, "com", entry["com"]))
        if "inertia" in entry:
            kw["inertia"] = _inertia(ctx, item, entry["inertia"])
        if "color" in entry:
            c = entry["color"]
            if not isinstance(c, list) or len(c) not in (3, 4):
                raise ctx.err(item, "`color` must be [r, g, b] or [r, g, b, a] in 0..1")
            kw["color"] = tuple(float(x) for x in c)
        if base is None:
            parts[name] = PartSpec(name=name, source=f"{source}: {item}", **kw)
        else:
            parts[name] = _replace(base, **kw)
    if not parts:
        raise ctx.err("", "the model has no parts", hint="add [parts.<name>] tables or a `step = \"...\"` file")

    joints = _scaled_cam_laws(ctx, [_joint(ctx, k, entry, parts, cad)
                                    for k, entry in enumerate(_array(ctx, data, "joints"))])
    joint_types = {j.name: j.type for j in joints}
    drivers = [_driver(ctx, k, entry, joint_types) for k, entry in enumerate(_array(ctx, data, "drivers"))]
    forces = [_force(ctx, k, entry) for k, entry in enumerate(_array(ctx, data, "forces"))]
    contacts = [c for k, entry in enumerate(_array(ctx, data, "contacts")) for c in read_contact(ctx, k, entry, parts)]
    init_v = []
    for name, entry in (data.get("initial_velocity") or {}).items():
        item = f"[initial_velocity.{name}]"
        ctx.check_keys(item, entry, {"velocity", "angular_velocity"})
        if name not in parts:
            raise ctx.err(item, f"unknown part {name!r}", hint=f"known parts: {', '.join(parts)}")
        init_v.append(InitialVelocitySpec(
            name,
            tuple(ctx.vec(item, "velocity", entry.get("velocity", [0, 0, 0]))),
            tuple(ctx.vec(item, "angular_velocity", entry.get("angular_velocity", [0, 0, 0]), length=False)),
        ))
    policy = data.get("unreferenced_parts", "weld" if "step" in data else "free")
    if policy not in POLICIES:
        raise ctx.err("unreferenced_parts", f"unknown choice {policy!r}", hint="use " + ", ".join(map(repr, POLICIES)))
    # a part named only by a contact is referenced (a ball on a plane is not to be welded)
    joints += resolve_unreferenced(parts, joints, drivers, forces + contacts, init_v, policy,
                                   lambda message, hint: ctx.err("unreferenced_parts", message, hint=hint))
    name = data.get("name") or Path(source).name.split(".")[0]
    return MechanismSpec(parts=tuple(parts.values()), joints=tuple(joints), drivers=tuple(drivers),
                         forces=tuple(forces), contacts=tuple(contacts), gravity=gravity,
                         initial_velocities=tuple(init_v),
                         name=str(name), source=source, cad=cad, settings=tuple(settings.items()))


def _formulation_settings(ctx, table):
    """``[formulation]``: ``cut = ["joint", ...]``, the joints the spanning tree of the
    relative-coordinate formulations must cut (setting ``formulation.cut``; the kernel checks
    that each is a joint in a loop), and one table of options per formulation,
    ``[formulation.recursive] alpha = 20.0`` (setting ``formulation.options``: ((name, ((key,
    value), ...)), ...); values are numbers, booleans or strings, used when that formulation runs;
    the kernel checks the names and keys, :func:`cadmotion.kernel.dynamics.forward.formulation_options`)."""
    item = "[formulation]"
    if not isinstance(table, dict):
        raise ctx.err("formulation", "`formulation` must be a table: [formulation] cut = [\"joint\", ...]")
    out, options = {}, []
    for key, value in table.items():
        if key in _FORMULATION_KEYS:
            continue
        if not isinstance(value, dict):
            raise ctx.err(item, f"unknown key {key!r}: [formulation] takes `cut` and one table of options per "
                                f"formulation", hint=f"write [formulation.{key}] followed by its options, e.g. "
                                                     f"alpha = 20.0, or `cut = [...]`")
        for name, v in value.items():
            if not isinstance(v, (bool, int, float, str)) or (isinstance(v, float) and not math.isfinite(v)):
                raise ctx.err(f"[formulation.{key}]", f"option `{name}` must be a number, a boolean or a string, "
                                                      f"got {v!r}")
        options.append((key, tuple(sorted(value.items()))))
    if options:
        out["formulation.options"] = tuple(options)
    if "cut" in table:
        cut = table["cut"]
        if not isinstance(cut, list) or not all(isinstance(c, str) for c in cut):
            raise ctx.err(item, f"`cut` must be a list of joint names, got {cut!r}")
        out["formulation.cut"] = tuple(cut)
    return out


def _check_settings(ctx, table):
    """``[check]``: defaults of ``cadmotion check`` (lengths in the file's unit), as settings
    ``check.<key>``; ``ignore`` is a list of [pattern_a, pattern_b] part-name globs."""
    item = "[check]"
    ctx.check_keys(item, table, _CHECK_KEYS)
    out = {}
    for key in ("clearance", "near"):
        if key in table:
            value = ctx.num(item, key, table[key], length=True)
            if value < 0:
                raise ctx.err(item, f"`{key}` must not be negative, got {table[key]!r}")
            out[f"check.{key}"] = value
    if "joint_clearance" in table:
        out["check.joint_clearance"] = ctx.num(item, "joint_clearance", table["joint_clearance"], length=True)
    if "check_jointed" in table:
        if not isinstance(table["check_jointed"], bool):
            raise ctx.err(item, "`check_jointed` must be true or false")
        out["check.check_jointed"] = table["check_jointed"]
    if "ignore" in table:
        pairs = table["ignore"]
        if not isinstance(pairs, list) or not all(
                isinstance(p, list) and len(p) == 2 and all(isinstance(n, str) for n in p) for p in pairs):
            raise ctx.err(item, "`ignore` must be a list of [part_a, part_b] pairs (names or globs like \"M3x20*\")")
        out["check.ignore"] = tuple(tuple(p) for p in pairs)
    return out


def _replace(part, **kw):
    from dataclasses import replace

    return replace(part, **kw)


def _array(ctx, data, key):
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ctx.err(key, f"`{key}` must be an array of tables ([[{key}]])")
    return value


def _step_parts(ctx, data, base_dir):
    """Parts from the STEP file named by ``step``; density/material overrides applied."""
    step_path = base_dir / str(data["step"])
    try:
        from . import step as step_importer
    except CadImportError as exc:           # installed without the cad extra
        raise CadImportError(exc.message, where=f"{ctx.source}: step = {str(data['step'])!r}",
                             hint=exc.hint) from exc
    densities, materials = {}, {}
    for name, entry in (data.get("parts") or {}).items():
        if isinstance(entry, dict):
            if "density" in entry:
                densities[name] = ctx.num(f"[parts.{name}]", "density", entry["density"], positive=True)
            if "material" in entry:
                materials[name] = str(entry["material"])
    kwargs = {}
    if "density" in data:
        kwargs["default_density"] = ctx.num("density", "density", data["density"], positive=True)
    assembly = step_importer.read_step(step_path, densities=densities or None, materials=materials or None, **kwargs)
    return {p.name: p for p in assembly.parts}, assembly


def _resolve_geometry(ctx, item, key, value, cad, parts):
    """A point and direction from a geometry reference table (STEP parts only)."""
    if cad is None:
        raise ctx.err(item, f"`{key}` refers to geometry, but the model has no `step` file",
                      hint=f"give `{key}` as [x, y, z]")
    from . import geometry_refs

    ctx.check_keys(f"{item}.{key}", value, {"part", "face", "edge", "near"})
    part = value.get("part")
    if part not in parts:
        raise ctx.err(item, f"`{key}` refers to unknown part {part!r}")
    kind = value.get("face") or value.get("edge")
    near = ctx.vec(item, f"{key}.near", value.get("near"))
    try:
        point, direction = geometry_refs.resolve_axis(geometry_refs.world_shape(parts[part]), kind, near)
    except Exception as exc:  # the geometry module raises CadImportError with details
        raise ctx.err(item, f"cannot take `{key}` from part {part!r}: {exc}") from None
    return np.asarray(point, float), np.asarray(direction, float)


def _joint(ctx, k, entry, parts, cad):
    name = entry.get("name", f"joint{k + 1}")
    item = f"[[joints]] #{k + 1} {name!r}"
    ctx.check_keys(item, entry, _JOINT_KEYS)
    jtype = entry.get("type")
    if not isinstance(jtype, str):
        raise ctx.err(item, "`type` is missing")
    from ..kernel.symbolic.templates import COUPLER_TYPES, HIGHER_PAIR_TYPES, JOINT_TYPES

    if jtype not in JOINT_TYPES + COUPLER_TYPES + HIGHER_PAIR_TYPES:
        raise ctx.err(item, f"unknown joint type {jtype!r}",
                      hint="known types: " + ", ".join(JOINT_TYPES + COUPLER_TYPES + HIGHER_PAIR_TYPES))
    src = f"{ctx.source}: {item}"
    params = []
    for key in ("ratio",):
        if key in entry:
            params.append((key, ctx.num(item, key, entry[key])))
    for key in ("length", "pitch", "radius"):
        if key in entry:
            params.append((key, ctx.num(item, key, entry[key], length=True)))
    limits = []
    for coord, lim in (entry.get("limits") or {}).items():
        if coord not in ("angle", "disp") or not isinstance(lim, list) or len(lim) != 2:
            raise ctx.err(item, "`limits` must look like {angle = [lo, hi]} or {disp = [lo, hi]}")
        lo, hi = (ctx.num(item, "limits", v, length=coord == "disp") for v in lim)
        limits.append((coord, (lo, hi)))
    stop = []
    for key in _STOP_KEYS:
        if key in entry:
            if not limits:
                raise ctx.err(item, f"`{key}` shapes the stops of the joint's `limits`, which it has none of",
                              hint="add limits = {angle = [lo, hi]} or {disp = [lo, hi]}, or remove the key")
            value = ctx.num(item, key, entry[key])
            if value < 0 or (key != "limit_restitution" and value == 0) or (key == "limit_restitution" and value > 1):
                raise ctx.err(item, f"`{key}` = {value!r} is out of range",
                              hint="limit_stiffness > 0 (N m/rad^n or N/m^n, SI), limit_exponent ≥ 1, "
                                   "limit_restitution in [0.05, 1]")
            stop.append((key, value))
    if "limit_method" in entry:
        method = entry["limit_method"]
        if not limits:
            raise ctx.err(item, "`limit_method` says how the joint's `limits` act, and it has none",
                          hint="add limits = {angle = [lo, hi]} or {disp = [lo, hi]}, or remove the key")
        if method not in ("compliant", "unilateral"):
            raise ctx.err(item, f"`limit_method` must be \"compliant\" or \"unilateral\", got {method!r}")
        if method == "unilateral" and any(k in entry for k in ("limit_stiffness", "limit_exponent")):
            raise ctx.err(item, "`limit_stiffness` and `limit_exponent` shape compliant stops; a unilateral limit "
                                "takes `limit_restitution` only", hint="remove them, or limit_method = \"compliant\"")
        stop.append(("limit_method", method))
    if jtype in HIGHER_PAIR_TYPES:
        return _cam(ctx, item, name, entry, src, cad, parts)
    if jtype in COUPLER_TYPES:
        refs = entry.get("joints")
        if not isinstance(refs, list) or len(refs) != 2:
            raise ctx.err(item, f"a {jtype} needs `joints = [first, second]`")
        needed = {"gear": "ratio", "belt": "ratio", "rack-and-pinion": "radius"}[jtype]
        if needed not in dict(params):
            raise ctx.err(item, f"a {jtype} needs `{needed}`")
        return JointSpec(name=name, type=jtype, joints=tuple(refs), params=tuple(params), limits=tuple(limits),
                         source=src, stop=tuple(stop))

    pnames = entry.get("parts")
    if not isinstance(pnames, list) or len(pnames) != 2 or not all(isinstance(p, str) for p in pnames):
        raise ctx.err(item, "`parts` must name two parts: parts = [\"a\", \"b\"]")
    for p in pnames:
        if p not in parts:
            raise ctx.err(item, f"unknown part {p!r}", hint=f"known parts: {', '.join(parts)}")
    pi, pj = parts[pnames[0]], parts[pnames[1]]

    def point(key):
        v = entry.get(key)
        if isinstance(v, dict):
            return _resolve_geometry(ctx, item, key, v, cad, parts)[0]
        return ctx.vec(item, key, v)

    def direction(key):
        v = entry.get(key)
        if isinstance(v, dict):
            return _resolve_geometry(ctx, item, key, v, cad, parts)[1]
        d = ctx.vec(item, key, v, length=False)
        if np.linalg.norm(d) < 1e-12:
            raise ctx.err(item, f"`{key}` has zero length")
        return d / np.linalg.norm(d)

    if jtype == "distance":
        pts = entry.get("points")
        if not isinstance(pts, list) or len(pts) != 2:
            raise ctx.err(item, "a distance joint needs `points = [[x, y, z], [x, y, z]]` "
                                "(on the first and second part)")
        a, b = (ctx.vec(item, "points", p) for p in pts)
        I3 = np.eye(3)
        markers = (_frame_in_part(pi, a, I3), _frame_in_part(pj, b, I3))
        return JointSpec(name, jtype, tuple(pnames), markers, params=tuple(params), limits=tuple(limits), source=src,
                     stop=tuple(stop))

    if "origin" not in entry:
        raise ctx.err(item, "`origin` is missing (the joint frame origin in the assembly frame)")
    origin = point("origin")
    axis = direction("axis") if "axis" in entry else np.array([0.0, 0.0, 1.0])
    xaxis = direction("xaxis") if "xaxis" in entry else None
    try:
        Ri = joint_frame(origin, axis, xaxis)
    except ValueError as exc:
        raise ctx.err(item, str(exc)) from None
    Rj = Ri
    if jtype in ("universal", "angle", "perpendicular"):
        if "axis2" not in entry and jtype == "universal":
            raise ctx.err(item, "a universal joint needs `axis2`, the cross axis fixed in the second part")
        if "axis2" in entry:
            Rj = joint_frame(origin, direction("axis2"))
        if jtype == "angle":
            if "angle" in entry:
                params.append(("angle", ctx.num(item, "angle", entry["angle"])))
            else:
                c = float(np.clip(np.dot(Ri[:, 2], Rj[:, 2]), -1, 1))
                params.append(("angle", math.acos(c)))
    elif "axis2" in entry:
        raise ctx.err(item, f"`axis2` is only for universal, angle and perpendicular joints, not {jtype}")
    if jtype == "angle" and "angle" not in dict(params):
        params.append(("angle", ctx.num(item, "angle", entry["angle"])))
    if jtype == "screw" and "pitch" not in dict(params):
        raise ctx.err(item, "a screw joint needs `pitch` (advance per revolution)")
    origin_j = origin
    if jtype in _LINE_DISTANCE_TYPES:
        if "origin2" not in entry:
            raise ctx.err(item, f"a {jtype} joint needs `origin2`, the point on the second part "
                                "(`origin` and `axis` give the line of the first part)",
                          hint="the distance is measured between them at the initial pose unless `length` is given")
        origin_j = point("origin2")
    elif "origin2" in entry:
        raise ctx.err(item, f"`origin2` is only for {', '.join(_LINE_DISTANCE_TYPES)} joints, not {jtype}")
    markers = (_frame_in_part(pi, origin, Ri), _frame_in_part(pj, origin_j, Rj))
    return JointSpec(name, jtype, tuple(pnames), markers, params=tuple(params), limits=tuple(limits), source=src,
                     stop=tuple(stop))


def _outline(ctx, item, value, cad, parts):
    """The outline of a cam from its CAD geometry: ``{ part = "cam", near = [x, y, z] }``
    names the planar side face nearest to ``near`` (STEP parts only); m, assembly frame."""
    if cad is None:
        raise ctx.err(item, "`profile` refers to geometry, but the model has no `step` file",
                      hint="give the profile as points, profile = [[x, y, z], ...]")
    from . import geometry_refs

    ctx.check_keys(f"{item}.profile", value, {"part", "near"})
    part = value.get("part")
    if part not in parts:
        raise ctx.err(item, f"`profile` refers to unknown part {part!r}")
    near = ctx.vec(item, "profile.near", value.get("near"))
    try:
        return geometry_refs.face_outline(geometry_refs.world_shape(parts[part]), near, part=part)
    except Exception as exc:  # the geometry module raises CadImportError with details
        raise ctx.err(item, f"cannot take the cam profile from part {part!r}: {exc}") from None


def _cam(ctx, item, name, entry, src, cad, parts):
    """A cam pair: ``joints = [cam joint, follower joint]`` and the lift ``law`` (a table
    [[θ, value], ...] over one turn: rad, and the follower's coordinate in the file's length
    unit or rad) or the cam's ``profile`` (points [x, y, z] of its outline at the initial pose,
    or ``{ part, near }``: the outline of a planar face of a STEP part) with the ``follower``
    shape (``flat``, ``point``, ``roller`` with ``radius``) and optionally its ``contact``
    point (tip or roller centre; default the follower joint's origin)."""
    from ..kernel.cams import FOLLOWER_SHAPES

    ctx.check_keys(item, entry, _CAM_KEYS)
    refs = entry.get("joints")
    if not isinstance(refs, list) or len(refs) != 2 or not all(isinstance(r, str) for r in refs):
        raise ctx.err(item, "a cam needs `joints = [\"cam joint\", \"follower joint\"]`",
                      hint="the cam's revolute joint, then the follower's prismatic or revolute joint")
    if ("law" in entry) == ("profile" in entry):
        raise ctx.err(item, "a cam needs either `law = [[angle, value], ...]` or `profile = [[x, y, z], ...]`")
    params = []
    if "law" in entry:
        rows = entry["law"]
        if not isinstance(rows, list) or len(rows) < 6 or not all(isinstance(r, list) and len(r) == 2 for r in rows):
            raise ctx.err(item, "`law` must be at least 6 rows [angle in rad, follower coordinate] over one turn")
        for key in ("follower", "radius", "contact"):
            if key in entry:
                raise ctx.err(item, f"`{key}` describes the follower for a `profile`; a `law` needs none")
        # the values are scaled when the follower joint's type is known (prismatic: a length)
        params.append(("law", tuple((ctx.num(item, "law", a), ctx.num(item, "law", v)) for a, v in rows)))
    else:
        pts = entry["profile"]
        if isinstance(pts, dict):
            pts = _outline(ctx, item, pts, cad, parts)
        elif not isinstance(pts, list) or len(pts) < 8:
            raise ctx.err(item, "`profile` must list at least 8 points [x, y, z] around the cam, or name the "
                                "cam's side face: profile = { part = \"cam\", near = [x, y, z] }")
        else:
            pts = [ctx.vec(item, "profile", p) for p in pts]
        params.append(("profile", tuple(tuple(float(c) for c in p) for p in pts)))
        shape = entry.get("follower", "flat")
        if shape not in FOLLOWER_SHAPES:
            raise ctx.err(item, f"unknown follower {shape!r}", hint=f"use one of {', '.join(FOLLOWER_SHAPES)}")
        params.append(("follower", shape))
        if shape == "roller":
            if "radius" not in entry:
                raise ctx.err(item, "a roller follower needs `radius`")
            params.append(("radius", ctx.num(item, "radius", entry["radius"], length=True, positive=True)))
        elif "radius" in entry:
            raise ctx.err(item, f"`radius` is for roller followers, not {shape}")
        if "contact" in entry:
            params.append(("contact", tuple(ctx.vec(item, "contact", entry["contact"]))))
    return JointSpec(name=name, type="cam", joints=tuple(refs), params=tuple(params), source=src)


def _scaled_cam_laws(ctx, joints):
    """Cam laws with their values in SI: a prismatic follower's displacements are lengths."""
    types = {j.name: j.type for j in joints}
    out = []
    for j in joints:
        law = j.param("law") if j.type == "cam" else None
        if law is not None and types.get(j.joints[1]) == "prismatic" and ctx.scale != 1.0:
            scaled = tuple((a, v * ctx.scale) for a, v in law)
            j = replace(j, params=tuple((k, scaled if k == "law" else v) for k, v in j.params))
        out.append(j)
    return out


def _driver(ctx, k, entry, joint_types):
    item = f"[[drivers]] #{k + 1}"
    ctx.check_keys(item, entry, _DRIVER_KEYS)
    joint, part = entry.get("joint"), entry.get("part")
    if (joint is None) == (part is None):
        raise ctx.err(item, "a driver needs either `joint` or `part` (with `coordinate`)")
    name = entry.get("name") or (f"{joint}.driver" if joint else f"{part}.{entry.get('coordinate')}.driver")
    coordinate = entry.get("coordinate")
    if part is not None and coordinate not in ("x", "y", "z"):
        raise ctx.err(item, "a part driver needs `coordinate = \"x\"`, \"y\" or \"z\"")
    if joint is not None and coordinate not in (None, "angle", "disp"):
        raise ctx.err(item, f"joint coordinate must be \"angle\" or \"disp\", got {coordinate!r}")
    if joint is not None and coordinate is None and joint in joint_types:
        from ..kernel.symbolic.templates import TEMPLATES

        measures = TEMPLATES[joint_types[joint]].measures if joint_types[joint] in TEMPLATES else ()
        coordinate = measures[0] if measures else None
    length = part is not None or coordinate == "disp"
    scale = ctx.scale if length else 1.0
    if "expression" in entry and "table" in entry:
        raise ctx.err(item, "give `expression` or `table`, not both")
    if "expression" in entry:
        if not isinstance(entry["expression"], str):
            raise ctx.err(item, "`expression` must be a string, e.g. \"t**2\"")
        fn = TimeFunctionSpec(expression=entry["expression"], scale=scale)
    elif "table" in entry:
        rows = entry["table"]
        if not isinstance(rows, list) or not all(isinstance(r, list) and len(r) == 2 for r in rows):
            raise ctx.err(item, "`table` must be [[t0, v0], [t1, v1], ...]")
        # each entry a finite number (not a string, a boolean or a list: those once raised bare
        # ValueError/TypeError or were taken as numbers), its row named
        fn = TimeFunctionSpec(table=tuple((ctx.num(item, f"table row {n + 1} time", a),
                                           ctx.num(item, f"table row {n + 1} value", b))
                                          for n, (a, b) in enumerate(rows)), scale=scale)
    else:
        raise ctx.err(item, "a driver needs `expression` or `table`")
    return DriverSpec(name=name, function=fn, joint=joint, part=part, coordinate=coordinate,
                      source=f"{ctx.source}: {item}")


def _force(ctx, k, entry):
    item = f"[[forces]] #{k + 1}"
    ctx.check_keys(item, entry, _FORCE_KEYS)
    name = entry.get("name", f"force{k + 1}")
    ftype = entry.get("type")
    if not isinstance(ftype, str):
        raise ctx.err(item, "`type` is missing")
    pts = tuple(tuple(ctx.vec(item, "points", p)) for p in entry.get("points", []))
    params = []
    for key in _FORCE_NUMBERS:
        if key not in entry:
            continue
        value = entry[key]
        if ftype == "bushing" and isinstance(value, (list, tuple)):
            params.append((key, tuple(ctx.vec(item, key, value, length=False))))
        else:
            params.append((key, ctx.num(item, key, value)))
    if "free_length" in entry:
        params.append(("free_length", ctx.num(item, "free_length", entry["free_length"], length=True)))
    params += _tyre_params(ctx, item, entry)
    if "center" in entry:
        if "points" in entry:
            raise ctx.err(item, "give the wheel centre as `center` or as `points`, not both")
        pts = (tuple(ctx.vec(item, "center", entry["center"])),)
    return ForceSpec(name=name, type=ftype, parts=tuple(entry.get("parts", ())), points=pts, joint=entry.get("joint"),
                     expression=entry.get("expression"), params=tuple(params), source=f"{ctx.source}: {item}")


def _tyre_params(ctx, item, entry):
    """The keys of a ``tyre`` force (:mod:`cadmotion.kernel.dynamics.tyres`): lengths (radius, road
    height, bumps) in the file's unit, the rest as given (N/m, N s/m, magic-formula numbers, m/s)."""
    params = []
    if "axis" in entry:
        params.append(("axis", tuple(ctx.vec(item, "axis", entry["axis"], length=False))))
    if "radius" in entry:
        params.append(("radius", ctx.num(item, "radius", entry["radius"], length=True)))
    for key in ("longitudinal", "lateral"):
        if key in entry:
            params.append((key, tuple(ctx.vec(item, key, entry[key], n=4, length=False))))
    for key in ("rolling_resistance", "low_speed"):
        if key in entry:
            params.append((key, ctx.num(item, key, entry[key])))
    if "road" in entry:
        road = entry["road"]
        ctx.check_keys(f"{item} road", road, _ROAD_KEYS)
        if "height" in road:
            params.append(("road_height", ctx.num(item, "road.height", road["height"], length=True)))
        bumps = road.get("bumps", [])
        if not isinstance(bumps, list):
            raise ctx.err(item, "`road.bumps` must be a list of [x, height, length]")
        params.append(("bumps", tuple(tuple(ctx.vec(item, "road.bumps", b)) for b in bumps)))
    return params


def is_model_file(path):
    """True for ``*.toml`` paths."""
    return os.fspath(path).lower().endswith(".toml")
