package nostr

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Node oracle: testdata/node/verify.mjs runs nostr-tools 2.25.2 over
// objects this package built. Without node or the installed packages the
// test skips, unless BUZZLOAD_REQUIRE_NODE=1 (set by `make test`), where a
// missing oracle is a failure: a cross-check that silently never runs is
// worth nothing.
var nodeDir = filepath.Join("..", "..", "testdata", "node")

func runNodeOracle(t *testing.T, in, out any) {
	t.Helper()
	required := os.Getenv("BUZZLOAD_REQUIRE_NODE") == "1"
	missing := func(why string) {
		t.Helper()
		if required {
			t.Fatalf("%s; run `make node-deps` (BUZZLOAD_REQUIRE_NODE=1 makes the Node cross-check mandatory)", why)
		}
		t.Skipf("%s; run `make node-deps` to enable the nostr-tools cross-check", why)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", "nostr-tools", "package.json")); err != nil {
		missing("nostr-tools is not installed in " + filepath.Join(nodeDir, "node_modules"))
	}
	input, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "verify.mjs")
	cmd.Dir = nodeDir
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node verify.mjs: %v\n%s", err, trim(stderr.String()))
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("node verify.mjs output: %v\n%s", err, trim(stdout.String()))
	}
}

type nodeEventCase struct {
	Event *Event `json:"event"`
}

type nodeAuthCase struct {
	Event     *Event `json:"event"`
	Relay     string `json:"relay"`
	Challenge string `json:"challenge"`
}

type nodeNIP98Case struct {
	Header string          `json:"header"`
	URL    string          `json:"url"`
	Method string          `json:"method"`
	Body   json.RawMessage `json:"body"`
}

type nodeDecryptCase struct {
	ConversationKey string `json:"conversation_key"`
	Payload         string `json:"payload"`
}

type nodeEncryptCase struct {
	Secret     string `json:"secret"`
	PeerPubkey string `json:"peer_pubkey"`
	Plaintext  string `json:"plaintext"`
}

type nodeInput struct {
	Events       []nodeEventCase   `json:"events,omitempty"`
	Auth         []nodeAuthCase    `json:"auth,omitempty"`
	NIP98        []nodeNIP98Case   `json:"nip98,omitempty"`
	NIP44Decrypt []nodeDecryptCase `json:"nip44_decrypt,omitempty"`
	NIP44Encrypt []nodeEncryptCase `json:"nip44_encrypt,omitempty"`
	Kinds        map[string]int    `json:"kinds,omitempty"`
	SchnorrSign  []nodeSignCase    `json:"schnorr_sign,omitempty"`
}

type nodeSignCase struct {
	Secret  string `json:"secret"`
	Message string `json:"message"`
	Aux     string `json:"aux"`
}

type nodeOutput struct {
	Events []struct {
		Verify bool   `json:"verify"`
		Hash   string `json:"hash"`
	} `json:"events"`
	Auth []struct {
		Verify   bool `json:"verify"`
		Template bool `json:"template"`
	} `json:"auth"`
	NIP98 []struct {
		Token string `json:"token"`
		Event string `json:"event"`
	} `json:"nip98"`
	NIP44Decrypt []struct {
		Plaintext *string `json:"plaintext"`
		Error     string  `json:"error"`
	} `json:"nip44_decrypt"`
	NIP44Encrypt []struct {
		ConversationKey string `json:"conversation_key"`
		Payload         string `json:"payload"`
	} `json:"nip44_encrypt"`
	Kinds       map[string]*int `json:"kinds"`
	SchnorrSign []struct {
		Sig string `json:"sig"`
	} `json:"schnorr_sign"`
}

