function (doc) { var v = {}; for (var k in doc) { if (k !== '_id' && k !== '_rev') { v[k] = doc[k]; } } emit(doc._id, v); }
