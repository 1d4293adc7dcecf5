"""The compiled kinematic step: the frame loop of :func:`.kinematics.kinematics` in one
compiled call per model structure.

For a driven mechanism small enough for dense algebra (nq ≤ :data:`.linalg.DENSE_LIMIT`)
the whole frame loop — predictor, Newton on Φ(q, t) = 0 on the kept rows (chord steps,
refactorised when they slow, polished towards round-off), Φq q̇ = −Φt and Φq q̈ = γ (over
all rows by least squares when redundant rows were dropped and they are consistent), the
angle references — runs in numba (:func:`._kinematics_kernels.frames`),
calling the joint templates' generated numba functions. What it does not handle it hands
back: a frame whose Newton iteration fails, lands far from the predictor, or whose kept rows
come near a singular pose (reciprocal condition number below :data:`RCOND_MARGIN` times the
run's ``singular_rcond``) is taken by the numpy stepper of :mod:`.kinematics`, which splits
the step and reports lock-ups, branch jumps and singular poses as it always does; the
compiled loop resumes after it.

The module is generated per *model structure* (the constraint groups' templates, which are
driven or have angles, and the parametrisation; not their numbers or
instance counts), written to the code cache under a name that hashes its source, the
templates' generated files, :mod:`._kinematics_kernels` and this module, and imported from
there so numba caches its machine code beside it. As for the compiled dynamics
(:mod:`.dynamics.fast`), a run does not wait for numba: a structure whose module has no
``.ready`` marker runs on numpy while the background warm-up (:mod:`.symbolic.warmup`)
compiles it for the next run. ``CADMOTION_KINEMATICS_FAST=compile`` (or
``CADMOTION_BACKEND=numba``) compiles in the run; ``CADMOTION_KINEMATICS_FAST=0`` never
uses the compiled step.

It pays for long runs only: importing numba and loading the module's machine code costs a
process about 0.5 s of CPU, as much as ≈ 1,200 frames of the slider-crank on the numpy
stepper (≈ 0.44 ms a frame, the compiled step ≈ 0.08 ms; ``benchmarks/kinematics.py
--break-even``). Runs of fewer than :data:`MIN_FRAMES` frames stay on numpy and ask for no
warm-up.

Not covered (the numpy stepper runs every frame): models without numba, with more than
DENSE_LIMIT coordinates (the sparse numpy path is linear in N), cam pairs (their laws are
numpy splines), and free degrees of freedom moved minimally (``free_dof="minimal"``).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import threading
from pathlib import Path

import numpy as np

from .generated_modules import load_module, write_source

__all__ = ["compiled_frames", "CompiledFrames", "compile_module", "MIN_FRAMES", "RCOND_MARGIN"]

#: frames from which a run uses the compiled step (when it is compiled; see the module docstring)
MIN_FRAMES = 1500
#: the compiled loop hands a frame to the numpy stepper when the kept rows' reciprocal
#: condition number is below this multiple of ``singular_rcond`` (its exact 1-norm value is
#: never above LAPACK's estimate, so the numpy stepper would not have stopped on a frame it keeps)
RCOND_MARGIN = 100.0
#: frames per compiled call: Ctrl-C and the progress callback are served between calls
CHUNK = 256

_LOCK = threading.Lock()
_MODULES = {}
_FILES = {}  # (cache folder, parametrisation, structure) -> what _module_file returns
#: data of the generated functions per constraint group: (name, dtype and dimensions)
_GROUP = (("gather", "i2"), ("markers", "f2"), ("params", "f2"), ("F", "f3"), ("ref", "f2"), ("flat", "i1"))


def _structure(model):
    """Per constraint group: (template, driven, has angles)."""
    return tuple((g.template, bool(g.functions), g.n_angles > 0) for g in model.groups)


def _source(model):
    """Source of the structure's module: ``phi_all``, ``jac_all``, ``phit_all``, ``gamma_all``,
    ``accept_all`` over the constraint groups, and the template
    :func:`._kinematics_kernels.frames`. D[0] is q_fixed, D[1] [nc, first row of each group,
    the frame of F[0]], then :data:`_GROUP`'s arrays per group (F: the drivers' f, f′, f″ at
    the frames of one call)."""
    from .symbolic.codegen import numba_path

    par = model.parametrization.name
    structure = _structure(model)
    layout = ["f1", "i1"] + [kind for _ in structure for _, kind in _GROUP]
    files = tuple(numba_path(template, par).name for template, _, _ in structure)
    fns = {name: [] for name in ("phi", "jac", "phit", "gamma", "accept")}
    for k, (template, timed, has_angles) in enumerate(structure):
        b = 2 + k * len(_GROUP)
        gather, M, S, F, ref, flat = (f"D[{b + j}]" for j in range(len(_GROUP)))
        Fk = f"{F}[kt - D[1][{len(structure) + 1}]]" if timed else f"{F}[0]"
        load = [f"    Q = K.gather(qf, {gather})",
                f"    W = K.winding(angles_{k}(Q, {M}), {ref})" if has_angles else "    W = np.zeros((Q.shape[0], 0))"]
        args = f"Q, {M}, {S}, {Fk}, W"
        fns["phi"] += load + [f"    K.put_rows(phi_{k}({args}), D[1][{k + 1}], out)"]
        fns["jac"] += load + [f"    K.add_entries(jac_{k}({args}), {flat}, J)"]
        if timed:
            fns["phit"] += load + [f"    K.put_rows(phit_{k}({args}), D[1][{k + 1}], out)"]
        fns["gamma"] += load + [f"    K.put_rows(gamma_{k}(Q, K.gather(qdf, {gather}), {M}, {S}, {Fk}, W), "
                                f"D[1][{k + 1}], out)"]
        if has_angles:
            fns["accept"] += [f"    K.unwrap(angles_{k}(K.gather(qf, {gather}), {M}), {ref})"]
    jit = "\n\n@numba.njit(cache=True, nogil=True)\n"
    qf = "    qf = K.full(q, D[0])\n"
    head = [
        '"""Generated by cadmotion.kernel.kinematics_fast for one model structure. Do not edit."""',
        "import numba",
        "import numpy as np",
        "from cadmotion.kernel import _kinematics_kernels as K",
        "from cadmotion.kernel._kinematics_kernels import (all_rows, det_sign, lu_factor, max_abs_rows, qr_factor,",
        "                                                  rows_solve)",
        "",
        "# the groups' templates, whose generated numba functions kinematics_fast binds before the first call",
        f"TEMPLATES = {tuple(s[0] for s in structure)!r}",
        f"PARAMETRIZATION = {par!r}",
        f"TEMPLATE_FILES = {files!r}",
        f"LAYOUT = {tuple(layout)!r}",
    ]
    head += [f"jac_{k} = gamma_{k} = phit_{k} = phi_{k} = angles_{k} = None"
             for k in range(len(structure))]
    src = "\n".join(head) + "\n"
    src += jit + "def phi_all(q, kt, D):\n" + qf + "    out = np.empty(D[1][0])\n" + "\n".join(fns["phi"])
    src += "\n    return out\n"
    src += jit + "def jac_all(q, kt, D, J):\n" + qf + "    J[:, :] = 0.0\n" + "\n".join(fns["jac"])
    src += "\n    return 0\n"
    src += jit + "def phit_all(q, kt, D):\n" + qf + "    out = np.zeros(D[1][0])\n" + "\n".join(fns["phit"])
    src += "\n    return out\n"
    src += (jit + "def gamma_all(q, qd, kt, D):\n" + qf + "    qdf = K.full(qd, np.zeros(D[0].shape[0]))\n"
            + "    out = np.empty(D[1][0])\n" + "\n".join(fns["gamma"]) + "\n    return out\n")
    src += jit + "def accept_all(q, D):\n" + qf + "\n".join(fns["accept"]) + "\n    return 0\n"
    return src + _template_source()


#: the file of :mod:`._kinematics_kernels`, read as text: importing it imports numba (≈ 0.5 s),
#: which a run that does not use the compiled step must not pay
_KERNELS = Path(__file__).with_name("_kinematics_kernels.py")


@functools.lru_cache(maxsize=None)
def _template_source():
    """The source of the template functions of :mod:`._kinematics_kernels` (its ``TEMPLATES``),
    taken from the file's syntax tree without importing it; once per process."""
    text = _KERNELS.read_text()
    tree = ast.parse(text)
    names = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "TEMPLATES" for t in node.targets))
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    jit = "\n\n@numba.njit(cache=True, nogil=True)\n"
    return "".join(jit + ast.get_source_segment(text, functions[e.id]) + "\n" for e in names.elts)


