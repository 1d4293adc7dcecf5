"""Read a STEP assembly (ISO 10303-21, AP203/AP214/AP242) into neutral part specs.

The file is read with OCCT's XCAF reader (``STEPCAFControl_Reader`` into a
``TDocStd_Document``) with names and colours on, and the product structure is walked
from the top-level products down to the leaf parts:

- **One PartSpec per leaf part instance.** An instance that refers to a sub-assembly is
  descended into; an instance that refers to a part (a product without components)
  becomes one :class:`~cadmotion.kernel.spec.PartSpec`. Assemblies written without
  NEXT_ASSEMBLY_USAGE_OCCURRENCE (e.g. through MAPPED_ITEM only) are handled by OCCT
  the same way.
- **Names.** ``name`` is the instance name, or the product name when the instance has
  none (OCCT's generated ``=>[0:1:1:2]`` labels count as none). A leading ``"-> "``
  (written by some CAx-IF exporters) is dropped and ``/`` becomes ``_``. Repeated names
  are made unique in document order: ``bolt``, ``bolt_2``, ``bolt_3``, ... (a suffix
  already used by another part is skipped). ``path`` is the chain of instance names
  from the top assembly (excluded) down to the part, joined with ``/``, each made unique
  among its siblings, e.g. ``rod-assembly_1/rod_1``; when a file has several top-level
  products their names start the paths.
- **Placement.** ``position``/``orientation`` give X_WP, the composition of the
  locations of all instances from the top assembly down to the part (metres; unit
  quaternion w, x, y, z with w >= 0).
- **Shape.** ``PartSpec.shape`` is the product's ``TopoDS_Shape`` in the part frame
  (without the instance placement), in metres; all instances of one product share the
  same Python object, so writers can tessellate once per product. The product a part
  comes from is :attr:`StepAssembly.products` ``[name]`` (a key unique in the file).
- **Units.** OCCT converts every representation context of the file to metres (the
  document's length unit is set to metres before transfer; the process-wide
  ``xstep.cascade.unit`` static is neither read nor changed). :attr:`StepAssembly.unit`
  reports the length unit of the top-level product as written in the file (``"mm"``,
  ``"in"``, ...).
- **Colour.** sRGB in 0..1 as written in the file, ``(r, g, b)`` or ``(r, g, b, a)``
  when not opaque; taken from the instance, else the product, else the first coloured
  sub-shape (solid or face) of the product, else the nearest enclosing sub-assembly
  instance or product; None when the file has no colour for it.
- **Mass properties.** Computed once per product from the exact geometry
  (:mod:`cadmotion.importers.massprops`) and scaled by the density of each instance:
  ``densities`` > ``materials`` > ``default_density``. A product without solid volume
  (sheets, wireframe) gets ``mass = None``, ``inertia = None`` and a
  :class:`StepImportWarning`; a file without any solid is an error.

Example
-------
>>> from cadmotion.importers.step import read_step
>>> asm = read_step("gripper.step", materials={"Laserteil 1:1": "plywood"})  # doctest: +SKIP
>>> asm.part("Laserteil 1:1").mass                                          # doctest: +SKIP
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Dict, List, Mapping, Optional, Tuple

from ..errors import CadImportError
from ..geometry import ocp_import_error, placements, xcaf
from ..geometry.mass_properties import MassProperties, volume_properties
from ..geometry.shapes import count_loose_faces
from ..kernel.spec import MechanismSpec, PartSpec
from .materials import density_of
from .part_names import clean_name, uniquify

#: what to install for STEP files: OCP (OpenCascade) comes with the ``cad`` extra (cadquery)
CAD_EXTRA_HINT = 'install the CAD extra: pip install "cadmotion[cad]" (cadquery and OCP, ~1.8 GB)'

_exc = ocp_import_error()
if _exc is not None:                        # cadmotion installed without the cad extra
    raise CadImportError(f"reading STEP files (.step/.stp) needs OCP, which is not installed ({_exc})",
                         hint=CAD_EXTRA_HINT) from _exc

__all__ = ["read_step", "read_step_model", "StepAssembly", "StepImportWarning", "LENGTH_UNITS"]


class StepImportWarning(UserWarning):
    """Something in a STEP file was read with a fallback (no volume, non-rigid placement, ...)."""


# OCCT's name of a length unit (lower case) -> (abbreviation, metres per unit)
LENGTH_UNITS: Mapping[str, Tuple[str, float]] = MappingProxyType(
    {
        "metre": ("m", 1.0),
        "meter": ("m", 1.0),
        "millimetre": ("mm", 1e-3),
        "millimeter": ("mm", 1e-3),
        "centimetre": ("cm", 1e-2),
        "centimeter": ("cm", 1e-2),
        "decimetre": ("dm", 1e-1),
        "kilometre": ("km", 1e3),
        "micrometre": ("um", 1e-6),
        "micron": ("um", 1e-6),
        "nanometre": ("nm", 1e-9),
        "inch": ("in", 0.0254),
        "foot": ("ft", 0.3048),
        "feet": ("ft", 0.3048),
        "yard": ("yd", 0.9144),
        "mile": ("mi", 1609.344),
        "mil": ("mil", 2.54e-5),
        "thou": ("mil", 2.54e-5),
    }
)
"""Length unit names as OCCT reports them (lower-cased) -> (abbreviation, metres per unit)."""

@dataclass(frozen=True)
class StepAssembly:
    """The leaf parts of a STEP assembly, in SI units.

    Attributes
    ----------
    path : str
        The file that was read.
    unit : str
        Length unit of the top-level product as written in the file (``"mm"``, ``"m"``,
        ``"in"``, ...), or ``"unknown"``. Every length in this object is in metres
        whatever this says.
    unit_scale : float or None
        Metres per file unit (0.001 for ``"mm"``), None when the unit is unknown.
    parts : tuple of PartSpec
        One per leaf part instance, in document order (depth first). ``shape`` is the
        product's ``TopoDS_Shape`` in the part frame (m), shared between instances.
    products : Mapping[str, str]
        Part name -> product key. The key (an XCAF label entry such as ``"0:1:1:7"``) is
        unique per distinct product in the file; parts with the same key have the same
        ``shape`` object and the same geometry.
    product_names : Mapping[str, str]
        Product key -> product name as written in the file.
    name : str
        Name of the top-level product (the first one when there are several).
    warnings : tuple of str
        The messages that were also issued as :class:`StepImportWarning`.
    """

    path: str
    unit: str
    parts: Tuple[PartSpec, ...]
    products: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False, repr=False)
    product_names: Mapping[str, str] = field(
        default_factory=dict, hash=False, compare=False, repr=False
    )
    unit_scale: Optional[float] = None
    name: str = ""
    warnings: Tuple[str, ...] = ()

    def part(self, name: str) -> PartSpec:
        """The part called ``name`` (or whose ``path`` is ``name``); KeyError if none."""
        for p in self.parts:
            if p.name == name:
                return p
        for p in self.parts:
            if p.path == name:
                return p
        raise KeyError(name)

    def shape_of(self, name: str):
        """The ``TopoDS_Shape`` of part ``name`` in its part frame (m); KeyError if none."""
        return self.part(name).shape

    @property
    def names(self) -> Tuple[str, ...]:
        """Part names in document order."""
        return tuple(p.name for p in self.parts)

    def product_keys(self) -> Tuple[str, ...]:
        """Distinct product keys, in order of first use."""
        return tuple(dict.fromkeys(self.products[p.name] for p in self.parts))

    def instances_of(self, key: str) -> Tuple[str, ...]:
        """Names of the parts that are instances of product ``key``, in document order."""
        return tuple(p.name for p in self.parts if self.products[p.name] == key)


# --------------------------------------------------------------------------- file checks


def _check_step_file(path: Path) -> None:
    """Cheap checks that keep non-STEP and truncated files away from OCCT's parser."""
    where = str(path)
    if not path.exists():
        raise CadImportError(
            "STEP file not found", where=where,
            hint="check the path (relative paths are taken from the current directory)",
        )
    if not path.is_file():
        raise CadImportError("not a file", where=where, hint="give the path of a .step/.stp file")
    size = path.stat().st_size
    if size == 0:
        raise CadImportError("the STEP file is empty", where=where,
                             hint="export the assembly again from the CAD system")
    with open(path, "rb") as f:
        head = f.read(4096)
        f.seek(max(0, size - 4096))
        tail = f.read()
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    if not text.startswith(b"ISO-10303-21"):
        if head.startswith(b"PK"):
            what = "a zip archive (.stpz, .FCStd, ...)"
            todo = "unpack it, or use the importer for that format"
        elif head.startswith(b"\x1f\x8b"):
            what = "a gzip-compressed file"
            todo = "decompress it first (gunzip)"
        elif text.startswith(b"<"):
            what = "an XML file (STEP-XML / ISO 10303-28 is not supported)"
            todo = "export the assembly as STEP AP214 or AP242 text (ISO 10303-21)"
        else:
            what = "not a STEP file"
            todo = "give a STEP file (ISO 10303-21 text, .step/.stp)"
        raise CadImportError(
            f"{what}: a STEP file starts with 'ISO-10303-21;'", where=where, hint=todo
        )
    if b"END-ISO-10303-21" not in tail:
        raise CadImportError(
            "the STEP file is truncated or damaged: it does not end with 'END-ISO-10303-21;'",
            where=where,
            hint="copy or export the file again; it was probably cut short",
        )


