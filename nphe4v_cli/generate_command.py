"""`nphe4v generate --out DIR [--benchmark NAME] [--version V] [--seed N] [--set KEY=VALUE ...]`: write a fresh,
versioned dataset of any registered benchmark, byte-identical for the same settings.

The settings are the benchmark's `generate:` section (`Benchmark.generate_model`, the same model a run config's
dataset entry is validated with): `--version` and `--seed` for every benchmark, anything else by `--set KEY=VALUE`
(VALUE read as YAML) or by the short options below, which are nothing but `--set` spelled as the README's recipes
spell them. A key the benchmark's model does not have is refused in one line naming the option, never ignored.
Registered in ``nphe4v_cli.app`` with ``app.command(name="generate")(generate_command.generate)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

# short options -> keys of a `generate:` section (the benchmark's model says whether it takes them)
ALIASES = {"--per-level": "per_level", "--tasks": "tasks", "--split": "split", "--limit": "limit",
           "--source": "sources"}


def generate(
    out: Annotated[Path, typer.Option(help="dataset folder to create")],
    benchmark: Annotated[str | None, typer.Option(
        help="a registered benchmark (default: the registry's default; docs/extending.md)")] = None,
    version: Annotated[str | None, typer.Option(
        help="version name, e.g. 2026-11 (default: the benchmark's, e.g. v1)")] = None,
    seed: Annotated[int, typer.Option(help="root seed")] = 0,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", metavar="KEY=VALUE", help="a field of the benchmark's generate: section (VALUE is YAML; the "
        "fields are listed in docs/config-reference.md); repeatable")] = None,
    per_level: Annotated[int | None, typer.Option(help="--set per_level=N: instances per task and level")] = None,
    tasks: Annotated[str | None, typer.Option(help="--set tasks=[...]: comma-separated subset of tasks")] = None,
    split: Annotated[str | None, typer.Option(help="--set split=NAME: the split of a benchmark that has splits")
                     ] = None,
    limit: Annotated[int | None, typer.Option(help="--set limit=N: only the first N planned instances")] = None,
    source: Annotated[list[str] | None, typer.Option(
        "--source", metavar="NAME=PATH", help="--set sources={NAME: PATH}: a local copy of a source a benchmark's "
        "generator reads, replacing its bundled substitute; repeatable")] = None,
    workers: Annotated[int | None, typer.Option(help="processes (default: all cores)")] = None,
) -> None:
    """Generate a fresh, versioned dataset: byte-identical for the same version and seed."""
    import re

    from pydantic import ValidationError

    from cluster.config import DatasetSpec
    from evalcore import benchmarks
    from evalcore.benchmark import MAX_SEED, VERSION_PATTERN
    from evalcore.dataset import DatasetError, load_dataset
    from evalcore.progress import Bar
    from nphe4v_cli.cli_common import fail, key_values, os_fail, out_folder

    name = benchmark or benchmarks.default().name
    if name not in benchmarks.names():
        fail(f"--benchmark {name}: expected one of {', '.join(benchmarks.names())}")
    bench = benchmarks.get(name)
    fields = bench.generate_model.model_fields
    section: dict[str, Any] = {}
    flags: dict[str, str] = {}  # key -> the option that set it, named in a refusal
    given = {"--per-level": per_level, "--tasks": tasks.split(",") if tasks else None, "--split": split,
             "--limit": limit, "--source": _sources(source, fail) if source else None}
    pairs = [(ALIASES[flag], value, flag) for flag, value in given.items() if value is not None]
    pairs += [(key, value, f"--set {key}") for key, value in key_values("--set", set_ or []).items()]
    for key, value, shown in pairs:
        if key not in fields or key in ("version", "seed"):
            takes = [f for f in fields if f not in ("version", "seed")]
            why = "use --version / --seed" if key in ("version", "seed") else f"it takes {', '.join(takes)}"
            fail(f"{shown} is not used by --benchmark {name} ({why})")
        if key in section:
            fail(f"{shown}: {key} is given twice")
        section[key], flags[key] = value, shown
    if not 0 <= seed <= MAX_SEED:
        fail(f"--seed {seed}: must be 0..{MAX_SEED}")
    if workers is not None and not 1 <= workers <= 256:
        fail(f"--workers {workers}: must be 1..256")
    default_version = bench.default_version(section)
    if version is not None and not (re.match(VERSION_PATTERN, version) and ".." not in version):
        fail(f"--version {version!r}: one folder-safe name (letters, digits, . _ + -), no '..' or separators")
    try:
        spec = DatasetSpec(benchmark=name, generate={"version": version or default_version, "seed": seed,
                                                     **section})
    except ValidationError as e:
        fail(_refusal(e, bench, section, flags))
    except ValueError as e:
        fail(str(e))
    g = spec.generate
    assert g is not None
    named = bench.canonical_generate(g)["version"]
    if version is not None and version != named:  # the settings name their dataset themselves
        fail(f"--version {version!r}: a {bench.title} dataset of these settings is named {named}; leave --version "
             "out")
    out_folder(out)
    try:  # fail before the work, not after it
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        os_fail(e, out)
    try:
        with Bar(f"generate {named}", 1) as bar:
            def progress(done: int, total: int) -> None:
                bar.total = total
                bar.advance(done - bar.done)

            bench.generate(out, g, progress, workers=workers)
        m = load_dataset(out).manifest
    except (DatasetError, ValueError) as e:
        fail(str(e).strip("'\""))
    except KeyError as e:
        fail(str(e).strip("'\""))
    except OSError as e:
        os_fail(e, out)
    n = sum(t.count for t in m.tasks.values())
    typer.echo(f"wrote {n} {bench.title} instances to {out} (dataset {m.dataset_sha256[:16]})")


def _sources(items: list[str], fail: Any) -> dict[str, str]:
    spec: dict[str, str] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name.strip() or not path.strip():
            fail(f"--source {item!r}: expected NAME=PATH")
        if name.strip() in spec:
            fail(f"--source {name.strip()} given twice")
        spec[name.strip()] = path.strip()
    return spec


def _refusal(e: Any, bench: Any, section: dict[str, Any], flags: dict[str, str]) -> str:
    """A validation error of the section as one line naming the option that gave the value."""
    from evalcore.validation import first_error

    loc, msg = first_error(e)
    key = loc.removeprefix("generate.").split(".")[0]
    if key not in flags:
        return f"--benchmark {bench.name}: {msg}"
    flag, value = flags[key], section[key]
    if flag.startswith("--set"):  # as given: KEY=VALUE, the value as JSON
        flag, shown = f"{flag}={json.dumps(value)}", ""
    else:
        shown = " " + (",".join(map(str, value)) if isinstance(value, list) else str(value))
    f = bench.generate_model.model_fields[key]
    lo = next((m.ge for m in f.metadata if getattr(m, "ge", None) is not None), None)
    hi = next((m.le for m in f.metadata if getattr(m, "le", None) is not None), None)
    if isinstance(value, int) and lo is not None and (value < lo or (hi is not None and value > hi)):
        msg = f"must be {lo}..{hi}" if hi is not None else f"must be at least {lo}"
    return f"{flag}{shown}: {msg}"