def _module_file(model):
    """(path, module name, source) of the structure's module, the file written to the cache
    folder if missing (path None when the folder cannot be written)."""
    from .symbolic.codegen import cache_dir

    folder = cache_dir()
    key = (str(folder), model.parametrization.name, _structure(model))
    hit = _FILES.get(key)
    if hit is not None and (hit[0] is None or hit[0].is_file()):
        return hit
    src = _source(model)
    h = hashlib.sha256()
    for text in (src, _KERNELS.read_text(), Path(__file__).read_text()):
        h.update(text.encode())
    digest = h.hexdigest()[:20]
    path = write_source(folder / f"kinematics-{digest}.py", src)
    _FILES[key] = (path, f"cadmotion_kinematics_{digest}", src)
    return _FILES[key]


def _load(path, name, src):
    """The generated module, its template functions bound (the numba code of each group's template)."""
    with _LOCK:
        if name in _MODULES:
            return _MODULES[name]
        module = load_module(path, name, src, ("jac", "gamma", "phit", "phi", "angles"))
        _MODULES[name] = module
        return module


def _signature(layout):
    """numba signature of ``frames`` for the data :class:`CompiledFrames` passes."""
    from numba import types

    arrays = {f"{kind}{ndim}": types.Array(types.float64 if kind == "f" else types.int64, int(ndim), "C")
              for kind in "fi" for ndim in "123"}
    f, i = types.float64, types.int64
    a1, a2 = arrays["f1"], arrays["f2"]
    data = types.Tuple([arrays[code] for code in layout])
    return (a1, i, i, a2, a2, a2, a1, arrays["i1"], data, f, i, i, f, f, f, a1)


