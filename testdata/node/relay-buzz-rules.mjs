// Independent check, with nostr-tools, that the embedded relay applies the
// Buzz rules buzzload's verdicts depend on (issue 25, rules 1-5; each named
// after the block/buzz source it follows, docs/buzz-protocol.md):
//   1. kind 9000 adds its FIRST p only, the role from a ["role", r] tag, and
//      a relay-signed 40099 member_joined lands in the channel;
//   2. POST /events is charged to the API quota, not the messages quota;
//   3. WS admission: 50 REQ/COUNT/EVENT frames per 5 s per pubkey, the next
//      one refused with "rate-limited: quota exceeded; retry in Ns";
//   4. page limits clamp at 1000 (NIP-11 max_limit, REQ and /query);
//   5. provisioning refuses a non-canonical host.
// Run by `go test ./modules/relay` (TestNodeBuzzRules); needs `make node-deps`.
//
// argv[2]: {"strict": {"ws_url","http_url","relay_pubkey"}, "bulk": {...}, "operator_secret": hex}
import { generateSecretKey, getPublicKey, finalizeEvent, verifyEvent } from 'nostr-tools/pure'
import { withTimeout, hexToBytes, signer, connect, fetchAll, post } from './relay-helpers.mjs'
import { randomUUID } from 'node:crypto'

const cfg = JSON.parse(process.argv[2])
const steps = []
const step = (s) => steps.push(s)

async function main() {
  const s = cfg.strict
  const alice = generateSecretKey(), bob = generateSecretKey(), carol = generateSecretKey()
  const as = signer(alice)
  const relay = await connect(s.ws_url, alice)

  // 1. kind 9000: first p only, role tag, 40099.
  const ch = randomUUID()
  await relay.publish(as(9007, [['h', ch], ['name', 'rules'], ['visibility', 'private']]))
  await relay.publish(as(9000, [['h', ch], ['p', getPublicKey(bob)], ['p', getPublicKey(carol)], ['role', 'admin']]))
  const lists = await fetchAll(relay, { kinds: [39002], '#d': [ch] })
  if (lists.length !== 1 || lists[0].pubkey !== s.relay_pubkey || !verifyEvent(lists[0])) throw new Error('39002: ' + JSON.stringify(lists))
  const roles = Object.fromEntries(lists[0].tags.filter((t) => t[0] === 'p').map((t) => [t[1], t[3]]))
  if (roles[getPublicKey(bob)] !== 'admin' || getPublicKey(carol) in roles) throw new Error('members after 9000: ' + JSON.stringify(roles))
  const sys = await fetchAll(relay, { kinds: [40099], '#h': [ch] })
  const joined = sys.filter((e) => e.pubkey === s.relay_pubkey && verifyEvent(e) && JSON.parse(e.content).type === 'member_joined')
  if (joined.length !== 1 || JSON.parse(joined[0].content).target !== getPublicKey(bob)) throw new Error('40099: ' + JSON.stringify(sys))
  step('9000 first p, role tag, 40099')

  // 2. HTTP publishes use the API quota only (the strict relay allows 2
  // messages and 4 API calls a minute; the 9007/9000 above used the messages).
  const url = s.http_url + '/events'
  for (let i = 0; i < 4; i++) {
    const r = await post(url, alice, as(9, [['h', ch]], 'http ' + i))
    if (r.status !== 200 || !r.body.accepted) throw new Error('HTTP publish ' + i + ': ' + r.status + ' ' + JSON.stringify(r.body))
  }
  const over = await post(url, alice, as(9, [['h', ch]], 'http 4'))
  if (over.status !== 429 || !String(over.body.error).startsWith('rate-limited: quota exceeded; retry in ')) throw new Error('fifth HTTP call: ' + over.status + ' ' + JSON.stringify(over.body))
  step('HTTP publish charged to the API quota')

  // 3. WS admission: 50 frames per 5 s; REQs count (the two above did).
  const b = await connect(s.ws_url, bob)
  let closed = ''
  for (let i = 0; i < 60 && !closed; i++) {
    try { await fetchAll(b, { kinds: [0], authors: [getPublicKey(bob)], limit: 1 }) } catch (e) { closed = e.message }
  }
  if (!/^CLOSED rate-limited: quota exceeded; retry in [1-5]s$/.test(closed)) throw new Error('51st frame: ' + JSON.stringify(closed))
  step('WS admission 50 frames per 5 s')
  b.close()
  relay.close()

  // 4. page limits (a relay with quotas off to store 1001 events fast).
  const k = cfg.bulk
  const bulk = await connect(k.ws_url, alice)
  const pch = randomUUID()
  await bulk.publish(as(9007, [['h', pch], ['name', 'pages'], ['visibility', 'open']]))
  for (let i = 0; i < 1001; i += 100) {
    await Promise.all(Array.from({ length: Math.min(100, 1001 - i) }, (_, j) => bulk.publish(as(9, [['h', pch]], 'p' + (i + j)))))
  }
  const page = await fetchAll(bulk, { kinds: [9], '#h': [pch], limit: 5000 })
  const q = await post(k.http_url + '/query', alice, [{ kinds: [9], '#h': [pch], limit: 5000 }])
  const info = await (await fetch(k.http_url, { headers: { Accept: 'application/nostr+json' } })).json()
  if (page.length !== 1000 || q.body.length !== 1000 || info.limitation.max_limit !== 1000) {
    throw new Error(`page limit: REQ ${page.length}, /query ${q.body.length}, NIP-11 ${info.limitation.max_limit}`)
  }
  step('page limit 1000')
  bulk.close()

  // 5. provisioning validates the raw host.
  const op = hexToBytes(cfg.operator_secret)
  for (const host of ['Acme.example', 'acme.example:443', 'acme.example.', 'acme_1.example']) {
    const r = await post(s.http_url + '/operator/communities', op, { host, initial_owner_pubkey: getPublicKey(alice), create_only: true })
    if (r.status !== 400) throw new Error('provision ' + host + ': ' + r.status + ' ' + JSON.stringify(r.body))
  }
  const ok = await post(s.http_url + '/operator/communities', op, { host: 'acme.example', initial_owner_pubkey: getPublicKey(alice), create_only: true })
  if (ok.status !== 200 || ok.body.host !== 'acme.example') throw new Error('provision canonical: ' + ok.status + ' ' + JSON.stringify(ok.body))
  step('canonical hosts only')
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
