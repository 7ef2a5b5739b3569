{{/* Names and labels. */}}
{{- define "agentkourier.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "agentkourier.fullname" -}}
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

{{- define "agentkourier.selectorLabels" -}}
app.kubernetes.io/name: {{ include "agentkourier.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "agentkourier.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "agentkourier.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: controller
{{- end }}

{{- define "agentkourier.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "agentkourier.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The controller's image: repository@digest when a digest pins it (the tag is left out: the
runtime pulls by digest and ignores a tag beside it, so a tag there could only disagree with
what runs), else repository:tag, the tag defaulting to the chart's appVersion.
*/}}
{{- define "agentkourier.image" -}}
{{- with .Values.image }}
{{- if .digest }}
{{- printf "%s@%s" .repository .digest }}
{{- else }}
{{- printf "%s:%s" .repository (default $.Chart.AppVersion .tag) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The claim SQLite lives on. */}}
{{- define "agentkourier.stateClaim" -}}
{{- default (printf "%s-state" (include "agentkourier.fullname" .)) .Values.store.sqlite.persistence.existingClaim }}
{{- end }}

{{/*
What the controller does in the namespaces it watches, and nothing more (docs/kubernetes.md,
"RBAC"): list and watch its two kinds, patch their status, and create Events on its resources
(an Event lives in its object's namespace).
*/}}
{{- define "agentkourier.resourceRules" -}}
- apiGroups: [agentkourier.dev]
  resources: [agentbackends, bindings]
  verbs: [list, watch]
- apiGroups: [agentkourier.dev]
  resources: [agentbackends/status, bindings/status]
  verbs: [patch]
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create]
{{- end }}

{{/*
Reading Secrets: list and watch (it follows only the Secrets its resources name, by field
selector; RBAC cannot narrow list to names, so this reaches every Secret where it is granted).
*/}}
{{- define "agentkourier.secretRules" -}}
- apiGroups: [""]
  resources: [secrets]
  verbs: [list, watch]
{{- end }}

{{/* A Role per watched namespace holds both: there the Secrets are the namespace's own. */}}
{{- define "agentkourier.watchRules" -}}
{{ include "agentkourier.resourceRules" . }}
{{ include "agentkourier.secretRules" . }}
{{- end }}

{{/* The ClusterRole that reads Secrets, bound per namespace (only when every namespace is watched). */}}
{{- define "agentkourier.secretReaderRole" -}}
{{- printf "%s-secret-reader" (include "agentkourier.fullname" .) }}
{{- end }}

{{/*
The standard OTEL_* variables src/observability/tracing.ts reads, only when an endpoint is set
(without one the controller runs OpenTelemetry's no-op API).
*/}}
{{- define "agentkourier.tracingEnv" -}}
{{- with .Values.tracing }}
{{- if .endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .endpoint | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ .protocol | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ .sampler | quote }}
{{- $arg := toString .samplerArg }}
{{- if ne $arg "" }}
{{- /* A values file gives a number: 1e-05 would pass the schema but not the controller. */}}
{{- if not (regexMatch "^(0(\\.[0-9]+)?|1(\\.0+)?)$" $arg) }}
{{- fail (printf "tracing.samplerArg must be a ratio from 0 to 1 in decimal notation (e.g. 0.001), not %s" $arg) }}
{{- end }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ $arg | quote }}
{{- end }}
{{- with .serviceName }}
- name: OTEL_SERVICE_NAME
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
