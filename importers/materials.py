"""A small table of engineering material densities, for mass properties of CAD parts.

The values are typical room-temperature densities in kg/m^3, rounded the way handbooks
give them (e.g. structural steel 7850, wrought aluminium alloys 2700). They are meant
for the inertia of moving parts in a mechanism simulation, where a few percent do not
matter; give an explicit density when they do.

Names are matched case-insensitively, and spaces, hyphens and underscores are treated
alike, so ``"Stainless_Steel"``, ``"stainless-steel"`` and ``"stainless steel"`` are
the same material. This module does not import OCP.
"""

from __future__ import annotations

import math
import re
from types import MappingProxyType
from typing import Mapping

from ..errors import CadImportError

__all__ = ["MATERIAL_DENSITIES", "density_of", "part_density", "known_materials", "normalize_material_name"]

# canonical name -> density, kg/m^3
_CANONICAL = {
    "steel": 7850.0,
    "stainless steel": 8000.0,
    "cast iron": 7200.0,
    "aluminium": 2700.0,
    "brass": 8500.0,
    "bronze": 8800.0,
    "copper": 8960.0,
    "titanium": 4430.0,  # Ti-6Al-4V
    "magnesium": 1800.0,
    "zinc": 7140.0,
    "lead": 11340.0,
    "abs": 1050.0,
    "pla": 1240.0,
    "petg": 1270.0,
    "nylon": 1140.0,
    "pom": 1410.0,
    "polycarbonate": 1200.0,
    "acrylic": 1180.0,
    "hdpe": 950.0,
    "polypropylene": 905.0,
    "ptfe": 2200.0,
    "rubber": 1100.0,
    "wood": 700.0,
    "plywood": 600.0,
    "mdf": 750.0,
    "glass": 2500.0,
    "cfrp": 1600.0,
}

# alias -> canonical name
_ALIASES = {
    "stainless": "stainless steel",
    "inox": "stainless steel",
    "carbon steel": "steel",
    "iron": "cast iron",
    "aluminum": "aluminium",
    "alu": "aluminium",
    "ti": "titanium",
    "pa": "nylon",
    "pa6": "nylon",
    "pa12": "nylon",
    "polyamide": "nylon",
    "acetal": "pom",
    "delrin": "pom",
    "pc": "polycarbonate",
    "pmma": "acrylic",
    "plexiglass": "acrylic",
    "pp": "polypropylene",
    "teflon": "ptfe",
    "carbon fiber": "cfrp",
    "carbon fibre": "cfrp",
}

MATERIAL_DENSITIES: Mapping[str, float] = MappingProxyType(
    {**_CANONICAL, **{alias: _CANONICAL[canon] for alias, canon in _ALIASES.items()}}
)
"""Every accepted material name (normalised) -> density in kg/m^3 (read-only)."""


def normalize_material_name(name: str) -> str:
    """Lower-case ``name`` and collapse runs of spaces, hyphens and underscores to one space."""
    return re.sub(r"[\s_\-]+", " ", str(name).strip().lower())


def known_materials() -> tuple:
    """The accepted material names, sorted, canonical names and aliases alike."""
    return tuple(sorted(MATERIAL_DENSITIES))


def density_of(material: str, *, where: str = None) -> float:
    """The density of a named material.

    Parameters
    ----------
    material : str
        A material name such as ``"steel"``, ``"Aluminum"`` or ``"POM"`` (case-insensitive).
    where : str, optional
        Where the name came from (file and part), used in the error message.

    Returns
    -------
    float
        Density in kg/m^3.

    Raises
    ------
    CadImportError
        If the name is not in the table; the message lists the known names.
    """
    key = normalize_material_name(material)
    try:
        return MATERIAL_DENSITIES[key]
    except KeyError:
        raise CadImportError(
            f"unknown material {material!r}",
            where=where,
            hint="use one of: " + ", ".join(known_materials())
            + "; or give the density in kg/m^3 instead (densities={part: rho})",
        ) from None


def part_density(density, name, *, default=1000.0, where=None) -> float:
    """The density (kg/m^3) of part ``name`` from a density setting.

    ``density`` is a number (kg/m^3), a material name, or a mapping part name -> either
    (parts not in it get ``default``). Raises :class:`CadImportError` naming the part for
    an unknown material or a density that is not a positive number.
    """
    d = density.get(name, default) if isinstance(density, Mapping) else density
    if isinstance(d, str):
        d = density_of(d, where=where or f"part {name!r}")
    try:
        d = float(d)
    except (TypeError, ValueError):
        d = math.nan
    if not d > 0 or not math.isfinite(d):
        raise CadImportError(f"density {d!r} of part {name!r} must be a positive number (kg/m^3)", where=where,
                             hint="give kg/m^3 or a material name such as \"steel\"")
    return d
