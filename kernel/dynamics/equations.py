"""The constrained equations of motion in absolute coordinates (index 1), evaluated fast.

Variables (see :mod:`.mass`): coordinates q (nq,) = [r, p] per moving body, velocities
v (nv = 6 nmov,) = [v_c, ω] per moving body (com velocity and angular velocity, world).
With q̇ = B v and q̈ = B v̇ + Ḃ v, the kernel's generated constraint rows (all but the
Euler-parameter normalisation rows, which v satisfies identically) become

    velocity       Jv v = −Φt                    Jv = Φq B        (nc × nv)
    acceleration   Jv v̇ = γ̂                     γ̂ = γ − Φq Ḃ v

and the equations of motion are

    M v̇ + Jvᵀ λ = f,     f = [F, n − ω × J ω] per body

solved by the Schur complement of the block-diagonal M (cheap M⁻¹):

    S λ = Jv M⁻¹ f − γ̂,   S = Jv M⁻¹ Jvᵀ,     v̇ = M⁻¹ (f − Jvᵀ λ)

with the rows restricted to an independent set (redundant rows of a planar loop built in
3-D are left out; they hold because they are combinations of the kept rows). Dense
Cholesky for small models, SuperLU on the sparse S beyond :data:`DENSE_LIMIT` velocities.
The constraint force on the bodies is −Jvᵀ λ: a force at each com and a moment about it.

Jv is never formed from Φq: every constraint group's generated Jacobian block
(n, neq, slots, 7) is multiplied by the slot bodies' B (7 × 6) in one ``einsum`` and
scattered into a fixed pattern by one ``bincount``.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sps
from scipy.sparse.linalg import splu

from ...errors import MechanismError
from ..analysis import rank_info
from ..system import System
from .forces import ForceElements
from .mass import cross, accelerations_to_qdd, body_state, compile_mass, kinetic_energy, rates_from_velocities

__all__ = ["Dynamics", "Evaluation", "DENSE_LIMIT"]

#: LAPACK's Cholesky factorisation and solve, called directly: scipy.linalg's cho_factor and
#: cho_solve wrap them in ≈ 20 µs of argument handling a call, paid twice per evaluation
_potrf, _potrs = sla.lapack.get_lapack_funcs(("potrf", "potrs"), dtype=np.float64)

#: entries of the band (rows × (bandwidth + 1)) up to which the rank analysis factorises in
#: numpy (≈ 60 ms at most) rather than compiling numba's kernel into the run
SMALL_BAND = 20000

#: velocities (6 per moving body) up to which dense linear algebra is used. 120 as in
#: :mod:`..linalg`: on the shared 2-core machine a threaded OpenBLAS made one dense
#: evaluation of the 40-plate lattice (240 velocities, 156 rows) 1.2 ms with one thread
#: but 16 ms with two, and SuperLU (no threaded BLAS) is as fast as the one-thread LAPACK
DENSE_LIMIT = 120


class Evaluation:
    """Everything computed at one (q, v, t): body state, Jv (kept rows), γ̂, Φt, f.

    Attributes: ``bs`` (:class:`~.mass.BodyState`), ``J`` (all rows; dense (nc, nv) or
    CSR), ``Jr`` (kept rows), ``gamma``, ``phit`` (nc,), ``f`` (nv,), ``power`` (W, of
    the non-conservative force elements), ``Minv_f`` (nv,); ``factor()`` factorises S.
    """

    __slots__ = ("dyn", "t", "q", "v", "bs", "J", "Jr", "gamma", "phit", "f", "power", "X", "Minv_f",
                 "_chol", "_lu", "_scale", "Jg")

    def __init__(self):
        self._chol = None
        self._lu = None
        self.X = None

    def minv_jt(self):
        """X = Jr M⁻¹ (rows: kept constraints), i.e. Xᵀ = M⁻¹ Jrᵀ."""
        if self.X is None:
            self.X = self.dyn._minv_rows(self.Jr, self.bs)
        return self.X

    def factor(self):
        """Factorise S = Jr M⁻¹ Jrᵀ, Jacobi-scaled (the diagonal of S spans many orders of
        magnitude for slender parts); raises numpy's LinAlgError if it is singular."""
        dyn = self.dyn
        X = self.minv_jt()
        if self._lu is not None or self._chol is not None:
            return self
        S = self.Jr @ X.T
        d = S.diagonal() if dyn.sparse else np.diag(S).copy()
        if d.size and not np.all(d > 0):
            raise np.linalg.LinAlgError("singular constraint matrix (a zero row)")
        self._scale = 1.0 / np.sqrt(d)
        if dyn.sparse:
            Ds = sps.diags(self._scale)
            self._lu = splu((Ds @ S @ Ds).tocsc(), permc_spec="MMD_AT_PLUS_A", options=dict(SymmetricMode=True))
            u = np.abs(self._lu.U.diagonal())
            if u.size and (not np.all(np.isfinite(u)) or u.min() <= 1e-12 * u.max()):
                raise np.linalg.LinAlgError("singular constraint matrix")
        else:
            Ss = S * self._scale[:, None] * self._scale[None, :]
            c, info = _potrf(Ss, lower=False, clean=False)  # sla.cho_factor's LAPACK call, without its wrapper
            if info != 0:
                raise np.linalg.LinAlgError(f"singular constraint matrix (leading minor {info} not positive definite)")
            self._chol = (c, False)
            c = np.diag(self._chol[0])
            if c.size and (not np.all(np.isfinite(c)) or c.min() ** 2 <= 1e-12):
                raise np.linalg.LinAlgError("singular constraint matrix")
        return self

    def solve_S(self, b):
        """S⁻¹ b (b over the kept rows; also (kept, k) arrays)."""
        self.factor()
        s = self._scale if b.ndim == 1 else self._scale[:, None]
        if self.dyn.sparse:
            return s * self._lu.solve(s * b)
        if not len(b):  # no kept rows (f2py refuses empty arrays)
            return s * b
        x, info = _potrs(self._chol[0], s * b, lower=False)  # sla.cho_solve's LAPACK call
        if info != 0:
            raise ValueError(f"potrs: illegal argument {-info}")
        return s * x


