"""Read ISO 10303-105 kinematics (the kinematic pairs of AP214/AP242) from a STEP file.

OCCT parses these entities (``StepKinematics_*``) but neither OCP 7.9 nor XCAF exposes
them: the Python wheel has no ``StepKinematics`` module, so a parsed pair can be neither
down-cast nor read.  This module therefore reads the ISO 10303-21 text itself, with a
small whitelist parser (no ``eval``): records ``#id = NAME(...);`` and complex records
``#id = ( A(...) B(...) );`` are indexed in one pass and parsed lazily, only for the
entities the kinematic structure reaches.  The attribute order of every entity follows
OCCT's readers (``RWStepKinematics_RW*.cxx``), which follow the AP242 schema; simple
records are split into their supertypes' attributes, so complex records (the form some
exporters use for pairs with actuators or ranges) are read by the same code.

What is read
------------
``MECHANISM_REPRESENTATION``, ``KINEMATIC_TOPOLOGY_STRUCTURE``, ``KINEMATIC_LINK``,
``KINEMATIC_JOINT``, the kinematic pairs, ``RIGID_LINK_REPRESENTATION``,
``PAIR_REPRESENTATION_RELATIONSHIP``, ``KINEMATIC_LINK_REPRESENTATION_ASSOCIATION``,
``CONTEXT_DEPENDENT_KINEMATIC_LINK_REPRESENTATION``,
``PRODUCT_DEFINITION_RELATIONSHIP_KINEMATICS`` and
``KINEMATIC_PROPERTY_MECHANISM_REPRESENTATION`` (its ``base`` link is the ground).

From a pair to two parts
------------------------
A pair's ``joint`` is a ``KINEMATIC_JOINT(name, edge_start, edge_end)`` between two
``KINEMATIC_LINK`` s; ``transform_item_1`` is the pair frame in the first link
(``edge_start``), ``transform_item_2`` in the second.  A link is found in the assembly
through its link representation (``RIGID_LINK_REPRESENTATION(.., represented_link)``),
the ``KINEMATIC_LINK_REPRESENTATION_ASSOCIATION`` that relates it to a shape
representation, the ``SHAPE_DEFINITION_REPRESENTATION`` of that shape representation
(directly, or through untransformed ``SHAPE_REPRESENTATION_RELATIONSHIP`` s) and the
product behind it.  The product is matched with :attr:`StepAssembly.product_names`
(OCCT's product name: ``PRODUCT.name``, else its id).  When the product has several
instances, the ``CONTEXT_DEPENDENT_KINEMATIC_LINK_REPRESENTATION`` of the association
names the ``NEXT_ASSEMBLY_USAGE_OCCURRENCE``, whose instance name (OCCT's rule:
description, else name, else id) picks the part.  The link representation shares the
coordinate space of the shape representation (the association carries no
transformation), which is the part frame of :class:`StepAssembly`.  A link whose
product is a sub-assembly is not supported (an error says so).

Pairs -> cadmotion joints
-------------------------
=====================================  ==================================================
REVOLUTE_PAIR                          revolute (z = pair axis)
PRISMATIC_PAIR                         prismatic (z = slide direction)
CYLINDRICAL_PAIR                       cylindrical
SPHERICAL_PAIR                         spherical
UNIVERSAL_PAIR                         universal: Z_i = z of frame 1 (first rotation),
                                       Z_j = x of frame 2 (second rotation); a skew
                                       angle other than 0 is not supported
PLANAR_PAIR                            planar (z = plane normal)
FULLY_CONSTRAINED_PAIR                 fixed
SCREW_PAIR (pitch, length per turn)    screw (params pitch)
GEAR_PAIR (radius_first/second_link)   gear coupler of the two revolute joints that hold
                                       the gears to a common carrier; parallel axes only
RACK_AND_PINION_PAIR (pinion_radius)   rack-and-pinion coupler of the pinion's revolute
                                       and the rack's prismatic joint
LOW_ORDER_KINEMATIC_PAIR (t_x..r_z)    by its free directions (r_z: revolute, t_z:
                                       prismatic, t_z r_z: cylindrical, r_x r_y r_z:
                                       spherical, r_x r_z: universal, t_x t_y r_z: planar,
                                       none: fixed)
UNCONSTRAINED_PAIR                     no joint
=====================================  ==================================================

The ``*_WITH_RANGE`` forms give ``limits`` (``angle`` for revolute, cylindrical, planar
and screw pairs, ``disp`` for prismatic and cylindrical ones; limits of other
coordinates have no cadmotion coordinate and are ignored).  Any other pair
(``POINT_ON_SURFACE_PAIR``, ``SLIDING_CURVE_PAIR``, ``HOMOKINETIC_PAIR``, ...) raises
:class:`~cadmotion.errors.CadImportError` naming it, or is skipped with a
:class:`StepKinematicsWarning` when ``unsupported="skip"``.

Marker frames
-------------
``markers[0]`` is the pair frame in the first part exactly as written.  The spec
expects the two frames to coincide at the initial pose, where ISO 10303-105 makes them
coincide at zero pair values; so, as the FCStd and .asmt importers do
(:func:`cadmotion.importers.asmt.zero_joint_coordinates`), the second frame is turned
about z and moved along z by the pair's value at the assembly's pose, and range limits
are shifted by the same amounts.  A pair that does not hold at the assembly's pose by
more than ``tol`` (1e-6 m or rad) is reported with a :class:`StepKinematicsWarning`.

Gear and rack signs are taken from the geometry, not from a convention: external
gears (axis distance r1 + r2) turn in opposite senses, internal ones (distance
|r1 - r2|, or radii of opposite signs) in the same sense; a rack moves the way the
pinion's pitch circle moves where it touches the rack (the rack is on the side of its
pair frame origin, else of its centre of mass).

Units
-----
Placements are converted with the length unit of the context of the link
representation that holds them; pair parameters (pitch, radii, limits) with the units
of the mechanism representation's context (else the first link representation's);
a context without units falls back to :attr:`StepAssembly.unit_scale` and radians.
Everything returned is in metres and radians.

Example
-------
>>> from cadmotion.importers.step import read_step
>>> from cadmotion.importers.step_kinematics import read_step_kinematics
>>> asm = read_step("arm.step")                       # doctest: +SKIP
>>> joints = read_step_kinematics("arm.step", asm)    # doctest: +SKIP
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..errors import CadImportError
from ..kernel.rotations import quat_to_matrix
from ..kernel.spec import Frame, JointSpec, MechanismSpec
from .asmt import align_axes, joint_violations, zero_joint_coordinates
from .part_names import clean_name, uniquify

__all__ = [
    "read_step_kinematics",
    "read_step_mechanism",
    "StepMechanism",
    "StepKinematicsWarning",
    "PAIR_TYPES",
    "UNSUPPORTED_PAIR_TYPES",
]


class StepKinematicsWarning(UserWarning):
    """Something in a file's kinematics was read with a fallback or skipped."""


#: Pair entity (most specific first) -> cadmotion joint type ("" = no joint;
#: "low-order" = decided by the freedoms t_x .. r_z).
PAIR_TYPES: Mapping[str, str] = {
    "REVOLUTE_PAIR_WITH_RANGE": "revolute",
    "REVOLUTE_PAIR": "revolute",
    "PRISMATIC_PAIR_WITH_RANGE": "prismatic",
    "PRISMATIC_PAIR": "prismatic",
    "CYLINDRICAL_PAIR_WITH_RANGE": "cylindrical",
    "CYLINDRICAL_PAIR": "cylindrical",
    "SPHERICAL_PAIR_WITH_RANGE": "spherical",
    "SPHERICAL_PAIR": "spherical",
    "UNIVERSAL_PAIR_WITH_RANGE": "universal",
    "UNIVERSAL_PAIR": "universal",
    "PLANAR_PAIR_WITH_RANGE": "planar",
    "PLANAR_PAIR": "planar",
    "FULLY_CONSTRAINED_PAIR": "fixed",
    "UNCONSTRAINED_PAIR": "",
    "SCREW_PAIR_WITH_RANGE": "screw",
    "SCREW_PAIR": "screw",
    "GEAR_PAIR_WITH_RANGE": "gear",
    "GEAR_PAIR": "gear",
    "RACK_AND_PINION_PAIR_WITH_RANGE": "rack-and-pinion",
    "RACK_AND_PINION_PAIR": "rack-and-pinion",
    "LOW_ORDER_KINEMATIC_PAIR_WITH_RANGE": "low-order",
    "LOW_ORDER_KINEMATIC_PAIR": "low-order",
}

#: Pairs of ISO 10303-105 that cadmotion's joint library cannot express (yet).
UNSUPPORTED_PAIR_TYPES: Tuple[str, ...] = (
    "SPHERICAL_PAIR_WITH_PIN_AND_RANGE", "SPHERICAL_PAIR_WITH_PIN", "HOMOKINETIC_PAIR",
    "POINT_ON_SURFACE_PAIR_WITH_RANGE", "POINT_ON_SURFACE_PAIR",
    "POINT_ON_PLANAR_CURVE_PAIR_WITH_RANGE", "POINT_ON_PLANAR_CURVE_PAIR",
    "PLANAR_CURVE_PAIR_RANGE", "PLANAR_CURVE_PAIR", "SLIDING_CURVE_PAIR",
    "ROLLING_CURVE_PAIR", "SURFACE_PAIR_WITH_RANGE", "SURFACE_PAIR", "SLIDING_SURFACE_PAIR",
    "ROLLING_SURFACE_PAIR", "LINEAR_FLEXIBLE_AND_PINION_PAIR",
    "LINEAR_FLEXIBLE_AND_PLANAR_CURVE_PAIR",
)

