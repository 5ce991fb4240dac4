"""summarize stage."""
