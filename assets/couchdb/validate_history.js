function (newDoc, oldDoc, userCtx, secObj) {
  // Installed as _design/qrtag in the history database (LINKS-history) by
  // `qrtag setup` (issue 35). A link's history is append-only, enforced
  // here for everyone: an entry is written once, never changed or
  // deleted. One document per entry (src/store/couch/history.rs):
  // {"_id": KEY:GENERATION, "entry": {"n": ..., "actor": {"kind": ...}, ...},
  //  "after": {fields}}. Plain ES5: CouchDB's JavaScript engine may be old.
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
    throw ({ forbidden: 'a link history is append-only: an entry is never changed or deleted' });
  }
  if (!isObject(newDoc.entry) || typeof newDoc.entry.n !== 'number' ||
      !isObject(newDoc.entry.actor) || !isObject(newDoc.after)) {
    throw ({ forbidden: 'not a qrtag history entry: it needs entry.n, entry.actor and after' });
  }
}