# freedoms (t_x, t_y, t_z, r_x, r_y, r_z) of a plain LOW_ORDER_KINEMATIC_PAIR -> joint type
_FREEDOMS = {
    (False, False, False, False, False, False): "fixed",
    (False, False, False, False, False, True): "revolute",
    (False, False, True, False, False, False): "prismatic",
    (False, False, True, False, False, True): "cylindrical",
    (False, False, False, True, True, True): "spherical",
    (False, False, False, True, False, True): "universal",
    (True, True, False, False, False, True): "planar",
    (True, True, True, True, True, True): "",
}

_TOL = 1e-6  # m or rad: a pair that misses the assembly's pose by more is reported
_MAX_UNIT_DEPTH = 6


# ===================================================================== Part 21 layer


class Ref(int):
    """A reference ``#n`` to another entity."""

    def __repr__(self):
        return f"#{int(self)}"


class Enum(str):
    """An enumeration value (without the dots)."""


@dataclass(frozen=True)
class Typed:
    """A typed parameter such as ``LENGTH_MEASURE(25.4)``."""

    name: str
    args: tuple


class _Derived:
    def __repr__(self):
        return "*"


DERIVED = _Derived()

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<str>'(?:[^']|'')*')
    | (?P<ref>\#\d+)
    | (?P<real>[+-]?\d+\.\d*(?:[Ee][+-]?\d+)?)
    | (?P<int>[+-]?\d+)
    | (?P<enum>\.[A-Za-z_][A-Za-z0-9_]*\.)
    | (?P<kw>!?[A-Za-z_][A-Za-z0-9_]*)
    | (?P<bin>"[0-9A-Fa-f]*")
    | (?P<comment>/\*.*?\*/)
    | (?P<p>[(),$*])
    )""",
    re.X | re.S,
)
_RECORD = re.compile(
    r"""\#(\d+)\s*=\s*((?:[^;'"/]+|'(?:[^']|'')*'|"[^"]*"|/\*.*?\*/|/)*)\s*;""", re.S
)
_GAP = re.compile(r"(?:\s+|/\*.*?\*/)*", re.S)
_DATA = re.compile(r"\bDATA\b\s*(?:\((?:[^;']|'(?:[^']|'')*')*\))?\s*;")
_ENDSEC = re.compile(r"ENDSEC\s*;")
_STATEMENT = re.compile(r"""((?:[^;'"/]+|'(?:[^']|'')*'|"[^"]*"|/\*.*?\*/|/)*);""", re.S)
_SIMPLE_TYPE = re.compile(r"\s*(!?[A-Za-z_][A-Za-z0-9_]*)\s*\(")
_ESCAPE = re.compile(
    r"\\X2\\((?:[0-9A-Fa-f]{4})*)\\X0\\|\\X4\\((?:[0-9A-Fa-f]{8})*)\\X0\\"
    r"|\\X\\([0-9A-Fa-f]{2})|\\S\\(.)|\\P[A-I]\\|\\\\",
    re.S,
)


def _decode_escape(m):
    if m.group(1) is not None:
        h = m.group(1)
        return "".join(chr(int(h[k:k + 4], 16)) for k in range(0, len(h), 4))
    if m.group(2) is not None:
        h = m.group(2)
        return "".join(chr(int(h[k:k + 8], 16)) for k in range(0, len(h), 8))
    if m.group(3) is not None:
        return chr(int(m.group(3), 16))
    if m.group(4) is not None:
        return chr(ord(m.group(4)) + 128)
    text = m.group(0)
    return "\\" if text == "\\\\" else ""


def _decode_string(raw: str) -> str:
    """The text of a Part 21 string token (quotes included): '' and \\X2\\..\\X0\\ etc."""
    body = raw[1:-1].replace("''", "'")
    return _ESCAPE.sub(_decode_escape, body) if "\\" in body else body


class _Syntax(Exception):
    pass


def _tokens(text):
    pos, n = 0, len(text)
    while True:
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip():
                raise _Syntax(f"unexpected text {text[pos:pos + 20]!r}")
            return
        pos = m.end()
        kind = m.lastgroup
        if kind != "comment":
            yield kind, m.group(kind)
        if pos >= n:
            return


def _parse_list(toks, where):
    """Parameters up to the matching ')' (the '(' is consumed already)."""
    out = []
    expect_value = True
    for kind, value in toks:
        if kind == "p" and value == ")":
            if expect_value and out:
                raise _Syntax("a parameter is missing before ')'")
            return out
        if kind == "p" and value == ",":
            if expect_value:
                raise _Syntax("a parameter is missing before ','")
            expect_value = True
            continue
        if not expect_value:
            raise _Syntax("',' expected between parameters")
        out.append(_value(kind, value, toks, where))
        expect_value = False
    raise _Syntax("unbalanced parentheses")


def _value(kind, value, toks, where):
    if kind == "str":
        return _decode_string(value)
    if kind == "ref":
        return Ref(value[1:])
    if kind == "real":
        return float(value)
    if kind == "int":
        return int(value)
    if kind == "enum":
        name = value[1:-1].upper()
        return {"T": True, "F": False, "U": None}.get(name, Enum(name))
    if kind == "bin":
        return value[1:-1]
    if kind == "kw":
        k2, v2 = next(toks, (None, None))
        if k2 != "p" or v2 != "(":
            raise _Syntax(f"'(' expected after {value}")
        return Typed(value.upper(), tuple(_parse_list(toks, where)))
    if kind == "p":
        if value == "$":
            return None
        if value == "*":
            return DERIVED
        if value == "(":
            return _parse_list(toks, where)
    raise _Syntax(f"unexpected {value!r}")


def _parse_record(body: str, where) -> Tuple[bool, Dict[str, list]]:
    """(simple?, {entity name: parameters}) of a record body."""
    toks = _tokens(body)
    kind, value = next(toks, (None, None))
    if kind == "kw":
        k2, v2 = next(toks, (None, None))
        if k2 != "p" or v2 != "(":
            raise _Syntax(f"'(' expected after {value}")
        params = _parse_list(toks, where)
        if next(toks, None) is not None:
            raise _Syntax("text after the parameters")
        return True, {value.upper(): params}
    if kind == "p" and value == "(":
        partials: Dict[str, list] = {}
        for kind, value in toks:
            if kind == "p" and value == ")":
                if next(toks, None) is not None:
                    raise _Syntax("text after the complex entity")
                if not partials:
                    raise _Syntax("empty complex entity")
                return False, partials
            if kind != "kw":
                raise _Syntax(f"entity name expected, got {value!r}")
            k2, v2 = next(toks, (None, None))
            if k2 != "p" or v2 != "(":
                raise _Syntax(f"'(' expected after {value}")
            partials[value.upper()] = _parse_list(toks, where)
        raise _Syntax("unbalanced parentheses")
    raise _Syntax("an entity name or '(' expected")


@dataclass
class _Record:
    id: int
    simple: bool
    partials: Dict[str, list]

    @property
    def names(self) -> Tuple[str, ...]:
        return tuple(self.partials)

    @property
    def type(self) -> str:
        return next(iter(self.partials)) if self.simple else "(" + " ".join(self.partials) + ")"


# Attribute layouts, supertypes first, as OCCT's RWStepKinematics readers read them.
_RI = ("REPRESENTATION_ITEM", ("name",))
_GRI = ("GEOMETRIC_REPRESENTATION_ITEM", ())
_REP = ("REPRESENTATION", ("name", "items", "context_of_items"))
_IDT = ("ITEM_DEFINED_TRANSFORMATION",
        ("idt_name", "idt_description", "transform_item_1", "transform_item_2"))
_KP = ("KINEMATIC_PAIR", ("joint",))
_PAIR = (_RI, _GRI, _IDT, _KP)
_LOW = _PAIR + (("LOW_ORDER_KINEMATIC_PAIR", ("t_x", "t_y", "t_z", "r_x", "r_y", "r_z")),)
_COUPLED = _PAIR + (("LOW_ORDER_KINEMATIC_PAIR_WITH_MOTION_COUPLING", ()),)
_ROT_RANGE = ("lower_limit_actual_rotation", "upper_limit_actual_rotation")
_TRA_RANGE = ("lower_limit_actual_translation", "upper_limit_actual_translation")


def _with(base, *partials):
    return tuple(base) + tuple(partials)


