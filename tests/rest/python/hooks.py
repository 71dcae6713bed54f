"""schemathesis hooks for `--checks all` against qrtag's REST API
(tests/support/rest_checks.rs loads them through SCHEMATHESIS_HOOKS).

The document declares every rule a JSON Schema can state: enums, ranges,
non-empty strings, key patterns, list lengths. Some refusals follow rules
no schema of independent parameters can state, and the document gives them
in words; schemathesis's positive cases meet them by chance and report the
refusal as "schema-valid request rejected". Each failure dropped below is
one of those, recognised by its operation, status and the problem's
`detail` (which names the rule), so any other refusal still fails the run.
"""

import json
import urllib.parse
import urllib.request

import schemathesis

# (operation, status, the problem's detail starts with, why).
IN_WORDS = [
    # A destination URL's rules (absolute http(s) or a single-slash path,
    # no userinfo, no dot segments, ...) are the CLI's, stated in words.
    ("POST /api/v1/links", 400, "url:", "a URL's rules"),
    ("PATCH /api/v1/links/{key}", 400, "url:", "a URL's rules"),
    # A fallback is a destination that is never a path (issue 33).
    ("POST /api/v1/links", 400, "fallback_url:", "an absolute URL's rules"),
    ("PATCH /api/v1/links/{key}", 400, "fallback_url:", "an absolute URL's rules"),
    # A title is one line, without control characters (issue 33).
    ("POST /api/v1/links", 400, "title:", "one line"),
    ("PATCH /api/v1/links/{key}", 400, "title:", "one line"),
    # A link's rules (issue 34): at least one condition, `tz` an IANA zone
    # with `days` or `hours` and only with them, `from` before `until`,
    # `lo` below `hi`, a country on the ISO list and only on a server with
    # a GeoIP database, a destination's rules; each refusal names the field.
    ("POST /api/v1/links", 400, "rules", "a rule's conditions"),
    ("PATCH /api/v1/links/{key}", 400, "rules", "a rule's conditions"),
    # An expiry is a time in the future: an RFC 3339 time, a date, a
    # duration or `never`.
    ("POST /api/v1/links", 400, "expires:", "an expiry in the future"),
    ("PATCH /api/v1/links/{key}", 400, "expires:", "an expiry in the future"),
    # `If-Match` names the revision the client read; schemathesis cannot
    # know the current one.
    ("PATCH /api/v1/links/{key}", 412, "", "a revision the link has not"),
    # Issue 35: a revert's `If-Match` as a PATCH's; the entry to go back
    # to must be one of the link's, which no schema can know.
    ("POST /api/v1/links/{key}/revert", 412, "", "a revision the link has not"),
    # Parameters that exclude each other.
    ("GET /api/v1/links", 400, "give one of prefix, url_contains and q", "exclusive"),
    ("GET /api/v1/links", 400, "give after or before, not both", "exclusive"),
    # `since` not after `until` (today when left out).
    ("GET /api/v1/scans", 400, "since is after until", "an ordered range"),
    ("GET /api/v1/links/{key}/scans", 400, "since is after until", "an ordered range"),
    # `dark` and `light` must contrast (4:1), dark the darker, for a phone
    # to read the code.
    ("GET /api/v1/links/{key}/qr.png", 400, "bad dark: dark", "contrast"),
    ("GET /api/v1/links/{key}/qr.svg", 400, "bad dark: dark", "contrast"),
    # The server's logo over the code (`logo=true`): the code must still
    # read back, which depends on the code's size and the logo's together;
    # each request is decoded first and refused with 422 when it does not.
    ("GET /api/v1/links/{key}/qr.png", 400, "bad logo-size: the size of a logo: give logo=true", "logo-size with logo"),
    ("GET /api/v1/links/{key}/qr.svg", 400, "bad logo-size: the size of a logo: give logo=true", "logo-size with logo"),
    ("GET /api/v1/links/{key}/qr.png", 422, "", "a logo the code reads back with"),
    ("GET /api/v1/links/{key}/qr.svg", 422, "", "a logo the code reads back with"),
    ("GET /api/v1/links/{key}/print.pdf", 422, "", "a logo the code reads back with"),
    ("POST /api/v1/print.pdf", 422, "", "a logo the code reads back with"),
    # A print job's options: a template or a poster, the sheet's options
    # not on a poster and the poster's not on a sheet, a paper or label
    # stock by name or size, and a code and caption that fit; every one
    # named in the detail.
    ("GET /api/v1/links/{key}/print.pdf", 400, "", "a print job's options"),
    ("POST /api/v1/print.pdf", 400, "", "a print job's options"),
]


def _detail(response):
    try:
        return json.loads(response.content).get("detail", "")
    except (ValueError, AttributeError):
        return ""


def _problem(response):
    return response.headers.get("content-type", [""])[0].startswith("application/problem+json")


def _links_below(response, key):
    """Whether the server holds a link whose key starts with `key/`, asked
    through the list with the request's own key."""
    request = response.request
    parts = urllib.parse.urlsplit(request.url)
    query = urllib.parse.urlencode({"prefix": f"{key}/", "limit": "1"})
    url = f"{parts.scheme}://{parts.netloc}/api/v1/links?{query}"
    headers = {"Authorization": request.headers["Authorization"]}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as r:
        return bool(json.load(r)["links"])


@schemathesis.hook
def filter_failure(ctx, failure, case, response):
    name = type(failure).__name__
    operation = f"{case.method.upper()} {case.path}"
    if name == "RejectedPositiveData" and _problem(response):
        detail = _detail(response)
        for op, status, start, _why in IN_WORDS:
            if op == operation and response.status_code == status and detail.startswith(start):
                return False
    # Issue 36: `domain` names one of the server's domains, which a
    # static document cannot list; the refusal names the domain asked for.
    if (
        name == "RejectedPositiveData"
        and _problem(response)
        and response.status_code == 400
        and _detail(response).startswith("domain: no domain ")
    ):
        return False
    # A bulk create answers 200 with each link's outcome, a problem for a
    # link that is refused (documented): an invalid link in a valid
    # envelope is refused in the results, not with a 4xx for the request.
    if name == "AcceptedNegativeData" and operation == "POST /api/v1/links/bulk":
        if response.status_code == 200:
            results = json.loads(response.content).get("results", [])
            if any(r.get("problem") for r in results):
                return False
    # A key of several segments (`NAME/more`) is created with the Location
    # /api/v1/links/NAME/more; schemathesis takes `{key}` as one path
    # segment, asks for NAME and finds no link. The link is there, listed
    # under NAME/.
    if name == "EnsureResourceAvailability" and operation == "GET /api/v1/links/{key}":
        key = (case.path_parameters or {}).get("key", "")
        if response.status_code == 404 and _links_below(response, key):
            return False
    return True
