"""Names of the arena's players that are not models (shared by pair building and tables)."""

from __future__ import annotations

REFERENCE = "lfrqa"  # LFRQA's long-form answer of a query
ABSTRACT = "abstract"  # a paper's own abstract, the reference of the summaries' arena
