"""Mass properties of exact (B-rep) geometry, with OCCT's GProp.

The geometry is integrated exactly where OCCT can (planes, cylinders and other analytic
faces are integrated by Gauss quadrature of sufficient order to be exact to round-off for
the usual primitives); B-spline faces to quadrature accuracy.

Conventions
-----------
- Lengths are in the units of the shape; importers convert shapes to metres first, so
  volume is m^3, centre of mass m and the unit-density inertia m^5.
- The inertia tensor is taken about the centre of mass, along the axes of the frame in
  which the shape is expressed (the part frame for :func:`volume_properties` on a part's
  shape)::

      I = [[ Ixx, -Ixy, -Ixz],      Ixx = integral (y^2 + z^2) dm,  Ixy = integral x y dm
           [-Ixy,  Iyy, -Iyz],      (x, y, z measured from the centre of mass)
           [-Ixz, -Iyz,  Izz]]

- Each solid of a compound is integrated on its own; a solid whose faces are oriented
  inwards (negative volume) is counted with its orientation reversed, so that badly
  oriented solids in STEP files do not subtract mass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

__all__ = ["MassProperties", "volume_properties", "ZERO_VOLUME"]

Vec3 = Tuple[float, float, float]
Mat3 = Tuple[Vec3, Vec3, Vec3]

ZERO_VOLUME = 1e-18
"""Volumes at or below this (m^3; a cube of 1 micrometre) count as zero: nothing to weigh."""


@dataclass(frozen=True)
class MassProperties:
    """Geometric mass properties of a shape, for unit density.

    Attributes
    ----------
    volume : float
        m^3 (sum over the solids; 0.0 when the shape has no solid).
    com : tuple of 3 floats
        Centre of volume in the shape's frame, m. (0, 0, 0) when the volume is zero.
    inertia_per_density : 3x3 tuple
        Inertia tensor about ``com``, shape-frame axes, for a density of 1 kg/m^3,
        i.e. in m^5; multiply by the density to get kg m^2.
    n_solids : int
        Number of solids that were integrated.
    """

    volume: float
    com: Vec3
    inertia_per_density: Mat3
    n_solids: int

    @property
    def is_empty(self) -> bool:
        """True when there is no solid volume to weigh."""
        return self.n_solids == 0 or self.volume <= ZERO_VOLUME

    def with_density(self, density: float) -> Tuple[Optional[float], Vec3, Optional[Mat3]]:
        """Mass (kg), centre of mass (m) and inertia about it (kg m^2) for a density in kg/m^3.

        Returns ``(None, com, None)`` when the shape has no volume.
        """
        if self.is_empty:
            return None, self.com, None
        rho = float(density)
        inertia = tuple(tuple(rho * v for v in row) for row in self.inertia_per_density)
        return rho * self.volume, self.com, inertia


def _solid_props(solid):
    from OCP.BRepGProp import BRepGProp
    from OCP.GProp import GProp_GProps

    props = GProp_GProps()
    BRepGProp.VolumeProperties_s(solid, props)
    if props.Mass() < 0.0:  # faces oriented inwards: integrate the reversed solid
        props = GProp_GProps()
        BRepGProp.VolumeProperties_s(solid.Reversed(), props)
    return props


def volume_properties(shape) -> MassProperties:
    """Volume, centre of volume and unit-density inertia of the solids in ``shape``.

    Parameters
    ----------
    shape : OCP.TopoDS.TopoDS_Shape
        A solid, or a compound holding solids, in its own frame (metres for STEP parts).
        Faces and shells that are not part of a solid carry no volume and are ignored
        (see :func:`.shapes.count_loose_faces`).

    Returns
    -------
    MassProperties
        Frame of ``shape``; zero volume and ``n_solids == 0`` when there is no solid.
    """
    from OCP.GProp import GProp_GProps
    from OCP.TopAbs import TopAbs_SOLID
    from OCP.TopExp import TopExp_Explorer

    total = GProp_GProps()
    n_solids = 0
    explorer = TopExp_Explorer(shape, TopAbs_SOLID)
    while explorer.More():
        total.Add(_solid_props(explorer.Current()), 1.0)
        n_solids += 1
        explorer.Next()
    volume = total.Mass()
    if n_solids == 0 or volume <= ZERO_VOLUME:
        zero = (0.0, 0.0, 0.0)
        return MassProperties(max(volume, 0.0), zero, (zero, zero, zero), n_solids)
    c = total.CentreOfMass()
    m = total.MatrixOfInertia()
    inertia = tuple(tuple(m.Value(i, j) for j in (1, 2, 3)) for i in (1, 2, 3))
    # symmetrise: GProp returns a symmetric matrix up to round-off
    inertia = tuple(
        tuple(0.5 * (inertia[i][j] + inertia[j][i]) for j in range(3)) for i in range(3)
    )
    return MassProperties(volume, (c.X(), c.Y(), c.Z()), inertia, n_solids)
