package push

// WithTickHook has hook learn when each feed tick starts (done false) and
// ends (done true), whether or not the tick needed Redis: tests wait on
// ticks with it. It is called from each event's feed goroutine, so calls
// for different events can come at once.
func WithTickHook(hook func(eventID string, done bool)) Option {
	return func(h *Hub) { h.tickHook = hook }
}
