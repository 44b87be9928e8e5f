"""One run end to end: resolve datasets, start or join Ray, run every model, write the manifest."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cluster import interrupts
from cluster.config import ConfigError, RunConfig
from cluster.plan import check_prompt_assets, prompt_set_label
from cluster.run_datasets import (  # resolution lives there; these names stay importable from here
    check_dataset_matches,  # noqa: F401
    dataset_path,  # noqa: F401
    dataset_spec_used,
    generator_revision,  # noqa: F401
    resolve_dataset,
)
from cluster.run_manifest import RUN_MANIFEST
from cluster.run_manifest import write_manifest as _write_manifest
from cluster.runlock import foreign_files, run_lock
from evalcore.dataset import Dataset, DatasetError
from evalcore.hashing import sha256_json
from evalcore.provenance import git_sha, package_versions
from evalcore.records import SampleSink, read_samples
from evalcore.secrets import redact
from evalcore.shards import StorageError, storage_error


class RunFolderError(ValueError):
    """The output folder holds a different run; nothing is overwritten."""


def pot_problem(cfg: RunConfig) -> str | None:
    """Why the config's PoT programs could not run in the sandbox it asks for (one line), or None. Only asked
    when a model wants PoT: without the isolation, no model-written program may run."""
    if not cfg.wants_pot():
        return None
    from evalcore.sandbox import SandboxUnavailable, check_isolation

    try:
        check_isolation(cfg.pot_isolation)
    except SandboxUnavailable as e:
        weaker = (" (or opt into the weaker sandbox by name: `pot_isolation: rlimits-only`)"
                  if cfg.pot_isolation == "strict" else "")
        return f"field pot_isolation: {cfg.pot_isolation}: PoT programs cannot run here: {e.reason}{weaker}"
    return None


def preflight_models(cfg: RunConfig) -> None:
    """Fail before any work on what would fail later: a missing API key, a bad backend option, a PoT mode
    without the sandbox it needs."""
    from cluster.backends.factory import check_options

    problem = pot_problem(cfg)
    if problem:
        raise ConfigError(problem)
    address = cfg.ray.address or os.environ.get("RAY_ADDRESS")
    if address and not _ray_initialized():
        check_ray_address(address)  # before the run folder is touched: its manifest never says `running` for it
    problem = check_prompt_assets(cfg)  # `prompts: paper` without the authors' files: stop before any model
    if problem:
        raise ConfigError(problem)

    for m in cfg.models:
        try:
            check_options(m.backend, m.name, m.options)
        except ValueError as e:
            raise ConfigError(f"model {m.name}: {e}") from None
    from cluster.replicas import check_fits, gpus_per_replica

    if any(gpus_per_replica(m) >= 1 for m in cfg.models):
        init_ray(cfg)  # the cluster's nodes decide whether a replica fits
        for m in cfg.models:
            try:
                check_fits(m)
            except ValueError as e:
                raise ConfigError(str(e)) from None


def _ray_initialized() -> bool:
    import ray

    return ray.is_initialized()


def run_fingerprint(cfg: RunConfig, datasets: list[Dataset]) -> str:
    return sha256_json([cfg.fingerprint_fields(), [d.manifest.dataset_sha256 for d in datasets]])


def prepare_run_dir(out: Path, run_id: str, *, locked: bool = True) -> dict[str, Any] | None:
    """Return the existing manifest when resuming the same run; refuse a folder holding another one."""
    check_out_folder(out)
    mpath = out / RUN_MANIFEST
    if not mpath.exists():
        if foreign_files(out, locked=locked):
            raise RunFolderError(f"{out}: folder is not empty and holds no run manifest; choose another --out")
        return None
    try:
        existing = json.loads(mpath.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RunFolderError(f"{mpath}: unreadable run manifest ({str(e).splitlines()[0]})") from None
    if not isinstance(existing, dict) or existing.get("run_id") != run_id:
        held = existing.get("run_id") if isinstance(existing, dict) else None
        raise RunFolderError(
            f"{mpath}: field run_id: folder holds run {held!r}, this config is run {run_id!r}; "
            "choose another --out"
        )
    return existing


def check_out_folder(out: Path) -> None:
    """A run folder path that cannot be a folder (a file, or a file on the way) is refused in one line."""
    check_folder_path(out, "--out", RunFolderError)


def check_folder_path(path: Path, flag: str, error: type[Exception] = DatasetError) -> None:
    """A folder path given by `flag` that cannot be a folder (a file, or a file on the way) is refused in one
    line, without creating anything (so --plan may call it)."""
    for p in (path, *path.parents):
        try:
            exists = p.exists()
        except OSError as e:  # a name longer than the file system takes, a loop of links
            shown = str(path) if len(str(path)) <= 200 else str(path)[:200] + "..."
            raise error(f"{shown}: {flag}: {e.strerror or e}; choose another {flag}") from None
        if exists:
            if not p.is_dir():
                what = flag if p == path else f"{flag}'s parent {p}"
                raise error(f"{path}: {what} is a file, not a folder; choose another {flag}")
            return


def check_ray_address(address: str) -> None:
    """Refuse, in one line and within seconds, an address where no Ray cluster answers: ray.init itself retries
    for minutes there, printing Ray's warnings (cluster.head_watch.probe_gcs asks one bounded question)."""
    from cluster.head_watch import bootstrap_address, probe_gcs, token_refused

    target = bootstrap_address(address)
    why = probe_gcs(target) if target else None
    if why:
        raise ConfigError(f"field ray.address (or RAY_ADDRESS): no Ray cluster at {address}: {why}; check the "
                          "head's address and its GCS port (`ray start --head --port`, 6379 by default)")
    if target and token_refused(target):  # ray.init would retry ~20 s before saying the same
        raise _cannot_join(address, "its GCS refused this environment's token (or its lack of one)")


