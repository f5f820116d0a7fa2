// Package workqueue is the plugin's work queue, with client-go's semantics.
package workqueue

import (
	"time"

	"herald.dev/sdk/go/internal/host"
)

// RequeueAfter asks for the object of the call under way to be delivered
// again after delay (a level-triggered re-check), once the call returns
// nil. The last request of a call wins; a newer change to the object
// delivered before then takes its place. Honoured for coalesced
// subscriptions, ignored with a warning for every-event ones; a call that
// fails is retried with backoff instead.
func RequeueAfter(delay time.Duration) { host.Get().RequeueAfter(delay) }
