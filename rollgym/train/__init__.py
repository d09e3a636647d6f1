"""Training: advantages, the reference GRPO trainer, and adapters for TRL and verl."""