def _cannot_join(address: str, why: str) -> ConfigError:
    return ConfigError(
        f"field ray.address (or RAY_ADDRESS): cannot join the Ray cluster at {address}: {why}; a cluster "
        "with token auth needs RAY_AUTH_MODE=token and its token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or "
        "~/.ray/auth_token) in this environment")


def init_ray(cfg: RunConfig) -> None:
    """Join the configured cluster, or start a private local Ray that never attaches to another one."""
    import ray
    from ray.exceptions import RayError

    from evalcore.local_ray import start_local_ray

    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    address = cfg.ray.address or os.environ.get("RAY_ADDRESS")
    if address:
        check_ray_address(address)
        # joining: the cluster's nodes decide the resources; Ray refuses num_cpus here
        try:
            ray.init(address=address, log_to_driver=True)
        except (ConnectionError, RayError) as e:
            raise _cannot_join(address, " ".join(str(e).split())[:240]) from None
    else:
        # "local" always starts a new cluster: plain ray.init() would attach to any Ray already running
        # on this machine (another user's, another run's) and then refuse num_cpus
        start_local_ray(cfg.ray.num_cpus or os.cpu_count(), log_to_driver=True)
    # ray.init replaces the SIGTERM handler with sys.exit; keep the run's clean interrupt
    interrupts.install()


def execute(cfg: RunConfig, *, data_root: Path = Path("data"), then: Callable[[Path], Any] | None = None) -> Path:
    """Run the config. Raises RunInterrupted (after saving what finished) on SIGINT or SIGTERM.

    `then(out)` runs while the run folder's lock is still held (the reports are part of the run's writes).
    """
    out = Path(cfg.out).resolve()
    check_out_folder(out)
    preflight_models(cfg)
    datasets = [resolve_dataset(s, data_root) for s in cfg.datasets]
    fingerprint = run_fingerprint(cfg, datasets)
    run_id = f"{cfg.name}-{fingerprint[:12]}"
    prepare_run_dir(out, run_id, locked=False)  # refuse before touching the folder
    with run_lock(out, f"eval_all run {run_id}"):
        _execute_locked(cfg, out, run_id, datasets)
        if then is not None:
            try:
                then(out)
            except KeyboardInterrupt as e:  # the samples are complete; only the reports are cut short
                raise RunInterrupted(read_samples(out).height, interrupts.exit_code(e)) from None
    return out


