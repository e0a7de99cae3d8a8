package desktop

import "testing"

func key(k ReadKind, i int) ReadKey { return ReadKey{Kind: k, Index: i} }

func TestReadQueue(t *testing.T) {
	t.Run("at most six reads run at once and the rest start in order as each settles", func(t *testing.T) {
		q := NewReadQueue(6)
		for i := 0; i < 8; i++ {
			start, taken := q.Add(Read{Key: key(ReadWindow, i)})
			if !taken || (i < 6) != (len(start) == 1) {
				t.Fatalf("read %d: start %v taken %v", i, start, taken)
			}
		}
		if r, qd := q.Len(); r != 6 || qd != 2 {
			t.Fatalf("running %d queued %d", r, qd)
		}
		if got := q.Settle(key(ReadWindow, 3)); len(got) != 1 || got[0].Key != key(ReadWindow, 6) {
			t.Fatalf("settle started %v, want window[6]", got)
		}
	})
	t.Run("a read due while the same read is running is not added again", func(t *testing.T) {
		q := NewReadQueue(6)
		q.Add(Read{Key: key(ReadRoster, 0)})
		if start, taken := q.Add(Read{Key: key(ReadRoster, 0)}); taken || start != nil {
			t.Errorf("duplicate of a running read: %v %v", start, taken)
		}
	})
	t.Run("a read due while the same read is queued is not added again", func(t *testing.T) {
		q := NewReadQueue(1)
		q.Add(Read{Key: key(ReadWindow, 0)})
		q.Add(Read{Key: key(ReadRoster, 0)})
		if _, taken := q.Add(Read{Key: key(ReadRoster, 0)}); taken {
			t.Error("duplicate of a queued read taken")
		}
		if _, qd := q.Len(); qd != 1 {
			t.Errorf("%d queued", qd)
		}
	})
	t.Run("a full repair upgrades a queued covered one", func(t *testing.T) {
		q := NewReadQueue(1)
		q.Add(Read{Key: key(ReadWindow, 0)})
		q.Add(Read{Key: key(ReadUnread, 0)})
		if _, taken := q.Add(Read{Key: key(ReadUnread, 0), Snapshot: true}); !taken {
			t.Error("upgrade not taken")
		}
		if got := q.Settle(key(ReadWindow, 0)); len(got) != 1 || !got[0].Snapshot {
			t.Errorf("started %v, want the upgraded full repair", got)
		}
	})
	t.Run("a read leaves the running set as soon as it settles", func(t *testing.T) {
		q := NewReadQueue(6)
		q.Add(Read{Key: key(ReadWindow, 0)}) // slow, never settles here
		q.Add(Read{Key: key(ReadRoster, 0)})
		q.Settle(key(ReadRoster, 0)) // failed
		if start, taken := q.Add(Read{Key: key(ReadRoster, 0)}); !taken || len(start) != 1 {
			t.Errorf("the settled roster read cannot run again while the window runs: %v %v", start, taken)
		}
	})
	t.Run("settling an unknown read starts nothing", func(t *testing.T) {
		q := NewReadQueue(1)
		q.Add(Read{Key: key(ReadWindow, 0)})
		q.Add(Read{Key: key(ReadWindow, 1)})
		if got := q.Settle(key(ReadRoster, 0)); got != nil {
			t.Errorf("started %v", got)
		}
	})
}
