"""Expressions as data: checked expression code compiled to postfix programs for one interpreter.

A torque law tau(t, q, qd) or a driver's f(t), f'(t), f''(t) reaches compiled code as Python
source printed by sympy and checked against a whitelist (:func:`.dynamics.compiled_expressions.checked_code`).
:func:`compile_program` turns that source into a *program*, numbers rather than code, which the
one numba interpreter :func:`._program_kernels.evaluate` runs: models that differ in their
expressions share that interpreter's machine code instead of compiling a function each.

Program format, ``(ops, values)``:

- ``ops``, int64 (n, 2): one instruction per row, (opcode, argument), run from row 0 on a stack
  of float64 numbers; the program ends with exactly one number on the stack, the value of the
  expression, in whatever units the expression computes (N·m for a torque law, m or rad for a
  driver's f, per s and per s² for its derivatives): programs and interpreter know no units.
- ``values``, float64 (m,): the literal numbers of the code (integers, decimals the caller did not
  lift to ``c_<k>``, ``math.pi``, ``math.e``) and the constant subexpressions folded at compile
  time (such as ``1/2``).

The interpreter is given the variables ``x`` (float64, one per name of ``variables``, in that
order) and the constants ``c`` (float64, ``c[k]`` the value of the name ``c_<k>``).

======================  ============  ===========================================================
opcode                  argument      effect on the stack (``a``, ``b``: the top two, ``b`` on top)
======================  ============  ===========================================================
PUSH_VARIABLE           k             push x[k]
PUSH_CONSTANT           k             push c[k]
PUSH_VALUE              k             push values[k]
ADD SUBTRACT MULTIPLY   0             pop b, a; push a + b, a − b, a·b, a / b, a ** b
DIVIDE POWER
MODULO FLOOR_DIVIDE     0             pop b, a; push a % b, a // b (Python's: a % b has b's sign)
EQUAL NOT_EQUAL LESS    0             pop b, a; push 1.0 if a == b (!=, <, <=, >, >=) else 0.0
LESS_EQUAL GREATER
GREATER_EQUAL
MIN MAX                 0             pop b, a; push b if b < a (b > a) else a (Python's min, max)
ATAN2 COPYSIGN          0             pop b, a; push math.atan2(a, b), math.copysign(a, b)
NEGATE NOT ABS          0             pop a; push −a, 1.0 if a == 0 else 0.0, abs(a)
SIN COS TAN ASIN ACOS   0             pop a; push math.<function>(a)
ATAN SINH COSH TANH
EXP LOG SQRT
JUMP_IF_FALSE           r             pop a; if a == 0 (false; nan is true), go on at row r
JUMP                    r             go on at row r of the program
======================  ============  ===========================================================

Every number is a float64 (integers too) and arithmetic is IEEE: where Python raises or turns
complex (x/0, sqrt(−1), log(0), exp(1000), (−8)**(1/3)), the interpreter gives inf, −inf or nan;
``x % 0`` is nan and ``x // 0`` is x/0. A conditional expression ``a if test else b`` evaluates
only its taken branch (jumps), so ``1/q if q != 0 else 0`` never divides by zero. A program needs
at most :data:`STACK_SIZE` stack slots, which :func:`compile_program` checks.

Editing this module: the compiled interpreter bakes in these opcodes; this docstring names numba
so that :func:`.numba_cache.sources_digest` covers this file and a change here is a new cache.
"""

from __future__ import annotations

import ast
import math
import operator

import numpy as np

__all__ = ["STACK_SIZE", "compile_program", "ProgramTable"]

#: the stack slots the interpreter has; a program that needs more does not compile
STACK_SIZE = 32

# opcodes, numbered by kind in the order the interpreter tells them apart: the pushes, the binary
# operators (below NEGATE), the unary ones (below JUMP_IF_FALSE), the jumps
PUSH_VARIABLE, PUSH_CONSTANT, PUSH_VALUE = 0, 1, 2
ADD, SUBTRACT, MULTIPLY, DIVIDE, POWER, MODULO, FLOOR_DIVIDE = 3, 4, 5, 6, 7, 8, 9
EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL = 10, 11, 12, 13, 14, 15
MIN, MAX, ATAN2, COPYSIGN = 16, 17, 18, 19
NEGATE, NOT, ABS = 20, 21, 22
SIN, COS, TAN, ASIN, ACOS, ATAN, SINH, COSH, TANH, EXP, LOG, SQRT = range(23, 35)
JUMP_IF_FALSE, JUMP = 35, 36

