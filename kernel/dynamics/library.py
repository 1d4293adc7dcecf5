"""The compiled dynamics library: one numba module per parametrisation, shared by every model.

The joint and driver templates are a fixed set (:func:`library_templates`), so the library's
``groups`` loops over a model's constraint groups and dispatches each to its template's generated
functions by the template's index (then to the templates' row variants, :func:`library_variants`),
and everything a model has — topology, geometry, masses, force elements, expressions — is data in
the packed arrays of :mod:`._kernels` (:class:`.fast.FastRHS` packs them). The library's source is
written to the code-generation cache under a name that hashes it, the generated template files it
binds, the kernels, the integrator templates and this module — editing any of them selects a new
file; :mod:`.fast`, which only packs data and calls the entry points, is not part of the hash — and
imported as a module so numba can cache its machine code beside it: it is compiled once (its work
shared among processes, :func:`compile_module`: 132 s on an empty cache on 2 cores, ≈ 4.5 minutes
in one process), never again for a new model.

Besides ``rhs`` the module holds ``windings`` (the angle references follow an accepted state),
``step_limit`` (the largest step at an accepted state: the compliant contacts' and
``rotation_limit``'s, :func:`._kernels.rotation_step_limit`), ``project`` (projection onto the
joints) and the integration loops ``dop853``, ``radau`` and ``rk4`` of :mod:`._dop853`,
:mod:`._radau` and :mod:`._rk4` compiled around the library's ``rhs``.

A run does not wait for numba (issue 15): when the library has not been compiled before (no
``.ready`` marker beside it holding this numba's version), :func:`ready` writes its source to the
cache and answers False — the run goes on the numpy path — and the background warm-up
(:mod:`cadmotion.kernel.symbolic.warmup`, started when the process exits) compiles its entry
points (:func:`compile_module`) for the next run, and every later model. A run long enough to
outlast the compile starts the warm-up at once and goes on in the compiled loop when the library
is ready (:mod:`.late_compiled`). ``CADMOTION_DYNAMICS_FAST=compile`` (or
``CADMOTION_BACKEND=numba``) compiles in the run instead (:func:`compiles_in_run`), as a long run
in an empty cache may prefer.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import threading
from pathlib import Path

from ..generated_modules import load_module, write_source
from ..symbolic.codegen import ROW_FUNCTIONS

__all__ = ["library_templates", "library_variants", "group_entry", "module_file", "load", "module", "ready",
           "compiles_in_run", "library_ready", "module_ready", "compiled_or_warm_up", "entry_types",
           "compile_module", "generated_imports", "template_source", "JIT"]

_LOCK = threading.Lock()
_MODULES = {}


def library_ready(dyn):
    """True when ``dyn``'s library has been compiled (its ready marker holds this numba's
    version): a stat and a read of one small file, asking for no warm-up."""
    return module_ready(module_file(dyn.model.parametrization.name)[0])


def module_ready(path):
    """True when the generated module at ``path`` (a library or a tree module) has been compiled:
    its ready marker holds this numba's version (False for None, a cache that cannot be written)."""
    from ..symbolic.codegen import marker_ready

    return path is not None and marker_ready(path.with_suffix(".ready"))


def library_templates():
    """The joint and driver templates the compiled library dispatches over, in the template
    library's order: every template with generated code (the cams' laws are numpy splines)."""
    from ..symbolic.templates import TEMPLATES

    return tuple(name for name, template in TEMPLATES.items() if not template.numeric)


def library_variants():
    """The templates' row variants the compiled library dispatches to after the templates
    themselves: ``(k, j, rows)`` for variant j of library template k, whose entry in a group's
    table row (``K.G_TEMPLATE``) is ``len(library_templates())`` + its position here."""
    from ..symbolic.templates import TEMPLATES

    return tuple((k, j, rows) for k, name in enumerate(library_templates())
                 for j, rows in enumerate(TEMPLATES[name].row_variants))


def group_entry(templates, variants, gr, kept):
    """A constraint group's entry in the library (``K.G_TEMPLATE``): its template's, or the row
    variant that evaluates exactly the rows ``kept`` (a set of the dynamics' row indices) keeps
    of each of its instances — the same rows of every instance."""
    g = gr["g"]
    k = templates.index(g.template)
    rows = {tuple(e for e in range(gr["neq"]) if gr["row0"] + i * gr["neq"] + e in kept) for i in range(g.n)}
    for v, (k_v, _, rows_v) in enumerate(variants):
        if k_v == k and rows == {rows_v}:
            return len(templates) + v
    return k


