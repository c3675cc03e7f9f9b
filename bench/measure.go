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

package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

const (
	benchNamespace = "bench"
	// crsPerNamespace is how many CRs share a namespace, as tenants' would. Kubernetes is tested
	// up to 3000 pods and 5000 Services per namespace (sig-scalability's thresholds), and
	// kube-controller-manager's endpoint, disruption and StatefulSet controllers scan the
	// namespace on every event: in one namespace of 10000 releases (20000 Services, 10000 PDBs)
	// it spent 342 s of CPU on the raw-create limit alone, 18x its N=3000 figure, and created
	// the pods at 3 per second.
	crsPerNamespace = 1000
	// creators is how many clients create objects at once, for the operators' CRs and for the
	// raw-create limit alike.
	creators        = 16
	convergeTimeout = 30 * time.Minute
)

var memcachedGVR = schema.GroupVersionResource{Group: "cache.my.domain", Version: "v1", Resource: "memcacheds"}

func crName(i int) string { return fmt.Sprintf("bench-%04d", i) }

// namespaceOf is the namespace of the i-th CR: benchNamespace for the first crsPerNamespace,
// then bench-1, bench-2, ...
func namespaceOf(i int) string {
	if i < crsPerNamespace {
		return benchNamespace
	}
	return fmt.Sprintf("%s-%d", benchNamespace, i/crsPerNamespace)
}

// createNamespaces creates the namespaces of n CRs.
func createNamespaces(ctx context.Context, kc kubernetes.Interface, n int) error {
	for i := 0; i < max(n, 1); i += crsPerNamespace {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceOf(i)}}
		if _, err := kc.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// measure runs one variant at one N on a fresh control plane.
