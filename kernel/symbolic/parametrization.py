"""Orientation parametrisations of a body in absolute coordinates, symbolic and numeric.

A body's coordinates are q_b = [r, p]: r (3,) the origin of the body frame in the world
frame (m) and p its orientation parameters. Two parametrisations are offered:

``euler-parameters`` (default)
    p = (e0, e1, e2, e3), a unit quaternion (w, x, y, z). Regular at every orientation;
    needs the normalisation constraint pᵀp − 1 = 0 per body.
    A(p) = (2 e0² − 1) I + 2 (e eᵀ + e0 ẽ), ω_W = 2 E(p) ṗ with E = [−e, ẽ + e0 I].

``euler-313``
    p = (φ, θ, ψ), A = Rz(φ) Rx(θ) Rz(ψ). Three parameters, no extra constraint, but
    singular at θ = 0 and θ = π — and θ = 0 is the identity orientation most CAD parts
    start in. The kernel detects a body near the singularity and raises
    :class:`~cadmotion.errors.SingularityError` instead of stepping through it.
"""

from __future__ import annotations

import numpy as np

from .lazy import lazy

sp = lazy("sympy")  # imported when a rotation is derived

__all__ = ["Parametrization", "PARAMETRIZATIONS", "get_parametrization"]


class Parametrization:
    """Symbolic and numeric description of one orientation parametrisation."""

    name: str = ""
    n_p: int = 0  # orientation parameters per body
    normalized: bool = False  # needs pᵀp − 1 = 0

    @property
    def nqb(self):
        """Coordinates per body: 3 positions + n_p orientation parameters."""
        return 3 + self.n_p

    def rotation_symbolic(self, p):
        """A(p) as a sympy 3x3 Matrix of the symbols ``p``."""
        raise NotImplementedError

    def from_quaternion(self, quat):
        """Orientation parameters (n_p,) of a unit quaternion (w, x, y, z)."""
        raise NotImplementedError

    def to_quaternion(self, p):
        """Unit quaternions (..., 4) of orientation parameters (..., n_p)."""
        raise NotImplementedError

    def angular_velocity(self, p, pd):
        """World angular velocity (..., 3) from parameters p and their rates pd."""
        raise NotImplementedError

    def angular_acceleration(self, p, pd, pdd):
        """World angular acceleration (..., 3)."""
        raise NotImplementedError

    def rates_from_angular_velocity(self, p, omega):
        """Parameter rates pd (..., n_p) that give world angular velocity omega."""
        raise NotImplementedError


class EulerParameters(Parametrization):
    """Orientation by a unit quaternion (e0, e1, e2, e3); the constraint pᵀp = 1 is added per body."""
    name = "euler-parameters"
    n_p = 4
    normalized = True

    def rotation_symbolic(self, p):
        """A = (2 e0² − 1) I + 2 (e eᵀ + e0 ẽ)."""
        e0, e1, e2, e3 = p
        e = sp.Matrix([e1, e2, e3])
        et = sp.Matrix([[0, -e3, e2], [e3, 0, -e1], [-e2, e1, 0]])
        return (2 * e0**2 - 1) * sp.eye(3) + 2 * (e * e.T + e0 * et)

    def from_quaternion(self, quat):
        """The quaternion itself, normalised."""
        q = np.asarray(quat, float)
        return q / np.linalg.norm(q)

    def to_quaternion(self, p):
        """The parameters themselves, normalised."""
        p = np.asarray(p, float)
        return p / np.linalg.norm(p, axis=-1, keepdims=True)

    @staticmethod
    def _E(p):
        e0, e1, e2, e3 = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
        E = np.empty(p.shape[:-1] + (3, 4))
        E[..., 0, :] = np.stack([-e1, e0, -e3, e2], -1)
        E[..., 1, :] = np.stack([-e2, e3, e0, -e1], -1)
        E[..., 2, :] = np.stack([-e3, -e2, e1, e0], -1)
        return E

    def angular_velocity(self, p, pd):
        """ω = 2 E(p) ṗ (world, rad/s)."""
        return 2.0 * np.einsum("...ij,...j->...i", self._E(p), pd)

    def angular_acceleration(self, p, pd, pdd):
        """ω̇ = 2 E(p) p̈ (world, rad/s²)."""
        # d/dt (2 E ṗ) = 2 Ė ṗ + 2 E p̈ and Ė ṗ = 0 identically.
        return 2.0 * np.einsum("...ij,...j->...i", self._E(p), pdd)

    def rates_from_angular_velocity(self, p, omega):
        """ṗ = ½ E(p)ᵀ ω."""
        # ṗ = ½ Eᵀ ω for unit p (E Eᵀ = I, E p = 0).
        return 0.5 * np.einsum("...ji,...j->...i", self._E(p), omega)