def _group_array(name, base="b"):
    """Source of the accessor of a group's array ``name`` (its header index: ``base`` + its
    position in ``_kernels.GROUP``)."""
    from . import _kernels as K

    j = [f.name for f in K.GROUP].index(name)
    kind, ndim = K.GROUP[j].kind, K.GROUP[j].ndim
    if kind == "i":
        return f"K.i{ndim}(di, {base} + {j})"
    return f"K.f{ndim}({dict(f='df', d='dd', w='ws')[kind]}, di, {base} + {j})"


def _dispatch_source(templates, variants):
    """Source of ``group_eval``, ``group_angles`` and ``group_measures``: template k's generated
    functions called for the group whose row in ``grp`` names it (a chain of branches over the
    library), then the row variants' (:func:`library_variants`): Φq, γ and Φ of their rows only."""
    ev = ["def group_eval(tid, Q, QD, M, S, F, W, An, ref, Jg, Gg, Ph, Pt, Ms, need_gamma, timed, angled, measured):",
          '    """One group\'s Φq, γ (when need_gamma), Φ, Φt (timed) and joint measures (measured) into the',
          '    workspace arrays, its angles first wound onto ref (angled)."""']
    an = ["def group_angles(tid, Q, M, An):", '    """A group\'s raw angles (rad) into An."""']
    ms = ["def group_measures(tid, Q, M, Ms):", '    """A group\'s joint measures into Ms."""']
    entries = [(k, "", templates[k]) for k in range(len(templates))]
    entries += [(k, f"_r{j}", f"{templates[k]}, rows {rows}") for k, j, rows in variants]
    for tid, (k, rows, label) in enumerate(entries):
        word = "if" if tid == 0 else "elif"
        ev += [f"    {word} tid == {tid}:  # {label}",
               "        if angled:",
               f"            W = K.winding_to(angles_into_{k}(Q, M, An), ref, W)",
               f"        jac{rows}_into_{k}(Q, M, S, F, W, Jg)",
               "        if need_gamma:",
               f"            gamma{rows}_into_{k}(Q, QD, M, S, F, W, Gg)",
               f"        phi{rows}_into_{k}(Q, M, S, F, W, Ph)",
               "        if timed:",
               f"            phit_into_{k}(Q, M, S, F, W, Pt)",
               "        if measured:",
               f"            measures_into_{k}(Q, M, Ms)"]
        an += [f"    {word} tid == {tid}:", f"        angles_into_{k}(Q, M, An)"]
        ms += [f"    {word} tid == {tid}:", f"        measures_into_{k}(Q, M, Ms)"]
    return tuple("\n".join(lines) + "\n" for lines in (ev + ["    return 0"], an + ["    return An"],
                                                       ms + ["    return 0"]))


def generated_imports():
    """The import lines of a generated module: numba, numpy, the kernels and the integrator
    templates' helpers."""
    from . import _dop853 as D
    from . import _radau as R
    from . import _rk4 as R4

    return ["import math", "import numba", "import numpy as np", "from cadmotion.kernel.dynamics import _kernels as K",
            f"from cadmotion.kernel.dynamics._dop853 import {', '.join(D.HELPERS)}",
            f"from cadmotion.kernel.dynamics._radau import {', '.join(R.HELPERS)}",
            f"from cadmotion.kernel.dynamics._rk4 import {', '.join(R4.HELPERS)}"]


#: the decorator of a generated module's functions
JIT = "\n\n@numba.njit(cache=True, nogil=True)\n"
#: the decorator of a generated function with one caller, compiled into it (no call, no arrays passed)
JIT_INLINE = "\n\n@numba.njit(cache=True, nogil=True, inline=\"always\")\n"


