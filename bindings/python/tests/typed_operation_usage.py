"""Typed use of the operation API, checked by ``mypy --strict`` in
run-tests.sh (never run by pytest): the step types narrow with
``isinstance`` and the ``Literal`` names are the core's."""

from __future__ import annotations

from typing import List

import httpx
import requests

import payidem
from payidem.httpx import AsyncPayidemTransport, PayidemTransport
from payidem.requests import PayidemAdapter


def drive(op: payidem.Operation, signer: payidem.Signer) -> payidem.End:
    elapsed = 0.0
    while True:
        step = op.poll(signer, now=1_767_225_600, elapsed=elapsed)
        if isinstance(step, payidem.PersistStep):
            op.persisted()
        elif isinstance(step, payidem.SendStep):
            attempt: payidem.Attempt = step.attempt
            reaction: payidem.Reaction = op.handle(
                payidem.Reply.response(201, [("Content-Type", "application/json")], b"{}"),
                now=1_767_225_600,
                elapsed=elapsed,
            )
            landed: payidem.Landed = reaction.landed
            assert attempt.header("Idempotency-Key") is not None and landed
        elif isinstance(step, payidem.WaitStep):
            elapsed += step.seconds
        else:
            end: payidem.End = step.end
            name: payidem.EndName = end.name
            final: bool = end.final
            assert name and final in (True, False)
            return end


def call(client: payidem.Client) -> payidem.Outcome:
    with payidem.Call.begin(client, "ord-1", "POST", "/v1/payments", {"amount": 1}) as c:
        while True:
            step = c.step()
            kind: payidem.CallStepKind = step.kind
            if isinstance(step, payidem.DoneStep):
                return step.result()
            if isinstance(step, payidem.SendStep):
                assert step.timeout is not None and step.attempt.url is not None and kind
                c.report(payidem.Reply.sent_no_response("lost"))


def adapters(client: payidem.Client) -> List[object]:
    session = requests.Session()
    session.mount("https://api.example.com/", PayidemAdapter(client, deadline=30.0))
    headers = payidem.operation_headers("ord-1", status_path="/v1/payments?order_id=ord-1")
    return [
        session,
        httpx.Client(transport=PayidemTransport(client, httpx.HTTPTransport())),
        httpx.AsyncClient(transport=AsyncPayidemTransport(client)),
        headers,
        payidem.RetryBudget(capacity=10).available,
    ]
