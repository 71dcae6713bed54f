"""An agent on SICPA's `didcomm` (with `peerdid`): shortens and invalidates
over authcrypt DIDComm v2, knowing only the service's DID.

Run by tests/didcomm/python.rs as a subprocess of the SICPA venv's python:

    sicpa_agent.py SERVICE_DID PUBLIC_ORIGIN

It makes its own did:peer:2 (peerdid's key ids: '#' + 8 characters of the
multibase key), and prints one JSON object per line: its DID, then each
reply it received, so the Rust test judges them.
"""

import asyncio
import http.server
import json
import sys
import threading
import urllib.error
import urllib.request

from didcomm.common.resolvers import ResolversConfig
from didcomm.did_doc.did_doc import DIDDoc
from didcomm.did_doc.did_resolver import DIDResolver
from didcomm.message import Message
from didcomm.pack_encrypted import PackEncryptedConfig, pack_encrypted
from didcomm.secrets.secrets_resolver_in_memory import SecretsResolverInMemory
from didcomm.secrets.secrets_util import (
    generate_ed25519_keys_as_jwk_dict,
    generate_x25519_keys_as_jwk_dict,
    jwk_to_secret,
)
from didcomm.unpack import unpack
from peerdid.dids import create_peer_did_numalgo_2, resolve_peer_did
from peerdid.keys import Ed25519VerificationKey, KeyFormat, X25519KeyAgreementKey

PIURI = "https://didcomm.org/shorten-url/1.0/"
ENCRYPTED = "application/didcomm-encrypted+json"


class PeerResolver(DIDResolver):
    """did:peer via peerdid, with the relative ids it returns made absolute."""

    async def resolve(self, did):
        doc = resolve_peer_did(did, format=KeyFormat.JWK).serialize()

        def absolute(ref):
            if isinstance(ref, str):
                return did + ref if ref.startswith("#") else ref
            ref["id"] = absolute(ref["id"])
            if "controller" in ref:
                ref["controller"] = did
            return ref

        for rel in ("verificationMethod", "authentication", "keyAgreement",
                    "assertionMethod", "capabilityDelegation", "capabilityInvocation"):
            if rel in doc:
                doc[rel] = [absolute(r) for r in doc[rel]]
        services = []
        for svc in doc.get("service", []):
            # didcomm 0.3.2 reads the DIDComm v2 service in its older flat
            # form (pydid's DIDCommService): the URI and accept at the top.
            endpoint = svc.get("serviceEndpoint")
            uri = endpoint.get("uri") if isinstance(endpoint, dict) else endpoint
            accept = endpoint.get("accept", ["didcomm/v2"]) if isinstance(endpoint, dict) else ["didcomm/v2"]
            services.append({"id": absolute(svc["id"]), "type": "DIDCommMessaging",
                             "serviceEndpoint": uri, "accept": accept, "routingKeys": []})
        doc["service"] = services
        return DIDDoc.deserialize(doc)


def make_agent(endpoint):
    x_priv, x_pub = generate_x25519_keys_as_jwk_dict()
    e_priv, e_pub = generate_ed25519_keys_as_jwk_dict()
    x_key = X25519KeyAgreementKey.from_jwk(x_pub)
    e_key = Ed25519VerificationKey.from_jwk(e_pub)
    service = None
    if endpoint:
        service = {"type": "DIDCommMessaging",
                   "serviceEndpoint": {"uri": endpoint, "accept": ["didcomm/v2"]}}
    did = str(create_peer_did_numalgo_2([x_key], [e_key], service))
    doc = resolve_peer_did(did, format=KeyFormat.JWK).serialize()
    secrets = []
    for method, priv in zip(doc["verificationMethod"], (x_priv, e_priv)):
        priv = dict(priv)
        priv["kid"] = did + method["id"] if method["id"].startswith("#") else method["id"]
        secrets.append(jwk_to_secret(priv))
    config = ResolversConfig(
        secrets_resolver=SecretsResolverInMemory(secrets), did_resolver=PeerResolver()
    )
    return did, config


def post(url, body):
    req = urllib.request.Request(url, data=body.encode(), method="POST",
                                 headers={"Content-Type": ENCRYPTED})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


