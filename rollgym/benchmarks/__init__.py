"""Benchmarks: metrics, suites and the runner."""
