"""Mass properties and the mass matrix of the moving bodies, in absolute coordinates.

Coordinates, velocities and the choice of reference point
----------------------------------------------------------
The kernel's coordinates of a moving body are q_b = [r, p]: the origin of the part
frame (m, world) and its Euler parameters p = (e0, e1, e2, e3). Dynamics does not use
q̇ as its velocity variables; it uses, per body,

    v_b = [v_c, ω]          v_c : velocity of the centre of mass (m/s, world)
                            ω   : angular velocity (rad/s, world)

so the dynamic reference point is the centre of mass and the part frame origin is
reached by the kinematic map (c: com in the part frame, ρ = A(p) c: com offset, world)

    ṙ = v_c + ρ̃ ω,          ṗ = ½ E(p)ᵀ ω                        i.e.  q̇ = B(q) v
    r̈ = v̇_c + ρ̃ ω̇ − ω × (ω × ρ),   p̈ = ½ Eᵀ ω̇ − ¼ |ω|² p          i.e.  q̈ = B v̇ + Ḃ v

(E = [−e, ẽ + e0 I] is the world-frame matrix of the parametrisation, ω = 2 E ṗ).
The Newton–Euler equations about the centre of mass then have a block-diagonal mass
matrix with no coupling terms:

    m v̇_c = F                                   (F: resultant force)
    J ω̇   = n_c − ω × J ω,     J = A J' Aᵀ       (n_c: resultant moment about the com)

    M_v = blockdiag(m I3, J)          M_v⁻¹ = blockdiag(I3 / m, A J'⁻¹ Aᵀ)

Relation to the Lagrange form in q (for reference; the q-form is what ``index3`` uses):
with v = C(q) q̇, C_b = [[I, −2 ρ̃ E], [0, 2 E]], the virtual-power principle gives

    M_q q̈ + Φqᵀ λ = Cᵀ (f_v − M_v Ċ q̇),   M_q = Cᵀ M_v C,   Ċ q̇ = [ω × (ω × ρ); 0]

which for a frame at the com (c = 0) is the textbook M_q = diag(m I3, 4 Gᵀ J' G) (G the
body-frame matrix, 4 GᵀJ'G = 4 EᵀJ E) with quadratic velocity term 8 ĠᵀJ'Ġ p. M_q is
singular along p; the normalisation rows pᵀp − 1 = 0 complete it. The multipliers of
the joint rows are the same in both forms (the normalisation rows do no work in v).

Input checks (:func:`compile_mass`): every moving part needs a finite mass (a number) and a
symmetric, positive-definite inertia about its com. A mass of exactly 0 (with no inertia, or a
zero one) is a *massless* part (``MassProperties.massless``): the relative-coordinate formulations
take it where its joints carry it — a link between two joints, as the virtual links of a multi-axis
hip — and every other formulation refuses it, naming the part (:func:`refuse_massless`). Principal
moments that break the triangle inequality I1 + I2 ≥ I3 (no rigid body has them, but files written
by other tools do) are simulated as given, with a warning naming the part. A part with a mass and no
inertia is taken as a point mass regularised by the inertia of a 1 mm sphere (a warning says so).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ...errors import MechanismError

#: the index permutations of a × b = a[P1] b[P2] − a[P2] b[P1] over the last axis
_P1, _P2 = np.array([1, 2, 0]), np.array([2, 0, 1])


def cross(a, b):
    """a × b over the last axis, broadcast (numpy's ``cross`` is slow on small arrays; ``take`` with the
    component permutations is a third of the time of component-wise slices for a few vectors)."""
    return a.take(_P1, axis=-1) * b.take(_P2, axis=-1) - a.take(_P2, axis=-1) * b.take(_P1, axis=-1)


__all__ = ["MassProperties", "compile_mass", "refuse_massless", "BodyState", "body_state", "rotation",
           "rotation_vector", "point_mass_radius", "inertia_fault"]

#: radius (m) of the sphere whose inertia regularises a point mass
point_mass_radius = 1e-3


def _readonly(a):
    a = np.ascontiguousarray(a, dtype=float)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class MassProperties:
    """Mass, com and inertia of the moving bodies (model body order, first nmov bodies).

    Attributes
    ----------
    body_mass : ndarray, shape (nmov,), kg
    body_com : ndarray, shape (nmov, 3), m, centre of mass in the part frame
    body_inertia : ndarray, shape (nmov, 3, 3), kg m², about the com, part axes
    body_inertia_inv : ndarray, shape (nmov, 3, 3), its inverse
    body_com_all : ndarray, shape (nb, 3), com of every body (fixed bodies: as given or 0)
    body_mass_inv : ndarray, shape (nmov,), 1/kg, the inverse masses
    massless : tuple of str — the moving parts of mass 0 (see the module docstring); their inverse mass and
        inertia stand in as the other parts' mean, weights for the rank of redundant rows only (the
        formulations that take massless parts never invert M)
    """

    body_mass: np.ndarray
    body_com: np.ndarray
    body_inertia: np.ndarray
    body_inertia_inv: np.ndarray
    body_com_all: np.ndarray
    body_mass_inv: np.ndarray
    massless: tuple = ()

    @property
    def nmov(self):
        """Number of moving bodies."""
        return len(self.body_mass)

    @property
    def total_mass(self):
        """Mass of the moving bodies (kg)."""
        return float(self.body_mass.sum())


def _check_inertia(part, I):
    where = part.source or None
    try:
        I = np.asarray(I, float)
    except (TypeError, ValueError):
        I = np.full(1, np.nan)
    if I.shape != (3, 3) or not np.all(np.isfinite(I)):
        raise MechanismError(f"part {part.name!r}: inertia must be a finite 3x3 tensor", where=where)
    if not np.allclose(I, I.T, rtol=1e-9, atol=1e-15 * max(1.0, np.abs(I).max())):
        raise MechanismError(f"part {part.name!r}: the inertia tensor is not symmetric", where=where)
    fault = inertia_fault(I)
    if fault == NOT_POSITIVE_DEFINITE:
        raise MechanismError(
            f"part {part.name!r}: the inertia tensor is {fault} (principal moments {_moments(I)} kg m^2)", where=where,
            hint="give the inertia about the centre of mass in kg m^2 (model units squared), e.g. [Ixx, Iyy, Izz]",
        )
    if fault:  # positive definite: the equations are well posed (other engines, Pinocchio's, take it as given)
        warnings.warn(f"{where + ': ' if where else ''}part {part.name!r}: the principal moments of inertia "
                      f"{_moments(I)} kg m^2 {fault}; simulated as given — check the inertia values and their units",
                      stacklevel=4)
    return 0.5 * (I + I.T)


NOT_POSITIVE_DEFINITE = "not positive definite"
TRIANGLE = "violate the triangle inequality I1 + I2 >= I3 (no rigid body has them)"


def inertia_fault(I):
    """Why the symmetric 3×3 inertia ``I`` (kg m², about the com) cannot be a moving part's, or None:
    :data:`NOT_POSITIVE_DEFINITE`, or :data:`TRIANGLE` where its principal moments break I1 + I2 ≥ I3."""
    ev = np.linalg.eigvalsh(0.5 * (I + I.T))
    if ev[0] <= 0:
        return NOT_POSITIVE_DEFINITE
    if ev[0] + ev[1] < ev[2] * (1 - 1e-9):
        return TRIANGLE
    return None


def _moments(I):
    return ", ".join(f"{v:.4g}" for v in np.linalg.eigvalsh(0.5 * (I + I.T)))


def compile_mass(model):
    """Validated :class:`MassProperties` of the model's moving bodies.

    Raises
    ------
    MechanismError
        naming the part, for a missing or non-positive mass, or an inertia that is not
        positive definite (one that violates the triangle inequality is a warning).
    """
    nmov = model.nq // model.nqb
    by_name = {p.name: p for p in model.spec.parts}
    masses, coms, inertias, massless = [], [], [], []
    com_all = np.zeros((model.nb, 3))
    for b, name in enumerate(model.body_names):
        part = by_name[name]
        com_all[b] = np.asarray(part.com, float)
        if b >= nmov:
            continue
        where = part.source or model.spec.source or None
        m = part.mass
        if m is None:
            raise MechanismError(
                f"part {name!r} has no mass; dynamic analysis needs the mass and inertia of every moving part",
                where=where, hint="add `mass = ...` (kg) and `inertia = [Ixx, Iyy, Izz]` (kg m^2) to the part, "
                "or a density/material for STEP parts",
            )
        try:
            m = float(m)
        except (TypeError, ValueError):
            raise MechanismError(f"part {name!r} has mass {m!r}; a mass is a number of kg", where=where,
                                 hint="write `mass = 1.5` (kg) for the part") from None
        if not np.isfinite(m) or m < 0:
            raise MechanismError(f"part {name!r} has mass {m!r}; a moving part needs a positive mass", where=where,
                                 hint="give the part's mass in kg (> 0), or make the part fixed if it does not move")
        if not np.all(np.isfinite(com_all[b])):
            raise MechanismError(f"part {name!r}: the centre of mass must be finite", where=where)
        if m == 0:
            I = np.zeros((3, 3)) if part.inertia is None else np.asarray(part.inertia, float)
            if I.shape != (3, 3) or np.any(I != 0):
                raise MechanismError(f"part {name!r} has mass 0 and an inertia: a moving part needs a positive mass "
                                     "(or, massless, neither)", where=where,
                                     hint="give the part its mass in kg, or no inertia for a massless link")
            massless.append(name)
        elif part.inertia is None:
            warnings.warn(
                f"part {name!r} has a mass but no inertia; treated as a point mass regularised by the inertia "
                f"of a {point_mass_radius * 1e3:g} mm sphere", stacklevel=3,
            )
            I = np.eye(3) * 0.4 * m * point_mass_radius**2
        else:
            I = _check_inertia(part, part.inertia)
        masses.append(m)
        coms.append(com_all[b])
        inertias.append(I)
    masses = np.array(masses, float).reshape(nmov)
    coms = np.array(coms, float).reshape(nmov, 3)
    inertias = np.array(inertias, float).reshape(nmov, 3, 3)
    heavy = masses > 0
    inv, inv_m = np.zeros((nmov, 3, 3)), np.zeros(nmov)
    inv[heavy], inv_m[heavy] = np.linalg.inv(inertias[heavy]), 1.0 / masses[heavy]
    # a massless part's stand in as the others' mean (see MassProperties.massless)
    inv[~heavy] = inv[heavy].mean(axis=0) if heavy.any() else np.eye(3)
    inv_m[~heavy] = inv_m[heavy].mean() if heavy.any() else 1.0
    return MassProperties(_readonly(masses), _readonly(coms), _readonly(inertias), _readonly(inv), _readonly(com_all),
                          _readonly(inv_m), tuple(massless))


def refuse_massless(mass, formulation, where=None):
    """Raise :class:`~cadmotion.errors.MechanismError` naming the massless parts of ``mass``
    (:class:`MassProperties`) for a ``formulation`` that needs every moving part's mass (the
    absolute-coordinate ones: M⁻¹ per part); nothing when there are none."""
    if not mass.massless:
        return
    names = ", ".join(map(repr, mass.massless))
    raise MechanismError(
        f"part{'s' if len(mass.massless) > 1 else ''} {names} {'have' if len(mass.massless) > 1 else 'has'} mass 0; "
        f"a moving part needs a positive mass in the {formulation} formulation (absolute coordinates: each part's "
        "own equations of motion)", where=where,
        hint="give the parts their mass properties, or run `--formulation semi-recursive` (joint coordinates take a "
             "massless link that its joints carry, such as the middle link of a two-axis joint)")


def _rotation_map():
    """(T (16, 9), E (4, 12)): A(p) + I as the quadratic form (p pᵀ).reshape(16) @ T, and E(p) as the linear
    map p @ E, of the formulas of :func:`rotation` and :func:`E_matrix`."""
    T = np.zeros((4, 4, 3, 3))
    T[0, 0] = 2 * np.eye(3)  # 2 e0² I
    for a in range(3):
        for b in range(3):
            T[a + 1, b + 1, a, b] += 2  # 2 e eᵀ
    for c in range(3):  # 2 e0 ẽ, ẽ x = e × x
        unit = np.eye(3)[c]
        T[0, c + 1] += 2 * np.array([np.cross(unit, x) for x in np.eye(3)]).T
    # E = [−e, ẽ + e0 I]: the rows [−e1, e0, −e3, e2], [−e2, e3, e0, −e1], [−e3, −e2, e1, e0]
    E = np.zeros((4, 3, 4))
    for row, entries in enumerate((((1, -1), (0, 1), (3, -1), (2, 1)), ((2, -1), (3, 1), (0, 1), (1, -1)),
                                   ((3, -1), (2, -1), (1, 1), (0, 1)))):
        for col, (k, sign) in enumerate(entries):
            E[k, row, col] = sign
    return T.reshape(16, 9), E.reshape(4, 12)


_ROT_T, _E_MAP = _rotation_map()
_I9 = np.eye(3).reshape(9)


def rotation(p):
    """A(p) for Euler parameters p (..., 4), the kernel's formula
    A = (2 e0² − 1) I + 2 (e eᵀ + e0 ẽ) (so it matches the generated constraint code
    also off the unit sphere; as a quadratic form in p, summed in another order: to round-off). Returns (..., 3, 3)."""
    p = np.asarray(p, float)
    lead = p.shape[:-1]
    P = p.reshape(-1, 4)
    A = (P[:, :, None] * P[:, None, :]).reshape(-1, 16) @ _ROT_T - _I9
    return A.reshape(lead + (3, 3))


def rotation_vector(R):
    """Rotation vectors φ (..., 3) of rotation matrices R (..., 3, 3), |φ| ≤ π."""
    s = 0.5 * np.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]], -1)
    c = 0.5 * (R[..., 0, 0] + R[..., 1, 1] + R[..., 2, 2] - 1.0)
    ns = np.linalg.norm(s, axis=-1)
    th = np.arctan2(ns, c)
    small = ns < 1e-8
    factor = np.where(small, 1.0 + ns**2 / 6.0, th / np.where(small, 1.0, ns))
    return s * factor[..., None]


def E_matrix(p):
    """E(p) (..., 3, 4) with ω = 2 E ṗ (world angular velocity)."""
    p = np.asarray(p, float)
    return (p.reshape(-1, 4) @ _E_MAP).reshape(p.shape[:-1] + (3, 4))


def skew(a):
    """ã (..., 3, 3) with ã b = a × b."""
    S = np.zeros(a.shape[:-1] + (3, 3))
    S[..., 0, 1], S[..., 0, 2] = -a[..., 2], a[..., 1]
    S[..., 1, 0], S[..., 1, 2] = a[..., 2], -a[..., 0]
    S[..., 2, 0], S[..., 2, 1] = -a[..., 1], a[..., 0]
    return S


@dataclass
class BodyState:
    """Per-body kinematic quantities at one (q, v), every body (moving first, then fixed).

    Arrays have first axis nb. Velocities of fixed bodies are zero.
    ``A`` rotation, ``rho`` = A c, ``rc`` com position, ``vc`` com velocity, ``w`` angular
    velocity (all world); ``E`` (nmov, 3, 4); ``J``/``Jinv`` world inertia and inverse (nmov).
    """

    p: np.ndarray
    A: np.ndarray
    rho: np.ndarray
    rc: np.ndarray
    vc: np.ndarray
    w: np.ndarray
    E: np.ndarray
    J: np.ndarray
    Jinv: np.ndarray


def body_state(model, mass, q, v):
    """:class:`BodyState` of every body for coordinates q (nq,) and velocities v (6 nmov,)."""
    nmov = mass.nmov
    qf = np.concatenate([q, model.q_fixed]).reshape(model.nb, 7)
    p = qf[:, 3:]
    A = rotation(p)
    rho = np.einsum("bij,bj->bi", A, mass.body_com_all)
    rc = qf[:, :3] + rho
    V = v.reshape(nmov, 6)
    vc = np.zeros((model.nb, 3))
    w = np.zeros((model.nb, 3))
    vc[:nmov] = V[:, :3]
    w[:nmov] = V[:, 3:]
    Am = A[:nmov]
    J = Am @ mass.body_inertia @ Am.transpose(0, 2, 1)
    Jinv = Am @ mass.body_inertia_inv @ Am.transpose(0, 2, 1)
    return BodyState(p, A, rho, rc, vc, w, E_matrix(p[:nmov]), J, Jinv)


def rates_from_velocities(bs, v, nmov):
    """q̇ (..., 7 nmov) from v (..., 6 nmov): ṙ = v_c + ρ × ω, ṗ = ½ Eᵀ ω (leading axes: frames,
    with ``bs`` holding their stacked ρ and E, :func:`frames_state`)."""
    lead = v.shape[:-1]
    V = v.reshape(lead + (nmov, 6))
    w = V[..., 3:]
    qd = np.empty(lead + (nmov, 7))
    qd[..., :3] = V[..., :3] + cross(bs.rho[..., :nmov, :], w)
    qd[..., 3:] = 0.5 * np.einsum("...bji,...bj->...bi", bs.E, w)
    return qd.reshape(lead + (7 * nmov,))


@dataclass
class FramesState:
    """Of the moving bodies at every frame (leading axis nt): Euler parameters ``p``, ρ = A c
    (m, world) and E(p) — what :func:`rates_from_velocities` and :func:`accelerations_to_qdd`
    read of a :class:`BodyState`."""

    p: np.ndarray
    rho: np.ndarray
    E: np.ndarray


def frames_state(mass, Q, normalise=False):
    """:class:`FramesState` of the coordinates Q (nt, 7 nmov), with the body state's formulas (A
    from the Euler parameters as they are, or at unit length with ``normalise``, as the
    equations evaluate them)."""
    nmov = mass.nmov
    p = Q.reshape(len(Q), nmov, 7)[:, :, 3:]
    if normalise:
        p = p / np.sqrt(np.einsum("tbi,tbi->tb", p, p))[:, :, None]
    rho = np.einsum("tbij,bj->tbi", rotation(p), mass.body_com_all[:nmov])
    return FramesState(p, rho, E_matrix(p))


def velocities_from_rates(bs, qd, nmov):
    """v (6 nmov,) from q̇: ω = 2 E ṗ, v_c = ṙ − ρ × ω."""
    Qd = qd.reshape(nmov, 7)
    w = 2.0 * np.einsum("bij,bj->bi", bs.E, Qd[:, 3:])
    v = np.empty((nmov, 6))
    v[:, 3:] = w
    v[:, :3] = Qd[:, :3] - cross(bs.rho[:nmov], w)
    return v.reshape(-1)


def accelerations_to_qdd(bs, v, vd, nmov):
    """q̈ (..., 7 nmov) = B v̇ + Ḃ v (leading axes: frames, as :func:`rates_from_velocities`)."""
    lead = v.shape[:-1]
    V = v.reshape(lead + (nmov, 6))
    Vd = vd.reshape(lead + (nmov, 6))
    w, wd = V[..., 3:], Vd[..., 3:]
    rho = bs.rho[..., :nmov, :]
    qdd = np.empty(lead + (nmov, 7))
    qdd[..., :3] = Vd[..., :3] + cross(rho, wd) - cross(w, cross(w, rho))
    qdd[..., 3:] = (0.5 * np.einsum("...bji,...bj->...bi", bs.E, wd)
                    - 0.25 * np.sum(w * w, axis=-1)[..., None] * bs.p[..., :nmov, :])
    return qdd.reshape(lead + (-1,))


def mass_blocks(mass, bs):
    """M_v as (nmov, 6, 6) blocks: diag(m I3, J)."""
    nmov = mass.nmov
    M = np.zeros((nmov, 6, 6))
    M[:, 0, 0] = M[:, 1, 1] = M[:, 2, 2] = mass.body_mass
    M[:, 3:, 3:] = bs.J
    return M


def mass_matrix(mass, bs):
    """Dense M_v (6 nmov, 6 nmov); for small models and tests."""
    nmov = mass.nmov
    M = np.zeros((6 * nmov, 6 * nmov))
    blocks = mass_blocks(mass, bs)
    for k in range(6):  # block diagonal via strided assignment (no per-body loop)
        for l in range(6):
            M[np.arange(nmov) * 6 + k, np.arange(nmov) * 6 + l] = blocks[:, k, l]
    return M


def generalized_mass_matrix(model, mass, q):
    """The q-form mass matrix M_q = Cᵀ M_v C (7 nmov, 7 nmov), dense; see the module docstring."""
    nmov = mass.nmov
    bs = body_state(model, mass, q, np.zeros(6 * nmov))
    C = velocity_map(bs, nmov)
    Mb = mass_blocks(mass, bs)
    Mq_blocks = np.einsum("bki,bkl,blj->bij", C, Mb, C)
    out = np.zeros((7 * nmov, 7 * nmov))
    idx = np.arange(nmov) * 7
    for i in range(7):
        for j in range(7):
            out[idx + i, idx + j] = Mq_blocks[:, i, j]
    return out


def velocity_map(bs, nmov):
    """C (nmov, 6, 7) with v_b = C_b q̇_b: [[I, −2 ρ̃ E], [0, 2 E]]."""
    C = np.zeros((nmov, 6, 7))
    C[:, 0, 0] = C[:, 1, 1] = C[:, 2, 2] = 1.0
    C[:, 3:, 3:] = 2.0 * bs.E
    C[:, :3, 3:] = -2.0 * skew(bs.rho[:nmov]) @ bs.E
    return C


def rate_map(bs, nmov):
    """B (nmov, 7, 6) with q̇_b = B_b v_b: [[I, ρ̃], [0, ½ Eᵀ]]."""
    B = np.zeros((nmov, 7, 6))
    B[:, 0, 0] = B[:, 1, 1] = B[:, 2, 2] = 1.0
    B[:, :3, 3:] = skew(bs.rho[:nmov])
    B[:, 3:, 3:] = 0.5 * bs.E.transpose(0, 2, 1)
    return B


def kinetic_energy(mass, bs):
    """T = ½ Σ (m |v_c|² + ωᵀ J ω), J."""
    nmov = mass.nmov
    vc, w = bs.vc[:nmov], bs.w[:nmov]
    return 0.5 * float(np.sum(mass.body_mass * np.sum(vc * vc, axis=1)) + np.einsum("bi,bij,bj->", w, bs.J, w))
