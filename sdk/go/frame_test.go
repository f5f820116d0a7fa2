package herald

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// written is one notification to write into a frame, as the host writes it.
type written struct {
	what    byte
	ctx     Context
	object  string
	old     *string // flag 8 and the old state, when set
	rawHead []byte  // what and flags as given, when set (a garbled head)
}

// writeFrame is a frame of notes, laid out as wit/0.7.0/herald.wit says.
func writeFrame(notes ...written) []byte {
	le := binary.LittleEndian
	out := le.AppendUint32(nil, uint32(len(notes)))
	for _, n := range notes {
		c := n.ctx
		var flags byte
		for bit, set := range map[byte]bool{1: c.IsInitialList, 2: c.IsResync, 4: c.FinalStateUnknown, 8: n.old != nil} {
			if set {
				flags |= bit
			}
		}
		head := []byte{n.what, flags, 0, 0}
		if n.rawHead != nil {
			head = n.rawHead
		}
		out = append(out, head...)
		fields := []string{c.Kind.Group, c.Kind.Version, c.Kind.Kind, c.Resource, c.Key, c.ResourceVersion, n.object}
		for _, f := range fields {
			out = le.AppendUint32(out, uint32(len(f)))
		}
		for _, f := range fields {
			out = append(out, f...)
		}
		if n.old != nil {
			out = le.AppendUint32(out, uint32(len(*n.old)))
			out = append(out, *n.old...)
		}
	}
	return out
}

func ctxOf(key string) Context {
	return Context{
		Kind:            GVK("apps", "v1", "Deployment"),
		Resource:        "deployments",
		Key:             key,
		ResourceVersion: "7",
	}
}

func ptr(s string) *string { return &s }

// recorder is a Handler that records each call, and fails the notification
// whose key is failKey (when set).
type recorder struct {
	Base
	calls   []string
	events  []*Event
	updates []*Update
	failKey string
	failErr error
}

func (*recorder) Manifest() *Manifest { return NewManifest("recorder", "1") }

func (r *recorder) call(what string, c *Context) error {
	r.calls = append(r.calls, what+" "+c.Key)
	if r.failKey != "" && c.Key == r.failKey {
		if r.failErr != nil {
			return r.failErr
		}
		return fmt.Errorf("%s failed", c.Key)
	}
	return nil
}

func (r *recorder) OnAdd(e *Event) error {
	r.events = append(r.events, e)
	return r.call("add", &e.Context)
}

func (r *recorder) OnUpdate(u *Update) error {
	r.updates = append(r.updates, u)
	return r.call("update", &u.Context)
}

func (r *recorder) OnDelete(e *Event) error {
	r.events = append(r.events, e)
	return r.call("delete", &e.Context)
}

// inFrame says whether s's bytes lie inside frame's memory (shared, not a
// copy).
func inFrame(s string, frame []byte) bool {
	if s == "" {
		return true
	}
	start := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	base := uintptr(unsafe.Pointer(unsafe.SliceData(frame)))
	return start >= base && start+uintptr(len(s)) <= base+uintptr(len(frame))
}

func TestAFrameReadsBackAsTheNotificationsWrittenSharingItsMemory(t *testing.T) {
	initial := ctxOf("shop/a")
	initial.IsInitialList = true
	resync := ctxOf("shop/b")
	resync.IsResync = true
	gone := Context{Kind: GVK("", "v1", "Namespace"), Resource: "namespaces", Key: "c", ResourceVersion: "", FinalStateUnknown: true}
	frame := writeFrame(
		written{what: frameAdded, ctx: initial, object: `{"a":1}`},
		written{what: frameUpdated, ctx: resync, object: `{"é":2}`, old: ptr(`{"é":1}`)},
		written{what: frameUpdated, ctx: ctxOf("shop/b"), object: `{}`},
		written{what: frameDeleted, ctx: gone, object: `{"c":3}`},
	)
	r := &recorder{}
	if f := deliver(r, frame); f != nil {
		t.Fatalf("deliver: %+v", *f)
	}
	if got, want := strings.Join(r.calls, ", "), "add shop/a, update shop/b, update shop/b, delete c"; got != want {
		t.Fatalf("calls %q, want %q", got, want)
	}
	added, deleted := r.events[0], r.events[1]
	withOld, withoutOld := r.updates[0], r.updates[1]
	if added.Context != initial || added.JSON != `{"a":1}` {
		t.Errorf("the add: %+v", *added)
	}
	if withOld.Context != resync || withOld.OldJSON != `{"é":1}` || withOld.NewJSON != `{"é":2}` {
		t.Errorf("the update with its old state: %+v", *withOld)
	}
	if withoutOld.Context != ctxOf("shop/b") || withoutOld.OldJSON != "" || withoutOld.NewJSON != "{}" {
		t.Errorf("the update without its old state: %+v", *withoutOld)
	}
	if deleted.Context != gone || deleted.JSON != `{"c":3}` || deleted.Namespace() != "" || deleted.Name() != "c" {
		t.Errorf("the delete: %+v", *deleted)
	}
	// No copies: every string the handler got is a slice of the frame.
	for _, s := range []string{added.JSON, added.Key, added.Kind.Group, added.Resource, withOld.OldJSON, withOld.NewJSON, deleted.JSON, deleted.Kind.Kind} {
		if !inFrame(s, frame) {
			t.Errorf("%q was copied out of the frame", s)
		}
	}
	// The objects read as any event's do.
	var obj map[string]int
	if err := withOld.Old(&obj); err != nil || obj["é"] != 1 {
		t.Errorf("Old: %v %v", obj, err)
	}
	if v, err := withOld.NewView(); err != nil || v.Raw("é") != "2" {
		t.Errorf("NewView: %v", err)
	}
}

