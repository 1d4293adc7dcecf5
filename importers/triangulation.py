"""A shape's stored triangulation, read face by face: the importers' name for
:mod:`cadmotion.geometry.triangulation`, where the OCCT calls are."""

from __future__ import annotations

from ..geometry.triangulation import TriangulatedFace, triangulated_faces

__all__ = ["TriangulatedFace", "triangulated_faces"]
