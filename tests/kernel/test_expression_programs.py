"""Expression code compiled to programs for the one numba interpreter gives Python's values.

The reference is always independent of the interpreter: Python's own ``eval`` of the same code
(its numbers as floats, the interpreter's arithmetic) or sympy's ``evalf`` of the expression the
code was printed from. Where Python raises (x/0, log(0), a complex power), the interpreter gives
IEEE's inf or nan instead, which has tests of its own.
"""

import ast
import math

import numpy as np
import pytest

pytest.importorskip("numba")

from cadmotion.kernel import expression_programs as P  # noqa: E402
from cadmotion.kernel._program_kernels import evaluate  # noqa: E402
from cadmotion.kernel.dynamics import compiled_expressions  # noqa: E402
from cadmotion.kernel.expression_programs import STACK_SIZE, ProgramTable, compile_program  # noqa: E402
from cadmotion.kernel.expressions import derivatives, parse_expression  # noqa: E402

TQQD = ("t", "q", "qd")


def run(code, variables, x, c=()):
    """The interpreter's value of ``code`` at the variables ``x`` and the constants ``c``."""
    program = compile_program(code, variables)
    assert program is not None, code
    table = ProgramTable()
    p = table.add(program)
    return evaluate(*table.arrays(), p, np.array(x, dtype=float), np.array(list(c) + [0.0], dtype=float))


class _FloatsAndRealPowers(ast.NodeTransformer):
    """The same code with its numbers as floats and ``a ** b`` refusing complex results."""

    def visit_Constant(self, node):
        return ast.copy_location(ast.Constant(float(node.value)), node) if type(node.value) is int else node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Pow):
            return ast.copy_location(ast.Call(ast.Name("real_power", ast.Load()), [node.left, node.right], []), node)
        return node


def _real_power(a, b):
    value = a**b
    if isinstance(value, complex):
        raise ValueError("a complex power")
    return value


def python_value(code, variables, x, c=()):
    """Python's value of ``code`` (float arithmetic), or None where Python raises."""
    tree = ast.fix_missing_locations(_FloatsAndRealPowers().visit(ast.parse(code, mode="eval")))
    names = {"math": math, "abs": abs, "min": min, "max": max, "real_power": _real_power,
             **dict(zip(variables, map(float, x))), **{f"c_{k}": float(v) for k, v in enumerate(c)}}
    try:
        return float(eval(compile(tree, "<code>", "eval"), {"__builtins__": {}}, names))
    except (ArithmeticError, ValueError, TypeError):
        return None


def same(a, b, rel=1e-12):
    """a and b equal to ``rel``, nan matching nan and inf its own sign."""
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
        return a == b or (math.isnan(a) and math.isnan(b))
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-300)


# ----------------------------------------------------------------------------- the program format

def test_a_program_is_postfix_rows_of_opcode_and_argument_and_its_literal_numbers():
    ops, values = compile_program("c_0*math.exp(-t) + 2.5*qd", TQQD)
    assert ops.dtype == np.int64 and ops.shape == (9, 2) and values.dtype == np.float64
    assert ops.tolist() == [[P.PUSH_CONSTANT, 0], [P.PUSH_VARIABLE, 0], [P.NEGATE, 0], [P.EXP, 0],
                            [P.MULTIPLY, 0], [P.PUSH_VALUE, 0], [P.PUSH_VARIABLE, 2], [P.MULTIPLY, 0], [P.ADD, 0]]
    assert values.tolist() == [2.5]


def test_constant_subexpressions_are_folded_to_one_value():
    ops, values = compile_program("(1/2)*t + math.log(2)*math.pi - -1/9", ("t",))
    assert len(ops) == 7 and values.tolist() == [0.5, math.log(2) * math.pi, -1 / 9]
    ops, values = compile_program("t + 1/0 + (-8)**(1/3)", ("t",))  # what Python cannot fold runs: inf, nan
    assert [P.DIVIDE, 0] in ops.tolist() and [P.POWER, 0] in ops.tolist()


