package cost

import "fmt"

// SetBetweenChunks makes l's snapshots call f each time they give a budget's lock back
// between two chunks of its accounts.
func SetBetweenChunks(l *Ledger, f func()) { l.betweenChunks = f }

// LockFree reports whether nothing holds the lock of l's budget name now.
func LockFree(l *Ledger, name string) bool {
	for _, b := range l.budgets {
		if b.Name == name {
			if !b.mu.TryLock() {
				return false
			}
			b.mu.Unlock()
			return true
		}
	}
	panic("no budget " + name)
}

// SnapshotChunk is how many accounts a snapshot reads under one hold of a budget's lock.
const SnapshotChunk = snapshotChunk

// CheckOrder reports whether the order of l's budget name holds exactly its accounts, each at
// its index.
func CheckOrder(l *Ledger, name string) error {
	for _, b := range l.budgets {
		if b.Name != name {
			continue
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.order) != len(b.accounts) {
			return fmt.Errorf("%d accounts in order, %d in the map", len(b.order), len(b.accounts))
		}
		for i, a := range b.order {
			if a.at != i || b.accounts[a.key] != a {
				return fmt.Errorf("order[%d] is %q at %d, the map's is %p, not %p", i, a.key, a.at, b.accounts[a.key], a)
			}
		}
		return nil
	}
	panic("no budget " + name)
}
