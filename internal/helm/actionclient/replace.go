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

package actionclient

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	oplabels "github.com/example/memcached-operator/internal/labels"
)

// ReplaceTimeout bounds the wait for an object deleted with orphaned dependents to be gone (the
// garbage collector removes it). The wait also ends with the reconcile: a manager that stops
// (an upgrade of the operator, a lost lease) does not wait for it past its grace period.
const ReplaceTimeout = 2 * time.Minute

// replaceDeployments prepares an upgrade that changes the selector of a Deployment, which the API
// server refuses to update (Helm alone fails with "field is immutable", and a forced upgrade
// deletes every pod at once). The Deployment is deleted with its ReplicaSets orphaned, and those
// ReplicaSets with their pods orphaned: the pods keep running and serving. The upgrade then
// creates the Deployment with its new selector and new pods, and the operator retires the
// ownerless old pods once the new ones are available (see controllers/servers.Reconciler).
//
// ReplicaSets left ownerless that the new Deployment would adopt are orphaned too, so that an
// upgrade cut off between the two deletions resumes the same way.
//
// Only what belongs to the release is touched: a Deployment of the same name that Helm did not
// make for this release is left alone (the upgrade then fails on it, and says so), and only
// ReplicaSets of the chart's pods are orphaned.
func (c *actionClient) replaceDeployments(infos kube.ResourceList, namespace, to string) error {
	ctx, cancel := context.WithTimeout(c.ctx, ReplaceTimeout) // the reconcile's: a stopping manager ends the wait
	defer cancel()
	deployments := map[string]bool{} // the Deployments the target renders
	for _, info := range infos {
		if info.Mapping.GroupVersionKind == appsv1.SchemeGroupVersion.WithKind("Deployment") {
			deployments[info.Name] = true
		}
	}
	for _, info := range infos {
		switch info.Mapping.GroupVersionKind {
		case appsv1.SchemeGroupVersion.WithKind("Deployment"):
			desired := &appsv1.Deployment{}
			if err := rendered(info.Object, desired, namespace); err != nil {
				return err
			}
			if err := c.replaceDeployment(ctx, desired, to); err != nil {
				return err
			}
		case appsv1.SchemeGroupVersion.WithKind("StatefulSet"):
			desired := &appsv1.StatefulSet{}
			if err := rendered(info.Object, desired, namespace); err != nil {
				return err
			}
			if err := c.replaceByStatefulSet(ctx, desired, deployments, to); err != nil {
				return err
			}
		}
	}
	return nil
}

// replaceStatefulSets prepares an upgrade that changes the volume claim templates of a
// StatefulSet of the release (persistence turned on or off, its size or class changed), which the
// API server refuses to update. The StatefulSet is deleted with its pods orphaned: they keep
// serving under their names. Helm then creates it anew and it adopts them; the operator evicts
// them one at a time so that it makes each again with its volumes (controllers/servers/storage.go;
// each server starts empty, as the decision before the upgrade recorded). It runs after that
// decision, which reads the StatefulSet. A StatefulSet the operator did not make for the release
// is left alone (the upgrade then fails on it, and says so).
func (c *actionClient) replaceStatefulSets(infos kube.ResourceList, namespace, to string) error {
	ctx, cancel := context.WithTimeout(c.ctx, ReplaceTimeout) // the reconcile's: a stopping manager ends the wait
	defer cancel()
	for _, info := range infos {
		if info.Mapping.GroupVersionKind != appsv1.SchemeGroupVersion.WithKind("StatefulSet") {
			continue
		}
		desired := &appsv1.StatefulSet{}
		if err := rendered(info.Object, desired, namespace); err != nil {
			return err
		}
		live := &appsv1.StatefulSet{}
		err := c.client.Get(ctx, client.ObjectKeyFromObject(desired), live)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return fmt.Errorf("read StatefulSet %s: %w", desired.Name, err)
		case sameClaims(live.Spec.VolumeClaimTemplates, desired.Spec.VolumeClaimTemplates):
			continue
		case !madeByOperator(live, c.owner):
			continue // not ours to replace: the upgrade fails on it and says why
		}
		if live.DeletionTimestamp == nil {
			dropped, err := c.deleteDroppedClaims(ctx, live, desired)
			if err != nil {
				return err
			}
			then := "its pods serve meanwhile and are then replaced one at a time under their names"
			if len(desired.Spec.VolumeClaimTemplates) > 0 && len(dropped) == 0 && len(live.Spec.VolumeClaimTemplates) > 0 {
				then = "its pods serve on with the claims they have; claims made from now on (new servers) are made as the chart now says"
			}
			if len(dropped) > 0 {
				then += fmt.Sprintf("; the claims it no longer asks for (%s) are deleted once their pods stop", strings.Join(dropped, ", "))
			}
			c.recorder.Eventf(c.owner, nil, corev1.EventTypeNormal, "VolumesChanged", "ReplaceStatefulSet",
				"StatefulSet %s: chart %s changes its volume claims from %s to %s, which cannot be updated; it is replaced: %s",
				desired.Name, to, claimsOf(live.Spec.VolumeClaimTemplates), claimsOf(desired.Spec.VolumeClaimTemplates), then)
		}
		if err := c.deleteOrphaning(ctx, "StatefulSet", live); err != nil {
			return err
		}
	}
	return nil
}

