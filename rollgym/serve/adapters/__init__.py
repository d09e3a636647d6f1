"""Adapters that put rollgym envs inside other frameworks: verifiers, NeMo Gym, SkyRL-Gym.

Each module imports its framework lazily; see docs/serve.md for the versions they were tested with.
"""
