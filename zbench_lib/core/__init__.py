"""Foundation shared by every layer: errors, sizes, paths, signal handling, crash points."""
