"""The settings-parity vectors (core/tests/vectors/settings-v1.json) through
Python: every client and machine-start setting at absent, 0, negative,
maximum, maximum + 1 and a wrong type gives the value or the error (code
and field) the file states, as in Rust, C and Go.

Cases go through the conversion ``payidem.Client`` and ``payidem.Operation``
use (their keywords, durations in seconds: ``_native.resolve_settings``)
when a keyword sets every setting of the case, else through the JSON every
language passes (``_native.resolve_settings_json``); the wrong-type cases
also through the public ``payidem.Client`` and ``payidem.Operation``."""

from __future__ import annotations

import copy
import json
from typing import Any, Dict, Optional, Tuple

import pytest

from conftest import VECTORS
import payidem
from payidem import _native
from payidem.errors import InvalidArgument
from payidem.operation import Operation

V = json.loads((VECTORS.parent / "settings-v1.json").read_text())

MS, S, PLAIN, KEY = "ms", "s", "plain", "key"

# The Client keyword that sets each setting, and its unit.
KEYWORDS: Dict[str, Tuple[str, str]] = {
    "base_url": ("base_url", PLAIN),
    "key_id": ("key_id", PLAIN),
    "journal_path": ("journal", PLAIN),
    "journal_key_hex": ("journal_key", KEY),
    "connect_timeout_ms": ("connect_timeout", MS),
    "request_timeout_ms": ("request_timeout", MS),
    "retry.base_ms": ("backoff_base", MS),
    "retry.cap_ms": ("backoff_cap", MS),
    "retry.max_attempts": ("max_attempts", PLAIN),
    "retry.deadline_ms": ("deadline", MS),
    "retry_budget.capacity": ("retry_budget", PLAIN),
    "key_retention_s": ("key_retention", S),
    "settled_retention_s": ("settled_retention", S),
    "max_clock_offset_s": ("max_clock_offset", S),
    "lease_ttl_s": ("lease_ttl", S),
    "lease_heartbeat_ms": ("lease_heartbeat", MS),
    "allow_insecure_http": ("allow_insecure_http", PLAIN),
    "proxy_from_env": ("proxy_from_env", PLAIN),
    "proxy": ("proxy", PLAIN),
    "ca_bundle": ("ca_bundle", PLAIN),
    "client_cert": ("client_cert", PLAIN),
    "client_key": ("client_key", PLAIN),
}
SETTING_OF_KEYWORD = {keyword: setting for setting, (keyword, _) in KEYWORDS.items()}

# payidem.Operation's limit keywords: those of the Client setting each
# machine setting matches, in the same unit.
CLIENT_SETTING_OF_SETUP = {
    "setup.max_attempts": "retry.max_attempts",
    "setup.backoff_base_ms": "retry.base_ms",
    "setup.backoff_cap_ms": "retry.cap_ms",
    "setup.deadline_ms": "retry.deadline_ms",
    "setup.key_retention_secs": "key_retention_s",
    "setup.max_clock_offset_secs": "max_clock_offset_s",
}
SETUP_KEYWORDS = {setup: KEYWORDS[client] for setup, client in CLIENT_SETTING_OF_SETUP.items()}
SETUP_OF_KEYWORD = {keyword: setting for setting, (keyword, _) in SETUP_KEYWORDS.items()}


def python_value(value: Any, unit: str) -> Any:
    """The vector's JSON value as a Python caller gives it: durations in
    seconds (an int when whole, else a float), a journal key as bytes;
    anything that is not a number stays as it is."""
    number = isinstance(value, int) and not isinstance(value, bool)
    if unit == MS and number:
        return value // 1000 if value % 1000 == 0 else value / 1000
    if unit == KEY and isinstance(value, str):
        return bytes.fromhex(value) if value else None
    return value


def put(doc: Dict[str, Any], path: str, value: Any, present: bool) -> None:
    *parents, last = path.split(".")
    for key in parents:
        doc = doc.setdefault(key, {})
    if present:
        doc[last] = value
    else:
        doc.pop(last, None)


def document(base: Dict[str, Any], case: Dict[str, Any]) -> Dict[str, Any]:
    doc = copy.deepcopy(base)
    put(doc, case["setting"], None, False)
    for path, value in case.get("with", {}).items():
        put(doc, path, value, True)
    if "value" in case:
        put(doc, case["setting"], case["value"], True)
    return doc


def keywords_of(
    case: Dict[str, Any], base: Dict[str, Any], table: Dict[str, Tuple[str, str]]
) -> Optional[Dict[str, Any]]:
    """The case as keywords of ``table``, or None when a setting has none."""
    settings = {k: v for k, v in base.items() if k != case["setting"]}
    settings.update(case.get("with", {}))
    if "value" in case:
        settings[case["setting"]] = case["value"]
    kwargs = {}
    for setting, value in settings.items():
        if setting not in table:
            return None
        keyword, unit = table[setting]
        kwargs[keyword] = python_value(value, unit)
    if case["setting"] not in table:
        return None
    return kwargs


