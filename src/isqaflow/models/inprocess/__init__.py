"""In-process backend: a Hugging Face transformers model in the job's own process (loading, batches and shared prefixes, generation, scoring)."""