# --------------------------------------------------------------------------- units


def _length_unit(name: Optional[str]) -> Tuple[str, Optional[float]]:
    """(abbreviation, metres per unit) of a length unit as OCCT names it (None: not declared)."""
    if name is None:
        return "unknown", None
    if name in LENGTH_UNITS:
        return LENGTH_UNITS[name]
    return name or "unknown", None


# --------------------------------------------------------------------------- structure walk


@dataclass
class _Instance:
    """One leaf part instance found while walking the product structure (internal)."""

    raw_name: str
    segments: Tuple[str, ...]
    comp: Optional[object]  # XCAF label; None for a top-level part without an instance
    ref: object  # the product's XCAF label
    trsf: object  # gp_Trsf, X_WP
    ancestors: Tuple[object, ...]  # enclosing instance and product labels, nearest first
    key: str = ""  # product key, set once the product is known


def _walk(label, trsf, segments, ancestors, out, problems, where):
    items = []
    for comp, ref in xcaf.components(label):
        if ref is None:
            problems.append(f"{where}: instance {xcaf.label_name(comp)!r} refers to no product; skipped")
            continue
        name = (clean_name(xcaf.label_name(comp)) or clean_name(xcaf.label_name(ref))
                or ("assembly" if xcaf.is_assembly(ref) else "part"))
        items.append((comp, ref, name))
    for (comp, ref, name), seg in zip(items, uniquify([n for _, _, n in items])):
        child = placements.compose(trsf, xcaf.component_trsf(comp))
        if xcaf.is_assembly(ref):
            _walk(ref, child, segments + (seg,), (comp, ref) + ancestors, out, problems, where)
        else:
            out.append(_Instance(name, segments + (seg,), comp, ref, child, ancestors))


