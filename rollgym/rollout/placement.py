"""What an env's workers need from a cluster node: CPUs and custom Ray resources.

A cluster says what each node offers when the node starts
(``ray start --resources='{"browser": 4}'``); a family says here what one of its
env workers needs. :func:`collect_ray <rollgym.rollout.distributed.collect_ray>`
places workers only on nodes that offer it, so browsers land on the browser
nodes and sandboxes on the sandbox nodes. The table is declarative and keyed
by family and id, next to nothing an env imports (changing it changes no env's
spec hash).

Example:
    >>> env_needs("WebShop-v2").resources
    {'browser': 1.0}
    >>> env_needs("Countdown-v0").resources
    {}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.core.registration import env_info

__all__ = ["NEEDS", "Needs", "env_needs"]


@dataclass(frozen=True)
class Needs:
    """What one env worker takes from its node: ``cpus`` and custom Ray ``resources`` (name -> amount).

    Example:
        >>> Needs(1, {"sandbox": 1}).capacity({"CPU": 4.0, "sandbox": 2.0})
        2
    """

    cpus: float = 0.0
    resources: dict[str, float] = field(default_factory=dict)
    why: str = ""

    def __post_init__(self) -> None:
        amounts = {"CPU": self.cpus, **self.resources}
        bad = [name for name, amount in amounts.items() if not (isinstance(amount, (int, float)) and amount >= 0)]
        if bad or "CPU" in self.resources:
            raise ConfigError(f"A worker's needs must be non-negative amounts (CPUs as cpus=); got {amounts!r}.")
        object.__setattr__(self, "resources", {name: float(amount) for name, amount in self.resources.items()})

    def ray_options(self) -> dict[str, Any]:
        """The actor options that reserve these needs: ``num_cpus`` and ``resources``."""
        return {"num_cpus": self.cpus, "resources": dict(self.resources)}

    def capacity(self, offered: Mapping[str, float]) -> int:
        """How many workers a node offering ``offered`` (Ray's resource totals) holds; 0 when it lacks one.

        A worker that needs nothing fits anywhere, any number of times (``sys.maxsize``).
        """
        amounts = {"CPU": self.cpus, **self.resources}
        counts = [math.floor(offered.get(name, 0.0) / amount + 1e-9) for name, amount in amounts.items() if amount > 0]
        return min(counts) if counts else 2**31

    def describe(self) -> str:
        """The needs in words, for errors and docs: ``"1 CPU, browser: 1"``."""
        parts = [f"{self.cpus:g} CPU"] if self.cpus else []
        parts += [f"{name}: {amount:g}" for name, amount in sorted(self.resources.items())]
        return ", ".join(parts) or "nothing"


def _mentions(word: str) -> Callable[[str, Mapping[str, Any]], bool]:
    return lambda env_id, kwargs: word in repr(sorted(kwargs.items()))


#: ``(family, id prefix, condition on (id, env_kwargs), needs)``, first match wins; "" matches any.
NEEDS: tuple[tuple[str, str, Callable[[str, Mapping[str, Any]], bool] | None, Needs], ...] = (
    ("web", "", None, Needs(1, {"browser": 1}, "drives a Chromium browser")),
    ("code", "", None, Needs(1, {"sandbox": 1}, "runs untrusted code in bubblewrap sandboxes")),
    ("math", "", lambda env_id, kwargs: "Tool" in env_id,
     Needs(1, {"sandbox": 1}, "runs the model's python tool calls in bubblewrap sandboxes")),
    ("games", "Chess", _mentions("stockfish"), Needs(1, {"stockfish": 1}, "runs a Stockfish engine as opponent")),
)


def env_needs(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> Needs:
    """What a worker of ``env_id`` built with ``env_kwargs`` needs from its node (:data:`NEEDS`).

    Example:
        >>> env_needs("Chess-v1", {"opponent": "stockfish-skill-3"}).resources
        {'stockfish': 1.0}
        >>> env_needs("Chess-v1").resources
        {}
    """
    info = env_info(env_id)
    kwargs = dict(env_kwargs or {})
    for family, prefix, condition, needs in NEEDS:
        if (family and info.family != family) or not info.id.startswith(prefix):
            continue
        if condition is None or condition(info.id, kwargs):
            return needs
    return Needs()
