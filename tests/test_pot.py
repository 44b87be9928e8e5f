"""GraphVerse program-of-thought (issue 21 item 1): the prompt, the program a response holds, the score of what it
prints (exact verifier), `nphe4v grade` with PoT lines, and a live run of direct and PoT side by side over real
HTTP (a fake provider that writes programs, some hostile) on the session's Ray, with the real sandbox."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import socket
import threading
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from cluster.config import DatasetSpec, ModelSpec, RunConfig
from cluster.plan import count_work, plan_model
from evalcore.benchmarks import task_for
from evalcore.dataset import load_dataset
from evalcore.pot import NO_PROGRAM, PotOutcome, extract_program
from evalcore.prompting import (
    POT_MODE,
    POT_TEMPLATE_VERSION,
    VISION_MODE,
    VISION_TEMPLATE_VERSION,
    build_prompt,
    format_response,
)
from evalcore.records import read_samples
from evalcore.schema import ModelRequest, ModelResponse, SampleKey, SamplingParams
from nphe4v.scoring import score_answer, score_sample
from nphe4v_cli.app import app

runner = CliRunner()
KEY = "sk-pot-test-KEY"
ENV = "NPHE4V_POT_TEST_KEY"
# set at import, before the session's Ray starts: its workers (the model replicas) take the driver's environment
os.environ.setdefault(ENV, KEY)


@pytest.fixture(scope="module")
def gv(tmp_path_factory) -> Path:
    """A small GraphVerse slice: three SD instances."""
    from gie.dataset import generate_split

    out = tmp_path_factory.mktemp("pot") / "gv"
    generate_split(out, "testmini", 2026, limit=3, workers=0)
    return out


def sandbox_isolation() -> str:
    """The strongest isolation this machine offers: strict where the kernel allows it, else the named opt-in."""
    from evalcore.sandbox import SandboxUnavailable, check_isolation

    try:
        check_isolation("strict")
        return "strict"
    except SandboxUnavailable:
        return "rlimits-only"


# ------------------------------------------------------------------------------------------- programs


def program(body: str, prose: str = "Here is my program.") -> str:
    return f"{prose}\n```python\n{body}\n```\n"


def right(inst) -> str:
    gold = json.dumps(inst.gold.answer)
    return program(f"import json\nimport networkx as nx\nG = nx.Graph()\nprint(json.dumps({gold}))")


def wrong_answer(inst) -> dict:
    """A well-formed answer the exact verifier calls wrong (a random answer, redrawn until it is)."""
    spec = task_for(inst.benchmark, inst.task)
    data = spec.load(inst.data)
    for seed in range(200):
        ans = spec.random_answer(data, random.Random(seed))
        if score_answer(inst, json.dumps(ans))[0].verdict == "wrong":
            return ans
    raise AssertionError(f"{inst.instance_id}: no wrong random answer in 200 draws")


def wrong(inst) -> str:
    return program(f"import json\nprint(json.dumps({json.dumps(wrong_answer(inst))}))")


def hostile(port: int, run_dir: Path) -> dict[str, str]:
    """Escape attempts, each a whole response; the key is what the run must record instead of an answer."""
    return {
        "passwd": program("print(open('/etc/passwd').read())"),
        "run_folder": program(f"import os\nprint(os.listdir({str(run_dir)!r}))"),
        "write_outside": program(f"open({str(run_dir / 'pwned.txt')!r}, 'w').write('x')\nprint('{{}}')"),
        "socket": program(f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                          "s.sendall(b'escaped')\nprint('{}')"),
        "loop": program("while True:\n    pass"),
        "no_program": "I would write a program, but here is only prose: the answer is 42.",
    }


# what each attack ends as, in either isolation (the weaker one classifies them with its audit hook)
EXPECTED = {"passwd": "filesystem", "run_folder": "filesystem", "write_outside": "filesystem", "socket": "network",
            "loop": "timeout", "no_program": NO_PROGRAM}


# ------------------------------------------------------------------------------------------- pure parts


def test_extract_program_last_python_block_wins():
    text = "```python\nprint(1)\n```\nthen a fix:\n```py\nprint(2)\n```\nand text ```python inline``` after"
    assert extract_program(text) == "print(2)\n"
    assert extract_program("```\nprint(1)\n```") is None  # no language: not declared a program
    assert extract_program("```bash\nls /\n```") is None
    assert extract_program("```python\n\n```") is None  # an empty block is no program
    assert extract_program("cut off:\n```Python3\nprint(3)\nx = 1") == "print(3)\nx = 1"  # unclosed last block
    assert extract_program(None) is None and extract_program("") is None


def test_pot_prompt_is_its_own_versioned_template(gv):
    inst = load_dataset(gv).instances[0]
    spec = task_for(inst.benchmark, inst.task)
    text = spec.text(spec.load(inst.data))
    pot, direct = build_prompt(text, POT_MODE, inst.images), build_prompt(text, VISION_MODE, inst.images)
    assert (pot.template_version, direct.template_version) == (POT_TEMPLATE_VERSION, VISION_TEMPLATE_VERSION)
    assert pot.images == direct.images == inst.images
    assert text.question in pot.text and text.example in pot.text
    assert "networkx" in pot.text and "```python" in pot.text and "<root>" not in pot.text
    assert "<root>" in direct.text and "networkx" not in direct.text  # direct inference unchanged


def _request(inst, mode: str) -> ModelRequest:
    key = SampleKey(model="m", benchmark=inst.benchmark, instance_id=inst.instance_id,
                    variant=str(inst.meta.get("edit", "")), prompt_mode=mode, repeat=0)
    spec = task_for(inst.benchmark, inst.task)
    prompt = build_prompt(spec.text(spec.load(inst.data)), mode, inst.images)
    return ModelRequest(key=key, task=inst.task, level=inst.level, prompt=prompt, sampling=SamplingParams())


def test_pot_sample_is_graded_on_its_output_by_the_exact_verifier(gv):
    inst = load_dataset(gv).instances[0]
    req, resp = _request(inst, POT_MODE), ModelResponse(text=right(inst), status="ok")
    gold = json.dumps(inst.gold.answer)
    ok = score_sample("r", "v", inst, req, resp, PotOutcome(stdout=gold + "\n"))
    assert (ok.verdict, ok.pot_error, ok.pot_stdout) == ("correct", None, gold + "\n")
    # the same text as a direct answer gets the same verdict: one parse, one verifier
    direct = score_sample("r", "v", inst, _request(inst, VISION_MODE),
                          ModelResponse(text=format_response(inst.gold.answer), status="ok"))
    assert direct.verdict == "correct" and direct.pot_error is None and direct.pot_stdout is None
    bad = score_sample("r", "v", inst, req, resp, PotOutcome(stdout=json.dumps(wrong_answer(inst))))
    assert bad.verdict == "wrong" and bad.pot_error is None
    failed = score_sample("r", "v", inst, req, resp, PotOutcome(error="timeout", detail="over 2 s"))
    assert (failed.verdict, failed.pot_error, failed.reason) == ("parse_error", "timeout", "pot_error: timeout: over 2 s")
    # a PoT sample scored without running its program is recorded as such, never as an answer
    assert score_sample("r", "v", inst, req, resp).pot_error == "not_run"
    # an infra error stays one, whatever the mode
    infra = score_sample("r", "v", inst, req, ModelResponse(text=None, status="infra_error", error="down"))
    assert infra.verdict is None and infra.pot_error is None


def test_a_pot_score_task_never_asks_more_than_a_small_cluster_keeps_for_scoring():
    from cluster.pot_stage import pot_task_cpus
    from cluster.scheduler import SCORE_TASK_CPUS

    # the scheduler keeps min(half the cluster, >= 1) CPUs for scoring and the judge's actors (0.2 by default)
    assert pot_task_cpus(1) == SCORE_TASK_CPUS and pot_task_cpus(2) == pot_task_cpus(64) == 0.5


def test_a_run_written_before_the_pot_columns_still_reads(gv, tmp_path):
    from evalcore.records import SAMPLE_SCHEMA

    inst = load_dataset(gv).instances[0]
    rec = score_sample("r", "v", inst, _request(inst, VISION_MODE),
                      ModelResponse(text=format_response(inst.gold.answer), status="ok"))
    old = pl.DataFrame([rec.model_dump()], schema=SAMPLE_SCHEMA).drop("pot_stdout", "pot_error")
    folder = tmp_path / "samples" / "graphverse" / "m"
    folder.mkdir(parents=True)
    old.write_parquet(folder / "part-0.parquet")
    df = read_samples(tmp_path)
    assert df.columns == list(SAMPLE_SCHEMA) and df["pot_error"].to_list() == [None]
    assert df["verdict"].to_list() == ["correct"]


def test_graphverse_modes_per_model_and_the_default_run_id_unchanged(gv):
    ds = load_dataset(gv)
    both = ModelSpec(name="oracle", graphverse_modes=["vision", "pot"])
    plain = ModelSpec(name="greedy")
    cfg = RunConfig(datasets=[DatasetSpec(path=str(gv), benchmark="graphverse")], models=[both, plain])
    from typing import get_args

    from gie.benchmark import BENCHMARK as GRAPHVERSE
    from gie.benchmark import GRAPHVERSE_MODES, GraphVerseMode

    assert plain.modes_for(GRAPHVERSE) == ["vision"] and both.modes_for(GRAPHVERSE) == ["vision", "pot"]
    # the plug-in's option is written and dumped at the top level of the model's entry, as before it owned it
    assert both.model_dump()["graphverse_modes"] == ["vision", "pot"] and "benchmark_options" not in both.model_dump()
    assert ModelSpec.model_validate(both.model_dump()) == both

    assert get_args(GraphVerseMode) == GRAPHVERSE_MODES  # the config's modes are the prompts' modes
    assert count_work(cfg, both, ds).planned == 2 * count_work(cfg, plain, ds).planned == 2 * len(ds.instances)
    modes = [w.request.key.prompt_mode for w in plan_model(cfg, both, ds, "v")]
    assert modes.count(POT_MODE) == modes.count(VISION_MODE) == len(ds.instances)
    assert {w.request.prompt.template_version for w in plan_model(cfg, both, ds, "v")
            if w.request.key.prompt_mode == POT_MODE} == {POT_TEMPLATE_VERSION}
    # settings added for PoT leave a config that does not use them with the fingerprint it had before
    fp = RunConfig(datasets=cfg.datasets, models=[plain]).fingerprint_fields()
    assert "pot_timeout_s" not in fp and "pot_isolation" not in fp and "graphverse_modes" not in fp["models"][0]
    with pytest.raises(ValueError, match="listed twice"):
        ModelSpec(name="oracle", graphverse_modes=["pot", "pot"])
    with pytest.raises(ValueError):
        ModelSpec(name="oracle", graphverse_modes=["figure+full_text"])
    with pytest.raises(ValueError):
        RunConfig(datasets=cfg.datasets, models=[both], pot_isolation="none")


def test_baselines_answer_pot_with_a_program_graded_like_their_direct_answer(gv):
    from evalcore.baselines import baseline_answer
    from evalcore.pot import run_response

    ds = load_dataset(gv)
    spec = ModelSpec(name="oracle", graphverse_modes=["vision", "pot"])
    cfg = RunConfig(datasets=[DatasetSpec(path=str(gv), benchmark="graphverse")], models=[spec])
    for item in plan_model(cfg, spec, ds, "v"):
        req = item.request
        inst = ds.by_id()[item.instance_id]
        text = baseline_answer("oracle", req)
        resp = ModelResponse(text=text, status="ok")
        pot = run_response(text, isolation=sandbox_isolation()) if req.key.prompt_mode == POT_MODE else None
        rec = score_sample("r", "v", inst, req, resp, pot)
        assert rec.verdict == "correct", (req.key.prompt_mode, rec.reason)


def test_plan_shows_the_pot_sandbox_and_the_modes(gv, tmp_path):
    from cluster.run_plan import resolve_plan

    models = [ModelSpec(name="oracle", graphverse_modes=["vision", "pot"]), ModelSpec(name="greedy")]
    cfg = RunConfig(out=str(tmp_path / "run"), models=models,
                    datasets=[DatasetSpec(path=str(gv), benchmark="graphverse")], pot_isolation="rlimits-only")
    plan = resolve_plan(cfg, tmp_path)
    n = len(load_dataset(gv).instances)
    assert [m["samples"] for m in plan["models"]] == [2 * n, n]
    assert plan["models"][0]["graphverse_modes"] == ["vision", "pot"]
    assert plan["pot"] == {"isolation": "rlimits-only", "timeout_s": 10.0, "workers": 2, "problem": None}
    assert "pot" not in resolve_plan(cfg.model_copy(update={"models": models[1:]}), tmp_path)
    assert not (tmp_path / "run").exists()


def test_the_example_config_selects_pot_per_model_registry_references_included(tmp_path):
    from cluster.config_file import load_config
    from cluster.run_plan import resolve_plan

    cfg = load_config(Path(__file__).resolve().parents[1] / "configs" / "graphverse-pot.yaml")
    from gie.benchmark import BENCHMARK as GRAPHVERSE

    assert {m.name: m.modes_for(GRAPHVERSE) for m in cfg.models} == {"oracle": ["vision", "pot"],
                                                                      "random": ["vision", "pot"]}
    assert cfg.models[0].backend == "baseline" and cfg.pot_isolation == "strict"
    plan = resolve_plan(cfg, tmp_path)
    assert [m["samples"] for m in plan["models"]] == [102, 102]  # 51 instances x 2 modes


def test_pot_rows_are_reported_as_their_own_model_and_family():
    from gie.metrics import mode_rows
    from gie.report_tables import graphverse, graphverse_families
    from report.analysis import frame_of, model_info

    rows = []
    for mode, verdicts in (("vision", ["correct", "wrong"]), ("pot", ["correct", "correct"])):
        for i, (task, v) in enumerate(zip(("SD", "MCP"), verdicts, strict=True)):
            rows.append({"benchmark": "graphverse", "model": "gpt-5.2", "task": task, "variant": "none",
                         "instance_id": f"{task.lower()}-L01-{i}", "prompt_mode": mode, "repeat": 0,
                         "status": "ok", "verdict": v, "witness_valid": None, "value_consistent": None})
    rows.append({**rows[0], "benchmark": "nphardeval4v", "prompt_mode": "full_text_only", "task": "SPP"})
    df = frame_of(pl.DataFrame(rows))
    assert mode_rows(df)["model"].to_list() == ["gpt-5.2"] * 2 + ["gpt-5.2 (pot)"] * 2 + ["gpt-5.2"]
    acc = dict(graphverse(df)["acc_table"].select("model", "All").iter_rows())
    assert acc == {"gpt-5.2": 50.0, "gpt-5.2 (pot)": 100.0}
    fams = graphverse_families(df, None, model_info(df["model"].unique().to_list()))
    assert dict(fams.select("family", "models").iter_rows()) == {"gpt": 1, "gpt (pot)": 1}


# ------------------------------------------------------------------------------------------- grade


def test_grade_runs_pot_lines_in_the_sandbox(gv, tmp_path):
    ds = load_dataset(gv)
    insts = ds.instances
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        attacks = hostile(port, tmp_path / "out")
        answers = [right(insts[0]), wrong(insts[1]), *attacks.values()]
        lines = []
        for i, text in enumerate(answers):
            inst = insts[i % len(insts)]
            lines.append({"model": "m", "instance_id": inst.instance_id, "prompt_mode": "pot", "response": text,
                          "repeat": i})
        lines.append({"model": "m", "instance_id": insts[0].instance_id, "prompt_mode": "vision",
                      "response": format_response(insts[0].gold.answer)})
        responses = tmp_path / "responses.jsonl"
        responses.write_text("".join(json.dumps(line) + "\n" for line in lines))
        out = tmp_path / "out"
        isolation = sandbox_isolation()
        r = runner.invoke(app, ["grade", "--dataset", str(gv), "--responses", str(responses), "--out", str(out),
                                "--pot-isolation", isolation, "--pot-timeout-s", "5", "--pot-workers", "4"])
        assert r.exit_code == 0, r.output
        listener.settimeout(0.2)
        with pytest.raises(TimeoutError):
            listener.accept()  # no program reached the listener
    df = read_samples(out).sort("repeat")
    pot = df.filter(pl.col("prompt_mode") == "pot")
    assert pot.height == len(answers) and set(pot["status"]) == {"ok"}
    got = dict(zip(pot["repeat"].to_list(), pot.select("verdict", "pot_error").iter_rows(), strict=True))
    assert got[0] == ("correct", None) and got[1] == ("wrong", None)
    from evalcore.sandbox import POT_ERRORS

    for i, name in enumerate(attacks, start=2):
        verdict, err = got[i]
        assert verdict == "parse_error" and err in (*POT_ERRORS, NO_PROGRAM), (name, got[i])
    assert {name: got[i][1] for i, name in enumerate(attacks, start=2)} == EXPECTED
    assert not (out / "pwned.txt").exists()
    assert not any("root:" in (s or "") for s in pot["pot_stdout"].to_list())  # /etc/passwd never read
    assert df.filter(pl.col("prompt_mode") == "vision")["verdict"].to_list() == ["correct"]
    board = pl.read_csv(out / "graphverse_acc.csv")
    assert set(board["model"]) == {"m", "m (pot)"}  # PoT reported beside direct inference


def test_exported_pot_requests_round_trip_through_grade(gv, tmp_path):
    from evalcore.prompting import format_program

    r = runner.invoke(app, ["export", str(gv), "--format", "jsonl", "--out", str(tmp_path / "exp"),
                            "--model-option", "graphverse_modes=[vision, pot]"])
    assert r.exit_code == 0, r.output
    reqs = [json.loads(x) for x in (tmp_path / "exp" / "requests.jsonl").read_text().splitlines()]
    by_id = load_dataset(gv).by_id()
    assert sorted(x["prompt_mode"] for x in reqs) == ["pot"] * len(by_id) + ["vision"] * len(by_id)
    for x in reqs:
        gold = by_id[x["instance_id"]].gold.answer
        assert x["template_version"] == (POT_TEMPLATE_VERSION if x["prompt_mode"] == "pot" else VISION_TEMPLATE_VERSION)
        x["response"] = format_program(gold) if x["prompt_mode"] == "pot" else format_response(gold)
    filled = tmp_path / "filled.jsonl"
    filled.write_text("".join(json.dumps(x) + "\n" for x in reqs))
    r = runner.invoke(app, ["grade", "--dataset", str(gv), "--responses", str(filled), "--out", str(tmp_path / "g"),
                            "--pot-isolation", sandbox_isolation()])
    assert r.exit_code == 0, r.output
    df = read_samples(tmp_path / "g")
    assert df.height == len(reqs) and set(df["verdict"]) == {"correct"}
    bad = runner.invoke(app, ["export", str(gv), "--format", "jsonl", "--out", str(tmp_path / "exp2"),
                              "--model-option", "graphverse_modes=[vision, code]"])
    assert bad.exit_code == 2 and "--model-option graphverse_modes=['vision', 'code']" in bad.output, bad.output
    typo = runner.invoke(app, ["export", str(gv), "--format", "jsonl", "--out", str(tmp_path / "exp3"),
                               "--model-option", "graphverse_mode=[pot]"])
    assert typo.exit_code == 2 and "--model-option graphverse_mode: not a benchmark's model option" in typo.output


def test_grade_a_forged_end_is_a_pot_error_never_the_answer(gv, tmp_path):
    """Issue 32: programs that print the gold answer, forge how they ended on the descriptor the sandbox used to
    report on (padded past the 64 KiB the host kept), then fail; forged refusals with escape bytes; memfd."""
    from evalcore.sandbox import POT_ERRORS

    insts = load_dataset(gv).instances
    forged = "import os\nline = b'status exit 0\\n'\nos.write(3, line + b' ' * 70_000 + b'\\n' + line * 10)\n"

    def gold_then(inst, tail: str) -> str:
        return program(f"import json\nprint(json.dumps({json.dumps(inst.gold.answer)}), flush=True)\n{forged}{tail}")

    escapes = "\\x1b[2J\\x1b]0;pwned\\x07\\u202e"
    cases = {  # name: (response, instance, the pot_error it must get; None: any of POT_ERRORS)
        "raise": (gold_then(insts[0], "raise ValueError('after the answer')"), insts[0], "runtime_error"),
        "spin": (gold_then(insts[1], "while True:\n    pass"), insts[1], "timeout"),
        "violation": (gold_then(insts[2], f"os.write(3, 'violation network {escapes} x\\n'.encode())\nos._exit(86)"),
                      insts[2], None),
        "init_error": (gold_then(insts[0], "os.write(3, b'init-error mount: forged\\n')\nos._exit(125)"), insts[0],
                       "runtime_error"),
        "memfd": (program("import os\nfds = [os.memfd_create('x') for _ in range(40)]\nfor fd in fds:\n"
                          "    os.write(fd, b'x' * 2**24)\nprint('[]')"), insts[1], "runtime_error"),
    }
    lines = [{"model": "m", "instance_id": inst.instance_id, "prompt_mode": "pot", "response": text, "repeat": i}
             for i, (text, inst, _) in enumerate(cases.values())]
    responses = tmp_path / "forged.jsonl"
    responses.write_text("".join(json.dumps(line) + "\n" for line in lines))
    r = runner.invoke(app, ["grade", "--dataset", str(gv), "--responses", str(responses), "--out", str(tmp_path / "o"),
                            "--pot-isolation", sandbox_isolation(), "--pot-timeout-s", "1"])
    assert r.exit_code == 0, r.output
    df = read_samples(tmp_path / "o").sort("repeat")
    for (name, (_, _, want)), row in zip(cases.items(), df.iter_rows(named=True), strict=True):
        assert row["verdict"] == "parse_error", (name, row["verdict"], row["reason"])
        assert row["pot_error"] == want if want else row["pot_error"] in POT_ERRORS, (name, row["pot_error"])
        assert all(c.isprintable() for c in row["reason"]), (name, row["reason"])


def test_grade_refuses_pot_lines_without_the_sandbox_it_asks_for(gv, tmp_path):
    from evalcore.sandbox import SandboxUnavailable, check_isolation

    try:
        check_isolation("strict")
    except SandboxUnavailable:
        pass
    else:
        pytest.skip("strict isolation is available on this machine: nothing to refuse")
    inst = load_dataset(gv).instances[0]
    responses = tmp_path / "r.jsonl"
    responses.write_text(json.dumps({"model": "m", "instance_id": inst.instance_id, "prompt_mode": "pot",
                                     "response": right(inst)}) + "\n")
    r = runner.invoke(app, ["grade", "--dataset", str(gv), "--responses", str(responses), "--out",
                            str(tmp_path / "out")])
    assert r.exit_code == 2 and "--pot-isolation rlimits-only" in r.output
    assert len(r.output.strip().splitlines()) == 1, r.output
    assert not (tmp_path / "out" / "samples").exists()


def test_grade_refuses_an_unknown_graphverse_mode(gv, tmp_path):
    inst = load_dataset(gv).instances[0]
    responses = tmp_path / "r.jsonl"
    responses.write_text(json.dumps({"model": "m", "instance_id": inst.instance_id, "prompt_mode": "code",
                                     "response": ""}) + "\n")
    r = runner.invoke(app, ["grade", "--dataset", str(gv), "--responses", str(responses), "--out",
                            str(tmp_path / "out")])
    assert r.exit_code == 2 and "r.jsonl:1: field prompt_mode: 'code'" in r.output and "'pot'" in r.output


# ------------------------------------------------------------------------------------------- live run


@pytest.fixture(scope="module")
def demo_slice(tmp_path_factory) -> Path:
    """The demo's GraphVerse slice (configs/demo.yaml: testmini, seed 2026, limit 51)."""
    from gie.dataset import generate_split

    out = tmp_path_factory.mktemp("pot-demo") / "gv"
    generate_split(out, "testmini", 2026, limit=51, workers=0)
    return out