_LAYOUTS: Dict[str, tuple] = {
    "REVOLUTE_PAIR": _with(_LOW, ("REVOLUTE_PAIR", ())),
    "PRISMATIC_PAIR": _with(_LOW, ("PRISMATIC_PAIR", ())),
    "CYLINDRICAL_PAIR": _with(_LOW, ("CYLINDRICAL_PAIR", ())),
    "SPHERICAL_PAIR": _with(_LOW, ("SPHERICAL_PAIR", ())),
    "UNIVERSAL_PAIR": _with(_LOW, ("UNIVERSAL_PAIR", ("input_skew_angle",))),
    "PLANAR_PAIR": _with(_LOW, ("PLANAR_PAIR", ())),
    "FULLY_CONSTRAINED_PAIR": _with(_LOW, ("FULLY_CONSTRAINED_PAIR", ())),
    "UNCONSTRAINED_PAIR": _with(_LOW, ("UNCONSTRAINED_PAIR", ())),
    "LOW_ORDER_KINEMATIC_PAIR": _LOW,
    "SCREW_PAIR": _with(_COUPLED, ("SCREW_PAIR", ("pitch",))),
    "RACK_AND_PINION_PAIR": _with(_COUPLED, ("RACK_AND_PINION_PAIR", ("pinion_radius",))),
    "GEAR_PAIR": _with(_COUPLED, ("GEAR_PAIR", ("radius_first_link", "radius_second_link",
                                                "bevel", "helical_angle", "gear_ratio"))),
    "KINEMATIC_LINK": (_RI, ("TOPOLOGICAL_REPRESENTATION_ITEM", ()), ("VERTEX", ()),
                       ("KINEMATIC_LINK", ())),
    "KINEMATIC_JOINT": (_RI, ("TOPOLOGICAL_REPRESENTATION_ITEM", ()),
                        ("EDGE", ("edge_start", "edge_end")), ("KINEMATIC_JOINT", ())),
    "KINEMATIC_LINK_REPRESENTATION": (_REP, ("KINEMATIC_LINK_REPRESENTATION",
                                             ("represented_link",))),
    "MECHANISM_REPRESENTATION": (_REP, ("MECHANISM_REPRESENTATION", ("represented_topology",))),
    "KINEMATIC_TOPOLOGY_STRUCTURE": (_REP, ("KINEMATIC_TOPOLOGY_STRUCTURE", ())),
    "KINEMATIC_LINK_REPRESENTATION_ASSOCIATION": (
        ("REPRESENTATION_RELATIONSHIP", ("name", "description", "rep_1", "rep_2")),
        ("KINEMATIC_LINK_REPRESENTATION_ASSOCIATION", ())),
    "PAIR_REPRESENTATION_RELATIONSHIP": (
        _RI, _GRI,
        ("REPRESENTATION_RELATIONSHIP", ("rr_name", "description", "rep_1", "rep_2")),
        ("REPRESENTATION_RELATIONSHIP_WITH_TRANSFORMATION", ("transformation_operator",)),
        ("PAIR_REPRESENTATION_RELATIONSHIP", ())),
    "CONTEXT_DEPENDENT_KINEMATIC_LINK_REPRESENTATION": (
        ("CONTEXT_DEPENDENT_KINEMATIC_LINK_REPRESENTATION",
         ("representation_relation", "represented_product_relation")),),
    "PRODUCT_DEFINITION_RELATIONSHIP_KINEMATICS": (
        ("PROPERTY_DEFINITION", ("name", "description", "definition")),
        ("PRODUCT_DEFINITION_RELATIONSHIP_KINEMATICS", ())),
    "KINEMATIC_PROPERTY_MECHANISM_REPRESENTATION": (
        ("PROPERTY_DEFINITION_REPRESENTATION", ("definition", "used_representation")),
        ("KINEMATIC_PROPERTY_DEFINITION_REPRESENTATION", ()),
        ("KINEMATIC_PROPERTY_MECHANISM_REPRESENTATION", ("base",))),
    "AXIS2_PLACEMENT_3D": (_RI, _GRI, ("PLACEMENT", ("location",)),
                           ("AXIS2_PLACEMENT_3D", ("axis", "ref_direction"))),
    "CARTESIAN_POINT": (_RI, _GRI, ("POINT", ()), ("CARTESIAN_POINT", ("coordinates",))),
    "DIRECTION": (_RI, _GRI, ("DIRECTION", ("direction_ratios",))),
    "SHAPE_DEFINITION_REPRESENTATION": (
        ("PROPERTY_DEFINITION_REPRESENTATION", ("definition", "used_representation")),
        ("SHAPE_DEFINITION_REPRESENTATION", ())),
    "PRODUCT_DEFINITION_SHAPE": (("PROPERTY_DEFINITION", ("name", "description", "definition")),
                                 ("PRODUCT_DEFINITION_SHAPE", ())),
    "PRODUCT_DEFINITION": (("PRODUCT_DEFINITION",
                            ("id", "description", "formation", "frame_of_reference")),),
    "PRODUCT_DEFINITION_FORMATION": (("PRODUCT_DEFINITION_FORMATION",
                                      ("id", "description", "of_product")),),
    "PRODUCT": (("PRODUCT", ("id", "name", "description", "frame_of_reference")),),
    "NEXT_ASSEMBLY_USAGE_OCCURRENCE": (
        ("PRODUCT_DEFINITION_RELATIONSHIP", ("id", "name", "description", "relating", "related")),
        ("PRODUCT_DEFINITION_USAGE", ()), ("ASSEMBLY_COMPONENT_USAGE", ("reference_designator",)),
        ("NEXT_ASSEMBLY_USAGE_OCCURRENCE", ())),
    "SHAPE_REPRESENTATION_RELATIONSHIP": (
        ("REPRESENTATION_RELATIONSHIP", ("name", "description", "rep_1", "rep_2")),
        ("SHAPE_REPRESENTATION_RELATIONSHIP", ())),
    "REPRESENTATION_RELATIONSHIP": (
        ("REPRESENTATION_RELATIONSHIP", ("name", "description", "rep_1", "rep_2")),),
}
for _n in ("RIGID_LINK_REPRESENTATION", "LINEAR_FLEXIBLE_LINK_REPRESENTATION"):
    _LAYOUTS[_n] = _with(_LAYOUTS["KINEMATIC_LINK_REPRESENTATION"], (_n, ()))
for _n, _extra in (
    ("REVOLUTE_PAIR", _ROT_RANGE), ("PRISMATIC_PAIR", _TRA_RANGE),
    ("CYLINDRICAL_PAIR", _TRA_RANGE + _ROT_RANGE),
    ("SPHERICAL_PAIR", ("lower_limit_yaw", "upper_limit_yaw", "lower_limit_pitch",
                        "upper_limit_pitch", "lower_limit_roll", "upper_limit_roll")),
    ("UNIVERSAL_PAIR", ("lower_limit_first_rotation", "upper_limit_first_rotation",
                        "lower_limit_second_rotation", "upper_limit_second_rotation")),
    ("PLANAR_PAIR", _ROT_RANGE + ("lower_limit_actual_translation_x",
                                  "upper_limit_actual_translation_x",
                                  "lower_limit_actual_translation_y",
                                  "upper_limit_actual_translation_y")),
    ("SCREW_PAIR", _ROT_RANGE),
    ("RACK_AND_PINION_PAIR", ("lower_limit_rack_displacement", "upper_limit_rack_displacement")),
    ("GEAR_PAIR", ("lower_limit_actual_rotation_1", "upper_limit_actual_rotation_1")),
    ("LOW_ORDER_KINEMATIC_PAIR", tuple(
        f"{side}_limit_actual_{what}_{axis}" for what in ("rotation", "translation")
        for axis in "xyz" for side in ("lower", "upper"))),
):
    _LAYOUTS[_n + "_WITH_RANGE"] = _with(_LAYOUTS[_n], (_n + "_WITH_RANGE", _extra))
for _n in ("SHAPE_REPRESENTATION", "ADVANCED_BREP_SHAPE_REPRESENTATION",
           "MANIFOLD_SURFACE_SHAPE_REPRESENTATION", "FACETED_BREP_SHAPE_REPRESENTATION",
           "GEOMETRICALLY_BOUNDED_WIREFRAME_SHAPE_REPRESENTATION",
           "GEOMETRICALLY_BOUNDED_SURFACE_SHAPE_REPRESENTATION",
           "EDGE_BASED_WIREFRAME_SHAPE_REPRESENTATION", "TESSELLATED_SHAPE_REPRESENTATION"):
    _LAYOUTS.setdefault(_n, (_REP, ("SHAPE_REPRESENTATION", ()), (_n, ())))
for _n in ("PRODUCT_DEFINITION_WITH_ASSOCIATED_DOCUMENTS",):
    _LAYOUTS[_n] = _with(_LAYOUTS["PRODUCT_DEFINITION"], (_n, ("documentation_ids",)))
for _n in ("PRODUCT_DEFINITION_FORMATION_WITH_SPECIFIED_SOURCE",):
    _LAYOUTS[_n] = _with(_LAYOUTS["PRODUCT_DEFINITION_FORMATION"], (_n, ("make_or_buy",)))

_LINK_REPS = ("RIGID_LINK_REPRESENTATION", "LINEAR_FLEXIBLE_LINK_REPRESENTATION",
              "KINEMATIC_LINK_REPRESENTATION")
_PD_TYPES = ("PRODUCT_DEFINITION", "PRODUCT_DEFINITION_WITH_ASSOCIATED_DOCUMENTS")
_PDF_TYPES = ("PRODUCT_DEFINITION_FORMATION", "PRODUCT_DEFINITION_FORMATION_WITH_SPECIFIED_SOURCE")
_SI_PREFIX = {None: 1.0, "EXA": 1e18, "PETA": 1e15, "TERA": 1e12, "GIGA": 1e9, "MEGA": 1e6,
              "KILO": 1e3, "HECTO": 1e2, "DECA": 1e1, "DECI": 1e-1, "CENTI": 1e-2,
              "MILLI": 1e-3, "MICRO": 1e-6, "NANO": 1e-9, "PICO": 1e-12, "FEMTO": 1e-15,
              "ATTO": 1e-18}


