"""The import DAG of docs/architecture.md: the import-linter contracts of pyproject.toml hold.

The contracts layer the package (base < tensor < engines < ops < transforms < tools <
namespaces < ``__init__``) and forbid import cycles at every depth, imports inside
functions included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp")
importlinter_cli = pytest.importorskip("importlinter.cli")

ROOT = Path(__file__).resolve().parents[2]
# The NumPy adaptors call dualgrad's public functions by their NumPy names (``dg.sum``,
# ``dualgrad.<name>`` resolved per call): they read the finished namespace, so they import
# the package itself. So does ``utils.benchmark.Timer``, whose statements see the package as
# ``torch`` and ``dg`` (torch's Timer gives them ``torch``). No other module may: ``__init__``
# sits above everything.
NAMESPACE_READERS = {"dualgrad.numpy_dispatch.functions", "dualgrad.numpy_dispatch.numerical",
                     "dualgrad.numpy_dispatch.statistics", "dualgrad.numpy_dispatch", "dualgrad.utils.benchmark.timer"}


def test_the_import_contracts_are_kept(capsys):
    code = importlinter_cli.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert code == 0, capsys.readouterr().out


def test_only_the_namespace_readers_import_the_package_itself():
    graph = grimp.build_graph("dualgrad", cache_dir=None)
    assert graph.find_modules_that_directly_import("dualgrad") <= NAMESPACE_READERS


def test_a_late_import_against_the_layers_breaks_the_contract(tmp_path, monkeypatch, capsys):
    """An import inside a function counts: a low layer reaching up from within a function breaks the contract."""
    package = tmp_path / "latepkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "high.py").write_text("from . import low\n")
    (package / "low.py").write_text("def f():\n    from . import high\n    return high\n")
    config = tmp_path / "contracts.toml"
    config.write_text('[tool.importlinter]\nroot_package = "latepkg"\n\n[[tool.importlinter.contracts]]\n'
                      'name = "layers"\ntype = "layers"\nlayers = ["latepkg.high", "latepkg.low"]\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert importlinter_cli.lint_imports(config_filename=str(config), no_cache=True, no_logo=True) == 1
    assert "latepkg.low -> latepkg.high" in capsys.readouterr().out


def test_the_package_init_only_imports_and_names():
    """``dualgrad/__init__.py`` re-exports: imports and names, no call run for its effect (no installer)."""
    tree = ast.parse((ROOT / "dualgrad" / "__init__.py").read_text())
    statements = tree.body[1:] if ast.get_docstring(tree) else tree.body
    effects = [ast.unparse(node) for node in statements
               if not isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign))]
    assert not effects
