"""The numba interpreter of expression programs (:mod:`.expression_programs`, which documents the
format and the opcodes): one function, compiled once, evaluates every model's torque laws and
drivers' time functions from data.

The stack is its top value, kept in a local variable (a register), over
:data:`~.expression_programs.STACK_SIZE` float64 slots in the interpreter's own stack frame (an
LLVM ``alloca``): a call allocates nothing on the heap.
"""

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from . import expression_programs as P
from .numba_cache import numba  # numba, its cache folder named by the kernel sources


@intrinsic
def _stack_slots(typingctx):
    """A pointer to STACK_SIZE uninitialised float64 slots in the calling function's frame."""

    def codegen(context, builder, signature, args):
        return cgutils.alloca_once(builder, ir.DoubleType(), size=P.STACK_SIZE)

    return types.CPointer(types.float64)(), codegen


@numba.njit(cache=True, nogil=True, error_model="numpy")
def evaluate(ops, values, start, p, x, c):
    """The value of program p of a :class:`.expression_programs.ProgramTable`'s arrays ``ops``,
    ``values``, ``start``, at the variables ``x`` and the constants ``c`` (float64 1-D arrays, as
    long as the program's largest index into them); nan for p = −1 (an expression that did not
    compile). IEEE results, never an exception."""
    stack = numba.carray(_stack_slots(), P.STACK_SIZE)
    # no early return for p = -1: numba would then count references to the array arguments
    # (about 50 ns a call); start[-1] >= start[0], so no row runs and top stays nan
    top = np.nan
    begin = start[p]
    end = start[p + 1]
    row = begin
    n = 0  # values in stack[] below top, the value on top of the stack
    while row < end:
        op = ops[row, 0]
        arg = ops[row, 1]
        row += 1
        if op == P.PUSH_VARIABLE:
            stack[n] = top
            n += 1
            top = x[arg]
        elif op == P.PUSH_CONSTANT:
            stack[n] = top
            n += 1
            top = c[arg]
        elif op == P.PUSH_VALUE:
            stack[n] = top
            n += 1
            top = values[arg]
        elif op < P.NEGATE:  # binary: pop b, a; push a (op) b
            n -= 1
            a = stack[n]
            b = top
            if op == P.ADD:
                top = a + b
            elif op == P.SUBTRACT:
                top = a - b
            elif op == P.MULTIPLY:
                top = a * b
            elif op == P.DIVIDE:
                top = a / b
            elif op == P.POWER:
                top = a**b
            elif op == P.MODULO:
                top = a % b
            elif op == P.FLOOR_DIVIDE:
                top = a // b
            elif op == P.EQUAL:
                top = 1.0 if a == b else 0.0
            elif op == P.NOT_EQUAL:
                top = 1.0 if a != b else 0.0
            elif op == P.LESS:
                top = 1.0 if a < b else 0.0
            elif op == P.LESS_EQUAL:
                top = 1.0 if a <= b else 0.0
            elif op == P.GREATER:
                top = 1.0 if a > b else 0.0
            elif op == P.GREATER_EQUAL:
                top = 1.0 if a >= b else 0.0
            elif op == P.MIN:
                top = b if b < a else a
            elif op == P.MAX:
                top = b if b > a else a
            elif op == P.ATAN2:
                top = math.atan2(a, b)
            else:
                top = math.copysign(a, b)
        elif op < P.JUMP_IF_FALSE:  # unary: pop a; push f(a)
            a = top
            if op == P.NEGATE:
                top = -a
            elif op == P.NOT:
                top = 1.0 if a == 0.0 else 0.0
            elif op == P.ABS:
                top = abs(a)
            elif op == P.SIN:
                top = math.sin(a)
            elif op == P.COS:
                top = math.cos(a)
            elif op == P.TAN:
                top = math.tan(a)
            elif op == P.ASIN:
                top = math.asin(a)
            elif op == P.ACOS:
                top = math.acos(a)
            elif op == P.ATAN:
                top = math.atan(a)
            elif op == P.SINH:
                top = math.sinh(a)
            elif op == P.COSH:
                top = math.cosh(a)
            elif op == P.TANH:
                top = math.tanh(a)
            elif op == P.EXP:
                top = math.exp(a)
            elif op == P.LOG:
                top = math.log(a)
            else:
                top = math.sqrt(a)
        elif op == P.JUMP_IF_FALSE:
            test = top
            n -= 1
            top = stack[n]
            if test == 0.0:
                row = begin + arg
        else:  # JUMP
            row = begin + arg
    return top
