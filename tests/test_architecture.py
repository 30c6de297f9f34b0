"""The import DAG of docs/architecture.md: engines never import the op table."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dualgrad"
ENGINE_FILES = sorted(
    [*PACKAGE.glob("reverse/*.py"), *PACKAGE.glob("forward_ad/*.py"), PACKAGE / "tensor.py", PACKAGE / "_state.py"]
)
# vmap's engine installs its runner into the dispatcher's slot and concatenates
# chunks with ``cat``: both imports are late (inside functions) and listed here.
ALLOWED = {"batching.py": {"ops", "ops.shape"}}


def imported_modules(source: str, package: tuple) -> list[str]:
    """Modules imported by ``source`` (a file in sub-package ``package`` of dualgrad)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            found.append(".".join([*base, node.module] if node.module else base) if node.level
                         else (node.module or "").removeprefix("dualgrad."))
        elif isinstance(node, ast.Import):
            found.extend(alias.name.removeprefix("dualgrad.") for alias in node.names)
    return found


def op_table_imports(path: Path) -> list[str]:
    package = path.relative_to(PACKAGE).parts[:-1]
    allowed = ALLOWED.get(path.name, set())
    return [m for m in imported_modules(path.read_text(), package)
            if (m == "ops" or m.startswith("ops.")) and m not in allowed]


@pytest.mark.parametrize("path", ENGINE_FILES + [PACKAGE / "batching.py"], ids=lambda p: str(p.relative_to(PACKAGE)))
def test_engines_do_not_import_the_op_table(path):
    assert not op_table_imports(path), f"{path.name} imports the op table"


@pytest.mark.parametrize("source, package, expected", [
    ("from ..ops.dispatch import apply", ("reverse",), ["ops.dispatch"]),
    ("from .ops import shape", (), ["ops"]),
    ("import dualgrad.ops.registry", ("forward_ad",), ["ops.registry"]),
    ("from .saved import SavedTensor", ("reverse",), ["reverse.saved"]),
])
def test_the_checker_resolves_relative_imports(source, package, expected):
    assert imported_modules(source, package) == expected
