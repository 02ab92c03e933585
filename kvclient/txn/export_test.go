package txn

// SetAfterPrimaryLocked makes every lock round call f after it locked the
// primary it chose, before the other keys; the returned func undoes it.
func SetAfterPrimaryLocked(f func()) (restore func()) {
	afterPrimaryLocked = f
	return func() { afterPrimaryLocked = nil }
}
