package ledger

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// A distributed run's runners each hold a part of the pairs: the publisher
// of an event and its recipients may be on different runners. Each runner
// therefore writes a journal of every call its ledger gets, and `buzzload
// merge` replays all of them, in time order, into one ledger (Replay): the
// one judgement of the whole run, by the same code as a single process.
//
// The format is this package's own, binary and append-only: a magic line,
// then records of a type byte, the time (unix ns, uvarint) and the call's
// fields (uvarints; strings as length and bytes; ids as 32 bytes).

const journalMagic = "buzzload-ledger-journal 1\n"

// Record types.
const (
	recSent      = 'S'
	recSettled   = 'A'
	recOpen      = 'O'
	recLive      = 'L'
	recEnded     = 'E'
	recDelivered = 'D'
	recSeen      = 'R'
	recFinish    = 'F' // the runner's end: no fields
	recStart     = 'T' // the timeline's start (the steps count from it): no fields
)

// journal writes a ledger's calls (safe for concurrent use).
type journal struct {
	mu   sync.Mutex
	w    *bufio.Writer
	buf  []byte
	next uint64 // the next subscription number
	err  error
}

func newJournal(w io.Writer) *journal {
	j := &journal{w: bufio.NewWriterSize(w, 64<<10)}
	_, j.err = j.w.WriteString(journalMagic)
	return j
}

// record appends one record built by fill.
func (j *journal) record(typ byte, at time.Time, fill func(b []byte) []byte) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return
	}
	b := append(j.buf[:0], typ)
	b = binary.AppendUvarint(b, uint64(at.UnixNano()))
	b = fill(b)
	if len(b) > 0 {
		_, j.err = j.w.Write(b)
	}
	j.buf = b
}

// flush writes what is buffered; the journal's first error.
func (j *journal) flush() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		j.err = j.w.Flush()
	}
	return j.err
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendStrs writes a list with nil and empty apart (0: nil, n+1: n items).
func appendStrs(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(ss))+1)
	for _, s := range ss {
		b = appendStr(b, s)
	}
	return b
}

func appendInts(b []byte, ns []int) []byte {
	if ns == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(ns))+1)
	for _, n := range ns {
		b = binary.AppendUvarint(b, uint64(n))
	}
	return b
}

