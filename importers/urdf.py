"""Read URDF robot descriptions (ROS's Unified Robot Description Format) into a MechanismSpec.

What is read
------------
* ``<link>``: a part named after the link. Its ``<inertial>``: ``<mass value>`` (kg), ``<origin xyz rpy>`` the
  centre of mass and the inertial frame in the link frame, ``<inertia ixx ixy ixz iyy iyz izz>`` (kg m², about the
  centre of mass, inertial-frame axes; turned into the link's axes here; a zero mass with an inertia is kept, as
  other readers keep it). A link without ``<inertial>`` has no mass data (kinematics needs none; dynamics refuses
  a moving part without mass, naming it). Links welded together by ``fixed`` joints move as one body: the mass
  data of those that no body can have (no mass, a point mass, an inertia not positive definite or breaking the
  triangle inequality — frames, sensors, feet) are carried by the link they are welded to, each keeping a small
  share, so that the welded group has the file's mass properties exactly (:func:`_welded_masses`; a
  ``UserWarning`` names those that had mass data). A moving link with a mass and a singular inertia (a point
  mass, a thin rod) gets a 1 mm sphere's inertia added, as a part given a mass and no inertia does
  (:func:`_moving_masses`; a ``UserWarning`` names them); a moving link without mass data (or of zero mass
  and inertia) is massless, mass 0: the joint-coordinate formulations take it where its joints carry it (the
  virtual links of a multi-axis hip), the others refuse it naming the link. Links welded to the root are fixed.
* ``<joint>``: ``<parent link>`` and ``<child link>``; ``<origin xyz rpy>``, the child link's frame in the parent
  link's frame at the zero configuration; ``<axis xyz>`` in the joint (= child) frame, default x. Types:
  ``revolute`` and ``continuous`` → revolute; ``prismatic``; ``fixed``; ``planar`` (the axis is the plane's
  normal); ``floating`` → no joint (the child moves freely). ``<limit lower upper>`` of a revolute or prismatic
  joint → ``limits`` about the initial configuration (rad, m), unless lower = upper (files use 0, 0 for "not
  limited": a joint locked by its limits would be written ``fixed``). ``<dynamics damping>`` (N m s/rad, N s/m)
  → a viscous element on the joint named ``<joint>.damping``: a ``rotational-spring-damper`` without stiffness on a
  revolute joint, a ``force`` −c q̇ along a prismatic one (a planar joint's damping is not read).
  ``<mimic joint multiplier offset>``: the joint's coordinate is ``multiplier`` times the
  other's — a ``gear`` coupler between two revolute joints (ratio = multiplier), a ``rack-and-pinion`` for a
  prismatic joint mimicking a revolute one (radius = multiplier, m/rad); a mimic with an offset (the zero
  configuration breaks it) or of another pair of types is not read. ``friction``, ``<calibration>``,
  ``<safety_controller>`` and the ``<transmission>`` elements are not read either; a ``UserWarning`` names
  what was not read.
* ``<visual>``: its ``box``, ``cylinder``, ``sphere`` and ``mesh`` geometry, placed by its ``<origin>``, is the
  part's shape for the writers (with OpenCascade, the ``cad`` extra; without it the parts are drawn as sticks), its
  ``<material>`` colour (inline or named at the robot's level) the part's colour. ``<mesh filename scale>``: an
  STL, OBJ or COLLADA file (:mod:`.mesh_files`; COLLADA through pycollada, in its ``<unit>``, with its nodes'
  transforms), scaled along the file's axes by ``scale``, becomes faces carrying the file's triangles (no
  surface: nothing is meshed again); a visual without ``<material>`` colour takes the COLLADA file's diffuse
  colour. The file is found by :func:`mesh_path`: ``package://NAME/...`` in a folder named NAME above the URDF
  file or in ``ROS_PACKAGE_PATH``, ``file://`` paths, paths relative to the URDF file. A mesh file not found or
  not readable is no error: a ``UserWarning`` names it with the reason, and the link keeps its other visuals.
  ``<collision>`` geometry is not read.

The initial configuration is the file's zero configuration unless ``configuration`` (``cadmotion run
--configuration JOINT=VALUE``) turns or slides joints from it; a joint whose limits exclude it is named in a
``UserWarning`` (dynamics cannot start there).

Frames: the root link (the one link that is no joint's child) is fixed, its frame the world frame. URDF's
``rpy`` are fixed-axis roll, pitch, yaw: R = Rz(yaw) Ry(pitch) Rx(roll). Units are SI. URDF stores no
gravity: ``gravity`` (m/s², world frame) is an option, default none (``cadmotion run --gravity 0,0,-9.81`` for
ROS's z up).

The file is parsed as XML by the standard library's expat parser (no entity expansion beyond its limits, no
external entities); no text from it is executed.
"""