async def send(config, frm, service_did, api_url, typ, body, return_route=True, msg_id=None):
    headers = {"return_route": "all"} if return_route else None
    msg = Message(type=PIURI + typ, body=body, frm=frm, to=[service_did],
                  custom_headers=headers, **({"id": msg_id} if msg_id else {}))
    packed = await pack_encrypted(
        resolvers_config=config, message=msg, frm=frm, to=service_did,
        pack_config=PackEncryptedConfig(forward=False),
    )
    status, text = post(api_url, packed.packed_msg)
    if status != 200:
        return {"status": status, "text": text}
    return await opened(config, text)


async def opened(config, text):
    result = await unpack(config, text)
    reply = result.message.as_dict()
    reply["_authenticated"] = bool(result.metadata.authenticated)
    reply["_from_kid"] = result.metadata.encrypted_from
    return reply


def emit(obj):
    print(json.dumps(obj), flush=True)


class Inbox(http.server.BaseHTTPRequestHandler):
    received = []

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        Inbox.received.append((self.headers.get("Content-Type"), self.rfile.read(length).decode()))
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


async def main():
    service_did, origin = sys.argv[1], sys.argv[2]
    # The agent learns the endpoint from the service DID, as a real one would.
    doc = (await PeerResolver().resolve(service_did)).serialize()
    api_url = doc["service"][0]["serviceEndpoint"]

    inbox = http.server.HTTPServer(("127.0.0.1", 0), Inbox)
    threading.Thread(target=inbox.serve_forever, daemon=True).start()
    inbox_url = "http://127.0.0.1:%d/inbox" % inbox.server_address[1]

    did, config = make_agent(inbox_url)
    stranger, stranger_config = make_agent(None)
    emit({"did": did, "stranger": stranger})

    reply = await send(config, did, service_did, api_url, "request-shortened-url",
                       {"url": "https://example.com/sicpa?x=1", "goal_code": "shorten",
                        "requested_validity_seconds": 3600}, msg_id="sicpa-req-1")
    emit(reply)
    short = reply.get("body", {}).get("shortened_url", origin + "/missing")
    emit(await send(stranger_config, stranger, service_did, api_url,
                    "invalidate-shortened-url", {"shortened_url": short}, msg_id="sicpa-inv-0"))
    emit(await send(config, did, service_did, api_url, "invalidate-shortened-url",
                    {"shortened_url": short}, msg_id="sicpa-inv-1"))
    emit(await send(config, did, service_did, api_url, "request-shortened-url",
                    {"url": "wss://example.com/", "goal_code": "shorten"}, msg_id="sicpa-req-2"))

    # Without return_route: 202 here, the reply arrives at the inbox.
    result = await send(config, did, service_did, api_url, "request-shortened-url",
                        {"url": "https://example.com/later", "goal_code": "shorten"},
                        return_route=False, msg_id="sicpa-req-3")
    emit(result)
    for _ in range(1000):
        if Inbox.received:
            break
        await asyncio.sleep(0.01)
    if Inbox.received:
        content_type, body = Inbox.received[0]
        delivered = await opened(config, body)
        delivered["_content_type"] = content_type
        emit(delivered)
    else:
        emit({"delivered": None})

    # One packed request posted three times: only the first is acted on.
    msg = Message(type=PIURI + "request-shortened-url", id="sicpa-replayed", frm=did,
                  to=[service_did], custom_headers={"return_route": "all"},
                  body={"url": "https://example.com/replayed", "goal_code": "shorten"})
    packed = await pack_encrypted(resolvers_config=config, message=msg, frm=did, to=service_did,
                                  pack_config=PackEncryptedConfig(forward=False))
    emit({"replay": [post(api_url, packed.packed_msg)[0] for _ in range(3)]})
    # Expired long ago.
    msg = Message(type=PIURI + "request-shortened-url", id="sicpa-expired", frm=did,
                  to=[service_did], custom_headers={"return_route": "all"}, expires_time=1,
                  body={"url": "https://example.com/expired", "goal_code": "shorten"})
    packed = await pack_encrypted(resolvers_config=config, message=msg, frm=did, to=service_did,
                                  pack_config=PackEncryptedConfig(forward=False))
    status, text = post(api_url, packed.packed_msg)
    emit({"label": "expired", "status": status, "text": text})
    inbox.shutdown()


asyncio.run(main())
