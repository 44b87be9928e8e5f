"""`prompts: paper`: the authors' prompt files, pinned and fetched like a dataset, read with ast, assembled as the
original runners assemble them.

The authors' text is never in this file: the prompt pieces are read from the shared copy of their files
(../shared/peers/nphardeval4v, skipped where absent), and the runner files, which the shared copy lacks, are
stood in for by runners written here with the same statement shapes and our own placeholder wording
(`_runner_source`). The real runners are checked where a copy of them is at hand (`_real_assets`).
"""

from __future__ import annotations

import hashlib
import http.server
import os
import random
import shutil
import threading
from pathlib import Path

import pytest
from conftest import shared_or_skip

from cluster.config import ConfigError, DatasetSpec, ModelSpec, RunConfig
from cluster.plan import check_prompt_assets, plan_model
from cluster.run import preflight_models
from evalcore.dataset import load_dataset
from evalcore.schema import PROMPT_MODES
from nphe4v import upstream_assets
from nphe4v.generate import generate_version
from nphe4v.paper_prompts import (
    PAPER_INPUTS,
    PROMPT_FILES,
    TASK_SOURCES,
    PaperPromptError,
    load_prompt_set,
    paper_text,
    read_prompt_dicts,
    read_recipe,
)
from nphe4v.tasks import TASK_MODULES, get_task
from nphe4v.upstream_assets import PINNED_FILES, AssetsMissing, AssetSource, resolve_assets

CLOSING = "CLOSING: text and figure both hold the data."
CUE = "Answer:\n"


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _instance(task: str, level: int = 3, seed: int = 1):
    spec = get_task(task)
    return spec.generate(level, random.Random(seed))


def _runner_source(task: str) -> str:
    """A runner with the original's statement shapes (per-model branches, a `+` chain of pieces and literals,
    inline slots, data loops writing `this_line` as an f-string or a .format template, appended literals) and
    our own placeholder wording."""
    inputs = PAPER_INPUTS[task](_instance(task))
    fn = TASK_SOURCES[task][2]
    fmt = ", ".join(f"{k}={k}" for k in inputs.fields)
    chain = ("p['Intro'] + '\\n' + p['Initial_question'].format(" + fmt + ") + '\\n' + p['Output_content']"
             + (".format(" + fmt + ")" if task == "SPP" else "") + " + '\\n' + p['Output_format']")
    for _ in inputs.slots:
        chain += " + '\\nSLOT: ' + ', '.join(map(str, array)) + '\\n'"
    if inputs.rows:
        chain += f" + '\\nHEADER {task}\\n'"
    body = [f"        prompt_text = {chain}"]
    for k, rows in enumerate(inputs.rows):
        arity = len(rows[0]) if rows else 1
        if k % 2 == 0:  # an f-string over the loop variable's fields
            fields = " | ".join("{item[" + str(i) + "]}" for i in range(arity))
            line = f'f"ROW{k} {fields}"'
        else:  # a .format template with positional arguments
            line = '"ROW' + str(k) + " " + " | ".join("{}" for _ in range(arity)) + '".format(' + ", ".join(
                f"item[{i}]" for i in range(arity)) + ")"
        body += [f"        for item in loop{k}:", "            if True:",
                 f"                this_line = {line}", "                prompt_text += this_line + '\\n'"]
    body += [f"        prompt_text += {CLOSING!r}"]
    if task in ("SPP", "KSP"):
        body += [f"        prompt_text += {CUE!r}"]
    general = "\n".join("    " + b for b in body)
    kosmos = "\n".join("    " + b.replace("prompt_text = p['Intro']", "prompt_text = '<grounding> ' + p['Intro']")
                       for b in body)
    return (f"def {fn}(qs, p=None, imgdir=None):\n"
            "    outputs = []\n"
            "    for q in tqdm(qs):\n"
            "        if MODEL == 'kosmos2':\n" + kosmos + "\n"
            "        elif (MODEL == 'qwen_vl') | (MODEL == 'llava'):\n" + general + "\n"
            "        else:\n            assert 'MODEL None!'\n"
            "        imgprompts = None\n"
            "    return outputs\n")


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> Path:
    """A checkout-shaped folder: the authors' two prompt files (from the shared copy) and our stand-in runners."""
    shared = shared_or_skip("peers", "nphardeval4v")
    root = tmp_path_factory.mktemp("assets")
    for rel in PROMPT_FILES.values():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shared / rel, root / rel)
    for task, (_, rel, _) in TASK_SOURCES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(_runner_source(task), encoding="utf-8")
    return root


