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
The StatefulSet of the memcached servers: the fullname, within 52 characters so that its pods'
controller-revision-hash label (<name>-<hash>) stays within 63. A longer one is cut and ends with a
hash of the whole, so that two long names that differ only at their end stay two.
*/}}
{{- define "memcached.serversName" -}}
{{- $full := include "memcached.fullname" . }}
{{- if le (len $full) 52 }}
{{- $full }}
{{- else }}
{{- printf "%s-%s" ($full | trunc 45 | trimSuffix "-") ($full | sha256sum | trunc 6) }}
{{- end }}
{{- end }}

{{/* The headless Service that governs the StatefulSet: one DNS record per server, and SRV. */}}
{{- define "memcached.headlessName" -}}
{{- printf "%s-headless" (include "memcached.serversName" .) }}
{{- end }}

{{/*
The servers, as clients address them: <pod>.<headless Service>.<namespace>.svc:11211, in order of
their ordinals, comma-separated.
*/}}
{{- define "memcached.serverList" -}}
{{- $servers := list }}
{{- /* From 0 to at most the schema's maximum of replicaCount, 100 (a test holds the two together): sprig's until counts down from a negative number. */}}
{{- range $i := until (int (max 0 (min (int64 .Values.replicaCount) 100))) }}
{{- $servers = append $servers (printf "%s-%d.%s.%s.svc:11211" (include "memcached.serversName" $) $i (include "memcached.headlessName" $) $.Release.Namespace) }}
{{- end }}
{{- join "," $servers }}
{{- end }}

{{/*
Labels that select the memcached pods of a release. Chart 0.2.0 added the component, so that other
components of a release never fall under these selectors. A Deployment's selector is immutable:
the operator moves releases of older charts over without downtime (see README, Upgrades).
*/}}
{{- define "memcached.selectorLabels" -}}
app.kubernetes.io/name: {{ include "memcached.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: cache
{{- end }}

{{/*
Labels of the servers, the StatefulSet's pods: the selector's and one that pods of the Deployment
of releases before 1.2.0 lack. What lists or counts the servers (the headless Service and its SRV
record, the PodDisruptionBudget, anti-affinity) selects these, so that it never takes an old pod,
still serving through the ClusterIP Service during the move, for a server.
*/}}
{{- define "memcached.serverLabels" -}}
{{ include "memcached.selectorLabels" . }}
cache.my.domain/server: "true"
{{- end }}

{{/*
The label by which the ClusterIP Service selects the servers with keepCacheAcross Restarts. The
operator sets it to "false" on a server before it restarts memcached in its pod (a new image),
so that the Service stops sending connections there during the restart (the pod's preStop sleep
gives it the time), and back to "true" once memcached serves again: a pod that stays Ready while
its memcached restarts is otherwise still behind the Service.
*/}}
{{- define "memcached.servingLabels" -}}
cache.my.domain/serving: "true"
{{- end }}

{{/* Labels of every object. */}}
{{- define "memcached.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" | quote }}
{{ include "memcached.selectorLabels" . }}
app.kubernetes.io/part-of: memcached-operator
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
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
{{- /* A new volume's root is root's: the servers write their memory copy there as its group
(OpenShift's SCC gives every pod an fsGroup of the namespace's range itself). */}}
{{- if eq (include "memcached.persistent" .) "true" }}
fsGroup: 11211
fsGroupChangePolicy: OnRootMismatch
{{- end }}
{{- end }}
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/*
A map of strings as YAML, every key and value quoted: whatever they hold, each stays one string in
its place (toYaml drops the whole map on a character it cannot write). Keys are explicit ("? "):
YAML allows implicit keys of at most 1024 characters.
*/}}
{{- define "memcached.quotedMap" -}}
{{- range $k, $v := . }}
? {{ $k | quote }}
: {{ $v | quote }}
{{- end }}
{{- end }}

{{/* A label selector ({matchLabels, matchExpressions}), every key and value quoted. */}}
{{- define "memcached.labelSelector" -}}
{{- if .matchLabels }}
matchLabels:
  {{- include "memcached.quotedMap" .matchLabels | nindent 2 }}
{{- end }}
{{- if .matchExpressions }}
matchExpressions:
  {{- range .matchExpressions }}
  - key: {{ .key | quote }}
    operator: {{ .operator | quote }}
    {{- if .values }}
    values:
      {{- range .values }}
      - {{ . | quote }}
      {{- end }}
    {{- end }}
  {{- end }}
{{- end }}
{{- if and (not .matchLabels) (not .matchExpressions) }}
{}
{{- end }}
{{- end }}

