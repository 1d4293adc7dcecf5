"""Read OndselSolver ``.asmt`` files: the solver input FreeCAD's Assembly workbench writes.

Format
------
An ``.asmt`` file is text in indented keyword blocks (one tab per level): a keyword line
(``Part``, ``Position3D``, ``RevoluteJoint``, ...) owns the lines indented below it;
numbers are tab-separated.  The top block ``Assembly`` holds the assembly's own frame
and markers, its ``Parts``, ``ConstraintSets`` (``Joints``, ``Motions``, ``Limits``),
``ConstantGravity`` and ``SimulationParameters``.  A solved file ends with a
``TimeSeries`` table (see :func:`read_asmt_time_series`).

Frames (OndselSolver's conventions, kept here)
----------------------------------------------
* A part's ``Position3D`` ``r_OP`` and ``RotationMatrix`` ``A_OP`` give its frame in the
  assembly frame O, which is cadmotion's world frame W: ``r_W = r_OP + A_OP r_P``; the
  columns of ``A_OP`` are the part's axes.  Units are SI (m, kg, s, rad).
* A marker sits in a ``RefPoint`` (or ``RefCurve``/``RefSurface``) of its part; the
  marker's ``Position3D``/``RotationMatrix`` are relative to the ref point, so the
  marker frame in the part is ``X_PM = X_PR X_RM`` (``r_PM = r_PR + A_PR r_RM``,
  ``A_PM = A_PR A_RM``).
* ``PrincipalMassMarker`` gives the centre of mass in the part frame and the principal
  axes ``A_Pcm``; the inertia about the centre of mass in part axes is
  ``A_Pcm diag(MomentOfInertias) A_Pcmᵀ``.
* The assembly is ground: it becomes a fixed part named after the assembly, carrying the
  assembly's markers.

Joints and motions
------------------
Joints map one-to-one onto cadmotion's joint library (``RevoluteJoint`` -> revolute,
``TranslationalJoint`` -> prismatic, ``CylindricalJoint``, ``SphericalJoint``,
``FixedJoint``, ``UniversalJoint``, ``ConstantVelocityJoint``, ``ParallelAxesJoint``,
``PerpendicularJoint``, ``AngleJoint``, ``PlanarJoint``, ``PointInPlaneJoint``,
``PointInLineJoint``, ``LineInPlaneJoint``).  FreeCAD's Distance joints
(``AssemblyObject::makeMbdJointDistance``) are OndselSolver's compound joints with a
``distanceIJ`` L, each one library joint with ``length = L``:

* ``SphSphJoint`` -> ``distance``: ``|P_j - P_i| = L``;
* ``CylSphJoint`` -> ``point-line-distance``: P_j at L from the z line of marker I;
* ``RevCylJoint`` -> ``line-line-distance``: the z axes parallel and L apart;
* ``RevRevJoint`` -> ``rev-rev-distance``: the same with P_j in the xy plane of marker I.

An ``offset`` of a planar, point-in-plane or line-in-plane joint is folded into marker I
(moved by ``offset`` along its z axis).

OndselSolver's ``GearJoint``, ``RackPinionJoint`` and ``ScrewJoint`` are single
equations between two markers; cadmotion expresses them as couplers of the joints that
carry the two parts (:func:`ondsel_coupler`), so both parts must be held by a revolute
(or cylindrical) / prismatic (or cylindrical) joint to a common carrier (or to ground):

* ``GearJoint`` (``orbit(J about I) + rI/rJ orbit(I about J) = const``) -> ``gear``
  with ``ratio = -(rI/rJ) s_I s_J`` where ``s`` = ±1 align each revolute's angle with the
  gear marker's z axis (a negative ``radiusJ``, FreeCAD's belt, gives a positive ratio);
* ``RackPinionJoint`` (``x_IJ in I + pitchRadius thez_IJ = const``, I on the rack with x
  along it, J on the pinion) -> ``rack-and-pinion`` with
  ``radius = s_rack s_pinion pitchRadius (a·z_I)/(s·x_I)``;
* ``ScrewJoint`` (``2 pi z_IJ - pitch thez_IJ = const``) -> ``rack-and-pinion`` coupling
  the rotating part's revolute angle to the sliding part's prismatic displacement with
  ``radius = -s_slide s_rot pitch (a·z_I) / (2 pi (s·z_I))``.

Markers are normalised so that the two frames of a joint coincide at the initial pose
(:func:`zero_joint_coordinates`; antiparallel axes are flipped by :func:`align_axes`):
every joint coordinate starts at zero, which makes cadmotion's absolute coupler
equations and the file's "relative to the start" gear/rack constants agree.

``RotationalMotion``/``TranslationalMotion`` become drivers of their joint's ``angle``
(``disp``).  OndselSolver prescribes the angle of its own markers, ``thez(t) = f(t)``;
with the normalised markers the driver expression is ``f(t) - thez0``, ``thez0`` being
the file's marker angle at the initial pose (shifted by whole turns to the value nearest
``f(tstart)``).  Limits (``RotationLimit``/``TranslationLimit`` with ``Limit``/``Type``,
see :func:`_limits`) become the joint's ``limits`` and are shifted the same way.  Expressions
are translated by :mod:`cadmotion.importers.asmt_expressions` (never evaluated as Python).

Initial pose
------------
By default the parts start where the part blocks put them.  A file saved after a run holds
the last pose of that run there; ``read_asmt(path, initial_pose="series")`` starts from
the first frame of the stored ``TimeSeries`` instead, which is what the solver assembled
at ``tstart`` (the two can differ by a branch: Gears.asmt's 1:2 pair, half a turn).

Anything else (unknown joint type, ``GeneralMotion``, ``NoRotationJoint``, ...) raises
:class:`~cadmotion.errors.CadImportError` naming the item and its type.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field, replace
from typing import Dict, List, Tuple

import numpy as np

from ..errors import CadImportError, ExpressionError
from ..kernel.spec import (
    DriverSpec,
    Frame,
    InitialVelocitySpec,
    JointSpec,
    MechanismSpec,
    PartSpec,
    TimeFunctionSpec,
)
from ..kernel.rotations import matrix_to_quaternion, quat_to_matrix
from .asmt_expressions import evaluate_expression, parse_expression, translate_expression

__all__ = [
    "read_asmt",
    "read_asmt_simulation",
    "read_asmt_time_series",
    "ondsel_coupler",
    "bryant_to_matrix",
    "align_axes",
    "zero_joint_coordinates",
    "joint_violations",
    "ASMT_JOINT_TYPES",
]

MAX_FILE_BYTES = 256 * 1024 * 1024

#: OndselSolver joint keyword -> cadmotion joint type (couplers are handled separately).
ASMT_JOINT_TYPES: Dict[str, str] = {
    "RevoluteJoint": "revolute",
    "TranslationalJoint": "prismatic",
    "CylindricalJoint": "cylindrical",
    "SphericalJoint": "spherical",
    "FixedJoint": "fixed",
    "UniversalJoint": "universal",
    "ConstantVelocityJoint": "constant-velocity",
    "ParallelAxesJoint": "parallel",
    "PerpendicularJoint": "perpendicular",
    "AngleJoint": "angle",
    "PlanarJoint": "planar",
    "PointInPlaneJoint": "point-on-plane",
    "PointInLineJoint": "point-on-line",
    "SphSphJoint": "distance",
    "CylSphJoint": "point-line-distance",
    "RevCylJoint": "line-line-distance",
    "RevRevJoint": "rev-rev-distance",
    "LineInPlaneJoint": "line-in-plane",
    "GearJoint": "gear",
    "RackPinionJoint": "rack-and-pinion",
    "ScrewJoint": "rack-and-pinion",
}

#: OndselSolver joints that cadmotion's joint library cannot express.
_NOT_IN_KERNEL = {
    "NoRotationJoint", "InLineJoint", "InPlaneJoint", "CompoundJoint",
}

_MOTIONS = {"RotationalMotion": "angle", "TranslationalMotion": "disp"}

#: OndselSolver's compound joints carrying a ``distanceIJ`` (m)
_DISTANCE_JOINTS = ("SphSphJoint", "CylSphJoint", "RevCylJoint", "RevRevJoint")


# --------------------------------------------------------------------------------------
# small frame algebra (numpy); poses are (R, p) with R's columns the child axes
# --------------------------------------------------------------------------------------
def _frame(R, p):
    return Frame(tuple(float(x) for x in p), tuple(tuple(float(x) for x in row) for row in R))


def _frame_arrays(frame):
    return np.array(frame.rotation, float), np.array(frame.origin, float)


#: a stored RotationMatrix whose singular values are off 1 by more than this is not a
#: rotation (files print 14 digits; FreeCAD's placements reach ~1e-6)
ROTATION_REFUSE = 1e-3
#: below this the deviation is print noise and is corrected silently
ROTATION_NOTE = 1e-9


def _orthonormalize(R, where):
    """The nearest rotation to R (polar factor ``U Vᵀ`` of its SVD).

    Matrices off a rotation by more than :data:`ROTATION_NOTE` (largest ``|σ - 1|``) are
    corrected with a warning naming ``where`` (the part or marker); beyond
    :data:`ROTATION_REFUSE`, or with a negative determinant (a reflection), the matrix is
    refused with a :class:`CadImportError` naming it.
    """
    R = np.asarray(R, float)
    if R.shape != (3, 3) or not np.all(np.isfinite(R)):
        raise CadImportError("a RotationMatrix is not a finite 3x3 matrix", where=where)
    U, S, Vt = np.linalg.svd(R)
    dev = float(np.max(np.abs(S - 1.0)))
    if dev > ROTATION_REFUSE or np.linalg.det(R) <= 0:
        raise CadImportError(
            f"a RotationMatrix is not a rotation (singular values {S.round(9).tolist()}, "
            f"det {np.linalg.det(R):.6g})", where=where,
            hint="the columns must be orthonormal axes (right-handed)")
    if dev > ROTATION_NOTE:
        warnings.warn(f"{where}: the RotationMatrix is off a rotation by {dev:.2g}; "
                      "cadmotion uses the nearest rotation", stacklevel=4)
    return U @ Vt


def bryant_to_matrix(angles):
    """Rotation matrices of OndselSolver's Bryant angles: ``R = Rx(a) Ry(b) Rz(c)``.

    Parameters
    ----------
    angles : array_like, shape (..., 3), rad

    Returns
    -------
    ndarray, shape (..., 3, 3)

    Notes
    -----
    This inverts ``FullMatrix::bryantAngles`` of OndselSolver, which returns
    ``(atan2(-A12, A22), asin(A02), atan2(-A01, A00))``.  Near ``|A02| > 0.9999`` the
    solver sets the third angle to zero and the round trip is only approximate.
    """
    a = np.asarray(angles, float)
    cx, sx = np.cos(a[..., 0]), np.sin(a[..., 0])
    cy, sy = np.cos(a[..., 1]), np.sin(a[..., 1])
    cz, sz = np.cos(a[..., 2]), np.sin(a[..., 2])
    R = np.empty(a.shape[:-1] + (3, 3))
    R[..., 0, 0] = cy * cz
    R[..., 0, 1] = -cy * sz
    R[..., 0, 2] = sy
    R[..., 1, 0] = cx * sz + sx * sy * cz
    R[..., 1, 1] = cx * cz - sx * sy * sz
    R[..., 1, 2] = -sx * cy
    R[..., 2, 0] = sx * sz - cx * sy * cz
    R[..., 2, 1] = sx * cz + cx * sy * sz
    R[..., 2, 2] = cx * cy
    return R


# --------------------------------------------------------------------------------------
# the block tree
# --------------------------------------------------------------------------------------
@dataclass
class _Node:
    text: str
    line: int
    children: List["_Node"] = field(default_factory=list)

    def child(self, key):
        for c in self.children:
            if c.text == key:
                return c
        return None

    def all(self, key):
        return [c for c in self.children if c.text == key]


class _Reader:
    """Parses the block tree of one file and reads typed values with located errors."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.name = os.path.basename(self.path)
        try:
            size = os.path.getsize(self.path)
        except OSError as exc:
            raise CadImportError(f"cannot read the file: {exc.strerror}", where=self.path) from None
        if size > MAX_FILE_BYTES:
            raise CadImportError(
                f"the file is {size / 1e6:.0f} MB; .asmt files over {MAX_FILE_BYTES // 2**20} MiB "
                "are refused", where=self.path)
        with open(self.path, "rb") as fh:
            raw = fh.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("latin-1")
        lines = text.splitlines()
        self.model_lines, self.series_lines, self.series_start = [], [], None
        for k, line in enumerate(lines):
            if line.strip() == "TimeSeries" and not line[:1].isspace():
                self.series_start = k + 1
                self.series_lines = lines[k + 1:]
                break
            self.model_lines.append(line)
        self.root = self._tree(self.model_lines)

    def where(self, node=None, item=None):
        loc = f"{self.name}"
        if node is not None:
            loc += f":{node.line}"
        if item:
            loc += f": {item}"
        return loc

    def _tree(self, lines):
        root = _Node("<file>", 0)
        stack = [(-1, root)]
        for k, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            depth = len(line) - len(line.lstrip("\t"))
            node = _Node(line.strip(), k)
            while stack and stack[-1][0] >= depth:
                stack.pop()
            stack[-1][1].children.append(node)
            stack.append((depth, node))
        return root

    # -- typed values ---------------------------------------------------------------
    def string(self, node, key, item=None, default=None):
        """The text under ``key``; a key with an empty value (OndselSolver writes an empty
        line, e.g. a joint whose ``Name`` is empty) gives ``""``, or ``default`` when one
        is given; a missing key gives ``default`` or an error naming it."""
        c = node.child(key)
        if c is None or not c.children:
            if default is not None:
                return default
            if c is not None:
                return ""
            raise CadImportError(f"missing '{key}'", where=self.where(node, item))
        return c.children[0].text

    def numbers(self, node, key, n, item=None, rows=1, default=None):
        c = node.child(key)
        if c is None:
            if default is not None:
                return np.array(default, float)
            raise CadImportError(f"missing '{key}'", where=self.where(node, item))
        vals = []
        for r in c.children[:rows]:
            try:
                vals.append([float(x.replace("d", "e")) for x in r.text.split()])
            except ValueError:
                raise CadImportError(f"'{key}' holds {r.text!r}, not numbers",
                                     where=self.where(r, item)) from None
        arr = np.array(vals, float) if vals else np.zeros((0,))
        if arr.shape != (rows, n) or not np.all(np.isfinite(arr)):
            raise CadImportError(f"'{key}' must hold {rows} row(s) of {n} finite numbers",
                                 where=self.where(c, item))
        return arr[0] if rows == 1 else arr

    def number(self, node, key, item=None, default=None):
        if node.child(key) is None and default is not None:
            return float(default)
        return float(self.numbers(node, key, 1, item)[0])

    def pose(self, node, item):
        p = self.numbers(node, "Position3D", 3, item)
        R = _orthonormalize(self.numbers(node, "RotationMatrix", 3, item, rows=3),
                            self.where(node, item))
        return R, p