def test_a_conditional_jumps_over_the_branch_not_taken():
    ops, values = compile_program("(1/q if q != 0 else 0)", TQQD)
    assert ops.tolist() == [[P.PUSH_VARIABLE, 1], [P.PUSH_VALUE, 0], [P.NOT_EQUAL, 0], [P.JUMP_IF_FALSE, 8],
                            [P.PUSH_VALUE, 1], [P.PUSH_VARIABLE, 1], [P.DIVIDE, 0], [P.JUMP, 9], [P.PUSH_VALUE, 2]]
    assert values.tolist() == [0.0, 1.0, 0.0]


def test_a_table_packs_programs_and_stores_a_shared_formula_once():
    table = ProgramTable()
    assert table.add(None) == -1
    first = table.add(compile_program("c_0*math.sin(t) + 3", ("t",)))
    second = table.add(compile_program("(0.5 if t > 1 else 7)", ("t",)))
    again = table.add(compile_program("c_0*math.sin(t) + 3", ("t",)))
    ops, values, start = table.arrays()
    assert (first, second, again) == (0, 1, 0)
    assert start.tolist() == [0, 6, 13] and len(ops) == 14 and len(values) == 5  # one padding row and value
    assert ops.dtype == start.dtype == np.int64 and values.dtype == np.float64
    x, c = np.array([2.0]), np.array([10.0])
    assert evaluate(ops, values, start, first, x, c) == 10 * math.sin(2.0) + 3
    assert evaluate(ops, values, start, second, x, c) == 0.5
    assert math.isnan(evaluate(ops, values, start, -1, x, c))  # an expression that did not compile


def test_an_empty_table_still_has_arrays():
    ops, values, start = ProgramTable().arrays()
    assert ops.shape == (1, 2) and values.shape == (1,) and start.tolist() == [0]


# ----------------------------------------------------------------------------- the grammar

#: code covering every opcode, each compared with Python at every point of POINTS
EVERY_OPERATION = [
    "t + q", "t - q", "t*q", "t/q", "abs(t)**q", "t**2", "t**(-3)", "t % q", "t // q", "-t", "+t", "not t",
    "(t == q) + 2*(t != q)", "(t < q) - (t <= q)", "(t > q)*3 + (t >= q)", "(qd if t < q else -qd)",
    "min(t, q)", "min(t, q, qd, 0.5)", "max(t, q)", "max(q, t, qd, -1)", "abs(t - q)",
    "math.atan2(t, q)", "math.copysign(t, q)", "math.copysign(1, q)",
    "math.sin(t)", "math.cos(t)", "math.tan(t)", "math.asin(t/4)", "math.acos(q/4)", "math.atan(t)",
    "math.sinh(t)", "math.cosh(t)", "math.tanh(t)", "math.exp(t)", "math.log(abs(t))", "math.sqrt(abs(q))",
    "math.pi*t + math.e*q", "c_0*t + c_1*q + c_2", "2*c_1**2 - 3.5",
]
POINTS = [(0.3, -1.7, 2.0), (-2.5, 0.4, -0.1), (1.25, 1.25, 0.0), (-0.6, -3.0, 1.5), (0.0, 2.0, -2.0)]
CONSTANTS = (0.1, -2.5, 7.0)


@pytest.mark.parametrize("code", EVERY_OPERATION)
def test_every_operator_and_function_gives_pythons_value(code):
    for x in POINTS:
        expected = python_value(code, TQQD, x, CONSTANTS)
        if expected is not None:
            assert same(run(code, TQQD, x, CONSTANTS), expected), (code, x)


def test_those_operations_use_every_opcode():
    used = {op for code in EVERY_OPERATION for op, _ in compile_program(code, TQQD)[0].tolist()}
    opcodes = {value for name, value in vars(P).items() if name.isupper() and name[0] != "_" and name != "STACK_SIZE"}
    assert used == opcodes