{{/* The namespace of the Prometheus that scrapes the exporter. */}}
{{- define "memcached.metricsNamespace" -}}
{{- if .Values.networkPolicy.metricsNamespace }}
{{- .Values.networkPolicy.metricsNamespace }}
{{- else if .Capabilities.APIVersions.Has "security.openshift.io/v1" }}
{{- "openshift-user-workload-monitoring" }}
{{- else }}
{{- "monitoring" }}
{{- end }}
{{- end }}

{{/* Labels of every alert of a release: which Memcached it is about. */}}
{{- define "memcached.alertLabels" -}}
namespace: {{ .Release.Namespace | quote }}
memcached: {{ .Release.Name | quote }}
{{- end }}

{{/* MemoryChanges (the default) or Restarts: see the CRD's spec.keepCacheAcross. */}}
{{- define "memcached.keepCacheAcross" -}}
{{- .Values.keepCacheAcross | default "MemoryChanges" }}
{{- end }}

{{/* "true" when each server keeps a copy of its memory file on a volume: see the CRD's spec.persistence. */}}
{{- define "memcached.persistent" -}}
{{- and (eq (include "memcached.keepCacheAcross" .) "Restarts") .Values.persistence.enabled }}
{{- end }}

{{/* Where memcached keeps its items with keepCacheAcross Restarts: a memory-backed emptyDir. */}}
{{- define "memcached.memoryDir" -}}
/var/cache/memcached
{{- end }}

{{- define "memcached.memoryFile" -}}
{{- printf "%s/items" (include "memcached.memoryDir" .) }}
{{- end }}

{{/* Where the volume that keeps a copy of the memory file is mounted (persistence.enabled). */}}
{{- define "memcached.copyDir" -}}
/var/lib/memcached
{{- end }}

{{/*
The memcached container's shell with keepCacheAcross Restarts: memcached runs as its child, and
the stop Kubernetes sends (SIGTERM) reaches memcached as SIGUSR1, on which it saves its items'
metadata beside its memory file and exits; the next start finds both and restores the items.
A save cut short (killed at the end of the grace period) would leave a metadata file memcached
aborts on at every start: only one marked complete after a clean exit is kept. A stop that comes
before memcached runs is passed on as soon as it does; a wait the trap cut short is waited again
(a shell that reaped memcached meanwhile gives its status then). memcached refuses a
save of the second it starts in ("incompatible ... [stop_time]"): a start right after a save waits
a second. The arguments ("$@") are memcached's flags.

With persistence.enabled, a clean save is also copied to the server's volume, the memory file
first, then its metadata (memcached's own stop_time in it), which marks the copy complete. A start
without a save of its own (a new pod) restores that copy only if it is no older than
persistence.maxAgeSeconds: a server that was away missed every write and delete sent meanwhile.
Every start consumes the copy's metadata (and a copy cut short), so a copy is restored at most
once, and never after a stop that saved nothing (killed). memcached itself refuses a file saved
with other settings (-m, -I, ...) and starts empty. The log says which.
*/}}
{{- define "memcached.warmStart" -}}
{{- $file := include "memcached.memoryFile" . -}}
{{- $copy := printf "%s/items" (include "memcached.copyDir" .) -}}
{{- $persist := .Values.persistence.enabled -}}
{{- if $persist -}}
if [ -e {{ $file }}.saved ]; then
  :
elif [ -e {{ $copy }}.meta ]; then
  saved=$(sed -n 's/^Kstop_time \([0-9]*\)$/\1/p' {{ $copy }}.meta); age=$(( $(date +%s) - ${saved:-0} ))
  if [ -n "$saved" ] && [ $age -le {{ int .Values.persistence.maxAgeSeconds }} ]; then
    cp {{ $copy }} {{ $file }} && cp {{ $copy }}.meta {{ $file }}.meta && : > {{ $file }}.saved &&
      echo "memory-copy: restoring the items saved $age s ago from the volume"
  else
    echo "memory-copy: starting empty: the copy on the volume was saved $age s ago, more than {{ int .Values.persistence.maxAgeSeconds }} s"
  fi