# --------------------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------------------
@dataclass
class _Model:
    assembly: str
    parts: List[PartSpec]
    pose: Dict[str, Tuple[np.ndarray, np.ndarray]]  # part -> (R_WP, p_WP)
    markers: Dict[str, Tuple[str, np.ndarray, np.ndarray]]  # full name -> (part, R_PM, p_PM)
    joint_nodes: List[_Node]
    motion_nodes: List[_Node]
    limit_nodes: List[_Node]
    gravity: Tuple[float, float, float]
    velocities: List[InitialVelocitySpec]
    has_forces: bool
    unnamed_joints: List[str] = field(default_factory=list)  # names given to joints with an empty Name


def _container_markers(rd, node, prefix, item):
    """Markers of a part or assembly: full name -> (R_PM, p_PM)."""
    out = {}
    for group, kind in (("RefPoints", "RefPoint"), ("RefCurves", "RefCurve"),
                        ("RefSurfaces", "RefSurface")):
        g = node.child(group)
        if g is None:
            continue
        for ref in g.all(kind):
            R_PR, p_PR = rd.pose(ref, f"{item} {kind}")
            ms = ref.child("Markers")
            for m in (ms.all("Marker") if ms is not None else []):
                mname = rd.string(m, "Name", item)
                R_RM, p_RM = rd.pose(m, f"{item} marker {mname}")
                full = f"{prefix}/{mname}"
                if full in out:
                    raise CadImportError(f"marker {full} is defined twice", where=rd.where(m, item))
                out[full] = (R_PR @ R_RM, p_PR + R_PR @ p_RM)
    return out


