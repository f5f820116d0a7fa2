// Command admission-gate is the Go SDK's admission fixture: a plugin that
// validates and mutates Pods, logging every field of each review and giving
// every kind of answer, so that host/tests/cli/sdk_go.rs can build it with
// `herald plugin build` and replay reviews through the real ABI.
package main

import (
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	herald "herald.dev/sdk/go"
)

// Gate decides on Pods by their `gate` label.
type Gate struct {
	herald.Base // it subscribes to nothing
}

// Manifest declares both webhooks, with every field of one set.
func (g *Gate) Manifest() *herald.Manifest {
	return herald.NewManifest("go-admission-gate", "0.1.0").
		Validating(herald.NewWebhook().
			Rule(herald.AdmissionRuleFor[corev1.Pod]().Create().Update()).
			Rule(herald.AdmissionRuleFor[corev1.Pod]().Update().OfSubresource("status"))).
		Mutating(herald.NewWebhook().
			Rule(herald.AdmissionRuleFor[corev1.Pod]().Create()).
			ObjectsLabelled("app").
			WithFailurePolicy(herald.FailurePolicyIgnore).
			WithTimeoutSeconds(5))
}

// logReview logs every field of r as it crossed the ABI.
func logReview(decision string, r *herald.AdmissionReview) {
	var extra []string
	for name, values := range r.UserInfo.Extra {
		extra = append(extra, name+"="+strings.Join(values, "+"))
	}
	slices.Sort(extra)
	old := "none"
	if v, err := r.OldObjectView(); err == nil {
		old = v.Metadata.ResourceVersion
	}
	var options struct{ Kind string }
	if r.OptionsJSON != "" {
		if err := json.Unmarshal([]byte(r.OptionsJSON), &options); err != nil {
			options.Kind = err.Error()
		}
	}
	slog.Info(decision,
		"uid", r.UID, "operation", r.Operation, "kind", r.Kind, "resource", r.Resource,
		"subresource", r.Subresource, "key", r.Key(), "user", r.UserInfo.Username,
		"userUID", r.UserInfo.UID, "groups", strings.Join(r.UserInfo.Groups, ","),
		"extra", strings.Join(extra, ";"), "dryRun", r.DryRun, "options", options.Kind,
		"oldResourceVersion", old)
}

// Validate refuses `gate=deny` (422, with a warning), fails on `gate=error`
// and panics on `gate=panic`; it allows the rest with a warning.
func (g *Gate) Validate(r *herald.AdmissionReview) (*herald.Verdict, error) {
	logReview("validate", r)
	pod, err := r.ObjectView()
	if err != nil {
		return nil, err
	}
	switch pod.Metadata.Labels["gate"] {
	case "deny":
		return herald.Deny("gate=deny refuses " + r.Key()).WithCode(422).Warn("refused by label"), nil
	case "error":
		return nil, errors.New("gate=error fails")
	case "panic":
		panic("gate=panic panics")
	}
	return herald.Allow().Warn("checked for " + r.UserInfo.Username), nil
}

// Mutate adds `team=shop` by a JSON Patch when the Pod has no team; with
// `gate=rewrite` it returns the whole Pod changed (its first image
// pinned) instead.
func (g *Gate) Mutate(r *herald.AdmissionReview) (*herald.Mutation, error) {
	logReview("mutate", r)
	pod, err := herald.DecodeObject[corev1.Pod](r)
	if err != nil {
		return nil, err
	}
	if pod.Labels["gate"] == "rewrite" {
		pod.Spec.Containers[0].Image += ":1.27"
		return herald.ChangedObject(pod)
	}
	if _, found := pod.Labels["team"]; !found {
		return herald.Patch(herald.PatchAdd(herald.JSONPointer("metadata", "labels", "team"), "shop"))
	}
	return herald.Unchanged(), nil
}

func init() { herald.Register(&Gate{}) }

func main() {}
