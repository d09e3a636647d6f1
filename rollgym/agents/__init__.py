"""Agents: the ``Agent`` protocol and reference agents (oracle, random, human)."""

from rollgym.agents.base import AGENTS, Agent, HumanAgent, OracleAgent, RandomAgent, make_agent

__all__ = ["AGENTS", "Agent", "HumanAgent", "OracleAgent", "RandomAgent", "make_agent"]
