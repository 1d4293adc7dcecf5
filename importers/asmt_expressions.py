"""Translate OndselSolver (``.asmt``) and FreeCAD motion formulas into cadmotion's syntax.

OndselSolver writes driver and limit functions as text in its own small language
(``SymbolicParser`` in the solver): numbers in Smalltalk notation (``2.0d``,
``1.5d-3``, ``1e-3``), the variable ``time``, the constant ``pi``, the operators
``+ - * / ^`` and the functions ``abs sin cos asin/arcsin arctan``.  Newer writers also
use ``tan exp sqrt ln`` and friends.  cadmotion's kernel parses another whitelist
(:mod:`cadmotion.kernel.expressions`): numbers, ``t``, ``+ - * / ** ^``, parentheses,
``sin cos tan asin acos atan atan2 sinh cosh tanh exp log sqrt abs min max sign``,
``pi`` and ``e``.

This module never calls :func:`eval`.  A recursive-descent parser following the
grammar of OndselSolver's ``SymbolicParser`` builds a small tree, which is then either
printed in the kernel's syntax (:func:`translate_expression`) or evaluated with
:mod:`math` for a given time (:func:`evaluate_expression`, used for constant limits
and for the value of a driver at the start time).

Grammar (OndselSolver's, which differs from Python's in two places noted below)::

    expression := ['+' | '-'] term (('+' | '-') term)*
    term       := factor (('*' | '/') factor)*
    factor     := primary ['^' factor]                 # right associative
    primary    := '(' expression ')' | number | signed-number | 'pi'
                | function '(' expression (',' expression)* ')' | variable

* a leading minus negates the whole first *term*: ``-2^2`` is ``-(2^2)`` = -4;
* elsewhere a sign followed by a number makes a signed constant:
  ``time*-2^2`` is ``time*((-2)^2)``.  Both are kept exactly by the printed parentheses.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Dict, Optional, Tuple, Union

from ..errors import ExpressionError

__all__ = ["translate_expression", "evaluate_expression", "parse_expression", "Node"]

# source name -> (kernel name, number of arguments or None for 1..n)
_FUNCTIONS: Dict[str, Tuple[str, Optional[int]]] = {
    "abs": ("abs", 1),
    "sin": ("sin", 1),
    "cos": ("cos", 1),
    "tan": ("tan", 1),
    "asin": ("asin", 1),
    "arcsin": ("asin", 1),
    "acos": ("acos", 1),
    "arccos": ("acos", 1),
    "atan": ("atan", 1),
    "arctan": ("atan", 1),
    "atan2": ("atan2", 2),
    "arctan2": ("atan2", 2),
    "sinh": ("sinh", 1),
    "cosh": ("cosh", 1),
    "tanh": ("tanh", 1),
    "exp": ("exp", 1),
    "ln": ("log", 1),
    "sqrt": ("sqrt", 1),
    "sign": ("sign", 1),
    "min": ("min", None),
    "max": ("max", None),
}

_UNSUPPORTED_FUNCTIONS = {
    "spline", "integral", "rampstep", "piecewise", "functions", "transitions", "log",
}

_MATH = {
    "abs": abs, "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin,
    "acos": math.acos, "atan": math.atan, "atan2": math.atan2, "sinh": math.sinh,
    "cosh": math.cosh, "tanh": math.tanh, "exp": math.exp, "log": math.log,
    "sqrt": math.sqrt, "sign": lambda x: math.copysign(1.0, x) if x != 0 else 0.0,
    "min": min, "max": max,
}

_NUMBER = re.compile(r"(\d+\.?\d*|\.\d+)(?:([de])([+-]?\d+)?)?")


@dataclass(frozen=True)
class Node:
    """One node of a parsed expression.

    ``kind`` is ``num`` (``value``), ``var`` (the time variable), ``pi``, ``neg``
    (``args[0]``), ``bin`` (``op`` in ``+ - * / ^``, two ``args``) or ``call``
    (``op`` = kernel function name, ``args``).
    """

    kind: str
    value: float = 0.0
    op: str = ""
    args: Tuple["Node", ...] = ()


def _tokenize(text, where):
    tokens = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if text.startswith("<n>", i):  # OndselSolver's line tag inside long formulas
            i += 3
            continue
        if c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            m = _NUMBER.match(text, i)
            mantissa = float(m.group(1))
            exponent = int(m.group(3)) if m.group(3) else 0
            tokens.append(("num", mantissa * 10.0 ** exponent, i))
            i = m.end()
            continue
        if c.isalpha() or c == "_":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            tokens.append(("word", text[i:j], i))
            i = j
            continue
        if c == "*" and text.startswith("**", i):
            tokens.append(("op", "^", i))
            i += 2
            continue
        if c in "+-*/^(),":
            tokens.append(("op", c, i))
            i += 1
            continue
        raise ExpressionError(
            f"unexpected character {c!r} at position {i} in {text!r}", where=where,
            hint="OndselSolver expressions use numbers, time, pi, + - * / ^ and functions",
        )
    tokens.append(("end", None, n))
    return tokens


class _Parser:
    def __init__(self, text, variables, where):
        self.text = text
        self.where = where
        self.variables = variables
        self.tokens = _tokenize(text, where)
        self.k = 0

    # -- helpers -----------------------------------------------------------------
    @property
    def tok(self):
        return self.tokens[self.k]

    def _is(self, kind, value=None):
        t = self.tok
        return t[0] == kind and (value is None or t[1] == value)

    def _eat(self, kind, value=None):
        if self._is(kind, value):
            self.k += 1
            return True
        return False

    def _fail(self, expected):
        kind, value, pos = self.tok
        got = "the end" if kind == "end" else repr(value)
        raise ExpressionError(
            f"expected {expected} at position {pos} of {self.text!r}, found {got}",
            where=self.where,
        )

    # -- grammar -------------------------------------------------------------------
    def parse(self):
        node = self.expression()
        if not self._is("end"):
            self._fail("an operator or the end")
        return node

    def expression(self):
        if self._eat("op", "-"):
            node = Node("neg", args=(self.term(),))
        else:
            self._eat("op", "+")
            node = self.term()
        while True:
            if self._eat("op", "+"):
                node = Node("bin", op="+", args=(node, self.term()))
            elif self._eat("op", "-"):
                node = Node("bin", op="-", args=(node, self.term()))
            else:
                return node

    def term(self):
        node = self.factor()
        while True:
            if self._eat("op", "*"):
                node = Node("bin", op="*", args=(node, self.factor()))
            elif self._eat("op", "/"):
                node = Node("bin", op="/", args=(node, self.factor()))
            else:
                return node

    def factor(self):
        base = self.primary()
        if self._eat("op", "^"):
            return Node("bin", op="^", args=(base, self.factor()))
        return base

    def primary(self):
        kind, value, pos = self.tok
        if self._eat("op", "("):
            node = self.expression()
            if not self._eat("op", ")"):
                self._fail("')'")
            return node
        if kind == "num":
            self.k += 1
            return Node("num", value=value)
        if kind == "op" and value in "+-" and self.tokens[self.k + 1][0] == "num":
            self.k += 2
            v = self.tokens[self.k - 1][1]
            return Node("num", value=-v if value == "-" else v)
        if kind == "word":
            self.k += 1
            if value == "pi":
                return Node("pi")
            if value in self.variables:
                return Node("var")
            if value in _FUNCTIONS:
                name, nargs = _FUNCTIONS[value]
                if not self._eat("op", "("):
                    self._fail(f"'(' after {value}")
                args = [self.expression()]
                while self._eat("op", ","):
                    args.append(self.expression())
                if not self._eat("op", ")"):
                    self._fail("')'")
                if nargs is not None and len(args) != nargs:
                    raise ExpressionError(
                        f"{value}() takes {nargs} argument(s), got {len(args)} in {self.text!r}",
                        where=self.where,
                    )
                return Node("call", op=name, args=tuple(args))
            if value in _UNSUPPORTED_FUNCTIONS:
                raise ExpressionError(
                    f"the function {value}() in {self.text!r} is not supported by cadmotion",
                    where=self.where,
                    hint="rewrite the driver with sin, cos, exp, sqrt, ... of time"
                    + ("; OndselSolver's log base is ambiguous, use ln" if value == "log" else ""),
                )
            raise ExpressionError(
                f"unknown name {value!r} at position {pos} of {self.text!r}",
                where=self.where,
                hint="the only variable is 'time' and the only constant 'pi'",
            )
        self._fail("a number, 'time', 'pi', a function or '('")


def parse_expression(text, *, variables=("time",), where=None):
    """Parse an OndselSolver expression into a :class:`Node` tree.

    Parameters
    ----------
    text : str
        The expression as written in the file (e.g. ``"2.0d*pi*time"``).
    variables : tuple of str
        Names that denote the time variable.
    where : str, optional
        File and item, for error messages.

    Raises
    ------
    ExpressionError
        On syntax errors and on names or functions outside the whitelist.
    """
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("empty expression", where=where)
    return _Parser(text, tuple(variables), where).parse()


def _fmt(x):
    r = repr(float(x))
    if "inf" in r or "nan" in r:
        raise ExpressionError(f"non-finite number {r} in an expression")
    return r


_PREC = {"+": 1, "-": 1, "*": 2, "/": 2, "neg": 3, "^": 4}


def _print(node):
    """Return (text, precedence) of a node in the kernel's syntax; atoms have 5."""
    k = node.kind
    if k == "num":
        return (_fmt(node.value), 5) if node.value >= 0 else (f"({_fmt(node.value)})", 5)
    if k == "var":
        return "t", 5
    if k == "pi":
        return "pi", 5
    if k == "call":
        return f"{node.op}({', '.join(_print(a)[0] for a in node.args)})", 5
    if k == "neg":
        s, p = _print(node.args[0])
        return (f"-{s}" if p == 5 else f"-({s})"), 3
    op = node.op
    (ls, lp), (rs, rp) = _print(node.args[0]), _print(node.args[1])
    # a negation is always parenthesised as an operand: "a*(-b)", "(-a)^2"
    if node.args[0].kind == "neg":
        ls, lp = f"({ls})", 5
    if node.args[1].kind == "neg":
        rs, rp = f"({rs})", 5
    prec = _PREC[op]
    if op == "^":  # right associative; parenthesise anything that is not an atom
        ls = ls if lp == 5 else f"({ls})"
        rs = rs if rp == 5 else f"({rs})"
        return f"{ls}^{rs}", 4
    ls = ls if lp >= prec else f"({ls})"
    # left associative: the right operand needs parentheses at equal precedence for - and /
    rs = rs if (rp > prec or (rp == prec and op in "+*")) else f"({rs})"
    if op in "+-":
        return f"{ls} {op} {rs}", prec
    return f"{ls}{op}{rs}", prec


