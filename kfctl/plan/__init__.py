"""The dependency graph of apply steps: which object waits for which, and why (rules.py says why)."""
