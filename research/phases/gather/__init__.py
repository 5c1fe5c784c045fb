"""Research: workers search, read, score and summarise their subtopics, in parallel."""
