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
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Others' objects in the operator's namespace, as on a real cluster: Helm releases that others
// installed with the helm CLI, and Deployments (with their ReplicaSets and pods) that nothing of
// the operator's makes. The "this+foreign" variant measures this operator among them; its
// memory, convergence and idle figures should match the plain "this" run.
type foreignObjects struct {
	releases    int // Helm releases, each a ConfigMap
	releaseKB   int // the size of each release's record, about
	deployments int
}

// seed makes the foreign objects, and lets kube-controller-manager create every foreign
// Deployment's ReplicaSet and pod before the operator starts (with a higher rate limit, then
// its default again), so the measurement sees a settled namespace.
func (f foreignObjects) seed(ctx context.Context, o options, cp *controlPlane) error {
	start := time.Now()
	kubeconfig, err := cp.kubeconfig("bench-helm")
	if err != nil {
		return err
	}
	chart, err := foreignChart(cp.dir)
	if err != nil {
		return err
	}
	// The record holds the values and the rendered manifest, each with the blob: gzipped base64
	// text, base64-encoded again, is about as large as the blob twice.
	blobBytes := f.releaseKB * 1024 / 2
	if err := parallelN(4, f.releases, func(i int) error {
		values := filepath.Join(cp.dir, fmt.Sprintf("foreign-%04d.yaml", i))
		raw := make([]byte, blobBytes*3/4)
		if _, err := rand.Read(raw); err != nil {
			return err
		}
		if err := os.WriteFile(values, []byte("blob: "+base64.StdEncoding.EncodeToString(raw)+"\n"), 0o600); err != nil {
			return err
		}
		defer os.Remove(values)
		out, err := exec.CommandContext(ctx, o.helm, "install", fmt.Sprintf("foreign-%04d", i), chart,
			"--namespace", benchNamespace, "--kubeconfig", kubeconfig, "--values", values).CombinedOutput()
		if err != nil {
			return fmt.Errorf("helm install: %w: %s", err, out)
		}
		return nil
	}); err != nil {
		return err
	}
	kc, err := kubernetes.NewForConfig(cp.admin)
	if err != nil {
		return err
	}
	if err := parallel(f.deployments, func(i int) error {
		_, err := kc.AppsV1().Deployments(benchNamespace).Create(ctx, foreignDeployment(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := cp.startKCM(o, 500); err != nil {
		return err
	}
	if err := waitDeploymentsRolledOut(ctx, kc, f.deployments, foreignLabel+"=true"); err != nil {
		return err
	}
	if err := cp.startKCM(o, 0); err != nil {
		return err
	}
	size, err := recordSize(ctx, kc)
	progress("  %d foreign Helm releases (records of %d KB) and %d foreign Deployments made in %s",
		f.releases, size/1024, f.deployments, time.Since(start).Round(time.Second))
	return err
}

// foreignLabel selects the foreign Deployments.
const foreignLabel = "bench/foreign"

func foreignDeployment(i int) *appsv1.Deployment {
	labels := map[string]string{"app": fmt.Sprintf("web-%04d", i), foreignLabel: "true"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%04d", i), Namespace: benchNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "registry.example.com/web:1.0",
					Env:       []corev1.EnvVar{{Name: "MODE", Value: "production"}},
					Resources: corev1.ResourceRequirements{},
				}}},
			},
		},
	}
}

// foreignChart writes a chart of one ConfigMap holding .Values.blob.
func foreignChart(dir string) (string, error) {
	chart := filepath.Join(dir, "foreign-chart")
	files := map[string]string{
		"Chart.yaml":               "apiVersion: v2\nname: foreign\nversion: 1.0.0\n",
		"templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  blob: {{ .Values.blob | quote }}\n",
	}
	for name, content := range files {
		path := filepath.Join(chart, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	return chart, nil
}

// recordSize is the size of the first foreign release's record.
func recordSize(ctx context.Context, kc kubernetes.Interface) (int, error) {
	list, err := kc.CoreV1().Secrets(benchNamespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=foreign-0000"})
	if err != nil || len(list.Items) == 0 {
		return 0, err
	}
	n := 0
	for _, v := range list.Items[0].Data {
		n += len(v)
	}
	return n, nil
}

// variant is what one measurement runs: its base ("raw", "stock", "this") and modifiers after
// "+": "this+gogc=50" runs this operator with GOGC=50, "this+memlimit=128MiB" with that
// GOMEMLIMIT (as a pod's memory limit sets it), "this+foreign" among foreign objects.
type variant struct {
	base     string
	gogc     string
	memlimit string
	foreign  bool
}

// gc reports whether the variant measures a garbage collector setting.
func (v variant) gc() bool { return v.gogc != "" || v.memlimit != "" }

// gcLabel names the variant's garbage collector setting.
func (v variant) gcLabel() string {
	var s []string
	if v.gogc != "" {
		s = append(s, "GOGC="+v.gogc)
	}
	if v.memlimit != "" {
		s = append(s, "GOMEMLIMIT="+v.memlimit)
	}
	return strings.Join(s, ", ")
}

func parseVariant(v string) (variant, error) {
	parts := strings.Split(v, "+")
	out := variant{base: parts[0]}
	for _, m := range parts[1:] {
		switch {
		case m == "foreign":
			out.foreign = true
		case strings.HasPrefix(m, "gogc="):
			out.gogc = strings.TrimPrefix(m, "gogc=")
		case strings.HasPrefix(m, "memlimit="):
			out.memlimit = strings.TrimPrefix(m, "memlimit=")
		default:
			return out, fmt.Errorf("variant %q: unknown modifier %q", v, m)
		}
	}
	if out.base != "raw" && out.base != "stock" && out.base != "this" {
		return out, fmt.Errorf("variant %q: unknown base %q", v, out.base)
	}
	if out.base != "this" && len(parts) > 1 {
		return out, fmt.Errorf("variant %q: modifiers apply to this operator only", v)
	}
	return out, nil
}
