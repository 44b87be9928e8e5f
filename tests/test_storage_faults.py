"""A full disk and hand-copied shards: one line naming the path and the cause, the manifest `failed`, no
temporary left (a resume removes stale ones and completes); a key in two shards is counted once, by the run
that resumes and by the report, which names the shard it dropped rows from."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from evalcore.records import KEY_COLUMNS, read_samples
from evalcore.shards import StorageError, shard_files, temporaries

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("RAY_ADDRESS", None)
    return env


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nphe4v_cli", *args], env=_env(), capture_output=True, text=True,
                          timeout=300)


def _grade(small_dataset: Path, tmp_path: Path, out: Path) -> subprocess.CompletedProcess:
    from evalcore.dataset import load_dataset

    resp = tmp_path / "r.jsonl"
    resp.write_text("".join(json.dumps({"model": "ext", "instance_id": i.instance_id, "prompt_mode": "full_text_only",
                                        "response": "42"}) + "\n" for i in load_dataset(small_dataset).instances))
    return _cli("grade", "--dataset", str(small_dataset), "--responses", str(resp), "--out", str(out))


@pytest.fixture
def small_disk(tmp_path):
    """A real 400 KiB tmpfs (ENOSPC from the kernel, not a simulation); skipped where mounting is not allowed."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(disk: Path, leave: int = 0) -> Path:
    """Fill the disk up to `leave` bytes free (0: completely)."""
    filler = disk / "filler"
    with open(filler, "ab") as f:
        try:
            while True:
                free = shutil.disk_usage(disk).free
                if free <= leave:
                    break
                f.write(b"\0" * min(4096, free - leave))
                f.flush()
        except OSError:
            pass
    return filler


def test_every_shard_write_on_a_full_disk_is_one_line_naming_the_file(small_disk):
    """Wherever the disk fills (in a data page, in the footer), a shard that does not fit fails as
    `StorageError("no space left on device writing <file>")` and leaves no temporary behind. Polars writing the
    file itself reports a full disk in the footer as "Invalid thrift: transport error", with no errno: with a
    wide table (the footer holds every column's metadata, as the samples' does) and the room left stepped
    across it, about a fifth of these writes did so, and a run ended in that traceback."""
    from pydantic import create_model

    from evalcore.shards import ShardWriter

    columns = [f"c{j}" for j in range(40)]
    Row = create_model("Row", part=(str, ...), key=(str, ...), **{c: (str, ...) for c in columns})
    schema = {"part": pl.Utf8, "key": pl.Utf8, **{c: pl.Utf8 for c in columns}}
    failures = 0
    for leave in range(512, 40_000, 384):
        rng = random.Random(leave)  # incompressible values, the same on every run
        filler = fill(small_disk, leave=leave)
        root = small_disk / "t"
        w = ShardWriter(root, schema, ["key"], partition_by=["part"], what="row", flush_rows=10**6)
        w.add([Row(part="p", key=str(i), **{c: f"{rng.getrandbits(32):08x}" for c in columns}) for i in range(20)])
        try:
            w.flush()
        except StorageError as e:
            failures += 1
            line = str(e)
            assert "\n" not in line and line.startswith(f"no space left on device writing {root}/p/"), line
            assert line.endswith(".parquet"), line
        assert not list(small_disk.glob("**/.*.tmp")), "a temporary was left behind"
        filler.unlink()
        shutil.rmtree(root, ignore_errors=True)
    assert failures >= 30  # most of the steps cannot fit: the property was exercised, not skipped


def test_duplicate_shard_is_counted_once_by_the_report_and_the_resume(small_dataset, tmp_path):
    run = tmp_path / "run"
    assert _grade(small_dataset, tmp_path, run).returncode == 0
    shard = shard_files(run / "samples")[0]
    copy = shard.with_name("part-99999999999999999999-copy0000.parquet")
    shutil.copy(shard, copy)  # a shard copied by hand under another name
    rep = _cli("report", str(run))
    assert rep.returncode == 0, rep.stderr
    board = pl.read_csv(run / "leaderboard.csv")
    assert board.filter(pl.col("prompt_mode") == "full_text_only")["n"].to_list() == [180], board  # not 360
    line = f"{copy}: 180 sample(s) already in another shard, counted once (dropped here)"
    assert line in rep.stderr, rep.stderr
    assert read_samples(run).height == 180
    # the resume counts each key once: nothing new, nothing written twice
    again = _grade(small_dataset, tmp_path, run)
    assert again.returncode == 0 and "(0 new)" in again.stdout, again.stderr
    assert read_samples(run).select(KEY_COLUMNS).unique().height == 180 and len(shard_files(run / "samples")) == 2


