"""Write the reference pages generated from the pydantic models, so they cannot drift from the code:

* docs/config-reference.md — every field of a run config (`cluster.config.RunConfig` and the models it
  nests), with its type, default, bounds and description;
* docs/sample-record.md — every column of the per-sample record (`evalcore.schema.SampleRecord`).

    python scripts/reference_docs.py           # rewrite both pages
    python scripts/reference_docs.py --check   # exit 1 when a page is not what the code says (a test runs this)
"""

from __future__ import annotations

import argparse
import os
import sys
import types
import typing
from pathlib import Path

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# the pages document the built-in defaults, not this machine's: a site setting (the suite sets one) is dropped
os.environ.pop("NPHE4V_PROMPTS", None)

CONFIG_PAGE = ROOT / "docs" / "config-reference.md"
RECORD_PAGE = ROOT / "docs" / "sample-record.md"


def _type_name(tp: object) -> str:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is not None:
        inner = ", ".join(_type_name(a) for a in args)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    if tp is type(None):
        return "null"
    return getattr(tp, "__name__", str(tp))


def _default(f: FieldInfo) -> str:
    if f.default_factory is not None:
        try:
            value = f.default_factory()
        except TypeError:
            return "(computed)"
        return "(defaults below)" if isinstance(value, BaseModel) else f"`{value!r}`"
    if f.default is PydanticUndefined:
        return "**required**"
    if isinstance(f.default, BaseModel):
        return "(defaults below)"
    return f"`{f.default!r}`"


def _bounds(f: FieldInfo) -> str:
    parts = []
    for m in f.metadata:
        for name, sym in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"), ("min_length", "min length"),
                          ("max_length", "max length"), ("pattern", "pattern")):
            v = getattr(m, name, None)
            if v is not None:
                parts.append(f"{sym} `{v}`" if name != "pattern" else f"pattern `{v}`")
    return ", ".join(parts)


def _nested(tp: object) -> list[type[BaseModel]]:
    out = []
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    for a in typing.get_args(tp):
        out += _nested(a)
    return out


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def model_table(model: type[BaseModel]) -> str:
    rows = ["| field | type | default | bounds | description |", "|---|---|---|---|---|"]
    for name, f in model.model_fields.items():
        rows.append(f"| `{name}` | {_cell(_type_name(f.annotation))} | {_cell(_default(f))} | "
                    f"{_cell(_bounds(f))} | {_cell(f.description or '')} |")
    return "\n".join(rows)


def _variants(label: str, model: type[BaseModel]) -> list[tuple[str, type[BaseModel]]]:
    """A section validated with the model its benchmark declares (`generate:`: `Benchmark.generate_model`) is
    documented once per registered benchmark's model, the benchmarks that use it named."""
    from evalcore import benchmarks
    from evalcore.benchmark import GenerateBase

    if model is BaseModel and label.endswith(".benchmark_options"):  # `ModelSpec.benchmark_options`
        where = label.removesuffix(".benchmark_options")
        return [(f"{where} (benchmark: {name}: keys of the model's entry)", bench.model_options)
                for name, bench in benchmarks.registry().items() if bench.model_options is not None]
    if model is not GenerateBase:
        return [(label, model)]
    users: dict[type[BaseModel], list[str]] = {}
    for name, bench in benchmarks.registry().items():
        users.setdefault(bench.generate_model, []).append(name)
    return [(f"{label} (benchmark: {', '.join(names)})", m) for m, names in users.items()]


def config_page() -> str:
    from cluster.config import RunConfig

    order: list[tuple[str, type[BaseModel]]] = []
    queue: list[tuple[str, type[BaseModel]]] = [("run config (top level)", RunConfig)]
    seen: set[type] = set()
    while queue:
        where, model = queue.pop(0)
        if model in seen:
            continue
        seen.add(model)
        order.append((where, model))
        for name, f in model.model_fields.items():
            for sub in _nested(f.annotation):
                label = name if where.startswith("run config") else f"{where}.{name}"
                queue += _variants(label, sub)
    parts = ["# Run config reference",
             "",
             "Generated from the pydantic models in `cluster/config.py` and the benchmark plug-ins' own (a "
             "`generate:` section, a model's options and the run options a benchmark owns, e.g. NPHardEval4V's "
             "`parser`, `prompts`, `prompt_assets` and `recognition`: `Benchmark.generate_model`, `model_options`, "
             "`run_options`) by `python scripts/reference_docs.py`; "
             "a test fails when this page and the code disagree. A config is YAML; unknown fields are refused "
             "in one line naming the file and field. Worked examples: `configs/*.yaml`.",
             ""]
    for where, model in order:
        doc = (model.__doc__ or "").strip().splitlines()
        parts += [f"## `{where}` — `{model.__name__}`", ""]
        if doc:
            parts += [" ".join(line.strip() for line in doc[:3]), ""]
        parts += [model_table(model), ""]
    return "\n".join(parts)


def record_page() -> str:
    from evalcore.schema import SampleRecord

    return "\n".join([
        "# The per-sample record",
        "",
        "Every run writes one row per model × instance × prompt mode × variant × repeat to Parquet shards under "
        "`RUN_DIR/samples/<benchmark>/<model>/`. Its columns are `evalcore.schema.SampleRecord`; this page is "
        "generated from it by `python scripts/reference_docs.py` (a test keeps it current). The key of a sample "
        "is (model, benchmark, instance_id, variant, prompt_mode, repeat); a rerun computes only missing keys.",
        "",
        model_table(SampleRecord),
        "",
    ])


PAGES = ((CONFIG_PAGE, config_page), (RECORD_PAGE, record_page))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a page differs from the code")
    args = ap.parse_args(argv)
    stale = []
    for path, make in PAGES:
        text = make()
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print("stale: " + ", ".join(str(p.relative_to(ROOT)) for p in stale)
              + " (run: python scripts/reference_docs.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
