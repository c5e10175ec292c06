"""Skill learning: transcripts, trajectories, atoms, clustering, canaries and the pipeline's models."""
