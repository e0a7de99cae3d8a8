// Independent check of modules/relay with nostr-tools (a client we did
// not write): authenticate (NIP-42), create a channel, subscribe, publish and
// receive live, see the relay's duplicate and refusal answers, then read over
// HTTP with a NIP-98 token nostr-tools signs, including a NIP-CW window whose
// relay-signed 39006 nostr-tools verifies. Run by
// `go test ./modules/relay` (TestNodeCrossCheck); needs `make node-deps`.
//
// argv[2]: {"ws_url": "...", "http_url": "...", "relay_pubkey": "..."}
// stdout: {"ok": true, "steps": [...]} or {"ok": false, "error": "...", "steps": [...]}
import { generateSecretKey, getPublicKey, finalizeEvent, verifyEvent } from 'nostr-tools/pure'
import { Relay } from 'nostr-tools/relay'
import * as nip98 from 'nostr-tools/nip98'
import { randomUUID } from 'node:crypto'

const cfg = JSON.parse(process.argv[2])
const steps = []
const step = (s) => steps.push(s)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const withTimeout = (p, ms, what) =>
  Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(what + ' timed out')), ms))])

async function main() {
  const sk = generateSecretKey()
  const pk = getPublicKey(sk)
  const now = () => Math.floor(Date.now() / 1000)
  const sign = (kind, tags, content = '') => finalizeEvent({ kind, tags, content, created_at: now() }, sk)

  const relay = new Relay(cfg.ws_url)
  relay.onnotice = () => {}
  relay.onauth = (t) => finalizeEvent(t, sk)
  await withTimeout(relay.connect(), 5000, 'connect')
  for (let i = 0; i < 100 && !relay.authPromise; i++) await sleep(20)
  if (!relay.authPromise) throw new Error('no AUTH challenge received')
  await withTimeout(relay.authPromise, 5000, 'auth')
  step('auth')

  const channel = randomUUID()
  await relay.publish(sign(9007, [['h', channel], ['name', 'node-check'], ['visibility', 'open']]))
  step('create channel')

  const live = []
  let eose
  const eosed = new Promise((r) => (eose = r))
  relay.subscribe([{ kinds: [9], '#h': [channel] }], { onevent: (e) => live.push(e), oneose: () => eose() })
  await withTimeout(eosed, 5000, 'EOSE')
  step('subscribe')

  const msg = sign(9, [['h', channel]], 'hello from nostr-tools')
  await relay.publish(msg)
  for (let i = 0; i < 100 && !live.some((e) => e.id === msg.id); i++) await sleep(20)
  if (!live.some((e) => e.id === msg.id)) throw new Error('live message not delivered')
  if (!verifyEvent(JSON.parse(JSON.stringify(live[0])))) throw new Error('delivered event does not verify')
  step('publish and live delivery')

  const dup = await relay.publish(msg)
  if (dup !== 'duplicate:') throw new Error('duplicate answer: ' + JSON.stringify(dup))
  step('duplicate')

  let refused = ''
  try {
    await relay.publish(sign(1, [], 'a note'))
  } catch (e) {
    refused = e.message
  }
  if (refused !== 'restricted: unknown event kind') throw new Error('kind 1 answer: ' + JSON.stringify(refused))
  step('refusal')

  const filters = [{ kinds: [9], '#h': [channel], limit: 10 }]
  const url = cfg.http_url + '/query'
  let token = await nip98.getToken(url, 'POST', (e) => finalizeEvent(e, sk), true, filters)
  let resp = await fetch(url, { method: 'POST', headers: { Authorization: token, 'Content-Type': 'application/json' }, body: JSON.stringify(filters) })
  let body = await resp.json()
  if (resp.status !== 200 || !Array.isArray(body) || !body.some((e) => e.id === msg.id)) {
    throw new Error('/query: ' + resp.status + ' ' + JSON.stringify(body))
  }
  step('nip98 query')

  const window = [{ top_level: true, '#h': [channel], kinds: [9], limit: 5 }]
  token = await nip98.getToken(url, 'POST', (e) => finalizeEvent(e, sk), true, window)
  resp = await fetch(url, { method: 'POST', headers: { Authorization: token }, body: JSON.stringify(window) })
  body = await resp.json()
  const bounds = body.filter((e) => e.kind === 39006)
  if (bounds.length !== 1 || bounds[0].pubkey !== cfg.relay_pubkey || !verifyEvent(bounds[0])) {
    throw new Error('window bounds: ' + JSON.stringify(bounds))
  }
  if (JSON.parse(bounds[0].content).has_more !== false) throw new Error('has_more on a one-row channel')
  step('channel window')

  // Replaying the exact same token must be refused.
  resp = await fetch(url, { method: 'POST', headers: { Authorization: token }, body: JSON.stringify(window) })
  body = await resp.json()
  if (resp.status !== 401 || body.error !== 'NIP-98: replay detected') throw new Error('replay: ' + resp.status + ' ' + JSON.stringify(body))
  step('nip98 replay')

  relay.close()
  return pk
}

main()
  .then(() => {
    console.log(JSON.stringify({ ok: true, steps }))
    process.exit(0)
  })
  .catch((e) => {
    console.log(JSON.stringify({ ok: false, error: (e && e.message) || String(e), steps }))
    process.exit(1)
  })
