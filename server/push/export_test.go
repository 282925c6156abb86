package push

// WithTickHook has hook learn when each feed tick starts (done false) and
// ends (done true), whether or not the tick needed Redis: tests wait on
// ticks with it.
func WithTickHook(hook func(eventID string, done bool)) Option {
	return func(h *Hub) { h.tickHook = hook }
}
