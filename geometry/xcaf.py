"""Reading a STEP file into an XCAF document (``STEPCAFControl_Reader`` into a
``TDocStd_Document``), and the document's labels: product structure, names, colours, shapes.

Labels (``TDF_Label``) and transforms (``gp_Trsf``) are opaque handles passed back to these
functions; names, entries and colours come back as Python strings and tuples. Shapes are in
metres: the document's length unit is set to metres before the transfer, so OCCT converts
every representation context of the file (the process-wide ``xstep.cascade.unit`` is neither
read nor changed).
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..errors import CadImportError

__all__ = ["read_step_document", "free_shapes", "components", "is_assembly", "label_name", "label_entry",
           "label_color", "subshape_color", "component_trsf", "label_shape"]


def _parse_fails(reader) -> List[str]:
    """The messages of the parser's global check (syntax errors, unresolved references)."""
    check = reader.ChangeReader().WS().Model().GlobalCheck()
    out = []
    for i in range(1, check.NbFails() + 1):
        message = check.CFail(i)
        out.append(message if isinstance(message, str) else message.ToCString())
    return out


def _length_unit_name(reader) -> Optional[str]:
    """The length unit of the file's first representation context, lower case as OCCT names it
    (``"millimetre"``, ``"inch"``, ...), "" when it has no name, None when the file declares none."""
    from OCP.TColStd import TColStd_SequenceOfAsciiString

    lengths = TColStd_SequenceOfAsciiString()
    angles = TColStd_SequenceOfAsciiString()
    solid_angles = TColStd_SequenceOfAsciiString()
    reader.ChangeReader().FileUnits(lengths, angles, solid_angles)
    if lengths.Length() == 0:
        return None
    return lengths.Value(1).ToCString().strip().lower()


def read_step_document(path, problems: List[str]):
    """Parse and translate the STEP file ``path`` into an XCAF document in metres, names and
    colours on (layers, properties, GD&T, materials, views and SHUO off).

    Returns ``(doc, unit_name)``: ``unit_name`` as :func:`_length_unit_name` reads it. Parser
    complaints that do not stop the reading are appended to ``problems``.

    Raises
    ------
    CadImportError
        The parser fails or gives up, the file refers to entities it does not hold, holds no
        product with a shape, or cannot be translated into shapes.
    """
    from OCP.IFSelect import IFSelect_RetDone
    from OCP.STEPCAFControl import STEPCAFControl_Reader
    from OCP.TCollection import TCollection_ExtendedString
    from OCP.TDocStd import TDocStd_Document
    from OCP.XCAFDoc import XCAFDoc_DocumentTool

    where = str(path)
    reader = STEPCAFControl_Reader()
    reader.SetNameMode(True)
    reader.SetColorMode(True)
    for off in ("SetLayerMode", "SetPropsMode", "SetGDTMode", "SetMatMode", "SetViewMode",
                "SetSHUOMode"):
        getattr(reader, off)(False)
    try:
        status = reader.ReadFile(str(path))
    except Exception as exc:  # OCCT's Standard_Failure, surfaced by OCP
        raise CadImportError(f"the STEP parser failed: {exc}", where=where,
                             hint="check that the file is a complete, valid STEP file") from exc
    if status != IFSelect_RetDone:
        raise CadImportError(
            f"the STEP parser could not read the file (status {status.name})", where=where,
            hint="check that the file is a complete, valid STEP file; "
            "re-export it from the CAD system",
        )
    fails = _parse_fails(reader)
    unresolved = [m for m in fails if "unresolved reference" in m.lower()]
    if unresolved:
        raise CadImportError(
            f"the STEP file is incomplete: {len(unresolved)} reference(s) to entities that are "
            f"not in the file (first: {unresolved[0]})", where=where,
            hint="the file was probably cut short or edited by hand; export it again",
        )
    if fails:
        problems.append(f"{where}: the STEP parser reported {len(fails)} problem(s), "
                        f"first: {fails[0]}")
    if reader.NbRootsForTransfer() == 0:
        raise CadImportError("the STEP file holds no product with a shape", where=where,
                             hint="export the assembly with its geometry (solids)")
    unit = _length_unit_name(reader)
    doc = TDocStd_Document(TCollection_ExtendedString("XmlXCAF"))
    # Target length unit of the transfer: 1.0 = metres. STEPCAFControl_Reader reads it
    # from the document (prepareUnits) and only falls back to xstep.cascade.unit when
    # the document has none, so no process-wide setting is touched.
    XCAFDoc_DocumentTool.SetLengthUnit_s(doc, 1.0)
    try:
        ok = reader.Transfer(doc)
    except Exception as exc:
        raise CadImportError(f"the STEP translation failed: {exc}", where=where,
                             hint="check the file in a CAD viewer and re-export it") from exc
    if not ok:
        raise CadImportError("the STEP file could not be translated into shapes", where=where,
                             hint="check the file in a CAD viewer and re-export it")
    return doc, unit