@pytest.mark.ray
@pytest.mark.slow(reason="two eval_all runs on Ray against a 400 KiB tmpfs, the second a resume")
def test_disk_full_fails_in_one_line_cleans_up_and_the_resume_completes(small_dataset, small_disk, ray_local,
                                                                        tmp_path):
    from cluster.config import DatasetSpec, ModelSpec, RunConfig
    from cluster.run import execute

    out = small_disk / "run"
    cfg = RunConfig(name="full", out=str(out), datasets=[DatasetSpec(path=str(small_dataset))],
                    models=[ModelSpec(name="oracle", num_cpus=0.25)], prompt_modes=["figure+limited_text"],
                    recognition={"enabled": False})
    filler = fill(small_disk, leave=24 * 1024)  # room for the manifest, not for the samples' shard
    with pytest.raises(StorageError) as err:
        execute(cfg)
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"no space left on device writing {out}/samples/"), line
    assert line.endswith(".parquet"), line
    assert json.loads((out / "manifest.json").read_text())["status"] == "failed"
    assert json.loads((out / "manifest.json").read_text())["error"] == line
    assert not temporaries(out) and not list(out.glob("**/*.tmp")), "a temporary was left behind"
    # the report on the full disk: one line naming the file, exit 2
    fill(small_disk)
    rep = _cli("report", str(out))
    assert rep.returncode == 2 and rep.stderr.strip().splitlines() == [
        f"error: no space left on device writing {out}/leaderboard.csv"], rep.stderr
    # a stale temporary (as a SIGKILLed writer leaves) is removed by the resume, which completes
    filler.unlink()
    stale = out / "samples" / "nphardeval4v" / "oracle" / ".part-00000000000000000001-dead.parquet.tmp"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_bytes(b"PAR1 cut short")
    execute(cfg)
    assert not stale.exists()
    df = read_samples(out)
    assert df.height == 180 and df.select(KEY_COLUMNS).unique().height == 180
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"


@pytest.fixture
def roomy_disk(tmp_path):
    """A real 8 MiB tmpfs (room for a graded run and its HTML report), remountable read-only."""
    mnt = tmp_path / "disk8"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory) -> Path:
    from nphe4v.generate import generate_version

    out = tmp_path_factory.mktemp("ds") / "tiny"
    generate_version(out, version="tiny", seed=1, per_level=1, tasks=["BSP"], levels=[1, 2], workers=1)
    return out