def test_the_taken_branch_alone_is_evaluated():
    code = "(1/q if q != 0 else 0)"
    assert run(code, TQQD, (0.0, 0.0, 0.0)) == 0.0
    for q in (-2.0, 0.5, 3.0):
        assert run(code, TQQD, (0.0, q, 0.0)) == 1 / q
    sign = "(0.0 if qd == 0 else math.copysign(1, qd))*math.sqrt(abs(qd))"
    assert [run(sign, TQQD, (0.0, 0.0, v)) for v in (-4.0, 0.0, 9.0)] == [-2.0, 0.0, 3.0]
    nested = "(math.log(q) if q > 0 else (0.0 if q == 0 else -math.log(-q)))"
    assert [run(nested, TQQD, (0.0, v, 0.0)) for v in (-math.e, 0.0, math.e)] == [-1.0, 0.0, 1.0]


def test_a_test_is_true_as_in_python_nan_included():
    assert [run("(1 if t else 2)", ("t",), (v,)) for v in (0.0, -0.0, 1e-300, -4.0, math.nan, math.inf)] \
        == [2.0, 2.0, 1.0, 1.0, 1.0, 1.0]
    assert [run("not t", ("t",), (v,)) for v in (0.0, -0.0, math.nan)] == [1.0, 1.0, 0.0]


def test_min_and_max_are_pythons_the_first_of_equal_arguments_and_nan_only_first():
    for code in ("min(t, q)", "max(t, q)"):
        for a, b in [(0.0, -0.0), (-0.0, 0.0), (math.nan, 1.0), (1.0, math.nan)]:
            got, expected = run(code, TQQD, (a, b, 0.0)), python_value(code, TQQD, (a, b, 0.0))
            assert same(got, expected) and math.copysign(1, got) == math.copysign(1, expected), (code, a, b)


def test_modulo_and_floor_division_are_pythons_with_negative_operands():
    for a in (7.0, -7.0, 7.5, -0.5, 0.0, -0.0, 1e-20):
        for b in (3.0, -3.0, 2.0, -2.0, 0.25, math.inf, -math.inf):
            for code in ("t % q", "t // q"):
                got, expected = run(code, TQQD, (a, b, 0.0)), python_value(code, TQQD, (a, b, 0.0))
                assert same(got, expected) and math.copysign(1, got) == math.copysign(1, expected), (code, a, b)


def test_what_python_raises_for_is_inf_or_nan():
    at = lambda code, t, q=0.0: run(code, TQQD, (t, q, 0.0))
    assert at("t/q", 1.0) == math.inf and at("t/q", -1.0) == -math.inf and math.isnan(at("t/q", 0.0))
    assert at("1/t", 0.0) == math.inf and at("1/t", -0.0) == -math.inf
    assert math.isnan(at("t % q", 1.0)) and at("t // q", 1.0) == math.inf and at("t // q", -1.0) == -math.inf
    assert at("t**(-1)", 0.0) == math.inf and math.isnan(at("t**(1/3)", -8.0)) and math.isnan(at("t**1.5", -2.0))
    assert math.isnan(at("math.sqrt(t)", -1.0)) and at("math.log(t)", 0.0) == -math.inf
    assert math.isnan(at("math.log(t)", -1.0)) and math.isnan(at("math.asin(t)", 2.0))
    assert math.isnan(at("math.acos(t)", -2.0))
    assert at("math.exp(t)", 1000.0) == math.inf and at("math.cosh(t)", -1000.0) == math.inf
    assert at("t**q", 10.0, 400.0) == math.inf and math.isnan(at("math.sin(t)", math.inf))


