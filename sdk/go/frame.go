package herald

// World 0.7.0's delivery frames, read: one or more notifications in one
// list of bytes, the layout wit/0.7.0/herald.wit documents on `delivery`.
// The frame arrives as one allocation the host wrote into (the bindings lift
// it without a copy), and every Event and Update read from it points into
// that memory: the context's strings and the objects' JSON are slices of
// the frame, made strings in place, so a notification's object is copied
// into the plugin once, by the host, and never again. The frame is never
// written after it is read, and a string keeps the whole allocation alive
// for as long as the handler holds it.

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// What happened: the first byte of a notification.
const (
	frameAdded   = 0
	frameUpdated = 1
	frameDeleted = 2
)

// The flags byte of a notification.
const (
	flagInitialList       = 1
	flagResync            = 2
	flagFinalStateUnknown = 4
	flagOldState          = 8
	knownFlags            = flagInitialList | flagResync | flagFinalStateUnknown | flagOldState
)

// frameHead is a notification's fixed part: what, flags, two zero bytes and
// seven u32 lengths.
const frameHead = 4 + 7*4

// notification is one notification of a frame: an add or a delete (event),
// or an update.
type notification struct {
	what   byte
	event  *Event
	update *Update
}

// handle calls h's method for n.
func (n notification) handle(h Handler) error {
	switch n.what {
	case frameAdded:
		return h.OnAdd(n.event)
	case frameUpdated:
		return h.OnUpdate(n.update)
	default:
		return h.OnDelete(n.event)
	}
}

// frameReader reads a frame's notifications in order. Its errors say where
// the frame stops making sense; nothing it reads past the frame's end, and
// no length, however large, makes it panic.
type frameReader struct {
	data []byte
	at   int
}

// count reads the frame's number of notifications, its first u32.
func (r *frameReader) count() (uint32, error) {
	return r.u32()
}

// u32 reads a little-endian u32.
func (r *frameReader) u32() (uint32, error) {
	if len(r.data)-r.at < 4 {
		return 0, fmt.Errorf("the frame ends at byte %d inside a length", len(r.data))
	}
	v := binary.LittleEndian.Uint32(r.data[r.at:])
	r.at += 4
	return v, nil
}

// text reads the next n bytes as a string that shares the frame's memory.
func (r *frameReader) text(n uint32) (string, error) {
	if uint64(n) > uint64(len(r.data)-r.at) {
		return "", fmt.Errorf("a field of %d bytes at byte %d runs past the frame's end (%d bytes)", n, r.at, len(r.data))
	}
	if n == 0 {
		return "", nil
	}
	s := unsafe.String(&r.data[r.at], int(n))
	r.at += int(n)
	return s, nil
}

// next reads the notification that starts here. It runs once per
// notification, most of what a plugin that does little spends on a call:
// the seven lengths are read in place and each field made a string without
// a call, and only a field past the frame's end takes the slow way, to say
// which.
func (r *frameReader) next() (notification, error) {
	data, at := r.data, r.at
	if len(data)-at < frameHead {
		return notification{}, fmt.Errorf("the frame ends at byte %d inside a notification's head (%d bytes from byte %d)",
			len(data), frameHead, at)
	}
	what, flags := data[at], data[at+1]
	if flags&^knownFlags != 0 || data[at+2] != 0 || data[at+3] != 0 {
		return notification{}, fmt.Errorf("unknown flags % x at byte %d (a newer host?)", data[at+1:at+4], at+1)
	}
	if what > frameDeleted {
		return notification{}, fmt.Errorf("unknown notification type %d at byte %d (a newer host?)", what, at)
	}
	lengths := at + 4
	at += frameHead
	// Group, version, kind, resource, key, resourceVersion, object.
	var fields [7]string
	for i := range fields {
		n := load32(data, lengths+4*i)
		if uint64(n) > uint64(len(data)-at) {
			return notification{}, fmt.Errorf("a field of %d bytes at byte %d runs past the frame's end (%d bytes)", n, at, len(data))
		}
		if n != 0 {
			fields[i] = unsafe.String(&data[at], int(n))
			at += int(n)
		}
	}
	r.at = at
	var old string
	if flags&flagOldState != 0 {
		n, err := r.u32()
		if err != nil {
			return notification{}, err
		}
		if old, err = r.text(n); err != nil {
			return notification{}, err
		}
	}
	ctx := Context{
		Kind:              GroupVersionKind{Group: fields[0], Version: fields[1], Kind: fields[2]},
		Resource:          fields[3],
		Key:               fields[4],
		ResourceVersion:   fields[5],
		IsInitialList:     flags&flagInitialList != 0,
		IsResync:          flags&flagResync != 0,
		FinalStateUnknown: flags&flagFinalStateUnknown != 0,
	}
	if what == frameUpdated {
		return notification{what: what, update: &Update{Context: ctx, OldJSON: old, NewJSON: fields[6]}}, nil
	}
	return notification{what: what, event: &Event{Context: ctx, JSON: fields[6]}}, nil
}