@pytest.fixture()
def pinned(assets: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in folder's own hashes as the pins (the authors' prompt files keep their real pins)."""
    pins = {rel: _sha(assets / rel) for rel in PINNED_FILES}
    for rel in PROMPT_FILES.values():
        assert pins[rel] == PINNED_FILES[rel]
    monkeypatch.setattr(upstream_assets, "PINNED_FILES", pins)
    return assets


def test_pins_are_the_shared_copy_of_the_pinned_commit():
    shared = shared_or_skip("peers", "nphardeval4v")
    for rel in PROMPT_FILES.values():
        assert _sha(shared / rel) == PINNED_FILES[rel], rel
    # Close/prompts.py is the same file as Prompts/prompts.py (the API runners' copy)
    assert _sha(shared / "Close" / "prompts.py") == PINNED_FILES["Prompts/prompts.py"]
    assert upstream_assets.UPSTREAM_COMMIT in (shared.parent / "MANIFEST.md").read_text(encoding="utf-8")


def test_prompt_dicts_parse_as_data_for_every_task():
    shared = shared_or_skip("peers", "nphardeval4v")
    dicts = {k: read_prompt_dicts((shared / rel).read_text(encoding="utf-8"), rel) for k, rel in PROMPT_FILES.items()}
    differs = set()
    for task, (name, _, _) in TASK_SOURCES.items():
        for kind in PROMPT_FILES:
            d = dicts[kind][name]
            for key in ("Intro", "Initial_question", "Output_content", "Output_format", "Figure_only"):
                assert isinstance(d[key], str) and d[key].strip(), (kind, task, key)
        if any(dicts["open"][name][k] != dicts["api"][name][k] for k in ("Intro", "Output_format")):
            differs.add(task)
    # the two files differ for SPP (format block) and KSP (intro) only
    assert differs == {"SPP", "KSP"}


def test_every_task_has_inputs_for_its_placeholders(assets: Path):
    ps = load_prompt_set(assets)
    for task in TASK_MODULES:
        fields = PAPER_INPUTS[task](_instance(task)).fields
        for kind in PROMPT_FILES:
            q = ps.pieces(task, kind)["Initial_question"]
            assert q.format(**fields) != q  # every placeholder of the question is filled by our instance


@pytest.mark.parametrize("task", list(TASK_MODULES))
def test_assembly_in_every_mode_follows_the_runner(assets: Path, task: str):
    ps = load_prompt_set(assets)
    data = _instance(task, level=4, seed=7)
    inputs = PAPER_INPUTS[task](data)
    n_rows = sum(len(r) for r in inputs.rows)
    for kind in PROMPT_FILES:
        p = ps.pieces(task, kind)
        head = p["Intro"] + "\n" + p["Initial_question"].format(**inputs.fields) + "\n"
        texts = {m: paper_text(ps, task, inputs, m, kind) for m in PROMPT_MODES}
        for mode, text in texts.items():
            if task == "EDP" and mode == "figure+limited_text":
                # the strings only in the figure, as the papers' limited-text runner sent it
                assert text.startswith(p["Intro"] + "\n" + p["Output_content"] + "\n"), kind
                assert inputs.fields["string_a"] not in text and inputs.fields["string_b"] not in text
            else:
                assert text.startswith(head), (task, kind, mode)
            assert p["Output_format"] in text
            assert "<grounding>" not in text  # the Kosmos-2 branch is not the one read
            assert text.endswith(CUE) == (task in ("SPP", "KSP"))
        full, only, limited = texts["figure+full_text"], texts["full_text_only"], texts["figure+limited_text"]
        assert full.count("\nROW") == n_rows and only.count("\nROW") == n_rows
        for k, rows in enumerate(inputs.rows):
            for values in rows:
                assert f"ROW{k} " + " | ".join(map(str, values)) + "\n" in full
        for slot in inputs.slots:
            assert "SLOT: " + slot + "\n" in full and slot in only and slot not in limited
        assert CLOSING in full and CLOSING not in only and CLOSING not in limited
        assert "ROW" not in limited and "HEADER" not in limited and p["Figure_only"] in limited
        assert p["Figure_only"] not in full


def test_open_and_api_prompt_files_give_their_own_text(assets: Path):
    ps = load_prompt_set(assets)
    for task in ("SPP", "KSP", "BSP"):
        inputs = PAPER_INPUTS[task](_instance(task))
        a, b = (paper_text(ps, task, inputs, "figure+full_text", k) for k in ("open", "api"))
        assert (a != b) == (task in ("SPP", "KSP"))


def test_values_written_as_the_runners_write_them(assets: Path):
    ps = load_prompt_set(assets)
    bsp = _instance("BSP")
    # the BSP runner sorts the array before writing it
    assert PAPER_INPUTS["BSP"](bsp).slots == (", ".join(map(str, sorted(bsp.array))),)
    msp = _instance("MSP")
    inputs = PAPER_INPUTS["MSP"](msp)
    # the number of participants, not the dict the runner passed (listed change)
    assert inputs.fields["total_participants"] == len(msp.participants)
    text = paper_text(ps, "MSP", inputs, "full_text_only", "open")
    p0 = msp.participants[0]
    assert f"ROW1 {p0.id} | {list(p0.available_slots)} | {list(p0.meetings)}\n" in text
    spp = _instance("SPP")
    assert PAPER_INPUTS["SPP"](spp).fields == {"start_node": spp.start, "end_node": spp.end}


def test_recipe_reader_refuses_unexpected_shapes_in_one_line():
    with pytest.raises(PaperPromptError, match="no function run_opensource_BSP"):
        read_recipe("def other():\n    pass\n", "run_opensource_BSP", "x.py")
    with pytest.raises(PaperPromptError, match="builds no prompt"):
        read_recipe("def run_opensource_BSP(qs):\n    for q in qs:\n        prompt_text = 'x'\n",
                    "run_opensource_BSP", "x.py")
    src = ("def run_opensource_BSP(qs):\n    for q in qs:\n        prompt_text = p['Intro']\n"
           "        for i in q:\n            this_line = '{} {}'.format(i)\n            prompt_text += this_line + '\\n'\n")
    with pytest.raises(PaperPromptError, match="do not match"):
        read_recipe(src, "run_opensource_BSP", "x.py")


def _real_assets() -> Path:
    """A full copy of the pinned files: the shared copy when it has the runners, else NPHE4V_PROMPT_ASSETS."""
    shared = shared_or_skip("peers", "nphardeval4v")
    for cand in (shared, Path(os.environ.get("NPHE4V_PROMPT_ASSETS", "") or shared)):
        if all((cand / rel).is_file() for rel in PINNED_FILES):
            return cand
    pytest.skip(f"{shared} has the prompt files but not the runners (Open/run/*.py) that hold the papers' data "
                "rendering; set NPHE4V_PROMPT_ASSETS to a checkout of the pinned commit to check them")


def test_real_runners_match_the_inputs_we_give():
    root = resolve_assets(AssetSource(local=_real_assets()))
    ps = load_prompt_set(root.resolve())
    for task in TASK_MODULES:
        inputs = PAPER_INPUTS[task](_instance(task))
        recipe = ps.recipes[task]
        arities = [s.arity for s in recipe.segs if s.kind == "rows"]
        assert arities == [len(r[0]) for r in inputs.rows], task
        assert sum(s.kind == "slot" for s in recipe.segs) == len(inputs.slots), task
        for mode in PROMPT_MODES:
            for kind in PROMPT_FILES:
                text = paper_text(ps, task, inputs, mode, kind)
                assert ps.pieces(task, kind)["Output_format"] in text
                assert "<grounding>" not in text


# ---------------------------------------------------------------------------------------------------------
# Fetching: pinned, checked, cached; a local checkout; one line when missing

class _Server:
    def __init__(self, root: Path):
        hits: list[str] = []

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=str(root), **kw)

            def do_GET(self):  # noqa: N802
                hits.append(self.path)
                super().do_GET()

            def log_message(self, *a):
                pass

        self.hits = hits
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def test_download_checks_the_pins_and_caches_once(tmp_path: Path):
    shared = shared_or_skip("peers", "nphardeval4v")
    served = tmp_path / "served"
    for rel in PROMPT_FILES.values():
        (served / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shared / rel, served / rel)
    pins = tuple((rel, PINNED_FILES[rel]) for rel in PROMPT_FILES.values())
    cache = tmp_path / "cache"
    with _Server(served) as srv:
        src = AssetSource(cache_root=cache, base_url=srv.url, pins=pins)
        root = resolve_assets(src)
        assert sorted(srv.hits) == sorted("/" + rel for rel in PROMPT_FILES.values())
        for rel, sha in pins:
            assert _sha(root / rel) == sha
        assert root == upstream_assets.cache_dir(cache)
        resolve_assets(src)
        assert len(srv.hits) == 2  # cached: no second download
        # a corrupted cached file is replaced by a fresh, checked download
        (root / "Open/prompts.py").write_text("tampered", encoding="utf-8")
        resolve_assets(src)
        assert len(srv.hits) == 3 and _sha(root / "Open/prompts.py") == PINNED_FILES["Open/prompts.py"]
        # a server sending other bytes is refused, naming the file, and nothing is kept
        (served / "Open/prompts.py").write_text("# not the authors' file\n", encoding="utf-8")
        (root / "Open/prompts.py").unlink()
        with pytest.raises(AssetsMissing, match=r"Open/prompts.py.*SHA-256.*refused") as e:
            resolve_assets(src)
        assert "\n" not in str(e.value) and not (root / "Open/prompts.py").exists()
    # no server: one line that says how to get them
    with pytest.raises(AssetsMissing) as e:
        resolve_assets(AssetSource(cache_root=tmp_path / "empty", base_url=srv.url, pins=pins), timeout_s=5)
    msg = str(e.value)
    assert "\n" not in msg and "prompt_assets" in msg and "git clone" in msg and "prompts: rewritten" in msg
    with pytest.raises(AssetsMissing, match="prompt_assets"):
        resolve_assets(AssetSource(cache_root=tmp_path / "empty", download=False, pins=pins))


def test_local_checkout_must_hold_the_pinned_bytes(tmp_path: Path):
    shared = shared_or_skip("peers", "nphardeval4v")
    pins = tuple((rel, PINNED_FILES[rel]) for rel in PROMPT_FILES.values())
    assert resolve_assets(AssetSource(local=shared, pins=pins)) == shared
    bad = tmp_path / "checkout"
    shutil.copytree(shared / "Prompts", bad / "Prompts")
    (bad / "Open").mkdir()
    (bad / "Open" / "prompts.py").write_text("x = 1\n", encoding="utf-8")
    with pytest.raises(AssetsMissing, match=r"Open/prompts.py: SHA-256 .*pinned .*checkout of lizhouf/NPHardEval4V"):
        resolve_assets(AssetSource(local=bad, pins=pins))


# ---------------------------------------------------------------------------------------------------------
# The run: planning sends them, preflight stops without them, the fingerprint tells the sets apart

@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("paper-ds") / "ds"
    generate_version(out, version="paper-prompts", seed=3, per_level=1, tasks=list(TASK_MODULES), levels=(2,),
                     workers=1)
    return out


def test_planner_sends_the_paper_prompts_by_model_kind(pinned: Path, dataset: Path):
    ds = load_dataset(dataset)
    cfg = RunConfig(datasets=[DatasetSpec(path=str(dataset))], models=[ModelSpec(name="oracle")],
                    recognition={"enabled": True, "controls": False}, prompts="paper", prompt_assets=str(pinned))
    assert check_prompt_assets(cfg) is None
    ps = load_prompt_set(pinned.resolve())
    for model, kind in ((ModelSpec(name="oracle"), "open"),
                        (ModelSpec(name="api-model", backend="litellm", options={"model": "openai/gpt-4o"}), "api")):
        items = list(plan_model(cfg, model, ds, ds.manifest.version))
        task_items = [i for i in items if i.request.key.prompt_mode in PROMPT_MODES]
        assert len(task_items) == len(ds.instances) * len(PROMPT_MODES)
        by_id = ds.by_id()
        for item in task_items:
            inst = by_id[item.instance_id]
            spec = get_task(inst.task)
            want = paper_text(ps, inst.task, PAPER_INPUTS[inst.task](spec.load(inst.data)),
                              item.request.key.prompt_mode, kind)
            assert item.request.prompt.text == want
            assert item.request.prompt.template_version.endswith("-" + kind)
        # the recognition question is ours in both sets
        rec = [i for i in items if i.request.key.prompt_mode == "recognition"]
        assert rec and all(i.request.prompt.template_version.startswith("nphe4v-recognition") for i in rec)


def test_missing_assets_stop_the_run_in_preflight_in_one_line(tmp_path: Path, dataset: Path):
    cfg = RunConfig(datasets=[DatasetSpec(path=str(dataset))], models=[ModelSpec(name="oracle")], prompts="paper",
                    prompt_assets=str(tmp_path / "no-checkout"))
    with pytest.raises(ConfigError) as e:
        preflight_models(cfg)
    assert "\n" not in str(e.value) and "no-checkout" in str(e.value) and "missing" in str(e.value)
    # the rewritten set needs no files
    preflight_models(cfg.model_copy(update={"prompts": "rewritten"}))


def test_fingerprint_tells_the_sets_apart_and_keeps_old_run_ids(dataset: Path):
    base = {"datasets": [DatasetSpec(path=str(dataset))], "models": [ModelSpec(name="oracle")]}
    rewritten = RunConfig(**base, prompts="rewritten").fingerprint_fields()
    assert "prompts" not in rewritten  # runs from before the option sent this set: same id
    paper = RunConfig(**base, prompts="paper", prompt_assets="/a").fingerprint_fields()
    assert paper["prompts"] == "paper" and "prompt_assets" not in paper
    assert paper == RunConfig(**base, prompts="paper", prompt_assets="/elsewhere").fingerprint_fields()


def test_default_is_paper_unless_the_site_says_otherwise(monkeypatch: pytest.MonkeyPatch, dataset: Path):
    base = {"datasets": [DatasetSpec(path=str(dataset))], "models": [ModelSpec(name="oracle")]}
    monkeypatch.delenv("NPHE4V_PROMPTS", raising=False)
    assert RunConfig(**base).prompts == "paper"
    monkeypatch.setenv("NPHE4V_PROMPTS", "rewritten")
    assert RunConfig(**base).prompts == "rewritten"


def test_report_rebuilds_the_paper_prompt_a_run_sent(pinned: Path, dataset: Path, tmp_path: Path):
    import hashlib as _h

    from report.sample_rebuild import DatasetIndex, rebuild_sample

    ds = load_dataset(dataset)
    model = ModelSpec(name="api-model", backend="litellm", options={"model": "openai/gpt-4o"})
    cfg = RunConfig(datasets=[DatasetSpec(path=str(dataset))], models=[model], recognition={"enabled": False},
                    prompts="paper", prompt_assets=str(pinned))
    item = next(i for i in plan_model(cfg, model, ds, ds.manifest.version) if i.request.key.prompt_mode == "full_text_only")
    index = DatasetIndex([])
    index.by_key[("r", "nphardeval4v", ds.manifest.version)] = (
        ds, {"seed": 0, "partners": None, "texts": {}, "by_id": ds.by_id()})
    index.prompts["r"] = ("paper", str(pinned), {"api-model": "litellm"})
    row = {"run": "r", "benchmark": "nphardeval4v", "version": ds.manifest.version, "instance_id": item.instance_id,
           "prompt_mode": "full_text_only", "variant": "", "model": "api-model",
           "prompt_sha256": _h.sha256(item.request.prompt.text.encode()).hexdigest()}
    out = rebuild_sample(row, index)
    assert out["prompt"] == item.request.prompt.text and out["note"] == ""
    # files gone: the report says so (and never downloads)
    index.prompts["r"] = ("paper", str(tmp_path / "gone"), {"api-model": "litellm"})
    out = rebuild_sample(row, index)
    assert out["prompt"] is None and "prompt not rebuilt" in out["note"] and "gone" in out["note"]


def test_a_restated_paper_format_example_is_not_taken_for_the_answer(assets: Path):
    import json as _json

    from evalcore.schema import Instance
    from nphe4v.paper_prompts import format_examples
    from nphe4v.scoring import score_answer

    ps = load_prompt_set(assets)
    bitten = 0
    for task in TASK_MODULES:
        spec = get_task(task)
        data = _instance(task, level=3, seed=5)
        gold = spec.solve(data)
        inst = Instance(instance_id=f"{task}-x", benchmark="nphardeval4v", task=task, level=3, index=0,
                        data=data.model_dump(mode="json"), gold=gold)
        for kind in PROMPT_FILES:
            examples = format_examples(paper_text(ps, task, PAPER_INPUTS[task](data), "figure+full_text", kind))
            shown = [e for e in examples if isinstance(e, str)]
            assert shown, (task, kind)  # every paper prompt shows its answer format in final_answer tags
            answer = "<root><reasoning>r</reasoning><final_answer>" + _json.dumps(gold.answer) + "</final_answer></root>"
            restated = answer + "\nFormat: <final_answer>" + shown[-1] + "</final_answer>"
            assert score_answer(inst, restated, examples)[0].verdict == "correct", (task, kind)
            bitten += score_answer(inst, restated)[0].verdict != "correct"
    assert bitten >= 9  # without the prompt's examples the restated example was graded


def test_export_writes_the_paper_prompts_an_api_model_gets(pinned: Path, dataset: Path, tmp_path: Path):
    import json as _json

    from cluster.export import ExportError, export_jsonl

    ds = load_dataset(dataset)
    n = export_jsonl(ds, tmp_path / "out", recognition=False, prompts="paper", prompt_assets=str(pinned))
    lines = [_json.loads(x) for x in (tmp_path / "out" / "requests.jsonl").read_text(encoding="utf-8").splitlines()]
    assert n == len(lines) == len(ds.instances) * len(PROMPT_MODES)
    ps = load_prompt_set(pinned.resolve())
    by_id = ds.by_id()
    for line in lines:
        inst = by_id[line["instance_id"]]
        data = get_task(inst.task).load(inst.data)
        assert line["prompt"] == paper_text(ps, inst.task, PAPER_INPUTS[inst.task](data), line["prompt_mode"], "api")
        assert line["template_version"].endswith("-api")
    card = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert lines[0]["template_version"] in card and "nphe4v-prompt" not in card
    with pytest.raises(ExportError, match="prompt_assets") as e:
        export_jsonl(ds, tmp_path / "out2", prompts="paper", prompt_assets=str(tmp_path / "none"))
    assert "\n" not in str(e.value)


def test_report_runs_table_says_which_prompt_set_each_run_used(tmp_path: Path):
    from report.html.page import runs_table
    from report.runs import Run

    runs = [
        Run(tmp_path / "a", "a", {"config": {"prompts": "paper"}, "prompt_set": "paper (lizhouf/NPHardEval4V@61e8020)"}),
        Run(tmp_path / "b", "b", {"config": {"prompts": "rewritten"}}),
        Run(tmp_path / "c", "c", {"config": {}}),  # a run from before the option sent the rewritten set
    ]
    assert runs_table(runs)["prompts"].to_list() == ["paper (lizhouf/NPHardEval4V@61e8020)", "rewritten", "rewritten"]


def test_the_prompt_set_label_names_only_a_set_the_run_sends():
    """The manifest's and report's `prompt_set`: the NPHardEval4V paper config names the papers' files; a
    benchmark with no paper prompt set is named as sending its own (a GraphVerse run once carried
    NPHardEval4V's set as its label, and the demo's GraphVerse half was not named)."""
    from cluster.config_file import load_config
    from cluster.plan import prompt_set_label

    root = Path(__file__).resolve().parents[1] / "configs"
    nphe = prompt_set_label(load_config(root / "paper-nphardeval4v.yaml"))
    assert nphe.startswith("paper (") and "NPHardEval4V" in nphe
    assert "graphverse" not in nphe  # its config runs NPHardEval4V alone
    gv = prompt_set_label(load_config(root / "paper-graphverse.yaml"))
    assert "NPHardEval4V" not in gv and "no paper prompt set" in gv, gv
    both = prompt_set_label(load_config(root / "demo.yaml"))  # NPHardEval4V rewritten, GraphVerse its own
    assert both.startswith("rewritten (") and both.endswith("; own prompts of graphverse"), both


def test_grade_scores_exported_paper_prompts_as_a_run_does(pinned: Path, dataset: Path, tmp_path: Path):
    import hashlib as _h
    import json as _json

    from cluster.export import export_jsonl
    from cluster.grading import GradeError, grade_file
    from evalcore.prompting import format_response
    from evalcore.records import read_samples
    from nphe4v.paper_prompts import format_examples

    ds = load_dataset(dataset)
    export_jsonl(ds, tmp_path / "exp", recognition=False, prompts="paper", prompt_assets=str(pinned))
    by_id = ds.by_id()
    lines, sent = [], {}
    for raw in (tmp_path / "exp" / "requests.jsonl").read_text(encoding="utf-8").splitlines():
        line = _json.loads(raw)
        answer = format_response(by_id[line["instance_id"]].gold.answer)
        # the answer, then the paper prompt's own format example restated
        example = next(e for e in format_examples(line["prompt"]) if isinstance(e, str))
        line["response"] = answer + "\n<final_answer>" + example + "</final_answer>"
        sent[(line["instance_id"], line["prompt_mode"])] = _h.sha256(line["prompt"].encode()).hexdigest()
        lines.append(_json.dumps(line))
    responses = tmp_path / "responses.jsonl"
    responses.write_text("\n".join(lines) + "\n", encoding="utf-8")
    n, _ = grade_file(dataset, responses, tmp_path / "graded", prompt_assets=str(pinned))
    rows = read_samples(tmp_path / "graded")
    assert n == len(lines) == rows.height
    assert set(rows["verdict"]) == {"correct"}
    assert all(tv.endswith("-api") for tv in rows["template_version"])
    for r in rows.iter_rows(named=True):
        assert r["prompt_sha256"] == sent[(r["instance_id"], r["prompt_mode"])]
    with pytest.raises(GradeError, match=r"papers' prompts: .*prompt_assets") as e:
        grade_file(dataset, responses, tmp_path / "graded2", prompt_assets=str(tmp_path / "none"))
    assert "\n" not in str(e.value)


def test_a_cache_that_cannot_be_written_is_one_line(tmp_path: Path):
    shared = shared_or_skip("peers", "nphardeval4v")
    served = tmp_path / "served"
    (served / "Open").mkdir(parents=True)
    shutil.copyfile(shared / "Open" / "prompts.py", served / "Open" / "prompts.py")
    blocker = tmp_path / "cache-is-a-file"
    blocker.write_text("x", encoding="utf-8")  # the cache root is a file: nothing can be created under it
    with _Server(served) as srv:
        with pytest.raises(AssetsMissing, match="cannot write the downloaded Open/prompts.py") as e:
            resolve_assets(AssetSource(cache_root=blocker, base_url=srv.url,
                                       pins=(("Open/prompts.py", PINNED_FILES["Open/prompts.py"]),)))
    assert "\n" not in str(e.value)
