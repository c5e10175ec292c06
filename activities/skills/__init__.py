"""The skill pipeline's side effects: scanning transcripts, the store, the skill agents, the library in git."""
