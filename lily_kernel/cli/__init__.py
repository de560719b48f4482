"""The `lily` command line: a thin edge over the core."""