func measure(ctx context.Context, o options, variant string, n int) (result, error) {
	r := result{variant: variant, n: n}
	v, err := parseVariant(variant)
	if err != nil {
		return r, err
	}
	cp, err := startControlPlane(o)
	if err != nil {
		return r, err
	}
	defer cp.stop()
	kc, err := kubernetes.NewForConfig(cp.admin)
	if err != nil {
		return r, err
	}
	if err := createNamespaces(ctx, kc, n); err != nil {
		return r, err
	}
	if v.foreign {
		if err := o.foreign.seed(ctx, o, cp); err != nil {
			return r, fmt.Errorf("foreign objects: %w", err)
		}
	}
	if v.base == "raw" {
		cp0, kcm0, err := cp.cpu(o)
		if err != nil {
			return r, err
		}
		apiProfiled := cp.profileConverging(o, variant, n)
		if r.converge, err = rawCreate(ctx, o, cp.admin, n); err != nil {
			return r, err
		}
		if err := cp.settle(ctx, o, kc, n); err != nil {
			return r, err
		}
		cp1, kcm1, err := cp.cpu(o)
		if err != nil {
			return r, err
		}
		r.controlPlaneCPU, r.kcmCPU = cp1-cp0, kcm1-kcm0
		if err := <-apiProfiled; err != nil {
			return r, err
		}
		if r.controlPlaneRSS, err = cp.memory(o); err != nil {
			return r, err
		}
		r.recordBytes, err = recordBytesPerCR(ctx, kc, n)
		return r, err
	}

	op, err := startOperator(o, cp, v)
	if err != nil {
		return r, err
	}
	defer op.stop()
	dc, err := dynamic.NewForConfig(cp.admin)
	if err != nil {
		return r, err
	}

	// Converge: create N CRs, wait until every one reports Deployed.
	before, err := op.scrape()
	if err != nil {
		return r, err
	}
	cpu0, err := op.cpu()
	if err != nil {
		return r, err
	}
	cp0, kcm0, err := cp.cpu(o)
	if err != nil {
		return r, err
	}
	mark0 := cp.mark()
	// A CPU profile of the start of convergence explains where an install's CPU goes.
	convergeProfiled := make(chan error, 1)
	go func() {
		convergeProfiled <- op.profileCPU(o.convergeProfile, profilePath(o, "converge-cpu", variant, n))
	}()
	apiProfiled := cp.profileConverging(o, variant, n)
	start := time.Now()
	err = parallel(n, func(i int) error {
		cr := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cache.my.domain/v1", "kind": "Memcached",
			"metadata": map[string]any{"name": crName(i), "namespace": namespaceOf(i)},
			"spec":     map[string]any{"replicaCount": int64(1)},
		}}
		_, err := dc.Resource(memcachedGVR).Namespace(namespaceOf(i)).Create(ctx, cr, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return r, fmt.Errorf("create Memcacheds: %w", err)
	}
	if err := waitDeployed(ctx, dc, n); err != nil {
		return r, err
	}
	r.converge = time.Since(start)
	cpu1, err := op.cpu()
	if err != nil {
		return r, err
	}
	after, err := op.scrape()
	if err != nil {
		return r, err
	}
	r.convergeCPU = cpu1 - cpu0
	r.p50, r.p99 = quantile(0.5, before, after), quantile(0.99, before, after)
	progress("  Helm reconciles until Deployed: %s", after.reconcilesSince(before))
	if r.recordBytes, err = recordBytesPerCR(ctx, kc, n); err != nil {
		return r, err
	}
	markDeployed := cp.mark()
	if r.trace, err = cp.installTrace(mark0, markDeployed); err != nil {
		return r, err
	}
	progress("  where an install's time goes: %s", traceReport(r.trace))

	// The control plane's CPU and the operator's requests count until the end state the
	// raw-create limit's is measured at too: what an install costs includes the operator's
	// reports of its StatefulSet while kube-controller-manager makes the pod. Idle starts after.
	if err := cp.settle(ctx, o, kc, n); err != nil {
		return r, err
	}
	cp1, kcm1, err := cp.cpu(o)
	if err != nil {
		return r, err
	}
	r.controlPlaneCPU, r.kcmCPU = cp1-cp0, kcm1-kcm0
	time.Sleep(10 * time.Second) // let follow-up reconciles of the convergence finish
	markSettled := cp.mark()
	var endpoints map[string]int
	if r.convergeRequests, endpoints, err = cp.requests(mark0, markSettled); err != nil {
		return r, err
	}
	progress("  requests until settled: %v", endpoints)
	if _, endpoints, err := cp.requests(markDeployed, markSettled); err == nil {
		progress("    of them, after all were Deployed: %v", endpoints)
	}
	if err := <-convergeProfiled; err != nil {
		return r, err
	}
	if err := <-apiProfiled; err != nil {
		return r, err
	}
	idle0, err := op.scrape()
	if err != nil {
		return r, err
	}
	cpuIdle0, _ := op.cpu()
	markIdle0 := cp.mark()
	// A CPU profile of the idle window explains where an idle reconcile's CPU goes.
	profiled := make(chan error, 1)
	go func() {
		profiled <- op.profileCPU(o.idle, profilePath(o, "idle-cpu", variant, n))
	}()
	select {
	case <-ctx.Done():
		return r, ctx.Err()
	case <-time.After(o.idle):
	}
	if err := <-profiled; err != nil {
		return r, err
	}
	idle1, err := op.scrape()
	if err != nil {
		return r, err
	}
	cpuIdle1, _ := op.cpu()
	idleRequests, idleEndpoints, err := cp.requests(markIdle0, cp.mark())
	if err != nil {
		return r, err
	}
	progress("  requests while idle: %v", idleEndpoints)
	r.idleReconciles = idle1.reconciles() - idle0.reconciles()
	if r.idleReconciles > 0 {
		r.idleCPUPerRecon = time.Duration(float64(cpuIdle1-cpuIdle0) / r.idleReconciles)
		r.idleRequests = map[string]float64{}
		for verb, c := range idleRequests {
			r.idleRequests[verb] = float64(c) / r.idleReconciles
		}
	}
	if err := op.profileHeap(profilePath(o, "idle-heap", variant, n)); err != nil {
		return r, err
	}
	if r.controlPlaneRSS, err = cp.memory(o); err != nil {
		return r, err
	}
	r.rss, r.peakRSS, err = op.memory()
	return r, err
}