class _Model:
    """The DATA section of a STEP file: records indexed by id and type, parsed lazily."""

    def __init__(self, text: str, where: str):
        self.text = text
        self.where = where
        self.spans: Dict[int, Tuple[int, int]] = {}
        self.by_type: Dict[str, List[int]] = {}
        self._cache: Dict[int, _Record] = {}
        self._index()

    # ------------------------------------------------------------------ indexing
    def _header_end(self) -> int:
        """Position after the HEADER section (its strings may hold anything)."""
        m = re.search(r"\bHEADER\s*;", self.text)
        if m is None:
            return 0
        pos = m.end()
        while True:
            s = _STATEMENT.match(self.text, pos)
            if s is None or not s.group(0).strip():
                return m.end()
            pos = s.end()
            if s.group(1).strip().upper() == "ENDSEC":
                return pos

    def _index(self):
        text = self.text
        pos = self._header_end()
        sections = 0
        while True:
            m = _DATA.search(text, pos)
            if m is None:
                break
            sections += 1
            pos = m.end()
            last = None
            while True:
                pos = _GAP.match(text, pos).end()
                if _ENDSEC.match(text, pos):
                    pos = _ENDSEC.match(text, pos).end()
                    break
                r = _RECORD.match(text, pos)
                if r is None:
                    after = f" after #{last}" if last is not None else ""
                    line = text.count("\n", 0, pos) + 1
                    raise CadImportError(
                        f"the DATA section cannot be read at line {line}{after} "
                        f"(text {text[pos:pos + 30]!r})", where=self.where,
                        hint="the file is damaged or not ISO 10303-21; export it again")
                eid = int(r.group(1))
                if eid in self.spans:
                    raise CadImportError(f"entity #{eid} is defined twice", where=self.where,
                                         hint="the file is damaged; export it again")
                self.spans[eid] = (r.start(2), r.end(2))
                last = eid
                body = r.group(2)
                t = _SIMPLE_TYPE.match(body)
                if t is not None:
                    self.by_type.setdefault(t.group(1).upper(), []).append(eid)
                else:
                    for name in self.record(eid).names:
                        self.by_type.setdefault(name, []).append(eid)
                pos = r.end()
        if sections == 0:
            raise CadImportError("the STEP file has no DATA section", where=self.where,
                                 hint="give a complete ISO 10303-21 file")

    def ids(self, *types: str) -> List[int]:
        out = set()
        for t in types:
            out.update(self.by_type.get(t, ()))
        return sorted(out)

    # ------------------------------------------------------------------ records
    def record(self, eid, referrer=None) -> _Record:
        eid = int(eid)
        rec = self._cache.get(eid)
        if rec is not None:
            return rec
        span = self.spans.get(eid)
        if span is None:
            by = f" (referenced by #{referrer})" if referrer is not None else ""
            raise CadImportError(f"entity #{eid}{by} is not in the file", where=self.where,
                                 hint="the file is incomplete or was edited by hand; export it again")
        try:
            simple, partials = _parse_record(self.text[span[0]:span[1]], self.where)
        except _Syntax as exc:
            raise CadImportError(f"entity #{eid} cannot be parsed: {exc}", where=self.where,
                                 hint="the file is damaged; export it again") from None
        rec = _Record(eid, simple, partials)
        self._cache[eid] = rec
        return rec

    def fields(self, eid, expected: Sequence[str], referrer=None, what=None):
        """``(leaf type, {attribute: value})`` of entity ``eid``, which must be one of
        ``expected`` (a simple record of that type, or a complex record holding it)."""
        rec = self.record(eid, referrer)
        leaf = None
        for t in expected:
            if t in rec.partials:
                leaf = t
                break
        if leaf is None:
            by = f" (referenced by #{referrer})" if referrer is not None else ""
            raise CadImportError(
                f"entity #{int(eid)}{by} is {rec.type}, expected "
                f"{what or ' or '.join(expected)}", where=self.where,
                hint="the file does not follow the ISO 10303-105 entity layouts")
        layout = _LAYOUTS[leaf]
        out: Dict[str, object] = {}
        if rec.simple:
            params = rec.partials[leaf]
            names = [a for _, attrs in layout for a in attrs]
            if len(params) != len(names):
                raise CadImportError(
                    f"entity #{rec.id} {leaf} has {len(params)} parameters, expected "
                    f"{len(names)} ({', '.join(names)})", where=self.where,
                    hint="the file does not follow the ISO 10303-105 entity layouts")
            out.update(zip(names, params))
        else:
            for partial, attrs in layout:
                params = rec.partials.get(partial)
                if params is None:
                    if attrs:
                        raise CadImportError(
                            f"complex entity #{rec.id} has no {partial}(...) part "
                            f"({', '.join(attrs)})", where=self.where,
                            hint="the file does not follow the ISO 10303-105 entity layouts")
                    continue
                if len(params) != len(attrs):
                    raise CadImportError(
                        f"entity #{rec.id}: {partial} has {len(params)} parameters, expected "
                        f"{len(attrs)} ({', '.join(attrs) or 'none'})", where=self.where,
                        hint="the file does not follow the ISO 10303-105 entity layouts")
                out.update(zip(attrs, params))
        return leaf, out

    def try_fields(self, eid, expected: Sequence[str]) -> Optional[dict]:
        """Like :meth:`fields` for entities outside the kinematics (product structure):
        None instead of an error when the record is not of the expected layout."""
        try:
            return self.fields(eid, expected)[1]
        except CadImportError:
            return None

    def ref(self, value, eid, attr) -> Ref:
        if not isinstance(value, Ref):
            raise CadImportError(f"entity #{eid}: {attr} must be a reference, got {value!r}",
                                 where=self.where,
                                 hint="the file does not follow the ISO 10303-105 entity layouts")
        return value

    def real(self, value, eid, attr, optional=False) -> Optional[float]:
        if isinstance(value, Typed) and len(value.args) == 1:
            value = value.args[0]
        if optional and (value is None or value is DERIVED or isinstance(value, (Enum, Typed))):
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(float(value)):
            raise CadImportError(f"entity #{eid}: {attr} must be a number, got {value!r}",
                                 where=self.where,
                                 hint="the file does not follow the ISO 10303-105 entity layouts")
        return float(value)

    def string(self, value) -> str:
        return value.strip() if isinstance(value, str) and not isinstance(value, Enum) else ""


# ===================================================================== units and geometry


def _unit_factor(model: _Model, uid, kind: str, depth=0) -> Optional[float]:
    """SI factor of a LENGTH_UNIT / PLANE_ANGLE_UNIT entity, or None when it is not one."""
    if depth > _MAX_UNIT_DEPTH or not isinstance(uid, Ref):
        return None
    rec = model.record(uid)
    p = rec.partials
    if kind not in p and not rec.simple:
        return None
    if "SI_UNIT" in p:
        args = p["SI_UNIT"]
        if len(args) != 2:
            return None
        prefix = args[0].upper() if isinstance(args[0], Enum) else None
        if prefix not in _SI_PREFIX:
            return None
        return _SI_PREFIX[prefix]
    if "CONVERSION_BASED_UNIT" in p:
        args = p["CONVERSION_BASED_UNIT"]
        if len(args) != 2 or not isinstance(args[1], Ref):
            return None
        mwu = model.record(args[1])
        for name, margs in mwu.partials.items():
            if name.endswith("MEASURE_WITH_UNIT") and len(margs) == 2:
                value = margs[0].args[0] if isinstance(margs[0], Typed) and margs[0].args else margs[0]
                base = _unit_factor(model, margs[1], kind, depth + 1)
                if isinstance(value, (int, float)) and base is not None:
                    return float(value) * base
        return None
    return None


class _Units:
    """Length (m per unit) and plane angle (rad per unit) of representation contexts."""

    def __init__(self, model: _Model, fallback_length: Optional[float]):
        self.model = model
        self.fallback = fallback_length
        self._cache: Dict[int, Tuple[Optional[float], Optional[float]]] = {}

    def of_context(self, ctx) -> Tuple[Optional[float], Optional[float]]:
        if not isinstance(ctx, Ref):
            return None, None
        if int(ctx) in self._cache:
            return self._cache[int(ctx)]
        length = angle = None
        rec = self.model.record(ctx)
        units = rec.partials.get("GLOBAL_UNIT_ASSIGNED_CONTEXT")
        if units and isinstance(units[0], list):
            for uid in units[0]:
                if not isinstance(uid, Ref):
                    continue
                urec = self.model.record(uid, ctx)
                if "LENGTH_UNIT" in urec.partials and length is None:
                    length = _unit_factor(self.model, uid, "LENGTH_UNIT")
                elif "PLANE_ANGLE_UNIT" in urec.partials and angle is None:
                    angle = _unit_factor(self.model, uid, "PLANE_ANGLE_UNIT")
        self._cache[int(ctx)] = (length, angle)
        return length, angle

    def scales(self, *contexts, what: str) -> Tuple[float, float]:
        """(m per length unit, rad per angle unit) from the first context that has them."""
        length = angle = None
        for ctx in contexts:
            lu, au = self.of_context(ctx)
            length = length if length is not None else lu
            angle = angle if angle is not None else au
        if length is None:
            length = self.fallback
        if length is None:
            raise CadImportError(
                f"{what}: no length unit (neither its representation context nor the file "
                "states one)", where=self.model.where,
                hint="export the file with units (e.g. millimetres)")
        return length, (1.0 if angle is None else angle)


def _unit(v, what, model, eid):
    v = np.asarray(v, float)
    n = float(np.linalg.norm(v))
    if not math.isfinite(n) or n < 1e-12:
        raise CadImportError(f"entity #{eid}: {what} is a zero or invalid direction",
                             where=model.where, hint="check the pair placements in the file")
    return v / n


def _placement(model: _Model, pid, scale: float, referrer) -> Tuple[np.ndarray, np.ndarray]:
    """(R, o): axes as columns and origin (m) of an AXIS2_PLACEMENT_3D (ISO 10303-42 rules)."""
    _, f = model.fields(pid, ("AXIS2_PLACEMENT_3D",), referrer,
                        what="AXIS2_PLACEMENT_3D (a pair frame)")

    def triple(ref, typ, attr):
        _, g = model.fields(model.ref(ref, pid, attr), (typ,), pid)
        vals = g["coordinates" if typ == "CARTESIAN_POINT" else "direction_ratios"]
        if not isinstance(vals, list) or len(vals) != 3:
            raise CadImportError(f"entity #{int(ref)}: {typ} must have 3 coordinates",
                                 where=model.where, hint="pair frames are 3-D placements")
        return np.array([model.real(v, int(ref), attr) for v in vals])

    o = triple(f["location"], "CARTESIAN_POINT", "location") * scale
    z = np.array([0.0, 0.0, 1.0]) if f["axis"] is None else \
        _unit(triple(f["axis"], "DIRECTION", "axis"), "axis", model, pid)
    if f["ref_direction"] is None:
        v = np.array([1.0, 0.0, 0.0]) if not np.array_equal(z, [1.0, 0.0, 0.0]) \
            else np.array([0.0, 1.0, 0.0])
    else:
        v = _unit(triple(f["ref_direction"], "DIRECTION", "ref_direction"), "ref_direction",
                  model, pid)
    x = v - float(v @ z) * z
    if np.linalg.norm(x) < 1e-9:
        raise CadImportError(f"entity #{int(pid)}: ref_direction is parallel to axis",
                             where=model.where, hint="check the pair placements in the file")
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z]), o


