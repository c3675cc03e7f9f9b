{{/* Name of the chart, for labels. */}}
{{- define "memcached.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Name of every object of a release: the release name (the Memcached CR's name) when it already
says memcached, else <release>-memcached. Truncated to 63 characters for DNS names.
*/}}
{{- define "memcached.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/*
Labels that select the memcached pods of a release. Chart 0.2.0 added the component, so that other
components of a release never fall under these selectors. A Deployment's selector is immutable:
the operator moves releases of older charts over without downtime (see README, Upgrades).
*/}}
{{- define "memcached.selectorLabels" -}}
app.kubernetes.io/name: {{ include "memcached.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: cache
{{- end }}

{{/* Labels of every object. */}}
{{- define "memcached.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "memcached.selectorLabels" . }}
app.kubernetes.io/part-of: memcached-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* An image reference from {repository, tag, digest}: a digest wins over a tag. */}}
{{/* memcached's item memory in MB: maxMemoryMB, or its name before 0.2.0, memoryLimitMB. */}}
{{- define "memcached.maxMemoryMB" -}}
{{- .Values.memcached.memoryLimitMB | default .Values.memcached.maxMemoryMB | int }}
{{- end }}

{{- define "memcached.imageRef" -}}
{{- if .digest }}
{{- printf "%s@%s" .repository .digest }}
{{- else }}
{{- printf "%s:%s" .repository (toString .tag) }}
{{- end }}
{{- end }}

{{/*
Restricted container security context. OpenShift's restricted SCC assigns the UID; elsewhere the
pod runs as memcached's UID 11211 (the official image's USER is a name, which runAsNonRoot cannot
check).
*/}}
{{- define "memcached.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
{{- end }}

{{- define "memcached.podSecurityContext" -}}
runAsNonRoot: true
{{- if not (.Capabilities.APIVersions.Has "security.openshift.io/v1") }}
runAsUser: 11211
runAsGroup: 11211
{{- end }}
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* Proxy variables for the containers, from .Values.proxy, upper and lower case as tools differ. */}}
{{- define "memcached.proxyEnv" -}}
{{- with .Values.proxy }}
{{- if .httpProxy }}
- name: HTTP_PROXY
  value: {{ .httpProxy | quote }}
- name: http_proxy
  value: {{ .httpProxy | quote }}
{{- end }}
{{- if .httpsProxy }}
- name: HTTPS_PROXY
  value: {{ .httpsProxy | quote }}
- name: https_proxy
  value: {{ .httpsProxy | quote }}
{{- end }}
{{- if .noProxy }}
- name: NO_PROXY
  value: {{ .noProxy | quote }}
- name: no_proxy
  value: {{ .noProxy | quote }}
{{- end }}
{{- end }}
{{- end }}
