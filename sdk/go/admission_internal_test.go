package herald

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// What the component's admission exports answer (admission_wasip1.go
// only converts these to and from the WIT's records).

// watcher admits nothing: a plugin written before admission.
type watcher struct{ Base }

func (watcher) Manifest() *Manifest {
	return NewManifest("watcher", "0.1.0").SubscribeKind("", "v1", "Pod")
}

// gate validates and mutates Pods, its answers set by each test.
type gate struct {
	Base
	verdict  *Verdict
	mutation *Mutation
	err      error
	panics   any
}

func (g *gate) Manifest() *Manifest {
	pods := NewAdmissionRule(GVK("", "v1", "Pod")).Create()
	return NewManifest("gate", "0.1.0").
		Validating(NewWebhook().Rule(pods)).
		Mutating(NewWebhook().Rule(pods).WithFailurePolicy(FailurePolicyIgnore))
}

func (g *gate) Validate(*AdmissionReview) (*Verdict, error) {
	if g.panics != nil {
		panic(g.panics)
	}
	return g.verdict, g.err
}

func (g *gate) Mutate(*AdmissionReview) (*Mutation, error) {
	if g.panics != nil {
		panic(g.panics)
	}
	return g.mutation, g.err
}

// forgetful declares a mutating webhook but has no Mutate method.
type forgetful struct{ Base }

func (forgetful) Manifest() *Manifest {
	return NewManifest("forgetful", "0.1.0").
		Mutating(NewWebhook().Rule(NewAdmissionRule(GVK("", "v1", "Pod")).Create()))
}

func TestAPluginThatAdmitsNothingDeclaresNoWebhooksAndRefusesReviews(t *testing.T) {
	validating, mutating := declaredWebhooks(watcher{})
	if validating != nil || mutating != nil {
		t.Fatalf("declared %+v %+v", validating, mutating)
	}
	review := &AdmissionReview{Operation: OperationCreate, Namespace: "shop", Name: "web-0"}
	if v, err := validate(watcher{}, review); v != nil || err == nil ||
		err.Error() != "the plugin does not admit: herald.watcher has no Validate method and declares no validating webhook" {
		t.Errorf("validate: %v %v", v, err)
	}
	if m, err := mutate(watcher{}, review); m != nil || err == nil || !strings.HasPrefix(err.Error(), "the plugin does not admit: herald.watcher has no Mutate method") {
		t.Errorf("mutate: %v %v", m, err)
	}
}

func TestDeclareAnswersTheManifestsWebhooks(t *testing.T) {
	validating, mutating := declaredWebhooks(&gate{})
	if validating == nil || mutating == nil || mutating.FailurePolicy != FailurePolicyIgnore || validating.Rules[0].Operations[0] != OperationCreate {
		t.Fatalf("declared %+v %+v", validating, mutating)
	}
}

func TestAWebhookWithoutItsMethodIsLoggedAtLoadAndFailsEachReview(t *testing.T) {
	var logged strings.Builder
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(Logger())
	validating, mutating := declaredWebhooks(forgetful{})
	if validating != nil || mutating == nil {
		t.Fatalf("declared %+v %+v", validating, mutating)
	}
	const why = "the manifest declares a mutating webhook, but herald.forgetful has no Mutate method"
	if !strings.Contains(logged.String(), "level=ERROR msg=\""+why+"\"") {
		t.Errorf("logged %q", logged.String())
	}
	if m, err := mutate(forgetful{}, &AdmissionReview{}); m != nil || err == nil || err.Error() != why {
		t.Errorf("mutate: %v %v", m, err)
	}
}

func TestDecisionsAndFaultsReachTheHost(t *testing.T) {
	review := &AdmissionReview{}
	g := &gate{verdict: Deny("no").WithCode(422), mutation: Unchanged()}
	if v, err := validate(g, review); err != nil || v.Allowed || v.Code != 422 {
		t.Errorf("verdict: %+v %v", v, err)
	}
	if m, err := mutate(g, review); err != nil || !m.Verdict.Allowed {
		t.Errorf("mutation: %+v %v", m, err)
	}

	// An error is a fault, answered by the failure policy.
	g.err = errors.New("cache unavailable")
	if _, err := validate(g, review); err == nil || err.Error() != "cache unavailable" {
		t.Errorf("error: %v", err)
	}
	// So is a decision missing.
	g.err, g.verdict, g.mutation = nil, nil, nil
	if _, err := validate(g, review); err == nil || err.Error() != "Validate returned neither a verdict nor an error" {
		t.Errorf("no verdict: %v", err)
	}
	if _, err := mutate(g, review); err == nil || err.Error() != "Mutate returned neither a mutation nor an error" {
		t.Errorf("no mutation: %v", err)
	}
	// And a panic: the instance goes on.
	g.panics = "index out of range"
	if v, err := validate(g, review); v != nil || err == nil || err.Error() != "Validate panicked: index out of range" {
		t.Errorf("panic: %v %v", v, err)
	}
	if m, err := mutate(g, review); m != nil || err == nil || err.Error() != "Mutate panicked: index out of range" {
		t.Errorf("panic: %v %v", m, err)
	}
	if errorText(emptyError{}) != "herald.emptyError" || errorText(errors.New("x")) != "x" {
		t.Error("errorText")
	}
}

type emptyError struct{}

func (emptyError) Error() string { return "" }