def test_deep_nesting_compiles_up_to_the_stack_size():
    def right_nested_sum(n):  # needs a stack of n values: t + (t + (... + t))
        return "t + (" * (n - 1) + "t" + ")" * (n - 1)

    assert run(right_nested_sum(STACK_SIZE), ("t",), (0.5,)) == STACK_SIZE * 0.5
    assert compile_program(right_nested_sum(STACK_SIZE + 1), ("t",)) is None
    branches = "t + (" * 20 + f"(-t if t < 0 else {right_nested_sum(12)})" + ")" * 20  # 20 + 12 deep
    assert run(branches, ("t",), (0.5,)) == 16.0 and run(branches, ("t",), (-0.5,)) == -9.5
    deeper = branches.replace(right_nested_sum(12), right_nested_sum(13))  # the deeper branch counts
    assert compile_program(deeper, ("t",)) is None
    composed = "t"
    for k in range(60):  # deep but narrow: one value on the stack at a time
        composed = f"math.{('sin', 'cos', 'atan')[k % 3]}({composed} + {k % 5})"
    assert same(run(composed, ("t",), (0.2,)), python_value(composed, ("t",), (0.2,)))
    left = "+".join(f"t*{k}" for k in range(200))  # long but shallow
    assert same(run(left, ("t",), (0.7,)), python_value(left, ("t",), (0.7,)))


@pytest.mark.parametrize("code", [
    "t.real", "os.sin(t)", "math.floor(t)", "math.inf", "math", "math.sin", "abs", "x + 1", "c_01*t", "c_x",
    "min(t)", "abs(t, q)", "math.sin(t, q)", "math.atan2(t)", "math.log(t, 2)", "math.pi(t)", "t(1)",
    "t < q < qd", "t in q", "t is q", "t @ q", "t & q", "~t", "t and q", "[t]", "'t'", "True", "1j*t", "None",
    "math.sin(x=t)", "lambda: t", "t +", "", "1" + "0" * 400 + "*t",
])
def test_code_outside_the_grammar_does_not_compile(code):
    assert compile_program(code, TQQD) is None


def test_a_name_is_a_variable_only_if_listed():
    assert compile_program("q", ("t",)) is None
    assert run("q - 2*t", ("q", "t"), (5.0, 1.5)) == 2.0
    assert compile_program(None, ("t",)) is None


# ----------------------------------------------------------------------------- what sympy prints

DRIVERS = [
    "sin(t)", "0.01*exp(-t)", "abs(t - 0.5)", "sign(t - 0.3)*t**2", "min(t, 0.5)", "max(t, 2*t, 0.3)",
    "sqrt(t)", "t**1.5", "t**(3/2)", "t**(1/2)", "t**(-1/2)", "t^-2", "t**(2/3)", "atan2(t, 0.3)", "log(t)",
    "e**t", "2**t", "pi*t", "asin(t/3)", "acos(t/3)", "atan(t)", "tanh(t)", "sinh(t)*cosh(t)", "tan(t)",
    "abs(sin(3*t))*sign(cos(t))", "min(sin(t), cos(t))", "max(abs(t - 1), 0.1)^2", "sqrt(abs(t - 1))",
    "exp(-t^2)*cos(5*t)", "min(t, 1)*max(t, -1)", "0.5*sin(2*pi*t) + t^2 - exp(-t)", "1/(1.5 + t)",
]
TIMES = (0.37, 1.21, 2.5)  # away from every jump of DRIVERS


@pytest.mark.parametrize("text", DRIVERS)
def test_a_drivers_f_and_its_derivatives_as_sympy_prints_them(text):
    import sympy

    t = sympy.Symbol("t", real=True)
    exact = derivatives(parse_expression(text))
    lifted, values, constants = compiled_expressions.lifted(parse_expression(text))
    names = {"t", "abs", "min", "max"} | {c.name for c in constants}
    for order, (d, expr) in enumerate(zip(derivatives(lifted), exact)):
        code = compiled_expressions.checked_code(d, names)
        assert code is not None and compile_program(code, ("t",)) is not None, (text, order, code)
        for time in TIMES:
            expected = float(expr.evalf(30, subs={t: time}))
            assert math.isclose(run(code, ("t",), (time,), values), expected, rel_tol=1e-12, abs_tol=1e-13), \
                (text, order, code, time)


