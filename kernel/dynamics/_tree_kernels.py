"""numba kernels of the compiled semi-recursive formulation (see :mod:`.fast_tree`).

The equations are those of :mod:`.semirecursive` (its numpy code is the reference, and the
tests compare the two to round-off); here every stage is a loop over the tree joints in
topological order (parents before children), so an evaluation costs O(n) in the number of
parts and coordinates for a fixed number of independent coordinates:

    positions    X_W_C = X_W_P X_P_Mi Pre(z) X0 Post(z) X_Mj_C per joint (:mod:`.tree`)
    columns      b_c = [p × u; u] or [t; 0] (world), from the joint's frames
    velocities   Z_C = Z_P + Σ_c b_c ż_c,   bias  (Ṙ ż)_C = (Ṙ ż)_P + Σ_c (Z_F ×ₘ b_c) ż_c
    forces       g_b = [F − m a; N − ω × J ω − J α + r_c × (F − m a)] at the world origin,
                 summed over each subtree from the leaves, Q̄_c = b_cᵀ G_child(c)
    closure      C = Jc R_v by walking each closure row's parts up to the root,
                 c = γ̂_c − Jc (Ṙ_v ż)
    reduction    C P = Q [R11 R12] (Householder QR, column pivoting: the dependent coordinates
                 are the first pivots, redundant rows fall out as zero pivots),
                 𝐑 = [−R11⁻¹ R12; I], s_d = R11⁻¹ Q1ᵀ c
    mass         M̄ x for any x by the same two passes (velocities R x, momenta of the parts at
                 the world origin summed over the subtrees, projected on the columns): 𝐑ᵀ M̄ 𝐑
                 column by column and M̄ s; beyond :data:`DENSE_LIMIT` independent coordinates
                 M̄ from the subtrees' composite inertias (b_kᵀ Mc_l b_l), then 𝐑ᵀ (M̄ 𝐑)
    solve        Cholesky of 𝐑ᵀ M̄ 𝐑 (n_i × n_i), z̈_i, z̈_d = s + X z̈_i

The ``recursive`` formulation (:mod:`.recursive`; ``t_sizes[7]`` = 1) shares the stages up to
the closure rows and then, in :func:`stage_rhs_recursive`, applies M̄⁻¹ by the articulated-body
passes of :mod:`._aba_kernels` (O(n) per right-hand side) to Q̄ and to the closure rows, and
solves for the multipliers of its kept rows with Baumgarte's terms; its ``project`` does nothing.

The model's absolute quantities (Jc, γ̂, Φ, Φt of the closure rows, the applied forces) come
from the absolute formulation's compiled library (:mod:`.library`) evaluated at the tree's
absolute state ``ya`` = [q, v, 0], which :func:`kinematics` writes into the workspace.

The functions of :data:`TEMPLATES` are compiled inside the tree module (:mod:`.fast_tree`),
where ``groups`` and ``expressions`` are the absolute library's and ``KT`` (the index of the
first tree array in the packed header) is that module's constant; there they are the ``rhs``, ``project``,
``measure_rows`` and ``probe_step`` that the integrator templates of :mod:`._dop853` and
:mod:`._rk4` call, so the same loops step the tree state y = [z, ż, W] (and their measure of
singular configurations is :func:`singularity`, the numpy formulation's; the closure rows'
pivots, :func:`singularity_rows`, tell the watch when a step's interior probes can be skipped).
"""

import math

import numpy as np

from ..numba_cache import numba  # numba, its cache folder named by the kernel sources
from . import _kernels as K
from .layout import Field as F
from ._aba_kernels import factor as aba_factor
from ._aba_kernels import solve as aba_solve
from ._singular_probes import CLEAR, PROBES, clear_of_singular

_JIT = dict(cache=True, nogil=True, fastmath=False)
#: the small helpers called many times an evaluation: inlined into their callers, where a call with array
#: arguments costs ~20 ns (a 3 × 3 product 25 ns called, 7 ns inlined; the same operations, the same results)
_INLINE = dict(_JIT, inline="always")

#: joint type codes of ``t_type``
FIXED, REVOLUTE, PRISMATIC, CYLINDRICAL, SPHERICAL, UNIVERSAL, PLANAR, FREE = range(8)
TYPE_CODES = {"fixed": FIXED, "revolute": REVOLUTE, "prismatic": PRISMATIC, "cylindrical": CYLINDRICAL,
              "spherical": SPHERICAL, "universal": UNIVERSAL, "planar": PLANAR, "free": FREE}
#: the frame a column's axis is taken in (``t_cref``): Mi, Mj, Mi after Pre, the world at the child's origin
REF_MI, REF_MJ, REF_PRE, REF_WORLD = range(4)
REF_CODES = {"i": REF_MI, "j": REF_MJ, "pre": REF_PRE, "w": REF_WORLD}
#: relative pivot below which a closure equation is redundant (:data:`.semirecursive.RANK_TOL`)
RANK_TOL = 1e-9
#: beyond this many independent coordinates 𝐑ᵀ M̄ 𝐑 is reduced from M̄ assembled from the subtrees'
#: composite inertias (O(n²) for a chain) instead of one recursive pass per column (O(n) each),
#: and factorised by LAPACK instead of the loop Cholesky
DENSE_LIMIT = 12

#: the tree's packed arrays, after the absolute library's (:data:`.layout.COMMON`; fields as there). Sizes: nj tree
#: joints (one per moving body), nz joint velocities (the tree's columns), mc closure rows, and the flat scratch
#: arrays' lengths ny = 13 nmov + 1, nw6 = 30 nmov, nwf = 6 nb, nwv = 5 nz, nwm = 6 mc, nwc = mc nz, nwq = mc²,
#: nwmb = min(nz, DENSE_LIMIT)² (:meth:`.fast_tree.FastTree._extra_arrays`)
TREE = (
    F("t_sizes", "i", (8,), "nzq, nz, nj, nmov, closure rows, timed, redundant rows of Jv, formulation (1: recursive)"),
    F("t_type", "i", ("nj",), "each tree joint's type (TYPE_CODES)"),
    F("t_parent", "i", ("nj",), "its parent body (−1: ground)"),
    F("t_child", "i", ("nj",), "its child body"),
    F("t_zq", "i", ("nj",), "its first position coordinate in z"),
    F("t_z", "i", ("nj",), "its first velocity coordinate in ż"),
    F("t_ncol", "i", ("nj",), "its velocity columns"),
    F("t_Rpi", "f", ("nj", 3, 3), "the joint's first marker axes in the parent's frame"),
    F("t_rpi", "f", ("nj", 3), "its origin (m)"),
    F("t_R0", "f", ("nj", 3, 3), "the joint's zero pose (second marker relative to the first)"),
    F("t_r0", "f", ("nj", 3), "its offset (m)"),
    F("t_Rjc", "f", ("nj", 3, 3), "the child's frame in the second marker's axes"),
    F("t_rjc", "f", ("nj", 3), "its origin (m)"),
    F("t_Rcj", "f", ("nj", 3, 3), "the second marker's axes in the child's frame"),
    F("t_rcj", "f", ("nj", 3), "its origin (m)"),
    F("t_Rroot", "f", ("nj", 3, 3), "a root joint's ground frame"),
    F("t_rroot", "f", ("nj", 3), "its origin (m)"),
    F("t_com", "f", ("nmov", 3), "each moving body's com in its frame (m)"),
    F("t_ckind", "i", ("nz",), "each column's kind (rotation, translation)"),
    F("t_cframe", "i", ("nz",), "its frame"),
    F("t_cref", "i", ("nz",), "the frame its axis is taken in (REF_*)"),
    F("t_cjoint", "i", ("nz",), "its joint"),
    F("t_caxis", "f", ("nz", 3), "its axis (unit)"),
    F("t_cw", "f", ("nz",), "its weight in the closure's scaled Jacobian"),
    F("t_rw", "f", ("mc",), "each closure row's weight"),
    F("t_bjoint", "i", ("nmov",), "each body's tree joint"),
    F("t_crow", "i", ("mc",), "each closure row's position among the kept rows"),
    F("t_qadr", "i", ("n_quat",), "the Euler parameters' first address of each spherical or free joint in z"),
    F("t_wadr", "i", ("n_quat",), "the angular velocity's first address in ż"),
    F("t_sq", "i", ("n_scalar",), "the scalar position coordinates"),
    F("t_sz", "i", ("n_scalar",), "their velocities"),
    F("t_JR", "w", ("nmov", 3, 3), "each body's rotation (world)"),
    F("t_jr", "w", ("nmov", 3), "its position (m, world)"),
    F("t_pref", "w", ("nj", 4), "the Euler parameters' sign references"),
    F("t_RMi", "w", ("nj", 3, 3), "each joint's first marker axes (world)"),
    F("t_rMi", "w", ("nj", 3), "its origin (m, world)"),
    F("t_RPre", "w", ("nj", 3, 3), "the first marker after the joint's pre-rotation"),
    F("t_rPre", "w", ("nj", 3), "its origin (m)"),
    F("t_RMj", "w", ("nj", 3, 3), "the second marker's axes (world)"),
    F("t_rMj", "w", ("nj", 3), "its origin (m, world)"),
    F("t_b", "w", ("nz", 6), "each column's body twist (the path matrix's entries)"),
    F("t_Z", "w", ("nmov", 6), "each body's velocity Z = R ż"),
    F("t_rc", "w", ("nmov", 3), "each body's com (m, world)"),
    F("t_ya", "w", ("ny",), "the absolute state of the tree state"),
    # scratch of one evaluation (flat; reshaped into the arrays a call would otherwise allocate, ~50–100 ns each)
    F("t_w3", "w", ("W3_SIZE",), "kinematics' 3 × 3 and 3-vectors, a quaternion"),
    F("t_w6", "w", ("nw6",), "six-vectors per body"),
    F("t_wF", "w", ("nwf",), "wrenches per body"),
    F("t_wv", "w", ("nwv",), "vectors per column"),
    F("t_wm", "w", ("nwm",), "vectors per closure row"),
    F("t_wC", "w", ("nwc",), "the closure Jacobian"),
    F("t_wR", "w", ("nwc",), "its factorisation"),
    F("t_wQ", "w", ("nwq",), "closure row × row"),
    F("t_wX", "w", ("nwc",), "closure row × column"),
    F("t_wMb", "w", ("nwmb",), "the reduced mass matrix (small trees)"),
    F("t_wG", "w", ("nwq",), "closure row × row"),
    F("t_cfresh", "w", (1,), "1.0 while t_wC holds the closure Jacobian at the workspace's positions"),
    F("t_cgrp", "i", ("n_cgroup", "N_GRP"), "the constraint groups (rows of grp) with a closure row"),
    F("t_rgrp", "i", ("n_rgroup", "N_GRP"), "the others"),
    F("t_baum", "f", (2,), "recursive: Baumgarte's α, β (1/s)"),
    F("t_krow", "w", ("mc",), "recursive: its kept closure rows (1.0 kept, 0.0 not; −1.0 first: none chosen yet)"),
)
(T_SIZES, T_TYPE, T_PARENT, T_CHILD, T_ZQ, T_Z, T_NCOL, T_RPI, T_rPI, T_R0, T_r0, T_RJC, T_rJC, T_RCJ, T_rCJ,
 T_RROOT, T_rROOT, T_COM, T_CKIND, T_CFRAME, T_CREF, T_CJOINT, T_CAXIS, T_CW, T_RW, T_BJOINT, T_CROW, T_QADR, T_WADR,
 T_SQ, T_SZ, T_JR, T_jr, T_PREF, T_RMI, T_rMI, T_RPRE, T_rPRE, T_RMJ, T_rMJ, T_B, T_ZV, T_RC, T_YA,
 T_W3, T_W6, T_WF, T_WV, T_WM, T_WC, T_WR, T_WQ, T_WX, T_WMB, T_WG, T_CFRESH, T_CGRP, T_RGRP, T_BAUM,
 T_KROW) = range(len(TREE))