def _source(parametrization):
    """Source of the compiled library of a parametrisation: ``groups`` (the loop over the
    model's constraint groups, each dispatched to its template), ``rhs``, ``expressions``,
    ``windings``, ``step_limit`` and the templates of :mod:`._dop853`, :mod:`._radau` and
    :mod:`._rk4` (everything else is in the generic, separately cached :mod:`._kernels`). The
    model is data: one library serves every model of the parametrisation."""
    templates, variants = library_templates(), library_variants()
    group_eval, group_angles, group_measures = _dispatch_source(templates, variants)
    a = _group_array
    groups = [
        "def groups_in(t, y, df, di, dd, ws, need_gamma, grp):",
        '    """The rows of the constraint groups of the table ``grp`` (rows as ``K.I_GRP``\'s) at (t, y)',
        '    into the workspace (its body kinematics filled)."""',
        "    row_map = K.i1(di, K.I_ROW_MAP)", "    nmov = K.i1(di, K.I_SIZES)[1]",
        "    qf = K.f1(ws, di, K.I_QF)", "    qdf = K.f1(ws, di, K.I_QDF)", "    B = K.f3(ws, di, K.I_B)",
        "    bdot = K.f2(ws, di, K.I_BDOT)", "    Jc = K.f3(ws, di, K.I_JC)", "    gam = K.f1(ws, di, K.I_GAM)",
        "    pt = K.f1(ws, di, K.I_PT)", "    ph = K.f1(ws, di, K.I_PH)", "    aux = K.f1(ws, di, K.I_AUX)",
        "    for g in range(grp.shape[0]):",
        "        tid, row0, neq, b = grp[g, K.G_TEMPLATE], grp[g, K.G_ROW0], grp[g, K.G_NEQ], grp[g, K.G_BASE]",
        "        timed, angled, measured = grp[g, K.G_TIMED] != 0, grp[g, K.G_ANGLES] != 0, grp[g, K.G_MEASURED] != 0",
        "        if timed:  # the drivers' f, f', f'' at t",
        "            K.time_functions(t, df, di, dd, ws, b)",
        f"        gather = {a('gather')}",
        f"        Q = K.gather_to(qf, gather, {a('Q')})",
        f"        QD = {a('QD')}",
        f"        Gg = {a('Gg')}",
        "        if need_gamma:",
        "            K.gather_to(qdf, gather, QD)",
        "        else:",
        "            Gg[:] = 0.0",
        f"        Jg, Ph, Pt = {a('Jg')}, {a('Ph')}, {a('Pt')}",
        f"        Ms = {a('Ms')}",
        f"        group_eval(tid, Q, QD, {a('markers')}, {a('params')}, {a('F')}, {a('W')}, {a('An')}, {a('ref')},",
        "                   Jg, Gg, Ph, Pt, Ms, need_gamma, timed, angled, measured)",
        f"        K.scatter(Jg, Gg, {a('bodies')}, row0, neq, row_map, nmov, B, bdot, Jc, gam)",
        "        K.scatter_rows(Ph, row0, neq, row_map, ph)",
        "        if timed:",
        "            K.scatter_rows(Pt, row0, neq, row_map, pt)",
        "        if measured:",
        f"            K.scatter_measures(Ms, {a('mpos')}, aux)",
        "    return 0"]
    measures = [
        "def measures_in(df, di, ws, grp):",
        '    """The joint measures of the measured constraint groups of the table ``grp`` into ``aux``',
        "    (the workspace's body kinematics filled): ``groups_in``'s measures without its rows, for",
        '    the references of an accepted state where the rows are not read."""',
        "    qf = K.f1(ws, di, K.I_QF)", "    aux = K.f1(ws, di, K.I_AUX)",
        "    for g in range(grp.shape[0]):",
        "        if grp[g, K.G_MEASURED] != 0:",
        "            b = grp[g, K.G_BASE]",
        f"            Q = K.gather_to(qf, {a('gather')}, {a('Q')})",
        f"            group_measures(grp[g, K.G_TEMPLATE], Q, {a('markers')}, {a('Ms')})",
        f"            K.scatter_measures({a('Ms')}, {a('mpos')}, aux)",
        "    return 0"]
    every_group = [
        "def groups(t, y, df, di, dd, ws, need_gamma):",
        '    """Every constraint group\'s rows at (t, y) into the workspace (its body kinematics filled)."""',
        "    return groups_in(t, y, df, di, dd, ws, need_gamma, K.i2(di, K.I_GRP))"]
    windings = [
        "def windings(y, df, di, dd, ws):",
        '    """After an accepted step: the angle groups\' references follow the state (then the axis',
        '    elements\' and the joint measures\', in K.accept_refs)."""',
        "    qf = K.f1(ws, di, K.I_QF)", "    grp = K.i2(di, K.I_GRP)",
        "    for g in range(grp.shape[0]):",
        "        if grp[g, K.G_ANGLES] != 0:",
        "            b = grp[g, K.G_BASE]",
        f"            Q = K.gather_to(qf, {a('gather')}, {a('Q')})",
        f"            K.unwrap(group_angles(grp[g, K.G_TEMPLATE], Q, {a('markers')}, {a('An')}), {a('ref')})",
        "    K.accept_refs(df, di, dd, ws)", "    return 0"]
    head = [
        '"""Generated by cadmotion.kernel.dynamics.library: the compiled library of one parametrisation. '
        'Do not edit."""',
        *generated_imports(),
        "",
        "# the library's templates, whose generated numba functions library.py binds below before the first call",
        f"TEMPLATES = {templates!r}",
        f"PARAMETRIZATION = {parametrization!r}",
    ]
    for k in range(len(templates)):
        head.append(" = ".join(f"{fn}_{k}" for fn in _TEMPLATE_FUNCTIONS) + " = None")
    for k, j, _ in variants:
        head.append(" = ".join(f"{fn}_r{j}_into_{k}" for fn in ROW_FUNCTIONS) + " = None")
    jit = JIT
    return ("\n".join(head) + "\n" + JIT_INLINE + group_eval + jit + group_angles + JIT_INLINE + group_measures
            + jit + "\n".join(groups) + "\n" + jit + "\n".join(measures) + "\n" + jit + "\n".join(every_group) + "\n"
            + jit + "def expressions(t, df, di, dd, ws):\n    return K.stage_expressions(t, df, di, dd, ws)\n"
            + jit
            + "def rhs(t, y, df, di, dd, ws):\n"
            + "    K.stage_kinematics(y, df, di, ws)\n"
            + "    groups(t, y, df, di, dd, ws, True)\n"
            + "    expressions(t, df, di, dd, ws)\n"
            + "    return K.stage_rhs(t, y, df, di, dd, ws)\n"
            + jit + "\n".join(windings) + "\n"
            + jit
            + "def rotation_limit(y, df, di, dd, ws):\n"
            + "    return K.rotation_step_limit(y, di)\n"
            + jit
            + "def step_limit(y, df, di, dd, ws):\n"
            + "    return min(rotation_limit(y, df, di, dd, ws), K.contact_step_limit(y, df, di, dd, ws))\n"
            + template_source(jit))


