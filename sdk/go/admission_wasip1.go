//go:build wasip1

package herald

import (
	"herald.dev/sdk/go/internal/cabi"
	types2 "herald.dev/sdk/go/internal/wit/herald/plugin/v0.2.0/types"
	admission "herald.dev/sdk/go/internal/wit/herald/plugin/v0.5.0/admission"
)

// The component's admission exports call the registered handler: what it
// admits from its manifest, its decisions from Validate and Mutate (or the
// error saying it does not admit).
func init() {
	admission.ExportDeclare = func() admission.Webhooks {
		validating, mutating := declaredWebhooks(must())
		return admission.Webhooks{Validating: webhookWIT(validating), Mutating: webhookWIT(mutating)}
	}
	admission.ExportValidate = func(review admission.Review) cabi.Result[admission.Verdict, string] {
		verdict, err := validate(must(), reviewFromWIT(review))
		if err != nil {
			return cabi.Err[admission.Verdict](errorText(err))
		}
		return cabi.OK[admission.Verdict, string](verdictWIT(verdict))
	}
	admission.ExportMutate = func(review admission.Review) cabi.Result[admission.Mutation, string] {
		mutation, err := mutate(must(), reviewFromWIT(review))
		if err != nil {
			return cabi.Err[admission.Mutation](errorText(err))
		}
		return cabi.OK[admission.Mutation, string](admission.Mutation{
			Verdict: verdictWIT(&mutation.Verdict),
			Change:  changeWIT(mutation.Change),
		})
	}
}

func webhookWIT(w *Webhook) *admission.Webhook {
	if w == nil {
		return nil
	}
	out := &admission.Webhook{
		NamespaceSelector: opt(w.NamespaceSelector),
		ObjectSelector:    opt(w.ObjectSelector),
		FailurePolicy:     admission.FailurePolicy(w.FailurePolicy),
	}
	if w.TimeoutSeconds > 0 {
		seconds := w.TimeoutSeconds
		out.TimeoutSeconds = &seconds
	}
	for _, r := range w.Rules {
		rule := admission.Rule{Kind: gvkWIT(r.Kind), Subresource: opt(r.Subresource)}
		for _, op := range r.Operations {
			rule.Operations = append(rule.Operations, admission.Operation(op))
		}
		out.Rules = append(out.Rules, rule)
	}
	return out
}

func reviewFromWIT(r admission.Review) *AdmissionReview {
	review := &AdmissionReview{
		UID:         r.Uid,
		Kind:        gvkFromWIT(r.Kind),
		Resource:    r.Resource,
		Subresource: r.Subresource,
		Name:        r.Name,
		Namespace:   r.Namespace,
		Operation:   Operation(r.Operation),
		UserInfo: UserInfo{
			Username: r.UserInfo.Username,
			UID:      r.UserInfo.Uid,
			Groups:   r.UserInfo.Groups,
		},
		ObjectJSON:    deref(r.Object),
		OldObjectJSON: deref(r.OldObject),
		DryRun:        r.DryRun,
		OptionsJSON:   deref(r.Options),
	}
	if len(r.UserInfo.Extra) > 0 {
		review.UserInfo.Extra = make(map[string][]string, len(r.UserInfo.Extra))
		for _, attr := range r.UserInfo.Extra {
			review.UserInfo.Extra[attr.F0] = attr.F1
		}
	}
	return review
}

func verdictWIT(v *Verdict) admission.Verdict {
	out := admission.Verdict{Allowed: v.Allowed, Message: v.Message, Warnings: v.Warnings}
	if v.Code != 0 {
		code := v.Code
		out.Code = &code
	}
	return out
}

func changeWIT(c Change) admission.Change {
	switch c.Kind {
	case ChangeJSONPatch:
		return admission.Change{Tag: admission.ChangeTagJsonPatch, JsonPatch: c.JSON}
	case ChangeObject:
		return admission.Change{Tag: admission.ChangeTagObject, Object: c.JSON}
	}
	return admission.Change{Tag: admission.ChangeTagNone}
}

func gvkFromWIT(k types2.GroupVersionKind) GroupVersionKind {
	return GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
