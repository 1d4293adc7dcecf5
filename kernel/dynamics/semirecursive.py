"""Semi-recursive formulation with the double velocity transformation (Hidalgo & García de Jalón).

``semi-recursive``  relative coordinates z on the spanning tree of the joint graph
                    (:mod:`.tree`), loops closed by the closure equations Φ(z, t) = 0 of the
                    cut joints, couplers and drivers; the equations of motion in the
                    independent velocities; positions and velocities projected onto the
                    closure after steps.

State y = [z (nzq), ż (nz), W]. At every evaluation, from (z, ż):

    1. body poses and velocities   q(z), Z = R ż, v = D Z (com velocities, :mod:`.tree`)
    2. absolute quantities          Jv, γ̂, Φt, f from :class:`.equations.Dynamics` at (q, v)
    3. closure                      C = Jc R_v (m × nz), C ż = −Φt_c, C z̈ = c = γ̂_c − Jc Ṙ_v ż
    4. second transformation        dependent velocities from independent ones, rank-revealing:
                                    C P = Q [R11 R12] (pivoted QR, the pivots the dependent
                                    coordinates d; redundant but compatible rows drop out as the
                                    zero rows of R), z̈ = 𝐑 z̈_i + s, 𝐑 = [−R11⁻¹ R12; I],
                                    s_d = R11⁻¹ Q1ᵀ c
    5. equations of motion          𝐑ᵀ M̄ 𝐑 z̈_i = 𝐑ᵀ (Q̄ − M̄ s),  M̄ = R_vᵀ M R_v,
                                    Q̄ = R_vᵀ (f − M Ṙ_v ż)   (Rᵀ M̄ R z̈ = Rᵀ (Q̄ − M̄ Ṙ ż))

M̄ is built from the composite inertias of the subtrees (M̄[k, l] = b_kᵀ Mc_l b_l for k on the
path to l), Q̄ from the body forces accumulated down the paths: no nv × nz product.

Linear algebra (option ``sparse``: None chooses by size and structure, :data:`SPARSE_LIMIT`,
:data:`SPARSE_DENSITY`):

dense   a pivoted QR of C at every evaluation (the best dependent coordinates each time).
sparse  M̄ and C in their constant sparsity patterns; the dependent coordinates and the
        kept rows are chosen once (pivoted QR at the start), the column ordering of the square
        C_rd by SuperLU's COLAMD once, and each evaluation refactors C_rd in that fixed order
        (``permc_spec="NATURAL"``); the choice is renewed after a step where the pivot ratio
        of C_rd has fallen below ``rcond`` (default 0.1) times its value when it was chosen.

Projection after every accepted step (all integrators; BDF and LSODA only at output frames, as
the other formulations): Newton on Φ_c(z) = 0 by minimum-norm corrections of z, then
ż onto C ż = −Φt_c, when the violation exceeds ``tol`` (default: atol).

Compiled path (option ``fast``, default True; the dense path when numba is available and the
model's module is compiled, :mod:`.fast_tree`): the same evaluation, projection and singularity
measure in one compiled call each (equal to this module's to round-off), and with RK4 or DOP853
the whole integration in the compiled loop (option ``compiled_loop``, default True).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sps
from scipy.sparse.linalg import splu

from ..lapack import cho_factor, cho_solve
from .contract import Formulation, _Failure, step_too_large
from .index3 import Index3Formulation
from .mass import cross, skew
from .tree import TreeKinematics, build_tree

__all__ = ["SemiRecursiveFormulation", "SPARSE_LIMIT"]

#: ``sparse=None`` takes the sparse path beyond this many relative velocity coordinates when the
#: generalised mass matrix M̄ is at most :data:`SPARSE_DENSITY` full (a wide, shallow tree; a chain's
#: M̄ is full and stays dense). Below it scipy's per-call overhead makes the sparse path slower: the
#: dense one was faster on every model of benchmarks/relative.py (up to 299 coordinates)
SPARSE_LIMIT = 300
SPARSE_DENSITY = 0.2
#: relative pivot below which a closure equation is redundant (pivoted QR of C)
RANK_TOL = 1e-9


class SemiRecursiveFormulation(Formulation):
    """Semi-recursive relative coordinates, double velocity transformation; see the module docstring."""

    name = "semi-recursive"
    summary = ("Relative coordinates on the joint graph's spanning tree, cut joints closing the loops, double "
               "velocity transformation to the independent velocities, projection (dense or sparse)")
    defaults = {"tol": None, "max_iter": 8, "sparse": None, "rcond": 0.1, "fast": True, "compiled_loop": True}
    crossing_formulation = Index3Formulation
    #: joint coordinates: a massless link between two joints adds no equation of its own (𝐑ᵀ M̄ 𝐑 is the
    #: joint-space mass matrix, positive definite while every joint moves some mass)
    takes_massless = True

    def __init__(self, dyn, **kw):
        super().__init__(dyn, **kw)
        self.tree = build_tree(self.model, dyn.groups)
        self.kin = None
        sparse = self.options.get("sparse")
        if sparse is None:
            path = self.tree.path
            density = np.count_nonzero((path.T @ path) > 0) / max(self.tree.nz, 1) ** 2
            sparse = self.tree.nz > SPARSE_LIMIT and density <= SPARSE_DENSITY
        self.sparse = bool(sparse)
        self.crows = self.tree.closure_rows
        self._partition = None
        self._quality = self._partition_quality = 1.0
        self._c_scale = 0.0

    # ---------------------------------------------------------------- set-up
    def _setup(self, q0):
        tree = self.tree
        kin = self.kin = TreeKinematics(self.model, tree, q0)
        nz = tree.nz
        path = tree.path
        # coordinate pairs (k, l) with k on the path to l (same subtree sets: k's ⊇ l's)
        cover = (path.T @ path)  # (nz, nz): bodies common to both subtrees
        size = path.sum(0)
        idx = np.arange(nz)
        above = (size[:, None] > size[None, :]) | (idx[:, None] <= idx[None, :])
        K, L = np.nonzero((cover > 0) & (cover == size[None, :]) & above)
        self._pairs = (K, L)
        self._above = np.zeros((nz, nz), bool)
        self._above[K, L] = True
        self._path = sps.csr_matrix(path) if self.sparse else path
        self._pathT = self._path.T.tocsr() if self.sparse else path.T.copy()
        kin.path = self._path
        self._zq_ref = kin.initial_zq(q0)
        nmov = self.dyn.nmov
        self._mass = self.dyn.mass.body_mass
        self._com = self.dyn.mass.body_com
        # the pattern of R_v: (body row 6b+i, column c) where path[b, c]
        bb, cc = np.nonzero(path)
        self._rv_rows = (6 * bb[:, None] + np.arange(6)[None, :]).reshape(-1)
        self._rv_cols = np.repeat(cc, 6)
        self._rv_bodies, self._rv_c = bb, cc
        self._nv = 6 * nmov
        # the parts the closure equations touch, and their columns of Jv (the constant pattern)
        cols = []
        for gr in self.dyn.groups:
            m = gr["moving"]
            cols.append(gr["C"][m][np.isin(gr["R"][m], self.crows)])
        cols = np.unique(np.concatenate(cols)) if cols else np.zeros(0, int)
        self._cbodies = np.unique(cols // 6)
        self._ccols = (6 * self._cbodies[:, None] + np.arange(6)[None, :]).reshape(-1)
        self._cpath = path[self._cbodies]
        self.row_weight, self.col_weight = self._closure_weights()
        if self.options.get("fast", False) and not self.sparse:
            from .fast_tree import tree_applies, tree_fast

            self._fast = tree_fast(self)
            if self._fast is None and tree_applies(self):
                self._fast_pending = True  # compiled later in the run (:meth:`_late_fast`)

    def _compiled_when_ready(self, pending):
        """The compiled tree module (:class:`.fast_tree.FastTree`) at the current state once it
        and its library are ready, else None."""
        from .fast_tree import FastTree, tree_ready

        if not tree_ready(self.dyn):
            return None
        try:
            return FastTree(self)
        except ImportError:  # pragma: no cover - numba vanished
            return None

    def _closure_weights(self):
        """(row weights (m,), column weights (nz,)) of :meth:`closure_singularity`, constants of the
        geometry. A closure row is divided by its size, the largest |Jc| of its parts' velocity
        entries (of their angular velocity entries for a row of angles): its unit. A slide weighs
        1; a rotation 1/ℓ_c², ℓ_c (m) the coordinate's lever arm at the closure in the initial
        pose — the largest speed per rad/s its column of C gives a translational row, over that
        row's size: about the distance from the joint's axis to the points the loop closes at. So
        an angle and a slide weigh alike whatever the parts' sizes and masses (the van's steering
        arms, 0.1 m, turned by its driven rack read as conditioned as the rack's slide; with one
        length for every rotation and rows rescaled at each pose, they read 3e-3). A rotation on no
        translational row, or whose axis passes through them all, takes
        :attr:`.equations.Dynamics.length_scale`."""
        kin, dyn = self.kin, self.dyn
        ell = np.full(self.tree.nz, dyn.length_scale)
        size = np.ones(len(self.crows))
        if len(self.crows):
            _, _, q, _, b, _, rc = self._state(0.0, np.concatenate([self._zq_ref, np.zeros(self.tree.nz + 1)]))
            ev = dyn.evaluate(q, np.zeros(dyn.nv), 0.0, self.refs, with_gamma=False, with_forces=False)
            C = self._closure(ev, b, rc)
            C = C.toarray() if sps.issparse(C) else C
            Jc = ev.J[self.crows][:, self._ccols]
            Jc = (Jc.toarray() if sps.issparse(Jc) else Jc).reshape(len(self.crows), -1, 6)
            trans = np.max(np.abs(Jc[:, :, :3]), axis=(1, 2), initial=0.0)
            turn = np.max(np.abs(Jc[:, :, 3:]), axis=(1, 2), initial=0.0)
            size = np.where(trans > 0, trans, np.where(turn > 0, turn, 1.0))
            if np.any(trans > 0):
                arm = np.max(np.abs(C[trans > 0]) / size[trans > 0, None], axis=0)
                rot = (kin.col_kind == 0) & (arm > 1e-9 * dyn.length_scale)
                ell[rot] = arm[rot]
        return 1.0 / size, np.where(kin.col_kind == 0, 1.0 / ell ** 2, 1.0)

    # ---------------------------------------------------------------- kinematics
    def _state(self, t, y):
        """(zq, zd, q, v, b, Z, rc) at the state y: the relative coordinates and velocities, the
        absolute ones (q, v), the columns b (nz, 6), the bodies' Z (nmov, 6) and their centres of
        mass rc (nmov, 3), m."""
        tree, kin = self.tree, self.kin
        zq, zd = y[: tree.nzq], y[tree.nzq: tree.nzq + tree.nz]
        q, jp, jr, frames = kin.absolute(zq)
        b = kin.columns(frames, jr)
        Z = kin.velocities(b, zd)  # (nmov, 6) [v_O, ω]
        rc = jr + np.einsum("bij,bj->bi", frames["R"], self._com)
        v = np.empty_like(Z)
        v[:, 3:] = Z[:, 3:]
        v[:, :3] = Z[:, :3] + cross(Z[:, 3:], rc)
        return zq, zd, q, v.reshape(-1), b, Z, rc

    def _rv(self, b, rc):
        """R_v (nv, nz), dense: v = R_v ż (for the least-squares ż of given velocities)."""
        bb, cc = self._rv_bodies, self._rv_c
        blocks = b[cc].copy()
        blocks[:, :3] += cross(blocks[:, 3:], rc[bb])
        R = np.zeros((self._nv, self.tree.nz))
        R[self._rv_rows, self._rv_cols] = blocks.reshape(-1)
        return R

    def _closure(self, ev, b, rc):
        """C = Jc R_v (dense (m, nz), or CSR on the sparse path) of the closure rows: only the
        rows of R_v of the parts the closure equations touch are formed."""
        B, cols = self._cbodies, self._ccols
        Jc = ev.J[self.crows][:, cols]
        Jc = Jc.toarray() if sps.issparse(Jc) else Jc
        R = self._cpath[:, :, None] * b[None, :, :]  # (parts, nz, 6): [v_O; ω] per column
        R[..., :3] += cross(R[..., 3:], rc[B][:, None, :])  # → [v_c; ω]
        Rt = R.transpose(0, 2, 1).reshape(6 * len(B), -1)
        C = Jc @ Rt
        # the size of C's entries before cancellation: a pivot of round-off below it is a zero
        self._c_scale = float(np.max(np.abs(Jc), initial=0.0) * np.max(np.abs(Rt), initial=0.0))
        return sps.csr_matrix(C) if self.sparse else C

    def _body_terms(self, ev, b, Z, rc, zd):
        """(g (nmov, 6), a_v (nv,)): the parts' applied forces less the inertia of the bias
        accelerations, [F; N] (N, N m about the centre of mass), and the bias Ṙ_v ż (m/s², rad/s²),
        world axes."""
        nmov = self.dyn.nmov
        aZ = self.kin.bias(Z, b, zd)
        a = np.empty((nmov, 6))
        a[:, 3:] = aZ[:, 3:]
        a[:, :3] = aZ[:, :3] + cross(aZ[:, 3:], rc) + cross(Z[:, 3:], ev.v.reshape(nmov, 6)[:, :3])
        g = ev.f.reshape(nmov, 6) - np.concatenate([self._mass[:, None] * a[:, :3],
                                                     np.einsum("bij,bj->bi", ev.bs.J, a[:, 3:])], axis=1)
        return g, a.reshape(-1)

    def _dynamics_terms(self, ev, b, Z, rc, zd):
        """(M̄ (nz, nz), Q̄ (nz,), a_v (nv,)): generalised mass, forces and the bias Ṙ_v ż."""
        tree = self.tree
        nmov = self.dyn.nmov
        g_c, a = self._body_terms(ev, b, Z, rc, zd)
        # body forces less the bias inertia, moved to the world origin: g = Dᵀ (f − M a)
        F = g_c[:, :3]
        g = np.concatenate([F, g_c[:, 3:] + cross(rc, F)], axis=1)
        Ib = ev.bs.J
        mass = self._mass
        G = self._pathT @ g  # (nz, 6): sum over each coordinate's subtree
        Qz = np.einsum("ci,ci->c", b, G)
        # spatial inertia at the world origin per body, composite per coordinate subtree
        S = skew(rc)
        Mb = np.zeros((nmov, 6, 6))
        Mb[:, 0, 0] = Mb[:, 1, 1] = Mb[:, 2, 2] = mass
        Mb[:, :3, 3:] = -mass[:, None, None] * S
        Mb[:, 3:, :3] = mass[:, None, None] * S
        Mb[:, 3:, 3:] = Ib - mass[:, None, None] * np.einsum("bij,bjk->bik", S, S)
        Mc = (self._pathT @ Mb.reshape(nmov, 36)).reshape(-1, 6, 6)
        W = np.einsum("cij,cj->ci", Mc, b)
        nz = tree.nz
        if self.sparse:
            K, L = self._pairs
            vals = np.einsum("pi,pi->p", b[K], W[L])
            off = K != L
            Mz = sps.csc_matrix((np.concatenate([vals, vals[off]]), (np.concatenate([K, L[off]]),
                                                                     np.concatenate([L, K[off]]))), shape=(nz, nz))
        else:  # all products at once, then the path relation picks b_kᵀ Mc_l b_l with l below k
            G = b @ W.T
            Mz = np.where(self._above, G, np.where(self._above.T, G.T, 0.0))
        return Mz, Qz, a

    # ---------------------------------------------------------------- second transformation
    def _choose(self, C):
        """(rows, dependent, independent, rank) of C by a column- then row-pivoted QR."""
        Cd = C.toarray() if sps.issparse(C) else C
        nz = self.tree.nz
        if Cd.shape[0] == 0:
            return np.zeros(0, int), np.zeros(0, int), np.arange(nz), 0
        _, R, P = sla.qr(Cd, mode="economic", pivoting=True)
        r = self._rank(np.abs(np.diag(R)))
        dep = np.sort(P[:r])
        _, _, P2 = sla.qr(Cd[:, dep].T, mode="economic", pivoting=True)
        rows = np.sort(P2[:r])
        return rows, dep, np.setdiff1d(np.arange(nz), dep), r

    def _rank(self, d):
        """The rank of C from the pivots d of its pivoted QR: those above :data:`RANK_TOL` times the
        largest, and above RANK_TOL times C's scale before cancellation (all-redundant closures)."""
        if not d.size:
            return 0
        return int(np.sum(d > RANK_TOL * max(d[0], self._c_scale, 1e-300)))

    def _dense_solver(self, C):
        """(dep, ind, X = −C_d⁻¹ C_i, (solve, solve_t, pivot ratio)) from a pivoted QR of C:
        solve(c) = C_d⁻¹ c (least squares over all rows), solve_t(x) the minimum-norm λ of
        C_dᵀ λ = x."""
        Q, R, P = sla.qr(C, mode="economic", pivoting=True)
        d = np.abs(np.diag(R))
        r = self._rank(d)
        dep, ind = P[:r], P[r:]
        R11 = R[:r, :r]
        X = -sla.solve_triangular(R11, R[:r, r:], check_finite=False)
        Q1 = Q[:, :r]

        def solve(c):
            return sla.solve_triangular(R11, Q1.T @ c, check_finite=False)

        def solve_t(x):  # λ with C_dᵀ λ = x, the minimum-norm one
            return Q1 @ sla.solve_triangular(R11, x, trans="T", check_finite=False)

        return dep, ind, X, (solve, solve_t, min(d[:r]) / d[0] if r else 1.0)

    def _sparse_solver(self, C):
        """The same from the fixed partition: C_rd in its fixed column order, refactored."""
        part = self._partition
        fresh = part is None
        if fresh:
            part = self._renew(C)
        rows, dep, ind, perm = part
        if len(dep) == 0:  # every closure equation redundant: nothing is dependent
            return dep, ind, np.zeros((0, len(ind))), (lambda c: np.zeros(0), lambda x: np.zeros(C.shape[0]), 1.0)
        Cr = C[rows]
        Crd = Cr[:, dep][:, perm].tocsc()
        try:
            lu = splu(Crd, permc_spec="NATURAL", diag_pivot_thresh=1.0)
        except RuntimeError:
            raise _Failure("the closure Jacobian's dependent block is singular") from None
        self.nfactor += 1
        u = np.abs(lu.U.diagonal())
        self._quality = float(u.min() / u.max()) if u.size and u.max() > 0 else 0.0
        if fresh:
            self._partition_quality = self._quality
        Ci = Cr[:, ind].toarray()
        Xp = -lu.solve(Ci)
        X = np.empty_like(Xp)
        X[perm] = Xp

        def solve(c):
            x = lu.solve(c[rows])
            out = np.empty_like(x)
            out[perm] = x
            return out

        def solve_t(x):
            lam = np.zeros(C.shape[0])
            lam[rows] = lu.solve(x[perm], trans="T")
            return lam

        return dep, ind, X, (solve, solve_t, self._quality)

    def _renew(self, C):
        rows, dep, ind, r = self._choose(C)
        perm = np.arange(len(dep))
        if r:
            lu = splu(sps.csc_matrix(C.toarray()[np.ix_(rows, dep)] if sps.issparse(C) else C[np.ix_(rows, dep)]),
                      permc_spec="COLAMD")
            perm = np.argsort(lu.perm_c)  # A Pc = A[:, argsort(perm_c)] (SuperLU: Pr A Pc = L U)
        self._partition = (rows, dep, ind, perm)
        self.nfactor += 1
        return self._partition

    # ---------------------------------------------------------------- ODE contract
    def initial_state(self, t, q, v):
        """y = [z, ż, 0] of consistent absolute q, v at t (s)."""
        if self.kin is None:
            self._setup(q)
        return self.state_from(t, q, v, 0.0)

    def state_from(self, t, q, v, work):
        """y = [z, ż, W] of absolute coordinates q, velocities v and work W (J) at t (s)."""
        if self.kin is None:
            self._setup(q)
        zq = self.kin.relative(q, self._zq_ref)
        y = np.concatenate([zq, np.zeros(self.tree.nz), [work]])
        _, _, _, _, b, _, rc = self._state(t, y)
        zd = np.linalg.lstsq(self._rv(b, rc), v, rcond=None)[0]
        y[self.tree.nzq: self.tree.nzq + self.tree.nz] = zd
        return y

    def unpack(self, t, y):
        """(q, v, W): the absolute coordinates and velocities of the parts, and the work (J)."""
        _, _, q, v, _, _, _ = self._state(t, y)
        return q, v, y[-1]

    def rhs(self, t, y):
        """[ż_q, z̈, Ẇ] (see the module docstring; compiled by :mod:`.fast_tree` when it applies)."""
        if self._fast is not None:
            try:
                out = self._fast(t, y)
            except FloatingPointError:
                raise _Failure(f"the reduced mass matrix is singular or the accelerations are not finite at "
                               f"t = {t:.6g} s") from None
            self.nfactor += 1
            return out
        tree = self.tree
        zq, zd, q, v, b, Z, rc = self._state(t, y)
        dyn = self.dyn
        ev = dyn.evaluate(q, v, t, self.refs, with_constraints=bool(len(self.crows)))
        Mz, Qz, a = self._dynamics_terms(ev, b, Z, rc, zd)
        out = np.empty_like(y)
        out[: tree.nzq] = self.kin.rates(zq, zd)
        if len(self.crows):
            C = self._closure(ev, b, rc)
            Jc = ev.J[self.crows]
            c = ev.gamma[self.crows] - Jc @ a
            dep, ind, X, (solve, solve_t, _) = (self._sparse_solver if self.sparse else self._dense_solver)(C)
            s = solve(c)
            Md = Mz[:, dep]
            Md = Md.toarray() if sps.issparse(Md) else Md
            Mi = Mz[:, ind]
            Mi = Mi.toarray() if sps.issparse(Mi) else Mi
            MR = Mi + Md @ X
            Mbar = MR[ind] + X.T @ MR[dep]
            rhs = Qz - Md @ s
            rhs_i = rhs[ind] + X.T @ rhs[dep]
            zdd_i = _spd_solve(Mbar, rhs_i, t)
            zdd = np.empty(tree.nz)
            zdd[ind] = zdd_i
            zdd[dep] = s + X @ zdd_i
            power = ev.power
            if dyn.timed:
                res = Qz - (Mz @ zdd)
                lam = solve_t(res[dep])
                power += float(lam @ ev.phit[self.crows])
        else:
            Md = Mz.toarray() if sps.issparse(Mz) else Mz
            zdd = _spd_solve(Md, Qz, t)
            power = ev.power
        self.nfactor += 1
        out[tree.nzq: tree.nzq + tree.nz] = zdd
        out[-1] = power
        return out

    # ---------------------------------------------------------------- projection
    def _project(self, t, y, tol, max_iter, state=None):
        """y projected onto Φ_c = 0 and C ż = −Φt_c when either violation exceeds tol; None if not.

        ``state``: :meth:`_state` at y when the caller has it."""
        if not len(self.crows):
            return None
        tree, dyn = self.tree, self.dyn
        nzq, nz = tree.nzq, tree.nz
        rows = dyn.model_rows[self.crows]
        zq, zd, q, v, b, _, rc = self._state(t, y) if state is None else state
        changed = False
        for _ in range(max_iter):
            phi = dyn.phi(q, t, self.angles)[rows]
            if np.max(np.abs(phi)) <= tol * (0.01 if changed else 1.0):
                break
            ev = dyn.evaluate(q, np.zeros(dyn.nv), t, self.refs, with_gamma=False, with_forces=False)
            C = self._closure(ev, b, rc)
            C = C.toarray() if sps.issparse(C) else C
            zq = self.kin.retract(zq, -np.linalg.lstsq(C, phi, rcond=None)[0])
            self.nfactor += 1
            changed = True
            q, _, jr, frames = self.kin.absolute(zq)
            b = self.kin.columns(frames, jr)
            rc = jr + np.einsum("bij,bj->bi", frames["R"], self._com)  # C's lever arms at the new pose
        y2 = y.copy()
        if changed:
            y2[:nzq] = zq
            zq, zd, q, v, b, _, rc = self._state(t, y2)
        ev = dyn.evaluate(q, v, t, self.refs, with_gamma=False, with_forces=False)
        C = self._closure(ev, b, rc)
        r = C @ zd + ev.phit[self.crows]
        if np.max(np.abs(r)) > tol:
            C = C.toarray() if sps.issparse(C) else C
            y2[nzq: nz + nzq] = zd - np.linalg.lstsq(C, r, rcond=None)[0]
            self.nfactor += 1
            changed = True
        if not changed:
            return None
        self.nproject += 1
        return y2

    def _tol(self):
        tol = self.options.get("tol")
        return tol if tol is not None else float(np.max(self.atol))

    def accept(self, t, y):
        """After an accepted step: angle windings, the sparse partition's renewal, projection."""
        state = self._state(t, y)
        self._update_windings(state[2], v=state[3])
        self._zq_ref = y[: self.tree.nzq].copy()
        if self.sparse and self._partition is not None and len(self._partition[1]):
            self._check_partition(t, y)
        if self._fast is not None:
            y2, changed = self._fast.project(t, y, self._tol(), self.options["max_iter"])
            if not changed:
                return None
            self.nproject += 1
            return y2
        return self._project(t, y, self._tol(), self.options["max_iter"], state)

    def _compiled_loop_applies(self, times, rtol, atol, integrator="DOP853"):
        """True when the compiled tree module runs the whole ``RK4`` or ``DOP853`` integration
        (option ``compiled_loop``; nothing of ẏ evaluated in Python)."""
        fast = self._fast
        tolerances = integrator == "RK4" or (np.ndim(rtol) == 0 and np.ndim(atol) == 0 and np.isfinite(rtol)
                                             and atol >= 0)
        return bool(integrator in ("RK4", "DOP853") and self.options.get("compiled_loop", False)
                    and fast is not None and fast.self_contained and tolerances and times[-1] > times[0]
                    and np.all(np.diff(times) >= 0))

    def _run_compiled(self, times, y0, rec, rtol, atol, integrator="DOP853", dt=None):
        """RK4 (step ``dt`` s, None: :func:`.contract.default_dt`) or DOP853 in one compiled loop of
        the tree module (:class:`.fast_tree.FastTree`): the steps, the projection onto the closure
        after each, the angle bookkeeping and the watch for singular configurations (crossed by
        :meth:`_cross_singular` between compiled runs), as the Python loops do them."""
        from . import _dop853 as D
        from . import _rk4 as R4
        from .contract import default_dt

        fast = self._fast
        ptol, max_iter = self._tol(), int(self.options["max_iter"])
        rec.notes.append(f"{integrator} in the compiled loop")
        rec.compiled_loop = True
        if integrator == "RK4":
            h_target = dt if dt else default_dt(times)

            def loop(part, y, meas, zone):
                return fast.rk4(part, y, h_target, ptol, max_iter, meas_ref=meas, zone=zone)
        else:
            rtol = max(float(rtol), 100 * np.finfo(float).eps)

            def loop(part, y, meas, zone):
                return fast.dop853(part, y, rtol, atol, ptol, max_iter, meas_ref=meas, zone=zone)
        k0 = 0
        while True:
            meas = self._meas_ref if len(self.model.joint_measures) else None
            part = times[k0:]
            status, Y, snaps, stats, y_end = loop(part, y0, meas, self.singular_zone if self.dyn.has_loops else 0.0)
            self.nfev += int(stats[D.S_NFEV])
            self.nfactor += int(stats[D.S_NFEV])
            self.nproject += int(stats[D.S_NPROJECT])
            rec.nsteps += int(stats[D.S_NSTEPS])
            for j in range(1, int(stats[D.S_K])):
                mref = fast.restore(snaps[j])
                if meas is not None:
                    self._meas_ref = mref
                rec.record(part[j], Y[j], output_state=True)  # the loop projected the frames
            self._zq_ref = y_end[: self.tree.nzq].copy()
            if status != D.SINGULAR:
                break
            k = k0 + int(stats[D.S_K])
            mref = fast.restore(fast.dd.copy())  # the references at the stop
            if len(self.model.joint_measures):
                self._meas_ref = mref
            h_hint = float(stats[R4.S_STEP]) if integrator == "RK4" else np.inf
            t_x, y_x, k = self._cross_singular(float(stats[D.S_T]), y_end, rec, times, k, h_hint)
            if k >= len(times):
                return
            times = np.concatenate([[t_x], times[k:]])
            k0, y0 = 0, y_x
        t_fail, t_eval = stats[D.S_T_FAIL], stats[D.S_T_EVAL]
        if status == D.NOT_FINITE:
            rec.fail(t_fail, f"the equations of motion could not be solved near t = {t_fail:.6g} s: the reduced "
                             f"mass matrix is singular or the accelerations are not finite at t = {t_eval:.6g} s"
                             + (step_too_large(stats[R4.S_STEP]) if integrator == "RK4" else ""))
        elif status == D.NAN_STATE:
            rec.fail(t_fail, f"the solution became NaN/inf at t = {t_fail:.6g} s"
                     + (step_too_large(stats[R4.S_STEP]) if integrator == "RK4" else ""))
        elif status == D.STEP_COLLAPSE:
            rec.fail(t_fail, f"the integrator {integrator} failed after t = {t_fail:.6g} s: Required step size is less "
                             "than spacing between numbers. (step size collapse: the model is stiff, singular or blows "
                             "up)")

    def _check_partition(self, t, y):
        """Drop the sparse path's partition (chosen again at the next evaluation) when the pivots
        of C_rd at the last evaluation fell below ``rcond`` times those at its choice."""
        if self._quality < self.options["rcond"] * self._partition_quality:
            self._partition = None

    def output_state(self, t, y):
        """The output frame's state, projected onto the closure (the integrator's state is kept)."""
        new = self._project(t, y, self._tol(), self.options["max_iter"])
        return y if new is None else new

    def onto_joints(self, t, y):
        """y projected onto the closure to the crossing's Newton tolerance."""
        from .contract import CROSSING_NEWTON_TOL

        new = self._project(t, y, CROSSING_NEWTON_TOL, 10)
        return y if new is None else new

    def singular_measure(self, t, y):
        """How near a singular configuration the state y is (:meth:`closure_singularity` of the
        closure Jacobian C at y's positions; compiled when the fast path runs)."""
        if self._fast is not None:
            return self._fast.singularity(t, y)
        _, _, q, _, b, _, rc = self._state(t, y)  # a kinematic measure: the velocities play no part
        ev = self.dyn.evaluate(q, np.zeros(self.dyn.nv), t, self.refs, with_gamma=False, with_forces=False)
        C = self._closure(ev, b, rc)
        return self.closure_singularity(C.toarray() if sps.issparse(C) else C)

    def singular_measure_at(self, t, q):
        """:meth:`singular_measure` at the absolute coordinates q (nq,) (the crossing's exit test),
        0 where it cannot be evaluated."""
        try:
            y = np.concatenate([self.kin.relative(q, self._zq_ref), np.zeros(self.tree.nz + 1)])
            return self.singular_measure(t, y)
        except (_Failure, np.linalg.LinAlgError):
            return 0.0

    def closure_singularity(self, C):
        """The singular measure of the closure Jacobian C (m, nz): the smallest eigenvalue, after the
        redundant rows' zeros, of Dr C W Cᵀ Dr, Dr and W the constant row and column weights of
        :meth:`_closure_weights` (rows in their units, an angle against a slide by the lever arm).

        The tree joints hold identically in z, so Jv loses rank exactly where C does: the measure
        is about the square of C's smallest relative singular value that is not a redundancy, of
        m × m rows instead of the absolute measure's (:meth:`.equations.Dynamics.singularity`) all
        the joints' rows. Its scaling is constant: a closure row that shrinks as the loop
        flattens (the N-four-bar's) must not be scaled back up. Order 1 far from a singular
        configuration, → 0 at one; the compiled path's :func:`._tree_kernels.singularity` is the
        same."""
        m = C.shape[0]
        if m == 0:
            return 1.0
        Cs = C * self.row_weight[:, None]
        S = (Cs * self.col_weight[None, :]) @ Cs.T
        live = np.diag(S) > 0
        if not np.any(live):
            return 1.0
        eig = np.linalg.eigvalsh(S[np.ix_(live, live)])
        r = len(self.dyn.redundant) - int(np.sum(~live))
        return float(eig[min(max(r, 0), len(eig) - 1)])


def _spd_solve(A, b, t):
    try:
        return cho_solve(cho_factor(A), b)  # the bare LAPACK wrappers: scipy's checks cost more than a small solve
    except (np.linalg.LinAlgError, ValueError):
        raise _Failure(f"the reduced mass matrix is singular at t = {t:.6g} s (the closure equations leave "
                       "no independent coordinates, or a lock-up)") from None
