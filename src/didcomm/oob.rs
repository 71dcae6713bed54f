//! Out-of-band invitations carried in a URL's `oob` (v1) or `_oob` (v2)
//! query parameter: base64url (some agents send standard base64, padded or
//! not) of the invitation's JSON.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use serde_json::Value;

/// The invitation in an `oob`/`_oob` value, if it is base64 of a JSON object.
pub fn decode(param: &str) -> Option<Value> {
    let trimmed = param.trim().trim_end_matches('=');
    let bytes = URL_SAFE_NO_PAD
        .decode(trimmed)
        .or_else(|_| STANDARD_NO_PAD.decode(trimmed))
        .ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.is_object().then_some(v)
}

/// The invitation in a URL's `oob` or `_oob` query parameter.
pub fn invitation_in(url: &str) -> Option<Value> {
    let u = url::Url::parse(url).ok()?;
    let value = u
        .query_pairs()
        .find(|(k, _)| k == "oob" || k == "_oob")
        .map(|(_, v)| v.into_owned())?;
    decode(&value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_alphabets_and_garbage() {
        let inv = r#"{"@type":"https://didcomm.org/out-of-band/1.1/invitation","@id":"i-1?>"}"#;
        let url_safe = URL_SAFE_NO_PAD.encode(inv);
        let standard = base64::engine::general_purpose::STANDARD.encode(inv);
        assert_ne!(url_safe, standard.trim_end_matches('='));
        for enc in [&url_safe, &standard] {
            assert_eq!(
                decode(enc).and_then(|v| v["@id"].as_str().map(str::to_owned)),
                Some("i-1?>".into())
            );
        }
        let url = format!("https://a.example/x?c=1&oob={url_safe}");
        assert!(invitation_in(&url).is_some());
        assert_eq!(decode("!!!"), None);
        assert_eq!(decode(&URL_SAFE_NO_PAD.encode("[1]")), None);
        assert_eq!(invitation_in("https://a.example/?x=1"), None);
    }
}
