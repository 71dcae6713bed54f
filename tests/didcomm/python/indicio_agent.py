"""An agent on Indicio's `didcomm-messaging` (Askar crypto, `did-peer-2`):
shortens and invalidates over authcrypt DIDComm v2, knowing only the
service's DID.

Run by tests/didcomm/python.rs as a subprocess of the Indicio venv's python:

    indicio_agent.py SERVICE_DID PUBLIC_ORIGIN

Its did:peer:2 lists the verification key first, so its agreement key is
'#key-2' (did-peer-2 numbers keys only). It prints one JSON object per line:
its DID, then each reply, so the Rust test judges them.
"""

import asyncio
import json
import sys
import urllib.error
import urllib.request

from aries_askar import Key, KeyAlg
from did_peer_2 import KeySpec, generate
from didcomm_messaging import DIDCommMessaging
from didcomm_messaging.crypto.backend.askar import AskarCryptoService, AskarSecretKey
from didcomm_messaging.crypto.backend.basic import InMemorySecretsManager
from didcomm_messaging.multiformats import multibase, multicodec
from didcomm_messaging.packaging import PackagingService
from didcomm_messaging.resolver import PrefixResolver
from didcomm_messaging.resolver.peer import Peer2
from didcomm_messaging.routing import RoutingService

PIURI = "https://didcomm.org/shorten-url/1.0/"


def multikey(codec, key):
    return multibase.encode(multicodec.wrap(codec, key.get_public_bytes()), "base58btc")


async def make_agent():
    verkey = Key.generate(KeyAlg.ED25519)
    xkey = Key.generate(KeyAlg.X25519)
    did = generate(
        [KeySpec.verification(multikey("ed25519-pub", verkey)),
         KeySpec.key_agreement(multikey("x25519-pub", xkey))],
        [],
    )
    secrets = InMemorySecretsManager()
    await secrets.add_secret(AskarSecretKey(verkey, f"{did}#key-1"))
    await secrets.add_secret(AskarSecretKey(xkey, f"{did}#key-2"))
    dmp = DIDCommMessaging(
        crypto=AskarCryptoService(),
        secrets=secrets,
        # did:peer:2 only: nothing is fetched.
        resolver=PrefixResolver({"did:peer:2": Peer2()}),
        packaging=PackagingService(),
        routing=RoutingService(),
    )
    return str(did), dmp


def post(url, body, content_type):
    headers = {"Content-Type": content_type} if content_type else {}
    req = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


async def send(dmp, frm, service_did, typ, body, msg_id,
               content_type="application/didcomm-encrypted+json"):
    message = {"type": PIURI + typ, "id": msg_id, "from": frm, "to": [service_did],
               "return_route": "all", "body": body}
    packed = await dmp.pack(message=message, to=service_did, frm=frm)
    status, text = post(packed.get_endpoint("http"), packed.message, content_type)
    if status != 200:
        return {"status": status, "text": text}
    result = await dmp.unpack(text)
    reply = dict(result.message)
    reply["_authenticated"] = result.authenticated
    reply["_from_kid"] = result.sender_kid
    return reply


def emit(obj):
    print(json.dumps(obj), flush=True)


async def main():
    service_did, origin = sys.argv[1], sys.argv[2]
    did, dmp = await make_agent()
    stranger, stranger_dmp = await make_agent()
    emit({"did": did, "stranger": stranger})

    reply = await send(dmp, did, service_did, "request-shortened-url",
                       {"url": "https://example.com/indicio", "goal_code": "shorten",
                        "requested_validity_seconds": "60"}, "indicio-req-1")
    emit(reply)
    short = reply.get("body", {}).get("shortened_url", origin + "/missing")
    emit(await send(stranger_dmp, stranger, service_did, "invalidate-shortened-url",
                    {"shortened_url": short}, "indicio-inv-0"))
    emit(await send(dmp, did, service_did, "invalidate-shortened-url",
                    {"shortened_url": short}, "indicio-inv-1"))
    emit(await send(dmp, did, service_did, "request-shortened-url",
                    {"url": "https://example.com/", "goal_code": "shorten.oobv1"}, "indicio-req-2"))
    # As aiohttp would post it: no content type of ours.
    emit(await send(dmp, did, service_did, "request-shortened-url",
                    {"url": "https://example.com/plain", "goal_code": "shorten"}, "indicio-req-3",
                    content_type="application/octet-stream"))

    # One packed request posted three times: only the first is acted on.
    message = {"type": PIURI + "request-shortened-url", "id": "indicio-replayed", "from": did,
               "to": [service_did], "return_route": "all",
               "body": {"url": "https://example.com/replayed", "goal_code": "shorten"}}
    packed = await dmp.pack(message=message, to=service_did, frm=did)
    emit({"replay": [post(packed.get_endpoint("http"), packed.message,
                          "application/didcomm-encrypted+json")[0] for _ in range(3)]})
    # Expired long ago, and addressed to another DID (though encrypted to us).
    for label, extra in (("expired", {"expires_time": 1}), ("misaddressed", {"to": [stranger]})):
        packed = await dmp.pack(message=dict(message, id="indicio-" + label, **extra),
                                to=service_did, frm=did)
        status, text = post(packed.get_endpoint("http"), packed.message,
                            "application/didcomm-encrypted+json")
        emit({"label": label, "status": status, "text": text})


asyncio.run(main())
