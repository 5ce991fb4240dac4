"""RAG-QA Arena: passages, retrieval, answers, pairwise judging, ratings and agreement."""
