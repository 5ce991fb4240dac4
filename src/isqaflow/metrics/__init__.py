"""Summary metrics (QAGS, QuestEval, ROUGE), statistics and human evaluation."""
