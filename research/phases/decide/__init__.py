"""Between rounds: coverage and follow-up triage, the person's exit case, and steering."""
