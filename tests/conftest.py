"""Shared fixtures (a small generated dataset, one local Ray cluster per test process) and the tiers' rules.

Tiers: the README's test command runs everything; `bash scripts/test.sh --fast` leaves out tests marked
`slow` and fails when a test without the mark takes longer than `--slow-limit` seconds, so a test that grew slow
is marked (and moved out of the fast tier) the day it grows, not found later. A `slow` mark must say why.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
# Ray runs its worker processes at nice 15. On a 2-core machine where the suite's other test processes, or any
# other work, keep the cores busy at nice 0, every Ray worker (model replicas, score tasks, a job's
# supervisor) then gets a few per cent of a core: one test's vLLM replica took 6 min to import vLLM beside
# two busy loops, against 8 s at equal priority. Every Ray a test starts (in process, `ray start`, or
# eval_all in a subprocess, which inherit this environment) runs its workers at the tests' priority.
os.environ.setdefault("RAY_worker_niceness", "0")
# One thread per CPU engine and per torch/BLAS user: the suite runs ~3 test processes, each with its own Ray and
# engines, on 2 cores. vLLM's CPU engine otherwise binds two OpenMP threads to cores 0-1, and a bound thread
# whose partner is descheduled spins at every barrier: the same prompts cost ~2x the CPU (0.7 s on one
# unbound thread vs 1.6 s on two bound ones beside two busy loops; docs/vllm-cpu.md: ~3x the throughput).
os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
os.environ.setdefault("OMP_NUM_THREADS", "1")
# A run config without `prompts:` sends the papers' prompts, read from the authors' files (downloaded once); a
# fresh offline machine has none, so the suite's configs default to the rewritten set. Tests of the paper set
# name it (`prompts: paper`) with the files they provide (tests/test_paper_prompts.py).
os.environ.setdefault("NPHE4V_PROMPTS", "rewritten")

# Property tests draw the same examples on every run (derandomize): a run's verdict depends on the code, not on
# the draw, so a red run is reproducible and a green one stays green. `HYPOTHESIS_PROFILE=explore` draws new
# examples (and more of them) to hunt for cases the fixed draw misses.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("suite", derandomize=True)
_hypothesis_settings.register_profile("explore", derandomize=False, max_examples=2000)
_hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))

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


def pytest_addoption(parser):
    parser.addoption("--slow-limit", type=float, default=None, metavar="S",
                     help="fail the session when a test not marked slow takes more than S seconds "
                          "(setup + call + teardown); the fast tier sets 30")


def pytest_collection_modifyitems(config, items):
    # "slow" is a promise to the reader: what makes the test slow. A bare mark is refused at collection.
    bare = [it.nodeid for it in items
            if (m := it.get_closest_marker("slow")) is not None and not m.kwargs.get("reason")]
    if bare:
        raise pytest.UsageError("@pytest.mark.slow needs reason=\"what makes it slow\": " + ", ".join(bare[:5]))
    # A test on the session's Ray cluster is an integration test: marked `ray`, so the fast tier leaves it out
    for it in items:
        if "ray_local" in getattr(it, "fixturenames", ()):
            it.add_marker(pytest.mark.ray)
    # Longest first: files holding a slow test go to the workers before the rest (scripts/test.sh keeps this
    # order with --no-loadscope-reorder), the longest known ones first, so a long end-to-end test starts early
    # instead of becoming the run's tail.
    slow_files = {it.path.name for it in items if it.get_closest_marker("slow") is not None}

    def rank(it) -> tuple[int, int]:
        name = it.path.name
        if name not in slow_files:
            return (2, 0)
        return (0, LONGEST_FIRST.index(name)) if name in LONGEST_FIRST else (1, 0)

    items.sort(key=rank)


# The slowest files of the suite, longest first (from `--durations` of full runs on 2 cores). The two
# whole-testmini batteries read one generated testmini (~130 s to make): the second starts after other long
# files, when it is ready, instead of a worker waiting on its lock from the start (run H: 128 s idle).
LONGEST_FIRST = ("test_preflight.py", "test_multinode_kill.py", "test_run_faults.py", "test_ray_job.py",
                 "test_packaging.py", "test_scheduler.py", "test_judge_llm_testmini.py", "test_pot.py",
                 "test_driver_death.py", "test_judge_recipe.py", "test_transformers_backend.py",
                 "test_judge_replica.py", "test_demo_job.py", "test_judge_vgr4.py", "test_secrets.py",
                 "test_toy_benchmark.py", "test_pipeline.py", "test_gie_dataset.py", "test_vllm_engine.py",
                 "test_judge_vllm.py", "test_judge_card.py", "test_training_docs.py", "test_caption_chain_e2e.py")


_TOOK: dict[str, float] = {}
_SLOW: set[str] = set()


def pytest_runtest_logreport(report):
    # under xdist this runs in the controller for every worker's report, so the check sees the whole run
    _TOOK[report.nodeid] = _TOOK.get(report.nodeid, 0.0) + report.duration
    if "slow" in report.keywords:
        _SLOW.add(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    limit = session.config.getoption("--slow-limit")
    if limit is None or hasattr(session.config, "workerinput"):
        return
    over = sorted(((s, n) for n, s in _TOOK.items() if s > limit and n not in _SLOW), reverse=True)
    if over:
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = [f"{len(over)} test(s) not marked slow took more than {limit:.0f} s: mark them "
                 "@pytest.mark.slow(reason=...) or make them faster"] + [f"  {s:6.1f} s  {n}" for s, n in over]
        for line in lines:
            tr.write_line(line, red=True) if tr else print(line)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def small_dataset(tmp_path_factory) -> Path:
    """All nine tasks, all ten levels, two instances per level (180 instances). Made once per test run for
    every xdist worker (~15 CPU s of rendering each time), under a file lock, renamed into place whole; tests
    read it and never write into it (a test that changes it copies it first)."""
    from filelock import FileLock

    from nphe4v.generate import generate_version

    base = tmp_path_factory.getbasetemp()
    # under xdist each worker has its own basetemp inside the run's: share the run's, never an older run's
    out = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "small-dataset" / "small"
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out) + ".lock"):
        if not (out / "manifest.json").is_file():
            tmp = out.with_name("small.tmp")
            if tmp.exists():
                import shutil

                shutil.rmtree(tmp)
            generate_version(tmp, version="test", seed=7, per_level=2)
            tmp.rename(out)
    return out


@pytest.fixture(scope="session")
def graphverse_split(tmp_path_factory):
    """`get(split, seed, limit=None) -> Path`: a generated GraphVerse split, made once per test run for every
    test (and every xdist worker) that asks for the same (split, seed, limit), under a file lock, and renamed
    into place whole. Tests read it and never write into it (a test that changes a dataset generates its own)."""
    from filelock import FileLock

    from gie.dataset import generate_split

    base = tmp_path_factory.getbasetemp()
    # under xdist each worker has its own basetemp inside the run's: share the run's, never an older run's
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "graphverse-splits"
    root.mkdir(parents=True, exist_ok=True)

    def get(split: str, seed: int, limit: int | None = None) -> Path:
        out = root / f"{split}-{seed}-{limit if limit is not None else 'all'}"
        with FileLock(str(out) + ".lock"):
            if not (out / "manifest.json").is_file():
                tmp = out.with_name(out.name + ".tmp")
                if tmp.exists():
                    import shutil

                    shutil.rmtree(tmp)
                generate_split(tmp, split, seed, limit=limit, workers=0)
                tmp.rename(out)
        return out

    return get


@pytest.fixture(scope="session")
def testmini_instances(graphverse_split):
    """The instances of the whole testmini split, seed 2026 (generated once per run, images not read)."""
    from evalcore.dataset import load_dataset

    return list(load_dataset(graphverse_split("testmini", 2026), check_images=False).instances)


@pytest.fixture(scope="session")
def ray_local():
    import ray

    if not ray.is_initialized():
        # address="local": always a private cluster, never one that `ray start` left on the machine
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