def _in_process(*args: str) -> subprocess.CompletedProcess:
    """The nphe4v command run in this process (cheap: no interpreter start), as a CompletedProcess."""
    from typer.testing import CliRunner

    from nphe4v_cli.app import app

    r = CliRunner().invoke(app, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return subprocess.CompletedProcess(args, r.exit_code, r.stdout, r.stderr)


def _grade_tiny(ds: Path, tmp_path: Path, out: Path) -> subprocess.CompletedProcess:
    from evalcore.dataset import load_dataset

    resp = tmp_path / "r.jsonl"
    resp.write_text("".join(json.dumps({"model": "ext", "instance_id": i.instance_id, "prompt_mode": "full_text_only",
                                        "response": "42"}) + "\n" for i in load_dataset(ds).instances))
    return _in_process("grade", "--dataset", str(ds), "--responses", str(resp), "--out", str(out))


def _judge_rerun(argv: list[str], capsys) -> subprocess.CompletedProcess:
    """jobs/judge_rerun.py's cli() in this process."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("judge_rerun_job", ROOT / "jobs" / "judge_rerun.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    capsys.readouterr()
    rc = mod.cli(argv)
    return subprocess.CompletedProcess(argv, rc, "", capsys.readouterr().err)


def _one_error_line(p: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and "Traceback" not in p.stderr + p.stdout, (p.returncode, p.stderr)
    return lines[0]


def test_a_read_only_run_folder_is_one_line_everywhere(tiny_dataset, roomy_disk, tmp_path, capsys):
    """A run folder on a read-only file system, fresh or resumed, through grade, eval_all and report: one line
    naming the path, exit 2, and the folder as it was."""
    from nphe4v_cli.eval_all import main as eval_all

    run = roomy_disk / "run"
    assert _grade_tiny(tiny_dataset, tmp_path, run).returncode == 0
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    (roomy_disk / "empty").mkdir()
    subprocess.run(["mount", "-o", "remount,ro", str(roomy_disk)], check=True)
    again = _grade_tiny(tiny_dataset, tmp_path, run)
    assert _one_error_line(again) == f"error: read-only file system locking {run}/.nphe4v.lock"
    fresh = _grade_tiny(tiny_dataset, tmp_path, roomy_disk / "new")
    assert _one_error_line(fresh) == f"error: read-only file system creating {roomy_disk}/new"
    rep = _in_process("report", str(run))
    assert _one_error_line(rep) == f"error: read-only file system writing {run}/leaderboard.csv"
    rerun = _judge_rerun(["--run", str(run), "--judge", "rule-based"], capsys)
    assert _one_error_line(rerun) == f"judge_rerun: error: read-only file system locking {run}/.nphe4v.lock"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"datasets: [{{path: {tiny_dataset}}}]\nmodels: [{{name: oracle}}]\nprompts: rewritten\n")
    for out in (roomy_disk / "empty", roomy_disk / "new2"):  # eval_all never starts Ray: the lock comes first
        capsys.readouterr()
        rc = eval_all(["--config", str(cfg), "--out", str(out), "--data-root", str(tmp_path / "data")])
        line = _one_error_line(subprocess.CompletedProcess([], rc, "", capsys.readouterr().err))
        assert line.startswith("error: read-only file system ") and str(out) in line, line
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before


def test_the_manifest_status_never_stays_running_on_a_full_disk(small_disk):
    """The final manifest cannot be written (disk full): the status on disk is overwritten in place, in the
    bytes the manifest already holds, so it never says `running` for a run that stopped."""
    from cluster.run_manifest import RUN_MANIFEST
    from cluster.run_manifest import write_manifest as _write_manifest

    for final, shown in (("complete", "failed"), ("interrupted", "interrupted"), ("failed", "failed")):
        out = small_disk / f"run-{final}"
        out.mkdir()
        manifest = {"run_id": "r", "status": "running", "config": {"models": [{"status": "x"}]}}
        _write_manifest(out, manifest)
        filler = fill(small_disk)
        with pytest.raises(StorageError) as err:
            _write_manifest(out, {**manifest, "status": final, "totals": {"m": "x" * 100_000}})
        assert str(err.value) == f"no space left on device writing {out}/{RUN_MANIFEST}"
        on_disk = json.loads((out / RUN_MANIFEST).read_text())
        assert on_disk["status"] == shown and on_disk["config"] == manifest["config"], on_disk
        assert not list(out.glob(".*.tmp"))
        filler.unlink()


def test_the_html_report_on_a_full_disk_is_one_line_and_the_last_report_stays_whole(tiny_dataset, roomy_disk,
                                                                                    tmp_path):
    run = roomy_disk / "run"
    assert _grade_tiny(tiny_dataset, tmp_path, run).returncode == 0
    html = run / "report.html"
    first = _in_process("report", str(run), "--html", str(html))
    assert first.returncode == 0, first.stderr
    kept = html.read_bytes()
    (run / "leaderboard.csv").unlink()  # the report's first file fits; the figures or the page do not
    fill(roomy_disk)
    again = _in_process("report", str(run), "--html", str(html))
    line = _one_error_line(again)
    assert line.startswith(f"error: no space left on device writing {run}/"), line
    assert html.read_bytes() == kept and not list(run.glob("**/.*.tmp"))


def test_the_judge_cache_on_a_full_disk_keeps_nothing_partial_and_does_not_stop_the_judging(small_disk):
    """The cache only saves asking a judge again: a write the disk refuses is skipped (counted), leaves no
    temporary, and a later read finds no entry (never a cut one)."""
    from judge.cache import JudgeCache

    cache = JudgeCache(small_disk / "judge_cache")
    cache.put("k" * 64, {"status": "ok", "steps": []})
    assert cache.writes == 1
    filler = fill(small_disk)
    cache.put("j" * 64, {"status": "ok", "steps": ["x" * 50_000]})
    assert (cache.writes, cache.failed_writes) == (1, 1)
    assert cache.get("j" * 64) is None and cache.get("k" * 64) is not None
    assert not list(small_disk.glob("**/.*.tmp"))
    filler.unlink()
