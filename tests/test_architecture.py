"""The layering, checked: the import-linter contracts in pyproject.toml hold with zero exceptions, every module
package is placed in a layer, the package graph points down without a cycle, and no module grows past ~500 lines without saying why it is one concern."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import PROJECT

PACKAGES = ("nphe4v_cli", "nphe4v", "gie", "judge", "cluster", "report", "evalcore")
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


# The project's packages, top to bottom: each may import only packages on a lower rank.
RANKS = {"nphe4v_cli": 0, "cluster": 1, "report": 2, "gie": 3, "judge": 3, "nphe4v": 3, "evalcore": 4}


def _unit(module: str) -> str:
    return module.split(".")[0]


def _unit_graph() -> dict[tuple[str, str], tuple[str, str]]:
    """(importer unit, imported unit) -> one module-level import that makes the edge, from grimp's graph."""
    import grimp

    graph = grimp.build_graph(*RANKS, cache_dir=None)
    edges: dict[tuple[str, str], tuple[str, str]] = {}
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            a, b = _unit(importer), _unit(imported)
            if a != b:
                edges.setdefault((a, b), (importer, imported))
    return edges


def test_package_graph_points_down_and_has_no_cycle():
    import graphlib

    edges = _unit_graph()
    upward = {e: why for e, why in edges.items() if RANKS[e[0]] >= RANKS[e[1]]}
    assert not upward, "imports against the layering (importer unit, imported unit): " + "; ".join(
        f"{a} -> {b} ({i} imports {j})" for (a, b), (i, j) in sorted(upward.items()))
    sorter = graphlib.TopologicalSorter({u: set() for u in RANKS})
    for a, b in edges:
        sorter.add(a, b)
    sorter.prepare()  # raises CycleError naming the cycle
    # the graph is what the layering says, not empty: the command drives the cluster, and everything uses the core
    assert ("nphe4v_cli", "cluster") in edges and ("gie", "evalcore") in edges and ("judge", "evalcore") in edges


def test_every_package_is_in_the_layering():
    packages = {p.name for p in PROJECT.iterdir() if (p / "__init__.py").is_file()}
    assert packages == RANKS.keys(), "a top-level package outside RANKS and pyproject's layers contract"
    layers = next(c for c in _contracts() if c["type"] == "layers")["layers"]
    named = {m.strip() for layer in layers for m in layer.split(":")}
    assert named == packages


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


# Where a registered benchmark's name may still be written as a string outside the benchmarks' own packages
# (nphe4v/, gie/): each entry says why it is not a benchmark being named.
NAME_AS_STRING_ALLOWED: dict[tuple[str, str], str] = {}


def test_no_file_outside_the_benchmarks_names_one():
    """The cluster, the report, the judge, the command line and the core ask the Benchmark plug-in (evalcore.
    benchmarks) instead of comparing names: no string constant equal to a registered benchmark's name, so a
    third benchmark needs no edit there (docs/extending.md)."""
    from evalcore import benchmarks

    names = set(benchmarks.names())
    found = []
    for pkg in ("cluster", "report", "judge", "nphe4v_cli", "evalcore", "jobs"):
        for path in sorted((PROJECT / pkg).rglob("*.py")):
            rel = str(path.relative_to(PROJECT))
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and node.value in names \
                        and (rel, node.value) not in NAME_AS_STRING_ALLOWED:
                    found.append(f"{rel}:{node.lineno}: {node.value!r}")
        for path in sorted((PROJECT / pkg).rglob("*.j2")):
            rel = str(path.relative_to(PROJECT))
            found += [f"{rel}: {q}{n}{q}" for n in names for q in "\"'" if f"{q}{n}{q}" in path.read_text()]
    assert not found, "ask the plug-in (evalcore.benchmarks.get(name)) instead:\n" + "\n".join(found)


# Identifiers and module paths outside the benchmarks' packages that still name a registered benchmark, each with
# why (an allowed file that no longer names one must leave the list). None is left.
IDENTIFIER_NAMES_BENCHMARK_ALLOWED: dict[str, str] = {}


def _identifiers(tree: ast.AST) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.append((node.lineno, node.name))
        elif isinstance(node, ast.Name):
            out.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute):
            out.append((node.lineno, node.attr))
        elif isinstance(node, ast.arg):
            out.append((node.lineno, node.arg))
        elif isinstance(node, ast.alias):
            out += [(node.lineno, node.name), (node.lineno, node.asname or "")]
        elif isinstance(node, ast.ImportFrom):
            out.append((node.lineno, node.module or ""))
        elif isinstance(node, ast.keyword) and node.arg:
            out.append((node.value.lineno, node.arg))
    return out


def test_no_module_or_identifier_outside_the_benchmarks_names_one():
    """No module path, function, class, variable, attribute, argument, keyword or import under report/, cluster/,
    judge/, nphe4v_cli/, evalcore/ or jobs/ contains a registered benchmark's name (case-insensitive): a
    benchmark's generation settings, model and run options, prompt modes, judging and report sections come from its
    plug-in (evalcore.benchmark), so a third benchmark or a new metric needs no edit there. Comments and docstrings
    may still cite a paper."""
    from evalcore import benchmarks

    names = [n.lower() for n in benchmarks.names()]
    found, clean = [], []
    for pkg in ("report", "cluster", "judge", "nphe4v_cli", "evalcore", "jobs"):
        for path in sorted((PROJECT / pkg).rglob("*.py")):
            rel = str(path.relative_to(PROJECT))
            hits = [f"{rel}: module path"] if any(n in rel.lower() for n in names) else []
            hits += [f"{rel}:{line}: {ident}" for line, ident in _identifiers(ast.parse(path.read_text()))
                     if any(n in ident.lower() for n in names)]
            if rel in IDENTIFIER_NAMES_BENCHMARK_ALLOWED:
                if not hits:
                    clean.append(rel)
            else:
                found += hits
    assert not found, "ask the plug-in (evalcore.benchmarks.get(name)) instead:\n" + "\n".join(found)
    assert not clean, "no longer names a benchmark: remove from IDENTIFIER_NAMES_BENCHMARK_ALLOWED: " + ", ".join(clean)


def test_job_scripts_import_no_benchmark_package():
    """jobs/ holds scripts, not a package, so pyproject's forbidden contract (report, cluster, judge, the command
    line and the core import no benchmark package) cannot name it: its imports are checked here instead."""
    found = []
    for path in sorted((PROJECT / "jobs").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{path.relative_to(PROJECT)}:{node.lineno}: {m}" for m in mods
                      if m.split(".")[0] in ("nphe4v", "gie")]
    assert list((PROJECT / "jobs").glob("*.py")), "jobs/ has no scripts: the check would pass vacuously"
    assert not found, "ask the plug-in (evalcore.benchmarks) instead:\n" + "\n".join(found)