// settle brings the control plane to the end state every variant is measured at: every CR's
// objects exist (raw: created; operators: Deployed) and kube-controller-manager has made every
// StatefulSet's pod. Without it, the control plane's CPU would count, of the work every variant
// causes alike, only what fell into its own time to converge: the faster a variant, the more of
// kube-controller-manager's pods it left uncounted. kube-controller-manager is restarted with more
// than its default 20 requests/s, at which a thousand StatefulSets take minutes; every variant
// pays the restart alike.
func (cp *controlPlane) settle(ctx context.Context, o options, kc kubernetes.Interface, n int) error {
	if err := cp.startKCM(o, 500); err != nil {
		return err
	}
	return waitRolledOut(ctx, kc, n, "app.kubernetes.io/name=memcached")
}

// recordBytesPerCR is the size of the n Memcacheds' Helm release records (their Secrets' data,
// every revision), per CR; others' releases in the namespace are not counted.
func recordBytesPerCR(ctx context.Context, kc kubernetes.Interface, n int) (float64, error) {
	ours := map[string]bool{}
	for i := range n {
		ours[crName(i)] = true
	}
	secrets, err := kc.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
	if err != nil {
		return 0, fmt.Errorf("list release records: %w", err)
	}
	total := 0
	for _, s := range secrets.Items {
		if ours[s.Labels["name"]] {
			total += len(s.Data["release"])
		}
	}
	return float64(total) / float64(n), nil
}

// profilePath is where a profile of a measurement goes: profiles are kept of the plain variants
// only ("" for others).
func profilePath(o options, kind, variant string, n int) string {
	if strings.Contains(variant, "+") {
		return ""
	}
	return filepath.Join(o.out, fmt.Sprintf("%s-%s-n%d.pprof", kind, variant, n))
}

// waitRolledOut waits until kube-controller-manager has taken n StatefulSets (of selector) as
// far as it can without a kubelet: the current generation observed and every pod created. It
// looks once per second per 500 StatefulSets, from the API server's watch cache: a list of 10000
// every second took most of the API server's CPU, and starved the rollout it waited for.
func waitRolledOut(ctx context.Context, kc kubernetes.Interface, n int, selector string) error {
	return waitUntil(ctx, "StatefulSets", n, selector, func(opts metav1.ListOptions) (int, error) {
		list, err := kc.AppsV1().StatefulSets(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return 0, err
		}
		return countIf(list.Items, func(s *appsv1.StatefulSet) bool {
			return rolledOut(s.Generation, s.Status.ObservedGeneration, s.Spec.Replicas, s.Status.Replicas)
		}), nil
	})
}

// waitDeploymentsRolledOut is waitRolledOut for Deployments (others' objects).
func waitDeploymentsRolledOut(ctx context.Context, kc kubernetes.Interface, n int, selector string) error {
	return waitUntil(ctx, "Deployments", n, selector, func(opts metav1.ListOptions) (int, error) {
		list, err := kc.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return 0, err
		}
		return countIf(list.Items, func(d *appsv1.Deployment) bool {
			return rolledOut(d.Generation, d.Status.ObservedGeneration, d.Spec.Replicas, d.Status.Replicas)
		}), nil
	})
}

// rolledOut says whether a workload's controller has observed its current generation and made
// every replica (without a kubelet, none becomes ready).
func rolledOut(generation, observed int64, want *int32, have int32) bool {
	return observed >= generation && want != nil && have == *want
}

// waitUntil lists (of selector, from the watch cache) once per second per 500 objects until
// count says n of them are done, or convergeTimeout passes.
func waitUntil(ctx context.Context, kind string, n int, selector string, count func(metav1.ListOptions) (int, error)) error {
	ctx, cancel := context.WithTimeout(ctx, convergeTimeout)
	defer cancel()
	every := time.Duration(max(1, n/500)) * time.Second
	for {
		done, err := count(metav1.ListOptions{LabelSelector: selector, ResourceVersion: "0"})
		if err != nil {
			return err
		}
		if done >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d %s rolled out: %w", done, n, kind, ctx.Err())
		case <-time.After(every):
		}
	}
}

