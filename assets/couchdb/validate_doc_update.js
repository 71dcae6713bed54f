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
  // A deleted link's tombstone keeps its key from ever being handed out
  // again (`qrtag delete`): only an admin may revive or remove one.
  var tombstone = !!oldDoc && !oldDoc._deleted && oldDoc.deleted_at !== undefined && oldDoc.deleted_at !== null;
  if (tombstone && !isAdmin && (newDoc._deleted === true || newDoc.deleted_at !== oldDoc.deleted_at)) {
    throw ({ forbidden: 'the key ' + newDoc._id + ' was deleted; a deleted key is never reused, so a printed tag cannot lead somewhere else' });
  }
  if (newDoc._deleted === true) {
    return;
  }

  if (!/^[A-Za-z0-9_-]{1,64}(\/[A-Za-z0-9_-]{1,64})*$/.test(newDoc._id)) {
    refuse('the _id must be 1 to 64 characters of [A-Za-z0-9_-], or several such parts joined by "/"');
  }
  // LinkKey's MAX_KEY_LEN (src/link_key.rs).
  if (newDoc._id.length > 256) {
    refuse('the _id is at most 256 characters');
  }

  var url = newDoc.url;
  if (typeof url !== 'string') {
    refuse('"url" must be a string');
  }
  if (url.length === 0 || /[\s\u0000-\u001f\u007f-\u009f]/.test(url)) {
    refuse('"url" must not be empty or contain spaces or control characters');
  }
  // The same rules as the service's Destination::parse (src/destination.rs):
  // what a person reads in the document is where a scan goes.
  // Invisible and text-direction characters (is_invisible there), as UTF-16.
  if (/[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb]|\ud834[\udd73-\udd7a]|[\udb40-\udb43][\udc00-\udfff]/.test(url)) {
    refuse('"url" must not contain invisible or text-direction characters (percent-encode them)');
  }
  if (url.indexOf('\\') !== -1) {
    refuse('"url" must not contain a backslash');
  }
  if (url.charAt(0) === '/') {
    if (url.charAt(1) === '/') {
      refuse('a "url" path must start with exactly one "/"');
    }
    // "/..//evil.example" and "/%2e//evil.example" normalise to "//evil.example".
    var segments = url.split(/[?#]/)[0].split('/');
    for (var s = 0; s < segments.length; s++) {
      var seg = segments[s].replace(/%2e/gi, '.');
      if (seg === '.' || seg === '..') {
        refuse('a "url" path must not contain "." or ".." segments');
      }
    }
  } else {
    var m = /^https?:\/\/([^\/?#]*)([\/?#]|$)/.exec(url);
    if (!m || m[1].length === 0) {
      refuse('"url" must be an absolute http(s) URL with a host, or a path starting with one "/"');
    }
    if (m[1].indexOf('@') !== -1) {
      refuse('"url" must not contain a user name or password (an "@" before the host)');
    }
    // The host as it is served: lower-case ASCII (IDNA "xn--" labels, not
    // Unicode), a dotted-decimal IPv4 address or a bracketed IPv6 one.
    var hm = /^(\[[0-9a-f:.]+\]|[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?)(:[1-9][0-9]{0,4})?$/.exec(m[1]);
    if (!hm) {
      refuse('the host in "url" must be written as it is served: lower case, IDNA (xn--) for non-ASCII names, a port without leading zeros');
    }
    var labels = hm[1].replace(/\.$/, '').split('.');
    if (/^(0x[0-9a-f]*|[0-9]+)$/.test(labels[labels.length - 1]) &&
        !/^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$/.test(hm[1])) {
      refuse('an IPv4 host in "url" must be written as four decimal numbers, e.g. 192.0.2.1');
    }
  }

  var inactive = newDoc.inactive;
  if (inactive !== undefined && inactive !== null && typeof inactive !== 'boolean') {
    refuse('"inactive" must be true or false');
  }

  var RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
  // The same list as link::TIME_FIELDS (src/link.rs), plus expires.
  var times = ['expires', 'created_at', 'changed_at', 'deleted_at', 'invalidated_at'];
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
