"""agentkit.training"""
