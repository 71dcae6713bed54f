function (newDoc, oldDoc, userCtx, secObj) {
  // Installed as _design/qrtag by `qrtag setup`. Keeps hand edits (Fauxton,
  // curl) to the shape qrtag reads: {"url": ..., "inactive": false,
  // "expires": "2026-12-31T23:59:59Z"}. The service still checks every
  // document itself and skips what it cannot use; this refuses mistakes at
  // the moment they are made, where the person making them sees why.
  // Plain ES5: CouchDB's JavaScript engine may be old.
  var EDITOR_ROLE = 'qrtag_editor';
  // Issue 35: qrtag's admin role, which alone (with CouchDB's admins) may
  // delete a link, as the console and the CLI's admins do.
  var ADMIN_ROLE = 'qrtag_admin';

  function has(list, x) {
    return !!list && typeof list.indexOf === 'function' && list.indexOf(x) !== -1;
  }
  // UTF-8 bytes of a string, as Rust's str::len counts them; a string of
  // more UTF-16 units than `cap` has more bytes too, and is not walked.
  function utf8Length(s, cap) {
    if (s.length > cap) {
      return s.length;
    }
    var n = 0;
    for (var k = 0; k < s.length; k++) {
      var c = s.charCodeAt(k);
      n += c < 0x80 ? 1 : (c < 0x800 || (c >= 0xd800 && c <= 0xdfff)) ? 2 : 3;
    }
    return n;
  }
  // Characters (code points), as Rust's chars().count(): a surrogate pair
  // is one.
  function charCount(s) {
    var n = 0;
    for (var k = 0; k < s.length; k++) {
      var c = s.charCodeAt(k);
      if (c < 0xdc00 || c > 0xdfff) {
        n++;
      }
    }
    return n;
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
  var mayDelete = isAdmin || has(roles, ADMIN_ROLE);
  if (!mayDelete && !has(roles, EDITOR_ROLE)) {
    throw ({ forbidden: 'only admins and the ' + EDITOR_ROLE + ' and ' + ADMIN_ROLE + ' roles may change links' });
  }
  // Issue 35: making a tombstone (qrtag delete) is an admin's right. An
  // editor's own `_deleted` of a document it just created (a create taken
  // back) stays allowed: it removes no key anyone was served.
  var stamped = newDoc.deleted_at !== undefined && newDoc.deleted_at !== null;
  var wasStamped = !!oldDoc && !oldDoc._deleted && oldDoc.deleted_at !== undefined && oldDoc.deleted_at !== null;
  if (!mayDelete && newDoc._deleted !== true && stamped && !wasStamped) {
    throw ({ forbidden: 'only admins and the ' + ADMIN_ROLE + ' role may delete links' });
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
  // destination::MAX_DESTINATION (src/destination.rs), checked first so
  // a huge text costs no pattern below.
  var MAX_DESTINATION = 8192;
  if (utf8Length(url, MAX_DESTINATION) > MAX_DESTINATION) {
    refuse('"url" may be at most ' + MAX_DESTINATION + ' bytes');
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
  // At most link::MAX_TEXT bytes each (src/link.rs).
  var MAX_TEXT = 4096;
  var texts = ['created_by', 'goal_code', 'thid', 'invalidated_by'];
  for (var j = 0; j < texts.length; j++) {
    var text = newDoc[texts[j]];
    if (text !== undefined && text !== null && typeof text !== 'string') {
      refuse('"' + texts[j] + '" must be a string');
    }
    if (typeof text === 'string' && utf8Length(text, MAX_TEXT) > MAX_TEXT) {
      refuse('"' + texts[j] + '" may be at most ' + MAX_TEXT + ' bytes');
    }
  }

  // link::MAX_NOTES characters (src/link.rs); notes someone stored as
  // another JSON value are counted as their JSON text, as qrtag shows them.
  var MAX_NOTES = 2000;
  var notes = newDoc.notes;
  if (notes !== undefined && notes !== null) {
    var notesText = typeof notes === 'string' ? notes : JSON.stringify(notes);
    if (notesText.length > 2 * MAX_NOTES || charCount(notesText) > MAX_NOTES) {
      refuse('"notes" may be at most ' + MAX_NOTES + ' characters');
    }
  }

  // Where a dead link's scans go (issue 33): link::fallback_url
  // (src/link/mod.rs), Destination::parse_absolute, an absolute http(s)
  // URL held to the rules of "url", never a path.
  var fallback = newDoc.fallback_url;
  if (fallback !== undefined && fallback !== null) {
    if (typeof fallback !== 'string') {
      refuse('"fallback_url" must be a string');
    }
    if (utf8Length(fallback, MAX_DESTINATION) > MAX_DESTINATION) {
      refuse('"fallback_url" may be at most ' + MAX_DESTINATION + ' bytes');
    }
    var fm = /^https?:\/\/([^\/?#]*)([\/?#]|$)/.exec(fallback);
    if (!fm || fm[1].length === 0) {
      refuse('"fallback_url" must be an absolute http(s) URL with a host, not a path');
    }
    if (/[\s\u0000-\u001f\u007f-\u009f\\]/.test(fallback) || fm[1].indexOf('@') !== -1 ||
        /[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb]/.test(fallback) ||
        !/^(\[[0-9a-f:.]+\]|[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?)(:[1-9][0-9]{0,4})?$/.test(fm[1])) {
      refuse('"fallback_url" must be written as "url" is: no spaces, backslashes, invisible characters or user name, the host as it is served');
    }
  }

  // Issue 33: the link's title, link::MAX_TITLE characters
  // (src/link/title.rs) counted as Rust counts them: code points, so a
  // surrogate pair (an emoji) is one (charCount), and a string of more than
  // twice as many UTF-16 units is over the limit without being walked.
  // Unlike notes, a title must be a string.
  var MAX_TITLE = 200;
  var title = newDoc.title;
  if (title !== undefined && title !== null) {
    if (typeof title !== 'string') {
      refuse('"title" must be a string');
    }
    if (title.length > 2 * MAX_TITLE || charCount(title) > MAX_TITLE) {
      refuse('"title" may be at most ' + MAX_TITLE + ' characters');
    }
  }

  // Issue 33: by which surface the link was made and last changed, the
  // names of link::Via (src/link/via.rs), as link::check_via takes them.
  var VIA = ['cli', 'edit', 'console', 'api', 'didcomm', 'import'];
  var vias = ['created_via', 'changed_via'];
  for (var w = 0; w < vias.length; w++) {
    var via = newDoc[vias[w]];
    if (via !== undefined && via !== null && (typeof via !== 'string' || VIA.indexOf(via) === -1)) {
      refuse('"' + vias[w] + '" must be one of ' + VIA.join(', '));
    }
  }

  // Issue 34: a link's rules (src/link/rules/), the shape Rules::from_json
  // takes: at most MAX_RULES objects, each a "url" (an absolute http(s)
  // URL held to the rules of "fallback_url") and at least one condition,
  // no other field, no empty list. Each refusal names the field as the
  // core does (rules[2].hours). What ES5 cannot know (a time zone's name,
  // a country's place on the ISO list) is left to the service, which
  // serves such a link with its "url" alone.
  var rules = newDoc.rules;
  if (rules !== undefined && rules !== null) {
    var MAX_RULES = 32;
    var RULE_FIELDS = ['url', 'os', 'class', 'country', 'lang', 'from', 'until', 'days', 'hours', 'tz', 'split'];
    var NAMES = {
      os: ['ios', 'ipados', 'android', 'other'],
      'class': ['phone', 'tablet', 'desktop'],
      days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']
    };
    var ruleRefuse = function (path, why) {
      throw ({ forbidden: 'not a qrtag link document: ' + path + ': ' + why });
    };
    // Milliseconds of an RFC 3339 time, or NaN; by hand, as Date.parse
    // of ES5 knows only one spelling.
    var instant = function (v) {
      var tm = typeof v === 'string' &&
        /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/.exec(v);
      if (!tm || +tm[2] < 1 || +tm[2] > 12 || +tm[3] < 1 || +tm[3] > 31 || +tm[4] > 23 ||
          +tm[5] > 59 || +tm[6] > 60 || +tm[10] > 23 || +tm[11] > 59) {
        return NaN;
      }
      var ms = Date.UTC(+tm[1], +tm[2] - 1, +tm[3], +tm[4], +tm[5], +tm[6]) +
        (tm[7] ? Math.floor(+('0' + tm[7]) * 1000) : 0);
      if (tm[9]) {
        var offset = (+tm[10] * 60 + +tm[11]) * 60000;
        ms += tm[9] === '+' ? -offset : offset;
      }
      return ms;
    };
    var HHMM = /^([01][0-9]|2[0-3]):[0-5][0-9]$/;
    if (Object.prototype.toString.call(rules) !== '[object Array]') {
      ruleRefuse('rules', 'must be an array of rules');
    }
    if (rules.length > MAX_RULES) {
      ruleRefuse('rules', 'at most ' + MAX_RULES + ' rules a link, not ' + rules.length);
    }
    for (var r = 0; r < rules.length; r++) {
      var rule = rules[r];
      var at = 'rules[' + r + ']';
      if (typeof rule !== 'object' || rule === null || Object.prototype.toString.call(rule) === '[object Array]') {
        ruleRefuse(at, 'a rule must be an object');
      }
      for (var field in rule) {
        if (Object.prototype.hasOwnProperty.call(rule, field) && RULE_FIELDS.indexOf(field) === -1) {
          ruleRefuse(at + '.' + (field.length > 40 ? field.substring(0, 40) + '...' : field),
            'unknown field (a rule has ' + RULE_FIELDS.join(', ') + ')');
        }
      }
      var ru = rule.url;
      if (ru === undefined) {
        ruleRefuse(at + '.url', 'a rule needs a "url", the destination it gives');
      }
      if (typeof ru !== 'string') {
        ruleRefuse(at + '.url', 'must be a string');
      }
      if (utf8Length(ru, MAX_DESTINATION) > MAX_DESTINATION) {
        ruleRefuse(at + '.url', 'may be at most ' + MAX_DESTINATION + ' bytes');
      }
      var rm = /^https?:\/\/([^\/?#]*)([\/?#]|$)/.exec(ru);
      if (!rm || rm[1].length === 0) {
        ruleRefuse(at + '.url', 'must be an absolute http(s) URL with a host, not a path');
      }
      if (/[\s\u0000-\u001f\u007f-\u009f\\]/.test(ru) || rm[1].indexOf('@') !== -1 ||
          /[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb]/.test(ru) ||
          !/^(\[[0-9a-f:.]+\]|[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?)(:[1-9][0-9]{0,4})?$/.test(rm[1])) {
        ruleRefuse(at + '.url', 'must be written as "url" is: no spaces, backslashes, invisible characters or user name, the host as it is served');
      }
      var conditions = 0;
      var lists = ['os', 'class', 'country', 'lang', 'days'];
      for (var l = 0; l < lists.length; l++) {
        var name = lists[l];
        var list = rule[name];
        if (list === undefined) {
          continue;
        }
        if (Object.prototype.toString.call(list) !== '[object Array]' || list.length === 0) {
          ruleRefuse(at + '.' + name, 'must be a non-empty array');
        }
        for (var k = 0; k < list.length; k++) {
          var item = list[k];
          var itemAt = at + '.' + name + '[' + k + ']';
          if (typeof item !== 'string') {
            ruleRefuse(itemAt, 'must be a string');
          }
          if (NAMES[name] && NAMES[name].indexOf(item) === -1) {
            ruleRefuse(itemAt, 'must be one of ' + NAMES[name].join(', '));
          }
          if (name === 'country' && !/^[A-Z]{2}$/.test(item)) {
            ruleRefuse(itemAt, 'must be an ISO 3166-1 alpha-2 country code in capitals (GB, IE, US)');
          }
          if (name === 'lang' && (item.length > 35 || !/^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$/.test(item))) {
            ruleRefuse(itemAt, 'must be a language tag (en, en-GB, pt-BR)');
          }
        }
        if (name !== 'days') {
          conditions++;
        }
      }
      var span = ['from', 'until'];
      for (var f = 0; f < span.length; f++) {
        if (rule[span[f]] !== undefined) {
          if (isNaN(instant(rule[span[f]]))) {
            ruleRefuse(at + '.' + span[f], 'must be an RFC 3339 time, e.g. 2026-12-31T23:59:59Z');
          }
          conditions++;
        }
      }
      if (rule.from !== undefined && rule.until !== undefined && instant(rule.until) <= instant(rule.from)) {
        ruleRefuse(at + '.until', 'must be after "from"');
      }
      var hours = rule.hours;
      if (hours !== undefined) {
        if (Object.prototype.toString.call(hours) !== '[object Array]' || hours.length !== 2 ||
            typeof hours[0] !== 'string' || typeof hours[1] !== 'string' ||
            !HHMM.test(hours[0]) || !HHMM.test(hours[1])) {
          ruleRefuse(at + '.hours', 'must be ["HH:MM", "HH:MM"], a start and an end from 00:00 to 23:59');
        }
        if (hours[0] === hours[1]) {
          ruleRefuse(at + '.hours', 'start and end are the same time: the window would be empty');
        }
      }
      var weekly = rule.days !== undefined || hours !== undefined;
      if (rule.tz !== undefined && (typeof rule.tz !== 'string' || rule.tz.length === 0)) {
        ruleRefuse(at + '.tz', 'not an IANA time zone name (Europe/Dublin, America/New_York)');
      }
      if (weekly && rule.tz === undefined) {
        ruleRefuse(at + '.tz', 'days and hours need a "tz", an IANA time zone name (Europe/Dublin)');
      }
      if (!weekly && rule.tz !== undefined) {
        ruleRefuse(at + '.tz', 'only days and hours read "tz"; this rule has neither');
      }
      if (weekly) {
        conditions++;
      }
      var split = rule.split;
      if (split !== undefined) {
        var whole = function (x) {
          return typeof x === 'number' && x % 1 === 0 && x >= 0 && x <= 100;
        };
        if (Object.prototype.toString.call(split) !== '[object Array]' || split.length !== 2 ||
            !whole(split[0]) || !whole(split[1]) || split[0] >= split[1]) {
          ruleRefuse(at + '.split', 'must be [lo, hi], whole percentages with 0 <= lo < hi <= 100');
        }
        conditions++;
      }
      if (conditions === 0) {
        ruleRefuse(at, 'a rule needs at least one condition (os, class, country, lang, from, until, days, hours, split)');
      }
    }
  }
}
