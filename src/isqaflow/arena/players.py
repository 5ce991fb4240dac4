"""Names of the arena's players that are not models (shared by pair building and tables);
defined on the ground floor (:mod:`isqaflow.settings`), where the config check refuses them as
system names: ``REFERENCE`` is LFRQA's long-form answer of a query, ``ABSTRACT`` a paper's own
abstract, the reference of the summaries' arena."""

from __future__ import annotations

from isqaflow.settings import ABSTRACT_PLAYER as ABSTRACT
from isqaflow.settings import REFERENCE_PLAYER as REFERENCE

__all__ = ["ABSTRACT", "REFERENCE"]
