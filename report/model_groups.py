"""Each model's access (closed, open, builtin) and family, for the benchmarks' groupings by them (e.g. Figure 4's
closed vs open models, Table 2's model families: `ReportContext.model_info`).

Which model is open, closed or a builtin baseline, and its family, is the model registry's knowledge
(``cluster/models.yaml``), and the registry belongs to the layer above the report. So the caller passes it in
as a ``ModelCatalogue`` (model name -> entry with ``access``, ``family`` and ``title``; ``cluster.registry``'s
``Registry.by_name`` is one); without one, every model counts as ``unregistered`` and its family is derived
from its name."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Protocol

import polars as pl

from evalcore.report_section import ACCESS_ORDER  # noqa: F401  (re-exported: report.analysis)


class ModelEntry(Protocol):
    """What the grouping reads of a model's registry entry."""

    @property
    def access(self) -> str: ...

    @property
    def family(self) -> str | None: ...

    @property
    def title(self) -> str: ...


ModelCatalogue = Mapping[str, ModelEntry]
"""Model name -> registry entry (e.g. ``cluster.registry.load_registry().by_name``)."""


def _derived_family(title: str) -> str:
    m = re.match(r"[A-Za-z]+", title)
    return m.group(0) if m else title


def model_info(models: Sequence[str], catalogue: ModelCatalogue | None = None) -> pl.DataFrame:
    """Per model name: ``access`` (open | closed | builtin from the ``catalogue``; ``unregistered`` for a model
    it does not list, or without one) and ``family`` (the entry's ``family``, else the leading letters of its
    title or name, e.g. "GPT" for "GPT-4o")."""
    by_name = catalogue or {}
    rows = []
    for name in sorted(set(models)):
        e = by_name.get(name)
        rows.append({
            "model": name,
            "access": e.access if e is not None else "unregistered",
            "family": (e.family or _derived_family(e.title)) if e is not None else _derived_family(name),
        })
    return pl.DataFrame(rows, schema={"model": pl.String, "access": pl.String, "family": pl.String})
