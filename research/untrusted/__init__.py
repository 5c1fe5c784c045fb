"""Untrusted input: fetching web pages safely, addresses and their safety check, the sandbox for parsers, PDF text, invisible-character cleaning, credibility signals and excerpts."""
