"""What a sandbox is built from: the Python installation, the C library, networkx, and what is hidden."""

from __future__ import annotations

import importlib.util
import os
import re
import struct
import sys
import sysconfig
from pathlib import Path

# Refused by the audit hook: ways to leave the interpreter's checks (raw memory and syscalls, programs,
# interpreters without the hook). The kernel boundary holds without this list.
FORBIDDEN_MODULES = ("ctypes", "_ctypes", "cffi", "subprocess", "_posixsubprocess", "multiprocessing",
                     "_multiprocessing", "_posixshmem", "pty", "_xxsubinterpreters", "_xxinterpchannels",
                     "_testcapi", "_testinternalcapi", "_testbuffer", "_testmultiphase", "_ctypes_test",
                     "_testimportmultiple", "_testclinic", "_xxtestfuzz")
# Their extension files are also covered by an empty file inside the strict sandbox.
_HIDDEN_EXTENSIONS = ("_ctypes", "_ctypes_test", "_posixsubprocess", "_multiprocessing", "_posixshmem",
                      "_xxsubinterpreters", "_xxinterpchannels", "_testcapi", "_testinternalcapi",
                      "_testbuffer", "_testmultiphase", "_testimportmultiple", "_testclinic", "_xxtestfuzz")
RUN_UIDS = (2_000_000_000, 100_000_000)  # fresh unprivileged uids for strict runs as root: base, span


def python() -> str:
    exe = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(exe)


def stdlib() -> str:
    return os.path.realpath(sysconfig.get_paths(vars={"base": sys.base_prefix,
                                                      "platbase": sys.base_prefix})["stdlib"])


def hidden_dirs() -> list[str]:
    std = stdlib()
    return [os.path.join(std, "site-packages"), os.path.join(std, "dist-packages")]


def hidden_files() -> list[str]:
    dyn = os.path.join(stdlib(), "lib-dynload")
    if not os.path.isdir(dyn):
        return []
    return sorted(os.path.join(dyn, f) for f in os.listdir(dyn) if f.split(".")[0] in _HIDDEN_EXTENSIONS)


def networkx_dir() -> str | None:
    spec = importlib.util.find_spec("networkx")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.realpath(list(spec.submodule_search_locations)[0])


def lib_paths(python: str) -> list[str]:
    """The C library's folder (as this process mapped it) and the ELF interpreter, as the binary names it."""
    paths: list[str] = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and re.fullmatch(r"libc(\.so.*|-[\d.]+\.so)", os.path.basename(parts[5].strip())):
                d = os.path.dirname(parts[5].strip())
                if d not in paths:
                    paths.append(d)
    interp = _elf_interpreter(python)
    if interp:
        paths.append(interp)
    return paths


def _elf_interpreter(path: str) -> str | None:
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF":
            return None
        end = "<" if head[5] == 1 else ">"
        if head[4] == 2:
            (phoff,) = struct.unpack_from(end + "Q", head, 0x20)
            phentsize, phnum = struct.unpack_from(end + "HH", head, 0x36)
        else:
            (phoff,) = struct.unpack_from(end + "I", head, 0x1C)
            phentsize, phnum = struct.unpack_from(end + "HH", head, 0x2A)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            ph = f.read(phentsize)
            if struct.unpack_from(end + "I", ph, 0)[0] == 3:  # PT_INTERP
                off, size = (struct.unpack_from(end + "QxxxxxxxxxxxxxxxxQ", ph, 8) if head[4] == 2
                             else struct.unpack_from(end + "IxxxxxxxxI", ph, 4))
                f.seek(off)
                return f.read(size).rstrip(b"\0").decode()
    return None


def cap_last_cap() -> int:
    try:
        return int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        return 63
