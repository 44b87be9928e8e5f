"""When the driver dies (SIGKILL), no provider call leaves afterwards: the replicas and the provider's limiter
are owned by the driver and die with it, and a replica never re-creates the limiter, so no slot is granted
once it is gone. Checked with real processes: `eval_all` joining a running Ray cluster (a `ray start` head,
which outlives the driver as a real cluster does), an API model calling the fake provider over HTTP, the
driver SIGKILLed mid-run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from fake_provider import FakeProvider
from ray_head import BIN, start_head, stop_head, wait_for_gcs

from nphe4v.generate import generate_version

ROOT = Path(__file__).resolve().parents[1]
ENV = "NPHE4V_DRIVER_DEATH_KEY"

pytestmark = [pytest.mark.ray, pytest.mark.slow(reason="a `ray start` head and an eval_all joined to it, SIGKILLed mid-run")]


def _replicas(sid: int) -> list[psutil.Process]:
    """The live model replicas and limiter actors on the cluster whose `ray start` session is `sid`."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            title = (p.info["cmdline"] or [""])[0]
            if (title.startswith(("ray::ModelActor", "ray::_LimiterActor")) and os.getsid(p.pid) == sid
                    and p.status() != psutil.STATUS_ZOMBIE):
                out.append(p)
        except (psutil.Error, ProcessLookupError):
            continue
    return out


def test_no_provider_call_leaves_after_the_driver_is_killed(tmp_path):
    ds = tmp_path / "ds"
    generate_version(ds, version="death-test", seed=4, per_level=4, tasks=["BSP", "SPP"], levels=[1, 2, 3])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled", ENV: "sk-death-test-KEY-0123456789"}
    env.pop("RAY_ADDRESS", None)
    head = start_head(env, command=[str(BIN / "ray"), "start", "--head", "--include-dashboard=false"], num_cpus=2)
    try:
        wait_for_gcs(head)
        _run_and_kill(tmp_path, ds, {**env, "RAY_TMPDIR": head.temp_root}, head.gcs_address, head.proc.pid)
    finally:
        stop_head(head)


def _run_and_kill(tmp_path: Path, ds: Path, env: dict[str, str], address: str, sid: int) -> None:
    with FakeProvider(default="slow:0.3", lifetime_s=600) as fp:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(textwrap.dedent(f"""
            name: death
            datasets: [{{path: {ds}}}]
            models:
              - {{name: api, backend: litellm, replicas: 2, num_cpus: 0.25, batch_size: 2,
                 options: {{model: openai/fake-model, api_base: "{fp.base_url}", api_key_env: {ENV},
                           max_concurrency: 4, timeout_s: 30, backoff_base_s: 0.05}}}}
            prompt_modes: [figure+limited_text, full_text_only]
            recognition: {{enabled: false}}
            ray: {{address: "{address}"}}
        """))
        driver = subprocess.Popen([sys.executable, str(ROOT / "jobs" / "eval_all.py"), "--config", str(cfg),
                                   "--out", str(tmp_path / "run"), "--no-html"], cwd=tmp_path, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 300
        while fp.count < 8 and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert driver.poll() is None and fp.count >= 8, "the run must be killed mid-run"
        os.kill(driver.pid, signal.SIGKILL)  # the driver only, as an OOM killer or a lost login shell does
        driver.wait()
        killed_at = time.monotonic()
        in_flight = fp.in_flight
        # the event: every replica of the run has died (Ray kills the dead driver's actors)
        deadline = time.monotonic() + 120
        while _replicas(sid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _replicas(sid), "the dead driver's replicas still run"
        dead_at = time.monotonic()
        calls_at_death = fp.count
        after_kill = [h for h in fp.hits if h.t > killed_at]
    # no call started after the driver died (beyond the requests whose slot was granted before, at most the
    # key's concurrency), and none at all once its replicas were gone
    assert len(after_kill) <= 4, [(round(h.t - killed_at, 3), h.action) for h in after_kill]
    assert fp.count == calls_at_death
    print(f"calls in flight at the kill: {in_flight}; started after it: {len(after_kill)}; replicas gone "
          f"{dead_at - killed_at:.1f} s after the kill")
