"""agentkit.skills"""
