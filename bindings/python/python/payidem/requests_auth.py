"""Signing for callers that send with ``requests``.

``requests`` is not a dependency of payidem and is never imported by it: an
auth object is any callable that takes and returns a ``PreparedRequest``.

    import requests, payidem
    from payidem.requests_auth import PayidemAuth

    auth = PayidemAuth("key_live_1", secret)
    requests.post(url + "/v1/payments", data=body, auth=auth,
                  headers={"Idempotency-Key": "create-ord-1",
                           "Content-Type": "application/json"})

This signs one attempt; retries, keys and the journal remain the caller's
job (``payidem.Client`` does all of that).

Never let urllib3 retry a signed request (``HTTPAdapter(max_retries=
Retry(...))``, or any adapter or proxy that replays requests): the auth runs
once per ``requests`` call, so urllib3 resends the *same signed bytes*, same
nonce and timestamp, and the platform refuses the copy with ``409
nonce_reused`` (for a POST whose first answer was lost or a 504, the payment
may well have been made, and the 409 says nothing about it). Retry by calling
``requests`` again with the same body and ``Idempotency-Key``: each call signs
afresh. Better, let ``payidem.Client`` run the operation: it re-signs every
attempt, journals the key and body first, and follows the protocol's
decision after each answer.

Redirects are never followed for a signed request, whatever
``allow_redirects`` says: a 3xx answer is returned as it is (``Location``
intact), so the signed headers and the body never reach another URL.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, TypeVar, Union

from ._native import Signer

__all__ = ["PayidemAuth"]

R = TypeVar("R")


def _body_bytes(body: Union[bytes, str, None, Any], refusal: str) -> bytes:
    """A prepared request's body as the bytes that are signed and sent
    (``str`` as UTF-8, none as empty); any other body (a stream, a file)
    raises :class:`TypeError` with ``refusal``."""
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    raise TypeError(refusal)


_UNSIGNABLE = (
    "PayidemAuth can only sign a body known in full (bytes or str); "
    "streamed bodies and files cannot be signed"
)


_NOT_REDIRECTS: Dict[type, type] = {}


def _not_a_redirect(response_type: type) -> type:
    """``response_type`` with ``is_redirect`` always false: ``requests``
    follows a redirect only when that property is true."""
    cls = _NOT_REDIRECTS.get(response_type)
    if cls is None:
        cls = type(
            response_type.__name__,
            (response_type,),
            {
                "is_redirect": property(lambda self: False),
                "is_permanent_redirect": property(lambda self: False),
                "__module__": response_type.__module__,
                "__doc__": response_type.__doc__,
            },
        )
        _NOT_REDIRECTS[response_type] = cls
    return cls


def _refuse_redirect(response: Any, *args: Any, **kwargs: Any) -> Any:
    """A ``requests`` response hook: a redirect answer to a signed request is
    returned as it is, never followed (the hook runs before ``requests``
    looks for a redirect)."""
    if getattr(response, "is_redirect", False):
        response.__class__ = _not_a_redirect(type(response))
    return response


class PayidemAuth:
    """A ``requests`` auth that signs each prepared request with protocol v1
    headers. The ``Idempotency-Key`` header of the request, if any, is signed
    and kept; a POST without one is refused with
    :class:`~payidem.InvalidArgument`.

    Each ``requests`` call is signed once, afresh (new nonce and timestamp):
    calling again is a new, valid attempt. A retry *inside* one call is not:
    urllib3's ``Retry`` (``HTTPAdapter(max_retries=...)``) resends the same
    signed bytes and the platform answers ``409 nonce_reused``. Leave
    ``max_retries`` at its default (no retries), retry by calling again, or
    use ``payidem.Client``, which re-signs every attempt.

    A redirect is never followed: the 3xx response is returned to the caller
    and nothing is sent to the ``Location``."""

    def __init__(self, key_id: str, secret: bytes, *, signer: Optional[Signer] = None) -> None:
        self.signer = signer if signer is not None else Signer(key_id, secret)

    def __call__(self, request: R) -> R:
        r: Any = request
        key = r.headers.get("Idempotency-Key")
        signed = self.signer.sign_attempt(
            r.method.upper(),
            r.path_url,
            _body_bytes(r.body, _UNSIGNABLE),
            key if key else None,
        )
        r.headers.update(signed)
        register = getattr(r, "register_hook", None)
        if register is not None:
            register("response", _refuse_redirect)
        return request

    def __repr__(self) -> str:
        return f"PayidemAuth(key_id={self.signer.key_id!r}, secret=<redacted>)"