def _execute_locked(cfg: RunConfig, out: Path, run_id: str, datasets: list[Dataset]) -> Path:
    existing = prepare_run_dir(out, run_id)  # again under the lock: another writer may have just finished
    sink = SampleSink(out)  # reads the samples already written: a damaged shard stops here, before any change
    manifest: dict[str, Any] = {
        "run_id": run_id,
        "status": "running",
        "created_at": (existing or {}).get("created_at") or datetime.now(UTC).isoformat(timespec="seconds"),
        "git_sha": git_sha(),
        "package_versions": package_versions(),
        "config": redact(cfg.model_dump(mode="json")),
        "prompt_set": prompt_set_label(cfg),
        "datasets": [
            {"benchmark": d.manifest.benchmark, "version": d.manifest.version, "seed": d.manifest.seed,
             "path": str(d.root.resolve()), "dataset_sha256": d.manifest.dataset_sha256,
             "spec": dataset_spec_used(d)}
            for d in datasets
        ],
        "attempts": (existing or {}).get("attempts", 0) + 1,
    }
    _write_manifest(out, manifest)
    stats: list[dict[str, Any]] = []
    t0 = time.monotonic()
    stream: list[Any] = []
    live: list[Any] = []  # the models' stats as they run
    try:
        if sink.resumed:
            print(f"resuming {run_id}: {sink.resumed} samples already written", file=sys.stderr)
        stats = _run_pipeline(cfg, out, datasets, run_id, sink, stream, live)
        judged = stream[0].finish()
    except KeyboardInterrupt as e:
        stop = interrupts.stopped(e)  # the run's own stop (no progress, head lost), or a signal
        with interrupts.deferred():
            kept = _save_interrupted(out, manifest, sink, stats or [asdict(s) for s in live], t0,
                                     stop.reason if stop else None)
            if stream:  # judgments of samples now on disk; the rest are judged on resume
                stream[0].flush()
                if not (stop and stop.cluster_gone):  # freeing the judge actors would wait on the lost head
                    stream[0].close()
        raise RunInterrupted(kept, interrupts.exit_code(e), stop.reason if stop else None,
                             cluster_gone=bool(stop and stop.cluster_gone)) from None
    except Exception as e:
        err = storage_error(e, None)
        if err is None:
            raise
        # disk full (or another OS error) writing the run: the shard's temporary is already removed; record
        # why in the manifest (small: it fits where the shard did not) and stop with one line
        _save_failed(out, manifest, stats or [asdict(s) for s in live], t0, str(err))
        if stream:
            with contextlib.suppress(Exception):
                stream[0].close()
        raise err from None
    failed = {s["model"]: s["error"] for s in stats if s.get("status") == "infra_error"}
    manifest.update(
        judge=asdict(judged),
        status="complete",
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
        seconds=round(time.monotonic() - t0, 3),
        models=stats,
        totals=_totals(out),
    )
    if failed:  # the run completed; these models could not be served and their samples are infra errors
        manifest["failed_models"] = failed
    _write_manifest(out, manifest)
    return out


