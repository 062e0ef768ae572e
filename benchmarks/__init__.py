"""kafkapy's benchmark harness: `python benchmarks/run.py` (see docs/benchmarks.md)."""
