package sqlite

// maxCachedOwners bounds the subscription cache; past it, it starts over.
const maxCachedOwners = 100_000

// subscriptionCounts caches how many enabled webhook subscriptions each
// owner has, so that a create whose owner has none skips the outbox
// statement (the common case, and the cost of a statement per create).
//
// It is exact, not a guess with a lifetime: only the committer goroutine
// reads or changes it (no lock), inside the write transaction, and
//   - the store's own writes that change the count (InsertSubscription,
//     DeleteSubscription, a delivery that disables its subscription) adjust
//     it in the same transaction;
//   - a transaction that does not commit clears it (its adjustments were
//     not kept);
//   - at the start of every batch, inside the write transaction (which
//     holds the file's write lock), PRAGMA data_version tells whether any
//     other connection (another process, or another DB on the same file)
//     committed since the last batch: if so, it is cleared.
//
// An owner not in the cache is counted with one query, then cached.
type subscriptionCounts struct {
	m       map[string]int
	version int64 // data_version at the last check; 0: none yet
}

// check clears the cache when another connection has written since the
// last batch.
func (c *subscriptionCounts) check(w *writer) error {
	w.reset()
	row, err := w.one(qDataVersion)
	var v int64
	if err == nil {
		v, err = int64Of(row[0])
	}
	if err != nil {
		return wrap("data version", err)
	}
	if v != c.version {
		c.clear()
		c.version = v
	}
	return nil
}

// count returns how many enabled subscriptions owner has.
func (c *subscriptionCounts) count(w *writer, owner string) (int, error) {
	if n, ok := c.m[owner]; ok {
		return n, nil
	}
	w.reset()
	w.arg(owner)
	row, err := w.one(qCountSubscriptions)
	var k int64
	if err == nil {
		k, err = int64Of(row[0])
	}
	if err != nil {
		return 0, wrap("count webhooks", err)
	}
	n := int(k)
	if c.m == nil || len(c.m) >= maxCachedOwners {
		c.m = make(map[string]int)
	}
	c.m[owner] = n
	return n, nil
}

// add changes owner's count by delta, when it is cached.
func (c *subscriptionCounts) add(owner string, delta int) {
	if n, ok := c.m[owner]; ok {
		c.m[owner] = n + delta
	}
}

// clear forgets every count.
func (c *subscriptionCounts) clear() { clear(c.m) }