// countIf is how many of items ok holds for.
func countIf[T any](items []T, ok func(*T) bool) int {
	c := 0
	for i := range items {
		if ok(&items[i]) {
			c++
		}
	}
	return c
}

// parallel runs f(0..n-1) on `creators` goroutines and returns the first error.
func parallel(n int, f func(i int) error) error { return parallelN(creators, n, f) }

// parallelN runs f(0..n-1) on workers goroutines and returns the first error.
func parallelN(workers, n int, f func(i int) error) error {
	work := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			wg.Wait()
			return err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// waitDeployed watches the Memcacheds of every namespace until n of them have Deployed=True.
func waitDeployed(ctx context.Context, dc dynamic.Interface, n int) error {
	ctx, cancel := context.WithTimeout(ctx, convergeTimeout)
	defer cancel()
	res := dc.Resource(memcachedGVR)
	deployed := map[string]bool{}
	note := func(u *unstructured.Unstructured) {
		if deployedCondition(u) {
			deployed[u.GetNamespace()+"/"+u.GetName()] = true
		}
	}
	for {
		list, err := res.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for i := range list.Items {
			note(&list.Items[i])
		}
		if len(deployed) >= n {
			return nil
		}
		w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			return err
		}
		for ev := range w.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				note(u)
			}
			if len(deployed) >= n {
				w.Stop()
				return nil
			}
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%d of %d Memcacheds Deployed after %s: %w", len(deployed), n, convergeTimeout, err)
		}
	}
}

// rawCreate creates, for n releases, the objects the chart renders plus a Secret the size of a
// Helm release record, with `creators` clients at once: the floor for any operator doing the
// same work through this API server.
func rawCreate(ctx context.Context, o options, cfg *rest.Config, n int) (time.Duration, error) {
	const placeholder, nsPlaceholder = "benchrelease", "nsplaceholder"
	rendered, err := exec.Command(o.helm, "template", placeholder, filepath.Join(o.repo, "helm-charts", "memcached"),
		"--namespace", nsPlaceholder, "--set", "replicaCount=1", "--kube-version", o.kubeVersion).Output()
	if err != nil {
		return 0, fmt.Errorf("helm template: %w", err)
	}
	record, err := releaseRecord(o.repo, rendered)
	if err != nil {
		return 0, err
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return 0, err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return 0, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	var docs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(rendered), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return 0, err
		}
		if len(u.Object) > 0 {
			docs = append(docs, u)
		}
	}
	start := time.Now()
	err = parallel(n, func(i int) error {
		name, ns := crName(i), namespaceOf(i)
		names := strings.NewReplacer(placeholder, name, nsPlaceholder, ns)
		for _, doc := range docs {
			raw, _ := json.Marshal(doc.Object)
			u := &unstructured.Unstructured{}
			if err := json.Unmarshal([]byte(names.Replace(string(raw))), &u.Object); err != nil {
				return err
			}
			m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
			if err != nil {
				return err
			}
			if _, err := dc.Resource(m.Resource).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1." + name + ".v1", Namespace: ns,
				Labels: map[string]string{"owner": "helm", "name": name, "status": "deployed", "version": "1"}},
			Type: "helm.sh/release.v1",
			Data: map[string][]byte{"release": record},
		}
		_, err := kc.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{})
		return err
	})
	return time.Since(start), err
}

// releaseRecord is as large as Helm's record of a release of this chart: the chart's files and
// the rendered manifest, as JSON, gzipped and base64-encoded.
func releaseRecord(repo string, manifest []byte) ([]byte, error) {
	files := map[string]string{}
	dir := filepath.Join(repo, "helm-charts", "memcached")
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		files[path] = string(raw)
		return err
	})
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(map[string]any{"chart": files, "manifest": string(manifest)})
	if err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	if _, err := w.Write(raw); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return []byte(base64.StdEncoding.EncodeToString(gz.Bytes())), nil
}
