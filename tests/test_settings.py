"""Settings reach the library typed: `common/` and the Python APIs read no parsed command line by name
(`getattr(args, ...)`, `setattr(args, ...)`); the command line's layer turns its flags into the settings dataclasses
(common.arguments.config_from_args)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def namespace_lookups(path: Path) -> list[str]:
    """`getattr(args, ...)` and `setattr(args, ...)` calls in a file, as 'file:line'."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr")
                and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "args"):
            found.append(f"{path}:{node.lineno}")
    return found


def test_common_and_the_python_apis_read_no_command_line_by_name():
    files = sorted((ROOT / "common").rglob("*.py")) + sorted(ROOT.glob("*/api.py"))
    assert len(files) > 30 and ROOT / "tacotron2" / "api.py" in files
    assert [lookup for path in files for lookup in namespace_lookups(path)] == []


def test_the_check_finds_a_lookup_by_name(tmp_path):
    module = tmp_path / "common" / "module.py"
    module.parent.mkdir()
    module.write_text("def f(args, name):\n    return getattr(args, name, None)\n\n"
                      "def g(args):\n    setattr(args, 'x', 1)\n    return getattr(other, 'y')\n")
    assert [lookup.rsplit(":", 1)[1] for lookup in namespace_lookups(module)] == ["2", "5"]