from __future__ import annotations

import math
import warnings
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..errors import CadImportError
from ..kernel.dynamics.mass import NOT_POSITIVE_DEFINITE, inertia_fault, point_mass_radius
from ..kernel.rotations import matrix_to_quaternion

__all__ = ["read_urdf", "rpy_matrix", "mesh_path"]

#: URDF joint type -> cadmotion joint type (``floating``: no joint)
JOINT_TYPES = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic", "fixed": "fixed",
               "planar": "planar", "floating": None}
#: the limited coordinate of each limited joint type
_LIMITED = {"revolute": "angle", "prismatic": "disp"}


def rpy_matrix(rpy):
    """The rotation of URDF's ``rpy`` (rad): fixed-axis roll about x, then pitch about y, then yaw about z,
    R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


class _Reader:
    """Numbers and elements of one file, with errors that name the file and the element."""

    def __init__(self, path):
        self.path = path
        self.meshes = {}  # mesh files read (path -> MeshFile or MeshFileError): a file several links use is read once

    def err(self, where, message, hint=None):
        return CadImportError(message, where=f"{self.path}: {where}", hint=hint)

    def numbers(self, where, element, key, n, default=None):
        text = element.get(key) if element is not None else None
        if text is None:
            if default is None:
                raise self.err(where, f"missing attribute {key!r}", hint="the URDF specification requires it")
            return np.array(default, float)
        try:
            values = np.array([float(v) for v in text.split()])
        except ValueError:
            raise self.err(where, f"{key}={text!r} is not {n} number(s)") from None
        if len(values) != n or not np.all(np.isfinite(values)):
            raise self.err(where, f"{key}={text!r} is not {n} finite number(s)")
        return values

    def number(self, where, element, key, default=None):
        """One number of an attribute (:meth:`numbers` with n = 1)."""
        return float(self.numbers(where, element, key, 1, None if default is None else (default,))[0])

    def pose(self, where, element):
        """(origin (3,), rotation (3, 3)) of an ``<origin>`` element (identity when absent)."""
        origin = element.find("origin") if element is not None else None
        xyz = self.numbers(where, origin, "xyz", 3, (0.0, 0.0, 0.0))
        rpy = self.numbers(where, origin, "rpy", 3, (0.0, 0.0, 0.0))
        return xyz, rpy_matrix(rpy)


def _inertial(reader, link):
    """(mass, com, inertia 3x3 in link axes) of a ``<link>``, or None without mass and inertia (a link of zero
    mass may carry an inertia: files give a motor's rotor so, and other readers add it to the robot's)."""
    name = link.get("name")
    where = f"<link name={name!r}> <inertial>"
    inertial = link.find("inertial")
    if inertial is None:
        return None
    mass = reader.number(where, inertial.find("mass"), "value")
    if mass < 0:
        raise reader.err(where, f"negative mass {mass}")
    com, R = reader.pose(where, inertial)
    element = inertial.find("inertia")
    ixx, ixy, ixz, iyy, iyz, izz = (reader.number(where, element, k, 0.0)
                                    for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
    I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    if mass == 0 and not I.any():
        return None
    return mass, com, R @ I @ R.T


def _parse(path):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise CadImportError(f"not a well-formed XML file: {exc}", where=str(path),
                             hint="a URDF file is XML with a <robot> root element") from None
    except OSError as exc:
        raise CadImportError(f"cannot read the file: {exc.strerror or exc}", where=str(path)) from None
    if root.tag != "robot":
        raise CadImportError(f"the root element is <{root.tag}>, not <robot>", where=str(path),
                             hint="a URDF file's root element is <robot> (xacro files must be expanded first)")
    return root


def read_urdf(path, *, gravity=(0.0, 0.0, 0.0), configuration=None):
    """Read a URDF file into a :class:`~cadmotion.kernel.spec.MechanismSpec` (see the module docstring).

    Parameters
    ----------
    path : the ``.urdf`` file
    gravity : m/s², world (root link) frame; URDF stores none
    configuration : {joint name: coordinate} (rad for revolute and continuous joints, m for prismatic ones): the
        initial pose, the joints turned or slid that far from the file's zero configuration (the rest at 0; a
        mimicking joint follows the joint it mimics). Joint coordinates and limits are measured from the initial
        pose, so the limits are shifted by it. Robots whose zero configuration lies outside a joint's limits (the
        Panda's fourth joint) start within them so.

    Raises
    ------
    CadImportError : malformed XML, a joint naming a link the file does not define, a link with two parents,
        links not connected to the root, a joint type cadmotion has no joint for, a ``configuration`` naming a
        joint the file does not define or one without a single coordinate — each naming the element.
    """
    from .modelfile import parse_model

    path = Path(path)
    reader = _Reader(path)
    root = _parse(path)
    links = {}
    for link in root.findall("link"):
        name = link.get("name")
        if not name:
            raise reader.err("<link>", "a link without a name")
        if name in links:
            raise reader.err(f"<link name={name!r}>", "a second link of this name")
        links[name] = link
    if not links:
        raise reader.err("<robot>", "no <link> element", hint="a robot needs at least one link")
    joints, parent_of, ignored = [], {}, []
    for joint in root.findall("joint"):
        name, jtype = joint.get("name"), joint.get("type")
        where = f"<joint name={name!r}>"
        if not name:
            raise reader.err("<joint>", "a joint without a name")
        if jtype not in JOINT_TYPES:
            raise reader.err(where, f"unknown joint type {jtype!r}", hint="URDF joint types: " + ", ".join(JOINT_TYPES))
        ends = []
        for tag in ("parent", "child"):
            element = joint.find(tag)
            link = element.get("link") if element is not None else None
            if link not in links:
                raise reader.err(where, f"its <{tag}> names link {link!r}, which the file does not define",
                                 hint="links: " + ", ".join(sorted(links)))
            ends.append(link)
        parent, child = ends
        if child in parent_of:
            raise reader.err(where, f"link {child!r} is the child of two joints ({parent_of[child][0]!r} too)",
                             hint="a URDF is a tree: each link has one parent joint")
        parent_of[child] = (name, parent)
        joints.append((name, jtype, parent, child, joint))
        ignored += [f"{where} <{t}>" for t in ("calibration", "safety_controller") if joint.find(t) is not None]
    roots = [n for n in links if n not in parent_of]
    if len(roots) != 1:
        raise reader.err("<robot>", f"{len(roots)} links are no joint's child ({', '.join(roots) or 'none'}): "
                                    f"the joints must form one tree", hint="connect the links by joints, one root")
    # world poses at the zero configuration, from the root down
    pose = {roots[0]: (np.zeros(3), np.eye(3))}
    tree = _top_down(joints, roots[0])
    if len(tree) < len(joints):
        loop = sorted(j[0] for j in joints if j not in tree)
        raise reader.err(f"<joint name={loop[0]!r}>", f"the joints {', '.join(loop)} form a loop apart from the "
                                                     f"root link {roots[0]!r}", hint="a URDF is one tree")
    axes = {name: _axis(reader, name, jtype, joint) for name, jtype, _, _, joint in joints
            if JOINT_TYPES[jtype] not in (None, "fixed")}
    start = _configuration(reader, joints, configuration or {})
    # links welded to the root (by fixed joints, transitively) are fixed parts: their welds are not joints
    grounded = {roots[0]}
    for name, jtype, parent, child, joint in tree:
        p0, R0 = pose[parent]
        xyz, R = reader.pose(f"<joint name={name!r}>", joint)
        q = start.get(name, 0.0)
        if JOINT_TYPES[jtype] == "prismatic":
            xyz = xyz + q * (R @ axes[name])
        elif q:
            R = R @ _turn(axes[name], q)
        pose[child] = (p0 + R0 @ xyz, R0 @ R)
        if jtype == "fixed" and parent in grounded:
            grounded.add(child)
    mass = {n: _inertial(reader, link) for n, link in links.items()}
    carried = _welded_masses(tree, mass, pose, grounded)
    regularised = _moving_masses(tree, mass, grounded)
    table = {}
    for n in links:
        p, R = pose[n]
        entry = {"fixed": n in grounded, "position": [float(v) for v in p],
                 "orientation": [float(v) for v in matrix_to_quaternion(R)]}
        if mass[n] is not None and mass[n][0] > 0:
            m, c, I = mass[n]
            entry.update(mass=float(m), com=[float(v) for v in c], inertia=_six(I))
        elif not entry["fixed"] and (mass[n] is None or not np.any(mass[n][2])):
            entry.update(mass=0.0)  # a massless moving link: joint coordinates take it where its joints carry it
        table[n] = entry
    entries, forces, outside = [], [], []
    for name, jtype, parent, child, joint in joints:
        kind = JOINT_TYPES[jtype]
        if kind is None or child in grounded:
            continue
        where = f"<joint name={name!r}>"
        p, R = pose[child]
        entry = {"name": name, "type": kind, "parts": [parent, child], "origin": [float(v) for v in p]}
        if kind != "fixed":  # a fixed joint's <axis> means nothing (files write xyz="0 0 0" there)
            entry["axis"] = [float(v) for v in R @ axes[name]]
        limit = joint.find("limit")
        if kind in _LIMITED and jtype != "continuous" and limit is not None:
            lower = reader.number(where + " <limit>", limit, "lower", 0.0)
            upper = reader.number(where + " <limit>", limit, "upper", 0.0)
            if lower > upper:
                raise reader.err(where + " <limit>", f"lower {lower} is above upper {upper}")
            if lower < upper:
                q = start.get(name, 0.0)
                entry["limits"] = {_LIMITED[kind]: [lower - q, upper - q]}
                if not lower <= q <= upper:
                    outside.append(f"{name} ({q:g} outside [{lower:g}, {upper:g}])")
        entries.append(entry)
        dynamics = joint.find("dynamics")
        if dynamics is not None:
            damping = reader.number(where + " <dynamics>", dynamics, "damping", 0.0)
            if damping < 0:
                raise reader.err(where + " <dynamics>", f"negative damping {damping}")
            if damping > 0 and kind == "revolute":
                forces.append({"name": f"{name}.damping", "type": "rotational-spring-damper", "joint": name,
                               "stiffness": 0.0, "damping": damping})
            elif damping > 0 and kind == "prismatic":  # a viscous force along the axis, F = −c q̇
                forces.append({"name": f"{name}.damping", "type": "force", "joint": name,
                               "expression": f"-{damping!r}*qd"})
            elif damping > 0:
                ignored.append(f"{where} <dynamics damping> (of a {jtype} joint)")
            if reader.number(where + " <dynamics>", dynamics, "friction", 0.0) != 0:
                ignored.append(f"{where} <dynamics friction>")
    entries += _mimic_couplers(reader, joints, {e["name"] for e in entries}, ignored)
    ignored += [f"<transmission name={t.get('name')!r}>" for t in root.findall("transmission")]
    colours = _named_colours(reader, root)
    looks = {n: _visuals(reader, link, colours, ignored) for n, link in links.items()}
    if ignored:
        warnings.warn(f"{path}: not read: " + "; ".join(ignored), stacklevel=2)
    if outside:
        warnings.warn(f"{path}: the initial configuration is outside the limits of " + ", ".join(outside)
                      + ": dynamics starts only within them — set the start, e.g. `cadmotion run --configuration "
                      + f"{outside[0].split()[0]}=<value>` (rad or m)", stacklevel=2)
    if carried:
        warnings.warn(f"{path}: mass data carried by the link each is welded to (together exact; the weld's reaction "
                      f"leaves them out): " + "; ".join(carried), stacklevel=2)
    if regularised:
        warnings.warn(f"{path}: moving links with a mass and a singular inertia (a point mass, a thin rod) given the "
                      f"inertia of a {point_mass_radius * 1e3:g} mm sphere of their mass besides: "
                      + "; ".join(regularised), stacklevel=2)
    data = {"name": root.get("name") or path.stem, "parts": table, "joints": entries, "forces": forces}
    if any(gravity):
        data["gravity"] = [float(g) for g in gravity]
    spec = parse_model(data, source=str(path), base_dir=path.parent)
    return replace(spec, parts=tuple(replace(p, shape=looks[p.name][0], color=looks[p.name][1],
                                             source=f"{path}: <link name={p.name!r}>") for p in spec.parts))


def _axis(reader, name, jtype, joint):
    """The unit ``<axis>`` of a moving joint, in the joint frame (default x)."""
    axis = reader.numbers(f"<joint name={name!r}>", joint.find("axis"), "xyz", 3, (1.0, 0.0, 0.0))
    if np.linalg.norm(axis) == 0:
        raise reader.err(f"<joint name={name!r}>", "its <axis xyz> is zero",
                         hint=f"a {jtype} joint needs the direction of its axis (default 1 0 0 when absent)")
    return axis / np.linalg.norm(axis)


def _turn(axis, angle):
    """The rotation by ``angle`` (rad) about the unit ``axis`` (Rodrigues)."""
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * K @ K


def _configuration(reader, joints, configuration):
    """{joint: initial coordinate} from ``configuration`` (see :func:`read_urdf`), a mimicking joint (without an
    offset) at its multiplier times the coordinate of the joint it mimics unless given itself."""
    types = {name: jtype for name, jtype, *_ in joints}
    start = {}
    for name, value in configuration.items():
        if name not in types:
            raise reader.err("configuration", f"joint {name!r} is not in the file",
                             hint="joints: " + ", ".join(sorted(types)))
        if JOINT_TYPES[types[name]] not in ("revolute", "prismatic"):
            raise reader.err(f"<joint name={name!r}>", f"a {types[name]} joint has no single coordinate to set",
                             hint="set revolute, continuous and prismatic joints")
        try:
            start[name] = float(value)
        except (TypeError, ValueError):
            raise reader.err("configuration", f"joint {name!r}: {value!r} is not a number") from None
        if not math.isfinite(start[name]):
            raise reader.err("configuration", f"joint {name!r}: {value!r} is not a finite number")
    for name, jtype, parent, child, joint in joints:
        mimic = joint.find("mimic")
        if mimic is not None and name not in start and mimic.get("joint") in start:
            where = f"<joint name={name!r}> <mimic>"
            if reader.number(where, mimic, "offset", 0.0) == 0.0:
                start[name] = reader.number(where, mimic, "multiplier", 1.0) * start[mimic.get("joint")]
    return start


def _mimic_couplers(reader, joints, made, ignored):
    """The couplers of the ``<mimic>`` elements (module docstring) between joints in ``made``."""
    types = {name: jtype for name, jtype, *_ in joints}
    couplers = []
    for name, jtype, parent, child, joint in joints:
        mimic = joint.find("mimic")
        if mimic is None:
            continue
        where = f"<joint name={name!r}> <mimic>"
        other = mimic.get("joint")
        if other not in types:  # the joint moves on its own, as other readers (urdfdom, Pinocchio) take it
            ignored.append(f"{where} (it mimics joint {other!r}, which the file does not define)")
            continue
        multiplier = reader.number(where, mimic, "multiplier", 1.0)
        offset = reader.number(where, mimic, "offset", 0.0)
        kinds = (JOINT_TYPES[types[other]], JOINT_TYPES[jtype])
        coupler = {("revolute", "revolute"): ("gear", "ratio"),
                   ("revolute", "prismatic"): ("rack-and-pinion", "radius")}.get(kinds)
        if offset != 0.0 or coupler is None or name not in made or other not in made:
            why = (f"offset {offset:g}" if offset != 0.0 else
                   f"a {jtype} joint mimicking a {types[other]} one" if coupler is None else "a joint welded to ground")
            ignored.append(f"{where} ({why})")
            continue
        couplers.append({"name": f"{name}.mimic", "type": coupler[0], "joints": [other, name],
                         coupler[1]: multiplier})
    return couplers


def _named_colours(reader, root):
    """{material name: rgba} of the robot-level ``<material>`` elements."""
    return {m.get("name"): tuple(float(v) for v in reader.numbers(f"<material name={m.get('name')!r}>",
                                                                   m.find("color"), "rgba", 4))
            for m in root.findall("material") if m.get("name") and m.find("color") is not None}


def _visuals(reader, link, colours, ignored):
    """(shape or None, rgba or None) of a link's ``<visual>`` elements: their primitives and meshes placed in the
    link frame (m), a compound; None without OpenCascade or without anything read. The colour: the first
    ``<material>`` colour, else the first mesh file's own (:mod:`.mesh_files`)."""
    name = link.get("name")
    solids, colour = [], None
    for n, visual in enumerate(link.findall("visual")):
        where = f"<link name={name!r}> <visual> #{n + 1}"
        material = visual.find("material")
        if colour is None and material is not None:
            if material.find("color") is not None:
                colour = tuple(float(v) for v in reader.numbers(where + " <material>", material.find("color"),
                                                                "rgba", 4))
            else:
                colour = colours.get(material.get("name"))
        geometry = visual.find("geometry")
        element = geometry[0] if geometry is not None and len(geometry) else None
        if element is not None and element.tag == "mesh":
            mesh = _mesh_file(reader, where, element, ignored)
            if mesh is not None:
                solids.append(("mesh", mesh, *reader.pose(where, visual)))
            continue
        if element is None or element.tag not in ("box", "cylinder", "sphere"):
            if element is not None:
                ignored.append(f"{where} <{element.tag}>")
            continue
        size = {"box": lambda e: [reader.numbers(where, e, "size", 3)],
                "cylinder": lambda e: [reader.number(where, e, "radius"), reader.number(where, e, "length")],
                "sphere": lambda e: [reader.number(where, e, "radius")]}[element.tag](element)
        xyz, R = reader.pose(where, visual)
        solids.append((element.tag, size, xyz, R))
    shape, mesh_colour = _shape(solids, ignored, reader.meshes)
    return shape, colour if colour is not None else mesh_colour


