"""Time functions f(t) for drivers: whitelisted expressions and cubic-spline tables.

An expression is parsed with Python's ``ast`` module and rebuilt as a sympy expression
node by node from a whitelist; nothing in it is ever executed. Allowed: numbers, the
variable ``t`` (s), the constants ``pi`` and ``e``, the operators ``+ - * / ** ^``
(``^`` means power), parentheses, and the functions in :data:`FUNCTIONS`. Anything
else (attributes, subscripts, names such as ``__import__``, strings, lambdas) raises
:class:`~cadmotion.errors.ExpressionError`.

Every time function evaluates f(t), f'(t) and f''(t) exactly (symbolic derivatives of
an expression; analytic derivatives of the spline of a table).
"""

from __future__ import annotations

import ast
import math
import operator
import re

import numpy as np

from ..errors import ExpressionError
from .symbolic.lazy import lazy

sp = lazy("sympy")  # imported when an expression is built, not for a cached driver

__all__ = ["parse_expression", "TimeFunction", "time_function", "FUNCTIONS"]

#: function names allowed in expressions -> their sympy names
FUNCTIONS = {
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos",
    "atan": "atan", "atan2": "atan2", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
    "exp": "exp", "log": "log", "sqrt": "sqrt", "abs": "Abs", "sign": "sign",
    "min": "Min", "max": "Max",
}
_CONSTANTS = {"pi": "pi", "e": "E"}


def _time_symbol():
    return sp.Symbol("t", real=True)
_BINOPS = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a**b,
}
_MAX_LENGTH = 2000


#: expressions parsed in this process, by (text, variables): sympy expressions are immutable, and a
#: model's force laws and drivers are parsed again at every run (1.6 ms of a 30 ms slider-crank run)
_PARSED = {}
_PARSED_MAX = 4096


def parse_expression(text, *, variables=("t",), where=None):
    """Parse ``text`` into a sympy expression of the allowed ``variables``.

    Parameters
    ----------
    text : str, the expression, e.g. ``"0.5*sin(2*pi*t)"``.
    variables : names allowed as free variables (each becomes a real sympy Symbol).
    where : where the text came from, for the error message.
    """
    key = (text, tuple(variables)) if isinstance(text, str) else None
    if key in _PARSED:
        return _PARSED[key]
    expr = _parse(text, variables, where)
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[key] = expr
    return expr