def _frame(R, o) -> Frame:
    return Frame(tuple(float(v) for v in o), tuple(tuple(float(v) for v in row) for row in R))


def _arrays(frame: Frame):
    return np.array(frame.rotation, float), np.array(frame.origin, float)


# ===================================================================== the result


@dataclass(frozen=True)
class StepMechanism:
    """The kinematics of a STEP file, mapped onto the parts of its :class:`StepAssembly`.

    Attributes
    ----------
    joints : tuple of JointSpec
        One per supported pair, in file order (SI units, markers in part frames).
    ground : tuple of str
        Parts of the base link(s) of ``KINEMATIC_PROPERTY_MECHANISM_REPRESENTATION``;
        a model should fix them.
    links : tuple of (link name, part name)
        How the file's links were matched to parts.
    name : str
        Name of the (first) mechanism representation.
    warnings : tuple of str
        Messages also issued as :class:`StepKinematicsWarning`.
    """

    joints: Tuple[JointSpec, ...] = ()
    ground: Tuple[str, ...] = ()
    links: Tuple[Tuple[str, str], ...] = ()
    name: str = ""
    warnings: Tuple[str, ...] = field(default=(), compare=False)


# ===================================================================== link -> part


class _Links:
    """Maps KINEMATIC_LINKs to the parts of a StepAssembly (see the module docstring)."""

    def __init__(self, model: _Model, asm):
        self.model = model
        self.asm = asm
        self._reps_of_link: Optional[Dict[int, List[int]]] = None
        self._assoc_of_rep: Optional[Dict[int, List[int]]] = None
        self._sdr_of_rep: Optional[Dict[int, List[int]]] = None
        self._srr: Optional[Dict[int, List[int]]] = None
        self._cdklr: Optional[Dict[int, List[int]]] = None
        self._pds_of_def: Optional[Dict[int, List[int]]] = None
        self._part_of: Dict[int, str] = {}
        self._rep_fields: Dict[int, dict] = {}

    # -- indexes built on first use
    def reps_of_link(self, link) -> List[int]:
        if self._reps_of_link is None:
            self._reps_of_link = {}
            for rid in self.model.ids(*_LINK_REPS):
                _, f = self.model.fields(rid, _LINK_REPS)
                self._rep_fields[rid] = f
                link_ref = f["represented_link"]
                if isinstance(link_ref, Ref):
                    self._reps_of_link.setdefault(int(link_ref), []).append(rid)
        return self._reps_of_link.get(int(link), [])

    def rep(self, rid) -> dict:
        if rid not in self._rep_fields:
            _, self._rep_fields[rid] = self.model.fields(rid, _LINK_REPS)
        return self._rep_fields[rid]

    def _assocs(self, rep) -> List[int]:
        if self._assoc_of_rep is None:
            self._assoc_of_rep = {}
            for aid in self.model.ids("KINEMATIC_LINK_REPRESENTATION_ASSOCIATION"):
                _, f = self.model.fields(aid, ("KINEMATIC_LINK_REPRESENTATION_ASSOCIATION",))
                for key in ("rep_1", "rep_2"):
                    if isinstance(f[key], Ref):
                        self._assoc_of_rep.setdefault(int(f[key]), []).append(aid)
        return self._assoc_of_rep.get(int(rep), [])

    def _sdrs(self, rep) -> List[int]:
        if self._sdr_of_rep is None:
            self._sdr_of_rep = {}
            for sid in self.model.ids("SHAPE_DEFINITION_REPRESENTATION"):
                f = self.model.try_fields(sid, ("SHAPE_DEFINITION_REPRESENTATION",))
                if f is not None and isinstance(f["used_representation"], Ref):
                    self._sdr_of_rep.setdefault(int(f["used_representation"]), []).append(sid)
        return self._sdr_of_rep.get(int(rep), [])

    def _related_reps(self, rep) -> List[int]:
        """Shape representations related to ``rep`` without a transformation."""
        if self._srr is None:
            self._srr = {}
            for rid in self.model.ids("SHAPE_REPRESENTATION_RELATIONSHIP",
                                      "REPRESENTATION_RELATIONSHIP"):
                if not self.model.record(rid).simple:  # complex ones place a component
                    continue
                f = self.model.try_fields(rid, ("SHAPE_REPRESENTATION_RELATIONSHIP",
                                                "REPRESENTATION_RELATIONSHIP"))
                if f is None:
                    continue
                a, b = f["rep_1"], f["rep_2"]
                if isinstance(a, Ref) and isinstance(b, Ref):
                    self._srr.setdefault(int(a), []).append(int(b))
                    self._srr.setdefault(int(b), []).append(int(a))
        return self._srr.get(int(rep), [])

    def _cdklrs(self, assoc) -> List[int]:
        if self._cdklr is None:
            self._cdklr = {}
            for cid in self.model.ids("CONTEXT_DEPENDENT_KINEMATIC_LINK_REPRESENTATION"):
                _, f = self.model.fields(cid, ("CONTEXT_DEPENDENT_KINEMATIC_LINK_REPRESENTATION",))
                if isinstance(f["representation_relation"], Ref):
                    self._cdklr.setdefault(int(f["representation_relation"]), []).append(cid)
        return self._cdklr.get(int(assoc), [])

    # -- product structure
    def _product_of_pd(self, pd, referrer) -> Tuple[int, Optional[str]]:
        """(PRODUCT id, OCCT's product name) of a PRODUCT_DEFINITION."""
        m = self.model
        _, f = m.fields(pd, _PD_TYPES, referrer)
        pdf = m.ref(f["formation"], pd, "formation")
        _, g = m.fields(pdf, _PDF_TYPES, pd)
        prod = m.ref(g["of_product"], pdf, "of_product")
        _, h = m.fields(prod, ("PRODUCT",), pdf)
        name = m.string(h["name"]) or m.string(h["id"])
        return int(prod), clean_name(name)

    def _pds_definitions(self, shape_rep) -> List[Tuple[int, int]]:
        """(SDR id, definition id) of the product definition shapes of a shape rep."""
        m = self.model
        seen, todo, out = {int(shape_rep)}, [int(shape_rep)], []
        depth = 0
        while todo and not out and depth < 4:
            nxt = []
            for rep in todo:
                for sid in self._sdrs(rep):
                    pds = m.fields(sid, ("SHAPE_DEFINITION_REPRESENTATION",))[1]["definition"]
                    if not isinstance(pds, Ref):
                        continue
                    g = m.try_fields(pds, ("PRODUCT_DEFINITION_SHAPE",))
                    if g is not None and isinstance(g["definition"], Ref):
                        out.append((sid, int(g["definition"])))
                for other in self._related_reps(rep):
                    if other not in seen:
                        seen.add(other)
                        nxt.append(other)
            todo, depth = nxt, depth + 1
        return out

    def _pds_of(self, definition) -> List[int]:
        """PRODUCT_DEFINITION_SHAPEs whose definition is ``definition``."""
        if self._pds_of_def is None:
            self._pds_of_def = {}
            for pid in self.model.ids("PRODUCT_DEFINITION_SHAPE"):
                f = self.model.try_fields(pid, ("PRODUCT_DEFINITION_SHAPE",))
                if f is not None and isinstance(f["definition"], Ref):
                    self._pds_of_def.setdefault(int(f["definition"]), []).append(pid)
        return self._pds_of_def.get(int(definition), [])

    def _nauo(self, nid, referrer):
        """(fields, OCCT's instance name or None) of a NEXT_ASSEMBLY_USAGE_OCCURRENCE."""
        m = self.model
        _, f = m.fields(nid, ("NEXT_ASSEMBLY_USAGE_OCCURRENCE",), referrer,
                        what="NEXT_ASSEMBLY_USAGE_OCCURRENCE (a part instance)")
        # OCCT names an instance by the occurrence's description, else name, else id, when
        # a PRODUCT_DEFINITION_SHAPE refers to the occurrence (else by its product's name)
        inst = None
        if self._pds_of(nid):
            inst = clean_name(m.string(f["description"]) or m.string(f["name"])
                               or m.string(f["id"]))
        return f, inst

    def _is_assembly(self, pd) -> bool:
        for nid in self.model.ids("NEXT_ASSEMBLY_USAGE_OCCURRENCE"):
            f = self.model.try_fields(nid, ("NEXT_ASSEMBLY_USAGE_OCCURRENCE",))
            if f is not None and isinstance(f["relating"], Ref) and int(f["relating"]) == int(pd):
                return True
        return False

    def part_of(self, link) -> str:
        """The part (StepAssembly part name) that KINEMATIC_LINK ``link`` is."""
        link = int(link)
        if link in self._part_of:
            return self._part_of[link]
        m, asm = self.model, self.asm
        _, lf = m.fields(link, ("KINEMATIC_LINK",), what="KINEMATIC_LINK")
        lname = m.string(lf["name"]) or f"#{link}"
        label = f"link #{link} {lname!r}"
        reps = self.reps_of_link(link)
        if not reps:
            raise CadImportError(
                f"{label} has no link representation (RIGID_LINK_REPRESENTATION), so it "
                "cannot be matched to a part", where=m.where,
                hint="the exporter must write a RIGID_LINK_REPRESENTATION for every link")
        assocs = [a for r in reps for a in self._assocs(r)]
        if not assocs:
            raise CadImportError(
                f"{label} is not associated with a part's shape "
                "(no KINEMATIC_LINK_REPRESENTATION_ASSOCIATION)", where=m.where,
                hint="the exporter must relate each link representation to the shape "
                     "representation of its part")
        pds, nauos = [], []
        for aid in assocs:
            rec = m.record(aid)
            if "REPRESENTATION_RELATIONSHIP_WITH_TRANSFORMATION" in rec.partials:
                raise CadImportError(
                    f"{label}: association #{aid} places the link with a transformation, "
                    "which is not supported", where=m.where,
                    hint="write the link representation in the part's coordinate space")
            _, af = m.fields(aid, ("KINEMATIC_LINK_REPRESENTATION_ASSOCIATION",))
            for key in ("rep_1", "rep_2"):
                other = af[key]
                if isinstance(other, Ref) and int(other) not in reps:
                    pds += self._pds_definitions(other)
            for cid in self._cdklrs(aid):
                _, cf = m.fields(cid, ("CONTEXT_DEPENDENT_KINEMATIC_LINK_REPRESENTATION",))
                pdrk = m.ref(cf["represented_product_relation"], cid, "represented_product_relation")
                _, pf = m.fields(pdrk, ("PRODUCT_DEFINITION_RELATIONSHIP_KINEMATICS",), cid)
                d = m.ref(pf["definition"], pdrk, "definition")
                drec = m.record(d, pdrk)
                if "PRODUCT_DEFINITION_SHAPE" in drec.partials:
                    _, df = m.fields(d, ("PRODUCT_DEFINITION_SHAPE",), pdrk)
                    d = m.ref(df["definition"], d, "definition")
                    drec = m.record(d, pdrk)
                if "NEXT_ASSEMBLY_USAGE_OCCURRENCE" in drec.partials:
                    nauos.append(int(d))
                elif any(t in drec.partials for t in _PD_TYPES):
                    pds.append((pdrk, int(d)))
                else:
                    raise CadImportError(
                        f"{label}: #{pdrk} relates to #{int(d)} ({drec.type}), expected a "
                        "NEXT_ASSEMBLY_USAGE_OCCURRENCE or PRODUCT_DEFINITION", where=m.where,
                        hint="the file does not follow the ISO 10303-105 entity layouts")
        # product definitions behind the shapes (a PDS of an occurrence counts as that occurrence)
        pd_ids = set()
        for src, d in pds:
            drec = m.record(d, src)
            if "NEXT_ASSEMBLY_USAGE_OCCURRENCE" in drec.partials:
                nauos.append(int(d))
            elif any(t in drec.partials for t in _PD_TYPES):
                pd_ids.add(int(d))
        inst_names = []
        for nid in dict.fromkeys(nauos):
            f, inst = self._nauo(nid, link)
            related = m.ref(f["related"], nid, "related")
            pd_ids.add(int(related))
            inst_names.append((nid, inst))
        if not pd_ids:
            raise CadImportError(
                f"{label}: the shape it is associated with belongs to no product "
                "(no SHAPE_DEFINITION_REPRESENTATION)", where=m.where,
                hint="associate the link with the shape representation of a part")
        products = {self._product_of_pd(pd, link) for pd in pd_ids}
        if len({p for p, _ in products}) > 1:
            raise CadImportError(
                f"{label} is associated with several products: "
                + ", ".join(sorted(repr(n) for _, n in products)), where=m.where,
                hint="a link must be one part")
        pname = next(iter(products))[1]
        keys = [k for k, n in asm.product_names.items() if n == pname] if pname else []
        candidates = [p for p in asm.parts if asm.products.get(p.name) in keys]
        if not candidates:
            if any(self._is_assembly(pd) for pd in pd_ids):
                raise CadImportError(
                    f"{label} is the sub-assembly {pname!r}; cadmotion needs every link to be "
                    "a single part", where=m.where,
                    hint="make each link a part in the CAD system, or join the sub-assembly's "
                         "parts with fixed joints in a model file")
            raise CadImportError(
                f"{label} is product {pname!r}, which is not a part of the assembly read from "
                "the file", where=m.where,
                hint="read the assembly and the kinematics from the same file")
        if len(candidates) > 1:
            narrowed = []
            for _, inst in inst_names:
                if inst is None:
                    continue
                narrowed += [p for p in candidates
                             if p.name == inst or p.path.split("/")[-1] == inst]
            narrowed = list({p.name: p for p in narrowed}.values())
            if len(narrowed) != 1:
                names = ", ".join(p.name for p in candidates[:8])
                named = [inst for _, inst in inst_names if inst]
                why = (f"its occurrence ({', '.join(repr(n) for n in named)}) matches "
                       f"{len(narrowed) or 'none'} of them" if named
                       else "the file does not say which one it is")
                raise CadImportError(
                    f"{label} is product {pname!r}, which has {len(candidates)} instances "
                    f"({names}), and {why}", where=m.where,
                    hint="the exporter must write a CONTEXT_DEPENDENT_KINEMATIC_LINK_"
                         "REPRESENTATION naming the NEXT_ASSEMBLY_USAGE_OCCURRENCE of the link")
            candidates = narrowed
        part = candidates[0].name
        if "@" in asm.products.get(part, ""):
            raise CadImportError(
                f"{label} is part {part!r}, which the assembly places by a mirror or scaling; "
                "its pair frames cannot be expressed in a rigid part frame", where=m.where,
                hint="mirror the part's geometry in the CAD system instead of its placement")
        self._part_of[link] = part
        return part


