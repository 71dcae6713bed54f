//! The least role each REST operation asks of its key (issue 35), pure:
//! the handlers admit a request with these, and the OpenAPI document
//! states each as `x-qrtag-role` from the same table, so a client (and a
//! test) reads from the document which key an operation takes.

use serde_json::{Value, json};

use crate::values::role::Role;

/// Links, QR images, print-ready PDFs and scans: a viewer's.
pub const READ: Role = Role::Viewer;
/// Create, bulk create, edit (repoint, rules, state): an editor's.
pub const WRITE: Role = Role::Editor;

/// Every operation by its `operationId`. A new operation without a row
/// here fails the unit test below, so none is left unstated.
pub const BY_OPERATION: [(&str, Role); 13] = [
    ("list", READ),
    ("create", WRITE),
    ("bulk", WRITE),
    ("get", READ),
    ("edit", WRITE),
    ("print_link_pdf", READ),
    ("qr_png_doc", READ),
    ("qr_svg_doc", READ),
    ("of_link", READ),
    ("print_run_pdf", READ),
    ("all", READ),
    // Issue 35: a link's history, and one step back.
    ("link_history", READ),
    ("revert", WRITE),
];

/// The role an operation needs, by its `operationId`.
pub fn of(operation_id: &str) -> Option<Role> {
    BY_OPERATION
        .iter()
        .find(|(id, _)| *id == operation_id)
        .map(|(_, role)| *role)
}

/// Writes each operation's role into the document: `x-qrtag-role`, and a
/// sentence at the end of its description for people.
pub fn add_to(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for op in paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|ops| ops.values_mut())
        .filter_map(Value::as_object_mut)
    {
        let Some(role) = op.get("operationId").and_then(Value::as_str).and_then(of) else {
            continue;
        };
        op.insert("x-qrtag-role".into(), json!(role.as_str()));
        let said = format!(
            "Needs a key of the {role} role or above ({}).",
            scopes_for(role)
        );
        let description = match op.get("description").and_then(Value::as_str) {
            Some(d) if !d.is_empty() => format!("{d}\n\n{said}"),
            _ => said,
        };
        op.insert("description".into(), json!(description));
    }
}

/// The `qrtag api-key create --scope` values whose keys hold `role`.
fn scopes_for(role: Role) -> &'static str {
    match role {
        Role::Viewer => "scope read or write",
        Role::Editor => "scope write",
        Role::Admin => "no scope yet",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_in_the_document_states_its_role() {
        let doc: Value = serde_json::from_str(&super::super::openapi::document()).expect("json");
        let mut seen = 0;
        for ops in doc["paths"].as_object().expect("paths").values() {
            for (method, op) in ops.as_object().expect("operations") {
                let id = op["operationId"].as_str().expect("operationId");
                let role = of(id).unwrap_or_else(|| panic!("{method} {id} has no role"));
                assert_eq!(op["x-qrtag-role"], role.as_str());
                seen += 1;
            }
        }
        assert_eq!(
            seen,
            BY_OPERATION.len(),
            "a row for an operation that is gone"
        );
    }
}
