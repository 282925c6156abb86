package queue

import (
	"context"
	"fmt"
)

// DropEvent forgets an event in Redis: it leaves the list every replica's
// admission runner and audit writer walk, then its keys go. Its SQL
// definition, if any, is the caller's to delete. Dropping an unknown event
// does nothing.
func (e *Engine) DropEvent(ctx context.Context, eventID string) error {
	if err := e.rdb.SRem(ctx, eventsKey, eventID).Err(); err != nil {
		return fmt.Errorf("queue: drop %s: %w", eventID, storeErr(ctx, err))
	}
	// UNLINK frees a long line's memory in the background (a drop's line may
	// hold a million users); DEL would hold Redis while it does.
	if err := e.rdb.Unlink(ctx, append(Keys(eventID), CrowdKeys(eventID)...)...).Err(); err != nil {
		return fmt.Errorf("queue: drop %s: %w", eventID, storeErr(ctx, err))
	}
	return nil
}
