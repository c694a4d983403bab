"""Every table the package shares with the Rust core is the core's: error
codes (names, numbers, finality, statuses), the names of attempt kinds, next
actions and journal states, and the client's defaults. Each test fails if
Python lacks an entry, spells it differently, or has an extra one."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import re
from pathlib import Path
from typing import Any, Callable, List, get_args

import pytest

import payidem
from payidem import _native, _types, errors
from conftest import Mock, new_order, payment, status_path

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"
MakeClient = Callable[..., payidem.Client]


# Error codes.


def test_the_class_table_is_the_cores() -> None:
    core = _native.error_codes()
    assert [n for n, *_ in core] == list(range(1, len(core) + 1))
    assert [name for _, name, _, _ in core] == list(get_args(payidem.ErrorCodeName))
    assert set(errors._BY_CODE) == {name for _, name, _, _ in core}
    for number, name, http_status, final in core:
        cls = errors._BY_CODE[name]
        assert (cls.CODE, cls.NUMBER, cls.HTTP_STATUS, cls.FINAL) == (name, number, http_status, final)
        assert getattr(payidem, cls.__name__) is cls, f"payidem does not export {cls.__name__}"
        assert cls.__name__ in errors.__all__ and cls.__name__ in payidem.__all__


def _classes_without(code: str) -> List[type]:
    return [cls for cls in errors._CLASSES if cls.CODE != code]


class _Misspelt(payidem.Error):
    CODE = "nonce_reused"


def test_a_missing_misspelt_or_extra_class_fails_the_import() -> None:
    core = _native.error_codes()
    with pytest.raises(ImportError, match=r"no class for \['refused'\]"):
        errors._class_table(_classes_without("refused"), core)
    # A class whose code the core spells differently is both missing and extra.
    misspelt = type("Misspelt", (payidem.Error,), {"CODE": "nonce_re_used"})
    with pytest.raises(ImportError, match=r"no class for \['nonce_reused'\], classes for unknown codes \['nonce_re_used'\]"):
        errors._class_table([*_classes_without("nonce_reused"), misspelt], core)
    # A core that gained a code Python does not know.
    with pytest.raises(ImportError, match=r"no class for \['from_the_future'\]"):
        errors._class_table(errors._CLASSES, [*core, (99, "from_the_future", None, False)])
    # Two classes for one code.
    with pytest.raises(ImportError, match="share code 'nonce_reused'"):
        errors._class_table([*errors._CLASSES, _Misspelt], core)


# Names: Literal types against the core's lists.


@pytest.mark.parametrize(
    "alias, core",
    [
        (payidem.AttemptKind, _native.ATTEMPT_KINDS),
        (payidem.NextAction, _native.NEXT_ACTIONS),
        (payidem.OperationState, _native.OPERATION_STATES),
    ],
)
def test_literal_names_are_the_cores(alias: Any, core: List[str]) -> None:
    assert get_args(alias) == tuple(core)


def test_a_literal_that_differs_from_the_core_fails_the_import() -> None:
    with pytest.raises(ImportError, match="attempt kind"):
        _types._check_names(payidem.AttemptKind, [*_native.ATTEMPT_KINDS, "prefetch"], "attempt kind")
    with pytest.raises(ImportError):
        _types._check_names(payidem.NextAction, list(reversed(_native.NEXT_ACTIONS)), "next action")


def test_settled_and_unresolved_states_are_the_cores() -> None:
    states = get_args(payidem.OperationState)
    settled = {s for s in states if _status(s).settled}
    unresolved = {s for s in states if _status(s).unresolved}
    assert settled == {"succeeded", "rejected", "conflict"}
    assert unresolved == {"in_flight", "unknown"}


def _status(state: Any) -> payidem.OperationStatus:
    return payidem.OperationStatus(
        order_id="o",
        state=state,
        attempts=0,
        idempotency_key="k",
        created_at=0,
        updated_at=0,
        method="POST",
        path="/v1/payments",
        status_path=None,
        body_sha256="0" * 64,
    )


# Defaults.


def test_client_keyword_defaults_are_the_cores() -> None:
    core = _native.client_defaults()
    assert core == dataclasses.asdict(payidem.CLIENT_DEFAULTS)
    params = inspect.signature(payidem.Client).parameters
    for name, value in core.items():
        assert name in params, f"payidem.Client has no keyword {name}"
        default = params[name].default
        assert default == value and type(default) is type(value), (name, default, value)
    # Every other keyword defaults to None (nothing, or the core's choice).
    others = {n: p.default for n, p in params.items() if n not in core and p.default is not inspect.Parameter.empty}
    assert others and all(v is None for v in others.values()), others


def test_the_native_client_writes_no_default() -> None:
    signature = getattr(_native.Client, "__text_signature__", None)
    if signature is None:
        pytest.skip("PyO3 gives classes no text signature under abi3 before Python 3.10")
    defaults = re.findall(r"=([^,)]+)", signature)
    assert defaults and set(defaults) == {"None"}, signature


def test_a_native_client_with_no_options_takes_the_cores_defaults(mock: Mock) -> None:
    # Accepted as is (the core fills every setting), and it pays.
    client = _native.Client(mock.url, "key_test_1", b"sk_test_payidem_mock_secret_0001", journal=payidem.MEMORY)
    order = new_order("defaults")
    body = payidem.freeze_body(payment(order))
    outcome = client.execute((order, "POST", "/v1/payments", body, None, None), deadline=None, cancel=None)
    assert outcome[3] == 201
    client.close()


def test_the_readme_settings_are_the_cores() -> None:
    text = README.read_text(encoding="utf-8")
    listed = dict(re.findall(r"`(\w+)=([0-9.]+)`", text))
    core = _native.client_defaults()
    numeric = {k: v for k, v in core.items() if not isinstance(v, bool)}
    assert set(numeric) <= set(listed), f"README lacks {set(numeric) - set(listed)}"
    for name, value in numeric.items():
        assert float(listed[name]) == value, (name, listed[name], value)


def test_the_readme_lists_every_error_class() -> None:
    section = README.read_text(encoding="utf-8").split("## Errors", 1)[1].split("\n## ", 1)[0]
    for cls in errors._CLASSES:
        assert f"`{cls.__name__}`" in section, cls.__name__
        if not issubclass(cls, payidem.VerificationError):
            row = next(line for line in section.splitlines() if line.startswith(f"| `{cls.__name__}`"))
            assert f"`{cls.CODE}`" in row and ("| yes |" in row) == cls.FINAL, row


# Value types users receive can be built, compared and copied by users.


def _event(**changes: Any) -> payidem.AttemptEvent:
    fields: dict[str, Any] = dict(order_id="ord-1", idempotency_key="create-ord-1", attempt=1,
                                  kind="operation", next="retry_later", wait=0.5, status=503)
    fields.update(changes)
    return payidem.AttemptEvent(**fields)


def test_attempt_events_are_frozen_values() -> None:
    e = _event()
    assert e == _event() and hash(e) == hash(_event()) and e != _event(attempt=2)
    assert (e.error_code, e.transport_error, e.replayed, e.duration) == (None, None, False, 0.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.status = 200  # type: ignore[misc]
    assert dataclasses.replace(e, next="give_up") == _event(next="give_up")
    assert pickle.loads(pickle.dumps(e)) == e
    with pytest.raises(TypeError):
        payidem.AttemptEvent("ord-1", "create-ord-1", 1, "operation", "settle")  # type: ignore[misc]


@pytest.mark.parametrize("name, value", [("kind", "prefetch"), ("next", "Settle")])
def test_an_unknown_kind_or_action_names_its_field(name: str, value: str) -> None:
    with pytest.raises(payidem.InvalidArgument) as info:
        _event(**{name: value})
    assert info.value.field == name


def test_events_from_the_client_are_the_same_type(mock: Mock, make_client: MakeClient) -> None:
    mock.faults(timeout_504_after_commit=1.0)
    events: List[payidem.AttemptEvent] = []
    order = new_order("events")
    client = make_client(max_attempts=2, on_attempt=events.append)
    # A 504 after the payment was made; the status query finds it.
    client.execute(order, "POST", "/v1/payments", payment(order), status_path=status_path(order))
    assert events and all(type(e) is payidem.AttemptEvent for e in events)
    assert {e.kind for e in events} == {"operation", "status_query"}
    for e in events:
        assert payidem.AttemptEvent(**dataclasses.asdict(e)) == e
        assert e.next in get_args(payidem.NextAction)
    status = client.status(order)
    assert status is not None and status.state == "succeeded"


def test_outcomes_responses_and_statuses_can_be_built() -> None:
    headers = payidem.Headers([("Content-Type", "application/json")])
    outcome = payidem.Outcome(order_id="o", idempotency_key="create-o", attempts=2, status=201,
                              headers=headers, body=b'{"payment_id":"p_1"}', replayed=True)
    assert outcome == dataclasses.replace(outcome) and outcome.json()["payment_id"] == "p_1"
    assert outcome.header("content-type") == "application/json" and outcome.ok
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.status = 500  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(outcome)) == outcome
    response = payidem.Response(status=404, headers=payidem.Headers(), body=b"")
    assert not response.ok and response == payidem.Response(status=404, headers=payidem.Headers(), body=b"")
    assert _status("unknown").unresolved and _status("succeeded") == _status("succeeded")


def test_defaults_object_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        payidem.CLIENT_DEFAULTS.max_attempts = 1  # type: ignore[misc]

