{{/* The chart name, or nameOverride. */}}
{{- define "herald.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Objects' name: fullnameOverride, else the release name with the chart name unless it holds it. */}}
{{- define "herald.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "herald.selectorLabels" -}}
app.kubernetes.io/name: {{ include "herald.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "herald.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "herald.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "herald.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "herald.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository:tag or repository@digest; the argument is (list image appVersion). */}}
{{- define "herald.image" -}}
{{- $image := index . 0 }}
{{- if $image.digest }}
{{- printf "%s@%s" $image.repository $image.digest }}
{{- else }}
{{- printf "%s:%s" $image.repository (default (index . 1) $image.tag) }}
{{- end }}
{{- end }}

{{/* Whether any plugin is pulled from a registry. */}}
{{- define "herald.hasSources" -}}
{{- range $name, $plugin := .Values.plugins }}{{ if $plugin.source }}yes{{ end }}{{ end }}
{{- end }}

{{/* The pull secrets the plugins' sources name, each once, sorted: a JSON list. */}}
{{- define "herald.pullSecrets" -}}
{{- $secrets := list }}
{{- range $name, $plugin := .Values.plugins }}
{{- if and $plugin.source $plugin.source.pullSecret }}
{{- $secrets = append $secrets $plugin.source.pullSecret }}
{{- end }}
{{- end }}
{{- $secrets | uniq | sortAlpha | toJson }}
{{- end }}

{{/* Where the pull secret named by the argument is mounted: its `.dockerconfigjson`, the source's dockerConfig. */}}
{{- define "herald.pullSecretFile" -}}
{{- printf "/var/run/herald/registries/%s/config.json" . }}
{{- end }}

{{/*
The values that cannot be checked by the schema alone, refused with a
message naming the key.
*/}}
{{- define "herald.check" -}}
{{- if and (gt (int .Values.replicas) 1) (eq .Values.replication.mode "single") }}
{{- fail (printf "replicas: %d replicas need replication.mode leaderElection or sharding: with single, every replica would dispatch every plugin" (int .Values.replicas)) }}
{{- end }}
{{- $admission := .Values.admission }}
{{- if and $admission.enabled (eq $admission.certificate.source "secret") (not (and $admission.certificate.secretName $admission.certificate.caBundle)) }}
{{- fail "admission.certificate: source secret needs secretName (a kubernetes.io/tls Secret) and caBundle (the PEM of the CA that signed it)" }}
{{- end }}
{{- if and (not $admission.enabled) (or $admission.validatingWebhooks $admission.mutatingWebhooks) }}
{{- fail "admission.validatingWebhooks, admission.mutatingWebhooks: webhooks need admission.enabled: true, or the API server would call a port nothing serves" }}
{{- end }}
{{- range $name, $plugin := .Values.plugins }}
{{- $grants := default (dict) $plugin.grants }}
{{- if and $grants.writes (not $plugin.allowUnpinned) (not $plugin.sha256) }}
{{- $oci := "" }}{{ if $plugin.source }}{{ $oci = $plugin.source.oci }}{{ end }}
{{- if not (regexMatch "@sha256:[0-9a-f]{64}$" $oci) }}
{{- fail (printf "plugins.%s.grants.writes: a plugin that writes must be pinned: give source.oci as registry/repository@sha256:<digest> (not %q), or plugins.%s.sha256, or set plugins.%s.allowUnpinned: true" $name (default "no source" $oci) $name $name) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
herald.yaml: `config`, and the keys that must agree with the Pod set from the
values around it. One document, so its checksum rolls the Pods.
*/}}
{{- define "herald.config" -}}
{{- $c := deepCopy .Values.config }}
{{- $_ := set $c "pluginDir" "/var/lib/herald/plugins" }}
{{- $source := dict "kind" "in-cluster" }}
{{- if .Values.fleet.name }}
{{- $_ := set $source "name" .Values.fleet.name }}
{{- end }}
{{- $_ := set $c "source" $source }}
{{- if .Values.fleet.kubeconfigSecret }}
{{- $_ := set $c "clusterDirectory" "/etc/herald/clusters" }}
{{- end }}
{{- if .Values.fleet.secretsNamespace }}
{{- $_ := set $c "clusterSecrets" (dict "namespace" .Values.fleet.secretsNamespace "pollInterval" .Values.fleet.pollInterval) }}
{{- end }}
{{- $_ := set $c "listen" (printf "0.0.0.0:%d" (int .Values.service.port)) }}
{{- $files := default (dict) (get $c "pluginFiles") }}
{{- $cache := default (dict) (get $files "artifactCache") }}
{{- $_ := set $cache "dir" "/var/cache/herald" }}
{{- $_ := set $files "artifactCache" $cache }}
{{- if .Values.publicKeys }}
{{- $paths := list }}
{{- range $index, $key := .Values.publicKeys }}
{{- $paths = append $paths (printf "/etc/herald/public-key-%d.pem" $index) }}
{{- end }}
{{- $_ := set $files "publicKeys" $paths }}
{{- end }}
{{- $_ := set $c "pluginFiles" $files }}
{{- $r := .Values.replication }}
{{- $lease := dict "enabled" true "leaseName" $r.leaseName "leaseDuration" $r.leaseDuration "renewDeadline" $r.renewDeadline "retryPeriod" $r.retryPeriod }}
{{- if eq $r.mode "leaderElection" }}
{{- $_ := set $c "leaderElection" $lease }}
{{- else if eq $r.mode "sharding" }}
{{- $_ := set $c "sharding" $lease }}
{{- end }}
{{- $sources := list }}
{{- $plugins := dict }}
{{- range $name, $plugin := .Values.plugins }}
{{- if $plugin.source }}
{{- $source := omit $plugin.source "pullSecret" }}
{{- if $plugin.source.pullSecret }}
{{- $_ := set $source "dockerConfig" (include "herald.pullSecretFile" $plugin.source.pullSecret) }}
{{- end }}
{{- $sources = append $sources $source }}
{{- end }}
{{- $settings := omit $plugin "source" }}
{{- if $settings }}
{{- $_ := set $plugins $name $settings }}
{{- end }}
{{- end }}
{{- if $sources }}
{{- $_ := set $c "pluginSources" $sources }}
{{- $_ := set $c "pluginSourceCache" "/var/lib/herald/oci" }}
{{- end }}
{{- if $plugins }}
{{- $_ := set $c "plugins" $plugins }}
{{- end }}
{{- if .Values.admission.enabled }}
{{- $_ := set $c "admission" (dict "enabled" true "listen" (printf "0.0.0.0:%d" (int .Values.admission.port)) "certFile" "/var/run/herald/tls/tls.crt" "keyFile" "/var/run/herald/tls/tls.key") }}
{{- end }}
{{- toYaml $c }}
{{- end }}

{{/* The Secret holding the admission serving certificate (tls.crt, tls.key). */}}
{{- define "herald.admission.secretName" -}}
{{- if eq .Values.admission.certificate.source "secret" }}
{{- .Values.admission.certificate.secretName }}
{{- else }}
{{- printf "%s-admission-tls" (include "herald.fullname" .) }}
{{- end }}
{{- end }}

{{/* The DNS names the API server reaches the Service by. */}}
{{- define "herald.admission.dnsNames" -}}
{{- $service := include "herald.fullname" . }}
- {{ $service }}.{{ .Release.Namespace }}.svc
- {{ $service }}.{{ .Release.Namespace }}.svc.cluster.local
{{- end }}

{{/*
The webhooks of one configuration (the argument is (list root webhooks
caBundle)): each pointed at this release's Service on the admission port,
its path kept, its caBundle set when the chart knows it.
*/}}
{{- define "herald.admission.webhooks" -}}
{{- $root := index . 0 }}
{{- $webhooks := list }}
{{- range (index . 1) }}
{{- $service := dict "namespace" $root.Release.Namespace "name" (include "herald.fullname" $root) "port" (int $root.Values.admission.port) "path" .clientConfig.service.path }}
{{- $client := dict "service" $service }}
{{- if index $ 2 }}
{{- $_ := set $client "caBundle" (index $ 2) }}
{{- end }}
{{- $webhooks = append $webhooks (merge (dict "clientConfig" $client) (omit . "clientConfig")) }}
{{- end }}
{{- toYaml $webhooks }}
{{- end }}
