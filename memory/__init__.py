"""agentkit.memory"""
