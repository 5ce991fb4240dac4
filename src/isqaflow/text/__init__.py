"""Text utilities shared by every stage: sentence splitting, SQuAD token F1, similarity."""