def _mass_properties(rd, node, item):
    pmm = node.child("PrincipalMassMarker")
    if pmm is None:
        return None, (0.0, 0.0, 0.0), None
    R, com = rd.pose(pmm, f"{item} PrincipalMassMarker")
    mass = rd.number(pmm, "Mass", item, default=0.0)
    moments = rd.numbers(pmm, "MomentOfInertias", 3, item, default=(0.0, 0.0, 0.0))
    if mass <= 0.0:
        return None, tuple(float(x) for x in com), None
    J = R @ np.diag(moments) @ R.T
    return float(mass), tuple(float(x) for x in com), tuple(tuple(float(x) for x in r) for r in J)


def _read_model(rd):
    top = rd.root.child("Assembly")
    if top is None:
        raise CadImportError("no 'Assembly' block: this is not an OndselSolver .asmt file",
                             where=rd.path, hint="the file should start with 'Assembly' after a header line")
    asm = rd.string(top, "Name", "Assembly")
    R_WA, p_WA = rd.pose(top, f"assembly {asm}")
    markers = {}
    for full, (R, p) in _container_markers(rd, top, f"/{asm}", f"assembly {asm}").items():
        markers[full] = (asm, R, p)
    parts = [PartSpec(name=asm, fixed=True, position=tuple(float(x) for x in p_WA),
                      orientation=matrix_to_quaternion(R_WA), path=f"/{asm}",
                      source=f"{rd.name}: Assembly {asm}")]
    pose = {asm: (R_WA, p_WA)}
    velocities = []
    pnode = top.child("Parts")
    for pn in (pnode.all("Part") if pnode is not None else []):
        name = rd.string(pn, "Name", "Part")
        item = f"part {name}"
        if name in pose:
            raise CadImportError(f"two parts are called {name!r}", where=rd.where(pn, item))
        R, p = rd.pose(pn, item)
        mass, com, inertia = _mass_properties(rd, pn, item)
        pose[name] = (R, p)
        parts.append(PartSpec(name=name, position=tuple(float(x) for x in p),
                              orientation=matrix_to_quaternion(R), mass=mass, com=com,
                              inertia=inertia, path=f"/{asm}/{name}",
                              source=f"{rd.name}:{pn.line}: Part {name}"))
        v = rd.numbers(pn, "Velocity3D", 3, item, default=(0.0, 0.0, 0.0))
        w = rd.numbers(pn, "Omega3D", 3, item, default=(0.0, 0.0, 0.0))
        if np.any(v != 0.0) or np.any(w != 0.0):
            velocities.append(InitialVelocitySpec(name, tuple(float(x) for x in v),
                                                  tuple(float(x) for x in w)))
        for full, (Rm, pm) in _container_markers(rd, pn, f"/{asm}/{name}", item).items():
            if full in markers:
                raise CadImportError(f"marker {full} is defined twice", where=rd.where(pn, item))
            markers[full] = (name, Rm, pm)
    cs = top.child("ConstraintSets")
    joints = cs.child("Joints") if cs is not None else None
    motions = cs.child("Motions") if cs is not None else None
    limits = cs.child("Limits") if cs is not None else None
    g = top.child("ConstantGravity")
    gravity = (0.0, 0.0, 0.0)
    if g is not None and g.children:
        gravity = tuple(float(x) for x in rd.numbers(top, "ConstantGravity", 3, "gravity"))
    ft = top.child("ForceTorques")
    return _Model(
        assembly=asm, parts=parts, pose=pose, markers=markers,
        joint_nodes=list(joints.children) if joints is not None else [],
        motion_nodes=list(motions.children) if motions is not None else [],
        limit_nodes=list(limits.children) if limits is not None else [],
        gravity=gravity, velocities=velocities,
        has_forces=bool(ft is not None and ft.children),
    )


def _marker(rd, model, node, key, item):
    ref = rd.string(node, key, item)
    if ref not in model.markers:
        raise CadImportError(f"{key} {ref} is not a marker of the assembly",
                             where=rd.where(node, item),
                             hint="marker paths look like /Assembly/Part/Marker")
    return ref, model.markers[ref]


def _world(model, part, R_PM, p_PM):
    R, p = model.pose[part]
    return R @ R_PM, p + R @ p_PM


# --------------------------------------------------------------------------------------
# couplers (shared with the FCStd importer)
# --------------------------------------------------------------------------------------
_ROT = ("revolute", "cylindrical")
_SLIDE = ("prismatic", "cylindrical")


def _joint_axis(joint, pose):
    """World z axis of marker i, world origin of marker i of a JointSpec."""
    R_P, p_P = pose[joint.parts[0]]
    R_M, p_M = _frame_arrays(joint.markers[0])
    return (R_P @ R_M)[:, 2], p_P + R_P @ p_M


def _carrier_key(part, fixed):
    return "<ground>" if part in fixed else part


