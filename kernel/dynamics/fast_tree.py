"""The compiled right-hand side of the semi-recursive formulation: one compiled call per evaluation.

:mod:`.semirecursive` evaluates ẏ of the tree state y = [z, ż, W] with numpy; this module
compiles the same equations with numba (:mod:`._tree_kernels`: the recursive kinematics on
the spanning tree, the closure rows' Jacobian C = Jc R_v, the dependent velocities by a
column-pivoted QR of C, 𝐑ᵀ M̄ 𝐑 and 𝐑ᵀ (Q̄ − M̄ s) by the recursive passes, the independent
accelerations). The model's absolute quantities — the joints' Φ, Jc, γ̂ and Φt from their
generated templates, gravity and the force elements — are those of the absolute formulation's
compiled module of :mod:`.fast`: the *tree module* of a model structure is that module's
source followed by the tree templates (:data:`._tree_kernels.TEMPLATES`), which replace its
``rhs``, ``project``, ``strides_singular`` and ``probe_step``, so the integration loops of
:mod:`._rk4` and :mod:`._dop853` compiled in it step the tree state.

Like :mod:`.fast`'s modules, a tree module is written to the code-generation cache under a
name hashing its source and every module it compiles from (``tree-<digest>.py``), numba
caches its machine code beside it, and a run never waits for it: without its ``.ready``
marker the run stays on numpy and the background warm-up compiles it for the next run
(``CADMOTION_DYNAMICS_FAST=compile`` compiles in the run instead; ``=0`` never uses it).
"""

from __future__ import annotations

import hashlib
import inspect
import os
from pathlib import Path

import numpy as np

from ..generated_modules import write_source
from . import fast

__all__ = ["tree_fast", "FastTree", "compile_tree_module"]

#: the tree modules' file names start with this (the warm-up's :func:`.fast.compile_module` dispatches on it)
PREFIX = "tree-"


def tree_fast(form):
    """A :class:`FastTree` for a set-up :class:`.semirecursive.SemiRecursiveFormulation`, or None
    where the compiled path does not apply (as :func:`.fast.fast_rhs`: no numba, contacts or
    stops, cams, expressions of the state that could not be compiled) or is not compiled yet."""
    dyn = form.dyn
    if not fast.available() or dyn.forces.unilateral or dyn.forces.contacts is not None:
        return None
    from ..symbolic.templates import TEMPLATES

    if any(TEMPLATES[gr["g"].template].numeric for gr in dyn.groups):
        return None
    for kind in fast._EXPRESSION_KINDS:
        if any(fn.uses_state and fast._expression_code(fn) is None for _, fn in fast._expression_elements(dyn, kind)):
            return None
    try:
        if not _ready(dyn):
            return None
        return FastTree(form)
    except ImportError:  # pragma: no cover - numba vanished
        return None


def _first_tree_array(dyn):
    """The header index of the first tree array (after the common and the groups' arrays)."""
    from . import _kernels as K

    return len(K.COMMON) + len(dyn.groups) * len(K.GROUP)


def _source(dyn):
    """The tree module's source: the absolute module's, then the tree templates."""
    from . import _tree_kernels as T

    src, _ = fast._source(dyn)
    # the integrator templates' watch for singular configurations reads the workspace's measure:
    # in the tree module it is the closure Jacobian's (:func:`._tree_kernels.singularity`)
    call = "K.singularity(df, di, dd, ws)"
    if call not in src:
        raise ImportError(f"the integrator templates no longer call {call}: update fast_tree._source")
    src = src.replace(call, "singularity(df, di, dd, ws, KT)")
    _, has_expressions = fast._expression_source(dyn)
    jit = "\n\n@numba.njit(cache=True, nogil=True)\n"
    head = ["", "", "# ---- the semi-recursive formulation's tree (cadmotion.kernel.dynamics.fast_tree)",
            f"from cadmotion.kernel.dynamics._tree_kernels import {', '.join(T.HELPERS)}",
            "from cadmotion.kernel.dynamics._dop853 import PROBES, strided",
            f"KT = {_first_tree_array(dyn)}"]
    if not has_expressions:
        head.append(jit.strip("\n") + "\ndef expressions(t, df, di, dd, ws):\n    return 0")
    body = "".join(jit + inspect.getsource(fn) for fn in T.TEMPLATES)
    return src + "\n".join(head) + "\n" + body


