"""ISQA: baseline summaries, generic feedback and iterative factuality refinement (Algorithm 1)."""
