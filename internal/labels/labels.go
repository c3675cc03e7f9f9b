/*
Copyright 2026 The memcached-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package labels holds the labels and annotations the operator sets and selects on, in one
// place. (The names it copies from Helm and helm-operator-plugins are in internal/helm/library.go.)
package labels

const (
	// The Kubernetes recommended labels, on everything the chart renders and a MemcachedBackup owns.
	Name      = "app.kubernetes.io/name"
	Instance  = "app.kubernetes.io/instance"
	Component = "app.kubernetes.io/component" // a selector label of the chart's Service since 0.2.0
	PartOf    = "app.kubernetes.io/part-of"
	ManagedBy = "app.kubernetes.io/managed-by"

	// Operator is the value of PartOf on every pod the operator makes (all chart versions), and of
	// ManagedBy on what the Go side makes.
	Operator = "memcached-operator"

	// ChartName is the Name of the memcached chart's objects; BackupName that of a
	// MemcachedBackup's.
	ChartName  = "memcached"
	BackupName = "memcached-backup"

	// Record marks the Helm release records this operator writes (value Operator): its cache and
	// its reads select on it, so Helm releases that others made in the same namespaces are
	// neither cached nor read nor touched.
	Record = "cache.my.domain/operator"

	// RecordSeal is the annotation that seals a release record this operator wrote (an HMAC of
	// its content, internal/helm/actionclient/seal.go): records are in tenants' namespaces, and
	// the operator acts only on those whose seal holds.
	RecordSeal = "cache.my.domain/release-seal"
	// RecordsSealedWith is the annotation on the key ring that names the key every release record
	// is sealed with: the ring's other keys may be removed.
	RecordsSealedWith = "cache.my.domain/records-sealed-with"
	// SealingSince is the annotation on the key ring that says when the operator began sealing
	// records: those created before are an earlier version's.
	SealingSince = "cache.my.domain/sealing-since"

	// TLSSecret marks the Secrets the operator makes for a cache that serves TLS, and what each
	// holds: "ca", "server" or "client" (controllers/servertls).
	TLSSecret = "cache.my.domain/tls"

	// CAChangedAt is when the operator gave clients a changed CA in a client Secret's ca.crt (the
	// CA of before and the new one, an annotation): the servers are told to serve the certificate
	// of the new CA only a while later, once the kubelet has brought it to the clients.
	CAChangedAt = "cache.my.domain/ca-changed-at"

	// RetiredAt marks a pod of an earlier release that left the Service, and when (an annotation).
	RetiredAt = "cache.my.domain/retired-at"

	// HoldToken is the annotation the operator writes on a memcached StatefulSet with each hold of
	// its rollout (spec.updateStrategy.rollingUpdate.partition) for a change of its servers, a new
	// value each time: it lets go of a hold only if the token is still the one it read, so that a
	// hold made for a new change between its read and its write is never let go
	// (controllers/servers/hold.go). The plan itself is in the Memcached's status.rollout.
	HoldToken = "cache.my.domain/hold"

	// ResizeHold is the annotation on a memcached StatefulSet in which operator 1.3.0 recorded
	// a change of its servers in place; later operators keep that record in status.rollout, take
	// a change 1.3.0 left in flight from it, and remove it (controllers/servers/adopt.go).
	ResizeHold = "cache.my.domain/resize-in-place"

	// Serving is the label by which the ClusterIP Service of a cache with keepCacheAcross
	// Restarts selects its servers ("true"), besides the chart's selector: the operator sets it
	// to "false" on a server while memcached restarts in its pod (controllers/servers/serving.go).
	Serving = "cache.my.domain/serving"

	// StartedEmpty is the annotation on a memcached StatefulSet in which operator 1.3.0 said
	// which server last started empty outside a change; later operators say it in
	// status.rollout, and remove it (controllers/servers/adopt.go).
	StartedEmpty = "cache.my.domain/started-empty"
)
