"""What every phase shares: records, events, errors, configuration and its constants, the run's context and threads, retries, prompt pieces, roles, settings, progress and counts."""