def _parse(text, variables, where):
    if not isinstance(text, str):
        raise ExpressionError(f"expected an expression string, got {type(text).__name__}", where=where)
    if len(text) > _MAX_LENGTH:
        raise ExpressionError(f"expression longer than {_MAX_LENGTH} characters", where=where)
    try:
        # `^` means power here, with power's precedence (Python's ^ binds looser than +)
        tree = ast.parse(text.strip().replace("^", "**"), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(
            f"cannot parse expression {text!r}: {exc.msg}",
            where=where,
            hint="write arithmetic in t, e.g. 0.5*sin(2*pi*t) or t**2",
        ) from None
    symbols = {name: (_time_symbol() if name == "t" else sp.Symbol(name, real=True)) for name in variables}

    def build(node):
        if isinstance(node, ast.Expression):
            return build(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return sp.Float(node.value) if isinstance(node.value, float) else sp.Integer(node.value)
        if isinstance(node, ast.Name):
            if node.id in symbols:
                return symbols[node.id]
            if node.id in _CONSTANTS:
                return getattr(sp, _CONSTANTS[node.id])
            raise ExpressionError(
                f"unknown name {node.id!r} in expression {text!r}",
                where=where,
                hint=f"allowed names: {', '.join(list(variables) + list(_CONSTANTS))} "
                     f"and functions {', '.join(FUNCTIONS)}",
            )
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](build(node.left), build(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = build(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
            if node.keywords:
                raise ExpressionError(f"keyword arguments are not allowed in {text!r}", where=where)
            return getattr(sp, FUNCTIONS[node.func.id])(*[build(a) for a in node.args])
        raise ExpressionError(
            f"{type(node).__name__} is not allowed in expression {text!r}",
            where=where,
            hint="only numbers, t, pi, e, + - * / ** and the functions " + ", ".join(FUNCTIONS),
        )

    try:
        return build(tree)
    except ExpressionError:
        raise
    except (TypeError, ValueError) as exc:  # wrong argument count and similar
        raise ExpressionError(f"invalid expression {text!r}: {exc}", where=where) from None


class TimeFunction:
    """f(t) with exact first and second derivatives; ``__call__(t) -> (f, f', f'')``.

    ``expr`` is the (scaled) sympy expression of an expression function, ``spline`` the
    breakpoints x (s) and the cubic pieces' coefficients c (4, len(x) − 1) of a table's spline
    (scipy's ``PPoly`` layout, extrapolated by its end pieces); None otherwise. Compiled code
    (:mod:`cadmotion.kernel.dynamics.fast`) evaluates the function from them.
    """

    def __init__(self, evaluate, description, expr=None, spline=None, texts=None):
        self._evaluate = evaluate
        self.texts = texts  # [f, f', f''] in the grammar of _numeric, when known (see batch_evaluator)
        self.description = description
        self._expr = expr  # a sympy expression, or a function that builds it when asked
        self.spline = spline

    @property
    def expr(self):
        """The sympy expression of f(t), built on first use."""
        if callable(self._expr):
            self._expr = self._expr()
        return self._expr

    def __call__(self, t):
        return self._evaluate(t)

    def __repr__(self):
        return f"TimeFunction({self.description})"


def _almost_everywhere(expr):
    """``expr`` with the distributions that derivatives of sign/abs/min/max bring in
    replaced by their values away from the jump: DiracDelta -> 0, Heaviside -> step."""
    expr = expr.replace(sp.DiracDelta, lambda *args: sp.S.Zero)
    return expr.replace(sp.Heaviside, lambda x, *args: (sp.sign(x) + 1) / 2)


def derivatives(expr):
    """[f, f', f''] of an expression in t (the derivatives of sign/abs/min/max taken away from
    their jumps)."""
    return [expr] + [_almost_everywhere(sp.diff(expr, _time_symbol(), n)) for n in (1, 2)]


def _from_expression(text, scale, where):
    cached = _cached_derivatives(text, scale)
    if cached is not None:
        texts, (f0, f1, f2) = cached
        return TimeFunction(lambda t: (f0(t), f1(t), f2(t)), text,
                            expr=lambda: parse_expression(text, where=where) * scale, texts=list(texts))
    expr = parse_expression(text, where=where) * scale
    derivs = derivatives(expr)
    t = _time_symbol()
    funcs = [sp.lambdify(t, d, modules="math") for d in derivs]
    for d, fn in zip(derivs, funcs):  # fail now, not in the middle of a run
        try:
            value = float(fn(0.0))
        except (ValueError, ZeroDivisionError, OverflowError, TypeError):
            value = float("nan")
        if not math.isfinite(value) and d.free_symbols <= {t}:
            raise ExpressionError(
                f"expression {text!r} or its derivatives is not finite at t = 0", where=where,
                hint="drivers need f, f' and f'' defined over the whole run",
            )
    texts = _store_derivatives(text, scale, derivs, funcs)
    f0, f1, f2 = funcs
    return TimeFunction(lambda t: (float(f0(t)), float(f1(t)), float(f2(t))), text, expr=expr, texts=texts)


# ----------------------------------------------------------------------------- derivatives cache
#
# A driver's f, f', f'' are kept as text in the code cache, so a run whose drivers were seen
# before needs no sympy. The text is read back by ``_numeric``: the grammar of
# ``parse_expression`` (numbers, t, + - * / **, the ``math`` functions lambdify prints),
# evaluated with ``math`` in the printed order; never executed as Python code. An expression
# whose derivatives print outside that grammar (sign's conditional) is derived every run.

_NUMERIC_FUNCTIONS = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "atan2": math.atan2, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh,
    "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "abs": abs, "min": min, "max": max,
}
_NUMERIC_CONSTANTS = {"pi": math.pi, "e": math.e}
_NUMERIC_BINOPS = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a**b,
}


def _grammar_tree(tree, functions, binops, negate, leaf=None, binary=()):
    """f(t) of the derivative grammar's ``tree`` (numbers, t, pi, e, + - * / **, unary −, the
    calls in ``functions``; ``binops`` and ``negate`` the arithmetic to use, ``leaf(node)`` a value
    for other names or None, ``binary`` the functions that take exactly two arguments). ValueError
    for anything outside the grammar; nothing is executed."""

    def build(node):
        value = leaf(node) if leaf is not None else None
        if value is not None:
            return lambda t: value
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            value = float(node.value)
            return lambda t: value
        if isinstance(node, ast.Name) and node.id == "t":
            return lambda t: t
        if isinstance(node, ast.Name) and node.id in _NUMERIC_CONSTANTS:
            value = _NUMERIC_CONSTANTS[node.id]
            return lambda t: value
        if isinstance(node, ast.BinOp) and type(node.op) in binops:
            op, a, b = binops[type(node.op)], build(node.left), build(node.right)
            return lambda t: op(a(t), b(t))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            a = build(node.operand)
            return (lambda t: negate(a(t))) if isinstance(node.op, ast.USub) else a
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions
                and not node.keywords):
            fn, args = functions[node.func.id], [build(a) for a in node.args]
            if node.func.id in binary and len(args) != 2:
                raise ValueError(f"{node.func.id} of other than two arguments")
            return lambda t: fn(*[a(t) for a in args])
        raise ValueError(f"{ast.dump(node)} is not in the derivative grammar")

    return build(tree)


def _numeric(text):
    """f(t) -> float of an expression in t as lambdify prints it for ``math`` (ValueError for
    anything outside the grammar)."""
    f = _grammar_tree(ast.parse(text, mode="eval").body, _NUMERIC_FUNCTIONS, _NUMERIC_BINOPS, operator.neg)
    return lambda t: float(f(float(t)))


_BATCH_FUNCTIONS = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "atan2": np.arctan2, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "exp": np.exp, "log": np.log,
    "sqrt": np.sqrt, "abs": np.abs, "min": np.minimum, "max": np.maximum,
}
_BATCH_BINOPS = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide,
                 ast.Pow: np.power}


