"""RAG-QA Arena's ratings: battles encoded, Elo and Bradley-Terry fits, bootstrap intervals and win rates, length-controlled win rates."""
