package queue

// StreamKey is eventID's record stream, for tests that write it directly.
func StreamKey(eventID string) string { return key(eventID, keyStream) }