def _find_pair(part_a, kinds_a, part_b, kinds_b, joints, fixed):
    """Joints (ja, jb) holding part_a and part_b to a common carrier (all ground parts are one)."""
    best = None
    for ja in joints:
        if ja.type not in kinds_a or part_a not in ja.parts:
            continue
        ca = ja.parts[1] if ja.parts[0] == part_a else ja.parts[0]
        for jb in joints:
            if jb is ja or jb.type not in kinds_b or part_b not in jb.parts:
                continue
            cb = jb.parts[1] if jb.parts[0] == part_b else jb.parts[0]
            if _carrier_key(ca, fixed) == _carrier_key(cb, fixed):
                score = (ja.type == kinds_a[0]) + (jb.type == kinds_b[0])
                if best is None or score > best[0]:
                    best = (score, ja, jb)
    return None if best is None else best[1:]


def _side_sign(joint, part):
    """+1 if ``part`` is the j side of the joint (its motion is the joint's coordinate)."""
    return 1.0 if joint.parts[1] == part else -1.0


def _distance_to_line(point, origin, axis):
    d = point - origin
    return float(np.linalg.norm(d - np.dot(d, axis) * axis))


def ondsel_coupler(kind, name, part_i, frame_i, part_j, frame_j, value, joints, pose, fixed,
                   *, value_j=None, where=None, length_tol=1e-9):
    """Express an OndselSolver gear, rack-pinion or screw constraint as a cadmotion coupler.

    Parameters
    ----------
    kind : {"gear", "rack-pinion", "screw"}
        The OndselSolver joint (``GearJoint``, ``RackPinionJoint``, ``ScrewJoint``).
    name : str
        Name of the resulting coupler.
    part_i, part_j : str
        Parts carrying marker I and marker J.
    frame_i, frame_j : Frame
        X_PiMi and X_PjMj, markers in their part frames (m).
    value : float
        ``radiusI`` (gear, m), ``pitchRadius`` (rack-pinion, m) or ``pitch`` (screw, m/turn).
    value_j : float
        ``radiusJ`` for a gear (m); negative for FreeCAD's belt.
    joints : list of JointSpec
        The non-coupler joints already converted; the couplers refer to them.
    pose : dict
        Part name -> (R_WP, p_WP), the initial pose (world frame).
    fixed : set of str
        Ground parts (they count as one common carrier).
    where : str
        Location for messages.
    length_tol : float
        Distance (m) within which a gear or pinion marker origin counts as on its axis.

    Returns
    -------
    JointSpec
        ``gear`` (``ratio``) or ``rack-and-pinion`` (``radius``, m/rad) with
        ``joints = (rotational joint, second joint)``.

    Raises
    ------
    CadImportError
        If no pair of joints holds the two parts to a common carrier, or the axes of the
        constraint and of those joints are not parallel.
    """
    R_i, o_i = _world_of(pose, part_i, frame_i)
    R_j, o_j = _world_of(pose, part_j, frame_j)
    z_i = R_i[:, 2]
    label = {"gear": "gear", "rack-pinion": "rack-and-pinion", "screw": "screw"}[kind]

    def parallel(a, b, what):
        c = float(np.dot(a, b))
        if abs(abs(c) - 1.0) > 1e-6:
            raise CadImportError(
                f"{label} {name}: the axis of {what} is not parallel to the {label}'s z axis "
                f"(cos = {c:.6g})", where=where)
        return math.copysign(1.0, c)

    if kind == "gear":
        pair = _find_pair(part_i, _ROT, part_j, _ROT, joints, fixed)
        if pair is None:
            raise CadImportError(
                f"gear {name}: parts {part_i} and {part_j} are not both held by revolute joints "
                "to a common carrier, which cadmotion's gear coupler needs", where=where,
                hint="add revolute joints of both gears to the same part (or to ground)")
        ja, jb = pair
        a_a, c_a = _joint_axis(ja, pose)
        a_b, c_b = _joint_axis(jb, pose)
        s_i = _side_sign(ja, part_i) * parallel(a_a, z_i, f"joint {ja.name}")
        s_j = _side_sign(jb, part_j) * parallel(a_b, R_j[:, 2], f"joint {jb.name}")
        for o, c, a, jn in ((o_i, c_a, a_a, ja.name), (o_j, c_b, a_b, jb.name)):
            if _distance_to_line(o, c, a) > length_tol:
                warnings.warn(f"{where}: gear {name}: a gear marker is not on the axis of joint "
                              f"{jn}; the coupler uses the constant ratio of the gear radii",
                              stacklevel=3)
        if value_j is None or value_j == 0.0:
            raise CadImportError(f"gear {name}: radiusJ is zero or missing", where=where)
        ratio = -(value / value_j) * s_i * s_j
        return JointSpec(name=name, type="gear" if ratio < 0 else "belt", joints=(ja.name, jb.name),
                         params=(("ratio", float(ratio)),), source=where or "")

    if kind == "rack-pinion":
        rack, pinion, R_rack, o_pin = part_i, part_j, R_i, o_j
        pair = _find_pair(pinion, _ROT, rack, _SLIDE, joints, fixed)
        if pair is None:
            alt = _find_pair(part_i, _ROT, part_j, _SLIDE, joints, fixed)
            if alt is None:
                raise CadImportError(
                    f"rack-and-pinion {name}: {part_j} (pinion) needs a revolute joint and "
                    f"{part_i} (rack) a prismatic joint to a common carrier", where=where,
                    hint="OndselSolver puts marker I on the rack and marker J on the pinion")
            warnings.warn(f"{where}: rack-and-pinion {name}: marker I is on the rotating part and "
                          "marker J on the sliding part (OndselSolver expects the reverse); "
                          "converted with the roles swapped", stacklevel=3)
            pair = alt
            rack, pinion, R_rack, o_pin = part_j, part_i, R_j, o_i
        jq, jt = pair
        a_p, c_p = _joint_axis(jq, pose)
        s_dir, _ = _joint_axis(jt, pose)
        z_r, x_r = R_rack[:, 2], R_rack[:, 0]
        sz = parallel(a_p, z_r, f"joint {jq.name}")
        sx = float(np.dot(s_dir, x_r))
        if abs(sx) < 1e-6:
            raise CadImportError(f"rack-and-pinion {name}: the rack marker's x axis is "
                                 f"perpendicular to the slide of joint {jt.name}", where=where)
        if _distance_to_line(o_pin, c_p, a_p) > length_tol:
            warnings.warn(f"{where}: rack-and-pinion {name}: the pinion marker is not on the axis "
                          f"of joint {jq.name}; the coupler is linearised", stacklevel=3)
        radius = _side_sign(jt, rack) * _side_sign(jq, pinion) * value * sz / sx
        return JointSpec(name=name, type="rack-and-pinion", joints=(jq.name, jt.name),
                         params=(("radius", float(radius)),), source=where or "")

    if kind == "screw":
        pair = _find_pair(part_j, _ROT, part_i, _SLIDE, joints, fixed)
        rot, slide = part_j, part_i
        if pair is None:
            pair = _find_pair(part_i, _ROT, part_j, _SLIDE, joints, fixed)
            rot, slide = part_i, part_j
        if pair is None:
            raise CadImportError(
                f"screw {name}: one of {part_i}, {part_j} needs a revolute joint and the other a "
                "prismatic joint to a common carrier, which cadmotion's coupler needs", where=where,
                hint="or model the pair with a single cadmotion 'screw' joint")
        jq, jt = pair
        a_p, _ = _joint_axis(jq, pose)
        s_dir, _ = _joint_axis(jt, pose)
        sz = parallel(a_p, z_i, f"joint {jq.name}")
        sd = parallel(s_dir, z_i, f"joint {jt.name}")
        radius = -_side_sign(jt, slide) * _side_sign(jq, rot) * value * sz / (2.0 * math.pi * sd)
        return JointSpec(name=name, type="rack-and-pinion", joints=(jq.name, jt.name),
                         params=(("radius", float(radius)),), source=where or "")
    raise ValueError(kind)