#: floats of ``t_w3`` (:func:`kinematics`' 3 × 3 and 3-vectors, a quaternion)
W3_SIZE = 6 * 9 + 6 * 3 + 4


# ---------------------------------------------------------------- small dense helpers
@numba.njit(**_INLINE)
def _mm(A, B, out):
    """out = A B (3 × 3; out must not alias A or B)."""
    for i in range(3):
        for j in range(3):
            out[i, j] = A[i, 0] * B[0, j] + A[i, 1] * B[1, j] + A[i, 2] * B[2, j]


@numba.njit(**_INLINE)
def _mv(A, x, out):
    """out = A x (3 × 3, 3; out must not alias x)."""
    for i in range(3):
        out[i] = A[i, 0] * x[0] + A[i, 1] * x[1] + A[i, 2] * x[2]


@numba.njit(**_INLINE)
def _rz(theta, R):
    c, s = math.cos(theta), math.sin(theta)
    R[0, 0], R[0, 1], R[0, 2] = c, -s, 0.0
    R[1, 0], R[1, 1], R[1, 2] = s, c, 0.0
    R[2, 0], R[2, 1], R[2, 2] = 0.0, 0.0, 1.0


@numba.njit(**_INLINE)
def _eye(R):
    for i in range(3):
        for j in range(3):
            R[i, j] = 1.0 if i == j else 0.0


