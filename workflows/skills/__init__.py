"""The skill pipeline's workflows: the watch and scan, one entity per skill, the library."""
