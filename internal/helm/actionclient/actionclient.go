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

// Package actionclient wraps helm-operator-plugins' Helm action client:
//   - reconciling an unchanged release sends no write to the API server;
//   - a release left pending by an operator that stopped in the middle of an install, upgrade or
//     rollback is recovered, instead of failing every reconcile with "another operation
//     (install/upgrade/rollback) is in progress";
//   - an upgrade that changes a Deployment's immutable selector (a chart release that changed its
//     selector labels) replaces the Deployment without stopping its pods (see replace.go);
//   - a failed upgrade is not retried with the same chart and values before a back-off
//     (30 s doubling up to 10 min), so a permanent failure does not pile up revisions; a change of
//     the CR or of the chart is tried at once. The operator turns the library's rollback on
//     failure off (WithFailureRollbacks(false)): a forced rollback recreates objects whose
//     immutable fields changed, and rollbacks of a failing upgrade loop;
//   - a release made by a newer chart than the operator's is left alone (no downgrade);
//   - the cluster's capabilities are read once per TTL (DefaultCapabilitiesTTL) for all releases, not for each
//     action, and a render is skipped only when the release was rendered under the current ones
//     (capabilities.go);
//   - the release records live in tenants' namespaces, so each one the operator writes is sealed
//     with an HMAC and a record whose seal does not hold is never used (seal.go, releases.go);
//     records of earlier versions are judged once by their manifests (takeover.go);
//   - whatever a record says, every create, patch and delete Helm sends stays inside the
//     release's namespace, kinds and ownership (fence.go);
//   - the values are checked against the chart's values.schema.json, compiled once, in place of
//     Helm's check, which compiles it for every install, upgrade and render (schema.go);
//   - a release record holds its chart's metadata and default values, not its templates and
//     schema, which the operator's image holds (releases.go);
//   - each case records an Event on the CR.
//
// The library reconciles a release by patching each of its objects with a strategic merge patch
// computed from the rendered manifest. For fields whose patch strategy is "replace" (a
// PodDisruptionBudget's selector, for one) that patch is never empty, so every periodic
// reconcile sent a PATCH that changed nothing. The wrapper first checks, on the objects it reads
// anyway, whether applying the rendered objects would change any of them; only then does it let
// the library reconcile. The fix belongs upstream in createPatch; until then this wraps it
// without forking.
//
// Files by concern: getter.go builds the clients; pending.go recovers pending releases;
// upgrade.go holds install, upgrade (back-off, no downgrade) and uninstall; replace.go replaces
// Deployments whose selector changed; insync.go skips reconciles without drift; capabilities.go
// shares the cluster's capabilities; releases.go serves the operator's release records from the
// cache, and takeover.go labels those of earlier versions; existence.go answers Helm's existence
// checks of absent objects from the cache; seal.go seals and checks the records; fence.go keeps
// Helm's writes inside the release; schema.go checks the values.
package actionclient
