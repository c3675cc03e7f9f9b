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

// Package rollout decides how a cache's servers change: for a change of their pod template, the
// way (in place, a warm restart of memcached in its pod, or a rollout in which each server starts
// empty), and for each server, from what is true of its pod now (its UID, its restarts, its
// spec and status) and what status.rollout recorded, the next step. It is pure: the operator's
// servers reconciler (controllers/servers/rollout.go) reads the cluster, asks this package, acts,
// and records the outcome in status.rollout, which only the operator writes.
//
// How a change of the template is made (docs/upgrades.md, "What keeps the cache warm"):
// Kubernetes changes a running pod's labels, annotations, container images and resources without
// replacing it; memcached keeps its items over a restart of its container only with its memory
// file (spec.keepCacheAcross Restarts, the -e flag), and changes its item memory at runtime only
// without it. So:
//
//	change                        MemoryChanges (no -e)        Restarts (-e)
//	pod labels, annotations       InPlace                      InPlace
//	memcached's resources         InPlace (pods/resize)        InPlace (pods/resize)
//	item memory (-m)              InPlace (+ cache_memlimit)   StartedEmpty (rolled out)
//	memcached's image             StartedEmpty (rolled out)    WarmRestart
//	the exporter's image          InPlace (it restarts alone)  InPlace
//	anything else, or the mode    StartedEmpty (rolled out)    StartedEmpty (rolled out)
//
// Interruptions are each one server's event, never the change's end: a server whose pod was
// replaced mid-change started empty (its new pod is taken to the template like any other), a
// memcached restarted by someone else is checked like one the operator restarted, and a second
// change is folded in when every server can still take it the same way.
package rollout
