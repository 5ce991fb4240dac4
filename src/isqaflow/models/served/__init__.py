"""Served backend: a local model behind an OpenAI-compatible server the job starts and stops itself (its settings, process, client)."""
