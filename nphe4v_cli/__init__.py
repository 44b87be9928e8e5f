"""The `nphe4v` command: the project's command-line entry point, above every package it drives (cluster, report,
both benchmarks, the judge), so that no package below imports it."""
