"""Dataset folders: generate a version, write it byte-for-byte reproducibly, load and validate it.

Layout of a dataset folder:
    manifest.json        versions, seeds, per-task parameters, content hashes
    instances.parquet    one row per instance (task data and gold answer as canonical JSON)
    images/<TASK>/<instance_id>.png
"""

from __future__ import annotations

import json
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ValidationError

from evalcore.hashing import canonical_json, sha256_bytes, sha256_file, sha256_json
from evalcore.parquet_file import write_parquet
from evalcore.provenance import package_versions, rendering_versions
from evalcore.schema import SCHEMA_VERSION, Gold, ImageRef, Instance
from evalcore.task import TaskSpec
from evalcore.validation import first_error

MANIFEST = "manifest.json"
INSTANCES = "instances.parquet"
LEVELS = tuple(range(1, 11))

INSTANCE_COLUMNS = {
    "instance_id": pl.String,
    "benchmark": pl.String,
    "task": pl.String,
    "level": pl.Int64,
    "index": pl.Int64,
    "data": pl.String,
    "gold": pl.String,
    "gold_value": pl.Float64,
    "images": pl.String,
    "seed": pl.UInt64,
    "peer_index": pl.Int64,
    "meta": pl.String,
}


class DatasetError(ValueError):
    """A dataset folder that cannot be used; the message is one line naming the file and field."""


class TaskManifest(BaseModel):
    count: int
    levels: dict[str, dict[str, Any]]


class DatasetManifest(BaseModel):
    schema_version: str = SCHEMA_VERSION
    benchmark: str
    version: str
    seed: int | None
    per_level: int | None
    source: str
    tasks: dict[str, TaskManifest]
    rendering: dict[str, str]
    package_versions: dict[str, str]
    instances_sha256: str
    images_sha256: str
    dataset_sha256: str
    extra: dict[str, Any] = {}


@dataclass(frozen=True)
class Dataset:
    root: Path
    manifest: DatasetManifest
    instances: tuple[Instance, ...]

    def by_id(self) -> dict[str, Instance]:
        return {i.instance_id: i for i in self.instances}


def instance_id(task: str, level: int, index: int) -> str:
    return f"{task.lower()}-L{level:02d}-{index:03d}"


def build_instance(
    spec: TaskSpec[Any],
    level: int,
    index: int,
    data: BaseModel,
    *,
    seed: int | None = None,
    peer_index: int | None = None,
    meta: dict[str, Any] | None = None,
) -> tuple[Instance, list[bytes]]:
    """Solve and render one instance; image references point at the paths `write_dataset` uses."""
    gold: Gold = spec.solve(data)
    pngs = spec.render(data)
    iid = instance_id(spec.name, level, index)
    refs = []
    for k, png in enumerate(pngs):
        suffix = "" if len(pngs) == 1 else f"-{k}"
        w, h = _png_size(png)
        refs.append(ImageRef(path=f"images/{spec.name}/{iid}{suffix}.png", sha256=sha256_bytes(png), width=w, height=h))
    inst = Instance(
        instance_id=iid,
        benchmark=spec.benchmark,
        task=spec.name,
        level=level,
        index=index,
        data=data.model_dump(mode="json"),
        gold=gold,
        images=tuple(refs),
        seed=seed,
        peer_index=peer_index,
        meta=meta or {},
    )
    return inst, pngs