@functools.lru_cache(maxsize=None)
def template_source(jit):
    """The integrator templates' source (inspect tokenises it: ~20 ms, so once per process)."""
    from . import _dop853 as D
    from . import _radau as R
    from . import _rk4 as R4

    return "".join(jit + inspect.getsource(fn) for fn in D.TEMPLATES + R.TEMPLATES + R4.TEMPLATES)


@functools.lru_cache(maxsize=None)
def _compiled_sources():
    """The text of every module a generated module compiles from, this one last (read once per
    process: reading and tokenising them took ~0.7 ms, a sixtieth of a P1 run)."""
    from .. import _kinematics_kernels, _program_kernels
    from . import _contact_kernels, _dop853, _frames, _kernels, _radau, _rk4, _singular_probes, force_jacobians, layout
    from . import tyres

    # _frames, _kinematics_kernels and _program_kernels too: _kernels calls (and numba inlines) their functions;
    # layout: the arrays' order, compiled into _kernels' indices
    return tuple(inspect.getsource(m) for m in (_kernels, layout, _dop853, _singular_probes, _radau, _rk4,
                                                 force_jacobians, tyres,
                                                 _contact_kernels, _frames, _kinematics_kernels,
                                                 _program_kernels)) + (Path(__file__).read_text(),)


@functools.lru_cache(maxsize=None)
def _library(parametrization):
    """(source, digest) of the parametrisation's compiled library: the digest hashes its
    source, the generated template files it binds (whose names hash their derivation) and
    every module it compiles from (once per process)."""
    from ..symbolic.codegen import numba_path

    src = _source(parametrization)
    h = hashlib.sha256()
    for text in (src, repr([numba_path(t, parametrization).name for t in library_templates()])) + _compiled_sources():
        h.update(text.encode())
    return src, h.hexdigest()[:20]


