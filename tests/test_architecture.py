"""The layering, checked: the import-linter contracts in pyproject.toml hold with zero exceptions, every module
of `nphe4v` is placed in a layer, and no module grows past ~500 lines without saying why it is one concern."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import PROJECT

PACKAGES = ("nphe4v", "gie", "judge", "cluster", "report")
MAX_LINES = 500


def _contracts() -> list[dict]:
    return tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def _lint_imports() -> str:
    exe = Path(sys.executable).with_name("lint-imports")
    return str(exe) if exe.is_file() else (shutil.which("lint-imports") or "lint-imports")


def test_import_contracts_hold_without_exceptions():
    for contract in _contracts():
        assert not contract.get("ignore_imports"), f"{contract['name']}: exceptions are not allowed"
    # PYTHONPATH: analyse this checkout even when the venv's editable install points at another one
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    done = subprocess.run([_lint_imports(), "--no-cache"], cwd=PROJECT, capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_every_nphe4v_module_has_a_layer():
    layers = next(c for c in _contracts() if c["type"] == "layers")["layers"]
    named = {m.strip() for layer in layers for m in layer.replace(":", "|").split("|")}
    children = {
        f"nphe4v.{p.stem if p.suffix == '.py' else p.name}"
        for p in (PROJECT / "nphe4v").iterdir()
        if (p.suffix == ".py" and p.stem not in ("__init__", "__main__")) or (p / "__init__.py").is_file()
    }
    assert children - named == set(), "modules outside every layer (add them to pyproject's layers contract)"
    assert named & {f"nphe4v.{c}" for c in ("core",)} == {"nphe4v.core"}


def test_long_modules_say_why_they_are_one_concern():
    long = []
    for pkg in PACKAGES:
        for path in sorted((PROJECT / pkg).rglob("*.py")):
            lines = path.read_text().count("\n")
            if lines > MAX_LINES:
                doc = ast.get_docstring(ast.parse(path.read_text())) or ""
                if "one concern" not in doc.lower():
                    long.append(f"{path.relative_to(PROJECT)}: {lines} lines")
    assert not long, "split these or state in the docstring why each is one concern: " + "; ".join(long)
