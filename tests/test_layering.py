"""The package's layers (issue 18, item 5): ``errors`` and ``kernel`` at the bottom, then
``geometry``, then ``importers``, then ``plugin``; an import may point down or sideways, never
up, and no modules import each other in a circle. OCP (OpenCASCADE) is imported by
``geometry/`` alone (issue 18, item 4), and there only inside functions, so that importing
any module of the package loads no OCP.

Every ``import`` statement is read with :mod:`ast`, at module level and inside functions
alike (a function-level import is a dependency too, only a later one), so the check needs
none of the optional packages (FreeCAD, cadquery, VTK) that the modules import.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "cadmotion"
#: rank of each top-level part of the package; an import from rank a to rank b > a is an arrow up
LAYERS = {"errors": 0, "kernel": 0, "geometry": 1, "importers": 2, "plugin": 3}
#: the one layer that may import OCP
GEOMETRY = "geometry"


def module_files(root):
    """{dotted module name: file} for every module of the package under ``root``: the
    top-level ``__init__.py`` and the layers (not tests, samples, benchmarks or a build/ tree)."""
    mods = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] not in ("__init__.py", "errors.py", "kernel", "geometry", "importers", "plugin"):
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join([PACKAGE, *parts])] = path
    return mods


def import_graph(mods):
    """{module: {imported module of the package: line}}.

    ``from . import x`` points at the submodule ``x`` where there is one, else at the
    package; importing a submodule is not counted as importing its parent package.
    """
    graph = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(base + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in mods:          # import a.b.c.name -> the module a.b.c
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.setdefault(target, node.lineno)
        graph[name] = edges
    return graph


def layer(module):
    parts = module.split(".")
    return LAYERS.get(parts[1]) if len(parts) > 1 else None


def upward_imports(graph):
    """["a -> b (line n)"] for each import from a lower layer to a higher one."""
    return [f"{a} -> {b} (line {line})" for a, edges in sorted(graph.items()) for b, line in sorted(edges.items())
            if layer(a) is not None and layer(b) is not None and layer(b) > layer(a)]


def cycles(graph):
    """Strongly connected groups of more than one module (Tarjan), each as its import pairs."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(f"{a} -> {b}" for a in group for b in graph[a] if b in group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def ocp_imports(mods):
    """[(module, line, at module level)] for each ``import OCP...``/``from OCP... import``."""
    found = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        in_function = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                in_function.update(id(n) for n in ast.walk(node) if n is not node)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                targets = [node.module or ""]
            else:
                continue
            if any(t == "OCP" or t.startswith("OCP.") for t in targets):
                found.append((name, node.lineno, id(node) not in in_function))
    return found


def ocp_outside_geometry(mods):
    """["module (line n)"] for each OCP import in a module outside ``geometry/``."""
    return [f"{m} (line {line})" for m, line, _ in ocp_imports(mods) if m.split(".")[1:2] != [GEOMETRY]]


def ocp_at_module_level(mods):
    """["module (line n)"] for each OCP import at the top of a module (not inside a function)."""
    return [f"{m} (line {line})" for m, line, top in ocp_imports(mods) if top]


def test_no_module_imports_a_higher_layer():
    up = upward_imports(import_graph(module_files(ROOT)))
    assert not up, "imports from a lower layer to a higher one:\n" + "\n".join(up)


def test_no_modules_import_each_other_in_a_circle():
    found = cycles(import_graph(module_files(ROOT)))
    assert not found, "import circles:\n" + "\n\n".join("\n".join(c) for c in found)


def test_only_the_geometry_layer_imports_ocp():
    found = ocp_outside_geometry(module_files(ROOT))
    assert not found, "OCP imported outside geometry/ (call cadmotion.geometry instead):\n" + "\n".join(found)


def test_the_geometry_layer_imports_ocp_inside_its_functions_only():
    """So that importing a geometry module (as importers and writers do at their top) loads no OCP:
    a command that reads or writes no CAD never pays for it, and a missing OCP fails only the call."""
    found = ocp_at_module_level(module_files(ROOT))
    assert not found, "OCP imported at module level:\n" + "\n".join(found)


def small_tree(root, files):
    """The modules (as :func:`module_files`) of a package written under ``root`` from ``{path: text}``."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return module_files(root)


def test_the_ocp_checks_see_imports_of_every_form(tmp_path):
    """The OCP checks themselves, on a small tree."""
    mods = small_tree(tmp_path, {
        "errors.py": "",
        "geometry/__init__.py": "",
        "geometry/shapes.py": "def f():\n    from OCP.TopoDS import TopoDS\n",
        "geometry/eager.py": "import OCP.gp\n",
        "importers/__init__.py": "",
        "importers/step.py": "def g():\n    import OCP\n",
        "plugin/__init__.py": "",
        "plugin/writer.py": "from OCP.BRep import BRep_Builder\nfrom .OCP import x\n",
    })
    assert ocp_outside_geometry(mods) == ["cadmotion.importers.step (line 2)", "cadmotion.plugin.writer (line 1)"]
    assert ocp_at_module_level(mods) == ["cadmotion.geometry.eager (line 1)", "cadmotion.plugin.writer (line 1)"]


def test_the_checks_see_upward_imports_and_circles_inside_functions(tmp_path):
    """The checks themselves, on a small tree that breaks both rules in function bodies."""
    graph = import_graph(small_tree(tmp_path, {
        "errors.py": "",
        "kernel/__init__.py": "",
        "kernel/motion.py": "def f():\n    from ..plugin.front import g\n",
        "plugin/__init__.py": "",
        "plugin/front.py": "from . import back\n",
        "plugin/back.py": "def h():\n    from .front import g\n",
    }))
    assert upward_imports(graph) == ["cadmotion.kernel.motion -> cadmotion.plugin.front (line 2)"]
    assert cycles(graph) == [["cadmotion.plugin.back -> cadmotion.plugin.front",
                              "cadmotion.plugin.front -> cadmotion.plugin.back"]]
