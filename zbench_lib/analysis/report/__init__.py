"""What a reader sees: notebook display, summary tables, the resilver study, the report."""
