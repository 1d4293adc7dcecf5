"""The colours FreeCAD shows for an ``.FCStd`` document's parts, from ``GuiDocument.xml``
(absent from documents saved without a GUI). Colours are cosmetic: a damaged entry is skipped."""

from __future__ import annotations

import struct
import warnings
import xml.etree.ElementTree as ET

__all__ = ["view_colors", "part_color"]


def _unpack_rgb(value):
    """sRGB (0..1) of a FreeCAD packed colour 0xRRGGBBAA (the last byte is ignored)."""
    value = int(value) & 0xFFFFFFFF
    return tuple(((value >> shift) & 0xFF) / 255.0 for shift in (24, 16, 8))


def _material_list_diffuse(data, version):
    """(sRGB, transparency) of the first entry of a PropertyMaterialList file, or None.

    Layout (little-endian, FreeCAD's Base::OutputStream): version 2 and 3 start with the
    count; older files with a signed version word (negative: the count follows). Each
    entry: ambient, diffuse, specular, emissive packed colours (uint32), shininess and
    transparency (float32); version 3 appends strings after all entries.
    """
    off = 0
    if version not in ("2", "3"):
        (first,) = struct.unpack_from("<i", data, 0)
        off = 8 if first < 0 else 0
    (count,) = struct.unpack_from("<I", data, off)
    if count == 0:
        return None
    _, diffuse, _, _, _, transparency = struct.unpack_from("<4I2f", data, off + 4)
    return _unpack_rgb(diffuse), float(transparency)


def view_colors(arc):
    """Object name -> sRGBA (0..1) of its shape as FreeCAD shows it.

    From ``GuiDocument.xml``: ``ShapeAppearance`` (FreeCAD 1.x, a material list in its
    own member) or ``ShapeColor`` (0.x), with ``Transparency`` (percent). Links whose view
    does not override the material are left out (they show their target's colour).
    Documents saved without a GUI have no GuiDocument.xml: no colours. Colours are
    cosmetic, so a damaged entry is skipped rather than failing the import.
    """
    if "GuiDocument.xml" not in arc.members:
        return {}
    data = arc.read("GuiDocument.xml")
    if b"<!DOCTYPE" in data[:4096].upper() or b"<!ENTITY" in data.upper():
        return {}
    try:
        root = ET.fromstring(data)
    except ET.ParseError:
        warnings.warn(f"{arc.name}: GuiDocument.xml is not well-formed; part colours not read", stacklevel=4)
        return {}
    colors = {}
    for vp in root.iter("ViewProvider"):
        props = {p.get("name"): p for p in vp.iter("Property")}
        rgb, alpha = None, 1.0
        try:
            appearance = props.get("ShapeAppearance")
            color = props.get("ShapeColor")
            override = props.get("OverrideMaterial")
            if override is not None:                    # a link's view
                flag = override.find("Bool")
                material = props.get("ShapeMaterial")
                if flag is None or flag.get("value") != "true" or material is None:
                    continue
                el = material.find("PropertyMaterial")
                rgb, alpha = _unpack_rgb(el.get("diffuseColor")), 1.0 - float(el.get("transparency", 0))
            elif appearance is not None and appearance.find("MaterialList") is not None:
                el = appearance.find("MaterialList")
                member = el.get("file")
                if member and member in arc.members:
                    found = _material_list_diffuse(arc.read(member), el.get("version"))
                    if found is not None:
                        rgb, alpha = found[0], 1.0 - found[1]
            elif color is not None and color.find("PropertyColor") is not None:
                rgb = _unpack_rgb(color.find("PropertyColor").get("value"))
                percent = props.get("Transparency")
                if percent is not None and percent.find("Integer") is not None:
                    alpha = 1.0 - float(percent.find("Integer").get("value")) / 100.0
        except (ValueError, TypeError, AttributeError, struct.error):
            continue
        if rgb is not None:
            colors[vp.get("name")] = tuple(rgb) + ((min(max(alpha, 0.0), 1.0),) if alpha < 1.0 else ())
    return colors


def part_color(doc, colors, obj, depth=0):
    """The colour FreeCAD shows for a part object: its own, else its link target's, else
    (containers) that of its first coloured child; None when nothing is known."""
    if obj is None or depth > 20:
        return None
    if obj.name in colors:
        return colors[obj.name]
    if obj.type in ("App::Link", "App::LinkPython"):
        return part_color(doc, colors, doc.obj(obj.link("LinkedObject")), depth + 1)
    for child in obj.links("Group"):
        found = part_color(doc, colors, doc.obj(child), depth + 1)
        if found is not None:
            return found
    return None
