function (newDoc, oldDoc, userCtx, secObj) {
  // Installed as _design/qrtag by `qrtag setup`. Keeps hand edits (Fauxton,
  // curl) to the shape qrtag reads: {"url": ..., "inactive": false,
  // "expires": "2026-12-31T23:59:59Z"}. The service still checks every
  // document itself and skips what it cannot use; this refuses mistakes at
  // the moment they are made, where the person making them sees why.
  // Plain ES5: CouchDB's JavaScript engine may be old.
  var EDITOR_ROLE = 'qrtag_editor';

  function has(list, x) {
    return !!list && typeof list.indexOf === 'function' && list.indexOf(x) !== -1;
  }
  function refuse(why) {
    throw ({ forbidden: 'not a qrtag link document: ' + why });
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
  if (!isAdmin && !has(roles, EDITOR_ROLE)) {
    throw ({ forbidden: 'only admins and the ' + EDITOR_ROLE + ' role may change links' });
  }
  if (newDoc._deleted === true) {
    return;
  }

  if (!/^[A-Za-z0-9_-]{1,64}(\/[A-Za-z0-9_-]{1,64})*$/.test(newDoc._id)) {
    refuse('the _id must be 1 to 64 characters of [A-Za-z0-9_-], or several such parts joined by "/"');
  }

  var url = newDoc.url;
  if (typeof url !== 'string') {
    refuse('"url" must be a string');
  }
  if (url.length === 0 || /[\s\u0000-\u001f\u007f-\u009f]/.test(url)) {
    refuse('"url" must not be empty or contain spaces or control characters');
  }
  if (url.charAt(0) === '/') {
    if (url.charAt(1) === '/' || url.charAt(1) === '\\') {
      refuse('a "url" path must start with exactly one "/"');
    }
  } else if (!/^https?:\/\/([^\/\\?#]*@)?(\[[0-9A-Fa-f:.]+\]|[^\/\\?#@:\[\]]+)(:[0-9]*)?([\/?#]|$)/.test(url)) {
    refuse('"url" must be an absolute http(s) URL with a host, or a path starting with one "/"');
  }

  var inactive = newDoc.inactive;
  if (inactive !== undefined && inactive !== null && typeof inactive !== 'boolean') {
    refuse('"inactive" must be true or false');
  }

  var RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
  var times = ['expires', 'created_at', 'invalidated_at'];
  for (var t = 0; t < times.length; t++) {
    var time = newDoc[times[t]];
    if (time !== undefined && time !== null && (typeof time !== 'string' || !RFC3339.test(time))) {
      refuse('"' + times[t] + '" must be an RFC 3339 time, e.g. 2026-12-31T23:59:59Z');
    }
  }

  // Where a DIDComm link came from (README, DIDComm): who asked (a DID or
  // "token"), its goal code and the request's thread; who invalidated it.
  var texts = ['created_by', 'goal_code', 'thid', 'invalidated_by'];
  for (var j = 0; j < texts.length; j++) {
    var text = newDoc[texts[j]];
    if (text !== undefined && text !== null && typeof text !== 'string') {
      refuse('"' + texts[j] + '" must be a string');
    }
  }
}