def _mesh_file(reader, where, element, ignored):
    """(file, scale (3,), name for messages) of a ``<mesh filename scale>``, or None — named in ``ignored`` with
    the reason — when the file is not found (:func:`mesh_path`)."""
    uri = element.get("filename")
    if not uri:
        raise reader.err(where + " <mesh>", "missing attribute 'filename'", hint="the URDF specification requires it")
    scale = reader.numbers(where + " <mesh>", element, "scale", 3, (1.0, 1.0, 1.0))
    label = f"{where} <mesh> {uri}"
    try:
        return mesh_path(uri, reader.path), scale, label
    except FileNotFoundError as exc:
        ignored.append(f"{label} ({exc})")
        return None


def mesh_path(uri, urdf):
    """The file a ``<mesh filename>`` names, for the URDF file ``urdf``.

    ``package://NAME/rest`` (``package:///NAME/rest`` too): ``rest`` in the package NAME's folder, which is, by
    ROS's convention, a folder named NAME — one above the URDF file, else one in (or being) a folder of the
    ``ROS_PACKAGE_PATH`` environment variable. ``file://path``: that path. Anything else: a path, relative to
    the URDF file's folder.

    Raises
    ------
    FileNotFoundError : with the reason (no such package folder, or no such file in it).
    """
    import os
    from urllib.parse import unquote

    urdf = Path(urdf)
    if uri.startswith("package://"):
        package, _, rest = uri[len("package://"):].lstrip("/").partition("/")
        folders = [p for p in (*urdf.absolute().parents, *urdf.resolve().parents) if p.name == package]
        for root in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep):
            if root:
                folders += [Path(root)] if Path(root).name == package else [Path(root) / package]
        folders = [f for f in dict.fromkeys(folders) if f.is_dir()]
        if not folders:
            raise FileNotFoundError(f"package {package!r} not found: no folder of that name above the URDF file "
                                    f"or in ROS_PACKAGE_PATH")
        for folder in folders:
            if (folder / rest).is_file():
                return folder / rest
        raise FileNotFoundError(f"file not found: {folders[0] / rest}")
    path = Path(unquote(uri[len("file://"):])) if uri.startswith("file://") else urdf.parent / uri
    if not path.is_file():
        raise FileNotFoundError(f"file not found: {path}")
    return path


