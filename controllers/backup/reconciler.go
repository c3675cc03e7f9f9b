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

// Package backup is the MemcachedBackup controller: a Deployment of spec.size memcached pods per
// MemcachedBackup, reconciled in Go, with its pods and conditions in status.
package backup

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/progress"
	"github.com/example/memcached-operator/controllers/internal/texts"
	"github.com/example/memcached-operator/internal/helm/library"
	"github.com/example/memcached-operator/internal/labels"
	"github.com/example/memcached-operator/internal/operand"
)

// Reconciler keeps a Deployment of spec.size memcached pods per MemcachedBackup and
// reports the pods in status.
type Reconciler struct {
	client.Client
	Recorder events.EventRecorder
	// Image is the memcached image of the pods (operand.DefaultImage: the same as the chart's).
	Image operand.Image
	// Platform decides the pod security context.
	Platform operand.Platform
}

// +kubebuilder:rbac:groups=cache.my.domain,resources=memcachedbackups,verbs=get;list;watch
// +kubebuilder:rbac:groups=cache.my.domain,resources=memcachedbackups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cache.my.domain,resources=memcachedbackups/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// Reconcile brings the Deployment of one MemcachedBackup to its spec and reports what it sees.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	backup := &cachev1.MemcachedBackup{}
	if err := r.Get(ctx, req.NamespacedName, backup); err != nil {
		// Not found: deleted; the garbage collector removes the Deployment it owned.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if backup.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	// A backup made before admission checked names: nothing can be made under its name.
	if err := cachev1.ValidName("MemcachedBackup", backup.Name); err != nil {
		return ctrl.Result{}, r.refuse(ctx, backup, "InvalidName", fmt.Sprintf("%v; create the backup again under a valid name, and delete this one", err))
	}

	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: backup.Name, Namespace: backup.Namespace}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, deploy, func() error {
		// Never adopt or rewrite a Deployment this backup did not make.
		if !deploy.CreationTimestamp.IsZero() && !metav1.IsControlledBy(deploy, backup) {
			return errNotOwned
		}
		return r.mutateDeployment(backup, deploy)
	})
	if errors.Is(err, errNotOwned) {
		return ctrl.Result{}, r.refuse(ctx, backup, "DeploymentNotOwned", fmt.Sprintf(
			"Deployment %s exists and was not made by this MemcachedBackup (%s); the operator leaves it alone: rename the backup or remove that Deployment",
			deploy.Name, madeBy(deploy)))
	}
	if err != nil {
		r.Recorder.Eventf(backup, nil, corev1.EventTypeWarning, "DeploymentFailed", "ReconcileDeployment",
			"Could not create or update Deployment %s: %v", deploy.Name, err)
		if statusErr := r.updateStatus(ctx, backup, func(st *cachev1.MemcachedBackupStatus) {
			setCondition(st, backup, cachev1.ConditionDegraded, metav1.ConditionTrue, "DeploymentFailed", err.Error())
		}); statusErr != nil {
			log.Error(statusErr, "could not report the failure in status")
		}
		return ctrl.Result{}, fmt.Errorf("reconcile Deployment %s/%s: %w", deploy.Namespace, deploy.Name, err)
	}
	switch op {
	case controllerutil.OperationResultCreated:
		r.Recorder.Eventf(backup, nil, corev1.EventTypeNormal, "Created", "CreateDeployment",
			"Created Deployment %s with %s", deploy.Name, texts.Count(backup.Spec.Size, "replica", "replicas"))
	case controllerutil.OperationResultUpdated:
		r.Recorder.Eventf(backup, nil, corev1.EventTypeNormal, "Updated", "UpdateDeployment",
			"Updated Deployment %s to %s", deploy.Name, texts.Count(backup.Spec.Size, "replica", "replicas"))
	}

	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(backup.Namespace), client.MatchingLabels(selectorLabels(backup))); err != nil {
		return ctrl.Result{}, fmt.Errorf("list pods of %s/%s: %w", backup.Namespace, backup.Name, err)
	}

	wasFailing := podsFailing(backup) != nil
	if err := r.updateStatus(ctx, backup, func(st *cachev1.MemcachedBackupStatus) {
		observe(st, backup, deploy, pods.Items)
	}); err != nil {
		return ctrl.Result{}, err
	}
	if c := podsFailing(backup); c != nil && !wasFailing {
		r.Recorder.Eventf(backup, nil, corev1.EventTypeWarning, cachev1.ReasonPodsFailing, "ObservePods", "%s", c.Message)
	}
	return ctrl.Result{}, nil
}

