"""A run's life: start, resume, pause, cancel, wait, status, and the worker's loop."""
