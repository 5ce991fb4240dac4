"""arena stage."""
