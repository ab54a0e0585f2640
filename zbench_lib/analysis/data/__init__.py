"""A sweep as the analysis reads it: loading, truth flags, planned cells, experimental units."""