// deleteDroppedClaims deletes the claims that live's StatefulSet controller made from templates
// desired drops (persistence turned off): only those it made (its controller reference, by UID,
// which the chart's retention policy has it set), never a tenant's claim of the same name. It
// runs before live is deleted with its dependents orphaned, which strips that reference.
// Kubernetes keeps each claim until no pod uses it: the old pods are replaced next. It returns
// the claims deleted.
func (c *actionClient) deleteDroppedClaims(ctx context.Context, live, desired *appsv1.StatefulSet) ([]string, error) {
	var prefixes []string
	for _, t := range live.Spec.VolumeClaimTemplates {
		if !slices.ContainsFunc(desired.Spec.VolumeClaimTemplates, func(d corev1.PersistentVolumeClaim) bool { return d.Name == t.Name }) {
			prefixes = append(prefixes, t.Name+"-"+live.Name+"-") // the StatefulSet's claim names
		}
	}
	if len(prefixes) == 0 || live.Spec.Selector == nil {
		return nil, nil
	}
	list := &corev1.PersistentVolumeClaimList{}
	if err := c.client.List(ctx, list, client.InNamespace(live.Namespace), client.MatchingLabels(live.Spec.Selector.MatchLabels)); err != nil {
		return nil, fmt.Errorf("list StatefulSet %s's claims: %w", live.Name, err)
	}
	var deleted []string
	for i := range list.Items {
		pvc := &list.Items[i]
		ref := metav1.GetControllerOf(pvc)
		made := ref != nil && ref.UID == live.UID && ref.Kind == "StatefulSet"
		if !made || pvc.DeletionTimestamp != nil || !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(pvc.Name, p) }) {
			continue
		}
		if err := c.client.Delete(ctx, pvc, client.Preconditions{UID: ptr.To(pvc.UID)}); err != nil && !apierrors.IsNotFound(err) {
			return deleted, fmt.Errorf("delete claim %s that StatefulSet %s no longer asks for: %w", pvc.Name, live.Name, err)
		}
		deleted = append(deleted, pvc.Name)
	}
	return deleted, nil
}

// sameClaims says whether two lists of volume claim templates ask for the same volumes: the
// fields a template sets (the API server's defaults, such as volumeMode, do not count).
func sameClaims(live, desired []corev1.PersistentVolumeClaim) bool {
	return claimsOf(live) == claimsOf(desired)
}

// claimsOf says what a list of volume claim templates asks for, in words: "none", or each
// claim's name, size, storage class and access modes.
func claimsOf(claims []corev1.PersistentVolumeClaim) string {
	if len(claims) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, pvc := range claims {
		if i > 0 {
			b.WriteString(", ")
		}
		size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		fmt.Fprintf(&b, "%s (%s", pvc.Name, size.String())
		if sc := ptr.Deref(pvc.Spec.StorageClassName, ""); sc != "" {
			fmt.Fprintf(&b, ", class %s", sc)
		}
		fmt.Fprintf(&b, ", %v)", pvc.Spec.AccessModes)
	}
	return b.String()
}

// rendered reads a rendered object into a typed one, in namespace unless it names its own.
func rendered(in any, out client.Object, namespace string) error {
	raw, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("read rendered %T: %w", out, err)
	}
	if out.GetNamespace() == "" {
		out.SetNamespace(namespace)
	}
	return nil
}

// replaceByStatefulSet prepares an upgrade from a chart that ran memcached as a Deployment (1.1.0
// and earlier) to one that runs it as the StatefulSet desired: the Deployment of the chart's pods
// that the operator made for the release and the target no longer renders is deleted with its ReplicaSets orphaned, and
// those with their pods orphaned. Helm then creates the StatefulSet; the old pods keep serving
// behind the Service until its servers are available, then the operator retires them
// (controllers/servers.Reconciler).
func (c *actionClient) replaceByStatefulSet(ctx context.Context, desired *appsv1.StatefulSet, rendered map[string]bool, to string) error {
	list := &appsv1.DeploymentList{}
	if err := c.client.List(ctx, list, client.InNamespace(desired.Namespace),
		client.MatchingLabels{oplabels.Name: oplabels.ChartName, oplabels.Instance: c.owner.GetName()}); err != nil {
		return fmt.Errorf("list the release's Deployments: %w", err)
	}
	for i := range list.Items {
		live := &list.Items[i]
		if rendered[live.Name] || !madeByOperator(live, c.owner) {
			continue // not the Deployment this operator made for the release: left alone
		}
		if live.DeletionTimestamp == nil {
			c.recorder.Eventf(c.owner, nil, corev1.EventTypeNormal, "ServersMigrated", "ReplaceDeployment",
				"Chart %s runs memcached as StatefulSet %s, each server with a name of its own: Deployment %s is replaced, and its pods serve until the servers are available",
				to, desired.Name, live.Name)
		}
		if err := c.deleteOrphaning(ctx, "Deployment", live); err != nil {
			return err
		}
	}
	// Every ReplicaSet of the release's pods, whatever selector its chart version gave them.
	return c.orphanReplicaSets(ctx, desired.Namespace, &metav1.LabelSelector{MatchLabels: map[string]string{
		oplabels.Name: oplabels.ChartName, oplabels.Instance: c.owner.GetName()}})
}

