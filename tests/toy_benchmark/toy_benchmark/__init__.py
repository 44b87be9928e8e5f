"""A toy third benchmark: one task (MAX), registered through the `nphe4v.benchmarks` entry point only."""
