//! Builds the document of one case of tests/vectors/settings-v1.json, the
//! same way in the core's and the C ABI's parity tests.

use serde_json::{Map, Value};

/// `doc` with the setting at the dotted `path` set to `value`, or removed
/// for `None`.
pub fn put(doc: &mut Value, path: &str, value: Option<&Value>) {
    let mut keys: Vec<&str> = path.split('.').collect();
    let last = keys.pop().unwrap();
    let mut at = doc;
    for key in keys {
        at = at
            .as_object_mut()
            .unwrap()
            .entry(key)
            .or_insert_with(|| Value::Object(Map::new()));
    }
    let map = at.as_object_mut().unwrap();
    match value {
        Some(v) => map.insert(last.to_owned(), v.clone()),
        None => map.remove(last),
    };
}

/// The document a case asks for: `base`, without the setting, with every
/// `with` setting, then the setting's `value` when given.
pub fn document(base: &Value, case: &Value) -> Value {
    let mut doc = base.clone();
    let setting = case["setting"].as_str().unwrap();
    put(&mut doc, setting, None);
    if let Some(with) = case.get("with").and_then(Value::as_object) {
        for (path, value) in with {
            put(&mut doc, path, Some(value));
        }
    }
    if let Some(value) = case.get("value") {
        put(&mut doc, setting, Some(value));
    }
    doc
}
