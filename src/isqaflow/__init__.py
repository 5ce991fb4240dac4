"""isqaflow: the library behind the workflow that reproduces ISQA, InFoBench/DRFR and RAG-QA Arena.

All logic lives here; the Snakemake scripts in ``scripts/`` only call it.  Heavy
dependencies (torch, transformers, spaCy) are imported inside the functions that
need them, so light jobs (tables, ratings) start in a fraction of a second.
"""

__version__ = "0.1.0"