# ===================================================================== pairs -> joints


@dataclass
class _Pair:
    id: int
    leaf: str
    kind: str  # cadmotion type, "" (no joint), "gear", "rack-and-pinion"
    f: dict
    name: str
    parts: Tuple[str, str]
    links: Tuple[int, int]
    frames: Tuple[Tuple[np.ndarray, np.ndarray], Tuple[np.ndarray, np.ndarray]]
    length: float  # m per length unit of the pair's parameters
    angle: float  # rad per angle unit of the pair's parameters
    source: str


def _find_pairs(model: _Model) -> List[Tuple[int, str, bool]]:
    """(id, most specific pair type, supported) of every kinematic pair, in file order."""
    ids = set(model.ids(*PAIR_TYPES, *UNSUPPORTED_PAIR_TYPES, "KINEMATIC_PAIR"))
    for t, tids in model.by_type.items():
        if t.endswith("_PAIR") or t.endswith("_PAIR_WITH_RANGE"):
            ids.update(tids)
    out = []
    for pid in sorted(ids):
        names = model.record(pid).partials
        bad = next((t for t in UNSUPPORTED_PAIR_TYPES if t in names), None)
        good = next((t for t in PAIR_TYPES if t in names), None)
        if bad is None and good is not None:
            out.append((pid, good, True))
            continue
        other = [n for n in names if n.endswith("_PAIR") or n.endswith("_PAIR_WITH_RANGE")]
        out.append((pid, bad or (other[-1] if other else "KINEMATIC_PAIR"), False))
    return out


def _limit(model, f, eid, key, scale):
    v = model.real(f.get(key), eid, key, optional=True)
    return None if v is None else v * scale


