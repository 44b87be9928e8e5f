"""Runs you can trust under faults, with real processes: one writer per run folder (a SIGKILLed holder's lock
is taken over), clean SIGINT/SIGTERM, and a private local Ray beside another local Ray cluster."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import polars as pl
import pytest
from ray_head import start_head, stop_head, wait_for_gcs

from evalcore.records import KEY_COLUMNS, read_samples

ROOT = Path(__file__).resolve().parents[1]
EVAL_ALL = str(ROOT / "jobs" / "eval_all.py")


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **extra}
    env.pop("RAY_ADDRESS", None)
    return env


def _hold_lock(folder: Path) -> subprocess.Popen:
    """Another process holding the run folder's lock (as a running eval_all, grade or judge_rerun does)."""
    code = textwrap.dedent("""
        import sys, time
        from pathlib import Path
        from cluster.runlock import run_lock
        with run_lock(Path(sys.argv[1]), "holder-under-test"):
            print("held", flush=True)
            time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code, str(folder)], env=_env(), stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _responses(small_dataset: Path, path: Path, model: str = "ext") -> Path:
    from evalcore.dataset import load_dataset

    lines = [{"model": model, "instance_id": i.instance_id, "prompt_mode": "full_text_only", "response": "42"}
             for i in load_dataset(small_dataset).instances]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def _grade(small_dataset: Path, responses: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nphe4v_cli", "grade", "--dataset", str(small_dataset),
                           "--responses", str(responses), "--out", str(out)],
                          env=_env(), capture_output=True, text=True, timeout=300)


def _errors(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("error:")]


# --- 2. one writer per run folder --------------------------------------------------------------------------------

@pytest.mark.ray
def test_second_writer_refused_naming_the_holder_and_killed_holder_taken_over(small_dataset, tmp_path):
    resp = _responses(small_dataset, tmp_path / "r.jsonl")
    run = tmp_path / "graded"
    assert _grade(small_dataset, resp, run).returncode == 0
    holder = _hold_lock(run)
    try:
        host = socket.gethostname()
        g = _grade(small_dataset, resp, run)
        assert g.returncode == 2 and len(g.stderr.strip().splitlines()) == 1, g.stderr
        assert f"pid {holder.pid} on host {host} since " in g.stderr and "holder-under-test" in g.stderr
        j = subprocess.run([sys.executable, str(ROOT / "jobs" / "judge_rerun.py"), "--run", str(run), "--local"],
                           env=_env(), capture_output=True, text=True, timeout=300)
        assert j.returncode == 2 and f"pid {holder.pid} on host {host}" in j.stderr, j.stderr[-2000:]
        assert "Traceback" not in j.stderr
        # eval_all into a folder another process writes: refused before Ray starts or anything is written
        empty = tmp_path / "fresh"
        other = _hold_lock(empty)
        try:
            cfg = tmp_path / "c.yaml"
            cfg.write_text(f"datasets: [{{path: {small_dataset}}}]\nmodels: [{{name: oracle}}]\n")
            e = subprocess.run([sys.executable, EVAL_ALL, "--config", str(cfg), "--out", str(empty)],
                               env=_env(), capture_output=True, text=True, timeout=300)
            assert e.returncode == 2 and _errors(e.stderr) == e.stderr.strip().splitlines(), e.stderr[-2000:]
            assert f"pid {other.pid} on host {host}" in e.stderr and "Started a local Ray" not in e.stderr
            assert sorted(p.name for p in empty.iterdir()) == [".nphe4v.lock", ".nphe4v.lock.holder.json"]
        finally:
            os.killpg(other.pid, signal.SIGKILL)
            other.wait()
    finally:
        # a killed holder: the OS drops its lock, and the next writer takes over at once
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    assert (run / ".nphe4v.lock.holder.json").exists(), "the killed holder's details are left behind"
    again = _grade(small_dataset, _responses(small_dataset, tmp_path / "r2.jsonl"), tmp_path / "graded2")
    assert again.returncode == 0, again.stderr
    g = _grade(small_dataset, resp, run)
    assert g.returncode == 0 and "(0 new)" in g.stdout, g.stderr
    assert not (run / ".nphe4v.lock.holder.json").exists(), "a finished writer removes its holder details"


def test_two_grades_at_once_never_write_a_sample_twice(small_dataset, tmp_path):
    resp = _responses(small_dataset, tmp_path / "r.jsonl")
    out = tmp_path / "both"
    cmd = [sys.executable, "-m", "nphe4v_cli", "grade", "--dataset", str(small_dataset), "--responses", str(resp),
           "--out", str(out)]
    procs = [subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in procs]
    codes = sorted(rc for rc, _ in results)
    # either the second refused (it met the first's lock) or it started after the first finished (0 new)
    assert codes in ([0, 0], [0, 2]), results
    for rc, err in results:
        if rc == 2:
            assert "run folder is in use by pid" in err, err
    df = read_samples(out)
    assert df.height == 180 and df.select(KEY_COLUMNS).unique().height == 180


# --- 7. SIGINT / SIGTERM -------------------------------------------------------------------------------------------

@pytest.mark.ray
@pytest.mark.slow(reason="eval_all in a subprocess (its own Ray), interrupted mid-run, then resumed")
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_keeps_samples_says_one_line_and_resumes(small_dataset, tmp_path, sig, code):
    cfg = tmp_path / "slow.yaml"
    cfg.write_text(
        "name: slow\n"
        f"datasets: [{{path: {small_dataset}}}]\n"
        "models: [{name: greedy, batch_size: 4, options: {latency_s: 0.2}}]\n"
        "prompt_modes: [figure+limited_text]\n"
        "recognition: {enabled: false}\n"
    )
    out = tmp_path / "run"
    cmd = [sys.executable, EVAL_ALL, "--config", str(cfg), "--out", str(out), "--no-html"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not list((out / "samples").glob("**/*.parquet")):
        time.sleep(0.2)
    proc.send_signal(sig)  # the driver only, as `kill` or a terminal's Ctrl-C reaches it
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == code, stderr[-3000:]
    assert "Traceback" not in stderr and "Unhandled error" not in stderr, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    kept = read_samples(out).height
    assert 0 < kept < 180, "the signal must land mid-run"
    assert last == f"interrupted; {kept} samples kept; rerun the same command to resume", stderr[-2000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["samples_kept"] == kept
    # the manifest records the dataset the run actually used
    spec = manifest["datasets"][0]["spec"]
    assert spec["instances"] == 180 and spec["levels"] == list(range(1, 11)) and len(spec["tasks"]) == 9
    if sig == signal.SIGINT:
        done = subprocess.run(cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        final = read_samples(out)
        assert final.height == 180 and final.select(KEY_COLUMNS).unique().height == 180
        assert json.loads((out / "manifest.json").read_text())["status"] == "complete"


# --- 3. a private local Ray beside another local cluster; joining one when asked ----------------------------------

@pytest.mark.ray
@pytest.mark.slow(reason="a `ray start` head beside two eval_all runs, one private and one joining it")
def test_eval_all_starts_its_own_ray_beside_another_and_joins_when_asked(small_dataset, tmp_path):
    # the other cluster has token auth on, its token given by value (nothing written to ~/.ray)
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    head = start_head(_env(**auth))
    try:
        wait_for_gcs(head)
        # plain ray.init() in this environment finds the other cluster
        env = _env(RAY_TMPDIR=head.temp_root, **auth)
        probe = "import ray; ray.init(num_cpus=1)"
        old = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
        assert old.returncode != 0 and "num_cpus and num_gpus must not be provided" in old.stderr, \
            "the setup must reproduce the collision a plain ray.init() has"
        where = textwrap.dedent("""
            import sys, ray
            from cluster.config import RunConfig
            from cluster.run import init_ray
            cfg = RunConfig.model_validate({"datasets": [{"path": "x"}], "models": [{"name": "oracle"}],
                                            "ray": {"num_cpus": 1, "address": sys.argv[1] or None}})
            init_ray(cfg)
            print("GCS", ray.get_runtime_context().gcs_address)
        """)
        own = subprocess.run([sys.executable, "-c", where, ""], env=env, capture_output=True, text=True, timeout=300)
        assert own.returncode == 0, own.stderr[-2000:]
        assert "GCS" in own.stdout and f":{head.gcs_port}" not in own.stdout.split("GCS")[-1]
        for how in ({"RAY_ADDRESS": head.gcs_address}, {}):
            arg = "" if how else head.gcs_address  # the environment variable, then ray.address in the config
            joined = subprocess.run([sys.executable, "-c", where, arg], env={**env, **how}, capture_output=True,
                                    text=True, timeout=300)
            assert joined.returncode == 0, joined.stderr[-2000:]
            assert joined.stdout.split("GCS")[-1].strip().endswith(f":{head.gcs_port}"), joined.stdout
        # joining without the token: one line saying what is missing, no traceback
        no_token = {k: v for k, v in env.items() if k not in auth}
        refused = subprocess.run([sys.executable, "-c", "import sys\nfrom cluster.config import ConfigError\n"
                                  "try:\n" + textwrap.indent(where, "    ") + "\nexcept ConfigError as e:\n"
                                  "    print(e, file=sys.stderr); sys.exit(2)\n", head.gcs_address],
                                 env=no_token, capture_output=True, text=True, timeout=300)
        assert refused.returncode == 2, refused.stderr[-2000:]
        line = refused.stderr.strip().splitlines()[-1]
        assert "cannot join the Ray cluster" in line and "RAY_AUTH_MODE=token" in line, refused.stderr[-2000:]
        cfg = tmp_path / "c.yaml"
        cfg.write_text(
            f"datasets: [{{path: {small_dataset}}}]\nmodels: [{{name: oracle}}]\n"
            "prompt_modes: [figure+limited_text]\nrecognition: {enabled: false}\nray: {num_cpus: 2}\n"
        )
        run = subprocess.run([sys.executable, EVAL_ALL, "--config", str(cfg), "--out", str(tmp_path / "run"),
                              "--no-html"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        board = pl.read_csv(tmp_path / "run" / "leaderboard.csv")
        assert board.filter(pl.col("model") == "oracle")["n"].max() == 180
    finally:
        stop_head(head)
