package store

import "sort"

// before reports whether a comes before b in rank order: newest first, and
// within one second the lower id first. This is the NIP-CW order
// (created_at DESC, id ASC) and the order of every index.
func before(a, b *record) bool {
	if a.at != b.at {
		return a.at > b.at
	}
	return a.id < b.id
}

// chunkMax bounds one chunk: inserting or removing anywhere moves at most
// this many pointers, and a whole chunk is skipped with one comparison.
const chunkMax = 512

// list is an ordered index of records in rank order, kept as a slice of
// chunks (a one-level B-tree). A plain sorted slice would make every
// eviction from its tail cheap but every backdated insert or deletion in
// the middle of a million-entry channel an O(n) copy; chunks bound both.
// Not safe for concurrent use: the owning partition's lock guards it.
type list struct {
	chunks [][]*record
	n      int
}

func (l *list) len() int { return l.n }

// chunkFor returns the first chunk whose last record does not rank before r
// (len(l.chunks) when r ranks after everything).
func (l *list) chunkFor(r *record) int {
	return sort.Search(len(l.chunks), func(i int) bool {
		c := l.chunks[i]
		return !before(c[len(c)-1], r)
	})
}

func (l *list) insert(r *record) {
	if len(l.chunks) == 0 {
		l.chunks = append(l.chunks, []*record{r})
		l.n = 1
		return
	}
	// Live traffic is mostly the newest event: skip both searches then.
	ci, i := 0, 0
	if !before(r, l.chunks[0][0]) {
		ci = l.chunkFor(r)
		if ci == len(l.chunks) {
			ci--
		}
		c := l.chunks[ci]
		i = sort.Search(len(c), func(j int) bool { return !before(c[j], r) })
	}
	c := l.chunks[ci]
	c = append(c, nil)
	copy(c[i+1:], c[i:])
	c[i] = r
	l.n++
	if len(c) <= chunkMax {
		l.chunks[ci] = c
		return
	}
	h := len(c) / 2
	right := make([]*record, len(c)-h, chunkMax+1)
	copy(right, c[h:])
	clear(c[h:]) // drop references so evicted records can be collected
	l.chunks[ci] = c[:h]
	l.chunks = append(l.chunks, nil)
	copy(l.chunks[ci+2:], l.chunks[ci+1:])
	l.chunks[ci+1] = right
}

// remove deletes r (found by its rank key); false when it is not present.
func (l *list) remove(r *record) bool {
	ci := l.chunkFor(r)
	if ci == len(l.chunks) {
		return false
	}
	c := l.chunks[ci]
	i := sort.Search(len(c), func(j int) bool { return !before(c[j], r) })
	if i == len(c) || c[i] != r {
		return false
	}
	copy(c[i:], c[i+1:])
	c[len(c)-1] = nil
	c = c[:len(c)-1]
	l.n--
	if len(c) > 0 {
		l.chunks[ci] = c
		return true
	}
	copy(l.chunks[ci:], l.chunks[ci+1:])
	l.chunks[len(l.chunks)-1] = nil
	l.chunks = l.chunks[:len(l.chunks)-1]
	return true
}

// pos is a position in a list: chunk ci, index i.
type pos struct{ ci, i int }

// seek returns the first position whose record satisfies ok. ok must be
// monotone over rank order (false for a prefix, then true), which holds for
// "created_at <= until" and for "after cursor (until, before_id)".
func (l *list) seek(ok func(*record) bool) pos {
	ci := sort.Search(len(l.chunks), func(i int) bool {
		c := l.chunks[i]
		return ok(c[len(c)-1])
	})
	if ci == len(l.chunks) {
		return pos{ci, 0}
	}
	c := l.chunks[ci]
	return pos{ci, sort.Search(len(c), func(j int) bool { return ok(c[j]) })}
}

// at returns the record at p, or nil past the end, normalising p.
func (l *list) at(p *pos) *record {
	for p.ci < len(l.chunks) {
		c := l.chunks[p.ci]
		if p.i < len(c) {
			return c[p.i]
		}
		p.ci++
		p.i = 0
	}
	return nil
}

// next returns the record at p and advances p (newest to oldest).
func (l *list) next(p *pos) *record {
	r := l.at(p)
	if r != nil {
		p.i++
	}
	return r
}

// prev moves p one step back (oldest to newest) and returns that record,
// or nil at the start.
func (l *list) prev(p *pos) *record {
	for {
		if p.i > 0 {
			p.i--
			return l.chunks[p.ci][p.i]
		}
		if p.ci == 0 {
			return nil
		}
		p.ci--
		p.i = len(l.chunks[p.ci])
	}
}

// end is the position after the last (oldest) record.
func (l *list) end() pos { return pos{len(l.chunks), 0} }

// each calls fn for every record newest first until fn returns false.
func (l *list) each(fn func(*record) bool) {
	for _, c := range l.chunks {
		for _, r := range c {
			if !fn(r) {
				return
			}
		}
	}
}

// upTo returns the predicate "record is at or older than until".
func upTo(until int64) func(*record) bool {
	return func(r *record) bool { return r.at <= until }
}

// afterCursor returns the predicate "record ranks after (at, id)", i.e.
// created_at < at, or created_at == at and id > id.
func afterCursor(at int64, id string) func(*record) bool {
	return func(r *record) bool { return r.at < at || (r.at == at && r.id > id) }
}
