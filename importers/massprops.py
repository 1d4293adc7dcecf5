"""Mass properties of a part's exact (B-rep) geometry: the importers' name for
:mod:`cadmotion.geometry.mass_properties` (``volume_properties``, ``MassProperties``) and
:func:`cadmotion.geometry.shapes.count_loose_faces`, where the OCCT calls are."""

from __future__ import annotations

from ..geometry.mass_properties import ZERO_VOLUME, MassProperties, volume_properties
from ..geometry.shapes import count_loose_faces

__all__ = ["MassProperties", "volume_properties", "count_loose_faces", "ZERO_VOLUME"]
