//! Masking a decision before it leaves the process, as OPA masks decision logs: each configured
//! JSON pointer (RFC 6901) into the event's `input` or `result` is removed when present, and the
//! pointers that removed something are listed in the event's `erased`.

use serde_json::Value as Json;

/// Checks the configured pointers: each must start with `/input` or `/result`, as in OPA.
pub fn check(pointers: &[String]) -> Result<(), String> {
    for p in pointers {
        let ok = ["/input", "/result"]
            .iter()
            .any(|root| p == root || p.starts_with(&format!("{root}/")));
        if !ok {
            return Err(format!(
                "mask {p:?}: a mask is a JSON pointer under /input or /result (e.g. /input/arguments/content)"
            ));
        }
    }
    Ok(())
}

/// Removes what each pointer names from `event`, and lists in `erased` the ones that did.
pub fn apply(event: &mut Json, pointers: &[String]) {
    let mut erased = Vec::new();
    for pointer in pointers {
        let Some((parent, last)) = pointer.rsplit_once('/') else {
            continue;
        };
        // RFC 6901: `~1` is `/` and `~0` is `~`, in that order.
        let key = last.replace("~1", "/").replace("~0", "~");
        let removed = match event.pointer_mut(parent) {
            Some(Json::Object(map)) => map.remove(&key).is_some(),
            Some(Json::Array(items)) => match key.parse::<usize>() {
                Ok(i) if i < items.len() => {
                    items.remove(i);
                    true
                }
                _ => false,
            },
            _ => false,
        };
        if removed {
            erased.push(Json::String(pointer.clone()));
        }
    }
    if !erased.is_empty()
        && let Some(map) = event.as_object_mut()
    {
        map.insert("erased".into(), Json::Array(erased));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn masked_fields_are_removed_and_listed_in_erased() {
        let mut e = json!({"input": {"arguments": {"content": "s3cret", "path": "a"}, "a/b": 1}, "result": {}});
        apply(
            &mut e,
            &[
                "/input/arguments/content".into(),
                "/input/a~1b".into(),
                "/input/absent".into(),
            ],
        );
        assert_eq!(
            e,
            json!({"input": {"arguments": {"path": "a"}}, "result": {},
                   "erased": ["/input/arguments/content", "/input/a~1b"]})
        );
    }

    #[test]
    fn masks_outside_input_and_result_are_refused() {
        assert!(check(&["/input/arguments/content".into(), "/result".into()]).is_ok());
        assert!(check(&["/labels/id".into()]).is_err());
        assert!(check(&["/inputs".into()]).is_err());
    }
}
