"""agentkit.cli"""