def module_file(parametrization):
    """(path, module name, source) of the parametrisation's compiled library, the file written
    to the cache folder if missing (path None when the folder cannot be written)."""
    from ..symbolic.codegen import cache_dir

    src, digest = _library(parametrization)
    path = write_source(cache_dir() / f"dynamics-{digest}.py", src)
    return path, f"cadmotion_dynamics_{digest}", src


#: the template functions a generated module calls (bound as ``<function>_<k>`` by :func:`load`)
_TEMPLATE_FUNCTIONS = ("jac_into", "gamma_into", "phit_into", "phi_into", "angles_into", "measures_into")


def load(path, name, src):
    """The generated module, its template functions bound (numba code of each library template)."""
    with _LOCK:
        if name in _MODULES:
            return _MODULES[name]
        module = load_module(path, name, src, _TEMPLATE_FUNCTIONS)
        _MODULES[name] = module
        return module


def module(dyn):
    """The compiled library of ``dyn``'s parametrisation; compiled first (:func:`compile_module`,
    its work shared among processes) when compiling in the run is asked for and it has no ready
    marker yet."""
    from ..symbolic.codegen import marker_ready

    path, name, src = module_file(dyn.model.parametrization.name)
    if name not in _MODULES and path is not None and compiles_in_run() \
            and not marker_ready(path.with_suffix(".ready")):
        compile_module(path)
    return load(path, name, src)


def compiles_in_run():
    """Whether a run compiles what is not compiled yet rather than leave it to the warm-up
    (``CADMOTION_DYNAMICS_FAST=compile`` or ``CADMOTION_BACKEND=numba``)."""
    return os.environ.get("CADMOTION_BACKEND") == "numba" or os.environ.get("CADMOTION_DYNAMICS_FAST") == "compile"


def ready(dyn):
    """True when the compiled library may be used now: compiled before (its ready marker,
    written by :func:`compile_module`, holds this numba's version), or compiling in the run was
    asked for (``CADMOTION_DYNAMICS_FAST=compile`` or ``CADMOTION_BACKEND=numba``). Otherwise
    the library's source is written to the cache and a background warm-up compiles it for the
    next run — once for every model of the parametrisation."""
    return compiles_in_run() or compiled_or_warm_up(module_file(dyn.model.parametrization.name)[0])


def compiled_or_warm_up(path):
    """True when the generated module at ``path`` has been compiled (:func:`module_ready`);
    otherwise the background warm-up is asked to compile it for the next run — not for None: a
    cache that cannot be written keeps no machine code, and numpy is faster than compiling."""
    from ..symbolic.codegen import request_module_warmup

    if module_ready(path):
        return True
    if path is not None:
        request_module_warmup(path)
    return False


def entry_types():
    """numba types of the arguments FastRHS passes to the module's entry points (and to
    ``_kernels.singularity``): floats, ints and C-contiguous float64 / int64 arrays."""
    from numba import types

    f, i = types.float64, types.int64
    a1, a2, ai = types.float64[::1], types.float64[:, ::1], types.int64[::1]
    data = (a1, ai, a1, a1)  # df, di, dd, ws
    loop = (f, a1, a1, f, f, f, i, f) + data + (a2, a2, a1, a1)
    return {"rhs": (f, a1) + data,
            "groups": (f, a1) + data + (types.boolean,),
            "project": (f, a1) + data + (f, i),
            "dop853": loop,
            "radau": loop,
            "rk4": (f, a1, a1, f, f, i, f) + data + (a2, a2, a1, a1),
            "singularity": data,
            "choose_rows": data,
            "frame_reactions": data + (a1, a2, ai)}