// podsFailing is the backup's Degraded condition if its pods cannot start, or nil.
func podsFailing(backup *cachev1.MemcachedBackup) *metav1.Condition {
	if c := meta.FindStatusCondition(backup.Status.Conditions, cachev1.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue && c.Reason == cachev1.ReasonPodsFailing {
		return c
	}
	return nil
}

// errNotOwned: the backup's Deployment name is taken by a Deployment someone else made.
var errNotOwned = errors.New("the Deployment was not made by this MemcachedBackup")

// refuse reports, in status and with a Warning Event, why the backup cannot be reconciled. It
// waits for a change of the backup (or of the Deployment in the way) rather than retrying.
func (r *Reconciler) refuse(ctx context.Context, backup *cachev1.MemcachedBackup, reason, msg string) error {
	if c := meta.FindStatusCondition(backup.Status.Conditions, cachev1.ConditionDegraded); c == nil || c.Reason != reason || c.Message != msg {
		r.Recorder.Eventf(backup, nil, corev1.EventTypeWarning, reason, "ReconcileDeployment", "%s", msg)
	}
	return r.updateStatus(ctx, backup, func(st *cachev1.MemcachedBackupStatus) {
		setCondition(st, backup, cachev1.ConditionDegraded, metav1.ConditionTrue, reason, msg)
		setCondition(st, backup, cachev1.ConditionAvailable, metav1.ConditionFalse, reason, "no Deployment of this backup runs")
		setCondition(st, backup, cachev1.ConditionProgressing, metav1.ConditionFalse, reason, msg)
		st.ObservedGeneration = backup.Generation
	})
}

// madeBy says who made an object, as far as it tells.
func madeBy(obj client.Object) string {
	if ref := metav1.GetControllerOf(obj); ref != nil {
		return fmt.Sprintf("it belongs to %s %s", ref.Kind, ref.Name)
	}
	if rel := obj.GetAnnotations()[library.ReleaseNameAnnotation]; rel != "" {
		return fmt.Sprintf("it belongs to Helm release %s", rel)
	}
	return "it has no owner"
}

// updateStatus applies change to a copy of the status and writes it only when it differs.
func (r *Reconciler) updateStatus(ctx context.Context, backup *cachev1.MemcachedBackup, change func(*cachev1.MemcachedBackupStatus)) error {
	st := backup.Status.DeepCopy()
	change(st)
	if equality.Semantic.DeepEqual(*st, backup.Status) {
		return nil
	}
	backup.Status = *st
	if err := r.Status().Update(ctx, backup); err != nil {
		return fmt.Errorf("update status of %s/%s: %w", backup.Namespace, backup.Name, err)
	}
	return nil
}

// observe computes the status from the Deployment and the pods.
func observe(st *cachev1.MemcachedBackupStatus, backup *cachev1.MemcachedBackup, deploy *appsv1.Deployment, pods []corev1.Pod) {
	nodes := []string{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			nodes = append(nodes, p.Name)
		}
	}
	slices.Sort(nodes)
	st.Nodes = nodes
	st.ReadyReplicas = deploy.Status.ReadyReplicas
	st.ObservedGeneration = backup.Generation

	ro := progress.OfDeployment(deploy)
	available, availableMsg := ro.Complete(), texts.AvailableText(ro.Available, ro.Want, "pod", "pods")
	if available {
		setCondition(st, backup, cachev1.ConditionAvailable, metav1.ConditionTrue, "PodsAvailable", availableMsg)
	} else {
		setCondition(st, backup, cachev1.ConditionAvailable, metav1.ConditionFalse, "PodsUnavailable", availableMsg)
	}

	if ro.Failure != "" {
		setCondition(st, backup, cachev1.ConditionDegraded, metav1.ConditionTrue, "DeploymentFailed", ro.Failure)
	} else if trouble := progress.PodTrouble(pods); trouble != "" && !available {
		setCondition(st, backup, cachev1.ConditionDegraded, metav1.ConditionTrue, cachev1.ReasonPodsFailing, trouble)
	} else {
		setCondition(st, backup, cachev1.ConditionDegraded, metav1.ConditionFalse, "AsExpected", "")
	}

	if available {
		setCondition(st, backup, cachev1.ConditionProgressing, metav1.ConditionFalse, "Complete",
			fmt.Sprintf("Deployment %s has %s", deploy.Name, texts.Count(ro.Want, "up-to-date pod", "up-to-date pods")))
	} else {
		setCondition(st, backup, cachev1.ConditionProgressing, metav1.ConditionTrue, "RollingOut",
			fmt.Sprintf("Deployment %s %s", deploy.Name, ro))
	}
}

