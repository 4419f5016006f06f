"""Environments for evaluation and RL training."""
