"""Tables (CSV, Markdown, LaTeX), figures and the provenance manifest."""
