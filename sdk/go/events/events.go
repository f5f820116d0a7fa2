// Package events publishes Kubernetes Events (events.k8s.io/v1) about
// objects; the reporting controller is `herald.dev/<plugin-name>`. Repeats
// are merged into series and floods rate-limited by the host, as client-go's
// recorder does. Needs the `events` capability.
//
//	events.Warning(pod, "DisallowedImage", "image nginx:latest is not pinned")
//	events.New(pod, events.TypeNormal, "Labelled", "labelled seen=true").Action("Label").Publish()
package events

import (
	"encoding/json"
	"fmt"
	"reflect"

	herald "herald.dev/sdk/go"
	"herald.dev/sdk/go/internal/host"
)

// Type is Normal or Warning.
type Type = host.EventType

// The event types.
const (
	TypeNormal  = host.EventNormal
	TypeWarning = host.EventWarning
)

// ObjectReference is the object an Event is about.
type ObjectReference = host.ObjectReference

// Error is the host's refusal (a kube.Error).
type Error = host.KubeError

// Ref is a reference to obj: anything that encodes to an object with
// metadata.name (any k8s.io/api object; apiVersion and kind come from the
// JSON or, when empty, from the Go type, see herald.KindOf), or a
// *herald.ObjectView.
func Ref(obj any) (ObjectReference, error) {
	if v, ok := obj.(*herald.ObjectView); ok {
		return RefFromView(v)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return ObjectReference{}, fmt.Errorf("events: encoding the object: %w", err)
	}
	var head struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Metadata   herald.MetaView `json:"metadata"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return ObjectReference{}, fmt.Errorf("events: not a Kubernetes object: %w", err)
	}
	view := &herald.ObjectView{APIVersion: head.APIVersion, Kind: head.Kind, Metadata: head.Metadata}
	if view.APIVersion == "" || view.Kind == "" {
		if k, ok := herald.KindOfType(reflect.TypeOf(obj)); ok {
			view.APIVersion, view.Kind = herald.APIVersion(k), k.Kind
		}
	}
	return RefFromView(view)
}

// RefFromView is a reference to the object read through a view.
func RefFromView(v *herald.ObjectView) (ObjectReference, error) {
	if v.APIVersion == "" || v.Kind == "" || v.Metadata.Name == "" {
		return ObjectReference{}, fmt.Errorf("events: the object needs apiVersion, kind and metadata.name (have %q, %q, %q)", v.APIVersion, v.Kind, v.Metadata.Name)
	}
	group, version := "", v.APIVersion
	for i := len(v.APIVersion) - 1; i >= 0; i-- {
		if v.APIVersion[i] == '/' {
			group, version = v.APIVersion[:i], v.APIVersion[i+1:]
			break
		}
	}
	return ObjectReference{
		Kind:            herald.GVK(group, version, v.Kind),
		Namespace:       v.Metadata.Namespace,
		Name:            v.Metadata.Name,
		UID:             v.Metadata.UID,
		ResourceVersion: v.Metadata.ResourceVersion,
	}, nil
}

// Event is one Event being built.
type Event struct {
	ev  host.Event
	err error
}

// New is an Event about obj (see Ref); the action defaults to the reason.
func New(obj any, t Type, reason, note string) *Event {
	ref, err := Ref(obj)
	return &Event{ev: host.Event{Regarding: ref, Type: t, Reason: reason, Action: reason, Note: note}, err: err}
}

// About is an Event about a reference built by hand.
func About(ref ObjectReference, t Type, reason, note string) *Event {
	return &Event{ev: host.Event{Regarding: ref, Type: t, Reason: reason, Action: reason, Note: note}}
}

// Action sets what the plugin did or failed to do, in UpperCamelCase.
func (e *Event) Action(action string) *Event {
	e.ev.Action = action
	return e
}

// Related names a second object involved (see Ref).
func (e *Event) Related(obj any) *Event {
	ref, err := Ref(obj)
	if err != nil && e.err == nil {
		e.err = err
	}
	e.ev.Related = &ref
	return e
}

// Publish records the Event. Being merged into a series or dropped by the
// flood limit is not an error.
func (e *Event) Publish() error {
	if e.err != nil {
		return e.err
	}
	return host.Get().PublishEvent(e.ev)
}

// Normal publishes a Normal Event about obj, the action being the reason.
func Normal(obj any, reason, note string) error { return New(obj, TypeNormal, reason, note).Publish() }

// Warning publishes a Warning Event about obj, the action being the reason.
func Warning(obj any, reason, note string) error {
	return New(obj, TypeWarning, reason, note).Publish()
}
