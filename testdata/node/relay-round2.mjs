// Independent check, with nostr-tools, of the Buzz rules of issue 41 that
// verdicts depend on (docs/buzz-names.md names each one's Buzz source):
//   1. replica read routing: with BUZZ_REPLICA_READ_MAX_AGE_MS set, a /query
//      without "consistency" may miss a write just acknowledged, one with
//      "consistency":"strong" sees it, and any other value is refused with
//      400 {"error":"consistency must be \"strong\" when present"};
//   5. every 9000 re-signs and replaces 39000, 39001 (owners and admins as
//      ["p", pk, role]) and 39002, dated strictly after the last version;
//   6. the message quota is spent at admission, before validation: events
//      with a bad signature use it up, and the next EVENT is rate-limited;
//   9. a limiter outage refuses EVENTs with "rate-limited: shared admission
//      unavailable" (WS OK false; HTTP 503) while reads go on.
// Run by `go test ./modules/relay` (TestNodeRoundTwo); needs `make node-deps`.
//
// argv[2]: {"lagged": {"ws_url","http_url","relay_pubkey"}, "strict": {...},
//           "operator_secret": hex (strict's)}
import { generateSecretKey, getPublicKey, finalizeEvent, verifyEvent } from 'nostr-tools/pure'
import { withTimeout, hexToBytes, signer, connect, fetchAll, post } from './relay-helpers.mjs'
import { randomUUID } from 'node:crypto'

const cfg = JSON.parse(process.argv[2])
const steps = []
const step = (s) => steps.push(s)

// publish returns the relay's OK reason ('' when accepted).
async function publish(relay, ev) {
  try {
    await withTimeout(relay.publish(ev), 5000, 'publish')
    return ''
  } catch (e) {
    return String((e && e.message) || e)
  }
}

async function main() {
  // 1. replica read routing on the lagged relay.
  const l = cfg.lagged
  const alice = generateSecretKey(), bob = generateSecretKey(), carol = generateSecretKey()
  const as = signer(alice)
  const la = await connect(l.ws_url, alice)
  const ch = randomUUID()
  let why = await publish(la, as(9007, [['h', ch], ['name', 'replica'], ['visibility', 'open']]))
  if (why) throw new Error('9007: ' + why)
  const msg = as(9, [['h', ch]], 'read your writes')
  if ((why = await publish(la, msg))) throw new Error('kind 9: ' + why)
  const routed = await post(l.http_url + '/query', alice, [{ ids: [msg.id] }])
  const strong = await post(l.http_url + '/query', alice, [{ ids: [msg.id], consistency: 'strong' }])
  if (routed.status !== 200 || routed.body.length !== 0) throw new Error('routed read right after the write: ' + routed.status + ' ' + JSON.stringify(routed.body))
  if (strong.status !== 200 || strong.body.length !== 1 || strong.body[0].id !== msg.id) throw new Error('strong read: ' + strong.status + ' ' + JSON.stringify(strong.body))
  for (const bad of ['STRONG', true, null, 1]) {
    const r = await post(l.http_url + '/query', alice, [{ ids: [msg.id], consistency: bad }])
    if (r.status !== 400 || r.body.error !== 'consistency must be "strong" when present') throw new Error('consistency ' + JSON.stringify(bad) + ': ' + r.status + ' ' + JSON.stringify(r.body))
  }
  step('replica routing: routed lags, strong reads the writer, other values 400')

  // 5. every 9000 re-signs the three group-state events.
  const state = async () => {
    const evs = await fetchAll(la, { kinds: [39000, 39001, 39002], '#d': [ch] })
    const by = {}
    for (const e of evs) {
      if (e.pubkey !== l.relay_pubkey || !verifyEvent(e)) throw new Error(e.kind + ' not relay-signed')
      if (by[e.kind]) throw new Error('two ' + e.kind + ' for one channel')
      by[e.kind] = e
    }
    if (!by[39000] || !by[39001] || !by[39002]) throw new Error('group state kinds ' + Object.keys(by))
    return by
  }
  if ((why = await publish(la, as(9000, [['h', ch], ['p', getPublicKey(bob)], ['role', 'admin']])))) throw new Error('9000: ' + why)
  const first = await state()
  const admins = Object.fromEntries(first[39001].tags.filter((t) => t[0] === 'p').map((t) => [t[1], t[2]]))
  if (admins[getPublicKey(alice)] !== 'owner' || admins[getPublicKey(bob)] !== 'admin' || Object.keys(admins).length !== 2) throw new Error('39001 admins ' + JSON.stringify(admins))
  if ((why = await publish(la, as(9000, [['h', ch], ['p', getPublicKey(bob)], ['role', 'admin']], 'unchanged')))) throw new Error('second 9000: ' + why)
  const second = await state()
  for (const k of [39000, 39001, 39002]) {
    if (second[k].id === first[k].id || second[k].created_at <= first[k].created_at) throw new Error(k + ' not re-signed after an unchanged 9000')
  }
  step('9000 re-signs 39000, 39001, 39002')
  la.close()

  // 6. the message quota (2 a minute on the strict relay) spent before
  // validation: two events with a bad signature, then a valid one.
  const s = cfg.strict
  const c = await connect(s.ws_url, carol)
  const cs = signer(carol)
  for (let i = 0; i < 2; i++) {
    const bad = { ...cs(9, [['h', randomUUID()]], 'tampered ' + i) }
    bad.sig = bad.sig.slice(0, -2) + (bad.sig.endsWith('00') ? '11' : '00')
    const r = await publish(c, bad)
    if (!r || r.startsWith('rate-limited:')) throw new Error('bad signature ' + i + ': ' + JSON.stringify(r))
  }
  const third = await publish(c, cs(9007, [['h', randomUUID()], ['name', 'third'], ['visibility', 'open']]))
  if (!/^rate-limited: quota exceeded; retry in \d+s$/.test(third)) throw new Error('third EVENT after two invalid: ' + JSON.stringify(third))
  step('message quota spent before validation')
  c.close()

  // 9. a limiter outage: EVENTs refused, reads go on.
  const op = hexToBytes(cfg.operator_secret)
  const d = await post(s.http_url + '/operator/drill', op, { kind: 'limiter_outage', duration_secs: 30 })
  if (d.status !== 200) throw new Error('drill: ' + d.status + ' ' + JSON.stringify(d.body))
  const b = await connect(s.ws_url, bob)
  const bs = signer(bob)
  const refused = await publish(b, bs(9007, [['h', randomUUID()], ['name', 'outage'], ['visibility', 'open']]))
  if (refused !== 'rate-limited: shared admission unavailable') throw new Error('WS EVENT in the outage: ' + JSON.stringify(refused))
  const h = await post(s.http_url + '/events', bob, bs(9007, [['h', randomUUID()], ['name', 'outage http'], ['visibility', 'open']]))
  if (h.status !== 503 || h.body.error !== 'rate-limited: shared admission unavailable') throw new Error('HTTP EVENT in the outage: ' + h.status + ' ' + JSON.stringify(h.body))
  await fetchAll(b, { kinds: [0], authors: [getPublicKey(bob)], limit: 1 })
  step('limiter outage: EVENTs refused (WS OK false, HTTP 503), reads answered')
  b.close()
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
