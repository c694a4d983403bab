use payidem::{JournalChoice, OperationSpec};
use payidem_e2e::*;

#[test]
fn one_payment_end_to_end() {
    let mock = start_mock();
    let client = client(&mock.url(), JournalChoice::Memory);
    let body = payment_body("ord-smoke-1", 1250);
    let status = payment_status_path("ord-smoke-1");
    let spec = OperationSpec {
        order_id: "ord-smoke-1",
        method: "POST",
        path: "/v1/payments",
        body: &body,
        idempotency_key: None,
        status_path: Some(&status),
    };
    let outcome = client.execute(&spec).unwrap();
    assert_eq!(outcome.response.status, 201);
    assert!(!outcome.response.replayed);
    let again = client.execute(&spec).unwrap();
    assert_eq!(again.response, outcome.response);
    assert_eq!(mock.stats().orders["ord-smoke-1"].payments_created, 1);
}
