"""zbench: a research workbench for benchmarking ZFS storage layouts."""

__version__ = "0.1.0"
