"""What is said about a finished report: citations read in any style, the writer's reference lists, the deterministic checks, and the run's outcome."""
