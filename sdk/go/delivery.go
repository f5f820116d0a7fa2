package herald

// Delivery (world 0.7.0): the host hands a plugin its notifications as
// frames of bytes, one or more per call (frame.go reads them), after asking
// once per instance what the plugin wants of them (DeliveryOptions). Each
// notification still reaches OnAdd, OnUpdate or OnDelete on its own, in
// order, as an Event or Update like any other.

import "fmt"

// DeliveryOptions is what a plugin asks of its deliveries. The zero value
// is the default, what a Handler that does not implement DeliveryConfigurer
// gets: every update carries its old state, and each call carries one
// notification.
type DeliveryOptions struct {
	// SkipOldState asks the host not to send an update's old state: a
	// plugin that never reads Update.OldJSON, Old or OldView saves the
	// host's copy of the object, and its own memory. Its updates then
	// have an empty OldJSON, and Old and OldView return an error saying
	// the old state was not delivered.
	SkipOldState bool
	// MaxBatch is the most notifications one call may carry; 0 means 1.
	// More than 1 opts into batches of every-event notifications
	// (coalesced ones keep one per call: their retries and requeues are
	// per key): fewer calls for a plugin that wants throughput, one call
	// deadline covering the whole batch, and a returned error retrying
	// only the notification that failed, then those after it. A panic
	// loses the instance and what it knew of the batch: the host delivers
	// the batch again one notification at a time, so those handled before
	// the panic come twice.
	MaxBatch uint32
}

// DeliveryConfigurer is a Handler that asks for other DeliveryOptions than
// the default. The host asks once per instance, after every init function
// has run and before the first notification; keep it free of side effects,
// as Manifest.
//
//	func (p *Counter) DeliveryOptions() herald.DeliveryOptions {
//		return herald.DeliveryOptions{SkipOldState: true, MaxBatch: 64}
//	}
type DeliveryConfigurer interface {
	DeliveryOptions() DeliveryOptions
}

// deliveryOptions is what h asks of its deliveries, as world 0.7.0's
// `delivery-options` record has it: whether updates carry the old state,
// and the largest batch (at least 1).
func deliveryOptions(h Handler) (oldState bool, maxBatch uint32) {
	var o DeliveryOptions
	if c, ok := h.(DeliveryConfigurer); ok {
		o = c.DeliveryOptions()
	}
	return !o.SkipOldState, max(o.MaxBatch, 1)
}

// failure is why a frame was not handled in full: the index of the
// notification that failed (every one before it was handled, it and every
// one after it were not) and the message.
type failure struct {
	index   uint32
	message string
}

// deliver hands the frame's notifications to h in order, each to OnAdd,
// OnUpdate or OnDelete, and stops at the first that fails: nil when every
// one was handled. A notification the frame garbles fails as one whose
// handler returned an error (the message says where the frame breaks);
// bytes after the last notification fail at the index past it, once every
// notification has been handled.
func deliver(h Handler, frame []byte) *failure {
	r := frameReader{data: frame}
	count, err := r.count()
	if err != nil {
		return &failure{0, "malformed delivery frame: " + err.Error()}
	}
	for i := uint32(0); i < count; i++ {
		n, err := r.next()
		if err != nil {
			return &failure{i, "malformed delivery frame: " + err.Error()}
		}
		if err := n.handle(h); err != nil {
			return &failure{i, errorText(err)}
		}
	}
	if rest := len(frame) - r.at; rest != 0 {
		return &failure{count, fmt.Sprintf("malformed delivery frame: %d bytes follow its last notification", rest)}
	}
	return nil
}
