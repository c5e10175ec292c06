"""The ``starter.py`` command line: argument parsing, loading plans, rendering output."""