class _Reader:
    def __init__(self, path: Path, text: str, asm, unsupported: str):
        self.where = str(path)
        self.model = _Model(text, self.where)
        self.asm = asm
        self.unsupported = unsupported
        self.units = _Units(self.model, getattr(asm, "unit_scale", None))
        self.links = _Links(self.model, asm)
        self.messages: List[str] = []
        self.pose = {p.name: (quat_to_matrix(p.orientation), np.array(p.position, float))
                     for p in asm.parts}
        self._mech_of_item: Optional[Dict[int, int]] = None
        self._prr_of_pair: Optional[Dict[int, List[int]]] = None

    def warn(self, message):
        self.messages.append(f"{self.where}: {message}")

    # ------------------------------------------------------------------ context lookups
    def _mechanisms(self):
        if self._mech_of_item is None:
            self._mech_of_item, self._prr_of_pair = {}, {}
            for prr in self.model.ids("PAIR_REPRESENTATION_RELATIONSHIP"):
                _, f = self.model.fields(prr, ("PAIR_REPRESENTATION_RELATIONSHIP",))
                op = f["transformation_operator"]
                if isinstance(op, Ref):
                    self._prr_of_pair.setdefault(int(op), []).append(prr)
            for mid in self.model.ids("MECHANISM_REPRESENTATION"):
                _, f = self.model.fields(mid, ("MECHANISM_REPRESENTATION",))
                for item in f["items"] if isinstance(f["items"], list) else ():
                    if isinstance(item, Ref):
                        self._mech_of_item.setdefault(int(item), mid)
        return self._mech_of_item, self._prr_of_pair

    def mechanism_context(self, pid):
        mech_of_item, prr_of_pair = self._mechanisms()
        for key in [pid] + prr_of_pair.get(pid, []):
            mid = mech_of_item.get(key)
            if mid is not None:
                _, f = self.model.fields(mid, ("MECHANISM_REPRESENTATION",))
                return f["context_of_items"]
        return None

    def mechanism_name(self) -> str:
        ids = self.model.ids("MECHANISM_REPRESENTATION")
        if len(ids) > 1:
            self.warn(f"the file holds {len(ids)} mechanism representations "
                      f"({', '.join('#' + str(i) for i in ids)}); the pairs of all are read")
        if not ids:
            return ""
        _, f = self.model.fields(ids[0], ("MECHANISM_REPRESENTATION",))
        return self.model.string(f["name"])

    # ------------------------------------------------------------------ ground
    def ground(self) -> Tuple[str, ...]:
        out = []
        for kid in self.model.ids("KINEMATIC_PROPERTY_MECHANISM_REPRESENTATION"):
            _, f = self.model.fields(kid, ("KINEMATIC_PROPERTY_MECHANISM_REPRESENTATION",))
            base = f["base"]
            if base is None:
                continue
            base = self.model.ref(base, kid, "base")
            _, rf = self.model.fields(base, _LINK_REPS, kid, what="a link representation")
            link = self.model.ref(rf["represented_link"], int(base), "represented_link")
            out.append(self.links.part_of(link))
        return tuple(dict.fromkeys(out))

    # ------------------------------------------------------------------ one pair
    def read_pair(self, pid: int, leaf: str) -> _Pair:
        m = self.model
        _, f = m.fields(pid, (leaf,))
        joint = m.ref(f["joint"], pid, "joint")
        _, jf = m.fields(joint, ("KINEMATIC_JOINT",), pid, what="KINEMATIC_JOINT")
        l1 = m.ref(jf["edge_start"], int(joint), "edge_start")
        l2 = m.ref(jf["edge_end"], int(joint), "edge_end")
        for link in (l1, l2):
            m.fields(link, ("KINEMATIC_LINK",), int(joint), what="KINEMATIC_LINK")
        p1, p2 = self.links.part_of(l1), self.links.part_of(l2)
        name = (m.string(f["name"]) or m.string(jf["name"]) or m.string(f["idt_name"])
                or f"{leaf.lower()}_{pid}")
        if p1 == p2:
            raise CadImportError(
                f"pair #{pid} {name!r} joins links #{int(l1)} and #{int(l2)}, which are both "
                f"part {p1!r}", where=self.where,
                hint="each link must be a different part")
        items = (m.ref(f["transform_item_1"], pid, "transform_item_1"),
                 m.ref(f["transform_item_2"], pid, "transform_item_2"))
        reps = (self.links.reps_of_link(l1), self.links.reps_of_link(l2))

        def holder(item, rep_ids):
            for rid in rep_ids:
                its = self.links.rep(rid)["items"]
                if isinstance(its, list) and any(isinstance(i, Ref) and int(i) == int(item)
                                                 for i in its):
                    return rid
            return None

        h = [holder(items[0], reps[0]), holder(items[1], reps[1])]
        if h[0] is None and h[1] is None:
            swapped = (holder(items[0], reps[1]), holder(items[1], reps[0]))
            if swapped[0] is not None and swapped[1] is not None:
                self.warn(f"pair #{pid} {name!r}: transform_item_1 is in the second link's "
                          "representation and transform_item_2 in the first's; read swapped")
                items = items[::-1]
                h = [swapped[1], swapped[0]]
        ctx = [self.links.rep(h[k] if h[k] is not None else reps[k][0])["context_of_items"]
               for k in range(2)]
        frames = []
        for k in range(2):
            length, _ = self.units.scales(ctx[k], what=f"pair #{pid} {name!r}")
            frames.append(_placement(m, items[k], length, pid))
        length, angle = self.units.scales(self.mechanism_context(pid), ctx[0], ctx[1],
                                          what=f"pair #{pid} {name!r}")
        kind = PAIR_TYPES[leaf]
        if kind == "low-order":
            free = tuple(f[k] for k in ("t_x", "t_y", "t_z", "r_x", "r_y", "r_z"))
            if not all(isinstance(v, bool) for v in free):
                raise CadImportError(
                    f"pair #{pid} {leaf}: the freedoms t_x .. r_z must be .T. or .F., got "
                    f"{free}", where=self.where,
                    hint="the file does not follow the ISO 10303-105 entity layouts")
            if free not in _FREEDOMS:
                pattern = " ".join(k for k, v in zip(("t_x", "t_y", "t_z", "r_x", "r_y", "r_z"),
                                                     free) if v) or "none"
                raise CadImportError(
                    f"pair #{pid} {leaf} {name!r} leaves {pattern} free, which is no cadmotion "
                    "joint", where=self.where,
                    hint="cadmotion reads r_z, t_z, t_z r_z, r_x r_y r_z, r_x r_z, t_x t_y r_z "
                         "or no freedom")
            kind = _FREEDOMS[free]
        return _Pair(pid, leaf, kind, f, name, (p1, p2), (int(l1), int(l2)), tuple(frames),
                     length, angle, f"{self.where}: #{pid} {leaf}")

    # ------------------------------------------------------------------ low-order joints
    def joint(self, pr: _Pair) -> JointSpec:
        m, f, pid = self.model, pr.f, pr.id
        (R1, o1), (R2, o2) = pr.frames
        jtype = pr.kind
        params: List[Tuple[str, float]] = []
        if jtype == "universal":
            skew = m.real(f.get("input_skew_angle"), pid, "input_skew_angle", optional=True)
            if skew is not None and abs(skew * pr.angle) > 1e-12:
                raise CadImportError(
                    f"pair #{pid} {pr.leaf} {pr.name!r} has a skew angle of "
                    f"{math.degrees(skew * pr.angle):.6g} deg; cadmotion's universal joint "
                    "has perpendicular axes", where=self.where,
                    hint="model it with a constant-velocity or angle joint in a model file")
            R2 = R2[:, [1, 2, 0]]  # z_j = x of the second frame (the second rotation axis)
        if jtype == "screw":
            params.append(("pitch", m.real(f["pitch"], pid, "pitch") * pr.length))
        X_WPi, X_WPj = self.pose[pr.parts[0]], self.pose[pr.parts[1]]
        R_WMi, R_WMj = X_WPi[0] @ R1, X_WPj[0] @ R2
        R2 = align_axes(jtype, R_WMi, R_WMj, R2)
        spec = JointSpec(pr.name, jtype, pr.parts, (_frame(R1, o1), _frame(R2, o2)),
                         params=tuple(params), source=pr.source)
        check = spec if jtype != "screw" else JointSpec(pr.name, "cylindrical", pr.parts,
                                                        spec.markers)
        violations = joint_violations(MechanismSpec(parts=self.asm.parts, joints=(check,)),
                                      tol=_TOL)
        if jtype == "universal":
            c = abs(float(R_WMi[:, 2] @ (X_WPj[0] @ R2)[:, 2]))
            if c > _TOL:
                violations.append((pr.name, "cross", math.asin(min(1.0, c))))
        if jtype == "screw" and not violations:
            (_, _), (_, _), off = zero_joint_coordinates("cylindrical", X_WPi, (R1, o1), X_WPj, (R2, o2))
            miss = abs(off["disp"] - params[0][1] / (2 * math.pi) * off["angle"])
            if miss > _TOL:
                violations.append((pr.name, "screw", miss))
        if violations:
            what = ", ".join(f"{w} {v:.3g}" for _, w, v in violations)
            self.warn(f"pair #{pid} {pr.leaf} {pr.name!r} does not hold at the assembly's pose "
                      f"({what}; m or rad)")
        zero_as = "cylindrical" if jtype == "screw" else jtype
        (R1, o1), (R2, o2), offsets = zero_joint_coordinates(zero_as, X_WPi, (R1, o1), X_WPj,
                                                             (R2, o2))
        limits = self._limits(pr, jtype, offsets)
        return JointSpec(pr.name, jtype, pr.parts, (_frame(R1, o1), _frame(R2, o2)),
                         params=tuple(params), limits=limits, source=pr.source)

    def _limits(self, pr: _Pair, jtype, offsets):
        m, f, pid = self.model, pr.f, pr.id
        if not pr.leaf.endswith("_WITH_RANGE"):
            return ()
        pairs = []
        if jtype in ("revolute", "cylindrical", "planar", "screw"):
            keys = ("lower_limit_actual_rotation", "upper_limit_actual_rotation")
            if pr.leaf == "LOW_ORDER_KINEMATIC_PAIR_WITH_RANGE":
                keys = ("lower_limit_actual_rotation_z", "upper_limit_actual_rotation_z")
            pairs.append(("angle", keys, pr.angle))
        if jtype in ("prismatic", "cylindrical"):
            keys = ("lower_limit_actual_translation", "upper_limit_actual_translation")
            if pr.leaf == "LOW_ORDER_KINEMATIC_PAIR_WITH_RANGE":
                keys = ("lower_limit_actual_translation_z", "upper_limit_actual_translation_z")
            pairs.append(("disp", keys, pr.length))
        out = []
        for coord, (lo_key, hi_key), scale in pairs:
            lo = _limit(m, f, pid, lo_key, scale)
            hi = _limit(m, f, pid, hi_key, scale)
            if lo is None and hi is None:
                continue
            off = offsets.get(coord, 0.0)
            lo = -math.inf if lo is None else lo - off
            hi = math.inf if hi is None else hi - off
            if lo > hi:
                raise CadImportError(f"pair #{pid} {pr.name!r}: lower limit {lo_key} is above "
                                     f"the upper limit", where=self.where,
                                     hint="check the range of the pair")
            out.append((coord, (lo, hi)))
        return tuple(out)

    # ------------------------------------------------------------------ couplers
    def _carrier(self, part, ground):
        return "<ground>" if part in ground else part

    def _holding(self, part, kinds, joints, ground):
        """[(joint, carrier)] of the joints of type ``kinds`` holding ``part``."""
        out = []
        for j in joints:
            if j.type in kinds and part in j.parts:
                other = j.parts[1] if j.parts[0] == part else j.parts[0]
                out.append((j, self._carrier(other, ground)))
        return out

    def _axis(self, j):
        R_P, p_P = self.pose[j.parts[0]]
        R_M, p_M = _arrays(j.markers[0])
        return (R_P @ R_M)[:, 2], p_P + R_P @ p_M

    @staticmethod
    def _side(j, part):
        return 1.0 if j.parts[1] == part else -1.0

    def gear(self, pr: _Pair, joints, ground) -> JointSpec:
        m, f, pid = self.model, pr.f, pr.id
        r1 = m.real(f["radius_first_link"], pid, "radius_first_link") * pr.length
        r2 = m.real(f["radius_second_link"], pid, "radius_second_link") * pr.length
        if r1 == 0.0 or r2 == 0.0:
            raise CadImportError(f"gear pair #{pid} {pr.name!r} has a zero radius",
                                 where=self.where, hint="check radius_first/second_link")
        a, b = pr.parts
        rot = ("revolute", "cylindrical")
        found = None
        for ja, ca in self._holding(a, rot, joints, ground):
            for jb, cb in self._holding(b, rot, joints, ground):
                if ca == cb and ja is not jb:
                    found = found or (ja, jb)
        if found is None:
            raise CadImportError(
                f"gear pair #{pid} {pr.name!r}: parts {a!r} and {b!r} are not both held by "
                "revolute pairs to a common part, which cadmotion's gear coupler needs",
                where=self.where, hint="add the revolute pairs of both gears to their carrier")
        ja, jb = found
        za, ca = self._axis(ja)
        zb, cb = self._axis(jb)
        cos = float(za @ zb)
        if abs(abs(cos) - 1.0) > 1e-6:
            raise CadImportError(
                f"gear pair #{pid} {pr.name!r}: the gear axes are not parallel (bevel or "
                "crossed gears), which is not supported", where=self.where,
                hint="only spur and helical gears on parallel axes are read")
        dvec = cb - ca
        d = float(np.linalg.norm(dvec - (dvec @ za) * za))
        ext, internal = abs(d - (abs(r1) + abs(r2))), abs(d - abs(abs(r1) - abs(r2)))
        is_internal = (r1 * r2 < 0.0) or internal < ext
        miss = internal if is_internal else ext
        if miss > max(_TOL, 1e-3 * (abs(r1) + abs(r2))):
            self.warn(f"gear pair #{pid} {pr.name!r}: the axis distance {d:.6g} m does not "
                      f"match the pitch radii {abs(r1):.6g} and {abs(r2):.6g} m; the ratio is "
                      "taken from the radii")
        ratio_file = m.real(f.get("gear_ratio"), pid, "gear_ratio", optional=True)
        if ratio_file:
            k = abs(r1 / r2)
            if min(abs(abs(ratio_file) - k), abs(abs(ratio_file) - 1.0 / k)) > 1e-6 * max(k, 1.0 / k):
                self.warn(f"gear pair #{pid} {pr.name!r}: gear_ratio {ratio_file:.6g} does not "
                          f"match the radii ({r1:.6g}, {r2:.6g}); the radii are used")
        k = (1.0 if is_internal else -1.0) * abs(r1) / abs(r2)
        ratio = k * self._side(ja, a) * self._side(jb, b) * math.copysign(1.0, cos)
        return JointSpec(pr.name, "gear", joints=(ja.name, jb.name),
                         params=(("ratio", float(ratio)),), source=pr.source)

    def rack(self, pr: _Pair, joints, ground) -> JointSpec:
        m, f, pid = self.model, pr.f, pr.id
        r = m.real(f["pinion_radius"], pid, "pinion_radius") * pr.length
        if r <= 0.0:
            raise CadImportError(f"rack and pinion pair #{pid} {pr.name!r} has pinion radius "
                                 f"{r:.6g} m", where=self.where,
                                 hint="the pinion radius must be positive")
        found = None
        for pin, rack_side in ((1, 0), (0, 1)):
            pinion, rack = pr.parts[pin], pr.parts[rack_side]
            for jq, cq in self._holding(pinion, ("revolute", "cylindrical"), joints, ground):
                for jt, ct in self._holding(rack, ("prismatic", "cylindrical"), joints, ground):
                    if cq == ct and jq is not jt and found is None:
                        found = (pinion, rack, rack_side, jq, jt)
        if found is None:
            raise CadImportError(
                f"rack and pinion pair #{pid} {pr.name!r}: one of {pr.parts[0]!r}, "
                f"{pr.parts[1]!r} needs a revolute pair and the other a prismatic pair to a "
                "common part, which cadmotion's rack-and-pinion coupler needs",
                where=self.where, hint="add the pinion's revolute and the rack's prismatic pair")
        pinion, rack, rack_side, jq, jt = found
        a, c = self._axis(jq)
        t, _ = self._axis(jt)
        if abs(float(a @ t)) > 1e-6:
            raise CadImportError(
                f"rack and pinion pair #{pid} {pr.name!r}: the rack slides along the pinion "
                "axis", where=self.where, hint="check the pairs' axes")
        R_W, p_W = self.pose[rack]
        rack_frame_origin = p_W + R_W @ pr.frames[rack_side][1]
        part = next(p for p in self.asm.parts if p.name == rack)
        com = p_W + R_W @ np.array(part.com, float)
        w = None
        for point in (rack_frame_origin, com):
            v = point - c
            v = v - (v @ a) * a - (v @ t) * t
            if np.linalg.norm(v) > 1e-9:
                w = v / np.linalg.norm(v)
                break
        if w is None:
            raise CadImportError(
                f"rack and pinion pair #{pid} {pr.name!r}: cannot tell on which side of the "
                "pinion the rack lies", where=self.where,
                hint="place the rack's pair frame on its pitch line")
        radius = self._side(jq, pinion) * self._side(jt, rack) * r * float(np.cross(a, w) @ t)
        return JointSpec(pr.name, "rack-and-pinion", joints=(jq.name, jt.name),
                         params=(("radius", float(radius)),), source=pr.source)

    # ------------------------------------------------------------------ all
    def read(self) -> StepMechanism:
        found = _find_pairs(self.model)
        name = self.mechanism_name()
        pairs: List[_Pair] = []
        for pid, leaf, supported in found:
            if not supported:
                message = (f"pair #{pid} is a {leaf}, which cadmotion cannot express; "
                           f"it reads {', '.join(sorted(set(PAIR_TYPES) - {'UNCONSTRAINED_PAIR'}))}")
                if self.unsupported == "skip":
                    self.warn(message + "; skipped")
                    continue
                raise CadImportError(message, where=self.where,
                                     hint="pass unsupported='skip' to read the other pairs, or "
                                          "define that joint in a model file")
            pairs.append(self.read_pair(pid, leaf))
        ground = self.ground()
        names = uniquify([p.name for p in pairs if p.kind])
        joints: List[JointSpec] = []
        by_id: Dict[int, JointSpec] = {}
        k = 0
        for p in pairs:
            if not p.kind:
                continue
            p.name = names[k]
            k += 1
            if p.kind not in ("gear", "rack-and-pinion"):
                by_id[p.id] = self.joint(p)
        plain = list(by_id.values())
        for p in pairs:
            if p.kind == "gear":
                by_id[p.id] = self.gear(p, plain, ground)
            elif p.kind == "rack-and-pinion":
                by_id[p.id] = self.rack(p, plain, ground)
        joints = [by_id[p.id] for p in pairs if p.id in by_id]
        links = tuple((self.model.string(self.model.fields(lid, ("KINEMATIC_LINK",))[1]["name"])
                       or f"#{lid}", part) for lid, part in sorted(self.links._part_of.items()))
        for message in self.messages:
            warnings.warn(message, StepKinematicsWarning, stacklevel=3)
        return StepMechanism(joints=tuple(joints), ground=ground, links=links, name=name,
                             warnings=tuple(self.messages))


