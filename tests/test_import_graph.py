"""The import graph of the project's packages: `common/` (the mechanism every family shares) imports no family folder,
no script and no root entry point; no family imports a root entry point (its Python API builds what the command line
builds from common/); and no module imports itself through others. Imports inside functions count (a local import
that dodges a circle is still a circle); those under `if TYPE_CHECKING:` do not (they never run).
Under tests/, no module imports a test module (test_*.py): helpers live in conftest.py or in modules of other names."""
from __future__ import annotations

import ast
from pathlib import Path

from common.registry import FAMILIES

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("common", *FAMILIES.values(), "scripts", "experiments")
ROOT_MODULES = ("train", "inference", "hubconf", "multiproc")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    modules = {module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}
    modules.update({name: ROOT / f"{name}.py" for name in ROOT_MODULES})
    return modules


def _runs(node: ast.AST) -> list[ast.AST]:
    """The nodes below `node` that run: all but the bodies of `if TYPE_CHECKING:`."""
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            found += [inner for statement in child.orelse for inner in [statement, *_runs(statement)]]
            continue
        found += [child, *_runs(child)]
    return found


def imports_of(path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules that `path` imports (`from package import module` counts as the module)."""
    imported = set()
    for node in _runs(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        imported |= {name for name in names if name in modules}
    return imported


def imports_of_test_modules(tests: Path) -> list[tuple[str, str]]:
    """(importer, imported) for each module under the folder `tests` that imports a test module (a file named
    test_*.py there): `import tests.x.test_y`, `from tests.x.test_y import ...` and `from tests.x import test_y`."""
    modules = {module_name(path, tests.parent): path for path in sorted(tests.rglob("*.py"))}
    return sorted((name, imported) for name, path in modules.items() for imported in imports_of(path, modules)
                  if imported.rsplit(".", 1)[-1].startswith("test_"))


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imports_of(path, modules) - {name} for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, without recursion)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_common_imports_no_family_script_or_entry_point():
    graph = import_graph()
    reaching_up = {name: sorted(target for target in targets if target.split(".")[0] != "common")
                   for name, targets in graph.items() if name.split(".")[0] == "common"}
    assert {name: targets for name, targets in reaching_up.items() if targets} == {}


def test_no_family_imports_a_root_entry_point():
    graph = import_graph()
    families = set(FAMILIES.values())
    reaching_root = {name: sorted(targets & set(ROOT_MODULES)) for name, targets in graph.items()
                     if name.split(".")[0] in families}
    assert {name: targets for name, targets in reaching_root.items() if targets} == {}


def test_no_module_imports_itself_through_others():
    assert circles(import_graph()) == []


def test_no_test_module_imports_another():
    """Importing a test module runs its module-level code and ties its collection to the importer's, and a helper
    hidden in one is found by nobody looking for helpers: shared helpers go to conftest.py (fixtures) or to a module
    not named test_* (tests/training_runs.py, tests/hifigan/tiny_hifigan.py, ...)."""
    assert imports_of_test_modules(ROOT / "tests") == []


def test_no_package_imports_a_test_module():
    """The library, scripts and experiments may use a test helper module (an experiment reusing the reference's
    equations), never a test module."""
    test_modules = {module_name(path): path for path in sorted((ROOT / "tests").rglob("test_*.py"))}
    found = sorted((name, imported) for name, path in project_modules().items()
                   for imported in imports_of(path, test_modules))
    assert found == []


def test_the_graph_sees_a_local_import_and_a_circle(tmp_path):
    """The checks above can fail: a function-local import is an edge, and two modules importing each other are
    a circle; an import under `if TYPE_CHECKING:` is not an edge."""
    modules = {"common.a": tmp_path / "a.py", "common.b": tmp_path / "b.py", "tacotron2.model": tmp_path / "m.py"}
    (tmp_path / "a.py").write_text("import common.b\n")
    (tmp_path / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import tacotron2.model\n"
                                   "def f():\n    from common import a\n")
    graph = {"common.a": {"common.b"}, "common.b": {"common.a"}}
    assert {name: imports_of(path, modules) - {name} for name, path in modules.items() if name != "tacotron2.model"
            } == graph
    assert circles({**graph, "tacotron2.model": set()}) == [["common.a", "common.b"]]


def test_the_test_module_check_sees_each_spelling_of_an_import(tmp_path):
    """test_no_test_module_imports_another can fail: each way of importing a test module is an edge, at module level
    or in a function; importing a helper module is not, nor is an import under `if TYPE_CHECKING:`."""
    tests = tmp_path / "tests"
    (tests / "x").mkdir(parents=True)
    files = {"x/test_y.py": "", "x/helpers.py": "",
             "test_a.py": "import tests.x.test_y\n",
             "test_b.py": "from tests.x.test_y import SOMETHING\n",
             "x/conftest.py": "def fixture():\n    from tests.x import test_y\n",
             "test_c.py": "from typing import TYPE_CHECKING\nfrom tests.x import helpers\nimport tests.x.helpers\n"
                          "if TYPE_CHECKING:\n    import tests.x.test_y\n"}
    for name, text in files.items():
        (tests / name).write_text(text)
    assert imports_of_test_modules(tests) == [("tests.test_a", "tests.x.test_y"), ("tests.test_b", "tests.x.test_y"),
                                              ("tests.x.conftest", "tests.x.test_y")]