def _shape(solids, ignored, read):
    """(compound or None, rgba or None) of the visuals ``(kind, size, origin, rotation)`` in the link frame: the
    primitives ``box``, ``cylinder``, ``sphere`` of their sizes, and the ``mesh`` files ``(file, scale, name)``,
    scaled along their own axes, then placed (:func:`cadmotion.geometry.meshes.placed_mesh`); the rgba is the
    first mesh file's own colour. A mesh file that cannot be read is named in ``ignored`` with the reason.
    ``read``: the files read so far, by path (updated). None: no solid, or no OpenCascade."""
    if not solids:
        return None, None
    from ..geometry import meshes, primitives
    from ..geometry.placements import moved
    from ..geometry.shapes import compound
    from .mesh_files import MeshFileError, read_mesh

    shapes, rgba = [], None
    try:
        for kind, size, xyz, R in solids:
            X = np.eye(4)
            X[:3, :3], X[:3, 3] = R, xyz
            if kind != "mesh":
                shapes.append(moved(getattr(primitives, kind)(*size), X))
                continue
            file, scale, label = size
            if file not in read:
                try:
                    read[file] = read_mesh(file)
                except MeshFileError as exc:
                    read[file] = exc
            mesh = read[file]
            if isinstance(mesh, MeshFileError):
                ignored.append(f"{label} (unreadable: {mesh})")
                continue
            shapes.append(meshes.placed_mesh(mesh.triangulation, X, scale))
            rgba = rgba if rgba is not None else mesh.rgba
        return (compound(shapes) if shapes else None), rgba
    except ImportError:  # pragma: no cover - the plain install (no OCP, which the functions import): sticks
        return None, None


