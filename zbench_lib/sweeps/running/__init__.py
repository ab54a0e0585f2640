"""Running a plan on a node: the executor, its pools, surfaces and targets, faults, the host."""