func TestAnUpdateWithoutItsOldStateSaysWhy(t *testing.T) {
	frame := writeFrame(written{what: frameUpdated, ctx: ctxOf("shop/x"), object: `{"kind":"Deployment"}`})
	r := &recorder{}
	if f := deliver(r, frame); f != nil {
		t.Fatalf("deliver: %+v", *f)
	}
	u := r.updates[0]
	var v map[string]any
	if err := u.Old(&v); !errors.Is(err, errNoOldState) || !strings.Contains(err.Error(), "SkipOldState") {
		t.Errorf("Old: %v", err)
	}
	if _, err := u.OldView(); !errors.Is(err, errNoOldState) {
		t.Errorf("OldView: %v", err)
	}
	if _, _, err := DecodeUpdate[map[string]any](u); !errors.Is(err, errNoOldState) {
		t.Errorf("DecodeUpdate: %v", err)
	}
	if err := u.New(&v); err != nil || v["kind"] != "Deployment" {
		t.Errorf("New: %v %v", v, err)
	}
}

func TestDeliverStopsAtTheFirstFailureAndNamesItsIndex(t *testing.T) {
	frame := writeFrame(
		written{what: frameAdded, ctx: ctxOf("shop/a"), object: "{}"},
		written{what: frameUpdated, ctx: ctxOf("shop/b"), object: "{}", old: ptr("{}")},
		written{what: frameDeleted, ctx: ctxOf("shop/bad"), object: "{}"},
		written{what: frameAdded, ctx: ctxOf("shop/d"), object: "{}"},
	)
	r := &recorder{failKey: "shop/bad"}
	f := deliver(r, frame)
	if f == nil || f.index != 2 || f.message != "shop/bad failed" {
		t.Fatalf("failure %+v, want index 2", f)
	}
	if got, want := strings.Join(r.calls, ", "), "add shop/a, update shop/b, delete shop/bad"; got != want {
		t.Errorf("calls %q, want %q: nothing after the failure", got, want)
	}
	// The first notification failing is index 0; an error without a
	// message is named by its type, as every handler error is.
	r = &recorder{failKey: "shop/a", failErr: emptyError{}}
	if f := deliver(r, frame); f == nil || f.index != 0 || f.message != "herald.emptyError" || len(r.calls) != 1 {
		t.Errorf("failure %+v after %q", f, r.calls)
	}
}