def _top_down(joints, root):
    """The joints ordered from the root down (each after the joint of its parent link)."""
    order, reached, pending = [], {root}, list(joints)
    while pending:
        ready = [j for j in pending if j[2] in reached]
        if not ready:  # links that are each other's parents, apart from the root's tree
            break
        order += ready
        reached.update(j[3] for j in ready)
        pending = [j for j in pending if j[2] not in reached or j[3] not in reached]
    return order


#: the share of its weld group's mass data each link whose own cannot be a body's carries (:func:`_welded_masses`)
WELD_SHARE = 1e-6


def _welded_masses(tree, mass, pose, grounded):
    """Move mass data that no moving body can have onto the link it is welded to; update ``mass`` in place and
    return the moves, as text.

    Links joined by ``fixed`` joints move as one body, and the body's mass data are what dynamics needs; but each
    part must have its own (a positive mass and an inertia positive definite within the triangle inequality,
    :func:`~cadmotion.kernel.dynamics.mass.inertia_fault`). Files give frames, sensors and feet no mass, a point
    mass, a zero or impossible inertia. In each welded group such links' mass data are added to the group's top link
    (or its heaviest valid one); then each of them takes :data:`WELD_SHARE` of that sum — the same centre of mass
    in the world and the same inertia, scaled — and the receiver keeps the rest: the group's mass properties are
    exactly the file's; only the welds' reactions leave the moved mass out. A group whose sum is no body's is left
    as it is (dynamics names the part). ``tree``: the joints from the root down (:func:`_top_down`)."""
    def fault(data):
        if data is None or data[0] <= 0:
            return "no mass"
        if _singular(data[0], data[2]):
            return "a singular inertia"
        why = inertia_fault(data[2])
        return why and "inertia " + why.split(" (")[0]

    up = {child: parent for _, jtype, parent, child, _ in tree if jtype == "fixed"}
    groups = {}
    for link in ([tree[0][2]] + [j[3] for j in tree]) if tree else []:
        top = link
        while top in up:
            top = up[top]
        if link not in grounded:
            groups.setdefault(top, []).append(link)
    moves = []
    for top, members in groups.items():
        faulty = [n for n in members if fault(mass[n])]
        valid = [n for n in members if n not in faulty]
        if not faulty or len(members) == 1:
            continue
        receiver = top if top in valid else max(valid, key=lambda n: mass[n][0]) if valid else top
        world = [_in_world(mass[n], pose[n]) for n in set(faulty) | {receiver} if mass[n] is not None]
        m = sum(w[0] for w in world)
        if m <= 0:
            continue
        com = sum(w[0] * w[1] for w in world) / m
        I = sum(w[2] + w[0] * ((w[1] - com) @ (w[1] - com) * np.eye(3) - np.outer(w[1] - com, w[1] - com))
                for w in world)
        if _singular(m, I):  # a point mass carrying frames: as _moving_masses does
            regular = _regularised(m, com, I)
            if regular is None:
                continue
            I = regular[2]
            moves.append(f"<link name={receiver!r}> (a singular inertia) plus a {point_mass_radius * 1e3:g} mm "
                         f"sphere's")
        takers = [n for n in faulty if n != receiver]
        moves += [f"<link name={n!r}> ({fault(mass[n])}) by {receiver!r}" for n in takers if mass[n] is not None]
        for n, share in [(receiver, 1 - WELD_SHARE * len(takers))] + [(n, WELD_SHARE) for n in takers]:
            p, R = pose[n]
            mass[n] = (m * share, R.T @ (com - p), R.T @ (share * I) @ R)
    return moves


