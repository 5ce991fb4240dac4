"""Arena-Hard-Auto v0.1: the workflow's models answer its questions, the workflow's judges
judge each answer against the baseline's in two games, and Bradley-Terry scores every model
against the baseline (rules/arena_hard/arena_hard.smk; the suite's descriptor: isqaflow.suites.arena_hard).
It reuses the arena's ratings (a floor above the stages': pyproject.toml)."""
