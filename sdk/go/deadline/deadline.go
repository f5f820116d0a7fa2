// Package deadline says how long the call under way has left before its
// deadline (the deadline interface of world herald:plugin/plugin@0.4.0).
//
// The host ends a call that passes its deadline with a deadline fault (the
// instance is rebuilt and the notification retried), and bounds every host
// call by it: a Kubernetes or HTTP request gets at most 80 % of what is
// left. A handler with more than one slow thing to do asks first:
//
//	func (p *Batch) OnAdd(e *herald.Event) error {
//		if deadline.Remaining() < 200*time.Millisecond {
//			// Not enough time for the webhook: come back to it.
//			workqueue.RequeueAfter(time.Second)
//			return nil
//		}
//		// … the slow call …
//		return nil
//	}
//
// In tests, heraldtest's Host answers a second unless SetDeadlineRemaining
// says otherwise.
package deadline

import (
	"time"

	"herald.dev/sdk/go/internal/host"
)

// Remaining is what is left of the call under way (a handler call, or
// Manifest) before its deadline, to the millisecond (rounded down); zero
// once it has passed.
func Remaining() time.Duration { return host.Get().DeadlineRemaining() }
