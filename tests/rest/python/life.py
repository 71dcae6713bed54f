"""The life of a tag through the REST API, as an integrator's program with
httpx would live it. Run by tests/rest_api.rs with: API_URL PUBLIC_URL
WRITE_KEY READ_KEY REVOKED_KEY. Prints "ok" when every step held."""

import sys
import time

import httpx

api, public, write, read, revoked = sys.argv[1:6]
PROBLEM = "application/problem+json"
PHONE = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"


def client(key):
    return httpx.Client(base_url=api, headers={"Authorization": f"Bearer {key}"}, timeout=10)


def problem_type(r, status):
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"] == PROBLEM, r.headers
    return r.json()["type"]


w = client(write)

# A print run: 100 links in one request.
r = w.post("/links/bulk", json={"links": [{"url": f"https://shop.example/item/{i}"} for i in range(100)]})
assert r.status_code == 200, r.text
keys = [item["link"]["key"] for item in r.json()["results"]]
assert len(keys) == 100 and len(set(keys)) == 100, keys
key = keys[0]

# Its images.
svg = w.get(f"/links/{key}/qr.svg")
assert svg.status_code == 200 and svg.headers["content-type"] == "image/svg+xml", svg.headers
assert svg.text.lstrip().startswith("<"), svg.text[:40]
png = w.get(f"/links/{key}/qr.png", params={"scale": 4})
assert png.status_code == 200 and png.content.startswith(b"\x89PNG\r\n\x1a\n")

# Repoint at the revision read; a stale revision is refused.
r = w.get(f"/links/{key}")
etag = r.headers["etag"]
r = w.patch(f"/links/{key}", json={"url": "https://shop.example/sold-out"}, headers={"If-Match": etag})
assert r.status_code == 200, r.text
assert r.headers["etag"] != etag
r = w.patch(f"/links/{key}", json={"url": "https://shop.example/again"}, headers={"If-Match": etag})
assert problem_type(r, 412) == "urn:qrtag:problem:precondition-failed"

# A scan follows the repoint (polled: other nodes follow the store's feed).
deadline = time.monotonic() + 5
while True:
    s = httpx.get(f"{public}/{key}", follow_redirects=False, headers={"User-Agent": PHONE})
    if s.status_code == 302 and s.headers["location"] == "https://shop.example/sold-out":
        break
    assert time.monotonic() < deadline, (s.status_code, s.headers)
    time.sleep(0.02)

# The scan shows up in the link's numbers (the index follows the log).
deadline = time.monotonic() + 5
while w.get(f"/links/{key}/scans").json().get("in_range", 0) < 1:
    assert time.monotonic() < deadline, w.get(f"/links/{key}/scans").text
    time.sleep(0.02)

# A read key reads but may not write; a revoked key does nothing.
r = client(read).get(f"/links/{key}")
assert r.status_code == 200, r.text
r = client(read).post("/links", json={"url": "https://shop.example/"})
assert problem_type(r, 403) == "urn:qrtag:problem:forbidden"
r = client(revoked).get(f"/links/{key}")
assert problem_type(r, 401) == "urn:qrtag:problem:unauthorized"

print("ok")
