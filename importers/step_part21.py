"""The ISO 10303-21 (STEP Part 21) text layer of the kinematics reader: a whitelist
tokenizer and record parser (no ``eval``), the attribute layouts of the entities the
kinematic structure reaches (in the order of OCCT's ``RWStepKinematics_RW*.cxx`` readers),
and :class:`Part21Index`, the DATA section indexed by id and type and parsed lazily.
Used by :mod:`.step_kinematics`; see its docstring for what is read."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple


from ..errors import CadImportError


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

LINK_REPRESENTATIONS = ("RIGID_LINK_REPRESENTATION", "LINEAR_FLEXIBLE_LINK_REPRESENTATION",
              "KINEMATIC_LINK_REPRESENTATION")
PRODUCT_DEFINITION_TYPES = ("PRODUCT_DEFINITION", "PRODUCT_DEFINITION_WITH_ASSOCIATED_DOCUMENTS")
FORMATION_TYPES = ("PRODUCT_DEFINITION_FORMATION", "PRODUCT_DEFINITION_FORMATION_WITH_SPECIFIED_SOURCE")


class Part21Index:
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
        """Sorted ids of every record of the given entity types (simple or inside a complex record)."""
        out = set()
        for t in types:
            out.update(self.by_type.get(t, ()))
        return sorted(out)

    # ------------------------------------------------------------------ records
    def record(self, eid, referrer=None) -> _Record:
        """The record ``#eid``, parsed on first use; an error names ``referrer`` when the id is missing."""
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
        """``value`` checked to be a reference ``#n``; else an error naming entity ``eid`` and attribute ``attr``."""
        if not isinstance(value, Ref):
            raise CadImportError(f"entity #{eid}: {attr} must be a reference, got {value!r}",
                                 where=self.where,
                                 hint="the file does not follow the ISO 10303-105 entity layouts")
        return value

    def real(self, value, eid, attr, optional=False) -> Optional[float]:
        """``value`` as a float (a typed measure is unwrapped); None for an unset optional;
        else an error naming ``eid`` and ``attr``."""
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
        """``value`` stripped when it is a string (enumerations and unset values give "")."""
        return value.strip() if isinstance(value, str) and not isinstance(value, Enum) else ""


