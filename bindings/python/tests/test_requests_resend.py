"""What ``PayidemAuth``'s docstring says about retries, against the mock:
urllib3's ``Retry`` resends the same signed bytes and the platform refuses the
copy with ``409 nonce_reused``; calling ``requests`` again signs afresh."""

from __future__ import annotations

import pytest

from conftest import MOCK_KEY_ID, MOCK_SECRET, Mock, payment_request

requests = pytest.importorskip("requests")
retry_module = pytest.importorskip("urllib3.util.retry")


def test_urllib3_retry_resends_the_same_signature_and_is_refused(mock: Mock) -> None:
    from requests.adapters import HTTPAdapter

    from payidem.requests_auth import PayidemAuth

    # The first answer is a 504 after the payment was made; urllib3 retries
    # it (POST allowed) without calling the auth again.
    mock.faults(timeout_504_after_commit=1.0)
    retry = retry_module.Retry(
        total=1, status_forcelist=[504], allowed_methods=None, backoff_factor=0, raise_on_status=False
    )
    session = requests.Session()
    session.mount("http://", HTTPAdapter(max_retries=retry))
    auth = PayidemAuth(MOCK_KEY_ID, MOCK_SECRET)
    order, body, headers = payment_request("resend")
    r = session.post(mock.url + "/v1/payments", data=body, headers=headers, auth=auth, timeout=10)
    assert r.status_code == 409, r.text
    assert r.json()["error"]["code"] == "nonce_reused"
    # urllib3 sent the request twice (the auth signed it once): a 504, then
    # the same signed bytes again.
    assert [h.status for h in r.raw.retries.history] == [504]
    # The payment was made by the first attempt; the 409 says nothing of it.
    assert mock.payments_created(order) == 1

    # Calling requests again signs afresh: the platform replays the payment.
    mock.faults()
    again = requests.post(mock.url + "/v1/payments", data=body, headers=headers, auth=auth, timeout=10)
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.request.headers["X-Nonce"] != r.request.headers["X-Nonce"]
    assert mock.payments_created(order) == 1

