"""Datasets: download with checksums, and converters from each raw format to one normalized schema."""
