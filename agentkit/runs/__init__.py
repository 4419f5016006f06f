"""Runs beyond one uninterrupted loop: pauses for approval, durable checkpoints, agents called as tools and handoffs."""