def compile_module(path, workers=None):
    """Compile the entry points of the library at ``path`` into numba's cache and write its
    ready marker (the background warm-up, :mod:`..symbolic.warmup`); True on success.

    The entry points are compiled for the types :class:`FastRHS` passes (:func:`entry_types`),
    so the next run loads machine code instead of compiling; a call with other types would
    still compile, in that run. With ``workers`` > 1 (default: the cores this process may use,
    at most 4) the work is shared by as many processes in two rounds, each writing numba's cache:
    the templates' functions (the templates shared out), then the integrator loops
    (:data:`_ENTRY_SHARES`) once ``rhs`` — which loads the templates' machine code — is compiled
    here; this process then loads what they compiled (2 cores: 132 s for the whole library in the
    test suite's first dynamics test, where one process took ≈ 4.5 minutes)."""
    from ..symbolic.codegen import write_marker
    from . import _kernels

    path = Path(path)
    module = load(path, _library_name(path), path.read_text())
    workers = _cores() if workers is None else workers
    entries = entry_types()
    if workers > 1:
        _in_processes(workers, [("templates", str(path), k, workers) for k in range(workers)])
        module.rhs.compile(entries["rhs"])
        _in_processes(workers, [("entries", str(path), share, 1) for share in _ENTRY_SHARES])
    for fn, sig in entries.items():
        (getattr(_kernels, fn) if fn in _KERNEL_ENTRIES else getattr(module, fn)).compile(sig)
    return write_marker(path.with_suffix(".ready"))


#: entry points FastRHS calls in :mod:`._kernels` itself rather than in the generated module
_KERNEL_ENTRIES = ("singularity", "choose_rows", "frame_reactions")
#: the entry points after ``rhs``, in shares of about equal compile time for :func:`compile_module`'s
#: second round (2026-11-27, 2 cores: Radau 51 s, DOP853 36 s, project 12 s, groups 9 s, RK4 7 s)
_ENTRY_SHARES = (("radau",), ("dop853", "project", "groups", "rk4") + _KERNEL_ENTRIES)
#: numba types of the templates' ``*_into`` functions as the library's ``group_eval`` calls them
#: (every array float64, C order: gathered coordinates and rates, markers, parameters, time
#: functions, windings, then the output; Φq's output has three axes)
_INTO_TYPES = {"jac_into": (2, 2, 2, 2, 2, 3), "gamma_into": (2,) * 7, "phit_into": (2,) * 6, "phi_into": (2,) * 6,
               "angles_into": (2,) * 3, "measures_into": (2,) * 3}


def _library_name(path):
    """The module name of the library written at ``path`` (``dynamics-<digest>.py``)."""
    return f"cadmotion_dynamics_{Path(path).stem.split('-', 1)[1]}"


def _cores():
    """The processes :func:`compile_module` shares its work among: the cores this process may
    run on, at most 4."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        n = os.cpu_count() or 1
    return max(1, min(4, n))


def _in_processes(workers, jobs):
    """Run :func:`_compile_share` on each job, at most ``workers`` at once, each in a new Python
    process (``python -c``: not a multiprocessing child, which would import the caller's main
    script again). A failure only leaves its share to the caller, which compiles whatever is not
    in numba's cache yet."""
    import json
    import subprocess
    import sys

    code = "import json, sys; from cadmotion.kernel.dynamics.library import _compile_share; " \
           "_compile_share(*json.loads(sys.argv[1]))"
    pending, running = list(jobs), []
    while pending or running:
        while pending and len(running) < workers:
            running.append(subprocess.Popen([sys.executable, "-c", code, json.dumps(pending.pop(0))],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        running.pop(0).wait()


def _compile_share(kind, path, share, of):
    """One worker's share of :func:`compile_module`: ``kind`` "templates", every ``of``-th
    template's functions from the ``share``-th on, for :data:`_INTO_TYPES`; ``kind`` "entries",
    the entry points named in ``share`` (in :mod:`._kernels` for :data:`_KERNEL_ENTRIES`)."""
    from numba import types

    from . import _kernels

    path = Path(path)
    module = load(path, _library_name(path), path.read_text())
    if kind == "templates":
        array = {2: types.float64[:, ::1], 3: types.float64[:, :, ::1]}
        for k in range(share, len(module.TEMPLATES), of):
            for fn, dims in _INTO_TYPES.items():
                getattr(module, f"{fn}_{k}").compile(tuple(array[d] for d in dims))
            for k_v, j, _ in library_variants():
                if k_v == k:
                    for fn in ROW_FUNCTIONS:
                        dims = _INTO_TYPES[f"{fn}_into"]
                        getattr(module, f"{fn}_r{j}_into_{k}").compile(tuple(array[d] for d in dims))
        return
    entries = entry_types()
    for fn in share:
        (getattr(_kernels, fn) if fn in _KERNEL_ENTRIES else getattr(module, fn)).compile(entries[fn])

