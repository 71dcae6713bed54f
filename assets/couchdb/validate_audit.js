function (newDoc, oldDoc, userCtx, secObj) {
  // Installed as _design/qrtag in the audit database (LINKS-audit) by
  // `qrtag setup` (issue 35). The audit log is append-only, and CouchDB
  // enforces it here, for everyone, server admins included: an entry may
  // be written once and is never changed or deleted. (A server admin can
  // still replace this design document; that is a change of the
  // deployment, not of the log.) One document per entry
  // (src/store/couch/audit.rs): {"_id": ID, "at": RFC 3339,
  // "actor": {"kind": ...}, "surface": ..., "event": {"kind": ...}}.
  // Plain ES5: CouchDB's JavaScript engine may be old.
  var roles = (userCtx && userCtx.roles) || [];
  function isObject(x) {
    return typeof x === 'object' && x !== null && !(x instanceof Array);
  }
  if (newDoc._id.indexOf('_design/') === 0) {
    if (roles.indexOf('_admin') === -1) {
      throw ({ forbidden: 'only admins may change design documents' });
    }
    return;
  }
  if (oldDoc || newDoc._deleted === true) {
    throw ({ forbidden: 'the audit log is append-only: an entry is never changed or deleted' });
  }
  if (typeof newDoc.at !== 'string' || typeof newDoc.surface !== 'string' ||
      !isObject(newDoc.actor) || typeof newDoc.actor.kind !== 'string' ||
      !isObject(newDoc.event) || typeof newDoc.event.kind !== 'string') {
    throw ({ forbidden: 'not a qrtag audit entry: it needs at, surface, actor.kind and event.kind' });
  }
}
