"""The plan and its language: models, workflow XML, the DAG, variables, agent <config>, planning."""
