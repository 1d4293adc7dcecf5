"""Helpers for building mechanisms in Python, without a model file."""

import numpy as np
import pytest

from cadmotion.importers.modelfile import parse_model


@pytest.fixture
def build():
    """``build(dict)`` -> MechanismSpec, the dict written like a parsed model file."""

    def _build(data):
        return parse_model(data, source="<test>")

    return _build


@pytest.fixture
def rng():
    return np.random.default_rng(1)


@pytest.fixture
def slider_crank(build):
    """``slider_crank(theta0, expression, driven="slide")`` -> (MechanismSpec, the slider's x in m): a planar
    slider-crank (crank 0.1 m, rod 0.3 m, pivot at the origin, the slider on +x) assembled at crank angle
    ``theta0`` (rad), the joint ``driven`` driven by ``expression``."""

    def _slider_crank(theta0, expression, driven="slide"):
        A = [0.1 * np.cos(theta0), 0.1 * np.sin(theta0), 0.0]
        xb = float(A[0] + np.sqrt(0.09 - A[1] ** 2))
        return build({
            "parts": {"ground": {"fixed": True}, "crank": {}, "rod": {"position": A},
                      "slider": {"position": [xb, 0, 0]}},
            "joints": [
                {"name": "pivot", "type": "revolute", "parts": ["ground", "crank"], "origin": [0, 0, 0],
                 "axis": [0, 0, 1]},
                {"name": "pin", "type": "revolute", "parts": ["crank", "rod"], "origin": A, "axis": [0, 0, 1]},
                {"name": "wrist", "type": "revolute", "parts": ["rod", "slider"], "origin": [xb, 0, 0],
                 "axis": [0, 0, 1]},
                {"name": "slide", "type": "prismatic", "parts": ["ground", "slider"], "origin": [xb, 0, 0],
                 "axis": [1, 0, 0]},
            ],
            "drivers": [{"joint": driven, "expression": expression}],
        }), xb

    return _slider_crank