def _world_of(pose, part, frame):
    R_P, p_P = pose[part]
    R_M, p_M = _frame_arrays(frame)
    return R_P @ R_M, p_P + R_P @ p_M


#: Joint types whose two z axes only need to be parallel; an antiparallel marker J is
#: turned by pi about its x axis (same constraint, same angle coordinate, frames coincide).
_AXIS_TYPES = ("revolute", "cylindrical", "prismatic", "planar", "parallel",
               "line-line-distance", "rev-rev-distance")
_FLIP = np.diag([1.0, -1.0, -1.0])


def align_axes(jtype, R_WMi, R_WMj, R_PjMj):
    """Marker J rotation ``R_PjMj`` turned by pi about its x axis when its z axis is
    antiparallel to marker I's (world rotations ``R_WMi``, ``R_WMj``) in a joint that only
    needs parallel axes.  FreeCAD often saves revolute JCS facing each other; the kernel
    expects coinciding frames at the initial pose.  ``x_j`` is unchanged, so the joint's
    angle coordinate atan2(y_i·x_j, x_i·x_j) is unchanged too."""
    if jtype in _AXIS_TYPES and float(R_WMi[:, 2] @ R_WMj[:, 2]) < 0.0:
        return R_PjMj @ _FLIP
    return R_PjMj


def zero_joint_coordinates(jtype, X_WPi, X_PiMi, X_WPj, X_PjMj):
    """Markers turned/shifted so that the joint's coordinates are zero at the initial pose.

    cadmotion's couplers relate absolute joint coordinates and the spec expects the two
    marker frames to coincide at the initial pose.  For a joint with an ``angle``
    (revolute, cylindrical, planar) marker J is turned about its z axis by the initial
    angle; for one with a ``disp`` (prismatic, cylindrical, point-on-line) marker J is
    moved back along the joint axis by the initial displacement.  Neither changes the
    constraint, and marker I (the joint's frame as the CAD shows it) is never moved.
    A prismatic joint's twist is a constraint, not a coordinate, and is left alone.

    Parameters
    ----------
    jtype : str
        cadmotion joint type.
    X_WPi, X_WPj : (R, p)
        Part poses in the world frame.
    X_PiMi, X_PjMj : (R, p)
        Marker frames in their parts (m).

    Returns
    -------
    (R_PiMi, p_PiMi), (R_PjMj, p_PjMj), offsets
        The new marker frames and ``offsets`` = {"angle": rad, "disp": m}: the initial
        coordinates of the original markers (add them to recover the original ones).
    """
    (R_WPi, p_WPi), (R_i, p_i) = X_WPi, X_PiMi
    (R_WPj, p_WPj), (R_j, p_j) = X_WPj, X_PjMj
    Ri, oi = R_WPi @ R_i, p_WPi + R_WPi @ p_i
    Rj, oj = R_WPj @ R_j, p_WPj + R_WPj @ p_j
    offsets = {}
    if jtype in ("revolute", "cylindrical", "planar"):
        th = marker_angle(Ri, Rj)
        offsets["angle"] = th
        c, s = math.cos(th), math.sin(th)
        R_j = R_j @ np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    if jtype in ("prismatic", "cylindrical", "point-on-line"):
        d = float((oj - oi) @ Ri[:, 2])
        offsets["disp"] = d
        # along marker J's own axis, so that its line stays where it is even when the
        # file's pose is not assembled (then z_j is not yet z_i)
        p_j = p_j - d * math.copysign(1.0, float(Ri[:, 2] @ Rj[:, 2])) * R_j[:, 2]
    return (R_i, p_i), (R_j, p_j), offsets


def joint_violations(spec, tol=1e-7):
    """How far the initial pose of ``spec`` is from satisfying each joint.

    Returns
    -------
    list of (joint name, what, value)
        ``what`` is ``origin`` (m, distance between marker origins), ``line`` (m, marker J
        origin from the line of marker I's z), ``plane`` (m), ``axis`` (rad, angle between
        the z axes that should be parallel, or from perpendicular for line-in-plane),
        ``twist`` (rad) or ``distance`` (m, error of a distance joint's length); only
        values above ``tol``.
    """

    pose = {p.name: (quat_to_matrix(p.orientation), np.array(p.position, float)) for p in spec.parts}
    out = []
    for j in spec.joints:
        if len(j.parts) != 2 or any(p not in pose for p in j.parts):
            continue
        R_i, o_i = _world_of(pose, j.parts[0], j.markers[0])
        R_j, o_j = _world_of(pose, j.parts[1], j.markers[1])
        d = o_j - o_i
        z = R_i[:, 2]
        checks = []
        if j.type in ("revolute", "spherical", "fixed", "universal", "constant-velocity", "screw"):
            checks.append(("origin", float(np.linalg.norm(d))))
        if j.type in ("prismatic", "cylindrical", "point-on-line"):
            checks.append(("line", float(np.linalg.norm(d - (d @ z) * z))))
        if j.type in ("planar", "point-on-plane", "line-in-plane", "rev-rev-distance"):
            checks.append(("plane", abs(float(d @ z))))
        if j.type == "line-in-plane":
            checks.append(("axis", abs(math.asin(max(-1.0, min(1.0, float(z @ R_j[:, 2])))))))
        length = j.param("length")
        if j.type == "distance" and length is not None:
            checks.append(("distance", abs(float(np.linalg.norm(d)) - length)))
        if j.type in ("point-line-distance", "line-line-distance", "rev-rev-distance"):
            checks.append(("distance", abs(float(np.linalg.norm(d - (d @ z) * z)) - length)))
        if j.type in _AXIS_TYPES + ("fixed", "screw"):
            c = abs(float(z @ R_j[:, 2]))
            checks.append(("axis", math.acos(min(1.0, c))))
        if j.type in ("prismatic", "fixed"):
            checks.append(("twist", abs(math.atan2(float(R_i[:, 1] @ R_j[:, 0]),
                                                   float(R_i[:, 0] @ R_j[:, 0])))))
        out.extend((j.name, what, v) for what, v in checks if v > tol)
    return out


def marker_angle(R_i, R_j):
    """cadmotion's joint angle between two world marker rotations: atan2(y_i·x_j, x_i·x_j)."""
    return math.atan2(float(R_i[:, 1] @ R_j[:, 0]), float(R_i[:, 0] @ R_j[:, 0]))