def _image_key(images: list[str]) -> tuple[str, ...]:
    return tuple(hashlib.sha256(base64.b64decode(u.partition(",")[2])).hexdigest() for u in images)


@pytest.mark.slow(reason="generates the demo's 51-instance GraphVerse slice and runs 102 samples, programs included, "
                         "through Ray")
def test_live_run_direct_and_pot_side_by_side(demo_slice, ray_local, tmp_path):
    from cluster.run import execute
    from evalcore.sandbox import POT_ERRORS
    from report.summaries import write_summaries

    ds = load_dataset(demo_slice)
    out = tmp_path / "run"
    hits: list[int] = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def watch() -> None:  # records any connection a program manages to make
            listener.settimeout(0.2)
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                    hits.append(1)
                    conn.close()
                except TimeoutError:
                    continue

        stop = threading.Event()
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        attacks = hostile(port, out)
        kinds = ["right", "wrong", *attacks]
        plan: dict[tuple[tuple[str, ...], str], tuple[str, str]] = {}  # (images, mode) -> (instance, kind)
        replies: dict[tuple[tuple[str, ...], str], str] = {}
        for i, inst in enumerate(ds.instances):
            images = tuple(ref.sha256 for ref in inst.images)
            kind = kinds[i % len(kinds)]
            text = right(inst) if kind == "right" else wrong(inst) if kind == "wrong" else attacks[kind]
            replies[(images, POT_MODE)] = text
            plan[(images, POT_MODE)] = (inst.instance_id, kind)
            replies[(images, VISION_MODE)] = format_response(inst.gold.answer) if i % 2 == 0 else "no idea"

        def reply(prompt: str, image_uris: list[str]) -> str:
            mode = POT_MODE if "```python" in prompt else VISION_MODE
            return replies[(_image_key(image_uris), mode)]

        from fake_provider import FakeProvider

        with FakeProvider(reply=reply, lifetime_s=900) as fp:
            api = ModelSpec(name="api", backend="litellm", num_cpus=0.25, batch_size=8,
                            graphverse_modes=["vision", "pot"],
                            options={"model": "openai/fake-model", "api_base": fp.base_url, "api_key_env": ENV,
                                     "max_concurrency": 8, "timeout_s": 60.0, "backoff_base_s": 0.05})
            cfg = RunConfig(name="pot", out=str(out), models=[api],
                            datasets=[DatasetSpec(benchmark="graphverse", path=str(demo_slice))],
                            pot_isolation=sandbox_isolation(), pot_timeout_s=2.0, pot_workers=2)
        # 2 s of CPU time: the load does not count against it (a wall clock of 5 s once made a socket program
        # a timeout at load 15); the answering programs use ~0.2 CPU s each (networkx imported), and the six
        # busy loops are stopped after 2 CPU s each (5 s each burnt 18 CPU s more for the same verdict)
            execute(cfg)
        stop.set()
        watcher.join(5)
    assert not hits, "a program reached a listener on 127.0.0.1"
    assert not (out / "pwned.txt").exists()
    df = read_samples(out)
    assert df.height == 2 * len(ds.instances)
    assert set(df["status"]) == {"ok"}, df.filter(pl.col("status") != "ok")["error"].to_list()[:2]
    pot = df.filter(pl.col("prompt_mode") == POT_MODE)
    kind_of = {iid: kind for iid, kind in plan.values()}
    for row in pot.iter_rows(named=True):
        kind = kind_of[row["instance_id"]]
        if kind == "right":
            assert (row["verdict"], row["pot_error"]) == ("correct", None), row["reason"]
        elif kind == "wrong":
            assert (row["verdict"], row["pot_error"]) == ("wrong", None), row["reason"]
        else:
            assert row["verdict"] == "parse_error" and row["pot_error"] == EXPECTED[kind], \
                (kind, row["pot_error"], row["reason"])
            assert row["pot_error"] in (*POT_ERRORS, NO_PROGRAM)
            assert "root:" not in (row["pot_stdout"] or "")
    assert set(kind_of.values()) == {"right", "wrong", *EXPECTED}  # every attack was made
    # reported beside direct inference, never pooled with it
    acc = dict(write_summaries(out)[0][1].select("model", "All").iter_rows())
    n_right = sum(1 for k in kind_of.values() if k == "right")
    assert set(acc) == {"api", "api (pot)"}
    assert acc["api (pot)"] == pytest.approx(100 * n_right / len(ds.instances))
    assert acc["api"] == pytest.approx(100 * len(range(0, len(ds.instances), 2)) / len(ds.instances))
    # the judge (rule-based, the default) read the programs as the responses' reasoning; its tables keep PoT apart
    from gie.report_tables import graphverse_judged
    from report.analysis import RunsContext, frame_of

    frame = frame_of([out])
    judged = graphverse_judged(frame, RunsContext("graphverse", frame.lazy(), [out]))["acc_vgr"].filter(pl.col("task") == "All")
    assert dict(judged.select("model", "n_vgr").iter_rows()) == {"api": len(ds.instances),
                                                                  "api (pot)": len(ds.instances)}
