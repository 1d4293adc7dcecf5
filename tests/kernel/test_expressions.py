"""Driver expressions are parsed from a whitelist, never executed, and differentiated exactly."""

import math

import pytest

from cadmotion.errors import ExpressionError
from cadmotion.kernel.expressions import parse_expression, time_function
from cadmotion.kernel.spec import TimeFunctionSpec


@pytest.mark.parametrize("text", [
    "__import__('os').system('echo pwned')", "t.__class__", "open('x')", "[t]", "lambda: 1", "t if t else 1",
    "x + 1", "'text'", "sin(t, t)", "exec('1')", "().__class__", "t; t",
])
def test_anything_outside_the_whitelist_is_rejected(text):
    with pytest.raises(ExpressionError):
        time_function(TimeFunctionSpec(expression=text))


def test_values_and_exact_derivatives():
    f = time_function(TimeFunctionSpec(expression="0.5*sin(2*pi*t) + t^2 - exp(-t)"))
    t = 0.3
    value, d1, d2 = f(t)
    assert value == pytest.approx(0.5 * math.sin(2 * math.pi * t) + t * t - math.exp(-t), abs=1e-15)
    assert d1 == pytest.approx(math.pi * math.cos(2 * math.pi * t) + 2 * t + math.exp(-t), abs=1e-14)
    assert d2 == pytest.approx(-2 * math.pi**2 * math.sin(2 * math.pi * t) + 2 - math.exp(-t), abs=1e-13)


def test_table_is_a_cubic_spline_through_the_points():
    rows = tuple((t, t**3) for t in (0.0, 0.5, 1.0, 1.5, 2.0))
    f = time_function(TimeFunctionSpec(table=rows))
    value, d1, d2 = f(1.25)  # not-a-knot cubic reproduces a cubic exactly
    assert (value, d1, d2) == pytest.approx((1.25**3, 3 * 1.25**2, 6 * 1.25), abs=1e-12)


def test_error_names_the_bad_name_and_the_allowed_ones():
    with pytest.raises(ExpressionError) as info:
        parse_expression("sin(tt)", where="m.toml: [[drivers]] #1")
    assert "tt" in str(info.value) and "m.toml" in str(info.value) and "sin" in str(info.value)