# --------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------
def _joints(rd, model):
    specs, couplers, by_markers, offsets = [], [], {}, {}
    fixed = {p.name for p in model.parts if p.fixed}
    names = set()
    for jn in model.joint_nodes:
        jtype = jn.text
        jname = rd.string(jn, "Name", jtype)
        if not jname:  # an empty Name is a name; outputs need a visible one
            jname = f"{jtype}@{jn.line}"
            warnings.warn(f"{rd.where(jn, jtype)}: the joint's Name is empty; cadmotion calls it "
                          f"{jname} (the file's line)", stacklevel=3)
            model.unnamed_joints.append(jname)
        item = f"joint {jname} ({jtype})"
        where = rd.where(jn, item)
        if jname in names:
            raise CadImportError(f"two joints are called {jname!r}", where=where)
        names.add(jname)
        if jtype in _NOT_IN_KERNEL:
            raise CadImportError(f"joint {jname} has type {jtype}, which cadmotion's joint library "
                                 "cannot express", where=where,
                                 hint="replace it in FreeCAD by revolute/slider/planar joints")
        if jtype not in ASMT_JOINT_TYPES:
            raise CadImportError(f"joint {jname} has the unknown type {jtype!r}", where=where,
                                 hint="known types: " + ", ".join(sorted(ASMT_JOINT_TYPES)))
        mi, (pi, R_i, p_i) = _marker(rd, model, jn, "MarkerI", item)
        mj, (pj, R_j, p_j) = _marker(rd, model, jn, "MarkerJ", item)
        if pi == pj:
            raise CadImportError(f"joint {jname} connects part {pi} to itself", where=where)
        src = f"{rd.name}:{jn.line}: {jtype} {jname}"
        if jtype in ("GearJoint", "RackPinionJoint", "ScrewJoint"):
            couplers.append((jn, jtype, jname, pi, _frame(R_i, p_i), pj, _frame(R_j, p_j), src))
            continue
        params = ()
        ktype = ASMT_JOINT_TYPES[jtype]
        R_j = align_axes(ktype, model.pose[pi][0] @ R_i, model.pose[pj][0] @ R_j, R_j)
        if jtype in ("PlanarJoint", "PointInPlaneJoint", "LineInPlaneJoint"):
            offset = rd.number(jn, "offset", item, default=0.0)
            p_i = p_i + offset * R_i[:, 2]
        (R_i, p_i), (R_j, p_j), offsets[jname] = zero_joint_coordinates(
            ktype, model.pose[pi], (R_i, p_i), model.pose[pj], (R_j, p_j))
        if jtype == "AngleJoint":
            params = (("angle", rd.number(jn, "theIzJz", item)),)
        elif jtype in _DISTANCE_JOINTS:
            length = rd.number(jn, "distanceIJ", item)
            if length < 0.0:
                raise CadImportError(f"joint {jname} has a negative distanceIJ {length:g}",
                                     where=where, hint="a distance is >= 0 (m)")
            params = (("length", length),)
        spec = JointSpec(name=jname, type=ktype, parts=(pi, pj),
                         markers=(_frame(R_i, p_i), _frame(R_j, p_j)), params=params, source=src)
        specs.append(spec)
        by_markers[(mi, mj)] = jname
    for jn, jtype, jname, pi, fi, pj, fj, src in couplers:
        item = f"joint {jname} ({jtype})"
        where = rd.where(jn, item)
        if jtype == "GearJoint":
            spec = ondsel_coupler("gear", jname, pi, fi, pj, fj, rd.number(jn, "radiusI", item),
                                  specs, model.pose, fixed, value_j=rd.number(jn, "radiusJ", item),
                                  where=where)
        elif jtype == "RackPinionJoint":
            spec = ondsel_coupler("rack-pinion", jname, pi, fi, pj, fj,
                                  rd.number(jn, "pitchRadius", item), specs, model.pose, fixed,
                                  where=where)
        else:
            spec = ondsel_coupler("screw", jname, pi, fi, pj, fj, rd.number(jn, "pitch", item),
                                  specs, model.pose, fixed, where=where)
        specs.append(replace(spec, source=src))
    return specs, by_markers, offsets


def _joint_by_path(model, jref, joints):
    """The joint a path ``/<assembly>/<joint name>`` names, or None.  ``/<assembly>/`` is
    the joint whose Name is empty, when there is exactly one."""
    prefix = f"/{model.assembly}/"
    if not jref.startswith(prefix):
        return None
    jname = jref[len(prefix):]
    if not jname:
        return model.unnamed_joints[0] if len(model.unnamed_joints) == 1 else None
    return jname if jname in joints else None


def _drivers(rd, model, specs, by_markers, offsets, tstart):
    drivers = []
    joints = {j.name: j for j in specs}
    for mn in model.motion_nodes:
        mtype = mn.text
        mname = rd.string(mn, "Name", mtype) or f"{mtype}@{mn.line}"
        item = f"motion {mname} ({mtype})"
        where = rd.where(mn, item)
        if mtype not in _MOTIONS:
            raise CadImportError(f"motion {mname} has type {mtype}, which cadmotion cannot import",
                                 where=where, hint="use RotationalMotion or TranslationalMotion")
        coord = _MOTIONS[mtype]
        jref = rd.string(mn, "MotionJoint", item, default="")
        if jref.startswith("/"):
            jname = _joint_by_path(model, jref, joints)
            if jname is None:
                raise CadImportError(f"motion {mname} drives {jref}, which is not a joint",
                                     where=where)
        else:
            mi = rd.string(mn, "MarkerI", item, default="")
            mj = rd.string(mn, "MarkerJ", item, default="")
            jname = by_markers.get((mi, mj))
            if jname is None:
                raise CadImportError(f"motion {mname} acts between markers {mi or '?'} and "
                                     f"{mj or '?'}, which are not the markers of a joint",
                                     where=where)
        joint = joints[jname]
        ok = _ROT if coord == "angle" else _SLIDE
        if joint.type not in ok:
            raise CadImportError(f"motion {mname} ({coord}) drives joint {jname} of type "
                                 f"{joint.type}, which has no {coord} coordinate", where=where)
        key = "RotationZ" if coord == "angle" else "TranslationZ"
        text = rd.string(mn, key, item)
        try:
            node = parse_expression(text, where=where)
            expr = translate_expression(text, where=where)
            f0 = evaluate_expression(node, tstart, where=where)
        except ExpressionError as exc:
            raise CadImportError(f"motion {mname}: {exc.message}", where=where, hint=exc.hint) from None
        # the file prescribes the coordinate of its own markers; ours start at zero
        q0 = offsets[jname][coord]
        if coord == "angle":
            q0 += 2.0 * math.pi * round((f0 - q0) / (2.0 * math.pi))
        if abs(q0) > 1e-12:  # below that it is print noise of the file's 14 digits
            expr = f"{expr} - ({q0!r})"
        drivers.append(DriverSpec(name=mname, function=TimeFunctionSpec(expression=expr),
                                  joint=jname, coordinate=coord,
                                  source=f"{rd.name}:{mn.line}: {mtype} {mname} = {text}"))
    return drivers


#: limit block keyword -> the joint coordinate it bounds
_LIMITS = {"RotationLimit": "angle", "TranslationLimit": "disp"}