def _collect_instances(doc, where, problems) -> Tuple[List[_Instance], str]:
    root_labels = xcaf.free_shapes(doc)
    if not root_labels:
        raise CadImportError("the STEP file holds no shape", where=where,
                             hint="export the assembly with its geometry (solids)")
    root_names = uniquify([clean_name(xcaf.label_name(lb)) or "model" for lb in root_labels])
    several = len(root_labels) > 1
    out: List[_Instance] = []
    for label, rname in zip(root_labels, root_names):
        prefix = (rname,) if several else ()
        if xcaf.is_assembly(label):
            _walk(label, placements.identity_trsf(), prefix, (label,), out, problems, where)
        else:  # a single part at the top level
            out.append(_Instance(rname, prefix or (rname,), None, label, placements.identity_trsf(), ()))
    return out, root_names[0]


# --------------------------------------------------------------------------- densities


def _check_density(value, where) -> float:
    try:
        rho = float(value)
    except (TypeError, ValueError):
        rho = float("nan")
    if not (math.isfinite(rho) and rho > 0.0):
        raise CadImportError(f"density must be a positive number in kg/m^3, got {value!r}",
                             where=where, hint="e.g. 7850 for steel, 2700 for aluminium")
    return rho


def _resolve_densities(insts, names, product_names, default_density, densities, materials,
                       where) -> List[float]:
    """Density (kg/m^3) of each instance: the part's own entry, else its product's, else default."""
    rho0 = _check_density(default_density, f"{where}: default_density")
    densities = dict(densities or {})
    materials = dict(materials or {})
    used = set()
    out = []
    for inst, name in zip(insts, names):
        path = "/".join(inst.segments)
        product = product_names[inst.key]
        rho = None
        for level, keys in (("part", (name, path)), ("product", (product,))):
            d_key = next((k for k in keys if k in densities), None)
            m_key = next((k for k in keys if k in materials), None)
            if d_key is not None and m_key is not None:
                raise CadImportError(
                    f"{level} {d_key!r} has both a density and a material",
                    where=f"{where}: part {name!r}",
                    hint="give either densities= or materials= for it, not both",
                )
            if d_key is not None:
                used.add(("d", d_key))
                rho = _check_density(densities[d_key], f"{where}: part {name!r}")
                break
            if m_key is not None:
                used.add(("m", m_key))
                rho = density_of(materials[m_key], where=f"{where}: part {name!r}")
                break
        out.append(rho0 if rho is None else rho)
    unknown = [k for k in densities if ("d", k) not in used]
    unknown += [k for k in materials if ("m", k) not in used]
    if unknown:
        shown = ", ".join(repr(n) for n in names[:12]) + (", ..." if len(names) > 12 else "")
        raise CadImportError(
            "densities/materials name parts that are not in the file: "
            + ", ".join(repr(k) for k in unknown),
            where=where,
            hint=f"use part names, part paths or product names; the parts are {shown}",
        )
    return out