elif [ -e {{ $copy }}.part ] || [ -e {{ $copy }}.meta.part ]; then
  echo "memory-copy: starting empty: the copy on the volume is incomplete (the stop that wrote it was cut short)"
else
  echo "memory-copy: starting empty: the volume holds no copy (the server's last stop saved none, or it never stopped)"
fi
rm -f {{ $copy }}.meta {{ $copy }}.part {{ $copy }}.meta.part
{{ end -}}
[ -e {{ $file }}.saved ] || rm -f {{ $file }}.meta
rm -f {{ $file }}.saved
[ ! -e {{ $file }}.meta ] || sleep 1
pid=
trap 'stop=1; [ -z "$pid" ] || kill -USR1 $pid' TERM INT
memcached "$@" &
pid=$!
[ -z "$stop" ] || kill -USR1 $pid
wait $pid; rc=$?
while kill -0 $pid 2>/dev/null; do wait $pid; rc=$?; done
if [ $rc -gt 128 ]; then wait $pid 2>/dev/null; r=$?; [ $r -eq 127 ] || rc=$r; fi
[ $rc -ne 0 ] || [ ! -e {{ $file }}.meta ] || : > {{ $file }}.saved
{{- if $persist }}
if [ -e {{ $file }}.saved ]; then
  cp {{ $file }} {{ $copy }}.part && mv {{ $copy }}.part {{ $copy }} && cp {{ $file }}.meta {{ $copy }}.meta.part &&
    sync && mv {{ $copy }}.meta.part {{ $copy }}.meta && echo "memory-copy: saved the items to the volume"
fi
{{- end }}
exit $rc
{{- end }}

{{/*
TLS (tls.enabled): the Secrets the operator makes for the release, where the containers mount
them, and memcached's options. memcached re-reads its files on `refresh_certs`, which the
operator sends when a server still serves a certificate the Secret no longer holds.
*/}}
{{- define "memcached.tlsSecret" -}}
{{- printf "%s-tls" (include "memcached.serversName" .) }}
{{- end }}

{{- define "memcached.caSecret" -}}
{{- printf "%s-ca" (include "memcached.serversName" .) }}
{{- end }}

{{- define "memcached.clientTLSSecret" -}}
{{- printf "%s-client-tls" (include "memcached.serversName" .) }}
{{- end }}

{{- define "memcached.tlsDir" -}}
/etc/memcached/tls
{{- end }}

{{/* memcached's plain-text listener on the pod's loopback, for the exporter beside it (tls.enabled). */}}
{{- define "memcached.loopbackStatsPort" -}}
11212
{{- end }}

{{/* A name every server's certificate holds: clients that verify one name for all servers (the
server list's MEMCACHED_TLS_SERVER_NAME) verify it. */}}
{{- define "memcached.tlsServerName" -}}
{{- printf "%s.%s.svc" (include "memcached.headlessName" .) .Release.Namespace }}
{{- end }}

{{- define "memcached.tlsOptions" -}}
{{- $dir := include "memcached.tlsDir" . }}
{{- $opts := list (printf "ssl_chain_cert=%s/tls.crt" $dir) (printf "ssl_key=%s/tls.key" $dir) (printf "ssl_ca_cert=%s/ca.crt" $dir) }}
{{- /* 2: ask for a client certificate and refuse a client without one; 0: ask for none. */}}
{{- $opts = append $opts (printf "ssl_verify_mode=%d" (ternary 0 2 (eq .Values.tls.clientAuth "None"))) }}
{{- /* memcached splits its options at commas: only a version and cipher names get through. */}}
{{- $opts = append $opts (printf "ssl_min_version=%d" (max 2 (min 3 (int .Values.tlsProfile.minVersion)))) }}
{{- $ciphers := toString .Values.tlsProfile.ciphers }}
{{- if and $ciphers (regexMatch "^[A-Za-z0-9_+-]+(:[A-Za-z0-9_+-]+)*$" $ciphers) }}
{{- $opts = append $opts (printf "ssl_ciphers=%s" $ciphers) }}
{{- end }}
{{- join "," $opts }}
{{- end }}
