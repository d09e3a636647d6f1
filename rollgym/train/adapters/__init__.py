"""Adapters that let TRL and verl train on rollgym environments (heavy imports stay inside functions)."""