def free_shapes(doc) -> list:
    """The labels of the document's top-level products, in file order."""
    from OCP.TDF import TDF_LabelSequence
    from OCP.XCAFDoc import XCAFDoc_DocumentTool

    roots = TDF_LabelSequence()
    XCAFDoc_DocumentTool.ShapeTool_s(doc.Main()).GetFreeShapes(roots)
    return [roots.Value(i) for i in range(1, roots.Length() + 1)]


def components(label) -> list:
    """The instances in the assembly ``label``: ``(component label, referred product label or None)``
    in file order (None: an instance that refers to no product)."""
    from OCP.TDF import TDF_Label, TDF_LabelSequence
    from OCP.XCAFDoc import XCAFDoc_ShapeTool

    comps = TDF_LabelSequence()
    XCAFDoc_ShapeTool.GetComponents_s(label, comps)
    out = []
    for i in range(1, comps.Length() + 1):
        comp = comps.Value(i)
        ref = TDF_Label()
        out.append((comp, ref if XCAFDoc_ShapeTool.GetReferredShape_s(comp, ref) else None))
    return out


def is_assembly(label) -> bool:
    """True when the product ``label`` is an assembly (has components)."""
    from OCP.XCAFDoc import XCAFDoc_ShapeTool

    return XCAFDoc_ShapeTool.IsAssembly_s(label)


def component_trsf(comp):
    """The placement (``gp_Trsf``) of the instance ``comp`` in its assembly."""
    from OCP.XCAFDoc import XCAFDoc_ShapeTool

    return XCAFDoc_ShapeTool.GetLocation_s(comp).Transformation()


def label_shape(label):
    """The ``TopoDS_Shape`` of a product label, in its own frame (m)."""
    from OCP.XCAFDoc import XCAFDoc_ShapeTool

    return XCAFDoc_ShapeTool.GetShape_s(label)


def label_name(label) -> Optional[str]:
    """The name (``TDataStd_Name``) of a label, or None."""
    from OCP.TDataStd import TDataStd_Name

    # ask IsAttribute first: FindAttribute on a label without the attribute segfaulted
    # in OCP 7.9 once another XCAF document had been built in the process (cadquery's toCAF)
    if not label.IsAttribute(TDataStd_Name.GetID_s()):
        return None
    attr = TDataStd_Name()
    if label.FindAttribute(TDataStd_Name.GetID_s(), attr):
        return attr.Get().ToExtString()
    return None


def label_entry(label) -> str:
    """The label's entry, e.g. ``"0:1:1:7"``: unique in the document."""
    from OCP.TCollection import TCollection_AsciiString
    from OCP.TDF import TDF_Tool

    s = TCollection_AsciiString()
    TDF_Tool.Entry_s(label, s)
    return s.ToCString()


def _color_tuple(c) -> Tuple[float, ...]:
    from OCP.Quantity import Quantity_TOC_sRGB

    r, g, b = c.GetRGB().Values(Quantity_TOC_sRGB)
    rgb = tuple(round(min(max(v, 0.0), 1.0), 6) for v in (r, g, b))
    alpha = round(c.Alpha(), 6)
    return rgb if alpha >= 1.0 else rgb + (alpha,)


def label_color(label) -> Optional[Tuple[float, ...]]:
    """The surface colour of a label, else its generic colour: sRGB in 0..1, ``(r, g, b)`` or
    ``(r, g, b, a)`` when not opaque; None when it has none."""
    from OCP.Quantity import Quantity_ColorRGBA
    from OCP.XCAFDoc import XCAFDoc_ColorGen, XCAFDoc_ColorSurf, XCAFDoc_ColorTool

    for ctype in (XCAFDoc_ColorSurf, XCAFDoc_ColorGen):
        c = Quantity_ColorRGBA()
        if XCAFDoc_ColorTool.GetColor_s(label, ctype, c):
            return _color_tuple(c)
    return None


def subshape_color(label) -> Optional[Tuple[float, ...]]:
    """The colour (as :func:`label_color`) of the first coloured sub-shape (solid, face) of a
    product label, or None."""
    from OCP.TDF import TDF_LabelSequence
    from OCP.XCAFDoc import XCAFDoc_ShapeTool

    subs = TDF_LabelSequence()
    XCAFDoc_ShapeTool.GetSubShapes_s(label, subs)
    for i in range(1, subs.Length() + 1):
        color = label_color(subs.Value(i))
        if color is not None:
            return color
    return None
