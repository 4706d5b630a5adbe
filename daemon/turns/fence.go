package turns

// closedMemory bounds how many closed turn ids the fence remembers: enough
// to recognise any late result of recent turns, small enough to never grow.
const closedMemory = 64

// fence makes sure exactly one turn's result is ever acted on: only the
// open turn's id is accepted; a late, unknown or already closed id is
// refused. It is the one record of whether a turn's result is settled.
type fence struct {
	current string
	closed  [closedMemory]string
	next    int
}

// open makes id the current turn.
func (f *fence) open(id string) { f.current = id }

// isOpen reports whether id is the open turn.
func (f *fence) isOpen(id string) bool { return id != "" && id == f.current }

// close closes id; it reports whether id was the open turn (false when it
// was already closed, or unknown).
func (f *fence) close(id string) bool {
	if !f.isOpen(id) {
		return false
	}
	f.current = ""
	f.closed[f.next] = id
	f.next = (f.next + 1) % closedMemory
	return true
}

// wasClosed reports whether id is among the recently closed turns, so a
// late result can be logged as late rather than unknown.
func (f *fence) wasClosed(id string) bool {
	for _, c := range f.closed {
		if c != "" && c == id {
			return true
		}
	}
	return false
}
