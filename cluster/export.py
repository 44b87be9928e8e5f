"""`nphe4v export`: a dataset folder as a Hugging Face `datasets` folder, or as JSON-lines requests for
other harnesses whose answers come back through `nphe4v grade`.

Every prompt comes from the live planner (`cluster.plan.plan_model`) with a default run config, so an
exported prompt is byte for byte the one a live run sends (tests compare their sha256 with a live run's
sample records). Only the prompt modes change with the benchmark: NPHardEval4V has its three modes and the
recognition question (a match and a mismatched control per instance); GraphVerse has one mode, `vision`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalcore import benchmarks
from evalcore.dataset import Dataset
from evalcore.hashing import canonical_json, sha256_json
from evalcore.hf_save import save_rows
from evalcore.prompting import RECOGNITION_TEMPLATE_VERSION, TEMPLATE_VERSION
from evalcore.schema import RECOGNITION_MODE

FORMATS = ("hf", "jsonl")  # and every benchmark's training formats (`training_formats()`)
REQUESTS = "requests.jsonl"
CARD = "README.md"
DEFAULT_MODEL = "external"


class ExportError(ValueError):
    """An export that cannot be written; one line naming the path or option."""


def prompt_column(mode: str, variant: str = "") -> str:
    """Column of the HF export holding the prompt of `mode` (a valid identifier: no '+')."""
    if mode == RECOGNITION_MODE:
        return f"prompt_recognition_{variant}"
    return "prompt_" + mode.replace("+", "_")


def planned(dataset: Dataset, *, model: str = DEFAULT_MODEL, repeats: int = 1, asks: int = 5,
            recognition: bool = True, seed: int = 0,
            model_options: dict[str, Any] | None = None, prompts: str | None = None,
            prompt_assets: str | None = None) -> Iterator[dict[str, Any]]:
    """The requests a live run of one (non-baseline) model on `dataset` sends, with the default run config
    except for the arguments: one dict per request, in the planner's order, `response` left empty.

    `seed` is the run's sampling seed; it also picks each recognition control's partner instance. `prompts`
    (paper | rewritten; None: a run's default) and `prompt_assets` as in a run config; the model is an API
    model, so the paper set uses the API runs' prompt file."""
    from cluster.config import (
        DatasetSpec,
        ModelSpec,
        RunConfig,
        SamplingSpec,
        plugin_option_defaults,
    )
    from cluster.plan import check_prompt_assets, plan_model
    from evalcore.recognition import RecognitionSpec, mismatch_partners

    try:
        # a litellm spec: the planner then attaches no gold (`reference`), as for any outside model
        known = plugin_option_defaults()
        for key in model_options or {}:
            if key not in known:
                raise ExportError(f"--model-option {key}: not a benchmark's model option; known: {', '.join(known)}")
        spec = ModelSpec(name=model, backend="litellm", **(model_options or {}))
    except ValidationError as e:
        err = e.errors()[0]
        key = str(err["loc"][0]) if err["loc"] else ""
        if key in (model_options or {}):
            raise ExportError(f"--model-option {key}={model_options[key]!r}: {err['msg']}") from None  # type: ignore[index]
        raise ExportError(f"--model {model!r}: {err['msg']}") from None
    try:
        cfg = RunConfig(
            name="export", datasets=[DatasetSpec(path=str(dataset.root))], models=[spec], repeats=repeats,
            recognition=RecognitionSpec(enabled=recognition, asks=asks), sampling=SamplingSpec(seed=seed),
            prompt_assets=prompt_assets, **({"prompts": prompts} if prompts is not None else {}),
        )
    except ValidationError as e:
        err = e.errors()[0]
        raise ExportError(f"option {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    if benchmarks.get(dataset.manifest.benchmark).paper_prompts:
        missing = check_prompt_assets(cfg)  # the papers' files, as a run checks before any model starts
        if missing:
            raise ExportError(missing)
    partners = mismatch_partners(dataset, seed)
    for item in plan_model(cfg, spec, dataset, dataset.manifest.version):
        req = item.request
        key = req.key
        line: dict[str, Any] = {
            "model": key.model,
            "instance_id": key.instance_id,
            "prompt_mode": key.prompt_mode,
            "variant": key.variant,
            "repeat": key.repeat,
        }
        if key.prompt_mode == RECOGNITION_MODE and key.variant == "mismatch":
            line["text_instance_id"] = partners[key.instance_id]
        line |= {
            "benchmark": key.benchmark,
            "task": req.task,
            "level": req.level,
            "prompt": req.prompt.text,
            "images": [r.path for r in req.prompt.images],
            "template_version": req.prompt.template_version,
            "sampling": req.sampling.model_dump(),
            "response": None,
        }
        yield line


def request_lines(dataset: Dataset, *, absolute_paths: bool = False, **plan: Any) -> Iterator[str]:
    """`planned` as JSON lines; image paths relative to the dataset folder unless `absolute_paths`."""
    root = dataset.root.resolve()
    for line in planned(dataset, **plan):
        if absolute_paths:
            line["images"] = [str(root / p) for p in line["images"]]
        yield json.dumps(line, ensure_ascii=False, sort_keys=False)


def hf_rows(dataset: Dataset, *, seed: int = 0, **plan: Any) -> list[dict[str, Any]]:
    """One row per instance: the exact PNG bytes, the prompt of every mode a live run uses, gold and the
    checker's inputs. Recognition prompts (NPHardEval4V) come as a match and a mismatched control."""
    prompts: dict[tuple[str, str], str] = {}
    partner: dict[str, str] = {}
    for line in planned(dataset, repeats=1, asks=1, seed=seed, **plan):
        prompts[(line["instance_id"], prompt_column(line["prompt_mode"], line["variant"]))] = line["prompt"]
        if "text_instance_id" in line:
            partner[line["instance_id"]] = line["text_instance_id"]
    columns = sorted({c for _, c in prompts}, key=_column_order)
    rows = []
    for inst in dataset.instances:
        row: dict[str, Any] = {
            "instance_id": inst.instance_id,
            "benchmark": inst.benchmark,
            "task": inst.task,
            "level": inst.level,
            "index": inst.index,
            "variant": str(inst.meta.get("edit", "")),
            # bytes only: `datasets` keeps just a path (no bytes) when the path names a file it can see
            "images": [{"bytes": (dataset.root / r.path).read_bytes(), "path": None} for r in inst.images],
            "image_paths": [r.path for r in inst.images],
            "image_sha256": [r.sha256 for r in inst.images],
        }
        for c in columns:
            row[c] = prompts.get((inst.instance_id, c))
        if benchmarks.get(dataset.manifest.benchmark).recognition:
            row["mismatch_instance_id"] = partner.get(inst.instance_id)
        row |= {
            "gold": canonical_json(inst.gold.answer),
            "gold_value": inst.gold.value,
            "data": canonical_json(inst.data),
            "meta": canonical_json(inst.meta),
            "seed": inst.seed,
            "peer_index": inst.peer_index,
        }
        rows.append(row)
    return rows


def _column_order(c: str) -> tuple[int, str]:
    order = ["prompt_figure_limited_text", "prompt_full_text_only", "prompt_figure_full_text", "prompt_vision",
             "prompt_recognition_match", "prompt_recognition_mismatch"]
    return (order.index(c) if c in order else len(order), c)


def dataset_card(dataset: Dataset, fmt: str, *, absolute_paths: bool = False, columns: Sequence[str] = (),
                 templates: Sequence[str] = ()) -> str:
    """README.md of an export: provenance (version, seed, hashes) and how to load, answer and grade it."""
    m = dataset.manifest
    bench = benchmarks.get(m.benchmark)
    name = bench.title
    lines = [
        "---",
        f"pretty_name: {name} {m.version}",
        "task_categories: [visual-question-answering]",
        "---",
        "",
        f"# {name} `{m.version}` (exported by `nphe4v export --format {fmt}`)",
        "",
        "| field | value |",
        "|---|---|",
        f"| benchmark | {m.benchmark} |",
        f"| version | {m.version} |",
        f"| seed | {m.seed if m.seed is not None else '—'} |",
        f"| per_level | {m.per_level if m.per_level is not None else '—'} |",
        f"| source | {m.source} |",
        f"| instances | {len(dataset.instances)} |",
        f"| dataset_sha256 | `{m.dataset_sha256}` |",
        f"| instances_sha256 | `{m.instances_sha256}` |",
        f"| images_sha256 | `{m.images_sha256}` |",
        # the templates the exported prompts were built with (the papers' or ours), else the rewritten set's
        f"| prompt template | {', '.join(t for t in templates if 'recognition' not in t) or TEMPLATE_VERSION} |",
    ]
    if bench.recognition:
        lines.append(f"| recognition template | {RECOGNITION_TEMPLATE_VERSION} |")
    lines += ["", "Tasks: " + ", ".join(f"{t} ({tm.count})" for t, tm in m.tasks.items()) + ".", ""]
    if m.extra.get("sources"):
        # redistribution follows the graph sources' licences, so the card names them
        lines += ["Graph sources and licences: " + "; ".join(f"{k}: {v}" for k, v in m.extra["sources"].items())
                  + ".", ""]
    lines += [bench.modes_note, ""]
    lines += ["A request is one user turn: its images, then its text. Answers are scored by the exact verifier "
              "from the final answer inside `<final_answer>`.", ""]
    if fmt == "hf":
        lines += [
            "## Loading", "",
            "```python", "import datasets", "ds = datasets.load_from_disk(PATH)", "```", "",
            "One row per instance. Columns: `instance_id`, `benchmark`, `task`, `level`, `index`, `variant`, "
            "`images` (the exact PNGs, `Image` feature, in order), `image_paths` (their paths in the dataset folder), "
            "`image_sha256`, "
            + ", ".join(f"`{c}`" for c in columns)
            + " (the prompt of each mode; `prompt_figure_limited_text` is mode `figure+limited_text`, and so on), "
            + ("`mismatch_instance_id` (whose text `prompt_recognition_mismatch` shows), "
               if bench.recognition else "")
            + "`gold` (the exact answer, JSON), `gold_value` (its objective), `data` (the checker's inputs, JSON), "
            "`meta`, `seed`, `peer_index`.", "",
        ]
    else:
        where = "absolute" if absolute_paths else "relative to the dataset folder"
        lines += [
            "## Requests", "",
            f"`{REQUESTS}`: one request per line with `model`, `instance_id`, `prompt_mode`, `variant`, `repeat`, "
            "`text_instance_id` (mismatched recognition controls only), `benchmark`, `task`, `level`, `prompt` "
            f"(the text), `images` (PNG paths, {where}; none in `full_text_only`), `template_version`, "
            "`sampling` (temperature, max_tokens, seed of the live run) and `response: null`.", "",
        ]
    lines += [
        "## Grading", "",
        "Fill `response` with the model's raw text (and `model` with its name) in each request line, then:", "",
        "```bash",
        "nphe4v grade --dataset DATASET_DIR --responses responses.jsonl --out RUN_DIR",
        "```", "",
        "`DATASET_DIR` is the original dataset folder (its `dataset_sha256` above).",
        "",
    ]
    return "\n".join(lines)


def check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"{out}: --out exists and is not an empty folder; choose another --out")


def export_jsonl(dataset: Dataset, out: Path, *, absolute_paths: bool = False, **plan: Any) -> int:
    check_out(out)
    lines = list(request_lines(dataset, absolute_paths=absolute_paths, **plan))
    out.mkdir(parents=True, exist_ok=True)
    (out / REQUESTS).write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    templates = sorted({json.loads(x)["template_version"] for x in lines})
    (out / CARD).write_text(dataset_card(dataset, "jsonl", absolute_paths=absolute_paths, templates=templates),
                            encoding="utf-8")
    return len(lines)


def export_hf(dataset: Dataset, out: Path, *, seed: int = 0, **plan: Any) -> int:
    check_out(out)
    import datasets  # heavy (pyarrow, fsspec): only the export pays for it

    rows = hf_rows(dataset, seed=seed, **plan)
    templates = sorted({line["template_version"]
                        for line in planned(dataset, repeats=1, asks=1, recognition=False, seed=seed, **plan)})
    prompt_cols = [c for c in (rows[0] if rows else {}) if c.startswith("prompt_")]
    string = datasets.Value("string")
    features = {
        "instance_id": string, "benchmark": string, "task": string, "level": datasets.Value("int64"),
        "index": datasets.Value("int64"), "variant": string,
        "images": datasets.List(datasets.Image()), "image_paths": datasets.List(string),
        "image_sha256": datasets.List(string),
        **dict.fromkeys(prompt_cols, string),
        **({"mismatch_instance_id": string} if benchmarks.get(dataset.manifest.benchmark).recognition else {}),
        "gold": string, "gold_value": datasets.Value("float64"), "data": string, "meta": string,
        "seed": datasets.Value("uint64"), "peer_index": datasets.Value("int64"),
    }
    # a fingerprint from the content (not a random one): the same dataset exports to the same bytes
    save_rows(rows, out, features, sha256_json([dataset.manifest.dataset_sha256, seed, "hf-export-v1"])[:16])
    (out / CARD).write_text(dataset_card(dataset, "hf", columns=prompt_cols, templates=templates), encoding="utf-8")
    return len(rows)


def training_formats() -> tuple[str, ...]:
    """The training-set formats of the registered benchmarks (`Benchmark.training_formats`, docs/training.md)."""
    out: list[str] = []
    for bench in benchmarks.registry().values():
        out += [f for f in bench.training_formats if f not in out]
    return tuple(out)


def export_training(dataset: Dataset, out: Path, fmt: str, **options: Any) -> tuple[int, list[str]]:
    """`--format` of a training set: the dataset's benchmark writes it (`Benchmark.export_training`), its
    refusals as one line."""
    check_out(out)
    bench = benchmarks.get(dataset.manifest.benchmark)
    if fmt not in bench.training_formats:
        users = [b.title for b in benchmarks.registry().values() if fmt in b.training_formats]
        raise ExportError(f"{dataset.root}: benchmark {bench.name}; training exports ({fmt}) are for "
                          f"{' or '.join(users) or 'no registered benchmark'} datasets")
    try:
        return bench.export_training(dataset, out, fmt, **options)
    except ValueError as e:
        raise ExportError(str(e)) from None