# --------------------------------------------------------------------------- reader


@dataclass
class _Product:
    key: str
    name: str
    shape: object
    props: MassProperties


def read_step(
    path,
    *,
    default_density: float = 1000.0,
    densities: Optional[Mapping[str, float]] = None,
    materials: Optional[Mapping[str, str]] = None,
) -> StepAssembly:
    """Read the leaf parts of a STEP assembly with placements, colours and mass properties.

    Parameters
    ----------
    path : str or os.PathLike
        A STEP file (ISO 10303-21 text; AP203, AP214 or AP242), in any length unit.
    default_density : float, default 1000.0
        kg/m^3, for parts that ``densities`` and ``materials`` do not name.
    densities : mapping str -> float, optional
        kg/m^3 per part. Keys are part names, part paths, or product names (applies to
        every instance of the product); a part's own entry beats its product's.
    materials : mapping str -> str, optional
        Material name per part (same keys as ``densities``), looked up in
        :mod:`cadmotion.importers.materials` (``"steel"``, ``"aluminium"``, ``"POM"``, ...).

    Returns
    -------
    StepAssembly
        ``parts`` in document order; positions in metres in the assembly frame, mass in
        kg, centre of mass in m in the part frame, inertia about the centre of mass along
        part axes in kg m^2.

    Raises
    ------
    CadImportError
        Missing, empty, non-STEP or truncated file; a file OCCT cannot parse or translate;
        a file without solid geometry; an unknown material, a density that is not a
        positive number, a key in ``densities``/``materials`` that names no part, or a
        part given both a density and a material.

    Warns
    -----
    StepImportWarning
        A part without solid volume (its ``mass`` and ``inertia`` are None), a part with
        faces outside solids (they carry no mass), an instance whose placement is not a
        rigid motion (mirror or scale: its geometry is transformed into the assembly
        frame and its placement is the identity).
    """
    path = Path(path)
    where = str(path)
    _check_step_file(path)
    problems: List[str] = []
    doc, unit_name = xcaf.read_step_document(path, problems)
    unit, unit_scale = _length_unit(unit_name)
    insts, top_name = _collect_instances(doc, where, problems)
    if not insts:
        raise CadImportError("the STEP file holds no part", where=where,
                             hint="export the assembly with its parts' geometry")
    names = uniquify([i.raw_name for i in insts])

    # one shape and one set of geometric mass properties per product
    products: Dict[str, _Product] = {}
    for inst, name in zip(insts, names):
        key = xcaf.label_entry(inst.ref)
        if not placements.is_rigid(inst.trsf):
            problems.append(
                f"{where}: part {name!r} is placed by a mirror or scaling; its geometry is "
                "moved into the assembly frame and its placement set to the identity"
            )
            key = f"{key}@{'/'.join(inst.segments)}"
            shape = placements.transformed(xcaf.label_shape(inst.ref), inst.trsf)
            inst.trsf = placements.identity_trsf()
        else:
            shape = None
        inst.key = key
        if key in products:
            continue
        if shape is None:
            shape = xcaf.label_shape(inst.ref)
        pname = clean_name(xcaf.label_name(inst.ref)) or name
        props = volume_properties(shape)
        if props.is_empty:
            problems.append(
                f"{where}: part {name!r} (product {pname!r}) has no solid volume; "
                "its mass and inertia are left unknown (None)"
            )
        else:
            loose = count_loose_faces(shape)
            if loose:
                problems.append(
                    f"{where}: part {name!r} (product {pname!r}) has {loose} face(s) outside "
                    "its solids; they are ignored in its mass properties"
                )
        products[key] = _Product(key, pname, shape, props)

    if all(p.props.n_solids == 0 for p in products.values()):
        raise CadImportError(
            "the STEP file holds no solid (surfaces or wireframe only), so parts have no "
            "volume to simulate", where=where,
            hint="export solids (closed bodies) from the CAD system",
        )

    product_names = {k: p.name for k, p in products.items()}
    rhos = _resolve_densities(insts, names, product_names, default_density, densities,
                              materials, where)

    parts = []
    for inst, name, rho in zip(insts, names, rhos):
        product = products[inst.key]
        color = None
        if inst.comp is not None:
            color = xcaf.label_color(inst.comp)
        if color is None:
            color = xcaf.label_color(inst.ref)
        if color is None:
            color = xcaf.subshape_color(inst.ref)
        for label in inst.ancestors:
            if color is not None:
                break
            color = xcaf.label_color(label)
        position, orientation = placements.pose_of_trsf(inst.trsf)
        mass, com, inertia = product.props.with_density(rho)
        part_path = "/".join(inst.segments)
        parts.append(
            PartSpec(
                name=name,
                position=position,
                orientation=orientation,
                mass=mass,
                com=com,
                inertia=inertia,
                color=color,
                shape=product.shape,
                path=part_path,
                source=f"{where}: {part_path}",
            )
        )

    for message in problems:
        warnings.warn(message, StepImportWarning, stacklevel=2)
    return StepAssembly(
        path=where,
        unit=unit,
        parts=tuple(parts),
        products=MappingProxyType({n: i.key for n, i in zip(names, insts)}),
        product_names=MappingProxyType(product_names),
        unit_scale=unit_scale,
        name=top_name,
        warnings=tuple(problems),
    )


