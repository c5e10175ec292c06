"""An agent's activity: one attempt, its model loop, heartbeats, transcripts and skills."""
