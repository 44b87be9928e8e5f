"""The GraphVerse split a bench script audits: an existing folder (--data), or one generated from --split,
--seed (and --workers) into a temporary folder that is removed afterwards."""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gie.dataset import generate_split


def add_split_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--split", default="testmini")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--data", type=Path, help="an existing dataset folder (skips generation)")


@contextmanager
def split_folder(args: argparse.Namespace) -> Iterator[Path]:
    """The folder of the split `args` name (see add_split_args), generating it first when --data is not given."""
    if args.data is not None:
        yield args.data
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / args.split
        t0 = time.perf_counter()
        generate_split(root, args.split, args.seed, workers=args.workers)
        print(f"generated {args.split} seed {args.seed} in {time.perf_counter() - t0:.1f} s")
        yield root