def at(doc: Any, path: str) -> Any:
    for key in path.split("."):
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def check(case: Dict[str, Any], resolve: Any, keyword_names: Optional[Dict[str, str]]) -> None:
    expect = case["expect"]
    if "error" in expect:
        with pytest.raises(InvalidArgument) as caught:
            resolve()
        field = caught.value.field
        if keyword_names is not None:
            field = keyword_names.get(field or "", field)
        assert (caught.value.code, field) == (expect["error"], expect["field"]), case
    else:
        doc = json.loads(resolve())
        assert at(doc, case["setting"]) == expect["value"], case


CLIENT_CASES = V["client"]["cases"]
START_CASES = V["start"]["cases"]


def case_id(case: Dict[str, Any]) -> str:
    return f"{case['setting']}/{case['case']}"


@pytest.mark.parametrize("case", CLIENT_CASES, ids=case_id)
def test_client_setting(case: Dict[str, Any]) -> None:
    kwargs = keywords_of(case, V["client"]["base"], KEYWORDS)
    if kwargs is not None:
        check(case, lambda: _native.resolve_settings("client", **kwargs), SETTING_OF_KEYWORD)
    else:
        doc = json.dumps(document(V["client"]["base"], case))
        check(case, lambda: _native.resolve_settings_json("client", doc), None)


@pytest.mark.parametrize("case", START_CASES, ids=case_id)
def test_start_setting(case: Dict[str, Any]) -> None:
    kwargs = keywords_of(case, {}, SETUP_KEYWORDS)
    if kwargs is not None:
        check(case, lambda: _native.resolve_settings("start", **kwargs), SETUP_OF_KEYWORD)
    else:
        doc = json.dumps(document(V["start"]["base"], case))
        check(case, lambda: _native.resolve_settings_json("start", doc), None)


def test_most_cases_go_through_the_keywords() -> None:
    typed = [c for c in CLIENT_CASES if keywords_of(c, V["client"]["base"], KEYWORDS) is not None]
    setup = [c for c in START_CASES if keywords_of(c, {}, SETUP_KEYWORDS) is not None]
    assert len(CLIENT_CASES) > 100 and len(START_CASES) > 80
    assert len(typed) > 0.8 * len(CLIENT_CASES), len(typed)
    assert len(setup) >= 36, len(setup)


def wrong_type_cases(cases: Any, base: Dict[str, Any], table: Dict[str, Tuple[str, str]]) -> Any:
    """The wrong-type cases a public keyword can state."""
    return [c for c in cases if c["case"] == "wrong_type" and keywords_of(c, base, table) is not None]


CLIENT_WRONG_TYPES = wrong_type_cases(CLIENT_CASES, V["client"]["base"], KEYWORDS)
START_WRONG_TYPES = wrong_type_cases(START_CASES, {}, SETUP_KEYWORDS)


def test_wrong_types_reach_the_public_keywords() -> None:
    assert len(CLIENT_WRONG_TYPES) >= 15 and len(START_WRONG_TYPES) >= 6


@pytest.mark.parametrize("case", CLIENT_WRONG_TYPES, ids=case_id)
def test_client_wrong_type_through_payidem_client(case: Dict[str, Any]) -> None:
    """payidem.Client gives the core's answer for a wrong type (an
    InvalidArgument naming the setting), which is also the TypeError its
    README promises."""
    kwargs = keywords_of(case, V["client"]["base"], KEYWORDS)
    assert kwargs is not None
    if case["setting"] != "journal_path":
        kwargs["journal"] = ":memory:"
    with pytest.raises(InvalidArgument) as caught:
        payidem.Client(secret=b"s" * 32, **kwargs)
    assert isinstance(caught.value, TypeError)
    field = SETTING_OF_KEYWORD.get(caught.value.field or "", caught.value.field)
    assert (caught.value.code, field) == (case["expect"]["error"], case["expect"]["field"]), case


@pytest.mark.parametrize("case", START_WRONG_TYPES, ids=case_id)
def test_start_wrong_type_through_payidem_operation(case: Dict[str, Any]) -> None:
    kwargs = keywords_of(case, {}, SETUP_KEYWORDS)
    assert kwargs is not None
    with pytest.raises(InvalidArgument) as caught:
        Operation("ord-1", "POST", "/v1/payments", b"{}", **kwargs)
    field = SETUP_OF_KEYWORD.get(caught.value.field or "", caught.value.field)
    assert (caught.value.code, field) == (case["expect"]["error"], case["expect"]["field"]), case
