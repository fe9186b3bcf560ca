"""The import graph points down the layers of docs/architecture.md; this test fails on any
upward import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# module (or package prefix) -> layer number; the longest matching prefix wins.
LAYERS: dict[str, int] = {
    "acidstore.errors": 0,
    "acidstore.layout": 1,
    "acidstore.writeids": 1,
    "acidstore.durable": 1,
    "acidstore.fs": 1,
    "acidstore.immutable": 1,
    "acidstore.partitions": 1,
    "acidstore.workers": 1,
    "acidstore.orc": 2,
    "acidstore.directory": 2,
    "acidstore.metastore": 2,
    "acidstore.read": 3,
    "acidstore.write": 3,
    "acidstore.statement": 3,
    "acidstore.statement_merge": 3,
    "acidstore.statement_joined": 3,
    "acidstore.transaction": 4,
    "acidstore.transaction_heartbeat": 4,
    "acidstore.table": 4,
    "acidstore.results": 4,
    "acidstore.idempotent": 4,
    "acidstore.streaming": 4,
    "acidstore.time_travel": 4,
    "acidstore.frames": 4,
    "acidstore.changes": 4,
    "acidstore.schema_evolution": 4,
    "acidstore.warehouse": 4,
    "acidstore.pairing": 4,
    "acidstore.merge": 4,
    "acidstore.fsck": 4,
    "acidstore.adopt": 4,
    "acidstore.publish": 4,
    "acidstore.maintenance": 4,
    "acidstore.expressions": 2,
    "acidstore.arrow_sql": 2,
    "acidstore.spark": 5,
    "acidstore.cli": 5,
    "acidstore.__main__": 5,
    "acidstore.demo": 5,
    "compaction": 5,
}
# The package facade re-exports the public API and sits above the library layers it names.
FACADES = {"acidstore": 4}
#: the command line (the one layer that may import compaction): acidstore.cli and its
#: command modules acidstore.cli_*
CLI_LAYER = 5


def is_cli(module: str) -> bool:
    return module == "acidstore.cli" or module.startswith("acidstore.cli_")


def layer_of(module: str) -> int | None:
    if module in FACADES:
        return FACADES[module]
    if is_cli(module):
        return CLI_LAYER
    best: tuple[int, int] | None = None
    for prefix, layer in LAYERS.items():
        matches = module == prefix or module.startswith(prefix + ".")
        if matches and (best is None or len(prefix) > best[0]):
            best = (len(prefix), layer)
    return None if best is None else best[1]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported_modules(path: Path, module: str) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if not is_package:
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                # `from pkg import mod` imports the submodule, not the package facade
                if target in FACADES and is_module(f"{target}.{alias.name}"):
                    out.append((node.lineno, f"{target}.{alias.name}"))
                else:
                    out.append((node.lineno, target))
                    out.append((node.lineno, f"{target}.{alias.name}"))
    return out


def project_files() -> list[Path]:
    return sorted(p for pkg in ("acidstore", "compaction") for p in (ROOT / pkg).rglob("*.py"))


@pytest.mark.parametrize("path", project_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path: Path) -> None:
    module = module_name(path)
    own = layer_of(module)
    assert own is not None, f"{module} has no layer in tests/test_layers.py LAYERS"
    for lineno, target in imported_modules(path, module):
        top = target.split(".")[0]
        if top not in ("acidstore", "compaction"):
            continue
        if target == module or target.startswith(module + "."):
            continue  # a package importing its own submodules
        if target in FACADES and module != target:
            raise AssertionError(f"{path.name}:{lineno} imports the facade {target!r}; "
                                 "import the defining module instead")
        theirs = layer_of(target)
        if theirs is None:
            continue
        if module.startswith("compaction") and target.startswith("acidstore"):
            assert theirs <= 4, (
                f"{path}:{lineno}: compaction may use acidstore L1-L4 only ({target})")
            continue
        if target.startswith("compaction"):
            assert is_cli(module) or module.startswith("compaction"), (
                f"{path}:{lineno}: only acidstore.cli may import compaction ({target})")
            continue
        assert theirs <= own, (
            f"{path}:{lineno}: {module} (L{own}) imports {target} (L{theirs}), which is above it")


def test_checker_catches_an_upward_import(tmp_path: Path) -> None:
    """The checker itself must be able to fail."""
    assert layer_of("acidstore.layout") == 1 and layer_of("acidstore.read.merge") == 3
    assert layer_of("acidstore.cli_show") == 5 and is_cli("acidstore.cli_show")
    assert not is_cli("acidstore.client") and layer_of("acidstore.client") is None
    probe = tmp_path / "probe.py"
    probe.write_text("from .read import merge\nfrom acidstore.table import Table\n"
                     "from acidstore import fs\nfrom acidstore import read_directory\n")
    found = [t for _, t in imported_modules(probe, "acidstore.layout")]
    assert "acidstore.read" in found and "acidstore.table" in found
    assert "acidstore.fs" in found  # a submodule import by name
    assert "acidstore" in found  # a name taken from the facade
