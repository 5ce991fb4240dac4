"""RAG-QA Arena's retrieval: BM25 and dense (MiniLM) retrievers, ColBERTv2 through PyLate, and what every retriever's job shares (hits, recall)."""
