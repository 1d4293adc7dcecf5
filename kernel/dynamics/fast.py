"""The fast right-hand side of the index-1 and penalty formulations: one compiled call per evaluation.

When numba is available (the kernel's code generation backend is ``numba``), the whole
evaluation of ẏ = [q̇, v̇, P_nc] — body kinematics, every constraint group's generated Φq
and γ (called from compiled code), the force elements, the Schur complement
S = Jv M⁻¹ Jvᵀ in band storage and its Cholesky factorisation — runs in one compiled
function. The kept constraint rows are reordered by reverse Cuthill–McKee on the graph
"two rows act on a common body", so S of a chain or a loop of N links has a bandwidth
independent of N and the cost is linear in N.

The compiled code is a *library*, one per parametrisation, shared by every model: the joint
and driver templates are a fixed set (:func:`library_templates`), so ``groups`` loops over the
model's constraint groups and dispatches each to its template's generated functions by the
template's index, and everything a model has — topology, geometry, masses, force elements,
expressions — is data in the packed arrays (:mod:`._kernels`). The library's source is written
to the code-generation cache under a name that hashes it, the generated template files it
binds, the kernels, the integrator templates and this module — editing any of them selects a
new file — and imported as a module so numba can cache its machine code beside it: it is
compiled once (its work shared among processes, :func:`compile_module`: 132 s on an empty cache
on 2 cores, ≈ 4.5 minutes in one process), never again for a new model.
Besides ``rhs`` the module holds ``windings`` (the angle references follow an accepted state),
``step_limit`` (the largest step at an accepted state: the compliant contacts' and
``rotation_limit``'s, :func:`._kernels.rotation_step_limit`), ``project``
(projection onto the joints) and the integration loops ``dop853``, ``radau`` and ``rk4`` of
:mod:`._dop853`, :mod:`._radau` and :mod:`._rk4` compiled around the library's ``rhs``
(:meth:`FastRHS.dop853`, :meth:`FastRHS.radau`, :meth:`FastRHS.rk4`; used when no input of ẏ
is evaluated in Python).

Torque expressions τ(t, q, qd) (``torque`` force elements), force expressions F(t, q, qd)
along joint axes (``force`` elements) and drivers' expression time functions f(t), f'(t),
f''(t) are data too: the parsed, whitelisted sympy expression
(:func:`~cadmotion.kernel.expressions.parse_expression`, never the user's text) is printed by
sympy's Python code printer — the printer ``lambdify`` uses for the numpy path — with its
decimals lifted to constants c_0, c_1, …, the printed code is checked against a whitelist of
names (t, q, qd, abs, min, max and ``math`` functions and constants) and compiled to a program
of :mod:`..expression_programs`, which the library's interpreter evaluates
(:func:`._kernels.stage_expressions`: q the element's continuous joint angle in rad and qd its
rate in rad/s, or its displacement in m and rate in m/s; :func:`._kernels.time_functions`). An
expression that has no program stays a Python callback (evaluated at (t, 0, 0) before each
call, so only when it reads t alone); a table's cubic spline is evaluated from its
coefficients; a model with anything left in Python (:attr:`FastRHS.self_contained` False)
keeps scipy's loop.

Compliant contacts (:mod:`.contacts`) are evaluated in compiled code too (:mod:`._contact_kernels`:
a broad phase by body pair, then by feature, then the points near touch); their impact speeds
are per-call data, recorded at accepted steps by ``windings`` in the compiled loops, and the
compiled DOP853 loop limits its steps by them (:func:`._kernels.contact_step_limit`).

Not covered (the numpy path of :mod:`.equations` is used instead): models without numba, models
with joint stops (:mod:`.stops`) or unilateral contacts (:mod:`.unilateral`), and torque or force
expressions of q or qd that could not be compiled. :func:`fast_rhs` returns None in those cases.

A run does not wait for numba (issue 15): when the library has not been compiled before (no
``.ready`` marker beside it holding this numba's version), :func:`fast_rhs` writes its source to
the cache, returns None — the run goes on the numpy path — and the background warm-up
(:mod:`cadmotion.kernel.symbolic.warmup`, started when the process exits) compiles its entry
points (:func:`compile_module`) for the next run, and every later model. A run long enough to
outlast the compile starts the warm-up at once and goes on in the compiled loop when the
library is ready (:mod:`.late_compiled`).
``CADMOTION_DYNAMICS_FAST=compile`` (or ``CADMOTION_BACKEND=numba``) compiles in the run
instead, as a long run in an empty cache may prefer; ``CADMOTION_DYNAMICS_FAST=0`` never uses
the compiled path.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import os
import threading
from pathlib import Path

import numpy as np

from ..generated_modules import load_module, write_source
from ..symbolic.codegen import ROW_FUNCTIONS

__all__ = ["fast_rhs", "FastRHS", "available", "applies", "library_ready", "module_ready", "compiled_or_warm_up"]

_LOCK = threading.Lock()
#: a constraint row whose Cholesky pivot falls below this fraction of its diagonal is redundant
DROP_TOL = 1e-10
_MODULES = {}


def available():
    """True when numba is the code generation backend (and so importable)."""
    try:
        from ..symbolic.codegen import default_backend

        return default_backend() == "numba" and os.environ.get("CADMOTION_DYNAMICS_FAST", "1") != "0"
    except Exception:  # pragma: no cover - broken numba
        return False


def fast_rhs(dyn, angles, refs, baumgarte=None, penalty=None, planar=True):
    """A :class:`FastRHS` for ``dyn``, or None where the fast path does not apply
    (:func:`applies`) or its library is not compiled yet (the run then starts on numpy, and a
    long one switches when the library becomes ready: :mod:`.late_compiled`). ``planar``: a
    mechanism held in a plane is solved in it (:mod:`.planar`)."""
    if not applies(dyn):
        return None
    try:
        if not _ready(dyn):  # not compiled yet: numpy now, the warm-up compiles it for the next run
            return None
        return FastRHS(dyn, angles, refs, baumgarte, penalty, planar)
    except ImportError:  # pragma: no cover - numba vanished
        return None


def applies(dyn):
    """True when the compiled right-hand side covers ``dyn``, whether its library is compiled
    yet or not: numba is there, no joint stops or unilateral contacts (the numpy path evaluates
    them), no cams (their laws are numpy splines), and every torque or force expression of the
    state has a compiled program."""
    if not available() or dyn.forces.stops is not None or dyn.forces.contact_constraints is not None:
        return False
    from ..symbolic.templates import TEMPLATES

    if any(TEMPLATES[gr["g"].template].numeric for gr in dyn.groups):
        return False
    for kind in _EXPRESSION_KINDS:
        if any(fn.uses_state and _expression_program(fn) is None for _, fn in _expression_elements(dyn, kind)):
            return False
    return True


def library_ready(dyn):
    """True when ``dyn``'s library has been compiled (its ready marker holds this numba's
    version): a stat and a read of one small file, asking for no warm-up."""
    return module_ready(_module_file(dyn.model.parametrization.name)[0])


def module_ready(path):
    """True when the generated module at ``path`` (a library or a tree module) has been compiled:
    its ready marker holds this numba's version (False for None, a cache that cannot be written)."""
    from ..symbolic.codegen import marker_ready

    return path is not None and marker_ready(path.with_suffix(".ready"))