LAWS = [
    "0.2*q*qd", "-5*sign(qd)*abs(qd)**0.5", "min(q, qd)", "sqrt(q^2 + qd^2)", "-1e4*q - 20*qd + 3*sin(t)",
    "max(0, -1e5*q)*(1 + 0.3*sign(qd))", "-2*atan(qd/0.01)/pi", "exp(-t)*tanh(q)", "-q*abs(q)^(3/2)",
]


@pytest.mark.parametrize("text", LAWS)
def test_a_torque_law_as_sympy_prints_it(text):
    import sympy

    expr = parse_expression(text, variables=TQQD)
    lifted, values, constants = compiled_expressions.lifted(expr)
    code = compiled_expressions.checked_code(lifted, compiled_expressions.EXPRESSION_NAMES | {c.name for c in constants})
    assert code is not None and compile_program(code, TQQD) is not None, code
    symbols = [sympy.Symbol(name, real=True) for name in TQQD]
    for x in [(0.1, -0.03, 0.7), (2.0, 0.02, -1.3), (0.5, -0.4, 0.25)]:
        expected = float(expr.evalf(30, subs=dict(zip(symbols, x))))
        assert math.isclose(run(code, TQQD, x, values), expected, rel_tol=1e-12, abs_tol=1e-13), (code, x)


# ----------------------------------------------------------------------------- random expressions

class _RandomCode:
    """Random code of the grammar (a fixed seed): every operator, comparison, function and the
    conditional, nested to ``depth``; exponents are leaves, so integer towers stay small."""

    LEAVES = ["t", "q", "qd", "c_0", "c_1", "c_2", "math.pi", "math.e", "0", "1", "2", "3", "0.5", "2.25", "-1.5"]
    BINARY = ["+", "-", "*", "/", "%", "//", "==", "!=", "<", "<=", ">", ">="]
    UNARY = ["-", "+", "not "]
    FUNCTIONS = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp", "log", "sqrt"]

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def pick(self, items):
        return items[self.rng.integers(len(items))]

    def code(self, depth):
        if depth == 0 or self.rng.random() < 0.2:
            return self.pick(self.LEAVES)
        inner = lambda: self.code(depth - 1)
        kind = self.rng.integers(8)
        if kind == 0:
            return f"({inner()} {self.pick(self.BINARY)} {inner()})"
        if kind == 1:
            return f"({inner()})**{self.pick(self.LEAVES)}"
        if kind == 2:
            return f"({self.pick(self.UNARY)}{inner()})"
        if kind == 3:
            return f"math.{self.pick(self.FUNCTIONS)}({inner()})"
        if kind == 4:
            return f"math.{self.pick(['atan2', 'copysign'])}({inner()}, {inner()})"
        if kind == 5:
            return f"abs({inner()})"
        if kind == 6:
            args = ", ".join(inner() for _ in range(self.rng.integers(2, 5)))
            return f"{self.pick(['min', 'max'])}({args})"
        return f"({inner()} if {inner()} else {inner()})"


def test_random_expressions_give_pythons_values():
    random = _RandomCode(seed=2024)
    compared = 0
    for _ in range(400):
        code = random.code(depth=5)
        program = compile_program(code, TQQD)
        assert program is not None, code
        table = ProgramTable()
        p = table.add(program)
        arrays = table.arrays()
        for _ in range(4):
            x = random.rng.uniform(-3, 3, 3).round(random.rng.integers(1, 17))  # ties and zeros too
            c = random.rng.uniform(-2, 2, 3)
            expected = python_value(code, TQQD, x, c)
            if expected is None:
                continue
            got = evaluate(*arrays, p, x, c)
            assert same(got, expected), (code, x.tolist(), c.tolist(), got, expected)
            compared += 1
    assert compared > 1000
