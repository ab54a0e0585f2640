"""Claims in words: conclusions, the classic claims judged on a sweep, caveats."""
