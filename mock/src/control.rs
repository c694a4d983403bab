//! The `/_mock` control routes: stats, reset, faults.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use crate::answer::Answer;
use crate::clock::ClockSetting;
use crate::faults::FaultKind;
use crate::handler::Shared;
use crate::routes::Route;

fn is_loopback_host(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return v6.parse::<Ipv6Addr>().is_ok_and(|ip| ip.is_loopback());
    }
    host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether `authority` (`host[:port]`, as in `Host`) names this machine's
/// loopback: `localhost`, `127.0.0.0/8` or `[::1]`.
fn is_loopback_authority(authority: &str) -> bool {
    let host = match authority.rsplit_once(':') {
        Some((h, port))
            if !port.is_empty()
                && port.bytes().all(|b| b.is_ascii_digit())
                && (!h.contains(':') || h.ends_with(']')) =>
        {
            h
        }
        _ => authority,
    };
    !host.is_empty() && is_loopback_host(host)
}

/// Whether an `Origin` value is an `http`/`https` origin on loopback.
fn is_loopback_origin(origin: &str) -> bool {
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    rest.is_some_and(|authority| {
        !authority.contains(['/', '@']) && is_loopback_authority(authority)
    })
}

/// Refuses a control request a web browser could have sent on a page's
/// behalf: `403 forbidden` unless exactly one `Host` names loopback (a
/// DNS-rebinding page sends its own host name) and any `Origin` is a
/// loopback origin (`null` and other sites are refused); then, for a POST,
/// `415 unsupported_media_type` unless `Content-Type` is
/// `application/json` (the types a page can send without a CORS preflight
/// are all refused).
pub(crate) fn refuse_browser(method: &str, headers: &[(&str, &str)]) -> Option<Answer> {
    let named = |name: &'static str| {
        headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    let hosts: Vec<&str> = named("host").collect();
    if hosts.len() != 1 || !is_loopback_authority(hosts[0]) {
        return Some(Answer::error(
            403,
            "forbidden",
            "control routes need a Host naming loopback (localhost, 127.0.0.1, [::1])",
        ));
    }
    if named("origin").any(|o| !is_loopback_origin(o)) {
        return Some(Answer::error(
            403,
            "forbidden",
            "control routes refuse requests from other origins",
        ));
    }
    if method == "POST" {
        let types: Vec<&str> = named("content-type").collect();
        let json = types.len() == 1
            && types[0]
                .split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return Some(Answer::error(
                415,
                "unsupported_media_type",
                "a POST to a control route needs Content-Type: application/json",
            ));
        }
    }
    None
}

/// The current fault settings, clock skew and processing delay as JSON.
pub(crate) fn faults_json(shared: &Shared) -> Value {
    let mut v = shared.dice.settings().to_json();
    let skew = match shared.clock.setting() {
        ClockSetting::System { skew_seconds } => json!(skew_seconds),
        ClockSetting::Fixed(_) => Value::Null,
    };
    v["clock_skew_seconds"] = skew;
    v["processing_delay_ms"] = json!(shared.processing_delay_ms.load(Ordering::Relaxed));
    v
}

/// Parses a `POST /_mock/faults` body: every kind listed gets its
/// probability and every unlisted kind 0; `delay_ms`, `retry_after_seconds`,
/// `clock_skew_seconds` and `processing_delay_ms` change only when present.
fn set_faults(shared: &Shared, body: &[u8]) -> Result<(), Answer> {
    let map = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(Answer::invalid("body", "the body must be a JSON object")),
        Err(e) => {
            return Err(Answer::invalid(
                "body",
                format!("the body is not valid JSON: {e}"),
            ))
        }
    };
    let mut settings = shared.dice.settings().without_faults();
    let mut skew = None;
    let mut pause = None;
    for (name, value) in &map {
        let as_u64 = || {
            value.as_u64().ok_or_else(|| {
                Answer::invalid(name, format!("{name} must be a non-negative integer"))
            })
        };
        match name.as_str() {
            "delay_ms" => settings.delay_ms = as_u64()?,
            "retry_after_seconds" => settings.retry_after_seconds = as_u64()?,
            "processing_delay_ms" => pause = Some(as_u64()?),
            "clock_skew_seconds" => {
                skew = Some(value.as_i64().ok_or_else(|| {
                    Answer::invalid(name, "clock_skew_seconds must be an integer")
                })?)
            }
            _ => {
                let kind = FaultKind::from_name(name)
                    .ok_or_else(|| Answer::invalid(name, format!("unknown fault kind {name:?}")))?;
                let p = value
                    .as_f64()
                    .ok_or_else(|| Answer::invalid(name, "a probability must be a number"))?;
                settings
                    .set(kind, p)
                    .map_err(|e| Answer::invalid(name, e.message()))?;
            }
        }
    }
    shared.dice.set_settings(settings);
    if let Some(s) = skew {
        shared.clock.set_skew(s);
    }
    if let Some(p) = pause {
        shared.processing_delay_ms.store(p, Ordering::Relaxed);
    }
    Ok(())
}

/// Answers one control route.
pub(crate) fn handle(shared: &Shared, route: &Route, body: &[u8]) -> Answer {
    match route {
        Route::Stats => {
            let stats = shared.lock().snapshot();
            Answer::json(200, &json!(stats))
        }
        Route::Reset => {
            shared.lock().reset();
            Answer::json(200, &json!({"reset": true}))
        }
        Route::GetFaults => Answer::json(200, &faults_json(shared)),
        Route::SetFaults => match set_faults(shared, body) {
            Ok(()) => Answer::json(200, &faults_json(shared)),
            Err(answer) => answer,
        },
        _ => Answer::error(500, "internal_error", "not a control route"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names() {
        for ok in [
            "127.0.0.1",
            "127.0.0.1:80",
            "127.9.9.9:1",
            "localhost",
            "LOCALHOST:8080",
            "localhost.",
            "[::1]",
            "[::1]:9",
        ] {
            assert!(is_loopback_authority(ok), "{ok}");
        }
        for no in [
            "",
            "evil.example",
            "localhost.evil.example",
            "127.0.0.1.evil.example",
            "10.0.0.1",
            "::1",
            "[::2]:1",
            "127.0.0.1:x",
            "0.0.0.0",
        ] {
            assert!(!is_loopback_authority(no), "{no}");
        }
        assert!(is_loopback_origin("http://localhost:3000"));
        assert!(!is_loopback_origin("null"));
        assert!(!is_loopback_origin("http://a@127.0.0.1"));
        assert!(!is_loopback_origin("file://"));
    }
}
