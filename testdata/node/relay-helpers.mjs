// Helpers the relay cross-checks share (relay-buzz-rules.mjs,
// relay-round2.mjs): a nostr-tools connection that answers NIP-42, a REQ
// collected to its real EOSE, a NIP-98-signed POST.
import { finalizeEvent } from 'nostr-tools/pure'
import { Relay } from 'nostr-tools/relay'
import * as nip98 from 'nostr-tools/nip98'

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
export const withTimeout = (p, ms, what) =>
  Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(what + ' timed out')), ms))])
export const hexToBytes = (h) => Uint8Array.from(h.match(/../g), (b) => parseInt(b, 16))
export const now = () => Math.floor(Date.now() / 1000)
export const signer = (sk) => (kind, tags, content = '') => finalizeEvent({ kind, tags, content, created_at: now() }, sk)

export async function connect(url, sk) {
  const relay = new Relay(url)
  relay.onnotice = () => {}
  relay.onauth = (t) => finalizeEvent(t, sk)
  await withTimeout(relay.connect(), 5000, 'connect')
  for (let i = 0; i < 100 && !relay.authPromise; i++) await sleep(20)
  await withTimeout(relay.authPromise, 5000, 'auth')
  return relay
}

export function fetchAll(relay, filter) {
  return withTimeout(new Promise((resolve, reject) => {
    const got = []
    let done = false
    const sub = relay.subscribe([filter], {
      onevent: (e) => got.push(e),
      oneose: () => { done = true; resolve(got); sub.close() },
      onclose: (reason) => done || reject(new Error('CLOSED ' + reason)),
      // nostr-tools fakes an EOSE after 4.4 s by default: a 1000-event page
      // verified on a loaded machine takes longer, so wait for the real one.
      eoseTimeout: 60000,
    })
  }), 60000, 'REQ')
}

export async function post(url, sk, body) {
  const token = await nip98.getToken(url, 'POST', (e) => finalizeEvent(e, sk), true, body)
  const resp = await fetch(url, { method: 'POST', headers: { Authorization: token, 'Content-Type': 'application/json' }, body: JSON.stringify(body) })
  return { status: resp.status, body: await resp.json() }
}
