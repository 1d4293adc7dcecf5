"""Planar mechanisms: the compiled index-1 dynamics reduced to the plane of motion.

Most linkages drawn in CAD move in a plane, yet in absolute coordinates each part keeps its six
velocities and each revolute joint five rows: three of them (the pin's offset along the axis, the
two axis alignments) only hold the parts in their plane. When the joints lock every out-of-plane
velocity, the motion is planar whatever the forces, and it follows from the in-plane equations
alone; the out-of-plane equations only fix the out-of-plane reactions.

Let n be the plane's unit normal (world). Split each moving part's velocity (centre-of-mass
velocity v and angular velocity ω, world axes) into the in-plane components (P v, n·ω; P = I − n nᵀ)
and the out-of-plane ones (n·v, P ω). A constraint row whose Jacobian has no in-plane entry at
every planar state is an *out-of-plane row*. The joints lock the out-of-plane motion when the
out-of-plane rows, restricted to the out-of-plane velocities, have full column rank (3 per moving
part): then Jv v = 0 forces n·v = 0 and P ω = 0, and every admissible motion is planar. Its
accelerations then solve, with the in-plane rows only,

    M̃ v̇ = f − J_inᵀ λ,     J_in v̇ = γ̂_in,     M̃⁻¹ = diag(P / m,  n nᵀ / (nᵀ J n))  per part,

M̃⁻¹ being M⁻¹ seen through the plane (zero out of it): the out-of-plane accelerations are zero, the
in-plane ones those of the planar mechanism — per part m P v̇ = P (f − J_inᵀ λ) and (nᵀ J n) n·ω̇ =
n·(τ − ω × J ω − …). The compiled evaluation (:class:`.fast.FastRHS`) takes exactly that: only the
in-plane rows, and the planar inverse masses as data. A closed planar chain of N revolutes factors
S over 2 N rows of band width ≈ 3 instead of 5 N rows of band width 9.

What is checked, at the model's coordinates and at two planar states moved from them (each part
turned about n and shifted in the plane by random amounts, so that no row reads as out-of-plane by
the coincidence of one pose): the same rows have no in-plane entry at all three; the out-of-plane
rows lock the out-of-plane velocities (rank, at the model's coordinates); no out-of-plane row is a
driver's (a time function moving a part out of its plane). Planes normal to a world axis are tried
(x, y, z): in a tilted plane a pin's three world rows each mix in-plane and out-of-plane
components, and the mechanism is solved in 3-D as before. Output frames (reactions at every joint,
out-of-plane ones included) are evaluated on the full equations.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

#: an entry of a row counts as zero below this, relative to the row's largest entry
ZERO_ENTRY = 1e-11
#: the out-of-plane block B has full column rank when every pivot of the Cholesky of BᵀB is above this,
#: relative to its largest diagonal entry (a block that locks the plane has pivots of the order of the entries)
RANK_TOL = 1e-12
#: models with more velocities are solved in 3-D (the test takes the Jacobian dense)
MAX_NV = 3000

__all__ = ["PlanarReduction", "planar_reduction"]


@dataclass(frozen=True)
class PlanarReduction:
    """How a planar mechanism's compiled dynamics is reduced (see the module docstring).

    Attributes
    ----------
    axis : int
        The world axis (0, 1, 2: x, y, z) normal to the plane of motion.
    rows : ndarray of int
        The in-plane rows (indices into the dynamics' rows, ``Dynamics.nc``).
    translation_inverse_mass : ndarray (nmov, 3, 3)
        P / m per moving part (1/kg, world axes).
    body_inverse_inertia : ndarray (nmov, 3, 3)
        n_b n_bᵀ / (n_bᵀ J_b n_b) per moving part (1/(kg m²), part axes; n_b the normal in the part's frame):
        rotated to the world at any planar pose it is n nᵀ / (nᵀ J n).
    """

    axis: int
    rows: np.ndarray
    translation_inverse_mass: np.ndarray
    body_inverse_inertia: np.ndarray


#: the reductions found, by ``id`` of their (immutable) model, each dropped when its model is collected
_FOUND = {}


def planar_reduction(dyn, seed=0):
    """The :class:`PlanarReduction` of ``dyn`` (:class:`.equations.Dynamics`), or None where its
    mechanism is not held in a plane normal to a world axis (or has more than :data:`MAX_NV`
    velocities, or no moving part). Found once per model (it depends on the model alone)."""
    key = (id(dyn.model), seed)
    if key not in _FOUND:
        _FOUND[key] = _find(dyn, seed)
        weakref.finalize(dyn.model, _FOUND.pop, key, None)
    return _FOUND[key]


def _find(dyn, seed):
    nmov, nv, nc = dyn.nmov, dyn.nv, dyn.nc
    if nmov == 0 or nc == 0 or nv > MAX_NV:
        return None
    q0 = np.array(dyn.model.q0, dtype=float)
    rng = np.random.default_rng(seed)
    timed_rows = np.zeros(nc, dtype=bool)
    for gr in dyn.groups:
        if gr["timed"]:
            timed_rows[gr["row0"]: gr["row0"] + gr["n"] * gr["neq"]] = True
    J0 = _jacobian(dyn, q0)
    for axis in range(3):
        in_cols, out_cols = _columns(axis, nmov)
        out_rows = _flat_rows(J0, in_cols)
        for _ in range(2):
            if np.count_nonzero(out_rows) < len(out_cols):
                break
            out_rows &= _flat_rows(_jacobian(dyn, _moved_in_plane(q0, nmov, axis, rng)), in_cols)
        if np.count_nonzero(out_rows) < len(out_cols) or np.any(out_rows & timed_rows):
            continue
        if not _full_column_rank(J0[np.ix_(out_rows, out_cols)]):
            continue
        return _reduction(dyn, axis, np.flatnonzero(~out_rows), q0)
    return None


def _columns(axis, nmov):
    """(in-plane, out-of-plane) velocity indices for the plane normal to world axis ``axis``."""
    per_in = [i for i in range(3) if i != axis] + [3 + axis]
    per_out = [axis] + [3 + i for i in range(3) if i != axis]
    base = 6 * np.arange(nmov)[:, None]
    return (base + np.array(per_in)[None, :]).reshape(-1), (base + np.array(per_out)[None, :]).reshape(-1)


def _full_column_rank(B):
    """True if B (rows ≥ columns) has full column rank: BᵀB, ordered for a small band (reverse
    Cuthill–McKee), has a band Cholesky whose every pivot is above :data:`RANK_TOL` times the
    largest diagonal entry (B is sparse: a few entries per row, from the two parts a joint links)."""
    import scipy.sparse as sps
    from scipy.linalg import cholesky_banded
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    if B.shape[0] < B.shape[1]:
        return False
    G = sps.csr_matrix(B.T @ B)
    order = reverse_cuthill_mckee(G, symmetric_mode=True)
    G = G[order][:, order].tocoo()
    bw = int(np.max(np.abs(G.row - G.col))) if G.nnz else 0
    band = np.zeros((bw + 1, G.shape[0]))
    lower = G.row >= G.col
    band[(G.row - G.col)[lower], G.col[lower]] = G.data[lower]
    try:
        L = cholesky_banded(band, lower=True)
    except np.linalg.LinAlgError:
        return False
    return bool(np.min(L[0]) ** 2 > RANK_TOL * np.max(band[0]))


def _flat_rows(J, in_cols):
    """Rows of J without an in-plane entry (each below :data:`ZERO_ENTRY` of the row's largest)."""
    scale = np.max(np.abs(J), axis=1)
    return np.max(np.abs(J[:, in_cols]), axis=1) <= ZERO_ENTRY * np.maximum(scale, 1e-300)


def _jacobian(dyn, q):
    """Jv (nc, nv) at the coordinates q, dense (t = 0, no velocities)."""
    ev = dyn.evaluate(q, np.zeros(dyn.nv), 0.0, None, with_gamma=False, with_forces=False)
    J = ev.J
    return J.toarray() if hasattr(J, "toarray") else np.asarray(J)


def _moved_in_plane(q0, nmov, axis, rng):
    """q0 with every moving part turned about the world axis by a random angle (up to ±1 rad) and
    shifted in the plane by up to ±0.1 of the model's extent: a planar pose off the model's."""
    Q = q0.reshape(nmov, 7).copy()
    extent = max(float(np.ptp(Q[:, :3])), 1e-3)
    half = 0.5 * rng.uniform(-1.0, 1.0, nmov)
    turn = np.zeros((nmov, 4))
    turn[:, 0] = np.cos(half)
    turn[:, 1 + axis] = np.sin(half)
    Q[:, 3:] = _quat_mul(turn, Q[:, 3:] / np.linalg.norm(Q[:, 3:], axis=1)[:, None])
    shift = rng.uniform(-0.1, 0.1, (nmov, 3)) * extent
    shift[:, axis] = 0.0
    Q[:, :3] += shift
    return Q.reshape(-1)


def _quat_mul(a, b):
    """Quaternion products a ⊗ b, row by row ((n, 4) each, (w, x, y, z))."""
    a0, a1, a2, a3 = a.T
    b0, b1, b2, b3 = b.T
    return np.stack([a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3, a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2,
                     a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1, a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0], axis=1)


def _reduction(dyn, axis, rows, q0):
    from .mass import body_state

    nmov = dyn.nmov
    n = np.zeros(3)
    n[axis] = 1.0
    P = np.eye(3) - np.outer(n, n)
    mass = dyn.mass
    A = body_state(dyn.model, mass, q0, np.zeros(dyn.nv)).A[:nmov]
    n_b = np.einsum("bji,j->bi", A, n)  # the normal in each part's frame, Aᵀ n
    inertia_n = np.einsum("bi,bij,bj->b", n_b, mass.body_inertia, n_b)
    arrays = (np.array(rows, dtype=np.int64), P[None, :, :] / mass.body_mass[:, None, None],
              np.einsum("bi,bj->bij", n_b, n_b) / inertia_n[:, None, None])
    for a in arrays:
        a.setflags(write=False)
    return PlanarReduction(axis, *arrays)
