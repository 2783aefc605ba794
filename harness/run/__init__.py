"""One run, end to end: VMs booted (one process, several boots, several hosts), the results
collected into the run directory, salvage of half-done runs, reproduce, and the benchmarks of
fslab itself (boot phases, overhead)."""
