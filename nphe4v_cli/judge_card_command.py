"""`nphe4v judge-card --judge rule-based|MODEL [--dataset DIR] --out DIR`: the judge card of a VGR judge.

Registered in ``nphe4v_cli.app`` with ``app.command(name="judge-card")(judge_card_command.judge_card)``. Without
``--dataset`` it generates the default dataset of the (first) judged benchmark (``Benchmark.judged``: GraphVerse's
testmini; ``--seed``, and ``--limit`` where its ``generate:`` section takes one) into OUT/dataset, as ``generate``
does; then it generates the card's labelled responses over every instance (``judge.card_families``), scores
them with the judge (``cluster.judge_card``), and prints and writes the table (card.csv, card.md), the
figure (card.png / card.svg), per-response scores (scores.csv) and the grade line (judge_card.json).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer


def _fail(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(2)


def judge_card(
    judge: Annotated[str, typer.Option(help="rule-based, a registry name or a litellm model string")],
    out: Annotated[Path, typer.Option(help="folder for the card (table, figure, grade)")],
    dataset: Annotated[Path | None, typer.Option(
        help="a judged benchmark's dataset folder (default: generate its default dataset, e.g. a testmini)")] = None,
    seed: Annotated[int, typer.Option(help="seed of the generated dataset")] = 0,
    limit: Annotated[int | None, typer.Option(help="only the first N instances (of the dataset, or generated)")] = None,
    api_base: Annotated[str | None, typer.Option(help="endpoint of an OpenAI-compatible judge server")] = None,
    options: Annotated[str, typer.Option(help="JudgeSpec fields as JSON")] = "{}",
    workers: Annotated[int | None, typer.Option(help="processes generating the dataset")] = None,
    families: Annotated[str | None, typer.Option(help="comma-separated families (or prefixes such as "
                                                      "'derivation:') to run, e.g. to bound an API judge's cost")] = None,
) -> None:
    """The judge card: a generated, labelled meta-evaluation set; the judge's table, figure and grade."""
    from pydantic import ValidationError

    from cluster.judge_card import run_card
    from cluster.judge_work import judge_replica, judged_benchmarks, resolve_spec
    from evalcore import benchmarks, secrets
    from evalcore.dataset import DatasetError, load_dataset
    from evalcore.validation import first_error
    from judge.card import markdown

    judged = judged_benchmarks()
    if not judged:
        _fail("no registered benchmark is judged (Benchmark.judged): the judge card has no instances")

    if families is not None:
        from judge.card import FAMILIES

        unknown = [f for f in families.split(",") if f.strip() and f.strip() not in FAMILIES
                   and not any(k.startswith(f.strip()) and f.strip().endswith(":") for k in FAMILIES)]
        if unknown:
            _fail(f"--families: {unknown[0].strip()!r} is no family of the card (judge.card.FAMILIES)")
    if limit is not None and limit < 1:
        _fail(f"--limit {limit}: must be at least 1")
    if seed < 0:
        _fail(f"--seed {seed}: must not be negative")
    if out.exists() and not out.is_dir():
        _fail(f"--out {out}: is a file, expected a folder")
    try:
        opts = json.loads(options)
    except json.JSONDecodeError as e:
        _fail(f"--options: not JSON ({e.msg} at char {e.pos})")
    if not isinstance(opts, dict):
        _fail("--options: a JSON object of judge settings")
    if api_base:
        if not api_base.startswith(("http://", "https://")):
            _fail(f"--api-base {api_base!r}: not an http(s) URL")
        opts["api_base"] = api_base
    try:
        spec = resolve_spec(judge, opts)
    except ValidationError as e:
        loc, msg = first_error(e)
        _fail(f"--options: {loc}: {msg}")
    on_replica = judge_replica(judge) is not None  # a registry vllm model: its engine here, no key
    if not spec.is_rule and not on_replica and "/" not in spec.model:
        _fail(f"--judge {judge!r}: neither 'rule-based', a registry name nor a litellm model string")
    if not spec.is_rule and not on_replica:
        try:  # a template that does not load or a missing API key: one line, before any work
            spec.template_obj()
            secrets.require_key(spec.model, secrets.provider_of(spec.model), spec.api_key_env)
        except (OSError, ValueError, KeyError, RuntimeError) as e:
            _fail(f"--judge {judge}: {' '.join(str(e).split())}")
    out.mkdir(parents=True, exist_ok=True)
    if dataset is None:
        bench = benchmarks.get(judged[0])
        dataset = out / "dataset"
        if not (dataset / "manifest.json").exists():
            section = {"seed": seed, **({"limit": limit} if limit and "limit" in bench.generate_model.model_fields
                                        else {})}
            g = bench.parse_generate({"version": bench.default_version(section), **section})
            typer.echo(f"generating {bench.title} {g.version} (seed {seed}) into {dataset}", err=True)
            try:
                bench.generate(dataset, g, workers=workers)
            except (DatasetError, ValueError) as e:
                _fail(str(e))
    try:
        ds = load_dataset(dataset, check_images=False)
    except DatasetError as e:
        _fail(str(e))
    if ds.manifest.benchmark not in judged:
        _fail(f"--dataset {dataset}: a {ds.manifest.benchmark} dataset; the judge card needs a judged benchmark's "
              f"({', '.join(benchmarks.get(n).title for n in judged)})")
    instances = list(ds.instances)[:limit] if limit else list(ds.instances)

    def progress(done: int, total: int) -> None:
        print(f"judge card: {done}/{total} responses scored", file=sys.stderr)

    chosen = [f.strip() for f in families.split(",") if f.strip()] if families else None
    run = run_card(instances, judge, out, options=opts, dataset=str(dataset), families=chosen, progress=progress)
    typer.echo(markdown(run.rows))
    if run.mislabelled:
        typer.echo(f"{len(run.mislabelled)} generated responses left out: the verifier judged their final answer "
                   f"otherwise than labelled (e.g. {run.mislabelled[0]})", err=True)
    typer.echo(f"{run.grade} ({len(run.cases)} responses over {run.doc['instances']} instances, {run.wall_s:.1f} s)")
    typer.echo(f"wrote {out}/card.csv, card.md, card.png, scores.csv, judge_card.json")