def translate_expression(text, *, variables=("time",), where=None):
    """Translate an OndselSolver expression into the kernel's expression syntax.

    Parameters
    ----------
    text : str
        Source expression, e.g. ``"2.0d*pi*time"``.
    variables : tuple of str
        Names of the time variable in the source (``time`` for OndselSolver).
    where : str, optional
        File and item for error messages.

    Returns
    -------
    str
        The same function in the kernel's syntax, with ``t`` for time
        (``"2.0*pi*t"``).  Parentheses are added where the two grammars would read
        the text differently.

    Examples
    --------
    >>> translate_expression("2.0d*pi*time")
    '2.0*pi*t'
    >>> translate_expression("-2^2")
    '-(2.0^2.0)'
    """
    return _print(parse_expression(text, variables=variables, where=where))[0]


def _eval(node, t):
    k = node.kind
    if k == "num":
        return node.value
    if k == "var":
        return t
    if k == "pi":
        return math.pi
    if k == "neg":
        return -_eval(node.args[0], t)
    if k == "call":
        return _MATH[node.op](*(_eval(a, t) for a in node.args))
    a, b = _eval(node.args[0], t), _eval(node.args[1], t)
    return {"+": a + b, "-": a - b, "*": a * b}.get(node.op) if node.op in "+-*" else (
        a / b if node.op == "/" else a ** b)


def evaluate_expression(text_or_node: Union[str, Node], t=0.0, *, variables=("time",), where=None):
    """Value of an expression at time ``t`` (s), computed with :mod:`math` (no ``eval``).

    Raises
    ------
    ExpressionError
        If the text does not parse or the value is not a finite real number.
    """
    node = text_or_node if isinstance(text_or_node, Node) else parse_expression(
        text_or_node, variables=variables, where=where)
    try:
        value = float(_eval(node, float(t)))
    except (ValueError, ZeroDivisionError, OverflowError, TypeError) as exc:
        raise ExpressionError(f"cannot evaluate the expression at t={t}: {exc}", where=where) from None
    if not math.isfinite(value):
        raise ExpressionError(f"the expression is not finite at t={t}", where=where)
    return value
