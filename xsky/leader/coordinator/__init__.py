"""The leader's coordinator: a model consulted at four points of a run — a model agent's
result (results.py), a worker's question or tool request (requests.py), a stall past the nudge
and the run's end (oversight.py) — what its parts share (judgment.py), what it is asked
(review.py, prompts.py), its ledgers (ledger.py) and what people see of it (views.py)."""
