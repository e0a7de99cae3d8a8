// Independent oracle for modules/nostr: checks Go-built Nostr objects with
// nostr-tools (a JavaScript implementation we did not write) and encrypts
// NIP-44 payloads for Go to decrypt. Run by `go test ./modules/nostr`
// (TestCrossCheckNostrTools); needs `make node-deps`.
//
// stdin: one JSON object, every section optional:
//   events:        [{event}]                          -> {verify, hash}
//   auth:          [{event, relay, challenge}]        -> {verify, template}
//   nip98:         [{header, url, method, body}]      -> {token, event}  ("ok" or the error text)
//   nip44_decrypt: [{conversation_key, payload}]      -> {plaintext} or {error}
//   nip44_encrypt: [{secret, peer_pubkey, plaintext}] -> {conversation_key, payload}
//   kinds:         {name: number}                     -> {name: value in nostr-tools kinds}
//   schnorr_sign:  [{secret, message, aux}]           -> {sig}  (the schnorr nostr-tools signs with)
// stdout: one JSON object with the same section names, results in input order.
//
// Events arrive as JSON, so nostr-tools never sees an object it signed
// itself: verifyEvent trusts a cached `verifiedSymbol` on those.
import { verifyEvent, getEventHash } from 'nostr-tools/pure'
import { makeAuthEvent } from 'nostr-tools/nip42'
import * as nip98 from 'nostr-tools/nip98'
import * as nip44 from 'nostr-tools/nip44'
import * as kinds from 'nostr-tools/kinds'
import { schnorr } from '@noble/curves/secp256k1.js'

const hexToBytes = (h) => Uint8Array.from(Buffer.from(h, 'hex'))
const bytesToHex = (b) => Buffer.from(b).toString('hex')
const errText = (e) => (e && e.message) || String(e)

async function readStdin() {
  const chunks = []
  for await (const c of process.stdin) chunks.push(c)
  return JSON.parse(Buffer.concat(chunks).toString('utf8'))
}

// A fresh deep copy, so no verification result is ever cached across checks.
const fresh = (ev) => JSON.parse(JSON.stringify(ev))

function checkEvent(ev) {
  let hash = null
  try {
    hash = getEventHash(fresh(ev))
  } catch (e) {
    hash = 'error: ' + errText(e)
  }
  return { verify: verifyEvent(fresh(ev)), hash }
}

function checkAuth({ event, relay, challenge }) {
  const tpl = makeAuthEvent(relay, challenge)
  // Our event may carry a NIP-OA auth tag after the two NIP-42 tags.
  const same =
    event.kind === tpl.kind &&
    event.content === tpl.content &&
    JSON.stringify(event.tags.slice(0, 2)) === JSON.stringify(tpl.tags)
  return { verify: verifyEvent(fresh(event)), template: same }
}

async function checkNIP98({ header, url, method, body }) {
  const out = {}
  try {
    out.token = (await nip98.validateToken(header, url, method)) ? 'ok' : 'false'
  } catch (e) {
    out.token = errText(e)
  }
  try {
    const ev = await nip98.unpackEventFromToken(header)
    out.event = (await nip98.validateEvent(ev, url, method, body ?? undefined)) ? 'ok' : 'false'
  } catch (e) {
    out.event = errText(e)
  }
  return out
}

function decryptNIP44({ conversation_key, payload }) {
  try {
    return { plaintext: nip44.v2.decrypt(payload, hexToBytes(conversation_key)) }
  } catch (e) {
    return { error: errText(e) }
  }
}

function encryptNIP44({ secret, peer_pubkey, plaintext }) {
  const ck = nip44.v2.utils.getConversationKey(hexToBytes(secret), peer_pubkey)
  return { conversation_key: bytesToHex(ck), payload: nip44.v2.encrypt(plaintext, ck) }
}

const input = await readStdin()
const out = {}
if (input.events) out.events = input.events.map((c) => checkEvent(c.event))
if (input.auth) out.auth = input.auth.map(checkAuth)
if (input.nip98) {
  out.nip98 = []
  for (const c of input.nip98) out.nip98.push(await checkNIP98(c))
}
if (input.nip44_decrypt) out.nip44_decrypt = input.nip44_decrypt.map(decryptNIP44)
if (input.nip44_encrypt) out.nip44_encrypt = input.nip44_encrypt.map(encryptNIP44)
if (input.kinds) {
  out.kinds = {}
  for (const name of Object.keys(input.kinds)) out.kinds[name] = kinds[name] ?? null
}
if (input.schnorr_sign) {
  out.schnorr_sign = input.schnorr_sign.map(({ secret, message, aux }) => ({
    sig: bytesToHex(schnorr.sign(hexToBytes(message), hexToBytes(secret), hexToBytes(aux))),
  }))
}
process.stdout.write(JSON.stringify(out))