// One node run checks everything, since starting node dominates the cost.
func TestCrossCheckNostrTools(t *testing.T) {
	now := time.Now() // nostr-tools' NIP-98 check uses the wall clock (±60 s)
	k := DeriveKeys("xcheck", RoleHuman, 1)
	owner := DeriveKeys("xcheck", RoleAgentOwner, 2)
	agent := DeriveKeys("xcheck", RoleAgent, 2)
	var in nodeInput

	// Events: the escaping edge cases of nostr-ecosystem.md §4.4, a 200-byte
	// chat message, and tampered copies that must fail.
	type evWant struct {
		verify, hashIsID bool
		what             string
	}
	var evWants []evWant
	addEvent := func(e *Event, verify, hashIsID bool, what string) {
		in.Events = append(in.Events, nodeEventCase{e})
		evWants = append(evWants, evWant{verify, hashIsID, what})
	}
	for _, c := range []string{
		"", "plain", strings.Repeat("m", 200), "quote \" backslash \\ slash /", "\b\t\n\f\r",
		"\x00\x01\x0b\x1f\x7f", "line\u2028sep\u2029", "emoji 🐝🚀 ünïcödé", "<script>&amp;</script>",
	} {
		e, err := k.NewEvent(KindStreamMessage, [][]string{{"h", "chan\n\"1\""}, {"e", "x", "", "root"}, {}}, c, now)
		if err != nil {
			t.Fatal(err)
		}
		addEvent(e, true, true, "content "+strings.ToValidUTF8(c[:min(len(c), 20)], "?"))
	}
	base, _ := k.NewEvent(KindStreamMessage, [][]string{{"h", "c"}}, "hello", now)
	tamper := func(f func(e *Event)) *Event {
		c := *base // a distinct copy per case: in.Events keeps the pointer
		f(&c)
		return &c
	}
	addEvent(tamper(func(e *Event) { e.Content = "hellp" }), false, false, "tampered content")
	addEvent(tamper(func(e *Event) { e.Sig = flipHex(e.Sig, 5) }), false, true, "tampered signature")
	addEvent(tamper(func(e *Event) { e.PubKey = owner.PubKey(); e.ID = e.ComputeID() }), false, true, "signature under another key")
	// Known divergence (nostr-ecosystem.md §4.4): we hash the bytes we send;
	// a JavaScript peer decodes invalid UTF-8 (here a lone byte and a UTF-8
	// encoded surrogate) to U+FFFD first, so it computes another id and
	// rejects the event. Conformance runs may send this on purpose; normal
	// traffic must stay valid UTF-8 (CheckShape refuses it inbound).
	bad8, _ := k.NewEvent(KindStreamMessage, nil, "a\xffb\xed\xa0\x80c", now)
	addEvent(bad8, false, false, "invalid UTF-8 content (expected divergence)")
	attested, _ := AttestAgent(owner, agent.PubKey(), "kind=9")
	oaEv, _ := agent.NewEvent(KindStreamMessage, [][]string{{"h", "c"}, attested}, "agent says hi", now)
	addEvent(oaEv, true, true, "event with NIP-OA tag")

	// NIP-42.
	authWant := []struct{ verify, template bool }{}
	addAuth := func(e *Event, relay, challenge string, verify, template bool) {
		in.Auth = append(in.Auth, nodeAuthCase{e, relay, challenge})
		authWant = append(authWant, struct{ verify, template bool }{verify, template})
	}
	a1, _ := AuthEvent(k, "ws://127.0.0.1:7777", "c0ffee", now, nil)
	addAuth(a1, "ws://127.0.0.1:7777", "c0ffee", true, true)
	a2, _ := AuthEvent(agent, "wss://acme.buzz.example", "ab12", now, attested)
	addAuth(a2, "wss://acme.buzz.example", "ab12", true, true)
	addAuth(a1, "ws://127.0.0.1:7777", "other", true, false) // oracle must notice the wrong challenge
	a3 := *a1
	a3.Tags = [][]string{{"relay", "ws://127.0.0.1:7777"}, {"challenge", "c0ffef"}}
	addAuth(&a3, "ws://127.0.0.1:7777", "c0ffef", false, true) // edited after signing

	// NIP-98: header from HTTPAuth, body already in JSON.stringify form
	// (nostr-tools hashes the re-serialised object, Buzz the raw bytes).
	body := []byte(`{"kinds":[9],"#h":["c1"],"limit":5}`)
	url := "http://c1.localhost:7777/query"
	h1, err := HTTPAuth(k, "post", url, body, now)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := HTTPAuth(agent, "GET", url+"?x=1", nil, now)
	in.NIP98 = []nodeNIP98Case{
		{h1, url, "POST", body},
		{h2, url + "?x=1", "get", nil},
		{h1, url + "/", "POST", body},
		{h1, url, "GET", body},
		{h1, url, "POST", json.RawMessage(`{"kinds":[1]}`)},
	}
	nip98Want := [][2]string{
		{"ok", "ok"},
		{"ok", "ok"},
		{"Invalid nostr event, url tag invalid", "Invalid nostr event, url tag invalid"},
		{"Invalid nostr event, method tag invalid", "Invalid nostr event, method tag invalid"},
		{"ok", "Invalid nostr event, payload tag does not match request body hash"},
	}

	// NIP-44 both ways.
	cache := NewConversationKeys(k, 8)
	plaintexts := []string{"a", "observer frame {\"seq\":1}", strings.Repeat("é", 300), strings.Repeat("z", NIP44MaxPlaintext)}
	ck, err := cache.Get(agent.PubKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range plaintexts {
		p, err := NIP44Encrypt(pt, ck)
		if err != nil {
			t.Fatal(err)
		}
		in.NIP44Decrypt = append(in.NIP44Decrypt, nodeDecryptCase{hex.EncodeToString(ck[:]), p})
	}
	tampered, _ := NIP44Encrypt("tamper me", ck)
	swap := byte('A')
	if tampered[50] == 'A' {
		swap = 'B'
	}
	tampered = tampered[:50] + string(swap) + tampered[51:]
	in.NIP44Decrypt = append(in.NIP44Decrypt, nodeDecryptCase{hex.EncodeToString(ck[:]), tampered})
	for _, pt := range plaintexts[:3] {
		in.NIP44Encrypt = append(in.NIP44Encrypt, nodeEncryptCase{agent.SecretHex(), k.PubKey(), pt})
	}

	// Kind numbers that nostr-tools also names.
	// BIP-340 signatures with a given aux: nostr-tools' schnorr (noble) must
	// produce ours byte for byte, over keys of both y parities.
	var signWant []string
	for i := 0; i < 24; i++ {
		sk := DeriveKeys("xcheck-sign", RoleHuman, i)
		msg := sha256.Sum256([]byte("m" + strconv.Itoa(i)))
		aux := sha256.Sum256([]byte("a" + strconv.Itoa(i)))
		sig, err := sk.signer.sign(&msg, &aux)
		if err != nil {
			t.Fatal(err)
		}
		in.SchnorrSign = append(in.SchnorrSign, nodeSignCase{sk.SecretHex(), hex.EncodeToString(msg[:]), hex.EncodeToString(aux[:])})
		signWant = append(signWant, hex.EncodeToString(sig[:]))
	}
	in.Kinds = map[string]int{
		"Metadata": KindProfile, "ShortTextNote": KindTextNote, "EventDeletion": KindDeletion,
		"Reaction": KindReaction, "ChatMessage": KindStreamMessage, "GiftWrap": KindGiftWrap,
		"SimpleGroupPutUser": KindPutUser, "SimpleGroupRemoveUser": KindRemoveUser,
		"SimpleGroupEditMetadata": KindEditMetadata, "SimpleGroupDeleteEvent": KindDeleteEvent,
		"SimpleGroupCreateGroup": KindCreateGroup, "SimpleGroupDeleteGroup": KindDeleteGroup,
		"SimpleGroupCreateInvite": KindCreateInvite, "SimpleGroupJoinRequest": KindJoinRequest,
		"SimpleGroupLeaveRequest": KindLeaveRequest, "ClientAuth": KindClientAuth, "HTTPAuth": KindHTTPAuth,
		"Application": KindReadState, "UserStatuses": KindUserStatus, "GroupMetadata": KindGroupMetadata,
		"SimpleGroupAdmins": KindGroupAdmins, "SimpleGroupMembers": KindGroupMembers, "SimpleGroupRoles": KindGroupRoles,
		"UserEmojiList": KindEmojiList, "Emojisets": KindEmojiSet,
	}

	var out nodeOutput
	runNodeOracle(t, &in, &out)

	if len(out.Events) != len(in.Events) || len(out.Auth) != len(in.Auth) || len(out.NIP98) != len(in.NIP98) ||
		len(out.NIP44Decrypt) != len(in.NIP44Decrypt) || len(out.NIP44Encrypt) != len(in.NIP44Encrypt) {
		t.Fatalf("oracle answered %d/%d/%d/%d/%d results", len(out.Events), len(out.Auth), len(out.NIP98), len(out.NIP44Decrypt), len(out.NIP44Encrypt))
	}
	for i, w := range evWants {
		got := out.Events[i]
		if got.Verify != w.verify {
			t.Errorf("event %q: nostr-tools verifyEvent = %v, want %v", w.what, got.Verify, w.verify)
		}
		if (got.Hash == in.Events[i].Event.ID) != w.hashIsID {
			t.Errorf("event %q: nostr-tools getEventHash %s, our id %s (want equal: %v)", w.what, got.Hash, in.Events[i].Event.ID, w.hashIsID)
		}
	}
	for i, w := range authWant {
		if g := out.Auth[i]; g.Verify != w.verify || g.Template != w.template {
			t.Errorf("auth case %d: nostr-tools verify=%v template=%v, want %v %v", i, g.Verify, g.Template, w.verify, w.template)
		}
	}
	for i, w := range nip98Want {
		if g := out.NIP98[i]; g.Token != w[0] || g.Event != w[1] {
			t.Errorf("nip98 case %d (%s %s): validateToken=%q validateEvent=%q, want %q %q", i, in.NIP98[i].Method, in.NIP98[i].URL, g.Token, g.Event, w[0], w[1])
		}
	}
	for i, pt := range plaintexts {
		if g := out.NIP44Decrypt[i]; g.Plaintext == nil || *g.Plaintext != pt {
			t.Errorf("nip44: nostr-tools could not decrypt our %d-byte payload: %s", len(pt), g.Error)
		}
	}
	if g := out.NIP44Decrypt[len(plaintexts)]; g.Plaintext != nil {
		t.Error("nip44: nostr-tools decrypted a tampered payload; the oracle is not checking")
	}
	ckBack, _ := NewConversationKeys(k, 1).Get(agent.PubKey())
	for i, g := range out.NIP44Encrypt {
		if g.ConversationKey != hex.EncodeToString(ckBack[:]) {
			t.Errorf("nip44 js case %d: conversation key %s, ours %x", i, g.ConversationKey, ckBack)
		}
		pt, err := cache.Decrypt(agent.PubKey(), g.Payload)
		if err != nil || pt != in.NIP44Encrypt[i].Plaintext {
			t.Errorf("nip44 js case %d: we decrypt %q, %v", i, trim(pt), err)
		}
	}
	for name, want := range in.Kinds {
		if got := out.Kinds[name]; got == nil || *got != want {
			t.Errorf("kind %s: nostr-tools has %v, we have %d", name, got, want)
		}
	}
	if len(out.SchnorrSign) != len(signWant) {
		t.Fatalf("nostr-tools signed %d messages, want %d", len(out.SchnorrSign), len(signWant))
	}
	for i, w := range signWant {
		if out.SchnorrSign[i].Sig != w {
			t.Errorf("schnorr case %d: nostr-tools %s, ours %s", i, out.SchnorrSign[i].Sig, w)
		}
	}
}

// flipHex changes one hex digit at position i.
func flipHex(s string, i int) string {
	c := "0123456789abcdef"[(strings.IndexByte("0123456789abcdef", s[i])+1)%16]
	return s[:i] + string(c) + s[i+1:]
}
