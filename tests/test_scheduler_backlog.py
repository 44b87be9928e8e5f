"""Lazy planning (issue 12, cluster scale): a model's requests are made batch by batch as the scheduler takes
them, its amount of work is counted up front without building a request, and resume leaves out exactly the
samples already written. Real generated datasets, the real planner, a real sample sink; no Ray."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.config import DatasetSpec, ModelSpec, RunConfig
from cluster.pipeline import ModelStats, model_job
from cluster.plan import count_work, plan_batches, plan_model
from cluster.scheduler import Backlog, Batch, Job, Scheduler
from evalcore.dataset import load_dataset
from evalcore.records import SampleSink
from evalcore.schema import ModelResponse
from nphe4v.generate import generate_version
from nphe4v.scoring import score_sample


@pytest.fixture(scope="module")
def two_datasets(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("ds")
    a, b = root / "a", root / "b"
    generate_version(a, version="lazy-a", seed=3, per_level=2, tasks=["BSP", "KSP"], levels=[1, 2], workers=1)
    generate_version(b, version="lazy-b", seed=4, per_level=1, tasks=["GCP"], levels=[1, 3], workers=1)
    return [a, b]


def _cfg(paths: list[Path], out: Path, **kw) -> RunConfig:
    return RunConfig(name="lazy", out=str(out), datasets=[DatasetSpec(path=str(p)) for p in paths],
                     models=[ModelSpec(name="oracle", batch_size=7), ModelSpec(name="greedy", text_only=True)],
                     **kw)


@pytest.mark.parametrize("kw", [{}, {"repeats": 2, "recognition": {"enabled": False}},
                                {"recognition": {"enabled": True, "asks": 3, "controls": False}}])
def test_count_agrees_with_the_plan(two_datasets, tmp_path, kw):
    cfg = _cfg(two_datasets, tmp_path / "run", **kw)
    for path in two_datasets:
        ds = load_dataset(path)
        for m in cfg.models:
            keys = [w.key for w in plan_model(cfg, m, ds, "v")]
            assert len(keys) == len(set(keys))
            skip = set(keys[::3])
            c = count_work(cfg, m, ds, skip.__contains__)
            assert (c.planned, c.skipped, c.todo) == (len(keys), len(skip), len(keys) - len(skip))
            assert c.batches == -(-c.todo // m.batch_size)
            left = [w.key for w in plan_model(cfg, m, ds, "v", skip.__contains__)]
            assert left == [k for k in keys if k not in skip]  # same order, skipped ones left out


def test_batches_are_made_only_when_taken_and_never_mix_datasets(two_datasets, tmp_path):
    cfg = _cfg(two_datasets, tmp_path / "run")
    model = cfg.models[0]
    datasets = [load_dataset(p) for p in two_datasets]
    made: list[int] = []

    def source():
        for d, items in plan_batches(cfg, model, datasets, ["a", "b"]):
            made.append(len(items))
            yield Batch((d, items), len(items))

    counts = [count_work(cfg, model, ds) for ds in datasets]
    log = Backlog(source(), batches=sum(c.batches for c in counts), requests=sum(c.todo for c in counts))
    assert made == [] and len(log) == sum(c.batches for c in counts)
    first = log.popleft()
    assert len(made) == 1, "one batch taken, one made"
    assert bool(log) and len(made) == 2, "emptiness is known by making (only) the next batch"
    seen = [first]
    while log:
        seen.append(log.popleft())
    assert sum(b.size for b in seen) == log.requests == sum(c.todo for c in counts)
    assert len(seen) == sum(c.batches for c in counts) and len(log) == 0
    for b in seen:
        d, items = b.payload
        assert all(w.request.key.instance_id in datasets[d].by_id() for w in items)
        assert 0 < len(items) <= model.batch_size
    with pytest.raises(IndexError):
        log.popleft()


def test_backlog_trusts_the_source_over_its_count():
    # a count that is wrong either way never loses a batch or invents one
    under = Backlog((Batch(i, 1) for i in range(5)), batches=2, requests=2)
    assert [under.popleft().payload for _ in range(5)] == [0, 1, 2, 3, 4] and not under
    over = Backlog(iter([Batch("x", 1)]), batches=9, requests=9)
    assert over.popleft().payload == "x" and not over and len(over) == 0
    # a retried batch goes after the source's batches
    log = Backlog.of([Batch("a", 1), Batch("b", 1)])
    log.append(Batch("retry", 1, attempt=2))
    assert [log.popleft().payload for _ in range(3)] == ["a", "b", "retry"]


def test_model_job_resumes_exactly_the_unwritten_samples(two_datasets, tmp_path):
    out = tmp_path / "run"
    cfg = _cfg(two_datasets, out)
    model = cfg.models[0]
    datasets = [load_dataset(p) for p in two_datasets]
    versions = [ds.manifest.version for ds in datasets]
    # an earlier attempt wrote every other sample of the first dataset (real records, read back from disk)
    sink = SampleSink(out)
    by_id = datasets[0].by_id()
    first = list(plan_model(cfg, model, datasets[0], versions[0]))
    written = first[::2]
    sink.add([score_sample("r", versions[0], by_id[w.instance_id], w.request,
                           ModelResponse(text="x", status="ok")) for w in written])
    sink.flush()
    resumed = SampleSink(out)
    stats = ModelStats(model=model.name)
    job = model_job(cfg, model, datasets, "r", resumed, stats, versions=versions)
    everything = [w.key for d, ds in enumerate(datasets) for w in plan_model(cfg, model, ds, versions[d])]
    assert isinstance(job.batches, Backlog)
    assert stats.planned == len(everything) and stats.skipped == len(written)
    assert job.queued_requests == len(everything) - len(written)
    taken = []
    while job.batches:
        taken += [w.key for w in job.batches.popleft().payload[1]]
    assert taken == [k for k in everything if k not in {w.key for w in written}]
    # a finished model has nothing to schedule
    done = SampleSink(out)
    done.done |= set(everything)
    empty = model_job(cfg, model, datasets, "r", done, ModelStats(model=model.name), versions=versions)
    assert not empty.batches and empty.queued_requests == 0


def _cpu_job(name: str, cpus: float, batches: int = 3, replicas: int | str = 1) -> Job:
    return Job(name=name, gpus=0.0, replicas=replicas, load_s=0.0, request_s=1e-4,
               batches=[Batch(i, 1) for i in range(batches)], start=lambda i, c: (None, {}),
               submit=lambda a, p: None, finish=lambda b, r: None, fail=lambda b, m: None,
               release=lambda a, p: None, cpus=cpus)


def test_cpu_replicas_leave_the_reserve_free():
    # 2 CPUs, four models asking 1 CPU each: together they get what the reserve leaves, in proportion
    jobs = [_cpu_job(f"m{i}", 1.0) for i in range(4)]
    s = Scheduler(jobs, total_gpus=0, total_cpus=2)
    assert s.reserve_cpus == 1.0 and s.cpu_budget() == 1.0
    assert sum(j.cpu_grant for j in jobs) <= 1.0 and all(j.cpu_grant == 0.25 for j in jobs)
    # a roomy cluster grants what is asked; GPU replicas' bundles (a CPU per GPU) are kept out of the budget
    roomy = [_cpu_job("a", 0.5, replicas=2), _cpu_job("b", 2.0)]
    s = Scheduler(roomy, total_gpus=8, total_cpus=64)
    assert [j.cpu_grant for j in roomy] == [0.5, 2.0]
    assert s.cpu_budget() == 64 - s.reserve_cpus - 8
    tight = [_cpu_job("a", 4.0, replicas=3), _cpu_job("b", 4.0)]
    s = Scheduler(tight, total_gpus=8, total_cpus=16)
    assert 3 * tight[0].cpu_grant + tight[1].cpu_grant <= s.cpu_budget() + 1e-9


def test_the_job_pool_serves_its_backlog_lazily():
    # one pool for model replicas and judges: a job's backlog is its pool's queue, pulled one batch at a time
    made: list[int] = []

    def source():
        for i in range(100):
            made.append(i)
            yield Batch(i, 2)

    sent: list[int] = []
    job = Job(name="lazy", gpus=0.0, replicas=1, load_s=0.0, request_s=1e-4,
              batches=Backlog(source(), batches=100, requests=200), start=lambda i, c: (None, {}),
              submit=lambda a, p: sent.append(p) or f"ref{p}", finish=lambda b, r: None, fail=lambda b, m: None,
              release=lambda a, p: None, per_replica_inflight=3)
    assert job.pool.queue is job.batches and made == [] and job.queued_requests == 200
    job.pool.add_member("actor")
    assert job.pool.dispatch() == 3 and sent == [0, 1, 2]
    assert len(made) <= 4, "only the batches sent, and one peeked ahead, are made"
    assert (job.queued_requests, job.inflight_requests) == (194, 6) and not job.done()
    assert sorted(job.pool.refs()) == ["ref0", "ref1", "ref2"]


def test_queued_samples_reach_disk_in_a_quiet_spell(two_datasets, tmp_path, monkeypatch):
    """Rows queued below the row threshold are written once `flush_seconds` pass, even when no new row comes
    (the scheduler's loop calls `flush_if_due` while it waits): a reader of the run folder, or a crash, never
    finds finished samples only in the driver's memory. The clock is the module's, advanced by hand."""
    import evalcore.shards as shards
    from evalcore.records import read_samples

    now = [1000.0]
    monkeypatch.setattr(shards.time, "monotonic", lambda: now[0])
    out = tmp_path / "run"
    cfg = _cfg(two_datasets, out)
    ds = load_dataset(two_datasets[0])
    version = ds.manifest.version
    by_id = ds.by_id()
    work = list(plan_model(cfg, cfg.models[0], ds, version))[:5]
    sink = SampleSink(out, flush_rows=10_000, flush_seconds=2.0)
    sink.add([score_sample("r", version, by_id[w.instance_id], w.request, ModelResponse(text="x", status="ok"))
              for w in work])
    sink.flush_if_due()
    assert not (out / "samples").exists() or read_samples(out).height == 0  # not due yet: still queued
    now[0] += 2.5
    sink.flush_if_due()
    assert read_samples(out).height == 5
    sink.flush_if_due()  # nothing queued: no empty shard
    assert len(list((out / "samples").glob("**/*.parquet"))) == 1