func (c *actionClient) replaceDeployment(ctx context.Context, desired *appsv1.Deployment, to string) error {
	live := &appsv1.Deployment{}
	err := c.client.Get(ctx, client.ObjectKeyFromObject(desired), live)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("read Deployment %s: %w", desired.Name, err)
	case reflect.DeepEqual(live.Spec.Selector, desired.Spec.Selector):
		return nil
	case releaseOwns(live, c.owner) != nil:
		return nil // not ours to replace: Helm refuses to take it over, and the upgrade says why
	default:
		if live.DeletionTimestamp == nil {
			c.recorder.Eventf(c.owner, nil, corev1.EventTypeNormal, "SelectorMigrated", "ReplaceDeployment",
				"Deployment %s: chart %s changes its selector from %s to %s, which cannot be updated; it is replaced, and its pods serve until the new ones are available",
				desired.Name, to, metav1.FormatLabelSelector(live.Spec.Selector), metav1.FormatLabelSelector(desired.Spec.Selector))
		}
		if err := c.deleteOrphaning(ctx, "Deployment", live); err != nil {
			return err
		}
	}

	// The ReplicaSets the new Deployment would adopt: their pods must not be stopped at once.
	return c.orphanReplicaSets(ctx, desired.Namespace, desired.Spec.Selector)
}

// orphanReplicaSets deletes, leaving their pods running, the chart's ReplicaSets in namespace
// that no controller owns and that selector selects: those the new workload would adopt or its
// Deployment's garbage would scale down.
func (c *actionClient) orphanReplicaSets(ctx context.Context, namespace string, selector *metav1.LabelSelector) error {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return fmt.Errorf("selector %s: %w", metav1.FormatLabelSelector(selector), err)
	}
	sets := &appsv1.ReplicaSetList{}
	if err := c.client.List(ctx, sets, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("list ReplicaSets: %w", err)
	}
	for i := range sets.Items {
		rs := &sets.Items[i]
		if metav1.GetControllerOf(rs) == nil && sel.Matches(labels.Set(rs.Labels)) && rs.Labels[partOfLabel] == partOf {
			if err := c.deleteOrphaning(ctx, "ReplicaSet", rs); err != nil {
				return err
			}
		}
	}
	return nil
}

// The chart's pods carry the label labels.PartOf=labels.Operator (every chart version): a
// ReplicaSet without it is not the chart's.
const (
	partOfLabel = oplabels.PartOf
	partOf      = oplabels.Operator
)

// madeByOperator reports whether obj is one the operator made for the release of cr: cr is its
// controller (the Helm reconciler of every version sets that on each object it renders in the CR's
// namespace) and it carries no other release's mark. Helm's annotations alone do not do: a release
// of the helm CLI with the CR's name carries the same ones.
func madeByOperator(obj, cr client.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == cr.GetUID() && releaseOwns(obj, cr) == nil
}

// OwnedByRelease reports whether obj was made for the release of the CR cr, by the one rule the
// fence applies to every write of the release (releaseOwns): it carries the release's marks (cr, by
// UID, as its controller, which the Helm reconciler sets on every object it renders in the CR's
// namespace, also on those it recreates when it repairs drift; or Helm's ownership annotations
// for the release, what Helm itself sets when it installs or upgrades), and no mark of anyone
// else's (another release's annotations, another controller).
func OwnedByRelease(obj, cr client.Object) bool {
	return releaseOwns(obj, cr) == nil
}

// render renders the release an upgrade would make (a dry run).
func (c *actionClient) render(name, namespace string, chrt *chart.Chart, vals map[string]any, opts []helmclient.UpgradeOption) (*release.Release, error) {
	render := append(append([]helmclient.UpgradeOption{}, opts...), func(u *action.Upgrade) error {
		u.DryRun = true
		return nil
	})
	return c.ActionInterface.Upgrade(name, namespace, chrt, vals, render...)
}

// deleteOrphaning deletes an object and leaves its dependents running, then waits until the
// garbage collector has released them and removed the object.
func (c *actionClient) deleteOrphaning(ctx context.Context, kind string, obj client.Object) error {
	if obj.GetDeletionTimestamp() == nil {
		err := c.client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationOrphan),
			client.Preconditions{UID: ptr.To(obj.GetUID())})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s %s leaving its dependents: %w", kind, obj.GetName(), err)
		}
	}
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("wait for %s %s to be deleted (leaving its dependents): %w", kind, obj.GetName(), err)
	}
	return nil
}