#: names printed expression code may use: the arguments, builtins numba compiles for scalars,
#: and ``math`` attributes (the functions of cadmotion.kernel.expressions.FUNCTIONS as sympy's
#: Python printer writes them, and its constants)
_EXPR_NAMES = frozenset(("t", "q", "qd", "abs", "min", "max"))
_EXPR_MATH = frozenset(("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp",
                        "log", "sqrt", "copysign", "pi", "e"))
_EXPR_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Call, ast.IfExp, ast.Compare, ast.Name, ast.Load,
               ast.Attribute, ast.Constant, ast.operator, ast.unaryop, ast.cmpop)
_EXPR_CODE = {}


def _expression_code(fn):
    """Python source of a torque expression ``fn`` (a :class:`.forces._Expression`) of
    (t, q, qd) for the compiled right-hand side, or None if it cannot be compiled.

    The source is printed by sympy from the parsed expression tree, then checked node by
    node: only arithmetic, comparisons and conditional expressions (``sign``), numbers, the
    arguments, abs/min/max and whitelisted ``math`` attributes. Decimal numbers are printed
    as ``c_0``, ``c_1``, … (:func:`_expression_constants` gives their values, passed at run
    time), so that expressions differing only in them have the same program."""
    return _expression_parts(fn)[0]


def _expression_constants(fn):
    """The values of c_0, c_1, … in :func:`_expression_code`."""
    return _expression_parts(fn)[2]


def _expression_program(fn):
    """The program (:mod:`..expression_programs`) of :func:`_expression_code`, or None."""
    return _expression_parts(fn)[1]


def _lifted(expr):
    """``expr`` with its Float atoms (the decimals a user writes and tunes) replaced by symbols
    c_k; their values. Integers and rationals stay (exponents such as the ½ of ``sqrt``)."""
    import sympy

    numbers = sorted((a for a in expr.atoms(sympy.Float) if a.is_finite), key=lambda a: (float(a), sympy.srepr(a)))
    symbols = [sympy.Symbol(f"c_{k}", real=True) for k in range(len(numbers))]
    return expr.xreplace(dict(zip(numbers, symbols))), [float(a) for a in numbers], set(symbols)


def _checked_code(expr, names):
    """Python source of a sympy expression whose free symbols are named in ``names``, printed
    by sympy's Python code printer and checked node by node against the whitelist, or None."""
    from sympy.printing.pycode import PythonCodePrinter

    if not {sym.name for sym in expr.free_symbols} <= names:
        return None
    try:
        text = PythonCodePrinter({"fully_qualified_modules": True, "strict": True}).doprint(expr)
        tree = ast.parse(text, mode="eval")
    except Exception:  # an expression the printer does not support
        return None
    for node in ast.walk(tree):
        if not isinstance(node, _EXPR_NODES):
            ok = False
        elif isinstance(node, ast.Name):
            ok = node.id in names or node.id == "math"
        elif isinstance(node, ast.Attribute):
            ok = isinstance(node.value, ast.Name) and node.value.id == "math" and node.attr in _EXPR_MATH
        elif isinstance(node, ast.Constant):
            ok = type(node.value) in (int, float)
        elif isinstance(node, ast.Call):
            ok = not node.keywords and (
                isinstance(node.func, ast.Attribute) or (isinstance(node.func, ast.Name) and node.func.id != "math"))
        else:
            ok = True
        if not ok:
            return None
    # "math" only as the object of an attribute
    bare = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "math"]
    attrs = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute)]
    return text if len(bare) == len(attrs) else None


def _expression_parts(fn):
    """(code, program, constants) of an expression element of (t, q, qd); (None, None, []) when
    it has no expression or its code fails the whitelist or has no program."""
    expr = getattr(fn, "expr", None)
    if expr is None:
        return None, None, []
    import sympy

    from ..expression_programs import compile_program

    key = ("t, q, qd", sympy.srepr(expr))
    if key not in _EXPR_CODE:
        lifted, values, consts = _lifted(expr)
        code = _checked_code(lifted, _EXPR_NAMES | {c.name for c in consts})
        program = None if code is None else compile_program(code, ("t", "q", "qd"))
        _EXPR_CODE[key] = (code, program, values) if program is not None else (code, None, [])
    return _EXPR_CODE[key]