def _run_pipeline(cfg: RunConfig, out: Path, datasets: list[Dataset], run_id: str, sink: SampleSink,
                  streams: list[Any], live: list[Any]) -> list[dict[str, Any]]:
    """Every model at once on one cluster, the judge stage fed as the judged benchmarks' samples are scored.

    The judge stream is appended to `streams` and the models' stats to `live` as soon as they exist, so an
    interrupt can still flush the one and record the other."""
    import polars as pl

    from cluster.judge_stage import JudgeStream
    from cluster.judge_work import judged_benchmarks
    from cluster.pipeline import run_models

    # the judge may be one of the run's models (an open-weights judge on this cluster's vLLM replicas); its LLM
    # judge is a model job of the run's scheduler (`JudgeStream.served_jobs`)
    stream = JudgeStream(out, datasets, cfg.judge, start_ray=lambda: init_ray(cfg), hold=True, models=cfg.models)
    streams.append(stream)
    # samples written by an earlier attempt and not yet judged go first
    done = read_samples(out)
    stream.add_rows(done.filter(pl.col("benchmark").is_in(judged_benchmarks())).iter_rows(named=True))
    stream.flush()
    written = [sink.written]

    def judge(records: list[Any]) -> None:
        stream.add_records(records)
        if sink.written != written[0]:  # the samples fed so far are on disk: their judgments may follow
            written[0] = sink.written
            stream.flush()

    stats = run_models(cfg, datasets, run_id, sink, start_ray=lambda: init_ray(cfg), stages=lambda: [stream],
                       on_records=judge, live=live)
    sink.flush()
    stream.flush()
    by_version = [d.manifest.version for d in datasets]
    return [{"dataset": by_version[0] if len(by_version) == 1 else by_version, **asdict(s)} for s in stats]


class RunInterrupted(Exception):
    """SIGINT or SIGTERM ended the run, or the run stopped itself (`reason`: no progress, the Ray head lost);
    `kept` samples are on disk and a rerun resumes from them."""

    def __init__(self, kept: int, exit_code: int = 130, reason: str | None = None, *,
                 cluster_gone: bool = False) -> None:
        super().__init__(f"{reason or 'interrupted'}; {kept} samples kept; rerun the same command to resume")
        self.kept = kept
        self.exit_code = exit_code
        self.cluster_gone = cluster_gone  # Ray's head is lost: the driver leaves without asking Ray anything


def _save_interrupted(out: Path, manifest: dict[str, Any], sink: SampleSink,
                      stats: list[dict[str, Any]], t0: float, reason: str | None = None) -> int:
    sink.flush()  # finished records in memory are whole samples: keep them
    kept = len(sink.done)
    for m in stats:  # a model cut short is `interrupted`, never `complete` (its stats' default until the end)
        if m.get("status") == "complete" and m.get("written", 0) + m.get("skipped", 0) < m.get("planned", 0):
            m["status"] = "interrupted"
    manifest.update(status="interrupted", interrupted_at=datetime.now(UTC).isoformat(timespec="seconds"),
                    seconds=round(time.monotonic() - t0, 3), models=stats, samples_kept=kept)
    if reason:
        manifest["stopped_because"] = reason
    _write_manifest(out, manifest)
    return kept


def _save_failed(out: Path, manifest: dict[str, Any], stats: list[dict[str, Any]], t0: float, error: str) -> None:
    manifest.update(status="failed", error=error, failed_at=datetime.now(UTC).isoformat(timespec="seconds"),
                    seconds=round(time.monotonic() - t0, 3), models=stats)
    with contextlib.suppress(OSError, StorageError):  # the disk may not take even this (the status is then
        _write_manifest(out, manifest)                   # overwritten in place); the error line says why


def _totals(out: Path) -> dict[str, Any]:
    import polars as pl

    df = read_samples(out)
    if df.is_empty():
        return {}
    agg = df.group_by("model").agg(
        samples=pl.len(),
        prompt_tokens=pl.col("prompt_tokens").sum(),
        completion_tokens=pl.col("completion_tokens").sum(),
        cost_usd=pl.col("cost_usd").sum(),
        infra_errors=(pl.col("status") == "infra_error").sum(),
    ).sort("model")
    return {r["model"]: {k: v for k, v in r.items() if k != "model"} for r in agg.iter_rows(named=True)}