def read_step_model(
    path,
    *,
    default_density: float = 1000.0,
    densities: Optional[Mapping[str, float]] = None,
    materials: Optional[Mapping[str, str]] = None,
) -> MechanismSpec:
    """A STEP assembly as a mechanism (used by :func:`cadmotion.importers.load`).

    Joints come from the file's ISO 10303-105 kinematics (AP214/AP242 kinematic pairs,
    :mod:`cadmotion.importers.step_kinematics`), and the parts of its base link are
    fixed. A file without kinematics gives free parts and no joints; joints, drivers and
    fixed parts then come from a model file that names the STEP file (``step = "..."``),
    e.g. a sidecar ``<name>.cadmotion.toml``.

    Parameters
    ----------
    path, default_density, densities, materials
        As for :func:`read_step`.

    Returns
    -------
    MechanismSpec
        ``parts`` from :func:`read_step`; ``cad`` is the :class:`StepAssembly`; ``name``
        the file name without suffix.
    """
    from .step_kinematics import read_step_mechanism

    assembly = read_step(path, default_density=default_density, densities=densities,
                         materials=materials)
    mechanism = read_step_mechanism(path, assembly)
    parts = tuple(replace(p, fixed=True) if p.name in mechanism.ground else p
                  for p in assembly.parts)
    return MechanismSpec(parts=parts, joints=mechanism.joints, name=Path(path).stem,
                         source=str(path), cad=assembly)
