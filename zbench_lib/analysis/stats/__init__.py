"""Statistics: summaries, ratio intervals and tests, comparisons, tails, the tables of results."""