func TestAMalformedFrameFailsWhereItBreaksWithoutPanicking(t *testing.T) {
	one := written{what: frameAdded, ctx: ctxOf("shop/a"), object: `{"a":1}`}
	good := writeFrame(one, one)
	lengthAt := 4 + 4 + 6*4 // the first notification's object length
	patched := func(at int, b ...byte) []byte {
		frame := append([]byte(nil), good...)
		copy(frame[at:], b)
		return frame
	}
	oldCut := writeFrame(written{what: frameUpdated, ctx: ctxOf("k"), object: "{}", old: ptr("{}")})
	cases := []struct {
		name    string
		frame   []byte
		index   uint32
		handled int
		says    string
	}{
		{"empty", nil, 0, 0, "ends at byte 0 inside a length"},
		{"too short for its count", []byte{1, 0}, 0, 0, "ends at byte 2 inside a length"},
		{"fewer notifications than its count", patched(0, 3), 2, 2, "ends at byte"},
		{"a length past the end", patched(lengthAt, 200), 0, 0, "a field of 200 bytes"},
		{"a length of 4 GiB", patched(lengthAt, 0xff, 0xff, 0xff, 0xff), 0, 0, "runs past the frame's end"},
		{"an unknown notification type", patched(4, 9), 0, 0, "unknown notification type 9"},
		{"unknown flags", patched(5, 0x40), 0, 0, "unknown flags 40 00 00"},
		{"a nonzero padding byte", patched(7, 1), 0, 0, "unknown flags"},
		{"bytes after the last notification", append(append([]byte(nil), good...), 'x'), 2, 2, "1 bytes follow its last notification"},
		{"an old state whose length is cut off", oldCut[:len(oldCut)-len("{}")-2], 0, 0, "ends at byte"},
		{"a second notification cut short", good[:len(good)-3], 1, 1, "runs past the frame's end"},
	}
	for _, c := range cases {
		r := &recorder{}
		f := deliver(r, c.frame)
		if f == nil {
			t.Errorf("%s: delivered", c.name)
			continue
		}
		if f.index != c.index || len(r.calls) != c.handled {
			t.Errorf("%s: failed at %d after %d calls, want %d after %d (%s)", c.name, f.index, len(r.calls), c.index, c.handled, f.message)
		}
		if !strings.HasPrefix(f.message, "malformed delivery frame: ") || !strings.Contains(f.message, c.says) {
			t.Errorf("%s: %q does not say %q", c.name, f.message, c.says)
		}
	}
	// A frame of no notifications, as a host never sends, is no failure.
	if f := deliver(&recorder{}, []byte{0, 0, 0, 0}); f != nil {
		t.Errorf("an empty frame: %+v", *f)
	}
}

func TestEveryTruncationOfAFrameFailsAfterTheNotificationsItStillHolds(t *testing.T) {
	frame := writeFrame(
		written{what: frameAdded, ctx: ctxOf("shop/a"), object: `{"a":1}`},
		written{what: frameUpdated, ctx: ctxOf("shop/b"), object: `{"b":2}`, old: ptr(`{"b":1}`)},
		written{what: frameDeleted, ctx: ctxOf("shop/c"), object: `{"c":3}`},
	)
	ends := []int{}
	r := frameReader{data: frame}
	r.count()
	for range 3 {
		if _, err := r.next(); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, r.at)
	}
	for n := range len(frame) {
		rec := &recorder{}
		f := deliver(rec, frame[:n])
		whole := 0
		for _, end := range ends {
			if end <= n {
				whole++
			}
		}
		if f == nil || int(f.index) != whole || len(rec.calls) != whole {
			t.Fatalf("cut at %d: failure %+v after %d calls, want index %d", n, f, len(rec.calls), whole)
		}
	}
}

func FuzzDeliverNeverPanics(f *testing.F) {
	f.Add(writeFrame(
		written{what: frameAdded, ctx: ctxOf("shop/a"), object: `{}`},
		written{what: frameUpdated, ctx: ctxOf("shop/b"), object: `{}`, old: ptr(`{}`)},
	))
	f.Add([]byte{1, 0, 0, 0, 1, 8, 0, 0})
	f.Fuzz(func(t *testing.T, frame []byte) {
		// A handler that never fails: a failure is the frame's, at the
		// notification after the last one handled.
		r := &recorder{}
		fail := deliver(r, frame)
		if fail != nil && (int(fail.index) != len(r.calls) || !strings.HasPrefix(fail.message, "malformed delivery frame: ")) {
			t.Errorf("failed at %d after %d calls: %s", fail.index, len(r.calls), fail.message)
		}
		if fail == nil && len(frame) >= 4 && uint32(len(r.calls)) != binary.LittleEndian.Uint32(frame) {
			t.Errorf("delivered %d notifications of %d", len(r.calls), binary.LittleEndian.Uint32(frame))
		}
	})
}

// configured asks for options of its own.
type configured struct {
	recorder
	options DeliveryOptions
}

func (c *configured) DeliveryOptions() DeliveryOptions { return c.options }

func TestDeliveryOptionsDefaultToTheOldStateAndOneNotificationPerCall(t *testing.T) {
	cases := []struct {
		h        Handler
		oldState bool
		maxBatch uint32
	}{
		{&recorder{}, true, 1},
		{&configured{}, true, 1},
		{&configured{options: DeliveryOptions{SkipOldState: true}}, false, 1},
		{&configured{options: DeliveryOptions{MaxBatch: 64}}, true, 64},
		{&configured{options: DeliveryOptions{SkipOldState: true, MaxBatch: 1}}, false, 1},
	}
	for _, c := range cases {
		oldState, maxBatch := deliveryOptions(c.h)
		if oldState != c.oldState || maxBatch != c.maxBatch {
			t.Errorf("%T %+v: old state %v, max batch %d; want %v, %d", c.h, c.h, oldState, maxBatch, c.oldState, c.maxBatch)
		}
	}
}