class Euler313(Parametrization):
    """Orientation by z-x-z Euler angles (φ, θ, ψ), A = Rz(φ) Rx(θ) Rz(ψ); singular where sin θ = 0."""
    name = "euler-313"
    n_p = 3
    normalized = False
    singular_tolerance = 1e-3  # rad: |sin θ| below this is treated as singular

    def rotation_symbolic(self, p):
        """A = Rz(φ) Rx(θ) Rz(ψ)."""
        phi, th, psi = p
        Rz = lambda a: sp.Matrix([[sp.cos(a), -sp.sin(a), 0], [sp.sin(a), sp.cos(a), 0], [0, 0, 1]])
        Rx = sp.Matrix([[1, 0, 0], [0, sp.cos(th), -sp.sin(th)], [0, sp.sin(th), sp.cos(th)]])
        return Rz(phi) * Rx * Rz(psi)

    def from_quaternion(self, quat):
        """(φ, θ, ψ) of a unit quaternion; where sin θ = 0, the rotation about z is all φ."""
        from ..motion import quat_to_matrix

        R = quat_to_matrix(np.asarray(quat, float))
        th = np.arccos(np.clip(R[2, 2], -1.0, 1.0))
        if abs(np.sin(th)) < 1e-12:  # singular: split the rotation about z into φ only
            return np.array([np.arctan2(R[1, 0], R[0, 0]), th, 0.0])
        phi = np.arctan2(R[0, 2], -R[1, 2])
        psi = np.arctan2(R[2, 0], R[2, 1])
        return np.array([phi, th, psi])

    def to_quaternion(self, p):
        """q = qz(φ) qx(θ) qz(ψ)."""
        p = np.asarray(p, float)
        phi, th, psi = p[..., 0], p[..., 1], p[..., 2]
        # q = qz(φ) qx(θ) qz(ψ)
        w = np.cos(th / 2) * np.cos((phi + psi) / 2)
        x = np.sin(th / 2) * np.cos((phi - psi) / 2)
        y = np.sin(th / 2) * np.sin((phi - psi) / 2)
        z = np.cos(th / 2) * np.sin((phi + psi) / 2)
        return np.stack([w, x, y, z], -1)

    @staticmethod
    def _B(p):
        # ω_W = B(p) ṗ for A = Rz(φ) Rx(θ) Rz(ψ).
        phi, th = p[..., 0], p[..., 1]
        B = np.zeros(p.shape[:-1] + (3, 3))
        B[..., 0, 1] = np.cos(phi)
        B[..., 1, 1] = np.sin(phi)
        B[..., 2, 0] = 1.0
        B[..., 0, 2] = np.sin(th) * np.sin(phi)
        B[..., 1, 2] = -np.sin(th) * np.cos(phi)
        B[..., 2, 2] = np.cos(th)
        return B

    def angular_velocity(self, p, pd):
        """ω = B(p) ṗ (world, rad/s)."""
        return np.einsum("...ij,...j->...i", self._B(p), pd)

    def angular_acceleration(self, p, pd, pdd):
        """ω̇ = B(p) p̈ + Ḃ(p, ṗ) ṗ (world, rad/s²)."""
        phi, th = p[..., 0], p[..., 1]
        phid, thd = pd[..., 0], pd[..., 1]
        Bd = np.zeros(p.shape[:-1] + (3, 3))
        Bd[..., 0, 1] = -np.sin(phi) * phid
        Bd[..., 1, 1] = np.cos(phi) * phid
        Bd[..., 0, 2] = np.cos(th) * thd * np.sin(phi) + np.sin(th) * np.cos(phi) * phid
        Bd[..., 1, 2] = -np.cos(th) * thd * np.cos(phi) + np.sin(th) * np.sin(phi) * phid
        Bd[..., 2, 2] = -np.sin(th) * thd
        return np.einsum("...ij,...j->...i", self._B(p), pdd) + np.einsum("...ij,...j->...i", Bd, pd)

    def rates_from_angular_velocity(self, p, omega):
        """ṗ = B(p)⁻¹ ω (singular where sin θ = 0)."""
        return np.linalg.solve(self._B(p), omega[..., None])[..., 0]


PARAMETRIZATIONS = {cls.name: cls() for cls in (EulerParameters, Euler313)}


def get_parametrization(name):
    """The parametrisation called ``name`` (``euler-parameters`` or ``euler-313``)."""
    from ...errors import MechanismError

    try:
        return PARAMETRIZATIONS[name]
    except KeyError:
        raise MechanismError(
            f"unknown orientation parametrisation {name!r}",
            hint=f"use one of {', '.join(PARAMETRIZATIONS)}",
        ) from None
