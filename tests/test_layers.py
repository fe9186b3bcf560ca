"""The shape of the code: a package per layer, imports pointing down the layers, no import
cycle, no two modules of one name, no module over 500 lines, few modules at the root.

The layers are those of docs/dev/architecture.md. A module may import its own package and
the packages of lower layers; ``compaction`` may import acidstore up to ``engine``;
acidstore never imports ``compaction`` (``api.optimize`` finds it through an entry point),
except the command line at the top, which runs compaction's services.
Every import counts, the deferred ones inside functions and those only for type checking
too: a deferred import hides a cycle, it does not remove it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: package (or module) -> layer; the longest matching prefix wins
LAYERS: dict[str, float] = {
    "acidstore.errors": 0,
    "acidstore.config": 0,
    "acidstore.io": 1,
    "acidstore.format": 2,
    "acidstore.sql": 3,
    "acidstore.metastore": 4,
    "acidstore.read": 5,
    "acidstore.write": 6,
    "acidstore.engine": 7,
    "acidstore.api": 8,
    "acidstore": 9,  # the facade: re-exports the public API
    "acidstore.fsck": 7.5,  # checks files against the metastore, over the engine
    "acidstore.spark": 9,
    "acidstore.cli": 10,  # the application: runs compaction's services too
    "acidstore.__main__": 11,
    "compaction": 8,
}
#: the highest acidstore layer compaction may use
COMPACTION_REACH = LAYERS["acidstore.engine"]
#: modules allowed at the root of acidstore
ROOT_MODULES = {"__init__", "__main__", "errors", "config"}
MAX_LINES = 500


def layer_of(module: str) -> float | None:
    best: tuple[int, float] | None = None
    for prefix, layer in LAYERS.items():
        if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[0]):
            best = (len(prefix), layer)
    return None if best is None else best[1]


def package_of(module: str) -> str:
    """The layer package a module belongs to (``acidstore.read``, ``compaction``...)."""
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return best


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def project_files() -> list[Path]:
    return sorted(p for pkg in ("acidstore", "compaction") for p in (ROOT / pkg).rglob("*.py"))


MODULES = {module_name(p): p for p in project_files()}


def resolve(target: str) -> str | None:
    """The project module ``target`` names (its longest existing prefix), or None."""
    parts = target.split(".")
    while parts:
        name = ".".join(parts)
        if name in MODULES:
            return name
        parts.pop()
    return None


def imported_modules(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, project module) of every import in ``path``, wherever it stands."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base = module.split(".")
                if not is_package:
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # `from pkg import mod` imports the submodule; `from mod import name` the module
            targets = [f"{source}.{alias.name}" if resolve(f"{source}.{alias.name}") ==
                       f"{source}.{alias.name}" else source for alias in node.names]
        for target in targets:
            found = resolve(target)
            if found is not None:
                out.append((node.lineno, found))
    return out


GRAPH: dict[str, set[str]] = {
    module: {t for _, t in imported_modules(path, module) if t != module}
    for module, path in MODULES.items()}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module: str) -> None:
    own = layer_of(module)
    assert own is not None, f"{module} has no layer in tests/test_layers.py LAYERS"
    for lineno, target in imported_modules(MODULES[module], module):
        if target == module or package_of(target) == package_of(module):
            continue  # within a layer package
        where = f"{MODULES[module].relative_to(ROOT)}:{lineno}"
        if target == "acidstore":
            raise AssertionError(f"{where} imports the facade acidstore; import the "
                                 "defining module instead")
        if target.startswith("compaction"):
            assert own == layer_of("acidstore.cli"), (
                f"{where}: only the command line imports compaction ({target})")
            continue
        theirs = layer_of(target)
        assert theirs is not None, target
        if module.startswith("compaction"):
            assert theirs <= COMPACTION_REACH, (
                f"{where}: compaction may use acidstore up to its engine ({target})")
            continue
        assert theirs < own, (
            f"{where}: {module} (layer {own}) imports {target} (layer {theirs})")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    assert _cycles(GRAPH) == []


def test_few_modules_at_the_root_and_none_too_long() -> None:
    root = {p.stem for p in (ROOT / "acidstore").glob("*.py")}
    assert root <= ROOT_MODULES, sorted(root - ROOT_MODULES)
    long = {str(p.relative_to(ROOT)): n for p in project_files()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_no_two_modules_share_a_name() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for module, path in MODULES.items():
        if path.name != "__init__.py":
            by_name[module.rsplit(".", 1)[-1]].append(module)
    assert {n: m for n, m in by_name.items() if len(m) > 1} == {}


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """The layer map, the import reader and the cycle finder each catch what they must."""
    assert layer_of("acidstore.format.layout") == 2 and layer_of("acidstore.read.scan") == 5
    assert layer_of("acidstore.client") == 9 and package_of("acidstore.read.scan") == \
        "acidstore.read"
    probe = tmp_path / "probe.py"
    probe.write_text("from ..read import scan\nimport acidstore.api.table\n"
                     "def later():\n    from acidstore.io import fs\n")
    found = {t for _, t in imported_modules(probe, "acidstore.format.layout")}
    assert found == {"acidstore.read.scan", "acidstore.api.table", "acidstore.io.fs"}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