func setCondition(st *cachev1.MemcachedBackupStatus, backup *cachev1.MemcachedBackup, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: backup.Generation,
	})
}

func selectorLabels(backup *cachev1.MemcachedBackup) map[string]string {
	return map[string]string{labels.Name: labels.BackupName, labels.Instance: backup.Name}
}

// mutateDeployment sets the fields of the Deployment this controller owns, and only those: fields
// the API server defaults are left as they are, so an unchanged backup causes no write.
func (r *Reconciler) mutateDeployment(backup *cachev1.MemcachedBackup, deploy *appsv1.Deployment) error {
	sel := selectorLabels(backup)
	podLabels := map[string]string{
		labels.Component: "backup",
		labels.PartOf:    labels.Operator,
	}
	for k, v := range sel {
		podLabels[k] = v
	}

	if deploy.Labels == nil {
		deploy.Labels = map[string]string{}
	}
	for k, v := range podLabels {
		deploy.Labels[k] = v
	}
	deploy.Labels[labels.ManagedBy] = labels.Operator

	deploy.Spec.Replicas = ptr.To(backup.Spec.Size)
	if deploy.CreationTimestamp.IsZero() {
		deploy.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel} // immutable once created
	}

	tmpl := &deploy.Spec.Template
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	for k, v := range podLabels {
		tmpl.Labels[k] = v
	}
	tmpl.Spec.AutomountServiceAccountToken = ptr.To(false)
	tmpl.Spec.SecurityContext = r.Platform.PodSecurityContext()
	tmpl.Spec.ImagePullSecrets = nil
	for _, s := range backup.Spec.ImagePullSecrets {
		tmpl.Spec.ImagePullSecrets = append(tmpl.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s.Name})
	}

	i := slices.IndexFunc(tmpl.Spec.Containers, func(c corev1.Container) bool { return c.Name == "memcached" })
	if i < 0 {
		tmpl.Spec.Containers = append(tmpl.Spec.Containers, corev1.Container{Name: "memcached"})
		i = len(tmpl.Spec.Containers) - 1
	}
	mutateMemcachedContainer(&tmpl.Spec.Containers[i], r.Image, r.Platform)

	return controllerutil.SetControllerReference(backup, deploy, r.Scheme())
}

func mutateMemcachedContainer(c *corev1.Container, img operand.Image, platform operand.Platform) {
	c.Image = img.String()
	c.ImagePullPolicy = corev1.PullIfNotPresent
	c.Args = []string{"-p", "11211", "-m", "64", "-c", "1024", "-t", "4", "-I", "1m"}
	c.Ports = []corev1.ContainerPort{{Name: "memcache", ContainerPort: 11211, Protocol: corev1.ProtocolTCP}}
	c.Env = nil // memcached makes no outbound calls: the operator's proxy settings stay with it
	tcp := corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("memcache")}}
	c.LivenessProbe = &corev1.Probe{ProbeHandler: tcp, InitialDelaySeconds: 10, PeriodSeconds: 10, TimeoutSeconds: 5, SuccessThreshold: 1, FailureThreshold: 3}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: tcp, InitialDelaySeconds: 2, PeriodSeconds: 5, TimeoutSeconds: 3, SuccessThreshold: 1, FailureThreshold: 3}
	// As in the chart: stay up until the Service has dropped the stopping pod.
	c.Lifecycle = &corev1.Lifecycle{PreStop: platform.PreStop()}
	c.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("96Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("96Mi")},
	}
	c.SecurityContext = operand.ContainerSecurityContext()
}

// SetupWithManager registers the controller: it owns the Deployments and watches their pods.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	podToBackup := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
		name := o.GetLabels()[labels.Instance]
		if o.GetLabels()[labels.Name] != labels.BackupName || name == "" {
			return nil
		}
		return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
	})
	// A Deployment in the way of a backup (not its own) going away lets the backup make its own.
	deletedToBackup := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
		return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}}
	})
	deletedOnly := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&cachev1.MemcachedBackup{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Watches(&appsv1.Deployment{}, deletedToBackup, builder.WithPredicates(deletedOnly)).
		Watches(&corev1.Pod{}, podToBackup).
		Named("memcachedbackup").
		Complete(r)
}