def _moving_masses(tree, mass, grounded):
    """Give the moving links with a mass and a singular inertia (positive semi-definite: a point mass, a thin rod),
    after :func:`_welded_masses`, the inertia of a sphere of
    :data:`~cadmotion.kernel.dynamics.mass.point_mass_radius` and the same mass added, as the kernel takes a part
    given a mass and no inertia; update ``mass`` in place and return what was done, as text. (A massless moving
    link is left so: the reader gives it mass 0.)"""
    notes = []
    for link in [j[3] for j in tree]:
        data = mass[link]
        if link in grounded or data is None or data[0] <= 0 or not _singular(data[0], data[2]):
            continue
        regular = _regularised(*data)
        if regular is not None:
            mass[link] = regular
            notes.append(f"<link name={link!r}>")
    return notes


def _singular(m, I):
    """Whether the inertia ``I`` (kg m²) of a link of mass ``m`` (kg) is singular: not positive definite, or all of
    it below a 1 mm sphere's of that mass (files write 1e-20 kg m² for none)."""
    return (inertia_fault(I) == NOT_POSITIVE_DEFINITE
            or np.linalg.eigvalsh(I)[-1] < 1e-3 * 0.4 * m * point_mass_radius ** 2)


def _regularised(m, c, I):
    """(m, c, I + a sphere's inertia) for a singular positive semi-definite I (kg m²), or None when that is no
    body's either (``I`` indefinite)."""
    if np.linalg.eigvalsh(I)[0] < -1e-12 * max(1.0, np.abs(I).max()):
        return None
    regular = I + 0.4 * m * point_mass_radius ** 2 * np.eye(3)
    return None if inertia_fault(regular) == NOT_POSITIVE_DEFINITE else (m, c, regular)


def _in_world(data, pose):
    """(mass, com, inertia about the com) of a link's mass data in world coordinates."""
    m, c, I = data
    p, R = pose
    return m, p + R @ c, R @ I @ R.T


def _six(I):
    return [float(I[0, 0]), float(I[1, 1]), float(I[2, 2]), float(I[0, 1]), float(I[0, 2]), float(I[1, 2])]