func appendFacts(b []byte, f *facts) []byte {
	b = binary.AppendUvarint(b, uint64(f.kind))
	b = appendStr(b, f.author)
	b = appendStr(b, f.community)
	b = appendStr(b, f.channel)
	b = appendStr(b, f.class)
	return appendStrs(b, f.p)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func (j *journal) sent(at time.Time, id [32]byte, f *facts) {
	j.record(recSent, at, func(b []byte) []byte { return appendFacts(append(b, id[:]...), f) })
}

func (j *journal) settled(at time.Time, id [32]byte, accepted bool) {
	j.record(recSettled, at, func(b []byte) []byte { return append(append(b, id[:]...), boolByte(accepted)) })
}

func (j *journal) open(s *Sub, at time.Time) {
	j.record(recOpen, at, func(b []byte) []byte {
		if s.jid != 0 {
			return b[:0] // written already (a second EOSE)
		}
		j.next++
		s.jid = j.next
		b = binary.AppendUvarint(b, s.jid)
		b = appendStr(b, s.recipient)
		b = appendStr(b, s.community)
		b = appendStr(b, s.id)
		b = binary.AppendUvarint(b, uint64(len(s.filters)))
		for _, f := range s.filters {
			b = appendInts(b, f.kinds)
			b = appendStrs(b, f.authors)
			b = appendStrs(b, f.h)
			b = appendStrs(b, f.p)
		}
		return b
	})
}

func (j *journal) live(s *Sub, at time.Time) {
	j.record(recLive, at, func(b []byte) []byte { return binary.AppendUvarint(b, s.jid) })
}

func (j *journal) ended(s *Sub, at time.Time, byClient bool) {
	j.record(recEnded, at, func(b []byte) []byte { return append(binary.AppendUvarint(b, s.jid), boolByte(byClient)) })
}

func (j *journal) delivered(s *Sub, id [32]byte, at time.Time, f *facts, ok bool) {
	j.record(recDelivered, at, func(b []byte) []byte {
		b = append(binary.AppendUvarint(b, s.jid), id[:]...)
		return appendFacts(append(b, boolByte(ok)), f)
	})
}

func (j *journal) seen(recipient string, id [32]byte, at time.Time) {
	j.record(recSeen, at, func(b []byte) []byte { return append(appendStr(b, recipient), id[:]...) })
}

// rec is one decoded record.
type rec struct {
	typ       byte
	at        int64
	id        [32]byte
	f         facts
	ok        bool // Settled: accepted; Ended: by the client; Delivered: facts read
	sub       uint64
	open      *Sub // Open: the subscription as written (no ledger yet)
	recipient string
}

// reader decodes a journal.
type reader struct {
	r   *bufio.Reader
	err error
}

var errJournal = errors.New("not a buzzload ledger journal")

func newReader(r io.Reader) (*reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic := make([]byte, len(journalMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != journalMagic {
		return nil, errJournal
	}
	return &reader{r: br}, nil
}

func (d *reader) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(d.r)
	if err != nil {
		d.err = err
	}
	return v
}

func (d *reader) byte() byte {
	if d.err != nil {
		return 0
	}
	c, err := d.r.ReadByte()
	if err != nil {
		d.err = err
	}
	return c
}

// maxJournalString bounds a string's length: a corrupt journal must not
// make the merge allocate without end.
const maxJournalString = 1 << 16

func (d *reader) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > maxJournalString {
		d.err = fmt.Errorf("a string of %d bytes", n)
		return ""
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(d.r, b); err != nil {
		d.err = err
	}
	return string(b)
}

func (d *reader) strs() []string {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return nil
	}
	if n > maxJournalString {
		d.err = fmt.Errorf("a list of %d strings", n)
		return nil
	}
	out := make([]string, 0, n-1)
	for range n - 1 {
		out = append(out, d.str())
	}
	return out
}

func (d *reader) ints() []int {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return nil
	}
	if n > maxJournalString {
		d.err = fmt.Errorf("a list of %d numbers", n)
		return nil
	}
	out := make([]int, 0, n-1)
	for range n - 1 {
		out = append(out, int(d.uvarint()))
	}
	return out
}

func (d *reader) id(dst *[32]byte) {
	if d.err == nil {
		_, d.err = io.ReadFull(d.r, dst[:])
	}
}

func (d *reader) facts(f *facts) {
	f.kind = int(d.uvarint())
	f.author, f.community, f.channel, f.class = d.str(), d.str(), d.str(), d.str()
	f.p = d.strs()
}

// next decodes the next record; io.EOF at a clean end.
func (d *reader) next(r *rec) error {
	typ, err := d.r.ReadByte()
	if err != nil {
		return err // io.EOF: the end
	}
	*r = rec{typ: typ, at: int64(d.uvarint())}
	switch typ {
	case recSent:
		d.id(&r.id)
		d.facts(&r.f)
	case recSettled:
		d.id(&r.id)
		r.ok = d.byte() == 1
	case recOpen:
		r.sub = d.uvarint()
		s := &Sub{recipient: d.str(), community: d.str(), id: d.str()}
		n := d.uvarint()
		if n > maxJournalString {
			return fmt.Errorf("%w: a subscription of %d filters", errJournal, n)
		}
		for range n {
			s.filters = append(s.filters, filt{kinds: d.ints(), authors: d.strs(), h: d.strs(), p: d.strs()})
		}
		r.open = s
	case recLive:
		r.sub = d.uvarint()
	case recEnded:
		r.sub = d.uvarint()
		r.ok = d.byte() == 1
	case recDelivered:
		r.sub = d.uvarint()
		d.id(&r.id)
		r.ok = d.byte() == 1
		d.facts(&r.f)
	case recSeen:
		r.recipient = d.str()
		d.id(&r.id)
	case recFinish, recStart:
	default:
		return fmt.Errorf("%w: record type %q", errJournal, typ)
	}
	if d.err != nil {
		if d.err == io.EOF {
			d.err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("%w: %v", errJournal, d.err)
	}
	return nil
}
