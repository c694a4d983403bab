//go:build cgo

package payidem

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"fmt"
	"math"
	"runtime/cgo"
	"time"
)

// TakeOverLoop runs TakeOver in a loop, for a sidecar or a worker
// goroutine, until ctx is done: batches of up to batch operations (0
// counts as 1), sleeping idle when there was nothing to take, but never
// longer than the lease heartbeat (Config.LeaseHeartbeat), so that an
// operation whose holder died is picked up within one heartbeat of its
// lease lapsing; an idle of 0 sleeps a whole heartbeat, so the loop never
// spins on the journal. A journal that cannot be asked (the database restarting)
// is retried after the same sleep, not returned. ctx is looked at between
// operations and during the sleep, not during an operation's call, which
// ends as it would without it. It returns how many operations it drove
// (each one's end is in the journal: Status); a done ctx is its normal
// end, not an error. The loop holds the client: Close waits for it to end.
//
// Errors: ErrInvalidArgument naming "ctx" (nil or never done: the loop
// could not stop), "batch" (outside 0..=4294967295) or "idle" (negative);
// ErrClosed after Close.
func (c *Client) TakeOverLoop(ctx context.Context, batch int, idle time.Duration) (uint64, error) {
	if ctx == nil || ctx.Done() == nil {
		return 0, invalid("ctx", "must be a context that can be done (the loop runs until it is)")
	}
	if batch < 0 || uint64(batch) > math.MaxUint32 {
		return 0, invalid("batch", fmt.Sprintf("%d is outside 0..=4294967295", batch))
	}
	if idle < 0 {
		return 0, invalid("idle", fmt.Sprintf("%v is negative", idle))
	}
	idleMS := uint64((idle + time.Millisecond - 1) / time.Millisecond)
	var driven C.uint64_t
	err := c.call(func(h *C.payidem_client, cerr **C.payidem_error) C.payidem_result {
		stop := cgo.NewHandle(ctx)
		defer stop.Delete()
		return C.payidem_go_take_over_loop(h, C.uint32_t(batch), C.uint64_t(idleMS),
			C.uintptr_t(stop), &driven, cerr)
	})
	return uint64(driven), err
}