# ===================================================================== public API

_MARKERS = (b"KINEMATIC_JOINT", b"_PAIR")


def _read_text(path: Path) -> Optional[str]:
    """The file's text, or None when it holds no kinematic entities at all (fast path)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CadImportError(f"cannot read the file: {exc.strerror or exc}", where=str(path),
                             hint="check the path and its permissions") from None
    if not all(marker in data or marker.lower() in data for marker in _MARKERS):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def read_step_mechanism(path, step_assembly, *, unsupported: str = "error") -> StepMechanism:
    """The ISO 10303-105 kinematics of a STEP file as cadmotion joints, ground and links.

    Parameters
    ----------
    path : str or os.PathLike
        The STEP file (ISO 10303-21 text) that ``step_assembly`` was read from.
    step_assembly : StepAssembly
        :func:`cadmotion.importers.step.read_step` of the same file: its part names,
        product keys and names, placements (to express the pair frames in part frames
        and to find gear and rack geometry) and ``unit_scale`` (a fallback).
    unsupported : {"error", "skip"}
        What a pair type cadmotion cannot express does: raise, or be skipped with a
        :class:`StepKinematicsWarning`.

    Returns
    -------
    StepMechanism
        Empty (no joints) for a file without kinematic pairs.

    Raises
    ------
    CadImportError
        Malformed kinematic entities (wrong parameter counts or types, dangling
        references, a link that matches no part or several), an unsupported pair (when
        ``unsupported="error"``), gear or rack pairs without the revolute/prismatic
        pairs they couple; each message names the file and the entity id.
    """
    if unsupported not in ("error", "skip"):
        raise ValueError(f"unsupported must be 'error' or 'skip', got {unsupported!r}")
    path = Path(path)
    text = _read_text(path)
    if text is None:
        return StepMechanism()
    if not hasattr(step_assembly, "parts") or not hasattr(step_assembly, "product_names"):
        raise TypeError("step_assembly must be the StepAssembly that read_step() made of "
                        f"the same file, got {type(step_assembly).__name__}")
    reader = _Reader(path, text, step_assembly, unsupported)
    try:
        return reader.read()
    except CadImportError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise CadImportError(f"the kinematic entities are inconsistent ({type(exc).__name__}: "
                             f"{exc})", where=str(path),
                             hint="the file does not follow the ISO 10303-105 entity layouts") from exc


def read_step_kinematics(path, step_assembly, *, unsupported: str = "error") -> Tuple[JointSpec, ...]:
    """The kinematic pairs of a STEP file as :class:`~cadmotion.kernel.spec.JointSpec` s.

    Shorthand for ``read_step_mechanism(path, step_assembly).joints``; see
    :func:`read_step_mechanism` and the module docstring.  Returns ``()`` for a file
    without kinematics.
    """
    return read_step_mechanism(path, step_assembly, unsupported=unsupported).joints
