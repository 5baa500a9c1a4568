"""The package layers, enforced on every import statement of every module (issue 9).

Bottom first: the core ``vasimov`` (joint table, frames, commands and their validator, motor space, model, ROS
helpers) imports no other project package; the node packages ``vasimov_plant``, ``vasimov_edge`` and
``vasimov_bridge`` import the core and themselves, never each other and never the tools; ``vasimov_tools`` (CLI,
supervisor, benches, recorder, the reference closed loop) may import anything. ``vasimov_msgs`` is generated message
code and allowed everywhere. A rule two node packages share belongs in the core.

The checker reads the source with ``ast`` (nothing is imported), so an import inside a function or behind
``TYPE_CHECKING`` counts as much as one at the top: both are a dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: Generated code every layer may import.
ANYWHERE = frozenset({"vasimov_msgs"})
CORE = "vasimov"
NODE_PACKAGES = ("vasimov_plant", "vasimov_edge", "vasimov_bridge")
TOOLS = "vasimov_tools"
PROJECT = frozenset({CORE, *NODE_PACKAGES, TOOLS})

#: package -> the project packages it may import (itself always included).
ALLOWED: dict[str, frozenset[str]] = {
    CORE: frozenset({CORE}),
    **{pkg: frozenset({CORE, pkg}) for pkg in NODE_PACKAGES},
    TOOLS: PROJECT,
}


@dataclass(frozen=True)
class Violation:
    file: Path
    line: int
    package: str
    imported: str

    def __str__(self) -> str:
        allowed = ", ".join(sorted(ALLOWED.get(self.package, frozenset()) | ANYWHERE))
        return (f"{self.file}:{self.line}: {self.package} imports {self.imported} "
                f"(a {self.package} module may import only {allowed})")


def _module_name(root: Path, path: Path) -> list[str]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def imported_modules(tree: ast.AST, module: list[str], is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, dotted module) for every import in ``tree``; relative imports resolved against ``module``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                yield node.lineno, node.module or ""
                continue
            base = module if is_package else module[:-1]
            base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
            yield node.lineno, ".".join([*base, *([node.module] if node.module else [])])


def project_packages(root: Path) -> list[str]:
    """Top-level project packages under ``root``: directories named ``vasimov*`` with an ``__init__.py``."""
    return sorted(p.parent.name for p in root.glob("vasimov*/__init__.py") if p.parent.name not in ANYWHERE)


def check_layers(root: Path) -> list[Violation]:
    """Every import in every module of the project packages under ``root`` that its layer forbids."""
    out: list[Violation] = []
    for package in project_packages(root):
        allowed = ALLOWED.get(package)
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            module = _module_name(root, path)
            for line, name in imported_modules(tree, module, path.name == "__init__.py"):
                top = name.split(".", 1)[0]
                if top in ANYWHERE or not (top in PROJECT or top.startswith("vasimov")):
                    continue
                if allowed is None or top not in allowed:
                    out.append(Violation(path.relative_to(root), line, package, name))
    return out


def test_every_project_package_has_a_layer() -> None:
    unknown = [p for p in project_packages(REPO) if p not in ALLOWED]
    assert not unknown, f"packages without a layer in test_layers.ALLOWED: {unknown}; give each one its place"
    assert set(project_packages(REPO)) == PROJECT, "a layer names a package that no longer exists"


def test_imports_obey_the_layers() -> None:
    violations = check_layers(REPO)
    assert not violations, "layering violations (move the shared rule into the core):\n" + "\n".join(
        str(v) for v in violations)


# ── the checker itself: a synthetic tree with known violations, so the test above cannot pass vacuously ──────────


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_checker_reports_each_violation_with_file_and_line(tmp_path: Path) -> None:
    for pkg in PROJECT | ANYWHERE:
        _write(tmp_path, f"{pkg}/__init__.py", "")
    _write(tmp_path, "vasimov/rules.py", "import math\n\nfrom vasimov_edge import firmware\n")
    _write(tmp_path, "vasimov/ok.py", "from vasimov_msgs.msg import RobotCommand\nfrom . import rules\n")
    _write(tmp_path, "vasimov_bridge/node.py", "from vasimov import joints\n\n\ndef f():\n"
                                               "    import vasimov_edge.thermal\n")
    _write(tmp_path, "vasimov_plant/sub/__init__.py", "")
    _write(tmp_path, "vasimov_plant/sub/x.py", "from ...vasimov_tools import cli\nfrom .. import physics\n")
    _write(tmp_path, "vasimov_edge/y.py", "import vasimov_bridge.http_api as h\nfrom vasimov_edge import z\n")
    _write(tmp_path, "vasimov_tools/t.py", "import vasimov_edge, vasimov_plant, vasimov_bridge, vasimov\n")
    found = {(str(v.file), v.line, v.imported) for v in check_layers(tmp_path)}
    assert found == {
        ("vasimov/rules.py", 3, "vasimov_edge"),
        ("vasimov_bridge/node.py", 5, "vasimov_edge.thermal"),
        ("vasimov_edge/y.py", 1, "vasimov_bridge.http_api"),
        ("vasimov_plant/sub/x.py", 1, "vasimov_tools"),  # a relative import climbing out of its package
    }
    text = "\n".join(str(v) for v in check_layers(tmp_path))
    assert "vasimov_bridge/node.py:5: vasimov_bridge imports vasimov_edge.thermal" in text


def test_checker_flags_a_package_without_a_layer(tmp_path: Path) -> None:
    _write(tmp_path, "vasimov_extra/__init__.py", "import vasimov\n")
    assert [(str(v.file), v.line, v.package) for v in check_layers(tmp_path)] == [
        ("vasimov_extra/__init__.py", 1, "vasimov_extra")]


@pytest.mark.parametrize(("source", "module", "is_package", "expected"), [
    ("from . import a", ["vasimov", "ros", "qos"], False, "vasimov.ros"),
    ("from .. import a", ["vasimov", "ros", "qos"], False, "vasimov"),
    ("from .b import a", ["vasimov", "ros"], True, "vasimov.ros.b"),
    ("import x.y", ["vasimov"], True, "x.y"),
])
def test_relative_imports_resolve(source: str, module: list[str], is_package: bool, expected: str) -> None:
    assert [name for _, name in imported_modules(ast.parse(source), module, is_package)] == [expected]
