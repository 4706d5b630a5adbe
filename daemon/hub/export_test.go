package hub

// FramesBeingRead is how many bytes of the frame budget the connections'
// readers hold, for a test to wait until a reader has taken its share.
func (h *Hub) FramesBeingRead() int {
	h.reading.mu.Lock()
	defer h.reading.mu.Unlock()
	return h.cfg.FrameBudget - h.reading.free
}
