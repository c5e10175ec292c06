"""The leader's coordinator: a model consulted at four points of a run — a model agent's
result (results.py), a worker's question or tool request (requests.py), a stall past the nudge
and the run's end (oversight.py) — what its parts share (judgment.py), what it is asked
(review.py, prompts.py) and what people see of its ledger (views.py). The ledger itself, its
judgments and facts, is part of the run's state (xsky/leader/ledger.py)."""
