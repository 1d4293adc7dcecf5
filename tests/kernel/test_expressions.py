"""Driver expressions are parsed from a whitelist, never executed, and differentiated exactly."""

import math

import numpy as np
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


def test_an_expression_is_parsed_once_per_process_and_a_bad_one_fails_each_time_where_it_is():
    """Runs parse a model's laws again; the second parse is the first's (immutable) expression,
    and the variables allowed are part of what is looked up."""
    first = parse_expression("0.01*exp(-t)")
    assert parse_expression("0.01*exp(-t)") is first
    assert str(parse_expression("q*t", variables=("t", "q"))) == "q*t"
    with pytest.raises(ExpressionError, match="unknown name 'q'"):
        parse_expression("q*t")
    for where in ("a.toml: [[drivers]] #1", "b.toml: [[forces]] #2"):
        with pytest.raises(ExpressionError) as info:
            parse_expression("sin(tt)", where=where)
        assert where in str(info.value)


def _driver(text, scale=1.0):
    from cadmotion.kernel.expressions import time_function
    from cadmotion.kernel.spec import TimeFunctionSpec

    return time_function(TimeFunctionSpec(expression=text, scale=scale))


def test_a_driver_read_back_from_the_cache_gives_the_numbers_of_its_derivation(tmp_path, monkeypatch):
    monkeypatch.setenv("CADMOTION_CACHE", str(tmp_path))
    text = "0.3*sin(2*pi*t) + t**3/7 - exp(-t)*sqrt(1 + t**2)"
    first = _driver(text, 0.5)                      # derived with sympy, stored
    (stored,) = (tmp_path / "drivers").glob("*.json")
    again = _driver(text, 0.5)                      # read back, no sympy
    for t in (0.0, 0.25, 1.3, 4.0):
        f, fd, fdd = again(t)
        assert (f, fd, fdd) == first(t)
        # closed form of f' for the record: 0.5 (0.6π cos 2πt + 3t²/7 + e^-t (√(1+t²) − t/√(1+t²)))
        s = math.sqrt(1 + t * t)
        assert fd == pytest.approx(0.5 * (0.6 * math.pi * math.cos(2 * math.pi * t) + 3 * t * t / 7
                                          + math.exp(-t) * (s - t / s)), rel=1e-12)
    assert stored.is_file()


def test_a_damaged_or_foreign_driver_cache_file_is_derived_again(tmp_path, monkeypatch):
    monkeypatch.setenv("CADMOTION_CACHE", str(tmp_path))
    _driver("2*pi*t")
    (stored,) = (tmp_path / "drivers").glob("*.json")
    stored.write_text('{"text": "2*pi*t", "scale": 1.0, "derivatives": ["__import__(\'os\')", "0", "0"]}')
    assert _driver("2*pi*t")(0.5) == pytest.approx((math.pi, 2 * math.pi, 0.0), abs=1e-15)
    stored.write_text("{trunc")
    assert _driver("2*pi*t")(0.5) == pytest.approx((math.pi, 2 * math.pi, 0.0), abs=1e-15)


def test_drivers_sharing_an_expression_read_its_cached_derivatives_once_per_cache(tmp_path, monkeypatch):
    """A thousand-link loop's drivers share seven expressions: each cache file is read once per
    process, and another cache folder is read (or filled) on its own."""
    from pathlib import Path

    first, second = tmp_path / "a", tmp_path / "b"
    monkeypatch.setenv("CADMOTION_CACHE", str(first))
    text = "0.25*(sin(t + 3) - sin(3))"
    _driver(text)                                   # derived with sympy, stored in the first cache
    reads = []
    read_text = Path.read_text

    def counting(path, *args, **kwargs):
        if path.parent.name == "drivers":
            reads.append(path)
        return read_text(path, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counting)
    values = {_driver(text)(1.0) for _ in range(50)}
    (value,) = values
    assert value == pytest.approx((0.25 * (math.sin(4) - math.sin(3)), 0.25 * math.cos(4), -0.25 * math.sin(4)),
                                  rel=1e-14)
    assert len(reads) == 1
    monkeypatch.setenv("CADMOTION_CACHE", str(second))
    assert _driver(text)(1.0) in values
    assert len(list((second / "drivers").glob("*.json"))) == 1  # not served from the first folder's reading


def test_many_drivers_are_evaluated_in_one_call_with_their_exact_values():
    """Drivers that share a formula and differ in numbers (and others beside them) are
    evaluated together; each row is the closed form f, f', f'' of its own expression."""
    from cadmotion.kernel.expressions import batch_evaluator

    amps, phases = (0.002, -0.5, 3.0, 1e-5), (0, 1, 2.5, 6)
    texts = [f"{a}*(sin(t + {p}) - sin({p}))" for a, p in zip(amps, phases)] + ["t^2 + 0.25", "2*pi*t"]
    batch = batch_evaluator(tuple(time_function(TimeFunctionSpec(expression=s)) for s in texts))
    assert batch is not None
    for t in (0.0, 0.37, 2.9, -1.2):
        got = batch(t)
        expect = [(a * (math.sin(t + p) - math.sin(p)), a * math.cos(t + p), -a * math.sin(t + p))
                  for a, p in zip(amps, phases)] + [(t * t + 0.25, 2 * t, 2.0), (2 * math.pi * t, 2 * math.pi, 0.0)]
        assert got.shape == (6, 3)
        np.testing.assert_allclose(got, expect, rtol=1e-14, atol=1e-15)


def test_a_batch_of_drivers_reports_a_domain_error_as_each_driver_does():
    from cadmotion.kernel.expressions import batch_evaluator

    fns = tuple(time_function(TimeFunctionSpec(expression=f"sqrt(t + {c})")) for c in (1, 2))
    batch = batch_evaluator(fns)
    np.testing.assert_allclose(batch(0.5), [[math.sqrt(1.5), 0.5 / math.sqrt(1.5), -0.25 / 1.5**1.5],
                                            [math.sqrt(2.5), 0.5 / math.sqrt(2.5), -0.25 / 2.5**1.5]], rtol=1e-14)
    with pytest.raises(ValueError):  # math.sqrt of a negative number, as fns[0](-1.5) raises
        fns[0](-1.5)
    with pytest.raises(ValueError):
        batch(-1.5)
