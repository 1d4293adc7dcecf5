"""The spring-dampers' tangent stiffness and damping of :mod:`.force_jacobians`, vectorised over the elements.

The same equations (``spring-damper`` in :mod:`.force_jacobians`), arrays and signature as
:func:`.force_jacobians.spring_tangent`, for Python without numba (FreeCAD's interpreter), where that kernel's
loops run one element and one entry at a time: on the flyball governor's index-3 run they were half of its 1.8 s
once the index-3 kernels were vectorised (:mod:`.index3_numpy`). Used by
:meth:`.forces.ForceElements.tangent_blocks` when numba is missing; equal to the kernel to round-off.

Units: m, N, N/m, N s/m; world axes. Blocks (n, 2, 2, 6, 6): element, body row (0 the first part), body column,
[com displacement, rotation] × [com velocity, angular velocity].
"""

from __future__ import annotations

import numpy as np

from .mass import cross, skew

__all__ = ["spring_tangent"]

#: σ_j of the element's two bodies: −1 for the first part a, +1 for the second b
SIGN = np.array([-1.0, 1.0])


def spring_tangent(A, rc, w, vc, ia, ib, da, db, k, c, l0, F0, Kb, Db):
    """Translational spring-dampers: adds their K, D blocks (n, 2, 2, 6, 6) into ``Kb``, ``Db`` (see
    :mod:`.force_jacobians`)."""
    n = len(ia)
    if not n:
        return
    body = np.stack([ia, ib], 1)  # (n, 2)
    s = np.stack([np.einsum("eij,ej->ei", A[ia], da), np.einsum("eij,ej->ei", A[ib], db)], 1)  # arms (n, 2, 3)
    P = rc[body] + s
    d = P[:, 1] - P[:, 0]
    vP = vc[body] + cross(w[body], s)
    vr = vP[:, 1] - vP[:, 0]
    G = np.zeros((n, 2, 3, 6))
    G[:, :, :, :3] = np.eye(3)
    G[:, :, :, 3:] = -skew(s)
    Gt = np.swapaxes(G, 2, 3)  # (n, 2, 6, 3)
    sig2 = SIGN[:, None] * SIGN[None, :]  # σ_j σ_k (2, 2)
    l = np.linalg.norm(d, axis=1)
    point = l == 0.0  # coincident points: the limit of a zero-length spring, F = −k d − c ḋ
    if np.any(point):
        GtG = np.einsum("ejra,ekac->ejkrc", Gt[point], G[point])
        Kb[point] += k[point, None, None, None, None] * sig2[None, :, :, None, None] * GtG
        Db[point] += c[point, None, None, None, None] * sig2[None, :, :, None, None] * GtG
    line = ~point
    if not np.any(line):
        return
    G, Gt, s, body = G[line], Gt[line], s[line], body[line]
    k, c, l0, F0, l, d, vr = k[line], c[line], l0[line], F0[line], l[line], d[line], vr[line]
    u = d / l[:, None]
    f = -k * (l - l0) - c * np.einsum("ei,ei->e", u, vr) + F0
    Pp = (np.eye(3) - u[:, :, None] * u[:, None, :]) / l[:, None, None]  # (I − u uᵀ) / l
    vPp = np.einsum("ei,eij->ej", vr, Pp)
    uG = np.einsum("ei,ekic->ekc", u, G)  # uᵀ G_k (n, 2, 6)
    a2 = np.einsum("ei,ekic->ekc", vPp, G)
    WS = skew(w[body]) @ skew(s)  # [ω_k][s_k] (n, 2, 3, 3)
    a2[:, :, 3:] -= np.einsum("ei,ekij->ekj", u, WS)
    dfx = SIGN[None, :, None] * (-k[:, None, None] * uG - c[:, None, None] * a2)  # ∂f/∂x_k (n, 2, 6)
    dFx = u[:, None, :, None] * dfx[:, :, None, :] + (f[:, None, None, None] * SIGN[None, :, None, None]
                                                      * np.einsum("eij,ekjc->ekic", Pp, G))  # ∂F/∂x_k (n, 2, 3, 6)
    K = -SIGN[None, :, None, None, None] * np.einsum("ejri,ekic->ejkrc", Gt, dFx)
    FS = skew(f[:, None] * u)[:, None] @ skew(s)  # [F][s_j] (n, 2, 3, 3)
    for j in range(2):
        K[:, j, j, 3:, 3:] -= SIGN[j] * FS[:, j]
    Kb[line] += K
    Db[line] += c[:, None, None, None, None] * sig2[None, :, :, None, None] * uG[:, :, None, :, None] * \
        uG[:, None, :, None, :]
