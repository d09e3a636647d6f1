"""HTTP helpers that the server and the protocol adapters share: read a JSON body, answer, fail.

Every malformed request becomes a typed 4xx answer here (``{"detail", "code"}``), never a 500:
:func:`fail` maps each protocol error code to its status. It sits below the server, the
sessions and the adapters (``rollgym.serve``'s import layers, checked by import-linter).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rollgym.serve import protocol as wire

#: The HTTP status of each refused request's code; any other code is a 400.
STATUS = {wire.CAPACITY_REACHED: 503, wire.SHUTTING_DOWN: 503, wire.REPLICA_LOST: 503, wire.UNKNOWN_ENV: 404,
          wire.SESSION_ERROR: 404, wire.ACTION_TOO_LARGE: 413}


async def json_body(request: Any, max_bytes: int) -> dict[str, Any]:
    """The request's body as a JSON object (``{}`` when empty), or :class:`~rollgym.serve.protocol.ProtocolError`."""
    raw = await request.body()
    if len(raw) > max_bytes:
        raise wire.ProtocolError(wire.ACTION_TOO_LARGE, f"The request body is {len(raw):,} bytes; too large.")
    body = wire.loads(raw, wire.MAX_DEPTH) if raw else {}
    if not isinstance(body, dict):
        raise wire.ProtocolError(wire.VALIDATION_ERROR, "The request body must be a JSON object.")
    return body


def respond(payload: Any, status: int = 200) -> Any:
    """A JSON response."""
    from starlette.responses import Response

    return Response(wire.dumps(payload), status_code=status, media_type="application/json")


def fail(exc: Exception, errors: Counter[str]) -> Any:
    """The typed answer to a refused request (counted in ``errors`` by code): ``{"detail", "code"}``."""
    code = getattr(exc, "code", wire.VALIDATION_ERROR)
    errors[code] += 1
    return respond({"detail": str(exc), "code": code}, STATUS.get(code, 400))


def error_reply(reply: dict[str, Any]) -> Any:
    """The HTTP answer to a protocol ``{"type": "error"}`` reply (already counted by the hub).

    A 500 only for ``EXECUTION_ERROR``: the env itself raised on a well-formed request.
    """
    code = reply["data"]["code"]
    return respond({"detail": reply["data"]["message"], "code": code}, 500 if code == wire.EXECUTION_ERROR else 400)
