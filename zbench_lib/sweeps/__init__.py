"""Studies: the sweep spec, its plan, the executor, the store and published packs."""
