"""Model weights: fetched from the Hub, and converted from a packaged GGUF file."""
