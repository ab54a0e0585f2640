"""One measured run: fio job files and results, counters, truth checks, provenance."""
