// Command {{name}} is a Herald admission plugin in Go that refuses Pods
// whose images are not pinned (no tag, or `:latest`), at the door, before
// they exist.
package main

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	herald "herald.dev/sdk/go"
)

// Plugin decides on Pods as they are created or updated. It has no state
// of its own.
type Plugin struct {
	herald.Base // it subscribes to nothing: no notification ever comes
}

// Manifest names the plugin and the writes it validates.
func (p *Plugin) Manifest() *herald.Manifest {
	return herald.NewManifest("{{name}}", "0.1.0").
		Validating(herald.NewWebhook().Rule(herald.AdmissionRuleFor[corev1.Pod]().Create().Update()))
}

// pinned reports whether image names a tag other than latest, or a digest.
func pinned(image string) bool {
	if strings.Contains(image, "@") {
		return true
	}
	// The tag follows the last ':' after the last '/' (a registry's port
	// is not a tag).
	last := image[strings.LastIndex(image, "/")+1:]
	colon := strings.LastIndex(last, ":")
	return colon >= 0 && last[colon+1:] != "latest"
}

// Validate refuses a Pod with an unpinned image in any container or init
// container, naming the images.
func (p *Plugin) Validate(review *herald.AdmissionReview) (*herald.Verdict, error) {
	pod, err := herald.DecodeObject[corev1.Pod](review)
	if err != nil {
		return nil, err
	}
	var unpinned []string
	for _, container := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		if container.Image != "" && !pinned(container.Image) {
			unpinned = append(unpinned, container.Image)
		}
	}
	if len(unpinned) > 0 {
		return herald.Deny("images must be pinned to a tag or digest, not latest: " + strings.Join(unpinned, ", ")), nil
	}
	return herald.Allow(), nil
}

func init() { herald.Register(&Plugin{}) }

// main is not called: the component's exports call the plugin.
func main() {}