def _png_size(png: bytes) -> tuple[int, int]:
    # IHDR is always the first chunk: width and height are big-endian at bytes 16..24.
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def write_dataset(
    out: Path,
    items: Sequence[tuple[Instance, list[bytes]]],
    *,
    benchmark: str,
    version: str,
    seed: int | None,
    per_level: int | None,
    source: str,
    params: dict[str, dict[str, Any]] | None = None,
    extra: dict[str, Any] | None = None,
) -> DatasetManifest:
    out = Path(out)
    if (out / MANIFEST).exists() or (out / INSTANCES).exists():
        raise DatasetError(f"{out / MANIFEST}: output folder already holds a dataset; choose another --out")
    ids = [i.instance_id for i, _ in items]
    if len(set(ids)) != len(ids):
        raise DatasetError(f"{out}: duplicate instance_id in generated items")
    out.mkdir(parents=True, exist_ok=True)
    image_hashes = []
    for inst, pngs in items:
        for ref, png in zip(inst.images, pngs, strict=True):
            path = out / ref.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(png)
            image_hashes.append((ref.path, ref.sha256))
    frame = instances_frame([i for i, _ in items])
    write_parquet(frame, out / INSTANCES, statistics=False, compression="zstd")
    counts: dict[str, int] = {}
    for inst, _ in items:
        counts[inst.task] = counts.get(inst.task, 0) + 1
    inst_sha = sha256_file(out / INSTANCES)
    img_sha = sha256_json(sorted(image_hashes))
    manifest = DatasetManifest(
        benchmark=benchmark,
        version=version,
        seed=seed,
        per_level=per_level,
        source=source,
        tasks={t: TaskManifest(count=c, levels=(params or {}).get(t, {})) for t, c in counts.items()},
        rendering=rendering_versions(),
        package_versions=package_versions(),
        instances_sha256=inst_sha,
        images_sha256=img_sha,
        dataset_sha256=sha256_json([inst_sha, img_sha]),
        extra=extra or {},
    )
    (out / MANIFEST).write_text(json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
    return manifest


def instances_frame(instances: Sequence[Instance]) -> pl.DataFrame:
    rows = [
        {
            "instance_id": i.instance_id,
            "benchmark": i.benchmark,
            "task": i.task,
            "level": i.level,
            "index": i.index,
            "data": canonical_json(i.data),
            "gold": canonical_json(i.gold.answer),
            "gold_value": i.gold.value,
            "images": canonical_json([r.model_dump() for r in i.images]),
            "seed": i.seed,
            "peer_index": i.peer_index,
            "meta": canonical_json(i.meta),
        }
        for i in instances
    ]
    return pl.DataFrame(rows, schema=INSTANCE_COLUMNS)


def load_dataset(root: str | Path, *, check_images: bool = True) -> Dataset:
    """Load and validate a dataset folder; any problem is a one-line DatasetError naming file and field."""
    root = Path(root)
    mpath = root / MANIFEST
    try:
        st = mpath.stat()
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block, a device never ends
            raise DatasetError(f"{mpath}: not a regular file (is {root} a dataset folder made by `nphe4v generate`?)")
        data = mpath.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        raise DatasetError(f"{mpath}: not found (is {root} a dataset folder made by `nphe4v generate`?)") from None
    except OSError as e:
        raise DatasetError(f"{str(mpath)[:300]}: cannot read the dataset manifest: {e.strerror or e}") from None
    try:
        manifest = DatasetManifest.model_validate_json(data)  # bytes: invalid UTF-8 is a validation error too
    except ValidationError as e:
        loc, msg = first_error(e, "(top level)")
        raise DatasetError(f"{mpath}: field {loc}: {msg}") from None
    ipath = root / INSTANCES
    try:
        frame = pl.read_parquet(ipath)
    except Exception as e:  # polars raises several unrelated types for unreadable files
        raise DatasetError(f"{ipath}: unreadable Parquet ({type(e).__name__}: {str(e).splitlines()[0]})") from None
    for col, dtype in INSTANCE_COLUMNS.items():
        if col not in frame.columns:
            raise DatasetError(f"{ipath}: missing column {col!r}")
        if frame.schema[col] != dtype and frame.schema[col] != pl.Null:
            raise DatasetError(f"{ipath}: column {col!r} has type {frame.schema[col]}, expected {dtype}")
    if sha256_file(ipath) != manifest.instances_sha256:
        raise DatasetError(f"{ipath}: content hash differs from manifest.instances_sha256 (file changed or corrupt)")
    instances = []
    for n, row in enumerate(frame.iter_rows(named=True)):
        try:
            inst = _row_to_instance(row)
        except (ValidationError, ValueError, KeyError) as e:
            msg = e.errors()[0]["msg"] if isinstance(e, ValidationError) else str(e)
            raise DatasetError(f"{ipath}: row {n} ({row.get('instance_id')}): {msg}") from None
        for ref in inst.images:
            rel = Path(ref.path)
            inside = not rel.is_absolute() and ".." not in rel.parts
            if inside and check_images:
                inside = (root / rel).resolve().is_relative_to(root.resolve())  # a symlink may lead out
            if not inside:
                raise DatasetError(f"{ipath}: row {n} ({inst.instance_id}): field images.path: {ref.path!r} "
                                   "is outside the dataset folder")
        if check_images:
            for ref in inst.images:
                p = root / ref.path
                if not p.is_file():
                    raise DatasetError(f"{p}: image of {inst.instance_id} not found")
                if sha256_file(p) != ref.sha256:
                    raise DatasetError(f"{p}: sha256 differs from instances.parquet images.sha256")
        instances.append(inst)
    return Dataset(root=root, manifest=manifest, instances=tuple(instances))


def _row_to_instance(row: dict[str, Any]) -> Instance:
    from evalcore.benchmarks import task_for

    task = row["task"]
    data = json.loads(row["data"])
    try:
        spec = task_for(row["benchmark"], task)
    except (KeyError, ModuleNotFoundError) as e:
        raise ValueError(f"field task: {str(e).strip(chr(34) + chr(39))}") from None
    data = spec.load(data).model_dump(mode="json")
    return Instance(
        instance_id=row["instance_id"],
        benchmark=row["benchmark"],
        task=task,
        level=row["level"],
        index=row["index"],
        data=data,
        gold=Gold(answer=json.loads(row["gold"]), value=row["gold_value"]),
        images=tuple(ImageRef(**r) for r in json.loads(row["images"])),
        seed=row["seed"],
        peer_index=row["peer_index"],
        meta=json.loads(row["meta"]),
    )
