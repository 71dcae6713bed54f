function (newDoc, oldDoc, userCtx, secObj) {
  // Installed as _design/qrtag in the history database (LINKS-history) by
  // `qrtag setup` (issue 35). A link's history is append-only, enforced
  // here for everyone: an entry is written once, never changed, and
  // deleted only when pruned past the bound (below). One document per
  // entry (src/store/couch/history.rs):
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
  // Issue 35: the bound. An entry is deleted only by pruning: its
  // tombstone names, in pruned_by, a newer entry of the same link (the one
  // whose recording put it past the last 200). Whether 200 newer entries
  // exist is not something a validation function can read; the name makes
  // a deletion say why, and one with no newer entry is refused.
  if (newDoc._deleted === true && oldDoc && !oldDoc._deleted) {
    var at = newDoc._id.lastIndexOf(':');
    var by = newDoc.pruned_by;
    var gen = /^\d{10}$/;
    if (at > 0 && typeof by === 'string' && by.lastIndexOf(':') === at &&
        by.slice(0, at) === newDoc._id.slice(0, at) &&
        gen.test(by.slice(at + 1)) && gen.test(newDoc._id.slice(at + 1)) &&
        by.slice(at + 1) > newDoc._id.slice(at + 1)) {
      return;
    }
    throw ({ forbidden: 'a history entry is deleted only past the bound, by a tombstone whose pruned_by names a newer entry of the same link' });
  }
  if (oldDoc || newDoc._deleted === true) {
    throw ({ forbidden: 'a link history is append-only: an entry is never changed or deleted' });
  }
  if (!isObject(newDoc.entry) || typeof newDoc.entry.n !== 'number' ||
      !isObject(newDoc.entry.actor) || !isObject(newDoc.after)) {
    throw ({ forbidden: 'not a qrtag history entry: it needs entry.n, entry.actor and after' });
  }
}
