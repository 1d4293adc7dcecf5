"""``Document.xml`` of an ``.FCStd`` file: its objects and their properties, read with
:mod:`xml.etree` (a DTD or entity declaration, which FreeCAD never writes, is refused), and
FreeCAD placements as poses in metres."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Dict

import numpy as np

from ..errors import CadImportError
from ..kernel.rotations import pose_matrix

__all__ = ["DocumentObject", "parse_document", "placement_pose", "GROUP_TYPES", "MM"]

MM = 1e-3
#: folders of objects (their members are looked at as if they were in the folder's container)
GROUP_TYPES = {"App::DocumentObjectGroup", "App::DocumentObjectGroupPython"}


@dataclass
class DocumentObject:
    """One object of Document.xml: its internal ``name``, its ``type`` (``"Part::Feature"``, ...) and
    its ``<Property>`` elements by name, read through the typed accessors below."""

    name: str
    type: str
    props: Dict[str, ET.Element] = field(default_factory=dict)

    def prop(self, key):
        """The first child element of property ``key`` (None where it is missing or empty)."""
        p = self.props.get(key)
        return None if p is None or len(p) == 0 else p[0]

    def label(self):
        """The object's user label, else its internal name."""
        e = self.prop("Label")
        return e.get("value") if e is not None and e.get("value") else self.name

    def boolean(self, key, default=None):
        """A ``<Bool>`` property's value, else ``default``."""
        e = self.prop(key)
        if e is None or e.tag != "Bool":
            return default
        return e.get("value") == "true"

    def real(self, key, default=None):
        """A numeric property's value (float; in the document's units), else ``default``."""
        e = self.prop(key)
        if e is None or e.get("value") is None:
            return default
        try:
            return float(e.get("value"))
        except ValueError:
            return default

    def link(self, key):
        """The internal name of the object a link property points at (None if unset)."""
        e = self.prop(key)
        return None if e is None else (e.get("value") or e.get("name") or None)

    def links(self, key):
        """The internal names of the objects a link-list property points at."""
        e = self.prop(key)
        return [] if e is None else [l.get("value") for l in e.iter("Link") if l.get("value")]


def parse_document(arc):
    """The objects of the archive's Document.xml (after refusing DTDs and entities), as
    :class:`DocumentObject` by internal name."""
    data = arc.read("Document.xml")
    head = data[:4096].upper()
    if b"<!DOCTYPE" in head or b"<!ENTITY" in data.upper():
        raise CadImportError("Document.xml declares a DTD or entities, which FreeCAD never writes",
                             where=f"{arc.path}: Document.xml", hint="the file may be malicious")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise CadImportError(f"Document.xml is not well-formed XML: {exc}",
                             where=f"{arc.path}: Document.xml") from None
    types = {}
    objs_el = root.find("Objects")
    if objs_el is None:
        raise CadImportError("Document.xml has no <Objects>", where=f"{arc.path}: Document.xml")
    for o in objs_el.findall("Object"):
        types[o.get("name")] = o.get("type", "")
    objects = {}
    data_el = root.find("ObjectData")
    for o in (data_el.findall("Object") if data_el is not None else []):
        name = o.get("name")
        ob = DocumentObject(name, types.get(name, ""))
        props = o.find("Properties")
        for p in (props.findall("Property") if props is not None else []):
            ob.props[p.get("name")] = p
        objects[name] = ob
    for name, t in types.items():
        objects.setdefault(name, DocumentObject(name, t))
    return objects


def placement_pose(el, where):
    """4x4 pose (m) from a <PropertyPlacement Px.. Q0..Q3/> element (FreeCAD quaternion x,y,z,w)."""
    if el is None or el.tag != "PropertyPlacement":
        raise CadImportError("missing or malformed Placement", where=where)
    try:
        p = np.array([float(el.get(k)) for k in ("Px", "Py", "Pz")]) * MM
        x, y, z, w = (float(el.get(k)) for k in ("Q0", "Q1", "Q2", "Q3"))
    except (TypeError, ValueError):
        raise CadImportError("malformed Placement values", where=where) from None
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if not np.all(np.isfinite(p)) or not math.isfinite(n) or n < 1e-12:
        raise CadImportError("a Placement is not finite or has a zero quaternion", where=where)
    return pose_matrix(p, (w, x, y, z))
