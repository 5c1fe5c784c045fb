"""Before research: pre-flight checks, clarifying questions, the plan, and building on an earlier run."""
