"""Torque, force and time-function expressions as data for the compiled library.

Torque expressions τ(t, q, qd) (``torque`` force elements), force expressions F(t, q, qd) along
joint axes (``force`` elements) and drivers' expression time functions f(t), f'(t), f''(t) are
data of the compiled right-hand side: the parsed, whitelisted sympy expression
(:func:`~cadmotion.kernel.expressions.parse_expression`, never the user's text) is printed by
sympy's Python code printer — the printer ``lambdify`` uses for the numpy path — with its decimals
lifted to constants c_0, c_1, … (:func:`lifted`), the printed code is checked against a whitelist
of names (t, q, qd, abs, min, max and ``math`` functions and constants: :func:`checked_code`) and
compiled to a program of :mod:`..expression_programs`, which the library's interpreter evaluates
(:func:`._kernels.stage_expressions`: q the element's continuous joint angle in rad and qd its rate
in rad/s, or its displacement in m and rate in m/s; :func:`._kernels.time_functions`). An
expression that has no program stays a Python callback (:class:`.fast.FastRHS` evaluates it at
(t, 0, 0) before each call, so only when it reads t alone); a table's cubic spline is evaluated
from its coefficients.
"""

from __future__ import annotations

import ast

import numpy as np

__all__ = ["EXPRESSION_KINDS", "EXPRESSION_NAMES", "expression_code", "expression_constants", "expression_program",
           "lifted", "checked_code", "time_function_data", "expression_elements", "compiled_expressions",
           "expression_table"]



#: names printed expression code may use: the arguments, builtins numba compiles for scalars,
#: and ``math`` attributes (the functions of cadmotion.kernel.expressions.FUNCTIONS as sympy's
#: Python printer writes them, and its constants)
EXPRESSION_NAMES = frozenset(("t", "q", "qd", "abs", "min", "max"))
_EXPR_MATH = frozenset(("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp",
                        "log", "sqrt", "copysign", "pi", "e"))
_EXPR_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Call, ast.IfExp, ast.Compare, ast.Name, ast.Load,
               ast.Attribute, ast.Constant, ast.operator, ast.unaryop, ast.cmpop)
_EXPR_CODE = {}


def expression_code(fn):
    """Python source of a torque expression ``fn`` (a :class:`.forces._Expression`) of
    (t, q, qd) for the compiled right-hand side, or None if it cannot be compiled.

    The source is printed by sympy from the parsed expression tree, then checked node by
    node: only arithmetic, comparisons and conditional expressions (``sign``), numbers, the
    arguments, abs/min/max and whitelisted ``math`` attributes. Decimal numbers are printed
    as ``c_0``, ``c_1``, … (:func:`expression_constants` gives their values, passed at run
    time), so that expressions differing only in them have the same program."""
    return _expression_parts(fn)[0]


def expression_constants(fn):
    """The values of c_0, c_1, … in :func:`expression_code`."""
    return _expression_parts(fn)[2]


def expression_program(fn):
    """The program (:mod:`..expression_programs`) of :func:`expression_code`, or None."""
    return _expression_parts(fn)[1]


def lifted(expr):
    """``expr`` with its Float atoms (the decimals a user writes and tunes) replaced by symbols
    c_k; their values. Integers and rationals stay (exponents such as the ½ of ``sqrt``)."""
    import sympy

    numbers = sorted((a for a in expr.atoms(sympy.Float) if a.is_finite), key=lambda a: (float(a), sympy.srepr(a)))
    symbols = [sympy.Symbol(f"c_{k}", real=True) for k in range(len(numbers))]
    return expr.xreplace(dict(zip(numbers, symbols))), [float(a) for a in numbers], set(symbols)


def checked_code(expr, names):
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
        bare, values, consts = lifted(expr)
        code = checked_code(bare, EXPRESSION_NAMES | {c.name for c in consts})
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
        bare, values, consts = lifted(expr)
        names = {"t", "abs", "min", "max"} | {c.name for c in consts}
        codes = [checked_code(d, names) for d in derivatives(bare)]
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


def time_function_data(g, programs):
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
EXPRESSION_KINDS = ("torque", "force")


def expression_elements(dyn, kind):
    """[(s, fn)]: the expression elements of ``kind`` — "torque": torques about joint axes, s
    their index among the axis elements (after the rotational springs); "force": forces along
    joint axes, s their index among the line elements."""
    forces = dyn.forces
    if kind == "torque":
        if forces.angle is None:
            return []
        return [(forces.n_axis_rot + i, fn) for i, (_, fn) in enumerate(forces.axis_expr)]
    return [] if forces.line is None else list(enumerate(forces.line["fns"]))


def compiled_expressions(dyn, kind):
    """[(s, program, constants)]: the expressions of ``kind`` compiled code evaluates."""
    out = []
    for s, fn in expression_elements(dyn, kind):
        _, program, values = _expression_parts(fn)
        if program is not None:
            out.append((s, program, values))
    return out


def expression_table(dyn, kind, n, programs):
    """(program per element, (n, m) constants) of the ``n`` elements of ``kind``: row s of the
    constants holds the c_k of element s's program (added to ``programs``; −1: no program)."""
    items = compiled_expressions(dyn, kind)
    prog = np.full(n, -1, dtype=np.int64)
    consts = np.zeros((n, max([len(values) for _, _, values in items] + [1])))
    for s, program, values in items:
        prog[s] = programs.add(program)
        consts[s, :len(values)] = values
    return prog, consts

