//! A command given a key that is no link: the keys the person may have
//! meant, drawn from the store ([`crate::link::key_suggest`]).

use super::Cli;
use crate::link::key_suggest::{SUGGESTIONS, did_you_mean, suggest};
use crate::links::LinkError;
use crate::store::{self, StoreError};

/// `result`, with a "no link" failure said as `no link KEY (did you mean
/// …?)`. Finding suggestions reads every key, which is only worth it once
/// the command has failed; if that read fails too, the plain message
/// stands.
pub async fn explain<T>(cli: &Cli, result: anyhow::Result<T>) -> anyhow::Result<T> {
    let err = match result {
        Ok(value) => return Ok(value),
        Err(err) => err,
    };
    let Some(key) = err.chain().find_map(not_found) else {
        return Err(err);
    };
    let keys = match cli.open_store(store::Access::Read) {
        Ok(store) => store.keys().await.unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let suggestions = suggest(&key, keys.iter().map(String::as_str), SUGGESTIONS);
    Err(anyhow::anyhow!(
        "no link {key}{}",
        did_you_mean(&suggestions)
    ))
}

/// The key of a "no link" error, from the link layer or (`edit`) the store.
fn not_found(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    if let Some(LinkError::NotFound(key)) = e.downcast_ref::<LinkError>() {
        return Some(key.as_str().to_owned());
    }
    match e.downcast_ref::<StoreError>() {
        Some(StoreError::NotFound(key)) => Some(key.clone()),
        _ => None,
    }
}