@numba.njit(**_INLINE)
def _quat_rotation(w, x, y, z, R):
    """R ← the rotation matrix of the quaternion (w, x, y, z), normalised first."""
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[0, 1] = 2.0 * (x * y - w * z)
    R[0, 2] = 2.0 * (x * z + w * y)
    R[1, 0] = 2.0 * (x * y + w * z)
    R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[1, 2] = 2.0 * (y * z - w * x)
    R[2, 0] = 2.0 * (x * z - w * y)
    R[2, 1] = 2.0 * (y * z + w * x)
    R[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@numba.njit(**_INLINE)
def _shepperd(R, q):
    """q ← the unit quaternion of the rotation matrix R (the row of K = 4 q qᵀ with the
    largest diagonal entry, as :func:`.tree._quaternions`)."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    d0, d1, d2, d3 = 1.0 + tr, 1.0 + R[0, 0] - R[1, 1] - R[2, 2], 1.0 - R[0, 0] + R[1, 1] - R[2, 2], \
        1.0 - R[0, 0] - R[1, 1] + R[2, 2]
    if d0 >= d1 and d0 >= d2 and d0 >= d3:
        q[0], q[1], q[2], q[3] = d0, R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]
    elif d1 >= d2 and d1 >= d3:
        q[0], q[1], q[2], q[3] = R[2, 1] - R[1, 2], d1, R[0, 1] + R[1, 0], R[0, 2] + R[2, 0]
    elif d2 >= d3:
        q[0], q[1], q[2], q[3] = R[0, 2] - R[2, 0], R[0, 1] + R[1, 0], d2, R[1, 2] + R[2, 1]
    else:
        q[0], q[1], q[2], q[3] = R[1, 0] - R[0, 1], R[0, 2] + R[2, 0], R[1, 2] + R[2, 1], d3
    n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    for i in range(4):
        q[i] /= n


@numba.njit(**_INLINE)
def _fill(a, value):
    """a[:] = value (1-D), as a loop: numba's slice assignment costs ~10–30 ns a call."""
    for i in range(a.shape[0]):
        a[i] = value


@numba.njit(**_INLINE)
def _down_the_tree(b, x, par, chi, za, ncol, nj, V):
    """V_c = V_parent + Σ b_col x_col over joint k's columns, from the root down (V (nmov, 6): the
    parts' twists R x for the relative rates x (nz,)); the forward twin of :func:`_project_subtrees`."""
    for k in range(nj):
        c, p = chi[k], par[k]
        for i in range(6):
            V[c, i] = V[p, i] if p >= 0 else 0.0
        for col in range(za[k], za[k] + ncol[k]):
            for i in range(6):
                V[c, i] += b[col, i] * x[col]


@numba.njit(**_INLINE)
def _revolute_in_parent(theta, Rpi, rpi, R0, r0, Rjc, rjc, Rpp, rpp, x1, x2, T, RPC):
    """A revolute joint's part in its parent's frame, as :func:`_joint_in_parent` with Pre = Rz(θ) and
    Post = I written out: X_P_Mi Pre (Rpp, rpp = rpi), x1 = Rpp (R0 rjc + r0) (the part's origin less
    rpp, m) and RPC = Rpp R0 Rjc, the same operations as the generic products less their exact
    multiplications by 0 and 1 (T: 3 × 3 scratch)."""
    c, s = math.cos(theta), math.sin(theta)
    for i in range(3):
        Rpp[i, 0] = Rpi[i, 0] * c + Rpi[i, 1] * s
        Rpp[i, 1] = Rpi[i, 0] * -s + Rpi[i, 1] * c
        Rpp[i, 2] = Rpi[i, 2]
        rpp[i] = rpi[i]
    _mv(R0, rjc, x2)
    for i in range(3):
        x2[i] += r0[i]
    _mv(Rpp, x2, x1)
    _mm(Rpp, R0, T)
    _mm(T, Rjc, RPC)


@numba.njit(**_INLINE)
def _joint_in_parent(t, zq, a, Rpi, rpi, R0, r0, Rjc, rjc, Rpre, Rpost, rpre, Rpp, rpp, x1, x2, T, RPC):
    """A tree joint's part in its parent's frame, X_P_C = X_P_Mi Pre(z) X0 Post(z) X_Mj_C (joint type
    ``t``, its coordinates from zq[a]): X_P_Mi Pre into (Rpp, rpp), the part's origin less rpp into
    x1 (m), R_P_C into RPC (Rpre, Rpost, rpre, x2, T: scratch)."""
    _eye(Rpre)
    _eye(Rpost)
    rpre[0] = rpre[1] = rpre[2] = 0.0
    if t == REVOLUTE:
        _rz(zq[a], Rpre)
    elif t == PRISMATIC:
        rpre[2] = zq[a]
    elif t == CYLINDRICAL:
        _rz(zq[a], Rpre)
        rpre[2] = zq[a + 1]
    elif t == SPHERICAL:
        _quat_rotation(zq[a], zq[a + 1], zq[a + 2], zq[a + 3], Rpre)
    elif t == UNIVERSAL:
        _rz(zq[a], Rpre)
        _rz(zq[a + 1], Rpost)
    elif t == PLANAR:
        _rz(zq[a + 2], Rpre)
        rpre[0] = zq[a]
        rpre[1] = zq[a + 1]
    _mm(Rpi, Rpre, Rpp)
    _mv(Rpi, rpre, x1)
    for i in range(3):
        rpp[i] = rpi[i] + x1[i]
    _mv(Rpost, rjc, x1)
    _mv(R0, x1, x2)
    for i in range(3):
        x2[i] += r0[i]
    _mv(Rpp, x2, x1)
    _mm(Rpp, R0, RPC)
    _mm(RPC, Rpost, T)
    _mm(T, Rjc, RPC)


@numba.njit(**_INLINE)
def _frames_needed(cref, z0, ncol):
    """Bit mask (1 << ``t_cref`` code) of the frames the columns z0 … z0 + ncol − 1 of a joint take
    their axes in."""
    need = 0
    for col in range(z0, z0 + ncol):
        need |= 1 << cref[col]
    return need


@numba.njit(**_INLINE)
def _world_frame(RP, rP, R, r, Rout, rout, x):
    """(Rout, rout) = X_W_P (R, r): the frame (R, r) given in the part P at pose (RP, rP) in the world
    (x: 3-vector scratch)."""
    _mm(RP, R, Rout)
    _mv(RP, r, x)
    for i in range(3):
        rout[i] = rP[i] + x[i]


# ---------------------------------------------------------------- kinematics
@numba.njit(**_JIT)
def kinematics(y, df, di, ws, kt):
    """From the tree state y = [z, ż, W]: the parts' world poses, the joints' world frames that
    their columns take axes in (``t_cref``; the others are not written), the columns b (nz, 6),
    the velocities Z (nmov, 6) = [v_O, ω], the centres of mass and the absolute state
    ya = [q, v, 0] (q: origin and Euler parameters, sign continued from the last call;
    v = [v_c, ω]) in the workspace."""
    sz = K.i1(di, kt + T_SIZES)
    nzq, nz, nj, nmov = sz[0], sz[1], sz[2], sz[3]
    typ, par, chi = K.i1(di, kt + T_TYPE), K.i1(di, kt + T_PARENT), K.i1(di, kt + T_CHILD)
    zqa, za, ncol = K.i1(di, kt + T_ZQ), K.i1(di, kt + T_Z), K.i1(di, kt + T_NCOL)
    Rpi, rpi = K.f3(df, di, kt + T_RPI), K.f2(df, di, kt + T_rPI)
    R0, r0 = K.f3(df, di, kt + T_R0), K.f2(df, di, kt + T_r0)
    Rjc, rjc = K.f3(df, di, kt + T_RJC), K.f2(df, di, kt + T_rJC)
    Rcj, rcj = K.f3(df, di, kt + T_RCJ), K.f2(df, di, kt + T_rCJ)
    Rroot, rroot = K.f3(df, di, kt + T_RROOT), K.f2(df, di, kt + T_rROOT)
    com = K.f2(df, di, kt + T_COM)
    JR, jr, pref = K.f3(ws, di, kt + T_JR), K.f2(ws, di, kt + T_jr), K.f2(ws, di, kt + T_PREF)
    RMi, rMi = K.f3(ws, di, kt + T_RMI), K.f2(ws, di, kt + T_rMI)
    RPre, rPre = K.f3(ws, di, kt + T_RPRE), K.f2(ws, di, kt + T_rPRE)
    RMj, rMj = K.f3(ws, di, kt + T_RMJ), K.f2(ws, di, kt + T_rMJ)
    b, Z, rc, ya = K.f2(ws, di, kt + T_B), K.f2(ws, di, kt + T_ZV), K.f2(ws, di, kt + T_RC), K.f1(ws, di, kt + T_YA)
    zq = y[:nzq]
    zd = y[nzq: nzq + nz]
    K.f1(ws, di, kt + T_CFRESH)[0] = 0.0  # new positions: the closure Jacobian in t_wC is not theirs
    w3 = K.f1(ws, di, kt + T_W3)
    Rpre, Rpost, Rpp = K.c_view(w3[0:9], (3, 3)), K.c_view(w3[9:18], (3, 3)), K.c_view(w3[18:27], (3, 3))
    T1, T2, RW = K.c_view(w3[27:36], (3, 3)), K.c_view(w3[36:45], (3, 3)), K.c_view(w3[45:54], (3, 3))
    rpre, rpp, x1, x2, rW, u = w3[54:57], w3[57:60], w3[60:63], w3[63:66], w3[66:69], w3[69:72]
    _eye(RW)
    rW[0] = rW[1] = rW[2] = 0.0
    cref = K.i1(di, kt + T_CREF)
    for k in range(nj):
        t, a, c, p = typ[k], zqa[k], chi[k], par[k]
        if t == FREE:
            _quat_rotation(zq[a + 3], zq[a + 4], zq[a + 5], zq[a + 6], JR[c])
            for i in range(3):
                jr[c, i] = zq[a + i]
            RP, rP = RW, rW  # the world
        else:
            if t == REVOLUTE:
                _revolute_in_parent(zq[a], Rpi[k], rpi[k], R0[k], r0[k], Rjc[k], rjc[k], Rpp, rpp, x1, x2, T2, T1)
            else:
                _joint_in_parent(t, zq, a, Rpi[k], rpi[k], R0[k], r0[k], Rjc[k], rjc[k], Rpre, Rpost, rpre, Rpp,
                                 rpp, x1, x2, T2, T1)
            RP, rP = (JR[p], jr[p]) if p >= 0 else (Rroot[k], rroot[k])
            _mm(RP, T1, JR[c])
            for i in range(3):
                x2[i] = rpp[i] + x1[i]
            _mv(RP, x2, x1)
            for i in range(3):
                jr[c, i] = rP[i] + x1[i]
        need = _frames_needed(cref, za[k], ncol[k])
        if need & 1 << REF_MI:  # the joint's world frames its columns take their axes in
            _world_frame(RP, rP, Rpi[k], rpi[k], RMi[k], rMi[k], x1)
        if need & 1 << REF_PRE:
            _world_frame(RP, rP, Rpp, rpp, RPre[k], rPre[k], x1)
        if need & 1 << REF_MJ:
            _world_frame(JR[c], jr[c], Rcj[k], rcj[k], RMj[k], rMj[k], x1)
    # columns
    ckind, cjoint, caxis = K.i1(di, kt + T_CKIND), K.i1(di, kt + T_CJOINT), K.f2(df, di, kt + T_CAXIS)
    for col in range(nz):
        k = cjoint[col]
        r = cref[col]
        if r == REF_WORLD:
            o = jr[chi[k]]
            u[0], u[1], u[2] = caxis[col, 0], caxis[col, 1], caxis[col, 2]
        else:
            Rf, o = (RMi[k], rMi[k]) if r == REF_MI else ((RMj[k], rMj[k]) if r == REF_MJ else (RPre[k], rPre[k]))
            _mv(Rf, caxis[col], u)
        if ckind[col] == 0:  # rotation about u through o
            b[col, 0] = o[1] * u[2] - o[2] * u[1]
            b[col, 1] = o[2] * u[0] - o[0] * u[2]
            b[col, 2] = o[0] * u[1] - o[1] * u[0]
            b[col, 3], b[col, 4], b[col, 5] = u[0], u[1], u[2]
        else:
            b[col, 0], b[col, 1], b[col, 2] = u[0], u[1], u[2]
            b[col, 3] = b[col, 4] = b[col, 5] = 0.0
    _down_the_tree(b, zd, par, chi, za, ncol, nj, Z)  # the velocities
    # the absolute state
    nq = 7 * nmov
    qb = w3[72:76]
    for bd in range(nmov):
        _shepperd(JR[bd], qb)
        if qb[0] * pref[bd, 0] + qb[1] * pref[bd, 1] + qb[2] * pref[bd, 2] + qb[3] * pref[bd, 3] < 0.0:
            for i in range(4):
                qb[i] = -qb[i]
        for i in range(3):
            rc[bd, i] = jr[bd, i] + JR[bd, i, 0] * com[bd, 0] + JR[bd, i, 1] * com[bd, 1] + JR[bd, i, 2] * com[bd, 2]
            ya[7 * bd + i] = jr[bd, i]
        for i in range(4):
            pref[bd, i] = qb[i]
            ya[7 * bd + 3 + i] = qb[i]
        w0, w1, w2 = Z[bd, 3], Z[bd, 4], Z[bd, 5]
        o = nq + 6 * bd
        ya[o] = Z[bd, 0] + w1 * rc[bd, 2] - w2 * rc[bd, 1]
        ya[o + 1] = Z[bd, 1] + w2 * rc[bd, 0] - w0 * rc[bd, 2]
        ya[o + 2] = Z[bd, 2] + w0 * rc[bd, 1] - w1 * rc[bd, 0]
        ya[o + 3], ya[o + 4], ya[o + 5] = w0, w1, w2
    ya[nq + 6 * nmov] = 0.0


@numba.njit(**_INLINE)
def mass_times(x, di, ws, kt, Jw, mass, out):
    """out = M̄ x = R_vᵀ M R_v x (nz,) by a forward pass (the velocities R x) and a backward
    one (the parts' momenta at the world origin summed over the subtrees)."""
    sz = K.i1(di, kt + T_SIZES)
    nz, nj, nmov = sz[1], sz[2], sz[3]
    par, chi, za, ncol = K.i1(di, kt + T_PARENT), K.i1(di, kt + T_CHILD), K.i1(di, kt + T_Z), K.i1(di, kt + T_NCOL)
    b, rc = K.f2(ws, di, kt + T_B), K.f2(ws, di, kt + T_RC)
    w6 = K.f1(ws, di, kt + T_W6)
    V = K.c_view(w6[18 * nmov: 24 * nmov], (nmov, 6))
    P = K.c_view(w6[24 * nmov: 30 * nmov], (nmov, 6))
    _down_the_tree(b, x, par, chi, za, ncol, nj, V)
    for bd in range(nmov):
        w0, w1, w2 = V[bd, 3], V[bd, 4], V[bd, 5]
        r0, r1, r2 = rc[bd, 0], rc[bd, 1], rc[bd, 2]
        m = mass[bd]
        l0 = m * (V[bd, 0] + w1 * r2 - w2 * r1)
        l1 = m * (V[bd, 1] + w2 * r0 - w0 * r2)
        l2 = m * (V[bd, 2] + w0 * r1 - w1 * r0)
        P[bd, 0], P[bd, 1], P[bd, 2] = l0, l1, l2
        P[bd, 3] = r1 * l2 - r2 * l1 + Jw[bd, 0, 0] * w0 + Jw[bd, 0, 1] * w1 + Jw[bd, 0, 2] * w2
        P[bd, 4] = r2 * l0 - r0 * l2 + Jw[bd, 1, 0] * w0 + Jw[bd, 1, 1] * w1 + Jw[bd, 1, 2] * w2
        P[bd, 5] = r0 * l1 - r1 * l0 + Jw[bd, 2, 0] * w0 + Jw[bd, 2, 1] * w1 + Jw[bd, 2, 2] * w2
    _project_subtrees(P, b, par, chi, za, ncol, nj, nz, out)


@numba.njit(**_JIT)
def composite_mass(di, ws, kt, Jw, mass):
    """M̄ (nz, nz) = R_vᵀ M R_v: M̄[k, l] = b_kᵀ Mc_l b_l for k on the path to l, Mc_l the composite
    spatial inertia at the world origin of the parts below l's joint (summed from the leaves)."""
    sz = K.i1(di, kt + T_SIZES)
    nz, nj, nmov = sz[1], sz[2], sz[3]
    par, chi, za, ncol = K.i1(di, kt + T_PARENT), K.i1(di, kt + T_CHILD), K.i1(di, kt + T_Z), K.i1(di, kt + T_NCOL)
    cjoint, bjoint = K.i1(di, kt + T_CJOINT), K.i1(di, kt + T_BJOINT)
    b, rc = K.f2(ws, di, kt + T_B), K.f2(ws, di, kt + T_RC)
    Mc = np.zeros((nmov, 6, 6))
    for bd in range(nmov):
        m = mass[bd]
        r0, r1, r2 = rc[bd, 0], rc[bd, 1], rc[bd, 2]
        rr = r0 * r0 + r1 * r1 + r2 * r2
        for i in range(3):
            Mc[bd, i, i] = m
        # −m S and m S, S = skew(r_c)
        Mc[bd, 0, 4], Mc[bd, 0, 5], Mc[bd, 1, 3] = m * r2, -m * r1, -m * r2
        Mc[bd, 1, 5], Mc[bd, 2, 3], Mc[bd, 2, 4] = m * r0, m * r1, -m * r0
        Mc[bd, 4, 0], Mc[bd, 5, 0], Mc[bd, 3, 1] = m * r2, -m * r1, -m * r2
        Mc[bd, 5, 1], Mc[bd, 3, 2], Mc[bd, 4, 2] = m * r0, m * r1, -m * r0
        r = (r0, r1, r2)
        for i in range(3):  # J − m S S = J − m (r rᵀ − |r|² I)
            for j in range(3):
                Mc[bd, 3 + i, 3 + j] = Jw[bd, i, j] - m * r[i] * r[j] + (m * rr if i == j else 0.0)
    for k in range(nj - 1, -1, -1):
        if par[k] >= 0:
            for i in range(6):
                for j in range(6):
                    Mc[par[k], i, j] += Mc[chi[k], i, j]
    W = np.empty((nz, 6))
    for col in range(nz):
        c = chi[cjoint[col]]
        for i in range(6):
            acc = 0.0
            for j in range(6):
                acc += Mc[c, i, j] * b[col, j]
            W[col, i] = acc
    M = np.zeros((nz, nz))
    for l in range(nz):
        k = cjoint[l]
        while k >= 0:
            for col in range(za[k], za[k] + ncol[k]):
                v = 0.0
                for i in range(6):
                    v += b[col, i] * W[l, i]
                M[col, l] = v
                M[l, col] = v
            p = par[k]
            k = bjoint[p] if p >= 0 else -1
    return M


@numba.njit(**_INLINE)
def _project_subtrees(P, b, par, chi, za, ncol, nj, nz, out):
    """out_c = b_cᵀ Σ_{parts below c} P (P (nmov, 6) summed from the leaves, in place)."""
    for k in range(nj - 1, -1, -1):
        c, p = chi[k], par[k]
        for col in range(za[k], za[k] + ncol[k]):
            acc = 0.0
            for i in range(6):
                acc += b[col, i] * P[c, i]
            out[col] = acc
        if p >= 0:
            for i in range(6):
                P[p, i] += P[c, i]


@numba.njit(**_INLINE)
def closure_jacobian(di, ws, kt, C):
    """C = Jc R_v (closure rows × nz) by walking each closure row's parts up to the root; returns
    the size of C's entries before cancellation."""
    sz = K.i1(di, kt + T_SIZES)
    nz, mc = sz[1], sz[4]
    par, za, ncol = K.i1(di, kt + T_PARENT), K.i1(di, kt + T_Z), K.i1(di, kt + T_NCOL)
    bjoint, crow = K.i1(di, kt + T_BJOINT), K.i1(di, kt + T_CROW)
    b, rc = K.f2(ws, di, kt + T_B), K.f2(ws, di, kt + T_RC)
    Jc, rb = K.f3(ws, di, K.I_JC), K.i2(di, K.I_RB)
    jmax = 0.0
    rmax = 0.0
    for i in range(mc):
        for col in range(nz):
            C[i, col] = 0.0
        r = crow[i]
        for s in range(rb.shape[1]):
            bd = rb[r, s]
            if bd < 0:
                continue
            J = Jc[r, s]
            for l in range(6):
                if abs(J[l]) > jmax:
                    jmax = abs(J[l])
            k = bjoint[bd]
            while k >= 0:
                for col in range(za[k], za[k] + ncol[k]):
                    a0, a1, a2 = b[col, 3], b[col, 4], b[col, 5]
                    l0 = b[col, 0] + a1 * rc[bd, 2] - a2 * rc[bd, 1]
                    l1 = b[col, 1] + a2 * rc[bd, 0] - a0 * rc[bd, 2]
                    l2 = b[col, 2] + a0 * rc[bd, 1] - a1 * rc[bd, 0]
                    rmax = max(rmax, abs(l0), abs(l1), abs(l2), abs(a0), abs(a1), abs(a2))
                    C[i, col] += J[0] * l0 + J[1] * l1 + J[2] * l2 + J[3] * a0 + J[4] * a1 + J[5] * a2
                p = par[k]
                k = bjoint[p] if p >= 0 else -1
    return jmax * rmax


@numba.njit(**_JIT)
def closure(df, di, ws, kt, a, C, cvec):
    """C = Jc R_v (:func:`closure_jacobian`) and cvec = γ̂_c − Jc a (a (nmov, 6) the parts' bias
    accelerations [a_c, α]); returns the size of C's entries before cancellation."""
    sz = K.i1(di, kt + T_SIZES)
    mc = sz[4]
    crow = K.i1(di, kt + T_CROW)
    Jc, rb, gam = K.f3(ws, di, K.I_JC), K.i2(di, K.I_RB), K.f1(ws, di, K.I_GAM)
    for i in range(mc):
        r = crow[i]
        acc = gam[r]
        for s in range(rb.shape[1]):
            bd = rb[r, s]
            if bd < 0:
                continue
            for l in range(6):
                acc -= Jc[r, s, l] * a[bd, l]
        cvec[i] = acc
    return closure_jacobian(di, ws, kt, C)


@numba.njit(**_JIT)
def pivoted_qr(C, scale, Q, R, v):
    """(perm (n,), rank) of C P = Q R by Householder reflections with column pivoting (the
    remaining column of largest norm first, as LAPACK's geqp3), Q (m, m) and R (m, n) filled in
    place (v (m,) scratch); the rank counts the pivots above :data:`RANK_TOL` times the largest
    (and times ``scale``, the size of C's entries before cancellation, so that an all-redundant
    closure has rank 0)."""
    m, n = C.shape
    for i in range(m):
        for j in range(n):
            R[i, j] = C[i, j]
        for j in range(m):
            Q[i, j] = 1.0 if i == j else 0.0
    perm = np.arange(n)
    for j in range(min(m, n)):
        best, bn = j, -1.0
        for c in range(j, n):
            s = 0.0
            for i in range(j, m):
                s += R[i, c] * R[i, c]
            if s > bn:
                best, bn = c, s
        if best != j:
            for i in range(m):
                R[i, j], R[i, best] = R[i, best], R[i, j]
            perm[j], perm[best] = perm[best], perm[j]
        nrm = math.sqrt(bn)
        if nrm == 0.0:
            continue
        alpha = -nrm if R[j, j] >= 0.0 else nrm
        for i in range(j, m):
            v[i] = R[i, j]
        v[j] -= alpha
        vv = 0.0
        for i in range(j, m):
            vv += v[i] * v[i]
        if vv == 0.0:
            continue
        for c in range(j, n):  # R ← H R
            s = 0.0
            for i in range(j, m):
                s += v[i] * R[i, c]
            s *= 2.0 / vv
            for i in range(j, m):
                R[i, c] -= s * v[i]
        for i in range(m):  # Q ← Q H
            s = 0.0
            for l in range(j, m):
                s += Q[i, l] * v[l]
            s *= 2.0 / vv
            for l in range(j, m):
                Q[i, l] -= s * v[l]
        for i in range(j + 1, m):
            R[i, j] = 0.0
    d0 = abs(R[0, 0]) if min(m, n) > 0 else 0.0
    tol = RANK_TOL * max(d0, scale, 1e-300)
    rank = 0
    for j in range(min(m, n)):
        if abs(R[j, j]) > tol:
            rank += 1
    return perm, rank


@numba.njit(**_INLINE)
def _upper_solve(R, r, x):
    """x ← R[:r, :r]⁻¹ x (in place, back substitution)."""
    for i in range(r - 1, -1, -1):
        s = x[i]
        for j in range(i + 1, r):
            s -= R[i, j] * x[j]
        x[i] = s / R[i, i]


@numba.njit(**_JIT)
def _cholesky_solve(A, x):
    """x ← A⁻¹ x for symmetric positive definite A (overwritten by its factor, up to
    :data:`DENSE_LIMIT` rows; LAPACK's beyond); False if A is not positive definite."""
    n = A.shape[0]
    if n > DENSE_LIMIT:
        for j in range(n):
            if not A[j, j] > 0.0:
                return False
        try:
            A[:, :] = np.linalg.cholesky(A)
        except Exception:  # not positive definite
            return False
    else:
        for j in range(n):
            s = A[j, j]
            for k in range(j):
                s -= A[j, k] * A[j, k]
            if not s > 0.0:
                return False
            d = math.sqrt(s)
            A[j, j] = d
            for i in range(j + 1, n):
                s = A[i, j]
                for k in range(j):
                    s -= A[i, k] * A[j, k]
                A[i, j] = s / d
    for i in range(n):
        s = x[i]
        for k in range(i):
            s -= A[i, k] * x[k]
        x[i] = s / A[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= A[k, i] * x[k]
        x[i] = s / A[i, i]
    return True


@numba.njit(**_INLINE)
def rates(y, di, kt, out):
    """out[:nzq] = ż_q: the scalar coordinates' rates, ½ E(p)ᵀ ω for the quaternion blocks."""
    sz = K.i1(di, kt + T_SIZES)
    nzq = sz[0]
    sq, szi, qa, wa = K.i1(di, kt + T_SQ), K.i1(di, kt + T_SZ), K.i1(di, kt + T_QADR), K.i1(di, kt + T_WADR)
    for i in range(sq.shape[0]):
        out[sq[i]] = y[nzq + szi[i]]
    for j in range(qa.shape[0]):
        a, o = qa[j], nzq + wa[j]
        e0, e1, e2, e3 = y[a], y[a + 1], y[a + 2], y[a + 3]
        n = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3)
        e0, e1, e2, e3 = e0 / n, e1 / n, e2 / n, e3 / n
        w0, w1, w2 = y[o], y[o + 1], y[o + 2]
        out[a] = 0.5 * (-e1 * w0 - e2 * w1 - e3 * w2)
        out[a + 1] = 0.5 * (e0 * w0 + e3 * w1 - e2 * w2)
        out[a + 2] = 0.5 * (-e3 * w0 + e0 * w1 + e1 * w2)
        out[a + 3] = 0.5 * (e2 * w0 - e1 * w1 + e0 * w2)


@numba.njit(**_JIT)
def bias_and_forces(zd, df, di, dd, ws, kt):
    """The parts' bias accelerations a = [a_c, α] (nmov, 6: Ṙ ż down the tree, at the centres of
    mass; m/s², rad/s², world) into ``t_w6[6 nmov: 12 nmov]`` and their applied forces less the
    inertia of a, G = [F − m a_c; N − ω × J ω − J α] (N, N m about the centre of mass) into
    ``t_w6[12 nmov: 18 nmov]``, from the workspace filled by :func:`kinematics` and the absolute
    module's body kinematics at ya; returns the applied forces' non-conservative power (W)."""
    sz = K.i1(di, kt + T_SIZES)
    nj, nmov = sz[2], sz[3]
    nb = K.i1(di, K.I_SIZES)[2]
    par, chi, za, ncol = K.i1(di, kt + T_PARENT), K.i1(di, kt + T_CHILD), K.i1(di, kt + T_Z), K.i1(di, kt + T_NCOL)
    cframe = K.i1(di, kt + T_CFRAME)
    b, Z, rc = K.f2(ws, di, kt + T_B), K.f2(ws, di, kt + T_ZV), K.f2(ws, di, kt + T_RC)
    Jw, w, vc = K.f3(ws, di, K.I_JW), K.f2(ws, di, K.I_W), K.f2(ws, di, K.I_VC)
    mass = K.f1(df, di, K.I_MASS)
    wF, w6 = K.f1(ws, di, kt + T_WF), K.f1(ws, di, kt + T_W6)
    Fo, No = K.c_view(wF[: 3 * nb], (nb, 3)), K.c_view(wF[3 * nb: 6 * nb], (nb, 3))
    power = K.applied_forces(df, di, dd, ws, Fo, No)
    # the bias Ṙ ż down the tree, then the parts' com bias accelerations a = [a_c, α]
    aZ = K.c_view(w6[: 6 * nmov], (nmov, 6))
    for k in range(nj):
        c, p = chi[k], par[k]
        for i in range(6):
            aZ[c, i] = aZ[p, i] if p >= 0 else 0.0
        for col in range(za[k], za[k] + ncol[k]):
            f = cframe[col]
            src = p if f == 0 else (c if f == 1 else -1)
            if src < 0:
                continue
            v0, v1, v2, o0, o1, o2 = Z[src, 0], Z[src, 1], Z[src, 2], Z[src, 3], Z[src, 4], Z[src, 5]
            l0, l1, l2, a0, a1, a2 = b[col, 0], b[col, 1], b[col, 2], b[col, 3], b[col, 4], b[col, 5]
            q = zd[col]
            aZ[c, 0] += (o1 * l2 - o2 * l1 + v1 * a2 - v2 * a1) * q
            aZ[c, 1] += (o2 * l0 - o0 * l2 + v2 * a0 - v0 * a2) * q
            aZ[c, 2] += (o0 * l1 - o1 * l0 + v0 * a1 - v1 * a0) * q
            aZ[c, 3] += (o1 * a2 - o2 * a1) * q
            aZ[c, 4] += (o2 * a0 - o0 * a2) * q
            aZ[c, 5] += (o0 * a1 - o1 * a0) * q
    a = K.c_view(w6[6 * nmov: 12 * nmov], (nmov, 6))
    G = K.c_view(w6[12 * nmov: 18 * nmov], (nmov, 6))
    for bd in range(nmov):
        al0, al1, al2 = aZ[bd, 3], aZ[bd, 4], aZ[bd, 5]
        r0, r1, r2 = rc[bd, 0], rc[bd, 1], rc[bd, 2]
        w0, w1, w2 = w[bd, 0], w[bd, 1], w[bd, 2]
        a[bd, 0] = aZ[bd, 0] + al1 * r2 - al2 * r1 + w1 * vc[bd, 2] - w2 * vc[bd, 1]
        a[bd, 1] = aZ[bd, 1] + al2 * r0 - al0 * r2 + w2 * vc[bd, 0] - w0 * vc[bd, 2]
        a[bd, 2] = aZ[bd, 2] + al0 * r1 - al1 * r0 + w0 * vc[bd, 1] - w1 * vc[bd, 0]
        a[bd, 3], a[bd, 4], a[bd, 5] = al0, al1, al2
        m = mass[bd]
        F0, F1, F2 = Fo[bd, 0] - m * a[bd, 0], Fo[bd, 1] - m * a[bd, 1], Fo[bd, 2] - m * a[bd, 2]
        h0 = Jw[bd, 0, 0] * w0 + Jw[bd, 0, 1] * w1 + Jw[bd, 0, 2] * w2
        h1 = Jw[bd, 1, 0] * w0 + Jw[bd, 1, 1] * w1 + Jw[bd, 1, 2] * w2
        h2 = Jw[bd, 2, 0] * w0 + Jw[bd, 2, 1] * w1 + Jw[bd, 2, 2] * w2
        N0 = No[bd, 0] - (w1 * h2 - w2 * h1) - (Jw[bd, 0, 0] * al0 + Jw[bd, 0, 1] * al1 + Jw[bd, 0, 2] * al2)
        N1 = No[bd, 1] - (w2 * h0 - w0 * h2) - (Jw[bd, 1, 0] * al0 + Jw[bd, 1, 1] * al1 + Jw[bd, 1, 2] * al2)
        N2 = No[bd, 2] - (w0 * h1 - w1 * h0) - (Jw[bd, 2, 0] * al0 + Jw[bd, 2, 1] * al1 + Jw[bd, 2, 2] * al2)
        G[bd, 0], G[bd, 1], G[bd, 2] = F0, F1, F2
        G[bd, 3], G[bd, 4], G[bd, 5] = N0, N1, N2
    return power


@numba.njit(**_INLINE)
def _closure_rows(zd, df, di, ws, kt, a):
    """(C, cvec, scale) of :func:`closure` at the workspace's state (C into ``t_wC``, marked fresh;
    cvec = ``t_wm[:mc]``), the closure rows' Φ̇ = C ż + Φt_c into ``t_wm[5 mc: 6 mc]``, and
    aux[0], aux[1] = max |Φ̇|, max |Φ_c|."""
    sz = K.i1(di, kt + T_SIZES)
    nz, mc = sz[1], sz[4]
    wm = K.f1(ws, di, kt + T_WM)
    C = K.c_view(K.f1(ws, di, kt + T_WC), (mc, nz))
    cvec = wm[:mc]
    scale = closure(df, di, ws, kt, a, C, cvec)
    K.f1(ws, di, kt + T_CFRESH)[0] = 1.0
    crow = K.i1(di, kt + T_CROW)
    pt, ph = K.f1(ws, di, K.I_PT), K.f1(ws, di, K.I_PH)
    aux = K.f1(ws, di, K.I_AUX)
    vres = 0.0
    pres = 0.0
    for i in range(mc):
        s = pt[crow[i]]
        for col in range(nz):
            s += C[i, col] * zd[col]
        wm[5 * mc + i] = s
        vres = max(vres, abs(s))
        pres = max(pres, abs(ph[crow[i]]))
    aux[0], aux[1] = vres, pres
    return C, cvec, scale


@numba.njit(**_JIT)
def stage_rhs(t, y, df, di, dd, ws, kt):
    """ẏ = [ż_q, z̈, P_nc] from the workspace filled by :func:`kinematics`, the absolute module's
    body kinematics and groups at ya (see the module docstring); (ẏ, ok), ok False when the
    reduced mass matrix is not positive definite or ẏ is not finite. ``aux[0]``, ``aux[1]``:
    max |C ż + Φt_c| and max |Φ_c| of the closure rows."""
    sz = K.i1(di, kt + T_SIZES)
    nzq, nz, nj, nmov, mc, timed = sz[0], sz[1], sz[2], sz[3], sz[4], sz[5]
    par, chi, za, ncol = K.i1(di, kt + T_PARENT), K.i1(di, kt + T_CHILD), K.i1(di, kt + T_Z), K.i1(di, kt + T_NCOL)
    b, rc = K.f2(ws, di, kt + T_B), K.f2(ws, di, kt + T_RC)
    zd = y[nzq: nzq + nz]
    Jw = K.f3(ws, di, K.I_JW)
    mass = K.f1(df, di, K.I_MASS)
    w6, wv = K.f1(ws, di, kt + T_W6), K.f1(ws, di, kt + T_WV)
    power = bias_and_forces(zd, df, di, dd, ws, kt)
    a = K.c_view(w6[6 * nmov: 12 * nmov], (nmov, 6))
    G = K.c_view(w6[12 * nmov: 18 * nmov], (nmov, 6))
    for bd in range(nmov):  # [F; N] about the centre of mass → at the world origin
        r0, r1, r2 = rc[bd, 0], rc[bd, 1], rc[bd, 2]
        F0, F1, F2 = G[bd, 0], G[bd, 1], G[bd, 2]
        G[bd, 3] = G[bd, 3] + r1 * F2 - r2 * F1
        G[bd, 4] = G[bd, 4] + r2 * F0 - r0 * F2
        G[bd, 5] = G[bd, 5] + r0 * F1 - r1 * F0
    Qz, zdd, e, me, rhs_i = wv[:nz], wv[nz: 2 * nz], wv[2 * nz: 3 * nz], wv[3 * nz: 4 * nz], wv[4 * nz: 5 * nz]
    _project_subtrees(G, b, par, chi, za, ncol, nj, nz, Qz)
    ok = True
    if mc > 0:
        wm = K.f1(ws, di, kt + T_WM)
        C, cvec, scale = _closure_rows(zd, df, di, ws, kt, a)
        crow = K.i1(di, kt + T_CROW)
        pt = K.f1(ws, di, K.I_PT)
        Q, R = K.c_view(K.f1(ws, di, kt + T_WQ), (mc, mc)), K.c_view(K.f1(ws, di, kt + T_WR), (mc, nz))
        perm, r = pivoted_qr(C, scale, Q, R, wm[4 * mc: 5 * mc])
        ni = nz - r
        # X = −R11⁻¹ R12 (r × ni), s = R11⁻¹ Q1ᵀ c
        X = K.c_view(K.f1(ws, di, kt + T_WX)[: r * ni], (r, ni))
        col_ = wm[mc: mc + r]
        for j in range(ni):
            for i in range(r):
                col_[i] = -R[i, r + j]
            _upper_solve(R, r, col_)
            for i in range(r):
                X[i, j] = col_[i]
        s = wm[2 * mc: 2 * mc + r]
        for i in range(r):
            acc = 0.0
            for l in range(mc):
                acc += Q[l, i] * cvec[l]
            s[i] = acc
        _upper_solve(R, r, s)
        # 𝐑ᵀ M̄ 𝐑 and 𝐑ᵀ (Q̄ − M̄ s): by the recursive products, or from M̄ for many columns
        Mbar = np.empty((ni, ni)) if ni > DENSE_LIMIT else K.c_view(K.f1(ws, di, kt + T_WMB)[: ni * ni], (ni, ni))
        if ni > DENSE_LIMIT:
            Mz = composite_mass(di, ws, kt, Jw, mass)
            E = np.empty((nz, ni))  # M̄ 𝐑
            for j in range(ni):
                for row in range(nz):
                    acc = Mz[row, perm[r + j]]
                    for d in range(r):
                        acc += Mz[row, perm[d]] * X[d, j]
                    E[row, j] = acc
            for i in range(ni):
                for j in range(ni):
                    acc = E[perm[r + i], j]
                    for d in range(r):
                        acc += X[d, i] * E[perm[d], j]
                    Mbar[i, j] = acc
        else:
            for j in range(ni):
                _fill(e, 0.0)
                e[perm[r + j]] = 1.0
                for i in range(r):
                    e[perm[i]] = X[i, j]
                mass_times(e, di, ws, kt, Jw, mass, me)
                for i in range(ni):
                    acc = me[perm[r + i]]
                    for d in range(r):
                        acc += X[d, i] * me[perm[d]]
                    Mbar[i, j] = acc
        _fill(e, 0.0)
        for i in range(r):
            e[perm[i]] = s[i]
        mass_times(e, di, ws, kt, Jw, mass, me)
        rhs_i = rhs_i[:ni]
        for i in range(ni):
            acc = Qz[perm[r + i]] - me[perm[r + i]]
            for d in range(r):
                acc += X[d, i] * (Qz[perm[d]] - me[perm[d]])
            rhs_i[i] = acc
        ok = _cholesky_solve(Mbar, rhs_i)
        for i in range(ni):
            zdd[perm[r + i]] = rhs_i[i]
        for d in range(r):
            acc = s[d]
            for j in range(ni):
                acc += X[d, j] * rhs_i[j]
            zdd[perm[d]] = acc
        if timed and r > 0:  # the drivers' power: λ = Q1 R11⁻ᵀ (Q̄ − M̄ z̈)_d
            mass_times(zdd, di, ws, kt, Jw, mass, me)
            u = wm[3 * mc: 3 * mc + r]
            for i in range(r):
                acc = Qz[perm[i]] - me[perm[i]]
                for l in range(i):
                    acc -= R[l, i] * u[l]
                u[i] = acc / R[i, i]
            for l in range(mc):
                lam = 0.0
                for i in range(r):
                    lam += Q[l, i] * u[i]
                power += lam * pt[crow[l]]
    elif nz > DENSE_LIMIT:
        Mbar = composite_mass(di, ws, kt, Jw, mass)
        for i in range(nz):
            zdd[i] = Qz[i]
        ok = _cholesky_solve(Mbar, zdd)
    else:
        Mbar = K.c_view(K.f1(ws, di, kt + T_WMB)[: nz * nz], (nz, nz))
        for j in range(nz):
            _fill(e, 0.0)
            e[j] = 1.0
            mass_times(e, di, ws, kt, Jw, mass, me)
            for i in range(nz):
                Mbar[i, j] = me[i]
        for i in range(nz):
            zdd[i] = Qz[i]
        ok = _cholesky_solve(Mbar, zdd)
    return _derivative(y, di, kt, zdd, power, ok)


@numba.njit(**_INLINE)
def _derivative(y, di, kt, zdd, power, ok):
    """(ẏ = [ż_q, z̈, P_nc], ok and every entry finite) of the tree state y from z̈ (nz,) and the
    non-conservative power (W)."""
    sz = K.i1(di, kt + T_SIZES)
    nzq, nz = sz[0], sz[1]
    out = np.empty(y.shape[0])
    rates(y, di, kt, out)
    for i in range(nz):
        out[nzq + i] = zdd[i]
    out[nzq + nz] = power
    for i in range(out.shape[0]):
        if not math.isfinite(out[i]):
            ok = False
    return out, ok


@numba.njit(**_JIT)
def stage_rhs_recursive(t, y, df, di, dd, ws, kt):
    """ẏ = [ż_q, z̈, P_nc] of the ``recursive`` formulation (:mod:`.recursive`, the same operations)
    from the workspace filled by :func:`kinematics` and the absolute module at ya: z̈₀ = M̄⁻¹ Q̄ and
    X = M̄⁻¹ Cᵀ by the articulated-body passes (:mod:`._aba_kernels`), λ from the kept rows'
    S = C_r X_r (scaled, Cholesky), c_r = γ̂_c − Jc a − 2α (C ż + Φt_c) − β² Φ_c, z̈ = z̈₀ − X_r λ;
    (ẏ, ok), ok False when the passes or S (after choosing the rows again) are singular or ẏ is
    not finite. ``aux[0]``, ``aux[1]``: max |C ż + Φt_c| and max |Φ_c| of the closure rows."""
    sz = K.i1(di, kt + T_SIZES)
    nzq, nz, nj, nmov, mc, timed = sz[0], sz[1], sz[2], sz[3], sz[4], sz[5]
    par, chi, za, ncol = K.i1(di, kt + T_PARENT), K.i1(di, kt + T_CHILD), K.i1(di, kt + T_Z), K.i1(di, kt + T_NCOL)
    b, rc = K.f2(ws, di, kt + T_B), K.f2(ws, di, kt + T_RC)
    zd = y[nzq: nzq + nz]
    w6 = K.f1(ws, di, kt + T_W6)
    power = bias_and_forces(zd, df, di, dd, ws, kt)
    a = K.c_view(w6[6 * nmov: 12 * nmov], (nmov, 6))
    G = K.c_view(w6[12 * nmov: 18 * nmov], (nmov, 6))
    S, U, Dinv = np.empty((nz, 6)), np.empty((nz, 6)), np.empty((nj, 6, 6))
    ok = aba_factor(K.f1(df, di, K.I_MASS)[:nmov], K.f3(ws, di, K.I_JW)[:nmov], rc, b, par, chi, za, ncol, S, U,
                    Dinv)
    zdd = np.zeros(nz)
    if ok:
        aba_solve(np.zeros((nz, 1)), G, rc, par, chi, za, ncol, S, U, Dinv, zdd.reshape((nz, 1)))
    if ok and mc > 0:
        C, cvec, scale = _closure_rows(zd, df, di, ws, kt, a)
        crow = K.i1(di, kt + T_CROW)
        pt, ph = K.f1(ws, di, K.I_PT), K.f1(ws, di, K.I_PH)
        baum = K.f1(df, di, kt + T_BAUM)
        phidot = K.f1(ws, di, kt + T_WM)[5 * mc: 6 * mc]
        Ct = np.empty((nz, mc))
        for i in range(mc):
            for col in range(nz):
                Ct[col, i] = C[i, col]
            cvec[i] = cvec[i] - 2.0 * baum[0] * phidot[i] - baum[1] * baum[1] * ph[crow[i]]
        X = np.empty((nz, mc))
        aba_solve(Ct, np.zeros((nmov, 6)), rc, par, chi, za, ncol, S, U, Dinv, X)
        keep = K.f1(ws, di, kt + T_KROW)
        ok = False
        lam = np.empty(0)
        for _ in range(2):
            if keep[0] < 0.0:
                choose_kept_rows(C, scale, keep)
            lam = _multipliers(C, X, cvec, zdd, keep)
            if lam.shape[0] == 0 or lam[0] == lam[0]:  # not NaN: S was positive definite
                ok = True
                break
            keep[0] = -1.0  # the independent rows changed (a singular configuration was crossed)
        r = 0
        for i in range(mc):
            if ok and keep[i] > 0.5:
                for col in range(nz):
                    zdd[col] -= X[col, i] * lam[r]
                if timed:
                    power += lam[r] * pt[crow[i]]
                r += 1
    return _derivative(y, di, kt, zdd, power, ok)


@numba.njit(**_JIT)
def choose_kept_rows(C, scale, keep):
    """The independent closure rows of C (m × nz) into ``keep`` (1.0 kept, 0.0 not), as
    :meth:`.semirecursive.SemiRecursiveFormulation._choose`: the rank r and the dependent
    coordinates from a column-pivoted QR of C, the rows from one of C's dependent columns
    transposed (r × m)."""
    m = C.shape[0]
    Q, R, v = np.empty((m, m)), np.empty(C.shape), np.empty(m)
    perm, r = pivoted_qr(C, scale, Q, R, v)
    dep = np.sort(perm[:r])
    CdT = np.empty((r, m))
    for j in range(r):
        for i in range(m):
            CdT[j, i] = C[i, dep[j]]
    perm2, _ = pivoted_qr(CdT, scale, np.empty((r, r)), np.empty((r, m)), np.empty(r))
    for i in range(m):
        keep[i] = 0.0
    for j in range(r):
        keep[perm2[j]] = 1.0


@numba.njit(**_JIT)
def _multipliers(C, X, c, zdd0, keep):
    """λ on the kept rows (``keep``): S λ = C_r z̈₀ − c_r, S = C_r X_r scaled by d = √diag(S) and
    factorised by Cholesky; NaN in λ[0] where S is not positive definite (a pivot² ≤ 1e-12)."""
    m, nz = C.shape
    rows = np.empty(m, np.int64)
    r = 0
    for i in range(m):
        if keep[i] > 0.5:
            rows[r] = i
            r += 1
    lam = np.empty(r)
    A = np.empty((r, r))
    d = np.empty(r)
    for i in range(r):
        for j in range(r):
            acc = 0.0
            for col in range(nz):
                acc += C[rows[i], col] * X[col, rows[j]]
            A[i, j] = acc
    for i in range(r):
        if not A[i, i] > 0.0:
            lam[0] = np.nan
            return lam
        d[i] = math.sqrt(A[i, i])
    for i in range(r):
        acc = -c[rows[i]]
        for col in range(nz):
            acc += C[rows[i], col] * zdd0[col]
        lam[i] = acc / d[i]
        for j in range(r):
            A[i, j] = A[i, j] / d[i] / d[j]
    if r and not _cholesky_solve(A, lam):
        lam[0] = np.nan
        return lam
    for i in range(r):
        if A[i, i] * A[i, i] <= 1e-12:
            lam[0] = np.nan
            return lam
        lam[i] /= d[i]
    return lam


@numba.njit(**_JIT)
def singularity(df, di, dd, ws, kt):
    """:meth:`.semirecursive.SemiRecursiveFormulation.closure_singularity` of the closure Jacobian
    C at the workspace's positions: the smallest eigenvalue, after the redundant rows' zeros, of
    Dr C W Cᵀ Dr, Dr = ``t_rw`` and W = ``t_cw`` (the numpy formulation's constant weights) —
    closure rows × closure rows, where the absolute measure (:func:`._kernels.singularity`)
    takes all the joints' rows."""
    if K.i1(di, kt + T_SIZES)[4] == 0:
        return 1.0
    return _closure_measure(_closure_gram(df, di, ws, kt), di, ws, kt)


@numba.njit(**_JIT)
def singularity_rows(df, di, dd, ws, kt, rows):
    """:func:`singularity`, and each closure row's √ pivot ratio in ``rows[:mc]``
    (:func:`closure_row_measures`; the tree joints' rows beyond, which hold identically in z,
    ``inf`` as rows that never take part): the per-row history the integrators' watch reads
    (:func:`._dop853.clear_of_singular`), as the absolute rows' :func:`._kernels.singularity_rows`."""
    mc = K.i1(di, kt + T_SIZES)[4]
    rows[mc:] = np.inf
    if mc == 0:
        return 1.0
    G = _closure_gram(df, di, ws, kt)
    closure_row_measures(G, K.f1(dd, di, K.I_STAB)[2], K.f1(ws, di, kt + T_WQ), rows[:mc])
    return _closure_measure(G, di, ws, kt)


@numba.njit(**_JIT)
def _closure_gram(df, di, ws, kt):
    """G = Dr C W Cᵀ Dr (mc, mc, the workspace's ``t_wG``) of the closure Jacobian C at the
    workspace's positions (:func:`closure_jacobian`; the one the last evaluation left where it was
    at these positions, ``t_cfresh``), Dr = ``t_rw``, W = ``t_cw``: the matrix whose rows' pivots
    (:func:`closure_row_measures`) and eigenvalues (:func:`_closure_measure`) measure how near the
    closure is to a singular configuration."""
    sz = K.i1(di, kt + T_SIZES)
    nz, mc = sz[1], sz[4]
    C = K.c_view(K.f1(ws, di, kt + T_WC), (mc, nz))
    if K.f1(ws, di, kt + T_CFRESH)[0] == 0.0:
        closure_jacobian(di, ws, kt, C)
    cw, rw = K.f1(df, di, kt + T_CW), K.f1(df, di, kt + T_RW)
    G = K.c_view(K.f1(ws, di, kt + T_WG), (mc, mc))
    for i in range(mc):
        for j in range(i + 1):
            acc = 0.0
            for col in range(nz):
                acc += C[i, col] * cw[col] * C[j, col]
            v = rw[i] * rw[j] * acc
            G[i, j] = v
            G[j, i] = v
    return G


@numba.njit(**_JIT)
def closure_row_measures(G, drop_tol, work, rows):
    """Each closure row's √ pivot ratio into ``rows`` (mc,): the Cholesky of G = Dr C W Cᵀ Dr
    (:func:`_closure_gram`) in the rows' order, a row's pivot over its diagonal — the row's
    distance, relative, from the span of the rows before it. A row whose pivot is not above
    ``drop_tol`` times its diagonal (a combination of the rows before it: the structurally
    redundant closure rows, or a zero row) is dropped, ``inf``, as :func:`._kernels.band_cholesky`
    drops it. Near a singular configuration a kept row's ratio falls to 0 (the kept rows lose
    rank there). ``work``: mc² floats (G is kept)."""
    mc = G.shape[0]
    L = K.c_view(work[: mc * mc], (mc, mc))
    for i in range(mc):
        for j in range(i + 1):
            L[i, j] = G[i, j]
    for j in range(mc):
        s = L[j, j]
        diag = s
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > drop_tol * diag:
            rows[j] = np.inf
            for i in range(j + 1, mc):
                L[i, j] = 0.0
            continue
        rows[j] = math.sqrt(s / diag)
        d = math.sqrt(s)
        for i in range(j + 1, mc):
            acc = L[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            L[i, j] = acc / d


@numba.njit(**_JIT)
def _closure_measure(G, di, ws, kt):
    """:func:`singularity` from the closure's G (:func:`_closure_gram`): the smallest eigenvalue
    of G over its rows that are not zero, after the redundant rows' zeros."""
    sz = K.i1(di, kt + T_SIZES)
    mc = sz[4]
    wm = K.f1(ws, di, kt + T_WM)
    live = wm[5 * mc: 6 * mc]  # the rows that are not zero (indices, as floats)
    n = 0
    for i in range(mc):
        if G[i, i] > 0.0:
            live[n] = i
            n += 1
    if n == 0:
        return 1.0
    A = K.c_view(K.f1(ws, di, kt + T_WQ)[: n * n], (n, n))
    for a in range(n):
        i = int(live[a])
        for c in range(a + 1):
            v = G[i, int(live[c])]
            A[a, c] = v
            A[c, a] = v
    r = sz[6] - (mc - n)
    return kth_eigenvalue(A, min(max(r, 0), n - 1), wm[: 4 * mc])


@numba.njit(cache=True, nogil=True)
def kth_eigenvalue(A, k, work):
    """The k-th smallest eigenvalue (0-based) of the symmetric matrix A (overwritten; ``work``: at
    least 4 n floats of scratch): Householder reduction to tridiagonal form (:func:`_tridiagonal`),
    then bisection on the Sturm sequence counts until the eigenvalue is the only one in the
    bracket, and Newton steps on the characteristic polynomial kept inside it (:func:`_sturm`),
    to round-off — a few µs for the tens of rows of a mechanism, where LAPACK's full eigvalsh
    costs ten times more, and a quarter of bisection alone (which took ~55 halvings to round-off:
    0.73 µs for the slider-crank's 2 × 2, 0.20 µs now)."""
    n = A.shape[0]
    d, e = work[:n], work[n: 2 * n]
    _tridiagonal(A, d, e, work[2 * n: 3 * n], work[3 * n: 4 * n])
    lo, hi = d[0], d[0]
    for i in range(n):  # Gershgorin bounds
        rad = abs(e[i]) + (abs(e[i - 1]) if i > 0 else 0.0)
        lo = min(lo, d[i] - rad)
        hi = max(hi, d[i] + rad)
    below_lo, below_hi = 0, n  # eigenvalues below lo and below hi
    x = 0.5 * (lo + hi)
    for _ in range(200):
        if hi - lo <= 1e-15 * max(abs(lo), abs(hi), 1.0):
            return 0.5 * (lo + hi)
        isolated = below_lo == k and below_hi == k + 1
        if not isolated:
            x = 0.5 * (lo + hi)
        count, dlog = _sturm(d, e, x)
        if count > k:
            hi, below_hi = x, count
        else:
            lo, below_lo = x, count
        if isolated:  # Newton: x − p(x) / p'(x), halving where it would leave the bracket
            step = -1.0 / dlog if dlog != 0.0 else np.inf
            if abs(step) <= 1e-15 * max(abs(x), 1.0):
                return x + step if lo <= x + step <= hi else x
            x = x + step if lo < x + step < hi else 0.5 * (lo + hi)
    return x


@numba.njit(cache=True, nogil=True)
def _tridiagonal(A, d, e, v, p):
    """Householder reduction of the symmetric A (overwritten) to the tridiagonal matrix of
    diagonal d and off-diagonal e (e[n − 1] = 0); v, p: n floats of scratch."""
    n = A.shape[0]
    _fill(e, 0.0)
    for c in range(n - 2):
        nrm = 0.0
        for i in range(c + 1, n):
            nrm += A[i, c] * A[i, c]
        nrm = math.sqrt(nrm)
        d[c] = A[c, c]
        if nrm == 0.0:
            e[c] = 0.0
            continue
        alpha = -nrm if A[c + 1, c] >= 0.0 else nrm
        e[c] = alpha
        for i in range(c + 1, n):
            v[i] = A[i, c]
        v[c + 1] -= alpha
        vn = 0.0
        for i in range(c + 1, n):
            vn += v[i] * v[i]
        vn = math.sqrt(vn)
        for i in range(c + 1, n):
            v[i] /= vn
        vp = 0.0
        for i in range(c + 1, n):  # p = A22 v, then w = p − (vᵀ p) v; A22 ← A22 − 2 v wᵀ − 2 w vᵀ
            acc = 0.0
            for j in range(c + 1, n):
                acc += A[i, j] * v[j]
            p[i] = acc
            vp += v[i] * acc
        for i in range(c + 1, n):
            p[i] -= vp * v[i]
        for i in range(c + 1, n):
            for j in range(c + 1, n):
                A[i, j] -= 2.0 * (v[i] * p[j] + p[i] * v[j])
    if n >= 2:
        d[n - 2] = A[n - 2, n - 2]
        e[n - 2] = A[n - 1, n - 2]
    d[n - 1] = A[n - 1, n - 1]


@numba.njit(cache=True, nogil=True)
def _sturm(d, e, x):
    """(the number of eigenvalues below x, p'(x) / p(x)) of the tridiagonal matrix (d, e), p its
    characteristic polynomial det(T − x I): the signs and the logarithmic derivatives of the
    Sturm sequence's ratios q_i = p_i / p_(i−1) = d_i − x − e_(i−1)² / q_(i−1)."""
    tiny = 1e-300
    count = 0
    q = d[0] - x
    if q == 0.0:
        q = tiny
    dq = -1.0
    dlog = dq / q
    if q < 0.0:
        count += 1
    for i in range(1, d.shape[0]):
        e2 = e[i - 1] * e[i - 1]
        dq = -1.0 + e2 * (dq / q) / q
        q = d[i] - x - e2 / q
        if q == 0.0:
            q = tiny
        dlog += dq / q
        if q < 0.0:
            count += 1
    return count, dlog


# ---------------------------------------------------------------- projection
@numba.njit(**_JIT)
def closure_violation(di, ws, kt):
    """max |Φ_c| over the closure rows of the workspace."""
    sz = K.i1(di, kt + T_SIZES)
    crow, ph = K.i1(di, kt + T_CROW), K.f1(ws, di, K.I_PH)
    out = 0.0
    for i in range(sz[4]):
        out = max(out, abs(ph[crow[i]]))
    return out


@numba.njit(**_JIT)
def _closure_only(df, di, ws, kt):
    sz = K.i1(di, kt + T_SIZES)
    C = K.c_view(K.f1(ws, di, kt + T_WC), (sz[4], sz[1]))
    closure_jacobian(di, ws, kt, C)
    return C


@numba.njit(**_JIT)
def position_step(y, df, di, ws, kt):
    """z ← z ⊕ (−C⁺ Φ_c): one minimum-norm Newton step on the closure (quaternion blocks
    rotated by the increment, as :meth:`.tree.TreeKinematics.retract`)."""
    sz = K.i1(di, kt + T_SIZES)
    mc = sz[4]
    crow, ph = K.i1(di, kt + T_CROW), K.f1(ws, di, K.I_PH)
    C = _closure_only(df, di, ws, kt)
    phi = np.empty(mc)
    for i in range(mc):
        phi[i] = ph[crow[i]]
    dz = np.linalg.lstsq(C, phi)[0]
    sq, szi, qa, wa = K.i1(di, kt + T_SQ), K.i1(di, kt + T_SZ), K.i1(di, kt + T_QADR), K.i1(di, kt + T_WADR)
    for i in range(sq.shape[0]):
        y[sq[i]] -= dz[szi[i]]
    for j in range(qa.shape[0]):
        a, o = qa[j], wa[j]
        w0, w1, w2 = -dz[o], -dz[o + 1], -dz[o + 2]
        ang = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
        c = math.cos(0.5 * ang)
        f = math.sin(0.5 * ang) / ang if ang > 0.0 else 0.0
        d1, d2, d3 = f * w0, f * w1, f * w2
        p0, p1, p2, p3 = y[a], y[a + 1], y[a + 2], y[a + 3]
        n0 = c * p0 - d1 * p1 - d2 * p2 - d3 * p3
        n1 = c * p1 + d1 * p0 + d2 * p3 - d3 * p2
        n2 = c * p2 + d2 * p0 + d3 * p1 - d1 * p3
        n3 = c * p3 + d3 * p0 + d1 * p2 - d2 * p1
        n = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2 + n3 * n3)
        y[a], y[a + 1], y[a + 2], y[a + 3] = n0 / n, n1 / n, n2 / n, n3 / n


@numba.njit(**_JIT)
def velocity_step(y, df, di, ws, kt, tol):
    """ż ← ż − C⁺ (C ż + Φt_c) if that residual exceeds tol; True if ż changed."""
    sz = K.i1(di, kt + T_SIZES)
    nzq, nz, mc = sz[0], sz[1], sz[4]
    if mc == 0:
        return False
    crow, pt = K.i1(di, kt + T_CROW), K.f1(ws, di, K.I_PT)
    C = _closure_only(df, di, ws, kt)
    res = np.empty(mc)
    big = 0.0
    for i in range(mc):
        s = pt[crow[i]]
        for col in range(nz):
            s += C[i, col] * y[nzq + col]
        res[i] = s
        big = max(big, abs(s))
    if big <= tol:
        return False
    dz = np.linalg.lstsq(C, res)[0]
    for col in range(nz):
        y[nzq + col] -= dz[col]
    return True


# ---------------------------------------------------------------- templates (compiled in the tree module)
groups_in = measures_in = expressions = library_windings = None  # the absolute library's, bound in the generated module
KT = 0  # the index of the first tree array in the packed header, a constant of the generated module


def tree_state(t, y, df, di, dd, ws, need_gamma):
    """The tree's kinematics at y, then the absolute module's body kinematics and the constraint
    groups with a closure row at the absolute state ya (template): the other groups' rows hold
    identically in z, and nothing of an evaluation reads them (:func:`windings` refreshes their
    joint measures at accepted states)."""
    kinematics(y, df, di, ws, KT)
    ya = K.f1(ws, di, KT + T_YA)
    K.stage_kinematics(ya, df, di, ws)
    groups_in(t, ya, df, di, dd, ws, need_gamma, K.i2(di, KT + T_CGRP))


def windings(y, df, di, dd, ws):
    """The absolute library's ``windings`` after an accepted step (template), the joint measures
    of the groups without a closure row first brought to the state the workspace holds
    (``measures_in``: their rows, which hold identically in z, are not evaluated)."""
    ya = K.f1(ws, di, KT + T_YA)
    measures_in(df, di, ws, K.i2(di, KT + T_RGRP))
    return library_windings(ya, df, di, dd, ws)


def rotation_limit(y, df, di, dd, ws):
    """:func:`._kernels.rotation_step_limit` of the parts' velocities at the tree state y
    (template; overwrites the workspace's tree kinematics). In relative coordinates a steadily
    spinning part's motion is exact, and DOP853's error control alone would let one step turn it
    by several turns."""
    kinematics(y, df, di, ws, KT)
    return K.rotation_step_limit(K.f1(ws, di, KT + T_YA), di)


def step_limit(y, df, di, dd, ws):
    """The largest step (s) at the tree state y (template): :func:`rotation_limit` (the tree has
    no contacts)."""
    return rotation_limit(y, df, di, dd, ws)


def rhs(t, y, df, di, dd, ws):
    """ẏ of the tree state y = [z, ż, W] (template): (ẏ, ok), of ``semi-recursive`` or ``recursive``."""
    tree_state(t, y, df, di, dd, ws, True)
    expressions(t, df, di, dd, ws)
    if K.i1(di, KT + T_SIZES)[7] == 1:
        return stage_rhs_recursive(t, y, df, di, dd, ws, KT)
    return stage_rhs(t, y, df, di, dd, ws, KT)


def project(t, y, df, di, dd, ws, tol, max_iter):
    """Project the tree state y in place onto the closure (template): minimum-norm Newton steps
    on z while max |Φ_c| > tol (tol/100 after the first), at most ``max_iter``, then ż onto
    C ż = −Φt_c if that residual exceeds tol (:meth:`.semirecursive.SemiRecursiveFormulation._project`).
    Leaves the workspace at the projected positions; True if y changed. ``recursive`` does not
    project (Baumgarte's terms hold its closure): the workspace at y, False."""
    changed = False
    tree_state(t, y, df, di, dd, ws, False)
    if K.i1(di, KT + T_SIZES)[7] == 1:
        return False
    for _ in range(max_iter):
        if closure_violation(di, ws, KT) <= tol * (0.01 if changed else 1.0):
            break
        position_step(y, df, di, ws, KT)
        changed = True
        tree_state(t, y, df, di, dd, ws, False)
    if velocity_step(y, df, di, ws, KT, tol):
        changed = True
    return changed


def singular(t, y, df, di, dd, ws):
    """:func:`singularity` at the tree state y (template)."""
    tree_state(t, y, df, di, dd, ws, False)
    return singularity(df, di, dd, ws, KT)


def _hermite(p, h, y, f, y_new, f_new, out):
    h00 = 2.0 * p ** 3 - 3.0 * p ** 2 + 1.0
    h10 = p ** 3 - 2.0 * p ** 2 + p
    h01 = -2.0 * p ** 3 + 3.0 * p ** 2
    h11 = p ** 3 - p ** 2
    for i in range(y.shape[0]):
        out[i] = h00 * y[i] + h10 * h * f[i] + h01 * y_new[i] + h11 * h * f_new[i]


def choose_rows(df, di, dd, ws, factored):
    """:func:`._dop853.choose_rows` for the tree (template): its closure rows are all kept, the
    redundant ones by its own factorisation at every evaluation (nothing to choose)."""
    return False


def measure_rows(df, di, dd, ws, rows):
    """:func:`._dop853.measure_rows` for the tree (template): the closure rows' measure
    (:func:`singularity`) and each closure row's √ pivot ratio into ``rows``
    (:func:`singularity_rows`)."""
    return singularity_rows(df, di, dd, ws, KT, rows)


def probe_step(t, h, y, y_new, f, f_new, s, tmp, df, di, dd, ws, rows, h_before):
    """:func:`._dop853.probe_step` for the tree state (template): s[j] = √(:func:`singularity`)
    at the :data:`PROBES` of the step, the interior states from the cubic Hermite interpolant.
    The workspace holds the evaluation at y_new on entry and on return. s[0] is kept if it is
    ≥ 0 (known from the step before). When every closure row's measure in ``rows`` is clear of a
    V over this step and the step before (:func:`._dop853.clear_of_singular`), and so is the
    closure's measure itself between the step's ends, the interior probes are not evaluated and
    s gets the straight line between its ends there. Returns True if they were evaluated."""
    last = len(PROBES) - 1
    if s[0] < 0.0:
        tree_state(t, y, df, di, dd, ws, False)
        s[0] = math.sqrt(max(measure_rows(df, di, dd, ws, rows[1]), 0.0))
        tree_state(t + h, y_new, df, di, dd, ws, False)
    s[last] = math.sqrt(max(measure_rows(df, di, dd, ws, rows[2]), 0.0))
    if clear_of_singular(rows, h_before, h) and s[0] + s[last] > CLEAR * abs(s[last] - s[0]):
        for j in range(1, last):
            s[j] = s[0] + PROBES[j] * (s[last] - s[0])
        return False
    for j in range(1, last):
        _hermite(PROBES[j], h, y, f, y_new, f_new, tmp)
        s[j] = math.sqrt(max(singular(t + PROBES[j] * h, tmp, df, di, dd, ws), 0.0))
    tree_state(t + h, y_new, df, di, dd, ws, False)  # y_new's kinematics and rows back in the workspace
    return True


#: compiled inside each tree module after the integrator templates, whose ``windings``, ``rotation_limit``,
#: ``step_limit``, ``rhs``, ``project``, ``choose_rows``, ``measure_rows`` and ``probe_step`` they replace there
TEMPLATES = (tree_state, windings, rotation_limit, step_limit, rhs, project, singular, _hermite, choose_rows,
             measure_rows, probe_step)
#: names the templates use from this module
HELPERS = ("kinematics", "stage_rhs", "stage_rhs_recursive", "closure_violation", "position_step", "velocity_step",
           "singularity", "singularity_rows", "T_SIZES", "T_YA", "T_CGRP", "T_RGRP")