def _module_file(dyn):
    """(path, module name, source) of the tree module (written to the cache if missing; path
    None when the folder cannot be written)."""
    from ..symbolic.codegen import cache_dir
    from . import _tree_kernels

    src = _source(dyn)
    _, absolute, _ = fast._module_file(dyn)  # its name hashes everything the absolute part compiles from
    h = hashlib.sha256()
    for text in (src, absolute, inspect.getsource(_tree_kernels), Path(__file__).read_text()):
        h.update(text.encode())
    digest = h.hexdigest()[:20]
    folder = cache_dir()
    path = write_source(folder / f"{PREFIX}{digest}.py", src)
    return path, f"cadmotion_tree_{digest}", src


def _ready(dyn):
    """As :func:`.fast._ready`, for the tree module."""
    from ..symbolic.codegen import marker_ready, request_module_warmup

    if os.environ.get("CADMOTION_BACKEND") == "numba" or os.environ.get("CADMOTION_DYNAMICS_FAST") == "compile":
        return True
    path, _, _ = _module_file(dyn)
    if path is None:
        return False
    if marker_ready(path.with_suffix(".ready")):
        return True
    request_module_warmup(path)
    return False


def _entry_types():
    """numba types of the tree module's entry points, as :class:`FastTree` calls them."""
    types = fast._entry_types()
    f, a1 = types["rhs"][:2]
    data = types["rhs"][2:]
    return {"rhs": types["rhs"], "project": types["project"], "rk4": types["rk4"], "dop853": types["dop853"],
            "singular": (f, a1) + data}


def compile_tree_module(path):
    """Compile the tree module at ``path`` into numba's cache and write its ready marker (the
    background warm-up); True on success."""
    from ..symbolic.codegen import write_marker

    path = Path(path)
    module = fast._load(path, f"cadmotion_tree_{path.stem[len(PREFIX):]}", path.read_text())
    for fn, sig in _entry_types().items():
        getattr(module, fn).compile(sig)
    return write_marker(path.with_suffix(".ready"))



