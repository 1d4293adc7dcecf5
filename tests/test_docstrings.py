"""Every public function, class and method of the package has a docstring (issue 18, item 5).

Public: a module-level function or class, or a method of a public class, whose name does not
start with an underscore, in the package's layers (``kernel``, ``geometry``, ``importers``,
``plugin`` and the top-level modules; not tests, samples or benchmarks). Read with :mod:`ast`,
so no optional package (FreeCAD, cadquery, OCP) is imported.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the package's layers and top-level modules (as tests/test_layering.py reads them)
PACKAGE_PARTS = ("__init__.py", "errors.py", "kernel", "geometry", "importers", "plugin")


def package_files():
    """Every module file of the package (not tests, samples, benchmarks or a build/ tree)."""
    return [path for path in sorted(ROOT.rglob("*.py")) if path.relative_to(ROOT).parts[0] in PACKAGE_PARTS]


def undocumented(path):
    """``[(line, name)]`` of the public functions, classes and methods in ``path`` without a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or node.name.startswith("_"):
            continue
        members = [(node, node.name)]
        if isinstance(node, ast.ClassDef):
            members += [(m, f"{node.name}.{m.name}") for m in node.body
                        if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and not m.name.startswith("_")]
        found += [(m.lineno, name) for m, name in members if not ast.get_docstring(m)]
    return found


def test_every_public_function_class_and_method_has_a_docstring():
    missing = [f"{path.relative_to(ROOT)}:{line} {name}"
               for path in package_files() for line, name in undocumented(path)]
    assert not missing, "public functions without a docstring:\n" + "\n".join(missing)


def test_the_check_sees_functions_classes_and_methods_without_one(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(textwrap.dedent('''
        def documented():
            """Yes."""

        def bare():
            pass

        def _private():
            pass

        class Thing:
            """A thing."""

            def method(self):
                return 1

            def _helper(self):
                return 2

        class _Hidden:
            def method(self):
                return 3
    '''))
    assert undocumented(source) == [(5, "bare"), (14, "Thing.method")]