def _time_function_parts(fn):
    """([f, f', f''] programs, constants) of a driver's expression time function in t (s), or
    (None, []): its decimals lifted to c_k before differentiation, so they stay data."""
    expr = getattr(fn, "expr", None)
    if expr is None:
        return None, []
    import sympy

    from ..expression_programs import compile_program
    from ..expressions import derivatives

    key = ("time", sympy.srepr(expr))
    if key not in _EXPR_CODE:
        lifted, values, consts = _lifted(expr)
        names = {"t", "abs", "min", "max"} | {c.name for c in consts}
        codes = [_checked_code(d, names) for d in derivatives(lifted)]
        programs = [None if code is None else compile_program(code, ("t",)) for code in codes]
        _EXPR_CODE[key] = (programs, values) if None not in programs else (None, [])
    return _EXPR_CODE[key]


def _time_function_kind(fn):
    """How compiled code evaluates a driver's time function: ``_kernels.FN_PROGRAM``,
    ``FN_TABLE`` or ``FN_PYTHON`` (a Python callback)."""
    from . import _kernels as K

    if _time_function_parts(fn)[0] is not None:
        return K.FN_PROGRAM
    return K.FN_TABLE if getattr(fn, "spline", None) is not None else K.FN_PYTHON


def _time_function_data(g, programs):
    """The arrays of K.GROUP ``fn_kind``, ``fn_prog``, ``fn_const``, ``spl_x``, ``spl_c``,
    ``spl_n`` of group g, its programs added to the :class:`~..expression_programs.ProgramTable`
    ``programs``."""
    from . import _kernels as K

    n = g.n
    kinds = np.full(n, K.FN_PYTHON, dtype=np.int64)
    prog = np.full((n, 3), -1, dtype=np.int64)
    consts, splines = [], []
    for i, fn in enumerate(g.functions):
        kinds[i] = kind = _time_function_kind(fn)
        if kind == K.FN_PROGRAM:
            fn_programs, values = _time_function_parts(fn)
            prog[i] = [programs.add(pr) for pr in fn_programs]
            consts.append(values)
        else:
            consts.append([])
        splines.append(fn.spline if kind == K.FN_TABLE else (np.zeros(2), np.zeros((4, 1))))
    mc = max([len(c) for c in consts] + [1])
    nk = max([len(x) for x, _ in splines] + [2])
    fn_const = np.zeros((n, mc))
    spl_x = np.zeros((n, nk))
    spl_c = np.zeros((n, 4, nk - 1))
    spl_n = np.full(n, 2, dtype=np.int64)
    for i, (c, (x, coef)) in enumerate(zip(consts, splines)):
        fn_const[i, :len(c)] = c
        spl_x[i, :len(x)] = x
        spl_c[i, :, :coef.shape[1]] = coef
        spl_n[i] = len(x)
    return dict(fn_kind=kinds, fn_prog=prog, fn_const=fn_const, spl_x=spl_x, spl_c=spl_c, spl_n=spl_n)


#: the kinds of expression elements (the generated functions' prefixes)
_EXPRESSION_KINDS = ("torque", "force")


def _expression_elements(dyn, kind):
    """[(s, fn)]: the expression elements of ``kind`` — "torque": torques about joint axes, s
    their index among the axis elements (after the rotational springs); "force": forces along
    joint axes, s their index among the line elements."""
    forces = dyn.forces
    if kind == "torque":
        if forces.angle is None:
            return []
        return [(forces.n_axis_rot + i, fn) for i, (_, fn) in enumerate(forces.axis_expr)]
    return [] if forces.line is None else list(enumerate(forces.line["fns"]))


def _compiled_expressions(dyn, kind):
    """[(s, program, constants)]: the expressions of ``kind`` compiled code evaluates."""
    out = []
    for s, fn in _expression_elements(dyn, kind):
        _, program, values = _expression_parts(fn)
        if program is not None:
            out.append((s, program, values))
    return out


def _expression_table(dyn, kind, n, programs):
    """(program per element, (n, m) constants) of the ``n`` elements of ``kind``: row s of the
    constants holds the c_k of element s's program (added to ``programs``; −1: no program)."""
    items = _compiled_expressions(dyn, kind)
    prog = np.full(n, -1, dtype=np.int64)
    consts = np.zeros((n, max([len(values) for _, _, values in items] + [1])))
    for s, program, values in items:
        prog[s] = programs.add(program)
        consts[s, :len(values)] = values
    return prog, consts


class _Packer:
    """Collects named arrays into flat float / int / per-call arrays with one header table."""

    def __init__(self):
        self.entries = []  # (name, kind 'f'|'i'|'d', array)

    def add(self, name, kind, array):
        dtype = np.int64 if kind == "i" else np.float64
        self.entries.append((name, kind, np.ascontiguousarray(array, dtype=dtype)))
        return len(self.entries) - 1

    def pack(self):
        n = len(self.entries)
        header = np.zeros(4 * n, dtype=np.int64)
        chunks = {"f": [], "i": [], "d": [], "w": []}
        sizes = {"f": 0, "i": 4 * n, "d": 0, "w": 0}
        for k, (_, kind, a) in enumerate(self.entries):
            header[4 * k] = sizes[kind]
            for j, d in enumerate(a.shape[:3]):
                header[4 * k + 1 + j] = d
            chunks[kind].append(a.reshape(-1))
            sizes[kind] += a.size
        df = np.concatenate(chunks["f"]) if chunks["f"] else np.zeros(0)
        dd = np.concatenate(chunks["d"]) if chunks["d"] else np.zeros(0)
        ws = np.concatenate(chunks["w"]) if chunks["w"] else np.zeros(0)
        di = np.concatenate([header] + chunks["i"]).astype(np.int64)
        views = {}
        for k, (name, kind, a) in enumerate(self.entries):
            if kind in "dw":  # views of the per-call array (written before each call) and the workspace
                o = header[4 * k]
                views[name] = (dd if kind == "d" else ws)[o: o + a.size].reshape(a.shape)
        return df, di, dd, ws, views


def _n_measures(g):
    from ..symbolic.templates import TEMPLATES

    return len(TEMPLATES[g.template].measures)


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