def _limit_joint(rd, model, ln, lname, item, joints, by_markers):
    """The joint a limit block bounds: its ``MotionJoint`` path when set (OndselSolver then
    takes the joint's markers), else the joint between its ``MarkerI``/``MarkerJ``."""
    where = rd.where(ln, item)
    jref = rd.string(ln, "MotionJoint", item, default="")
    if jref:
        jname = _joint_by_path(model, jref, joints)
        if jname is None:
            raise CadImportError(f"limit {lname} bounds {jref}, which is not a joint", where=where,
                                 hint=f"joint paths look like /{model.assembly}/<joint name>")
        return jname
    key = (rd.string(ln, "MarkerI", item, default=""), rd.string(ln, "MarkerJ", item, default=""))
    jname = by_markers.get(key)
    if jname is None:
        raise CadImportError(
            f"limit {lname} acts between markers {key[0] or '?'} and {key[1] or '?'}, which are "
            "not the markers (in that order) of a joint", where=where,
            hint="give the limit a MotionJoint, or the MarkerI/MarkerJ of the joint it bounds")
    return jname


def _limits(rd, model, specs, by_markers, offsets):
    """Fold RotationLimit/TranslationLimit blocks into the joints they bound.

    OndselSolver writes a limit as ``Name``, ``MarkerI``, ``MarkerJ``, ``MotionJoint`` (a
    joint path, or empty: then the markers name the joint), ``Limit`` (an expression in
    rad or m), ``Type`` (``=>``: lower bound, ``=<``: upper bound), ``Tol`` and optionally
    ``Behavior`` (``Rigid``/``Compliant``), ``Stiffness``, ``Damping``.  Older files use
    ``limit``/``type``; both spellings are read.  The bound is on the joint's own angle
    (displacement) as OndselSolver measures it between the markers; it is shifted by the
    initial coordinate like the drivers (the markers are normalised to start at zero).
    ``Tol`` is not needed (cadmotion reports limits, it does not enforce them) and a
    compliant limit's stiffness and damping are not imported (a warning says so).
    """
    extra = {}
    joints = {j.name: j for j in specs}
    for ln in model.limit_nodes:
        ltype = ln.text
        lname = rd.string(ln, "Name", ltype, default="")
        item = f"limit {lname} ({ltype})"
        where = rd.where(ln, item)
        coord = _LIMITS.get(ltype)
        if coord is None:
            raise CadImportError(f"limit {lname} has the unknown type {ltype!r}", where=where,
                                 hint="known limit types: " + ", ".join(_LIMITS))
        jname = _limit_joint(rd, model, ln, lname, item, joints, by_markers)
        measures = {"angle": _ROT + ("planar",), "disp": _SLIDE + ("point-on-line",)}[coord]
        if joints[jname].type not in measures:
            raise CadImportError(
                f"limit {lname} bounds the {coord} of joint {jname}, a {joints[jname].type} joint, "
                f"which has no {coord} coordinate", where=where)
        vkey = "Limit" if ln.child("Limit") is not None else "limit"
        tkey = "Type" if ln.child("Type") is not None else "type"
        try:
            value = evaluate_expression(rd.string(ln, vkey, item), where=where)
        except ExpressionError as exc:
            raise CadImportError(f"limit {lname}: {exc.message}", where=where, hint=exc.hint) from None
        value -= offsets.get(jname, {}).get(coord, 0.0)
        kind = rd.string(ln, tkey, item)
        lo, hi = extra.get((jname, coord), (-math.inf, math.inf))
        if kind == "=>":
            lo = max(lo, value)
        elif kind == "=<":
            hi = min(hi, value)
        else:
            raise CadImportError(f"limit {lname} has Type {kind!r}", where=where,
                                 hint="'=>' is a lower bound, '=<' an upper bound")
        behavior = rd.string(ln, "Behavior", item, default="Rigid")
        if behavior == "Compliant":
            warnings.warn(f"{where}: the limit's stiffness and damping are not imported; "
                          "cadmotion reports the bound as a rigid limit", stacklevel=3)
        elif behavior != "Rigid":
            raise CadImportError(f"limit {lname} has Behavior {behavior!r}", where=where,
                                 hint="OndselSolver knows 'Rigid' and 'Compliant'")
        extra[(jname, coord)] = (lo, hi)
    if not extra:
        return specs
    out = []
    for j in specs:
        lims = tuple((c, v) for (jn, c), v in extra.items() if jn == j.name)
        out.append(replace(j, limits=j.limits + lims) if lims else j)
    return out


def _use_series_pose(model, ts, rd):
    """Replace the parts' poses and velocities by the first frame of the TimeSeries."""
    parts, vels = [], []
    for p in model.parts:
        ser = ts["parts"].get(p.name)
        if ser is None:
            raise CadImportError(f"the TimeSeries has no series for part {p.name}", where=rd.path)
        R = _orthonormalize(ser["rotation"][0], rd.where(item=f"TimeSeries of {p.name}"))
        x = ser["position"][0]
        model.pose[p.name] = (R, x)
        parts.append(replace(p, position=tuple(float(v) for v in x),
                             orientation=matrix_to_quaternion(R)))
        v, w = ser["velocity"][0], ser["angular_velocity"][0]
        if not p.fixed and (np.any(v != 0.0) or np.any(w != 0.0)):
            vels.append(InitialVelocitySpec(p.name, tuple(float(c) for c in v),
                                            tuple(float(c) for c in w)))
    model.parts[:] = parts
    model.velocities[:] = vels


def read_asmt_simulation(path):
    """Simulation parameters of an ``.asmt`` file.

    Returns
    -------
    dict
        ``tstart``, ``tend`` (s), ``hmin``, ``hmax`` (s, integrator step bounds),
        ``hout`` (s, output interval), ``errorTol`` (the solver's error tolerance) as
        floats, when present, and ``steps``: the number of output intervals
        ``round((tend - tstart) / hout)``.
    """
    rd = _Reader(path)
    top = rd.root.child("Assembly")
    sp = top.child("SimulationParameters") if top is not None else None
    if sp is None:
        raise CadImportError("no SimulationParameters block", where=rd.path)
    out = {}
    for c in sp.children:
        if c.children:
            try:
                out[c.text] = float(c.children[0].text.replace("d", "e"))
            except ValueError:
                raise CadImportError(f"{c.text} is {c.children[0].text!r}, not a number",
                                     where=rd.where(c, "SimulationParameters")) from None
    if {"tstart", "tend", "hout"} <= out.keys() and out["hout"] > 0:
        out["steps"] = int(round((out["tend"] - out["tstart"]) / out["hout"]))
    return out