class FastTree(fast.FastRHS):
    """ẏ = rhs(t, y) of the semi-recursive formulation in one compiled call, for the formulation
    ``form`` after its set-up (its :class:`.tree.TreeKinematics` gives the tree's arrays).

    As :class:`.fast.FastRHS` (whose packed arrays it extends with :data:`._tree_kernels.TREE`):
    ``__call__``, ``project``, ``rk4``, ``dop853``, ``restore``; the state is the tree state
    y = [z, ż, W]. After a call ``aux`` holds max |C ż + Φt_c| and max |Φ_c| over the closure
    rows, then the raw joint measures.
    """

    def __init__(self, form):
        self.form = form
        dyn = form.dyn
        self.dyn = dyn
        self.angles, self.refs = form.angles, form.refs
        self.baumgarte = self.penalty = None
        module = fast._load(*_module_file(dyn))
        self.rhs_fn = module.rhs
        self.groups_fn = module.groups
        self.project_fn = module.project
        self.dop853_fn = module.dop853
        self.radau_fn = None  # the Radau loop needs the Jacobian of ẏ, which the tree has not
        self.rk4_fn = module.rk4
        self.singular_fn = module.singular
        self.build()

    def _extra_arrays(self):
        """The tree's arrays (:data:`._tree_kernels.TREE`), packed after the absolute module's."""
        from . import _tree_kernels as T

        form = self.form
        kin, tree = form.kin, form.tree
        J = tree.joints
        nj, nmov = len(J), kin.nmov
        i64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
        ncol = [6 if tj.type == "free" else _nv(tj.type) for tj in J]
        position = np.empty(len(self.row_order), np.int64)
        position[self.row_order] = np.arange(len(self.row_order))
        crow = position[form.crows]
        nz, mc = tree.nz, len(crow)
        qadr = [a for _, a, _ in kin.quat_blocks]
        wadr = [c for _, _, c in kin.quat_blocks]
        values = dict(
            t_sizes=i64([tree.nzq, nz, nj, nmov, mc, int(self.dyn.timed), len(self.dyn.redundant)]),
            t_type=i64([T.TYPE_CODES[tj.type] for tj in J]), t_parent=i64(kin.parent), t_child=i64(kin.child),
            t_zq=i64([tj.zq_adr for tj in J]), t_z=i64([tj.z_adr for tj in J]), t_ncol=i64(ncol),
            t_Rpi=kin.R_pi, t_rpi=kin.r_pi, t_R0=kin.R0, t_r0=kin.r0, t_Rjc=kin.R_jc, t_rjc=kin.r_jc,
            t_Rcj=kin.R_cj, t_rcj=kin.r_cj, t_Rroot=kin.R_root, t_rroot=kin.r_root,
            t_com=self.dyn.mass.body_com.reshape(nmov, 3),
            t_ckind=i64(kin.col_kind), t_cframe=i64(kin.col_frame), t_cref=i64([T.REF_CODES[r] for r in kin.col_ref]),
            t_cjoint=i64(kin.col_joint), t_caxis=kin.col_axis.reshape(-1, 3), t_cw=form.col_weight,
            t_rw=form.row_weight,
            t_bjoint=i64(tree.body_joint), t_crow=i64(crow), t_qadr=i64(qadr), t_wadr=i64(wadr),
            t_sq=i64(kin.scalar_q), t_sz=i64(kin.scalar_z),
            t_JR=np.zeros((nmov, 3, 3)), t_jr=np.zeros((nmov, 3)), t_pref=kin._p_ref.copy(),
            t_RMi=np.zeros((nj, 3, 3)), t_rMi=np.zeros((nj, 3)), t_RPre=np.zeros((nj, 3, 3)),
            t_rPre=np.zeros((nj, 3)), t_RMj=np.zeros((nj, 3, 3)), t_rMj=np.zeros((nj, 3)),
            t_b=np.zeros((nz, 6)), t_Z=np.zeros((nmov, 6)), t_rc=np.zeros((nmov, 3)),
            t_ya=np.zeros(13 * nmov + 1),
            t_w3=np.zeros(T.W3_SIZE), t_w6=np.zeros(30 * nmov), t_wF=np.zeros(6 * self.dyn.model.nb),
            t_wv=np.zeros(5 * nz), t_wm=np.zeros(6 * mc), t_wC=np.zeros(mc * nz), t_wR=np.zeros(mc * nz),
            t_wQ=np.zeros(mc * mc), t_wX=np.zeros(mc * nz), t_wMb=np.zeros(min(nz, T.DENSE_LIMIT) ** 2))
        out = []
        for name, kind, ndim in T.TREE:
            a = np.asarray(values[name])
            assert a.ndim == ndim, (name, a.shape)
            out.append((name, kind, a))
        return out

    def choose_rows(self, t, y):
        """Nothing to choose: the tree's closure rows are factorised anew at every evaluation
        (its loops' ``choose_rows`` template is empty too)."""
        return False

    def singularity(self, t, y):
        """:func:`._kernels.singularity` at the tree state y (the last evaluation's ``aux`` kept)."""
        if self._needs_update:
            self._update(t)
        aux = self.aux.copy()
        measure = float(self.singular_fn(t, np.ascontiguousarray(y, dtype=float), self.df, self.di, self.dd,
                                         self.ws))
        self.aux[:] = aux
        return measure


def _nv(joint_type):
    from .tree import TREE_TYPES

    return TREE_TYPES[joint_type][1]
