"""The test suite itself: shared peer data is reached one way (../shared beside the project, through
`conftest.shared_or_skip`), never through one machine's absolute path, and its absence skips with a reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import PROJECT, SHARED, shared_or_skip

TESTS = Path(__file__).resolve().parent
# an absolute path of some machine (a home or work checkout, the shared folder spelled absolutely); mount
# points inside cluster manifests (/mnt/results) are what some tests check, not data they read
MACHINE_PATH = re.compile(r"""["'](/work/|/home/|/Users/|/root/|[A-Za-z]:\\\\|/[^"']*/shared/peers)""")


def test_shared_is_beside_the_project():
    assert SHARED == PROJECT.parent / "shared"
    assert (PROJECT / "pyproject.toml").is_file()


def test_absent_shared_data_skips_with_its_path_and_reason():
    with pytest.raises(pytest.skip.Exception) as e:
        shared_or_skip("no-such-folder-xyz")
    msg = str(e.value)
    assert str(SHARED / "no-such-folder-xyz") in msg and "not present" in msg and "../shared" in msg


def test_no_test_reads_an_absolute_machine_path():
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        if path.name == Path(__file__).name:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if MACHINE_PATH.search(line):
                offenders.append(f"{path.relative_to(PROJECT)}:{n}: {line.strip()}")
    assert not offenders, "use conftest.shared_or_skip or tmp_path instead:\n" + "\n".join(offenders)
