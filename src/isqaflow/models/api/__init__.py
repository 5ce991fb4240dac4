"""API backend: OpenAI-compatible endpoints (online and Batch API), their rate limits, the run's API budget and the endpoints' model lists."""