#: opcode -> the Python function of floats it computes (constant folding uses it, so a folded
#: subexpression has the value the interpreter would give it)
_PYTHON = {
    ADD: operator.add, SUBTRACT: operator.sub, MULTIPLY: operator.mul, DIVIDE: operator.truediv,
    POWER: operator.pow, MODULO: operator.mod, FLOOR_DIVIDE: operator.floordiv,
    EQUAL: operator.eq, NOT_EQUAL: operator.ne, LESS: operator.lt, LESS_EQUAL: operator.le,
    GREATER: operator.gt, GREATER_EQUAL: operator.ge,
    MIN: min, MAX: max, ATAN2: math.atan2, COPYSIGN: math.copysign,
    NEGATE: operator.neg, NOT: operator.not_, ABS: abs,
    SIN: math.sin, COS: math.cos, TAN: math.tan, ASIN: math.asin, ACOS: math.acos, ATAN: math.atan,
    SINH: math.sinh, COSH: math.cosh, TANH: math.tanh, EXP: math.exp, LOG: math.log, SQRT: math.sqrt,
}
_UNARY = frozenset((NEGATE, NOT, ABS, SIN, COS, TAN, ASIN, ACOS, ATAN, SINH, COSH, TANH, EXP, LOG, SQRT))

_BINARY_OPERATORS = {
    ast.Add: ADD, ast.Sub: SUBTRACT, ast.Mult: MULTIPLY, ast.Div: DIVIDE, ast.Pow: POWER,
    ast.Mod: MODULO, ast.FloorDiv: FLOOR_DIVIDE,
}
_COMPARISONS = {
    ast.Eq: EQUAL, ast.NotEq: NOT_EQUAL, ast.Lt: LESS, ast.LtE: LESS_EQUAL, ast.Gt: GREATER,
    ast.GtE: GREATER_EQUAL,
}
#: ``math.<name>(...)`` -> opcode (its arity: 2 for ATAN2 and COPYSIGN, else 1)
_MATH_FUNCTIONS = {
    "sin": SIN, "cos": COS, "tan": TAN, "asin": ASIN, "acos": ACOS, "atan": ATAN, "atan2": ATAN2,
    "sinh": SINH, "cosh": COSH, "tanh": TANH, "exp": EXP, "log": LOG, "sqrt": SQRT, "copysign": COPYSIGN,
}
_MATH_CONSTANTS = {"pi": math.pi, "e": math.e}
#: the tag of a conditional expression's term (test, body, orelse)
_CONDITIONAL = "if"


class _Unsupported(Exception):
    """Code outside what :func:`compile_program` compiles."""


def compile_program(code, variables):
    """The program ``(ops, values)`` of checked expression source ``code`` (see the module for
    the format), or None when it cannot be compiled: a node, name, function, attribute or
    argument count outside the grammar, a chained comparison (``a < b < c``), an integer too
    large for a float, or a program deeper than :data:`STACK_SIZE`.

    ``variables``: the names of the interpreter's ``x``, in order (e.g. ("t", "q", "qd")); the
    names ``c_<k>`` are the constants ``c[k]``. Never raises."""
    try:
        term = _term(ast.parse(code, mode="eval").body, tuple(variables))
        assembler = _Assembler()
        assembler.emit(term)
    except (_Unsupported, SyntaxError, ValueError, TypeError, OverflowError, RecursionError, MemoryError):
        return None
    if assembler.max_depth > STACK_SIZE:
        return None
    return np.array(assembler.rows, dtype=np.int64).reshape(-1, 2), np.array(assembler.values, dtype=np.float64)


def _term(node, variables):
    """The expression tree of an AST node: (PUSH_VARIABLE, k), (PUSH_CONSTANT, k), (PUSH_VALUE,
    number), (opcode, *operand terms) or (_CONDITIONAL, test, body, orelse); constant operations
    folded."""
    if isinstance(node, ast.Constant):
        if type(node.value) not in (int, float):
            raise _Unsupported(node.value)
        return PUSH_VALUE, float(node.value)
    if isinstance(node, ast.Name):
        return _name(node.id, variables)
    if isinstance(node, ast.Attribute):
        if not (isinstance(node.value, ast.Name) and node.value.id == "math" and node.attr in _MATH_CONSTANTS):
            raise _Unsupported(node.attr)
        return PUSH_VALUE, _MATH_CONSTANTS[node.attr]
    if isinstance(node, ast.UnaryOp):
        operand = _term(node.operand, variables)
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.USub):
            return _operation(NEGATE, operand)
        if isinstance(node.op, ast.Not):
            return _operation(NOT, operand)
        raise _Unsupported(node.op)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY_OPERATORS:
        return _operation(_BINARY_OPERATORS[type(node.op)], _term(node.left, variables), _term(node.right, variables))
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARISONS:
        return _operation(_COMPARISONS[type(node.ops[0])], _term(node.left, variables),
                          _term(node.comparators[0], variables))
    if isinstance(node, ast.IfExp):
        return (_CONDITIONAL, _term(node.test, variables), _term(node.body, variables),
                _term(node.orelse, variables))
    if isinstance(node, ast.Call) and not node.keywords:
        return _call(node.func, [_term(arg, variables) for arg in node.args])
    raise _Unsupported(ast.dump(node))