def read_asmt(path, *, initial_pose="file"):
    """Read an OndselSolver ``.asmt`` file into a :class:`MechanismSpec` (SI units).

    Parameters
    ----------
    path : str or os.PathLike
        The ``.asmt`` file.
    initial_pose : {"file", "series"}
        ``"file"``: the parts start where their ``Position3D``/``RotationMatrix`` put
        them.  ``"series"``: they start where OndselSolver assembled them at the first
        time of the file's ``TimeSeries`` (positions, rotations, velocities).  A file
        saved after a run stores the *last* pose of that run in the part blocks, and the
        solver may assemble a mechanism with several branches (a 1:2 gear pair turned by
        half a turn) onto another branch; ``"series"`` reproduces the stored run.

    Returns
    -------
    MechanismSpec
        Parts (the assembly first, as a fixed part named after it, then the file's parts
        with their frames, mass, centre of mass and inertia from ``PrincipalMassMarker``
        when the mass is positive), joints (markers are ``X_PM`` in the part frames),
        drivers from the motions (see the module notes: measured from the initial pose),
        gravity (m/s², world frame) and the parts' initial velocities.

    Raises
    ------
    CadImportError
        Malformed file, unknown marker, joint or motion type (the message names the item,
        its type and the line), or a coupler that cannot be expressed.
    """
    if initial_pose not in ("file", "series"):
        raise ValueError("initial_pose must be 'file' or 'series'")
    rd = _Reader(path)
    model = _read_model(rd)
    if initial_pose == "series":
        _use_series_pose(model, read_asmt_time_series(path), rd)
    specs, by_markers, offsets = _joints(rd, model)
    specs = _limits(rd, model, specs, by_markers, offsets)
    try:
        tstart = read_asmt_simulation(path).get("tstart", 0.0)
    except CadImportError:
        tstart = 0.0
    drivers = _drivers(rd, model, specs, by_markers, offsets, tstart)
    if model.has_forces:
        warnings.warn(f"{rd.name}: ForceTorques are not imported", stacklevel=2)
    spec = MechanismSpec(
        parts=tuple(model.parts), joints=tuple(specs), drivers=tuple(drivers),
        gravity=model.gravity, initial_velocities=tuple(model.velocities),
        name=os.path.splitext(rd.name)[0], source=rd.path,
    )
    bad = joint_violations(spec, tol=1e-6)
    if bad:
        warnings.warn(f"{rd.name}: the file's pose does not satisfy "
                      + "; ".join(f"{j} ({w} {v:.3g})" for j, w, v in bad)
                      + "; the solver will have to assemble the parts first", stacklevel=2)
    return spec


_REACTION_ROWS = {
    "FXonI": ("force_on_i", 0), "FYonI": ("force_on_i", 1), "FZonI": ("force_on_i", 2),
    "TXonI": ("torque_on_i", 0), "TYonI": ("torque_on_i", 1), "TZonI": ("torque_on_i", 2),
}

_SERIES_ROWS = {
    "X": ("position", 0), "Y": ("position", 1), "Z": ("position", 2),
    "Bryantx": ("bryant_angles", 0), "Bryanty": ("bryant_angles", 1), "Bryantz": ("bryant_angles", 2),
    "VX": ("velocity", 0), "VY": ("velocity", 1), "VZ": ("velocity", 2),
    "OmegaX": ("angular_velocity", 0), "OmegaY": ("angular_velocity", 1),
    "OmegaZ": ("angular_velocity", 2),
    "AX": ("acceleration", 0), "AY": ("acceleration", 1), "AZ": ("acceleration", 2),
    "AlphaX": ("angular_acceleration", 0), "AlphaY": ("angular_acceleration", 1),
    "AlphaZ": ("angular_acceleration", 2),
}


def read_asmt_time_series(path):
    """The solver's own results stored at the end of an ``.asmt`` file (``TimeSeries``).

    Layout in the file: a row ``Number Input 1 2 ...``, a row ``Time Input t0 t1 ...``,
    then for the assembly (``AssemblySeries /Asm``) and each part (``PartSeries
    /Asm/Part``) 18 rows ``X Y Z Bryantx Bryanty Bryantz VX VY VZ OmegaX OmegaY OmegaZ
    AX AY AZ AlphaX AlphaY AlphaZ``.  Each row has one value per output time after an
    extra first value, the ``Input`` state as read before the solver assembled the parts
    (accelerations print ``0`` there).

    Returns
    -------
    dict
        ``time`` : ndarray (nt,), s.
        ``parts`` : part name -> dict of arrays over the output times, all in the assembly
        (world) frame for the part frame origin: ``position`` (nt, 3) m, ``bryant_angles``
        (nt, 3) rad, ``rotation`` (nt, 3, 3) (from the Bryant angles, ``Rx Ry Rz``),
        ``velocity`` (nt, 3) m/s, ``angular_velocity`` (nt, 3) rad/s, ``acceleration``
        (nt, 3) m/s², ``angular_acceleration`` (nt, 3) rad/s².
        ``input`` : part name -> the same keys for the ``Input`` column (shape (3,) or (3, 3)).
        ``joints`` : joint or motion name -> ``type`` (``RevoluteJoint``, ``RotationalMotion``,
        ...), ``force_on_i`` (nt, 3) N and ``torque_on_i`` (nt, 3) N m: the reaction on the
        marker-I side as the solver prints it (rows ``FXonI`` ... ``TZonI``; the frame is
        OndselSolver's and is not converted here).

    Raises
    ------
    CadImportError
        If the file has no TimeSeries or a row is malformed.
    """
    rd = _Reader(path)
    if rd.series_start is None:
        raise CadImportError("the file has no TimeSeries block (it was saved before a run)",
                             where=rd.path)
    time = None
    parts: Dict[str, Dict[str, np.ndarray]] = {}
    items: Dict[str, Dict[str, np.ndarray]] = {}
    current = rows_of = None
    for k, line in enumerate(rd.series_lines, start=rd.series_start + 1):
        cells = line.split()
        if not cells:
            continue
        head = cells[0]
        where = f"{rd.name}:{k}: TimeSeries"
        if head == "Number":
            continue
        if head == "Time":
            if len(cells) < 3 or cells[1] != "Input":
                raise CadImportError("the Time row should read 'Time Input t0 t1 ...'", where=where)
            time = np.array([float(c) for c in cells[2:]])
            continue
        if head.endswith("Series"):
            if len(cells) < 2:
                raise CadImportError(f"{head} without a name", where=where)
            current = cells[1].rsplit("/", 1)[-1]
            target = parts if head in ("AssemblySeries", "PartSeries") else items
            if current in target:
                raise CadImportError(f"two series for {current}", where=where)
            target[current] = {"type": head[:-len("Series")]} if target is items else {}
            rows_of = target[current]
            continue
        if head in _REACTION_ROWS:
            key, axis = _REACTION_ROWS[head]
        elif head in _SERIES_ROWS:
            key, axis = _SERIES_ROWS[head]
        else:
            raise CadImportError(f"unexpected row {head!r}", where=where)
        if current is None or time is None:
            raise CadImportError(f"row {head} before the Time row and a series name", where=where)
        try:
            vals = np.array([float(c) for c in cells[1:]])
        except ValueError:
            raise CadImportError(f"row {head} holds a value that is not a number", where=where) from None
        if len(vals) != len(time) + 1:
            raise CadImportError(f"row {head} of {current} has {len(vals)} values; expected "
                                 f"{len(time) + 1} (Input + {len(time)} times)", where=where)
        rows_of.setdefault(key, np.full((len(time) + 1, 3), np.nan))[:, axis] = vals
    if time is None:
        raise CadImportError("the TimeSeries has no Time row", where=rd.path)
    out_parts, inputs = {}, {}
    for name, rows in parts.items():
        missing = [k for k in ("position", "bryant_angles", "velocity", "angular_velocity",
                               "acceleration", "angular_acceleration")
                   if k not in rows or np.isnan(rows[k]).any()]
        if missing:
            raise CadImportError(f"the series of {name} lacks {', '.join(missing)}", where=rd.path)
        rows["rotation"] = bryant_to_matrix(rows["bryant_angles"])
        out_parts[name] = {k: v[1:] for k, v in rows.items()}
        inputs[name] = {k: v[0] for k, v in rows.items()}
    joints = {name: {k: (v[1:] if k != "type" else v) for k, v in rows.items()}
              for name, rows in items.items()}
    return {"time": time, "parts": out_parts, "input": inputs, "joints": joints}
