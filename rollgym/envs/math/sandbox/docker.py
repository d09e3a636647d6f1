"""Deprecated alias of :mod:`rollgym.sandbox.docker`."""

from rollgym.sandbox.docker import DEFAULT_IMAGE, DockerSandbox, docker_client

__all__ = ["DEFAULT_IMAGE", "DockerSandbox", "docker_client"]
