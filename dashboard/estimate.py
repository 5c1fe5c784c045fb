"""The estimate moved to `research.estimate` (the CLI prints it too); this name stays for
the code that imports it from here."""

from research.estimate import Estimate, describe_duration, estimate

__all__ = ["Estimate", "describe_duration", "estimate"]
