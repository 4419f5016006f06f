"""The act loop's parts: its state, recovery from loops and repeats, extension hooks, planners and typed output."""
