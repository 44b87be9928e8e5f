"""How fast the config reader refuses the worst inputs it can be given (issue 32: a plain 300k-key file took
46 s before being refused, /dev/zero was read until the kernel killed the process).

    python bench/bench_config_refusals.py

Each input is written to a temporary file and read through `cluster.config.read_yaml_mapping` (the reader of
run configs, the registry and --comparisons); printed per input: its size, the CPU seconds and the peak memory
(of this process, growth over the start) until the refusal, and the one line. The worst cases the caps allow
are the ones near them: a file just under MAX_YAML_BYTES of plain keys (the YAML parser is pure Python: its
time grows with the file until the value count stops it), a flow list of MAX_YAML_VALUES + 1 scalars, an alias
bomb, nesting past the recursion limit, a 5,000-digit integer, a FIFO and a link to /dev/zero.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cluster.config import MAX_YAML_BYTES, MAX_YAML_VALUES, ConfigError, read_yaml_mapping  # noqa: E402


def plain_keys(limit: int) -> str:
    out, n, i = [], 0, 0
    while True:
        line = f"k{i}: {i}\n"
        if n + len(line) > limit:
            return "".join(out)
        out.append(line)
        n += len(line)
        i += 1


def bomb(depth: int = 9, width: int = 10) -> str:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, depth)]
    return "\n".join(lines) + "\n"


def cases(tmp: Path) -> list[tuple[str, Path]]:
    files = {
        "plain keys, 4.5 MB (300k keys)": plain_keys(4_600_000),
        "plain keys, just under the byte cap": plain_keys(MAX_YAML_BYTES),
        f"flow list of {MAX_YAML_VALUES + 1} values": "x: [" + "1," * MAX_YAML_VALUES + "1]\n",
        "alias bomb (10^9 values)": bomb(),
        "nested 5,000 deep": "x: " + "[" * 5000 + "]" * 5000 + "\n",
        "5,000-digit integer": "repeats: " + "9" * 5000 + "\n",
    }
    out = []
    for name, text in files.items():
        p = tmp / f"{len(out)}.yaml"
        p.write_text(text)
        out.append((name, p))
    fifo = tmp / "fifo.yaml"
    os.mkfifo(fifo)
    zero = tmp / "zero.yaml"
    zero.symlink_to("/dev/zero")
    return [*out, ("a FIFO", fifo), ("a link to /dev/zero", zero)]


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        print(f"{'input':<40} {'bytes':>10} {'CPU s':>7} {'+RSS MB':>8}  line")
        for name, path in cases(Path(d)):
            size = path.stat().st_size if path.is_file() else 0
            rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            t0 = time.process_time()
            try:
                read_yaml_mapping(path, path.name)
                line = "(accepted)"
            except ConfigError as e:
                line = str(e)
            cpu = time.process_time() - t0
            grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
            print(f"{name:<40} {size:>10} {cpu:>7.2f} {grew:>8.1f}  {line[:110]}")


if __name__ == "__main__":
    main()
