"""The `fslab` command line: the only place that prints for the user and exits."""