def compile_module(path):
    """Compile ``frames`` of the generated module at ``path`` into numba's cache and write its
    ready marker (the background warm-up, :mod:`.symbolic.warmup`); True on success."""
    from .symbolic.codegen import write_marker

    path = Path(path)
    name = f"cadmotion_kinematics_{path.stem.split('-', 1)[1]}"
    module = _load(path, name, path.read_text())
    module.frames.compile(_signature(module.LAYOUT))
    return write_marker(path.with_suffix(".ready"))


def _available():
    """numba is the code generation backend and the compiled step is not switched off."""
    from .symbolic.codegen import default_backend

    return os.environ.get("CADMOTION_KINEMATICS_FAST", "1") != "0" and default_backend() == "numba"


def compiled_frames(model, system, times, free=0):
    """A :class:`CompiledFrames` for this run, or None where the numpy stepper runs every frame
    (see the module docstring: not covered, not compiled yet, or too short a run to pay)."""
    from .linalg import DENSE_LIMIT
    from .symbolic.codegen import marker_ready, request_module_warmup
    from .symbolic.templates import TEMPLATES

    if free or not 0 < model.nq <= DENSE_LIMIT or not _available():
        return None
    if any(TEMPLATES[g.template].numeric for g in model.groups):
        return None
    compile_now = (os.environ.get("CADMOTION_BACKEND") == "numba"
                   or os.environ.get("CADMOTION_KINEMATICS_FAST") == "compile")
    if not compile_now:
        if len(times) - 1 < MIN_FRAMES:
            return None
        path, _, _ = _module_file(model)
        if path is None:  # no machine code kept: compiling every run costs more than it saves
            return None
        if not marker_ready(path.with_suffix(".ready")):
            request_module_warmup(path)
            return None
        return CompiledFrames(model, system, _load(path, *_module_file(model)[1:]))
    return CompiledFrames(model, system, _load(*_module_file(model)))


class CompiledFrames:
    """The model's data for the compiled frame loop, and the loop (see the module docstring)."""

    def __init__(self, model, system, module):
        self.module = module
        self.system = system
        self._no_qdd = np.zeros(model.nq)
        f64 = lambda a: np.array(a, dtype=np.float64, order="C")  # noqa: E731 - writable C copies, one numba type
        i64 = lambda a: np.array(a, dtype=np.int64, order="C")  # noqa: E731
        rows0 = [int(g.row[0]) for g in model.groups]
        self._sizes = i64([model.nc] + rows0 + [0])
        data = [f64(model.q_fixed), self._sizes]
        self._refs = {}
        self._timed = {}  # group -> its drivers' f, f′, f″ at the frames of a call
        for gi, g in enumerate(model.groups):
            F = np.zeros((CHUNK + 1 if g.functions else 1, g.n, 3))
            if g.functions:
                self._timed[gi] = F
            ref = np.zeros((g.n, g.n_angles))
            self._refs[gi] = ref
            data += [i64(g.gather), f64(g.markers), f64(g.params.reshape(g.n, -1)), F, ref, i64(g.jac_flat)]
        self.data = tuple(data)

    def run(self, k0, k1, times, Q, Qd, Qdd, rcond, rows, angles, tol, max_iter, polish_iter, rcond_min,
            rcond_watch, prev=None):
        """Frames k0 … k1 − 1 into Q, Qd, Qdd (nt, nq) and ``rcond`` (nt,: the kept rows' reciprocal condition
        number; a polish refactorises below ``rcond_watch``), from the state of frame k0 − 1 and the
        angle references ``angles`` (an :class:`~.system.AngleState`, left at the last frame
        done); ``prev`` (t0 (s), q̈ at t0) is the step before frame k0 − 1 for the predictor's
        jerk, None for none; at most :data:`CHUNK` frames a call.
        Returns the first frame not done (k1 when all were)."""
        k1 = min(k1, k0 + CHUNK)
        self._sizes[-1] = k0 - 1
        for gi, F in self._timed.items():
            for j, t in enumerate(times[k0 - 1: k1]):
                F[j] = self.system.time_values(gi, t)
        t_prev, qdd_prev = (np.nan, self._no_qdd) if prev is None else (float(prev[0]), np.array(prev[1], float))
        for gi, ref in self._refs.items():
            if ref.size:
                ref[:] = angles.ref[gi]
        k = self.module.frames(times, int(k0), int(k1), Q, Qd, Qdd, rcond, np.array(rows, dtype=np.int64),
                               self.data, float(tol), int(max_iter), int(polish_iter), float(rcond_min),
                               float(rcond_watch), t_prev, qdd_prev)
        for gi, ref in self._refs.items():
            if ref.size:
                angles.ref[gi] = ref.copy()
        return int(k)
