"""Answer evals: the Flask answer eval (run.py) and the fact eval (facts.py, check_facts.py, facts_run.py)."""
