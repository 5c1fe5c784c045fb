"""Writing: the draft (section by section), review cycles and delivery."""
