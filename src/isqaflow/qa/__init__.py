"""Question generation and answering on top of any language model: the QA machinery that
ISQA's generated questions and the QA-based metrics (QAGS, QuestEval) share."""