def _group_entry(templates, variants, gr, kept):
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

    j = [n for n, _, _ in K.GROUP].index(name)
    _, kind, ndim = K.GROUP[j]
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
        '"""Generated by cadmotion.kernel.dynamics.fast: the compiled library of one parametrisation. Do not edit."""',
        *generated_imports(),
        "",
        "# the library's templates, whose generated numba functions fast.py binds below before the first call",
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
            + _template_source(jit))


@functools.lru_cache(maxsize=None)
def _template_source(jit):
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
    from . import _contact_kernels, _dop853, _frames, _kernels, _radau, _rk4, force_jacobians, tyres

    # _frames, _kinematics_kernels and _program_kernels too: _kernels calls (and numba inlines) their functions
    return tuple(inspect.getsource(m) for m in (_kernels, _dop853, _radau, _rk4, force_jacobians, tyres,
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


def _module_file(parametrization):
    """(path, module name, source) of the parametrisation's compiled library, the file written
    to the cache folder if missing (path None when the folder cannot be written)."""
    from ..symbolic.codegen import cache_dir

    src, digest = _library(parametrization)
    path = write_source(cache_dir() / f"dynamics-{digest}.py", src)
    return path, f"cadmotion_dynamics_{digest}", src


#: the template functions a generated module calls (bound as ``<function>_<k>`` by :func:`_load`)
_TEMPLATE_FUNCTIONS = ("jac_into", "gamma_into", "phit_into", "phi_into", "angles_into", "measures_into")


def _load(path, name, src):
    """The generated module, its template functions bound (numba code of each library template)."""
    with _LOCK:
        if name in _MODULES:
            return _MODULES[name]
        module = load_module(path, name, src, _TEMPLATE_FUNCTIONS)
        _MODULES[name] = module
        return module


def _module(dyn):
    """The compiled library of ``dyn``'s parametrisation; compiled first (:func:`compile_module`,
    its work shared among processes) when compiling in the run is asked for and it has no ready
    marker yet."""
    from ..symbolic.codegen import marker_ready

    path, name, src = _module_file(dyn.model.parametrization.name)
    if name not in _MODULES and path is not None and _compiles_in_run() \
            and not marker_ready(path.with_suffix(".ready")):
        compile_module(path)
    return _load(path, name, src)


def _compiles_in_run():
    """Whether a run compiles what is not compiled yet rather than leave it to the warm-up
    (``CADMOTION_DYNAMICS_FAST=compile`` or ``CADMOTION_BACKEND=numba``)."""
    return os.environ.get("CADMOTION_BACKEND") == "numba" or os.environ.get("CADMOTION_DYNAMICS_FAST") == "compile"


def _ready(dyn):
    """True when the compiled library may be used now: compiled before (its ready marker,
    written by :func:`compile_module`, holds this numba's version), or compiling in the run was
    asked for (``CADMOTION_DYNAMICS_FAST=compile`` or ``CADMOTION_BACKEND=numba``). Otherwise
    the library's source is written to the cache and a background warm-up compiles it for the
    next run — once for every model of the parametrisation."""
    return _compiles_in_run() or compiled_or_warm_up(_module_file(dyn.model.parametrization.name)[0])


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


def _entry_types():
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

    The entry points are compiled for the types :class:`FastRHS` passes (:func:`_entry_types`),
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
    module = _load(path, _library_name(path), path.read_text())
    workers = _cores() if workers is None else workers
    entries = _entry_types()
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

    code = "import json, sys; from cadmotion.kernel.dynamics.fast import _compile_share; " \
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
    module = _load(path, _library_name(path), path.read_text())
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
    entries = _entry_types()
    for fn in share:
        (getattr(_kernels, fn) if fn in _KERNEL_ENTRIES else getattr(module, fn)).compile(entries[fn])


def _rcm_order(dyn, rows):
    """Kept rows reordered for a small bandwidth of S (reverse Cuthill–McKee)."""
    import scipy.sparse as sps
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    nmov = dyn.nmov
    row_body = _row_bodies(dyn)
    m = len(rows)
    r_idx, b_idx = [], []
    for pos, r in enumerate(rows):
        for b in row_body[r]:
            if 0 <= b < nmov:
                r_idx.append(pos)
                b_idx.append(b)
    if not r_idx:
        return np.arange(m)
    Inc = sps.csr_matrix((np.ones(len(r_idx)), (r_idx, b_idx)), shape=(m, max(nmov, 1)))
    G = (Inc @ Inc.T).tocsr()
    return np.asarray(reverse_cuthill_mckee(G, symmetric_mode=True), dtype=np.int64)


def _row_bodies(dyn):
    out = []
    for gr in dyn.groups:
        g = gr["g"]
        for i in range(g.n):
            for _ in range(gr["neq"]):
                out.append(tuple(int(b) for b in g.bodies[i]))
    return out


class FastRHS:
    """ẏ = rhs(t, y) of the index-1 and penalty formulations in one compiled call (see the
    module docstring).

    ``baumgarte`` = (α, β) in 1/s adds −2α Φ̇ − β² Φ to γ̂. ``penalty`` = (ε, max_iter, tol):
    λ from S + εI instead of S (ε = 1/α of the penalty formulation, so the redundant rows are
    kept, with a small λ each), iterated as the augmented Lagrangian when max_iter > 1 with the
    relative tolerance tol (see ``_kernels.multipliers``). Both are run-time data: every
    formulation shares the model's compiled module.

    ``planar`` (the default): where the joints hold the mechanism in a plane normal to a world
    axis (:func:`.planar.planar_reduction`), the evaluations take only its in-plane rows, with the
    parts' inverse masses seen through the plane (:attr:`reduction`); the output frames
    (:meth:`frame`) are evaluated on every row, by a second instance without the reduction.

    After each call ``aux`` holds max |Jv v + Φt| and max |Φ| over the rows (the in-plane rows
    of a planar mechanism; the others hold by its motion) (and max ||p|² − 1|) at (t, y), the
    smallest pivot ratio of S over the kept rows (how near a singular configuration (t, y) is: 1
    far from one, → 0 at one), then the raw joint coordinates in ``model.joint_measures`` order —
    what the per-step bookkeeping needs, without another evaluation.
    """

    #: the :class:`.planar.PlanarReduction` the evaluations use, or None (every row, in 3-D; always for the
    #: semi-recursive tree's subclass, which solves in joint coordinates)
    reduction = None

    def __init__(self, dyn, angles, refs, baumgarte=None, penalty=None, planar=True):
        self.dyn = dyn
        self.angles = angles
        self.refs = refs
        self.baumgarte = baumgarte
        self.penalty = penalty
        if planar:
            from .planar import planar_reduction

            self.reduction = planar_reduction(dyn)
        self._full = None  # the instance on every row that evaluates the output frames of a reduced one
        module = _module(dyn)
        self.rhs_fn = module.rhs
        self.groups_fn = module.groups
        self.project_fn = module.project
        self.dop853_fn = module.dop853
        self.radau_fn = module.radau
        self.rk4_fn = module.rk4
        self.build()

    def build(self):
        """(Re)build the argument tuple for the current kept rows of ``dyn``."""
        dyn = self.dyn
        model = dyn.model
        nmov, nb = dyn.nmov, model.nb
        # every joint row (a planar mechanism's in-plane rows): the band Cholesky drops the redundant
        # ones chosen at the last accepted state (_kernels.choose_rows)
        reduction = self.reduction
        rows = np.arange(dyn.nc, dtype=np.int64) if reduction is None else reduction.rows
        order = _rcm_order(dyn, rows)
        rows = rows[order]
        m = len(rows)
        row_map = np.full(dyn.nc, -1, dtype=np.int64)
        row_map[rows] = np.arange(m)
        row_body = _row_bodies(dyn)
        ns = max([len(rb) for rb in row_body] + [1])
        rb = np.full((m, ns), -1, dtype=np.int64)
        for pos, r in enumerate(rows):
            for s, b in enumerate(row_body[r]):
                if b < nmov:
                    rb[pos, s] = b
        # pairs (i ≥ j, slots) acting on a common body
        entries = {}
        for pos in range(m):
            for s in range(ns):
                b = rb[pos, s]
                if b >= 0:
                    entries.setdefault(b, []).append((pos, s))
        pi, pj, psi, psj = [], [], [], []
        for b, lst in entries.items():
            for (i, si) in lst:
                for (j, sj) in lst:
                    if i >= j:
                        pi.append(i)
                        pj.append(j)
                        psi.append(si)
                        psj.append(sj)
        pi = np.array(pi, dtype=np.int64)
        pj = np.array(pj, dtype=np.int64)
        bw = int(np.max(pi - pj)) if len(pi) else 0
        self.row_order = rows
        self._row_map, self._rb = row_map, rb
        from . import _kernels as K

        forces = dyn.forces
        mass = dyn.mass
        force_arrays = forces.compiled_arrays()  # the model's force elements; the layout's others are empty
        self.n_axis = len(force_arrays.get("ax_ia", ()))
        self.tau = force_arrays.get("tau", np.zeros(0))
        # the expressions not compiled into the module: evaluated in Python (t only, see fast_rhs)
        self.exprs = {}
        for kind in _EXPRESSION_KINDS:
            compiled = {s for s, _, _ in _compiled_expressions(dyn, kind)}
            self.exprs[kind] = [(s, fn) for s, fn in _expression_elements(dyn, kind) if s not in compiled]
        a_, b_ = (self.baumgarte or (0.0, 0.0))
        from ..expression_programs import ProgramTable

        programs = ProgramTable()  # every expression of the model, as data for the library's interpreter
        ax_prog, ax_const = _expression_table(dyn, "torque", self.n_axis, programs)
        ln_prog, ln_const = _expression_table(dyn, "force", len(force_arrays.get("ln_ia", ())), programs)
        group_data = [_time_function_data(gr["g"], programs) for gr in dyn.groups]
        templates, variants = library_templates(), library_variants()
        kept = set(rows.tolist()) if reduction is not None else None  # a planar mechanism's row variants
        grp = np.zeros((len(dyn.groups), 7), dtype=np.int64)
        for k, gr in enumerate(dyn.groups):
            g = gr["g"]
            entry = templates.index(g.template) if kept is None else _group_entry(templates, variants, gr, kept)
            grp[k] = (entry, gr["row0"], gr["neq"], bool(g.functions), g.n_angles > 0,
                      g.kind == "joint" and _n_measures(g) > 0,
                      len(K.COMMON) + len(self.extra_layout()) + k * len(K.GROUP))
        extra = self._extra_arrays(grp)  # a subclass's own (the tree of :mod:`.fast_tree`), right after COMMON
        P = _Packer()
        nmeas = len(model.joint_measures)
        sizes = np.array([dyn.nq, nmov, nb, m, bw, nmeas], dtype=np.int64)
        mpos = {}
        for n_, (_, kind_, gi_, inst_) in enumerate(model.joint_measures):
            mpos.setdefault(gi_, {})[(inst_, kind_)] = n_
        if reduction is None:
            imt = np.eye(3)[None, :, :] / mass.body_mass[:, None, None]
            jbinv = mass.body_inertia_inv
        else:
            imt, jbinv = reduction.translation_inverse_mass, reduction.body_inverse_inertia
        values = dict(q_fixed=model.q_fixed, com_all=mass.body_com_all, Jb=_pad(mass.body_inertia, nb),
                      Jbinv=_pad(jbinv, nb), mass=mass.body_mass, imt=imt,
                      gravf=forces.gravity_force.reshape(-1, 3),
                      row_map=row_map, rb=rb, pair_i=pi, pair_j=pj, pair_si=psi, pair_sj=psj, sizes=sizes,
                      stab=np.array([a_, b_, getattr(dyn, 'drop_tol', DROP_TOL), *(self.penalty or (0.0, 1, 0.0)),
                                     dyn.length_scale]), redundant=np.zeros(m),
                      ax_prog=ax_prog, ax_const=ax_const, ln_prog=ln_prog, ln_const=ln_const,
                      is_angle=np.array([kind_ == "angle" for _, kind_, _, _ in model.joint_measures], np.int64),
                      mref=np.zeros(nmeas), grp=grp)
        values.update(zip(("pg_ops", "pg_val", "pg_start"), programs.arrays()))
        values["pg_x"] = np.zeros(3)
        values.update(force_arrays)
        from .contacts import packed_contacts

        ct, self._ct_order = packed_contacts(forces.contacts)
        values.update(zip(("ct_s", "ct_o", "ct_ds", "ct_do", "ct_no", "ct_half", "ct_axis", "ct_kind", "ct_par",
                           "ct_pair", "ct_pc", "ct_feat", "ct_ft", "ct_bp", "ct_bx", "ct_state", "ct_opt",
                           "ct_stats"), ct))
        nrows = m
        work = dict(qf=np.zeros(7 * nb), qdf=np.zeros(7 * nb), A=np.zeros((nb, 3, 3)), rho=np.zeros((nb, 3)),
                    rc=np.zeros((nb, 3)), E=np.zeros((nb, 3, 4)), Jw=np.zeros((nb, 3, 3)), Jwinv=np.zeros((nb, 3, 3)),
                    B=np.zeros((nb, 7, 6)), bdot=np.zeros((nb, 7)), w=np.zeros((nb, 3)), vc=np.zeros((nb, 3)),
                    Jc=np.zeros((nrows, ns, 6)), gam=np.zeros(nrows), pt=np.zeros(nrows), ph=np.zeros(nrows),
                    aux=np.zeros(3 + nmeas),
                    X=np.zeros((nrows, ns, 6)), Lb=np.zeros((nrows, bw + 1)), dropped=np.zeros(nrows),
                    ratio=np.zeros(nrows), X_kin=np.zeros((nrows, ns, 6)), L_kin=np.zeros((nrows, bw + 1)),
                    drop_kin=np.zeros(nrows), ratio_kin=np.zeros(nrows), vres=np.zeros(nrows),
                    rhs_c=np.zeros(nrows), lam=np.zeros(nrows), lam_new=np.zeros(nrows), Fo=np.zeros((nb, 3)),
                    No=np.zeros((nb, 3)), fv=np.zeros(6 * nmov),
                    vd=np.zeros(6 * nmov))
        values.update(work)
        for name, kind, ndim in K.COMMON:
            # a force element type the model does not have: an empty array
            a = np.asarray(values[name]) if name in values else np.zeros((0,) * ndim)
            assert a.ndim == ndim, (name, a.shape)
            P.add(name, kind, a)
        for name, kind, a in extra:
            P.add(name, kind, a)
        self._timed = []
        self._angle_groups = []
        from ..symbolic.templates import TEMPLATES

        for k, gr in enumerate(dyn.groups):
            g = gr["g"]
            kinds = TEMPLATES[g.template].measures if g.kind == "joint" else ()
            pos = np.full((g.n, max(len(kinds), 1)), -1, dtype=np.int64)
            for i in range(g.n):
                for c, kind_ in enumerate(kinds):
                    pos[i, c] = mpos.get(gr["gi"], {}).get((i, kind_), -1)
            arrays = dict(gather=g.gather, markers=g.markers, params=g.params.reshape(g.n, -1), bodies=g.bodies,
                          F=np.zeros((g.n, 3)), ref=np.zeros((g.n, g.n_angles)), mpos=pos, **group_data[k],
                          Q=np.zeros(g.gather.shape), QD=np.zeros(g.gather.shape), W=np.zeros((g.n, g.n_angles)),
                          Jg=np.zeros((g.n, gr["neq"], g.gather.shape[1])), Gg=np.zeros((g.n, gr["neq"])),
                          Ph=np.zeros((g.n, gr["neq"])), Pt=np.zeros((g.n, gr["neq"])),
                          An=np.zeros((g.n, g.n_angles)), Ms=np.zeros((g.n, _n_measures(g))))
            for name, kind, ndim in K.GROUP:
                P.add(f"{name}_{k}", kind, arrays[name])
        self.df, self.di, self.dd, self.ws, views = P.pack()
        self._views = views
        self.aux = views["aux"]
        for k, gr in enumerate(dyn.groups):
            g = gr["g"]
            python_fns = [(i, fn) for i, fn in enumerate(g.functions) if group_data[k]["fn_kind"][i] == K.FN_PYTHON]
            if python_fns:
                self._timed.append((views[f"F_{k}"], python_fns))
            if g.n_angles:
                self._angle_groups.append((views[f"ref_{k}"], gr["gi"]))
        self.tau = views["tau"]
        self.line_force = views["ln_F"]
        #: the compliant contacts' impact speeds (compiled point order) and counters (evaluations, points
        #: evaluated, points in touch, features tested: :mod:`._contact_kernels`)
        self._ct_state = views["ct_state"]
        self.contact_stats = views["ct_stats"]
        self._stateful = bool(forces.contacts is not None and forces.contacts.stateful)
        self._refs_arr = views["ax_ref"]
        self._mref = views["mref"]
        self.m = m
        self.bw = bw
        python_exprs = self.exprs["torque"] or self.exprs["force"]
        self._needs_update = bool(self._timed or self._angle_groups or python_exprs or self.n_axis or self._stateful)
        #: nothing in ẏ is evaluated in Python (drivers' time functions, torque or force
        #: expressions not compiled into the module): the compiled integrator loop applies
        self.self_contained = not (self._timed or python_exprs)

    def choose_rows(self, t, y):
        """At an accepted state y (at t s): the redundant rows the evaluations drop until the
        next one (:func:`._kernels.choose_rows`); True if they changed."""
        from ._kernels import choose_rows

        return bool(self._on_joint_rows(t, y, choose_rows))

    def _on_joint_rows(self, t, y, fn):
        """fn(df, di, dd, ws) on the joint rows at (t, y) only: body kinematics and the constraint
        groups, not the forces and accelerations of a whole evaluation; ``aux`` keeps the
        by-products of the last evaluation, which the step's bookkeeping reads."""
        from ._kernels import stage_kinematics

        if self._needs_update:
            self._update(t)
        aux = self.aux.copy()
        y = np.ascontiguousarray(y, dtype=float)
        stage_kinematics(y, self.df, self.di, self.ws)
        self.groups_fn(t, y, self.df, self.di, self.dd, self.ws, False)
        out = fn(self.df, self.di, self.dd, self.ws)
        self.aux[:] = aux
        return out

    def extra_layout(self):
        """(name, kind, ndim) of a subclass's own packed arrays, right after :data:`._kernels.COMMON`
        (none here)."""
        return ()

    def _extra_arrays(self, grp):
        """[(name, kind, array)] of :meth:`extra_layout`, given the group table ``grp``."""
        return []

    def _update(self, t):
        for F, fns in self._timed:
            for i, fn in fns:
                F[i] = fn(t)
        for ref, gi in self._angle_groups:
            ref[:] = self.angles.ref[gi]
        for i, fn in self.exprs["torque"]:
            self.tau[i] = fn(t, 0.0, 0.0)
        for i, fn in self.exprs["force"]:
            self.line_force[i] = fn(t, 0.0, 0.0)
        if self.n_axis:
            self._refs_arr[:] = self.refs[:self.n_axis]
        if self._stateful:
            self._ct_state[:] = self.dyn.forces.contact_state(self.refs)[self._ct_order]

    def __call__(self, t, y):
        if self._needs_update:
            self._update(t)
        out, ok = self.rhs_fn(t, y, self.df, self.di, self.dd, self.ws)
        if not ok:
            raise FloatingPointError(f"the accelerations are not finite at t = {t:.6g} s")
        # self.aux: max |Jv v + Φt|, max |Φ| (and ||p|² − 1|), smallest pivot ratio of S, raw joint measures
        return out

    #: whether :meth:`frame` applies: the workspace holds the index-1 λ of every joint row after ``rhs``
    #: (the semi-recursive tree's subclass solves in other coordinates)
    frames = True

    def frame(self, t, y, angles, refs):
        """An output frame at (t, y) (y = [q, v, work]) with the winding state ``angles``, ``refs``
        of that frame: ``rhs`` on the index-1 equations (no Baumgarte or penalty terms; the rows
        of ``dyn.redundant`` dropped, as the numpy outputs drop them; :meth:`_rows_hold`), then
        :func:`._kernels.frame_reactions`. Returns None where that fails (not finite, or rows
        that no longer hold: the numpy outputs then take the frame), else a dict of ``vd``
        (6 nmov,: m/s², rad/s², world), ``lam`` (nc,: the minimum-norm multipliers in row order),
        ``wrench`` (Σ group instances, 6: [F N, T N m] on each instance's second body, about its
        first marker's origin, world axes), ``involved`` (nc,: 1 for the rows of a redundancy),
        ``vres`` (the rows' Jv v + Φt) and copies of the body kinematics (``qf``, ``A``, ``rho``,
        ``rc``, ``E``, ``Jw``, ``Jwinv``, ``vc``, ``w``) at unit Euler parameters. A planar
        mechanism's frames are evaluated on every row (its out-of-plane reactions too), by an
        instance without the reduction."""
        from ._kernels import frame_reactions

        if self.reduction is not None:
            if self._full is None:
                self._full = type(self)(self.dyn, self.angles, self.refs, self.baumgarte, self.penalty, planar=False)
            return self._full.frame(t, y, angles, refs)

        views = self._views
        stab, redundant = views["stab"], views["redundant"]
        saved = (self.angles, self.refs, stab.copy(), redundant.copy())
        try:
            self.angles, self.refs = angles, refs
            self._update(t)
            stab[0] = stab[1] = stab[3] = 0.0  # the index-1 λ: no Baumgarte terms, no penalty
            stab[4] = 1.0
            redundant[:] = 0.0
            redundant[self._row_map[self.dyn.redundant]] = 1.0
            y = np.ascontiguousarray(y, dtype=float)
            out, ok = self.rhs_fn(t, y, self.df, self.di, self.dd, self.ws)
            if not ok or not self._rows_hold(out[self.dyn.nq: self.dyn.nq + self.dyn.nv]):
                return None
            lam = np.zeros(self.dyn.nc)
            involved = np.zeros(self.dyn.nc, dtype=np.int64)
            wrench = np.zeros((sum(gr["n"] for gr in self.dyn.groups), 6))
            if not frame_reactions(self.df, self.di, self.dd, self.ws, lam, wrench, involved):
                return None
        finally:
            self.angles, self.refs = saved[0], saved[1]
            stab[:], redundant[:] = saved[2], saved[3]
        nq, nv = self.dyn.nq, self.dyn.nv
        frame = {name: views[name].copy() for name in ("qf", "A", "rho", "rc", "E", "Jw", "Jwinv", "vc", "w", "vres")}
        frame.update(vd=out[nq: nq + nv], lam=lam, wrench=wrench, involved=involved)
        return frame

    def _rows_hold(self, vd, rtol=1e-6):
        """After ``rhs`` with the rows of ``dyn.redundant`` dropped: True if exactly those were
        dropped and the accelerations vd satisfy every row, theirs included, Jv v̇ = γ̂ to rtol
        (relative to 1 + max |γ̂| + max |Jv v̇|). False where the redundant rows chosen before are
        no longer the dependent ones (a planar loop's move with its configuration)."""
        views = self._views
        if int(np.count_nonzero(views["dropped"])) != len(self.dyn.redundant):
            return False
        if not len(self.dyn.redundant):
            return True
        V = np.zeros((self.dyn.nmov + 1, 6))
        V[:-1] = vd.reshape(-1, 6)
        Jvd = np.einsum("rsl,rsl->r", views["Jc"], V[self._rb])
        gam = views["gam"]
        return bool(np.max(np.abs(Jvd - gam)) <= rtol * (1.0 + np.max(np.abs(gam)) + np.max(np.abs(Jvd))))

    def singularity(self, t, y):
        """:func:`._kernels.singularity` at (t, y): how near a singular configuration y is."""
        from ._kernels import singularity

        return float(self._on_joint_rows(t, y, singularity))  # (the fixed-step loops probe every step)

    def project(self, t, y, tol, max_iter=5):
        """(y, changed): positions then velocities projected onto the joints (mass-weighted,
        Δq = B Δv with Δv = −M⁻¹ Jvᵀ S⁻¹ Φ, at most ``max_iter`` steps until max |Φ| ≤ tol; then
        v −= M⁻¹ Jvᵀ S⁻¹ (Jv v + Φt) if that exceeds tol). ``tol`` in m (and rad, m/s, rad/s)."""
        self._update(t)
        y = np.array(y, dtype=float)
        changed = self.project_fn(t, y, self.df, self.di, self.dd, self.ws, float(tol), int(max_iter))
        return y, changed

    def dop853(self, times, y0, rtol, atol, project_tol=None, max_iter=5, meas_ref=None, zone=0.0):
        """Integrate ẏ = self(t, y) by the compiled DOP853 loop (:mod:`._dop853`, the method and
        step control of ``scipy.integrate.DOP853``) from (times[0], y0) to times[-1].

        Requires :attr:`self_contained`. The angle references of ``self.angles`` and
        ``self.refs`` and the joint measures' continuity reference ``meas_ref`` (rad or m, in
        ``model.joint_measures`` order) are the starting point and are followed in compiled
        code after every accepted step; ``project_tol`` (None: no projection) and
        ``max_iter`` are the projection formulation's (see :meth:`project`). rtol is relative,
        atol absolute in the state's units (m, 1, m/s, rad/s, J). ``zone`` > 0: stop with
        status ``_dop853.SINGULAR`` at an accepted step whose smallest pivot ratio of S is
        below it.

        Returns (status, Y, snapshots, stats, y_end): ``status`` one of ``_dop853.DONE``,
        ``NOT_FINITE``, ``STEP_COLLAPSE``, ``NAN_STATE``, ``SINGULAR``; ``y_end`` the state
        where the loop stopped; ``Y[k]`` the state at times[k] for the
        frames filled (``stats[_dop853.S_K]`` of them, frame 0 is y0); ``snapshots[k]`` the
        references after the step that reached frame k (give it to :meth:`restore`);
        ``stats`` as documented in :func:`._dop853.dop853`.
        """
        return self._loop(self.dop853_fn, times, y0, (float(rtol), float(atol)), project_tol, max_iter, meas_ref, zone)

    def radau(self, times, y0, rtol, atol, project_tol=None, max_iter=5, meas_ref=None, zone=0.0):
        """As :meth:`dop853`, by the compiled Radau IIA loop (:mod:`._radau`, the method, Newton
        iteration and step control of ``scipy.integrate.Radau``, iterating with the compiled
        analytic Jacobian); ``stats`` also holds the Jacobian evaluations and LU
        factorisations (``_radau.S_NJEV``, ``_radau.S_NLU``)."""
        return self._loop(self.radau_fn, times, y0, (float(rtol), float(atol)), project_tol, max_iter, meas_ref, zone)

    def rk4(self, times, y0, dt, project_tol=None, max_iter=5, meas_ref=None, zone=0.0):
        """As :meth:`dop853`, by the compiled fixed-step RK4 loop (:mod:`._rk4`, the steps of
        :meth:`.contract.Formulation._run_rk4`: each output interval in equal steps of at most
        ``dt`` s); the status is never ``STEP_COLLAPSE``, and ``stats[_rk4.S_STEP]`` is the last
        step h (s)."""
        return self._loop(self.rk4_fn, times, y0, (float(dt),), project_tol, max_iter, meas_ref, zone)

    def _loop(self, fn, times, y0, method_args, project_tol, max_iter, meas_ref, zone):
        from ._radau import N_STATS

        times = np.ascontiguousarray(times, dtype=float)
        y0 = np.ascontiguousarray(y0, dtype=float)
        self._update(times[0])
        self.choose_rows(float(times[0]), y0)
        if meas_ref is not None:
            self._mref[:] = meas_ref
        nt = len(times)
        Y = np.zeros((nt, len(y0)))
        Y[0] = y0
        snaps = np.zeros((nt, len(self.dd)))
        snaps[0] = self.dd
        stats = np.zeros(N_STATS)
        ptol = -1.0 if project_tol is None else float(project_tol)
        y_end = np.empty_like(y0)
        status = fn(float(times[0]), y0, times, *method_args, ptol, int(max_iter), float(zone), self.df,
                    self.di, self.dd, self.ws, Y, snaps, stats, y_end)
        return int(status), Y, snaps, stats, y_end

    def restore(self, snapshot):
        """Set ``self.angles``, ``self.refs`` from a snapshot of :meth:`dop853`; returns the
        joint measures' continuity reference of that snapshot."""
        self.dd[:] = snapshot
        for ref, gi in self._angle_groups:
            self.angles.ref[gi] = ref.copy()
        if self.n_axis:
            self.refs[:self.n_axis] = self._refs_arr
        if self._stateful:
            self.dyn.forces.contact_state(self.refs)[self._ct_order] = self._ct_state
        return self._mref.copy()


def _pad(a, nb):
    """Per-moving-body arrays padded to all bodies (fixed bodies get identity)."""
    out = np.zeros((nb,) + a.shape[1:])
    out[: len(a)] = a
    out[len(a):] = np.eye(3)
    return out
