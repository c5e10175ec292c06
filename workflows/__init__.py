"""Deterministic orchestration: the leader workflow. Imports only xsky/ and temporalio."""