#: a number as the derivative printer writes it (not the digits of a name such as atan2)
_NUMBER = re.compile(r"(?<![\w.])(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _shape_and_numbers(text):
    """``text`` with its k-th number replaced by the name ``_c<k>`` (a key shared by texts that
    differ only in numbers), and the numbers in order."""
    numbers = []

    def name(match):
        numbers.append(float(match.group(0)))
        return f"_c{len(numbers) - 1}"

    return _NUMBER.sub(name, text), numbers


def _vector_tree(shape, numbers):
    """f(t) -> (n,) evaluating the text ``shape`` (see :func:`_shape_and_numbers`) for n
    instances whose numbers are the rows of ``numbers`` (n, k); the grammar of
    :func:`_numeric`, with numpy."""
    def number(node):
        if isinstance(node, ast.Name) and node.id.startswith("_c") and node.id[2:].isdigit():
            return numbers[:, int(node.id[2:])].copy()
        return None

    n = numbers.shape[0]
    f = _grammar_tree(ast.parse(shape, mode="eval").body, _BATCH_FUNCTIONS, _BATCH_BINOPS, np.negative,
                      leaf=number, binary=("min", "max"))
    return lambda t: np.broadcast_to(f(float(t)), (n,))


def batch_evaluator(functions):
    """One call for many time functions: ``F(t) -> (n, 3)`` of f, f', f'' per function, or
    None when some function is not an expression whose derivative texts are known.

    Drivers of one model usually share their formula and differ in numbers (amplitudes,
    phases); the instances are grouped by the shape of their texts and each group is
    evaluated once with numpy over arrays of its numbers, instead of one Python call per
    node per instance. Values agree with the per-instance ones to round-off. Where a value
    is not finite (a domain error the per-instance call reports), the per-instance calls
    are made, so their errors are the same."""
    if not functions or any(getattr(fn, "texts", None) is None for fn in functions):
        return None
    n = len(functions)
    try:
        groups = {}
        for i, fn in enumerate(functions):
            parts = [_shape_and_numbers(text) for text in fn.texts]
            entry = groups.setdefault(tuple(p[0] for p in parts), ([], []))
            entry[0].append(i)
            entry[1].append([p[1] for p in parts])
        plans = []
        for shapes, (members, numbers) in groups.items():
            evaluators = [_vector_tree(shape, np.array([nums[d] for nums in numbers], dtype=float)
                                       .reshape(len(members), len(numbers[0][d])))
                          for d, shape in enumerate(shapes)]
            plans.append((np.array(members), evaluators))
    except (ValueError, SyntaxError, RecursionError):
        return None

    def evaluate(t):
        out = np.empty((n, 3))
        with np.errstate(all="ignore"):
            for members, evaluators in plans:
                for d, ev in enumerate(evaluators):
                    out[members, d] = ev(t)
        if not np.isfinite(out).all():
            return np.array([fn(t) for fn in functions], dtype=float)
        return out

    return evaluate


def _derivatives_key():
    """The digest of what every cached derivative depends on besides its expression: sympy's
    version and this module's source (read once per process)."""
    global _DERIVATIVES_KEY
    if _DERIVATIVES_KEY is None:
        import hashlib
        from pathlib import Path

        from .symbolic.codegen import sympy_version

        _DERIVATIVES_KEY = hashlib.sha256((sympy_version() + Path(__file__).read_text()).encode()).hexdigest()
    return _DERIVATIVES_KEY


_DERIVATIVES_KEY = None
#: cache file path -> ([f, f', f''] texts, their functions of t), as read from the code cache by this process
_DERIVATIVES_READ = {}


def _derivatives_path(text, scale):
    import hashlib

    from .symbolic.codegen import cache_dir

    h = hashlib.sha256()
    for part in (_derivatives_key(), text, repr(float(scale))):
        h.update(part.encode())
    return cache_dir() / "drivers" / f"{h.hexdigest()[:24]}.json"


def _cached_derivatives(text, scale):
    """The cached [f, f', f''] texts of a driver and their functions of t, or None (missing,
    unreadable, another expression). A file read once is kept for the process: a model whose
    thousand drivers share a few expressions reads and parses each expression once."""
    import json

    path = _derivatives_path(text, scale)
    key = str(path)
    if key in _DERIVATIVES_READ:
        return _DERIVATIVES_READ[key]
    try:
        data = json.loads(path.read_text())
        if data["text"] != text or data["scale"] != float(scale):
            return None
        derivs = tuple(str(d) for d in data["derivatives"])
        if len(derivs) != 3:
            return None
        found = derivs, tuple(_numeric(d) for d in derivs)
    except Exception:  # a damaged or foreign file is a cache miss: derive again
        return None
    _DERIVATIVES_READ[key] = found
    return found


def _store_derivatives(text, scale, derivs, funcs):
    """Keep [f, f', f''] as text when reading it back gives lambdify's numbers (else keep
    nothing); returns the texts in that case, else None."""
    import json
    import os
    import tempfile

    from sympy.printing.pycode import PythonCodePrinter

    # the printer lambdify uses for modules="math", so the text evaluates in lambdify's order
    printer = PythonCodePrinter({"fully_qualified_modules": False, "inline": True, "allow_unknown_functions": True})
    texts = [printer.doprint(d) for d in derivs]
    try:
        numeric = [_numeric(d) for d in texts]
        for t in (0.0, 0.37, 1.9):
            for f, g in zip(numeric, funcs):
                a, b = f(t), float(g(t))
                if not (a == b or abs(a - b) <= 1e-12 * max(1.0, abs(b))):
                    return None
    except (ValueError, ArithmeticError, TypeError, SyntaxError, RecursionError):
        return None
    path = _derivatives_path(text, scale)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump({"text": text, "scale": float(scale), "derivatives": texts}, fh)
        os.replace(tmp, path)
    except OSError:
        pass  # read-only cache: derive again next time
    return texts


def _from_table(rows, scale, where):
    from scipy.interpolate import CubicSpline

    data = np.asarray(rows, dtype=float)
    if data.ndim != 2 or data.shape[1] != 2 or len(data) < 2:
        raise ExpressionError("a table needs at least two [t, value] rows", where=where)
    if np.any(np.diff(data[:, 0]) <= 0):
        raise ExpressionError("table times must increase strictly", where=where)
    if len(data) == 2:
        spline = CubicSpline(data[:, 0], data[:, 1] * scale, bc_type="natural")
    else:
        spline = CubicSpline(data[:, 0], data[:, 1] * scale, bc_type="not-a-knot")
    d1, d2 = spline.derivative(1), spline.derivative(2)
    return TimeFunction(lambda t: (float(spline(t)), float(d1(t)), float(d2(t))), f"table of {len(data)} rows",
                        spline=(spline.x, spline.c))


def time_function(spec, where=None):
    """A :class:`TimeFunction` from a :class:`~cadmotion.kernel.spec.TimeFunctionSpec`."""
    if spec.expression is not None and spec.table:
        raise ExpressionError("give either an expression or a table, not both", where=where)
    if spec.expression is not None:
        return _from_expression(spec.expression, spec.scale, where)
    if spec.table:
        return _from_table(spec.table, spec.scale, where)
    raise ExpressionError("a driver needs an expression or a table", where=where)