class Dynamics:
    """The constrained equations of motion of a compiled model (see the module docstring).

    Parameters
    ----------
    model : :class:`~cadmotion.kernel.model.Model`, with Euler parameters.

    Raises
    ------
    MechanismError : missing/invalid mass properties or force elements, or a model
        compiled with another orientation parametrisation.
    """

    def __init__(self, model):
        if model.parametrization.name != "euler-parameters":
            raise MechanismError(
                f"dynamic analysis needs Euler parameters; the model uses {model.parametrization.name!r}",
                hint="compile the model with parametrization='euler-parameters' (the default)",
            )
        self.model = model
        self.system = System(model)
        self.mass = compile_mass(model)
        self.forces = ForceElements(model, self.mass)
        nmov = self.mass.nmov
        self.nmov = nmov
        self.nq = model.nq
        self.nv = 6 * nmov
        self.sparse = self.nv > DENSE_LIMIT
        groups = []
        model_rows = []
        row = 0
        for gi, g in enumerate(model.groups):
            if g.kind == "normalize":
                continue
            n, neq = g.n, g.neq
            ns = g.bodies.shape[1]
            rows = row + neq * np.arange(n)
            model_rows.append((g.row[:, None] + np.arange(neq)[None, :]).reshape(-1))
            R = np.broadcast_to((rows[:, None] + np.arange(neq)[None, :])[:, :, None, None], (n, neq, ns, 6))
            C = np.broadcast_to((6 * g.bodies[:, None, :, None] + np.arange(6)[None, None, None, :]), (n, neq, ns, 6))
            moving = np.broadcast_to((g.bodies < nmov)[:, None, :, None], (n, neq, ns, 6))
            groups.append(dict(gi=gi, g=g, n=n, neq=neq, ns=ns, row0=row, R=R.reshape(-1), C=C.reshape(-1),
                               moving=moving.reshape(-1), timed=bool(g.functions)))
            row += n * neq
        self.nc = row
        self.model_rows = np.concatenate(model_rows) if model_rows else np.zeros(0, int)
        self.row_labels = tuple(model.row_labels[r] for r in self.model_rows)
        self.groups = groups
        self.timed = any(gr["timed"] for gr in groups)
        # fixed Jv pattern: flat dense index, or CSR slots
        nc, nv = self.nc, self.nv
        all_R = np.concatenate([gr["R"][gr["moving"]] for gr in groups]) if groups else np.zeros(0, int)
        all_C = np.concatenate([gr["C"][gr["moving"]] for gr in groups]) if groups else np.zeros(0, int)
        keys = np.unique(all_R * max(nv, 1) + all_C)
        self._csr_indices = (keys % max(nv, 1)).astype(np.int32)
        self._csr_indptr = np.searchsorted(keys // max(nv, 1), np.arange(nc + 1)).astype(np.int32)
        self._nnz = len(keys)
        for gr in groups:
            m = gr["moving"]
            flat = gr["R"][m] * max(nv, 1) + gr["C"][m]
            gr["dense_idx"] = flat
            gr["slot"] = np.searchsorted(keys, flat)
        self._index_all = np.concatenate([gr["slot" if self.sparse else "dense_idx"] for gr in groups]) \
            if groups else np.zeros(0, int)
        self._gravity_f = self.forces.gravity_force
        self._zeros_W = {gr["gi"]: np.zeros((gr["n"], gr["g"].n_angles)) for gr in groups}
        self._qd_fixed = np.zeros(len(model.q_fixed))
        self.rows = np.arange(nc)  # kept (independent) rows; set by set_rows
        self.redundant = np.zeros(0, int)
        #: what the assembly at the run's start said: the redundant equations the joint data leaves violated
        #: (slightly inconsistent CAD frames; not enforced), else ""
        self.assembly_message = ""
        # block-diagonal M / M⁻¹ pattern: translational diagonal + rotational 3x3 blocks
        b = np.arange(nmov)
        rt = (6 * b[:, None] + np.arange(3)[None, :]).reshape(-1)
        rr = (6 * b[:, None, None] + 3 + np.arange(3)[None, :, None]) + 0 * np.arange(3)[None, None, :]
        cr = (6 * b[:, None, None] + 3 + np.arange(3)[None, None, :]) + 0 * np.arange(3)[None, :, None]
        self._minv_rows_idx = np.concatenate([rt, rr.reshape(-1)])
        self._minv_cols_idx = np.concatenate([rt, cr.reshape(-1)])

    @property
    def has_loops(self):
        """True if the constraint graph (parts as nodes, the fixed ones merged into one, an
        edge per joint, coupler or driver instance joining two parts) has a cycle: only then
        can the constraint Jacobian lose rank (a singular configuration); a tree's cannot."""
        if not hasattr(self, "_has_loops"):
            parent = list(range(self.nmov + 1))  # node nmov: every fixed part

            def root(a):
                while parent[a] != a:
                    parent[a] = parent[parent[a]]
                    a = parent[a]
                return a

            loops = False
            for gr in self.groups:
                for inst in np.minimum(gr["g"].bodies, self.nmov):
                    nodes = sorted(set(int(b) for b in inst))
                    for a, b in zip(nodes[:-1], nodes[1:]):
                        ra, rb = root(a), root(b)
                        if ra == rb:
                            loops = True
                        parent[ra] = rb
            self._has_loops = loops
        return self._has_loops

    # ------------------------------------------------------------------ rows
    def set_rows(self, J, bs=None):
        """Choose the independent rows of Jv; returns (independent, redundant) row indices.

        The number r of redundant rows comes from the rank-revealing analysis
        (:func:`~cadmotion.kernel.analysis.rank_info`: pivoted QR, or Lanczos for large
        sparse Jacobians). Small models keep its rows. Then S = Jv M⁻¹ Jvᵀ is factorised by
        a band Cholesky in reverse Cuthill–McKee order that drops a row when its pivot falls
        below ``drop_tol`` times its own diagonal; ``drop_tol`` is placed in the gap between
        the r-th and (r+1)-th smallest pivot ratios, so exactly r rows go (round-off around a
        long loop can leave a redundant row's ratio at 1e-8 while a genuine row of a slender
        part sits at 1e-5). Large sparse models keep the rows it leaves — deterministic and
        linear in the size of a chain — and the compiled path uses the same ``drop_tol``.
        """
        info = rank_info(J)
        rows, red = info.independent, info.redundant
        if bs is not None and self.nc:
            b_rows, b_red, self.drop_tol = self._band_rank(J, bs, len(info.redundant))
            if self.sparse:
                rows, red = b_rows, b_red
        self.rows = np.asarray(rows, dtype=np.int64)
        self.redundant = np.asarray(red, dtype=np.int64)
        return self.rows, self.redundant

    drop_tol = 1e-10

    def _band_rank(self, J, bs, r):
        from scipy.sparse.csgraph import reverse_cuthill_mckee

        J = sps.csr_matrix(J)
        S = sps.csr_matrix(J @ sps.csr_matrix(self.mass_matrix(bs, inverse=True)) @ J.T)
        order = np.asarray(reverse_cuthill_mckee(abs(S).tocsr(), symmetric_mode=True), dtype=np.int64)
        P = S[order][:, order].tocoo()
        keep = P.row >= P.col
        i, j, val = P.row[keep], P.col[keep], P.data[keep]
        m = S.shape[0]
        bw = int(np.max(i - j)) if len(i) else 0
        Lb0 = np.zeros((m, bw + 1))
        np.add.at(Lb0, (i, i - j), val)
        band_cholesky = _band_cholesky_numpy  # the same algorithm, a row at a time: ≈ 3 µs per entry
        if m * (bw + 1) > SMALL_BAND:  # large: compiled (≈ 1 s to compile once, then cached)
            try:
                from ._kernels import band_cholesky
            except ImportError:  # no numba
                pass
        tol = 1e-10
        for _ in range(3):
            Lb, dropped, ratio = Lb0.copy(), np.zeros(m, dtype=bool), np.zeros(m)
            n = band_cholesky(Lb, m, bw, tol, dropped, ratio, np.zeros(m))
            if n == r:
                break
            srt = np.sort(ratio)
            lo = srt[r - 1] if r > 0 else 0.0
            hi = srt[r] if r < m else 1.0
            tol = float(np.sqrt(max(lo, 1e-300) * hi)) if lo > 0 else 0.01 * hi
        red = np.sort(order[dropped])
        return np.setdiff1d(np.arange(m), red), red, tol
    # ------------------------------------------------------------------ evaluation
    def unit_parameters(self, q):
        """q (nq,) with unit Euler parameters (q itself where they are within 1e-14 of unit length): the
        equations are evaluated there, so they do not depend on |p| (v leaves |p| constant only up to
        integration error; nothing feeds that error back)."""
        Qb = q.reshape(self.nmov, 7)
        norm = np.sqrt(np.einsum("bi,bi->b", Qb[:, 3:], Qb[:, 3:]))
        if not np.any(np.abs(norm - 1.0) > 1e-14):
            return q
        Qb = Qb.copy()
        Qb[:, 3:] /= norm[:, None]
        return Qb.reshape(-1)

    def _constraint_terms(self, ev, with_gamma):
        """ev.J, ev.Jr (the kept rows), ev.gamma (with_gamma) and ev.phit of the joints at ev's (q, v, t)."""
        model, nmov, q, v, t, bs = self.model, self.nmov, ev.q, ev.v, ev.t, ev.bs
        qf = np.concatenate([q, model.q_fixed])
        B = np.zeros((model.nb, 7, 6))
        B[:, 0, 0] = B[:, 1, 1] = B[:, 2, 2] = 1.0
        rho, w = bs.rho[:nmov], bs.w[:nmov]
        B[:nmov, 0, 4], B[:nmov, 0, 5] = -rho[:, 2], rho[:, 1]
        B[:nmov, 1, 3], B[:nmov, 1, 5] = rho[:, 2], -rho[:, 0]
        B[:nmov, 2, 3], B[:nmov, 2, 4] = -rho[:, 1], rho[:, 0]
        B[:nmov, 3:, 3:] = 0.5 * bs.E.transpose(0, 2, 1)
        B[nmov:] = 0.0
        if with_gamma:
            qd = rates_from_velocities(bs, v, nmov)
            qdf = np.concatenate([qd, self._qd_fixed])
            bdot = np.zeros((model.nb, 7))
            wxr = cross(w, rho)
            bdot[:nmov, :3] = -cross(w, wxr)
            bdot[:nmov, 3:] = -0.25 * np.sum(w * w, 1)[:, None] * bs.p[:nmov]
            gamma = np.empty(self.nc)
        phit = np.zeros(self.nc)
        values = []
        system = self.system
        for gr in self.groups:
            g = gr["g"]
            Q = qf[g.gather]
            Fv = system._F(gr["gi"], g, t)
            W = self._zeros_W[gr["gi"]]
            n, neq, ns = gr["n"], gr["neq"], gr["ns"]
            Jg = g.code.jac(Q, g.markers, g.params, Fv, W).reshape(n, neq, ns, 7)
            Bg = B[g.bodies]
            values.append(np.einsum("nesk,nskl->nesl", Jg, Bg).reshape(-1)[gr["moving"]])
            r0 = gr["row0"]
            if with_gamma:
                gam = g.code.gamma(Q, qdf[g.gather], g.markers, g.params, Fv, W)
                gam = gam - np.einsum("nesk,nsk->ne", Jg, bdot[g.bodies])
                gamma[r0: r0 + n * neq] = gam.reshape(-1)
            if gr["timed"]:
                phit[r0: r0 + n * neq] = g.code.phit(Q, g.markers, g.params, Fv, W).reshape(-1)
        data = np.bincount(self._index_all, weights=np.concatenate(values) if values else np.zeros(0),
                           minlength=self._nnz if self.sparse else self.nc * self.nv)
        if self.sparse:
            J = sps.csr_matrix((data, self._csr_indices, self._csr_indptr), shape=(self.nc, self.nv))
            ev.J = J
            ev.Jr = J[self.rows] if len(self.redundant) else J
        else:
            J = data.reshape(self.nc, self.nv)
            ev.J = J
            ev.Jr = J[self.rows] if len(self.redundant) else J
        ev.gamma = gamma if with_gamma else None
        ev.phit = phit

    def evaluate(self, q, v, t, refs, *, with_gamma=True, with_forces=True, with_constraints=True):
        """One :class:`Evaluation` at (q, v, t); ``with_constraints`` False leaves out the joints' Jacobian,
        γ and Φt (``J``, ``Jr``, ``gamma`` None, ``phit`` zeros)."""
        model = self.model
        ev = Evaluation()
        nmov = self.nmov
        q = self.unit_parameters(q)
        ev.dyn, ev.t, ev.q, ev.v = self, t, q, v
        bs = body_state(model, self.mass, q, v)
        ev.bs = bs
        if with_constraints:
            self._constraint_terms(ev, with_gamma)
        else:  # the forces alone (an open tree in joint coordinates has no closure row to evaluate)
            ev.J = ev.Jr = ev.gamma = None
            ev.phit = np.zeros(self.nc)
        if with_forces:
            F = np.zeros((model.nb, 3))
            F[:nmov] = self._gravity_f
            N = np.zeros((model.nb, 3))
            F, N, power = self.forces.evaluate(bs, t, refs, F, N)
            w = bs.w[:nmov]
            Jw = np.einsum("bij,bj->bi", bs.J, w)
            f = np.empty((nmov, 6))
            f[:, :3] = F[:nmov]
            f[:, 3:] = N[:nmov] - cross(w, Jw)
            ev.f = f.reshape(-1)
            ev.power = power
            Mf = np.empty((nmov, 6))
            Mf[:, :3] = f[:, :3] * self.mass.body_mass_inv[:, None]
            Mf[:, 3:] = np.einsum("bij,bj->bi", bs.Jinv, f[:, 3:])
            ev.Minv_f = Mf.reshape(-1)
        return ev

    def _minv_rows(self, Jr, bs):
        """Jr M⁻¹ for the kept rows (dense array or CSR)."""
        nmov = self.nmov
        if self.sparse:
            return (Jr @ self.mass_matrix(bs, inverse=True)).tocsr()
        m = Jr.shape[0]
        J3 = Jr.reshape(m, nmov, 2, 3)
        X = np.empty((m, nmov, 2, 3))
        X[:, :, 0, :] = J3[:, :, 0, :] * self.mass.body_mass_inv[None, :, None]
        X[:, :, 1, :] = np.einsum("mbj,bij->mbi", J3[:, :, 1, :], bs.Jinv)
        return X.reshape(m, self.nv)

    def mass_matrix(self, bs, inverse=False):
        """M (or M⁻¹) as a dense array, or CSR on the sparse path, (nv, nv)."""
        if inverse:
            data = np.concatenate([np.repeat(self.mass.body_mass_inv, 3), bs.Jinv.reshape(-1)])
        else:
            data = np.concatenate([np.repeat(self.mass.body_mass, 3), bs.J.reshape(-1)])
        if self.sparse:
            return sps.csr_matrix((data, (self._minv_rows_idx, self._minv_cols_idx)), shape=(self.nv, self.nv))
        M = np.zeros((self.nv, self.nv))
        M[self._minv_rows_idx, self._minv_cols_idx] = data
        return M

    def minv(self, bs, x):
        """M⁻¹ x for x (nv,)."""
        nmov = self.nmov
        X = x.reshape(nmov, 6)
        out = np.empty((nmov, 6))
        out[:, :3] = X[:, :3] * self.mass.body_mass_inv[:, None]
        out[:, 3:] = np.einsum("bij,bj->bi", bs.Jinv, X[:, 3:])
        return out.reshape(-1)

    def mass_times(self, bs, x):
        """M x for x (nv,)."""
        nmov = self.nmov
        X = x.reshape(nmov, 6)
        out = np.empty((nmov, 6))
        out[:, :3] = X[:, :3] * self.mass.body_mass[:, None]
        out[:, 3:] = np.einsum("bij,bj->bi", bs.J, X[:, 3:])
        return out.reshape(-1)

    def accelerations(self, ev, extra=None):
        """v̇ (nv,) and λ (kept rows) from M v̇ + Jrᵀ λ = f, Jr v̇ = γ̂ + extra."""
        rhs_c = ev.gamma[self.rows] if len(self.redundant) else ev.gamma
        if extra is not None:
            rhs_c = rhs_c + extra
        X = ev.minv_jt()
        if len(rhs_c) == 0:
            return ev.Minv_f.copy(), np.zeros(0)
        lam = ev.solve_S(X @ ev.f - rhs_c)
        vd = ev.Minv_f - X.T @ lam
        return vd, lam

    @property
    def length_scale(self):
        """ℓ (m): the RMS distance of the moving parts' centres of mass (and the fixed parts'
        origins) from their centroid at the initial pose; weighs angular against linear
        velocities in :meth:`singularity`."""
        if not hasattr(self, "_length_scale"):
            from .mass import body_state

            bs = body_state(self.model, self.mass, self.model.q0, np.zeros(self.nv))
            pts = np.vstack([bs.rc[: self.nmov], np.reshape(self.model.q_fixed, (-1, 7))[:, :3]])
            ell = float(np.sqrt(np.mean(np.sum((pts - pts.mean(0)) ** 2, axis=1)))) if len(pts) > 1 else 0.0
            self._length_scale = ell if ell > 0 else 1.0
        return self._length_scale

    def singularity(self, ev):
        """How near a singular configuration ev's state is: of the Jacobi-scaled
        Jv W Jvᵀ over all rows, W = diag(1, 1, 1, 1/ℓ², 1/ℓ², 1/ℓ²) per body (ℓ:
        :attr:`length_scale`), the smallest eigenvalue after the redundant rows' zeros —
        a purely kinematic measure, about the square of the smallest relative singular value
        of Jv that is not a redundancy, so that light or slender parts do not read as
        singular, whichever rows happen to be kept. 1 far from a singular configuration,
        → 0 at one."""
        J = ev.J.toarray() if sps.issparse(ev.J) else ev.J
        if J.shape[0] == 0:
            return 1.0
        D = np.tile(np.r_[np.ones(3), np.full(3, 1.0 / self.length_scale ** 2)], self.nmov)
        S = (J * D[None, :]) @ J.T
        d = np.sqrt(np.diag(S))
        live = d > 0
        S = S[np.ix_(live, live)] / d[live][:, None] / d[live][None, :]
        eig = np.linalg.eigvalsh(S)
        r = len(self.redundant) - int(np.sum(~live))
        return float(eig[min(max(r, 0), len(eig) - 1)])

    def velocity_residual(self, ev, v=None):
        """Jv v + Φt over all rows (nc,)."""
        v = ev.v if v is None else v
        return ev.J @ v + ev.phit

    def project_velocities(self, ev, v):
        """The velocity closest to v in the kinetic-energy metric with Jr v = −Φt."""
        r = ev.Jr @ v + (ev.phit[self.rows] if len(self.redundant) else ev.phit)
        if r.size == 0:
            return v
        X = ev.minv_jt()
        return v - X.T @ ev.solve_S(r)

    def phi(self, q, t, angles):
        """Φ over all model rows (normalisation rows included)."""
        return self.system.phi(q, t, angles)

    # ------------------------------------------------------------------ multipliers, reactions
    def full_multipliers(self, ev, lam_r):
        """Minimum-norm multipliers over all rows from the kept-row solution ``lam_r``.

        All λ with Jvᵀ λ = Jrᵀ λ_r differ by the left null space of Jv, spanned by one
        vector per redundant row k: e_k − c_k on the kept rows, with Jv[k] = c_kᵀ Jr.
        The minimum-norm λ is λ0 − N (NᵀN)⁻¹ Nᵀ λ0. Returns (λ (nc,), N (nc, r)).
        """
        lam = np.zeros(self.nc)
        lam[self.rows] = lam_r
        r = len(self.redundant)
        if r == 0:
            return lam, np.zeros((self.nc, 0))
        Jk = ev.J[self.redundant]
        JkT = Jk.T.toarray() if sps.issparse(Jk) else np.ascontiguousarray(Jk.T)
        C = ev.solve_S(ev.minv_jt() @ JkT)  # c_k = S⁻¹ Jr M⁻¹ Jkᵀ, shape (kept, r)
        N = np.zeros((self.nc, r))
        N[self.redundant, np.arange(r)] = 1.0
        N[self.rows] = -C
        lam = lam - N @ np.linalg.solve(N.T @ N, N.T @ lam)
        return lam, N

    def constraint_wrenches(self, ev, lam):
        """Per group instance and slot the constraint wrench on the slot body.

        Returns a list (one per group) of arrays (n, slots, 6): [force, moment about the
        com] in world axes, from −Jvᵀ λ restricted to the instance's rows.
        """
        out = []
        q = ev.q
        qf = np.concatenate([q, self.model.q_fixed])
        bs = ev.bs
        B = np.zeros((self.model.nb, 7, 6))
        B[:, 0, 0] = B[:, 1, 1] = B[:, 2, 2] = 1.0
        rho = bs.rho
        B[:, 0, 4], B[:, 0, 5] = -rho[:, 2], rho[:, 1]
        B[:, 1, 3], B[:, 1, 5] = rho[:, 2], -rho[:, 0]
        B[:, 2, 3], B[:, 2, 4] = -rho[:, 1], rho[:, 0]
        E_all = np.zeros((self.model.nb, 3, 4))
        from .mass import E_matrix

        E_all[:] = E_matrix(bs.p)
        B[:, 3:, 3:] = 0.5 * E_all.transpose(0, 2, 1)
        for gr in self.groups:
            g = gr["g"]
            Q = qf[g.gather]
            n, neq, ns = gr["n"], gr["neq"], gr["ns"]
            Jg = g.code.jac(Q, g.markers, g.params, self.system._F(gr["gi"], g, ev.t),
                            self._zeros_W[gr["gi"]]).reshape(n, neq, ns, 7)
            Jvg = np.einsum("nesk,nskl->nesl", Jg, B[g.bodies])
            lg = lam[gr["row0"]: gr["row0"] + n * neq].reshape(n, neq)
            out.append(-np.einsum("nesl,ne->nsl", Jvg, lg))
        return out

    # ------------------------------------------------------------------ conversions
    def qdd(self, bs, v, vd):
        """q̈, shape (nq,), of the velocities v and accelerations v̇, shape (nv,), at the body state ``bs``."""
        return accelerations_to_qdd(bs, v, vd, self.nmov)

    def qd(self, bs, v):
        """q̇, shape (nq,), of the velocities v, shape (nv,) (m/s, rad/s in the world frame), at ``bs``."""
        return rates_from_velocities(bs, v, self.nmov)

    def kinetic(self, bs):
        """Kinetic energy (J) of the moving bodies at the body state ``bs``."""
        return kinetic_energy(self.mass, bs)


def _band_cholesky_numpy(Lb, m, bw, drop_tol, dropped, ratio, redundant):
    """numpy version of :func:`._kernels.band_cholesky` (rank-revealing band Cholesky)."""
    n = 0
    for j in range(m):
        k0 = max(0, j - bw)
        row = Lb[j, 1: j - k0 + 1][::-1]  # L[j, k0..j-1]
        diag = Lb[j, 0]
        s = diag - row @ row
        low = not s > drop_tol * diag
        if redundant[j]:  # (kept by its pivot: s > 0 and diag > 0)
            ratio[j] = 0.0 if low else s / diag
            low = True
        else:
            ratio[j] = s / diag if diag > 0 else 0.0
        i1 = min(m, j + bw + 1)
        if low:
            dropped[j] = True
            n += 1
            Lb[j, :] = 0.0
            Lb[j, 0] = 1.0
            for i in range(j + 1, i1):
                Lb[i, i - j] = 0.0
            continue
        d = np.sqrt(s)
        Lb[j, 0] = d
        for i in range(j + 1, i1):
            ki = max(0, i - bw)
            k_lo = max(ki, k0)
            a = Lb[i, i - j + 1: i - k_lo + 1][::-1] if j > k_lo else np.zeros(0)  # L[i, k_lo..j-1]
            b = Lb[j, 1: j - k_lo + 1][::-1] if j > k_lo else np.zeros(0)  # L[j, k_lo..j-1]
            Lb[i, i - j] = (Lb[i, i - j] - a @ b) / d
    return n
