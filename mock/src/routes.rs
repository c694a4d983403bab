//! Mapping a method and request target to a route.

/// A matched route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    CreatePayment,
    PaymentOfOrder {
        order_id: Option<String>,
    },
    GetPayment {
        payment_id: String,
    },
    CreateRefund {
        payment_id: String,
    },
    GetRefund {
        payment_id: String,
        refund_id: String,
    },
    Ping,
    Metrics,
    Stats,
    Reset,
    GetFaults,
    SetFaults,
}

/// Why no route matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NoRoute {
    NotFound,
    MethodNotAllowed { allow: &'static str },
}

impl Route {
    /// The route's name in the stats.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Route::CreatePayment => "POST /v1/payments",
            Route::PaymentOfOrder { .. } => "GET /v1/payments?order_id",
            Route::GetPayment { .. } => "GET /v1/payments/{payment_id}",
            Route::CreateRefund { .. } => "POST /v1/payments/{payment_id}/refunds",
            Route::GetRefund { .. } => "GET /v1/payments/{payment_id}/refunds/{refund_id}",
            Route::Ping => "GET /_mock/ping",
            Route::Metrics => "GET /metrics",
            Route::Stats => "GET /_mock/stats",
            Route::Reset => "POST /_mock/reset",
            Route::GetFaults => "GET /_mock/faults",
            Route::SetFaults => "POST /_mock/faults",
        }
    }

    /// Whether the route is a signed `/v1` route.
    pub(crate) fn is_api(&self) -> bool {
        matches!(
            self,
            Route::CreatePayment
                | Route::PaymentOfOrder { .. }
                | Route::GetPayment { .. }
                | Route::CreateRefund { .. }
                | Route::GetRefund { .. }
        )
    }

    /// Whether the route needs `--control`.
    pub(crate) fn is_control(&self) -> bool {
        matches!(
            self,
            Route::Stats | Route::Reset | Route::GetFaults | Route::SetFaults
        )
    }
}

fn query_value(query: Option<&str>, name: &str) -> Option<String> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

fn pick(method: &str, allow: &'static str, choices: &[(&str, Route)]) -> Result<Route, NoRoute> {
    choices
        .iter()
        .find(|(m, _)| *m == method)
        .map(|(_, r)| r.clone())
        .ok_or(NoRoute::MethodNotAllowed { allow })
}

/// Matches `method` and the request target `target` (path and query).
pub(crate) fn route(method: &str, target: &str) -> Result<Route, NoRoute> {
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let segments: Vec<&str> = path.strip_prefix('/').unwrap_or("").split('/').collect();
    match segments.as_slice() {
        ["v1", "payments"] => pick(
            method,
            "GET, POST",
            &[
                ("POST", Route::CreatePayment),
                (
                    "GET",
                    Route::PaymentOfOrder {
                        order_id: query_value(query, "order_id"),
                    },
                ),
            ],
        ),
        ["v1", "payments", id] if !id.is_empty() => pick(
            method,
            "GET",
            &[(
                "GET",
                Route::GetPayment {
                    payment_id: (*id).to_owned(),
                },
            )],
        ),
        ["v1", "payments", id, "refunds"] if !id.is_empty() => pick(
            method,
            "POST",
            &[(
                "POST",
                Route::CreateRefund {
                    payment_id: (*id).to_owned(),
                },
            )],
        ),
        ["v1", "payments", id, "refunds", rid] if !id.is_empty() && !rid.is_empty() => pick(
            method,
            "GET",
            &[(
                "GET",
                Route::GetRefund {
                    payment_id: (*id).to_owned(),
                    refund_id: (*rid).to_owned(),
                },
            )],
        ),
        ["_mock", "ping"] => pick(method, "GET", &[("GET", Route::Ping)]),
        ["metrics"] => pick(method, "GET", &[("GET", Route::Metrics)]),
        ["_mock", "stats"] => pick(method, "GET", &[("GET", Route::Stats)]),
        ["_mock", "reset"] => pick(method, "POST", &[("POST", Route::Reset)]),
        ["_mock", "faults"] => pick(
            method,
            "GET, POST",
            &[("GET", Route::GetFaults), ("POST", Route::SetFaults)],
        ),
        _ => Err(NoRoute::NotFound),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route("POST", "/v1/payments"), Ok(Route::CreatePayment));
        assert_eq!(
            route("GET", "/v1/payments?x=1&order_id=o-1"),
            Ok(Route::PaymentOfOrder {
                order_id: Some("o-1".into())
            })
        );
        assert_eq!(
            route("DELETE", "/v1/payments"),
            Err(NoRoute::MethodNotAllowed { allow: "GET, POST" })
        );
        assert_eq!(
            route("GET", "/v1/payments/p1"),
            Ok(Route::GetPayment {
                payment_id: "p1".into()
            })
        );
        assert_eq!(
            route("POST", "/v1/payments/p1"),
            Err(NoRoute::MethodNotAllowed { allow: "GET" })
        );
        assert_eq!(
            route("POST", "/v1/payments/p1/refunds"),
            Ok(Route::CreateRefund {
                payment_id: "p1".into()
            })
        );
        assert_eq!(
            route("GET", "/v1/payments/p1/refunds/r1"),
            Ok(Route::GetRefund {
                payment_id: "p1".into(),
                refund_id: "r1".into()
            })
        );
        assert_eq!(
            route("GET", "/v1/payments//refunds"),
            Err(NoRoute::NotFound)
        );
        assert_eq!(route("GET", "/v2/payments"), Err(NoRoute::NotFound));
        assert_eq!(route("GET", "/metrics"), Ok(Route::Metrics));
        assert_eq!(
            route("POST", "/metrics"),
            Err(NoRoute::MethodNotAllowed { allow: "GET" })
        );
        assert_eq!(route("GET", "/"), Err(NoRoute::NotFound));
        assert_eq!(route("GET", "*"), Err(NoRoute::NotFound));
    }
}