def _name(name, variables):
    """The term of a bare name: a variable or a constant c_<k>."""
    if name in variables:
        return PUSH_VARIABLE, variables.index(name)
    digits = name[2:]
    if name.startswith("c_") and digits.isdigit() and str(int(digits)) == digits:
        return PUSH_CONSTANT, int(digits)
    raise _Unsupported(name)


def _call(func, args):
    """The term of a call of ``func`` (an AST node) on the terms ``args``."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "math":
        opcode = _MATH_FUNCTIONS.get(func.attr)
        if opcode is None or len(args) != (1 if opcode in _UNARY else 2):
            raise _Unsupported(func.attr)
        return _operation(opcode, *args)
    if isinstance(func, ast.Name) and func.id == "abs" and len(args) == 1:
        return _operation(ABS, *args)
    if isinstance(func, ast.Name) and func.id in ("min", "max") and len(args) >= 2:
        opcode = MIN if func.id == "min" else MAX
        term = args[0]
        for arg in args[1:]:  # Python's order: the running extreme, then each next argument
            term = _operation(opcode, term, arg)
        return term
    raise _Unsupported(ast.dump(func))


def _operation(opcode, *operands):
    """The term of ``opcode`` on ``operands``, folded to a value when they all are values and
    Python computes a real number from them (else the interpreter does, with IEEE results)."""
    if all(term[0] == PUSH_VALUE for term in operands):
        try:
            value = _PYTHON[opcode](*(term[1] for term in operands))
        except (ArithmeticError, ValueError):
            value = None
        if isinstance(value, (bool, int, float)):
            return PUSH_VALUE, float(value)
    return (opcode, *operands)


class _Assembler:
    """The rows and values of a program, emitted term by term, and the stack depth it needs."""

    def __init__(self):
        self.rows, self.values = [], []
        self.depth = self.max_depth = 0

    def instruction(self, opcode, argument, effect):
        """Append a row; ``effect``: the change of the stack's depth. Its index."""
        self.rows.append([opcode, argument])
        self.depth += effect
        self.max_depth = max(self.max_depth, self.depth)
        return len(self.rows) - 1

    def emit(self, term):
        tag = term[0]
        if tag == PUSH_VALUE:
            self.values.append(term[1])
            self.instruction(PUSH_VALUE, len(self.values) - 1, 1)
        elif tag in (PUSH_VARIABLE, PUSH_CONSTANT):
            self.instruction(tag, term[1], 1)
        elif tag == _CONDITIONAL:
            test, body, orelse = term[1:]
            self.emit(test)
            to_orelse = self.instruction(JUMP_IF_FALSE, 0, -1)
            self.emit(body)
            to_end = self.instruction(JUMP, 0, -1)  # the orelse path starts without the body's value
            self.rows[to_orelse][1] = len(self.rows)
            self.emit(orelse)
            self.rows[to_end][1] = len(self.rows)
        else:
            for operand in term[1:]:
                self.emit(operand)
            self.instruction(tag, 0, 1 - len(term[1:]))


class ProgramTable:
    """Programs packed into the three arrays of :func:`._program_kernels.evaluate`.

    :meth:`add` a program (or None) per expression; :meth:`arrays` gives ``ops`` (N, 2) int64,
    ``values`` float64 and ``start`` int64 (P + 1,): program p is the rows start[p] to
    start[p + 1] − 1 of ``ops``, its PUSH_VALUE arguments index the shared ``values`` and its
    jump arguments count rows from start[p]. ``ops`` ends with one padding row and ``values``
    with one padding 0.0 (never used), so neither is empty. A program added twice (a formula
    shared by several drivers, their numbers in ``c``) is stored once, under one index.
    """

    def __init__(self):
        self._ops, self._values, self._start = [], [], [0]
        self._value_count = 0
        self._index = {}

    def add(self, program):
        """The index p of ``program`` (``(ops, values)`` of :func:`compile_program`), or −1 for None."""
        if program is None:
            return -1
        ops, values = program
        key = (ops.tobytes(), values.tobytes())
        if key not in self._index:
            ops = np.array(ops, dtype=np.int64)
            ops[ops[:, 0] == PUSH_VALUE, 1] += self._value_count
            self._ops.append(ops)
            self._values.append(np.asarray(values, dtype=np.float64))
            self._value_count += len(values)
            self._start.append(self._start[-1] + len(ops))
            self._index[key] = len(self._start) - 2
        return self._index[key]

    def arrays(self):
        """(ops (N, 2) int64, values float64, start int64 (P + 1,)) of the programs added so far."""
        padding_row = np.array([[PUSH_VALUE, self._value_count]], dtype=np.int64)
        ops = np.concatenate(self._ops + [padding_row])
        values = np.concatenate(self._values + [np.zeros(1)])
        return ops, values, np.array(self._start, dtype=np.int64)
