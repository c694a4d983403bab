//! The `/_mock` control routes: stats, reset, faults.

use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use crate::answer::Answer;
use crate::clock::ClockSetting;
use crate::faults::{FaultKind, FaultSettings};
use crate::handler::Shared;
use crate::routes::Route;

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
/// probability and every unlisted kind 0; `delay_ms`, `clock_skew_seconds`
/// and `processing_delay_ms` change only when present.
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
    let mut settings = FaultSettings::none();
    settings.delay_ms = shared.dice.settings().delay_ms;
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
