function (newDoc, oldDoc, userCtx, secObj) {
  // Installed as _design/qrtag in the API keys database (LINKS-keys) by
  // `qrtag setup`, whose _security admits only the qrtag_editor and
  // qrtag_admin roles (and admins): the service's reader account can
  // neither read nor write a key.
  // This keeps the members to what `qrtag api-key` does: an editor creates
  // a key and revokes it; a key is never changed or un-revoked, and never
  // deleted, except by an admin. One document per key (src/store/couch_keys.rs):
  // {"_id": ID, "name": ..., "scope": "read"|"write", "hash": SHA-256 hex,
  //  "created_at": RFC 3339, "revoked_at": RFC 3339 once revoked}.
  // Plain ES5: CouchDB's JavaScript engine may be old.
  var EDITOR_ROLE = 'qrtag_editor';
  var QRTAG_ADMIN_ROLE = 'qrtag_admin';

  function has(list, x) {
    return !!list && typeof list.indexOf === 'function' && list.indexOf(x) !== -1;
  }
  function refuse(why) {
    throw ({ forbidden: 'not a qrtag API key document: ' + why });
  }

  var roles = (userCtx && userCtx.roles) || [];
  var admins = (secObj && secObj.admins) || {};
  var isAdmin = has(roles, '_admin') || has(admins.names, userCtx && userCtx.name);
  for (var i = 0; i < roles.length; i++) {
    if (has(admins.roles, roles[i])) {
      isAdmin = true;
    }
  }

  if (newDoc._id.indexOf('_design/') === 0) {
    if (!isAdmin) {
      throw ({ forbidden: 'only admins may change design documents' });
    }
    return;
  }
  // Issue 35: qrtag's admins (QRTAG_ADMIN_ROLE) manage keys as editors do.
  if (!isAdmin && !has(roles, EDITOR_ROLE) && !has(roles, QRTAG_ADMIN_ROLE)) {
    throw ({ forbidden: 'only admins and the ' + EDITOR_ROLE + ' and ' + QRTAG_ADMIN_ROLE +
      ' roles may change API keys' });
  }
  if (newDoc._deleted === true) {
    if (!isAdmin) {
      throw ({ forbidden: 'an API key is revoked (qrtag api-key revoke), not deleted; only an admin may delete one' });
    }
    return;
  }

  if (!/^[A-Za-z0-9]{8}$/.test(newDoc._id)) {
    refuse('the _id must be the key\'s 8 letters and digits');
  }
  if (typeof newDoc.name !== 'string' || newDoc.name.length === 0) {
    refuse('"name" must be a non-empty string');
  }
  if (newDoc.scope !== 'read' && newDoc.scope !== 'write') {
    refuse('"scope" must be "read" or "write"');
  }
  if (typeof newDoc.hash !== 'string' || !/^[0-9a-f]{64}$/.test(newDoc.hash)) {
    refuse('"hash" must be a SHA-256 in lower-case hex');
  }
  var RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
  if (typeof newDoc.created_at !== 'string' || !RFC3339.test(newDoc.created_at)) {
    refuse('"created_at" must be an RFC 3339 time');
  }
  var revoked = newDoc.revoked_at;
  if (revoked !== undefined && revoked !== null && (typeof revoked !== 'string' || !RFC3339.test(revoked))) {
    refuse('"revoked_at" must be an RFC 3339 time');
  }

  // Issue 35 (i35-users): the user the key belongs to, when named, is a
  // CouchDB user name; it never changes (below).
  if (newDoc.user !== undefined && (typeof newDoc.user !== 'string' || newDoc.user.length === 0)) {
    refuse('"user" must be a non-empty string');
  }
  if (oldDoc && !oldDoc._deleted && !isAdmin && newDoc.user !== oldDoc.user) {
    throw ({ forbidden: 'the API key ' + newDoc._id + ' exists: it can only be revoked, its "user" cannot change' });
  }

  // A stored key is only ever revoked, and a revocation is final.
  if (oldDoc && !oldDoc._deleted && !isAdmin) {
    if (oldDoc.revoked_at !== undefined && oldDoc.revoked_at !== null) {
      throw ({ forbidden: 'the API key ' + newDoc._id + ' was revoked; a revocation is final (only an admin may change it)' });
    }
    var fixed = ['name', 'scope', 'hash', 'created_at'];
    for (var f = 0; f < fixed.length; f++) {
      if (newDoc[fixed[f]] !== oldDoc[fixed[f]]) {
        throw ({ forbidden: 'the API key ' + newDoc._id + ' exists: it can only be revoked, its "' + fixed[f] + '" cannot change' });
      }
    }
  }
}
