"""Prints the time to lay out and render one TSP / TSP-D picture per level (the complete weighted graph).

    PYTHONPATH=. python bench/bench_tsp_pictures.py [instances_per_level]
"""

from __future__ import annotations

import random
import sys
import time

from nphe4v.tasks import get_task
from nphe4v.tasks.tsp_common import layout_cities


def main(per_level: int = 5) -> None:
    for name in ("TSP", "TSP-D"):
        spec = get_task(name)
        for level in range(1, 11):
            data = [spec.generate(level, random.Random(f"bench-{name}-{level}-{i}")) for i in range(per_level)]
            t0 = time.perf_counter()
            sizes = [layout_cities(d.distances, d.coords).font_size for d in data]
            t1 = time.perf_counter()
            for d in data:
                spec.render(d)
            t2 = time.perf_counter()
            print(
                f"{name:5} L{level:02d} n={data[0].num_cities:2d}  layout {1000 * (t1 - t0) / per_level:7.1f} ms"
                f"  render {1000 * (t2 - t1) / per_level:7.1f} ms  label px {min(sizes)}-{max(sizes)}"
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
