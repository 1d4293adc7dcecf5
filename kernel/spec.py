"""The neutral mechanism description: what every importer produces and the compiler consumes.

All quantities are SI (metres, kilograms, seconds, radians). Poses follow Drake's
notation: ``X_WP`` is the frame of part P measured in the assembly (world) frame W,
``X_PM`` a marker frame M measured in part P. A rotation is stored as a 3x3 matrix
whose columns are the x, y, z axes of the child frame expressed in the parent frame.

These are frozen dataclasses holding tuples only, so a spec can be hashed, compared
and shared between threads. Importers fill them; :func:`cadmotion.kernel.compile_model`
turns them into arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Tuple

__all__ = [
    "Frame",
    "PartSpec",
    "JointSpec",
    "DriverSpec",
    "TimeFunctionSpec",
    "ForceSpec",
    "ContactSpec",
    "InitialVelocitySpec",
    "MechanismSpec",
    "IDENTITY_ROTATION",
]

Vec3 = Tuple[float, float, float]
Mat3 = Tuple[Vec3, Vec3, Vec3]

IDENTITY_ROTATION: Mat3 = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


@dataclass(frozen=True)
class Frame:
    """A frame fixed in a part: origin (m) and rotation (rows of a 3x3 matrix, columns = axes)."""

    origin: Vec3 = (0.0, 0.0, 0.0)
    rotation: Mat3 = IDENTITY_ROTATION


@dataclass(frozen=True)
class PartSpec:
    """A rigid part.

    Attributes
    ----------
    name : unique user name (``arm/link2`` for parts of sub-assemblies).
    fixed : True for ground parts; their pose never changes.
    position : X_WP origin at the initial pose, m, assembly frame.
    orientation : X_WP rotation as a unit quaternion (w, x, y, z).
    mass : kg, or None when unknown (kinematics does not need it).
    com : centre of mass in the part frame, m.
    inertia : 3x3 inertia tensor about the centre of mass, part axes, kg m^2, or None.
    color : sRGB(A) in 0..1, or None.
    shape : opaque handle to the part's geometry for writers (never read by the kernel).
    path : place in the CAD hierarchy.
    source : where the part was defined, for messages (``file.toml: [parts.crank]``).
    """

    name: str
    fixed: bool = False
    position: Vec3 = (0.0, 0.0, 0.0)
    orientation: Tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
    mass: Optional[float] = None
    com: Vec3 = (0.0, 0.0, 0.0)
    inertia: Optional[Mat3] = None
    color: Optional[Tuple[float, ...]] = None
    shape: Any = field(default=None, compare=False, hash=False, repr=False)
    path: str = ""
    source: str = ""


@dataclass(frozen=True)
class JointSpec:
    """A joint between two parts, or a coupler between two joints.

    Attributes
    ----------
    name : unique joint name.
    type : a name from the joint library (:data:`cadmotion.kernel.JOINT_TYPES`).
    parts : (part_i, part_j); empty for couplers (gear, belt, rack-and-pinion).
    markers : (X_PiMi, X_PjMj), the joint frame on each part. The frames coincide at the
        initial pose for every joint but distance, universal and angle-type joints.
        The z axis is the joint axis; the joint's angle is measured about z_i from x_i.
    joints : for couplers, the names of the coupled joints (first, second).
    params : type-specific numbers (``ratio``, ``pitch``, ``length``, ``angle``, ``radius``).
    limits : coordinate name (``angle``/``disp``) -> (lower, upper), SI units.
    stop : how the limits act as stops in dynamics (:mod:`cadmotion.kernel.dynamics.stops`):
        (key, value) pairs of ``limit_stiffness``, ``limit_exponent``, ``limit_restitution`` (SI).
    source : where the joint was defined, for messages.
    """

    name: str
    type: str
    parts: Tuple[str, ...] = ()
    markers: Tuple[Frame, ...] = ()
    joints: Tuple[str, ...] = ()
    params: Tuple[Tuple[str, float], ...] = ()
    limits: Tuple[Tuple[str, Tuple[float, float]], ...] = ()
    source: str = ""
    stop: Tuple[Tuple[str, float], ...] = ()

    def param(self, key, default=None):
        """The value of one entry of :attr:`params`, or ``default``."""
        for k, v in self.params:
            if k == key:
                return v
        return default


@dataclass(frozen=True)
class TimeFunctionSpec:
    """A function of time: a whitelisted expression in ``t`` or a table of (t, value) rows.

    The expression text is never executed; :mod:`cadmotion.kernel.expressions` parses it.
    """

    expression: Optional[str] = None
    table: Tuple[Tuple[float, float], ...] = ()
    scale: float = 1.0  # multiplies the value (unit conversion, e.g. mm -> m)


@dataclass(frozen=True)
class DriverSpec:
    """A driving constraint: a joint coordinate or a part coordinate follows f(t).

    ``joint`` + ``coordinate`` (``angle`` rad or ``disp`` m, measured from the initial
    pose) or ``part`` + ``coordinate`` (``x``, ``y``, ``z``: the absolute position of the
    part frame origin in the assembly frame, m).
    """

    name: str
    function: TimeFunctionSpec
    joint: Optional[str] = None
    part: Optional[str] = None
    coordinate: Optional[str] = None
    source: str = ""


@dataclass(frozen=True)
class ForceSpec:
    """An applied force element (used by dynamics). ``params`` holds type-specific numbers."""

    name: str
    type: str
    parts: Tuple[str, ...] = ()
    points: Tuple[Vec3, ...] = ()
    joint: Optional[str] = None
    expression: Optional[str] = None
    params: Tuple[Tuple[str, Any], ...] = ()
    source: str = ""


@dataclass(frozen=True)
class ContactSpec:
    """A declared contact between two parts (used by dynamics, :mod:`.dynamics.contacts`).

    ``shapes`` holds one primitive per part, in that part's frame and in metres:
    ``("sphere", (R, cx, cy, cz))`` (radius, centre), ``("box", (a, b, c, cx, cy, cz))`` (edge
    lengths along the part axes, centre), ``("cylinder", (R, h, cx, cy, cz, ax, ay, az[, 1]))`` (radius,
    height, centre, unit axis; a ninth number 1: a bore, the material outside the cylinder),
    ``("plane", (px, py, pz, nx, ny, nz))`` (a point and the outward unit normal; the solid is
    the half-space behind the normal) or ``("points", (x1, y1, z1, x2, …))`` (a tessellation's
    vertices, :func:`cadmotion.importers.contact_shapes.tessellation_points`).
    ``friction`` is (μ_static, μ_dynamic); ``params`` the method's numbers (``stiffness``,
    ``damping``, ``exponent``, ``stiction_velocity``), SI units.
    """

    name: str
    parts: Tuple[str, ...]
    shapes: Tuple[Tuple[str, Tuple[float, ...]], ...]
    method: str = "compliant"
    restitution: Optional[float] = None
    friction: Tuple[float, float] = (0.0, 0.0)
    params: Tuple[Tuple[str, Any], ...] = ()
    source: str = ""


@dataclass(frozen=True)
class InitialVelocitySpec:
    """Initial velocity of a part frame origin (m/s) and angular velocity (rad/s), assembly frame."""

    part: str
    velocity: Vec3 = (0.0, 0.0, 0.0)
    angular_velocity: Vec3 = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class MechanismSpec:
    """A whole mechanism, in SI units.

    ``cad`` is an optional handle to the CAD assembly the parts came from (for writers);
    the kernel never reads it.
    """

    parts: Tuple[PartSpec, ...]
    joints: Tuple[JointSpec, ...] = ()
    drivers: Tuple[DriverSpec, ...] = ()
    forces: Tuple[ForceSpec, ...] = ()
    gravity: Vec3 = (0.0, 0.0, 0.0)
    initial_velocities: Tuple[InitialVelocitySpec, ...] = ()
    contacts: Tuple[ContactSpec, ...] = ()
    name: str = "mechanism"
    source: str = ""
    settings: Tuple[Tuple[str, Any], ...] = ()  # analysis defaults from the file (t_end, steps, ...)
    cad: Any = field(default=None, compare=False, hash=False, repr=False)

    def setting(self, key, default=None):
        """One entry of :attr:`settings`, or ``default``."""
        return dict(self.settings).get(key, default)

    def part(self, name):
        """The part called ``name``; KeyError if there is none."""
        for p in self.parts:
            if p.name == name:
                return p
        raise KeyError(name)

    def joint(self, name):
        """The joint called ``name``; KeyError if there is none."""
        for j in self.joints:
            if j.name == name:
                return j
        raise KeyError(name)
