"""A sweep's store: the immutable raw tree, results.parquet rebuilt from it, published packs."""
