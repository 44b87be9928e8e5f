"""The import hook of cluster/cpu_torchvision.py, standalone so a child process can install it at start-up
(this folder's sitecustomize.py) without importing the project."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
_KEEP: list = []  # a dropped torch.library.Library would undefine its schemas


def _define_schemas() -> None:
    import torch

    lib = torch.library.Library("torchvision", "FRAGMENT")
    for schema in SCHEMAS:
        try:
            torch._C._dispatch_find_schema_or_throw(f"torchvision::{schema.split('(', 1)[0]}", "")
        except RuntimeError:
            lib.define(schema)
    _KEEP.append(lib)


class _Finder(importlib.abc.MetaPathFinder):
    """On the first `import torchvision`: declare the schemas, then load torchvision from the overlay."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def find_spec(self, name, path=None, target=None):
        if name != "torchvision":
            return None
        sys.meta_path.remove(self)
        _define_schemas()
        return importlib.machinery.PathFinder.find_spec(name, [self.folder])


def install(folder: str) -> None:
    if any(isinstance(f, _Finder) for f in sys.meta_path) or "torchvision" in sys.modules:
        return
    if folder not in sys.path:
        sys.path.append(folder)  # for importlib.metadata (transformers reads torchvision's version)
    sys.meta_path.insert(0, _Finder(folder))
