"""The plan: cells, runs and their order, pool replicates, the repetition rule, the estimate."""
