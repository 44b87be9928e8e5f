"""Shared fixtures: a small generated dataset and one local Ray cluster for the whole session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")

PROJECT = Path(__file__).resolve().parents[1]
# The papers' peer data and shared docs sit beside the project (../shared), never inside it: it is not
# shipped with the package, so every test reaches it through `shared_or_skip`, the one place that knows where.
SHARED = PROJECT.parent / "shared"


def shared_or_skip(*parts: str) -> Path:
    """`../shared/<parts>` relative to the project; skips the calling test, saying why, where it is absent."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"{p} not present: the shared peer data lives in ../shared beside the project "
                    "(CI and dev checkouts only; it is not shipped with the package)")
    return p


@pytest.fixture(scope="session")
def small_dataset(tmp_path_factory) -> Path:
    """All nine tasks, all ten levels, two instances per level (180 instances)."""
    from nphe4v.generate import generate_version

    out = tmp_path_factory.mktemp("ds") / "small"
    generate_version(out, version="test", seed=7, per_level=2)
    return out


@pytest.fixture(scope="session")
def ray_local():
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
