"""The model layer: one generate/score interface over Hugging Face and OpenAI-compatible backends, with a call cache."""
