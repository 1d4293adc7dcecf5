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
