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

// Command memcached-scorecard-tests is the project's own scorecard test image: run by
// `operator-sdk scorecard` in a pod with the bundle at /bundle, it creates each CR of the CSV's
// alm-examples in the pod's namespace and checks, against the live cluster, that the operator
// brings it to its working state. It prints a scorecard v1alpha3 TestStatus as JSON.
//
//	memcached-scorecard-tests memcached-deployed
//	memcached-scorecard-tests memcachedbackup-reports-pods
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

const (
	bundleDir = "/bundle"
	timeout   = 150 * time.Second
)

var tests = map[string]func(context.Context, client.Client, string, *unstructured.Unstructured) error{
	"memcached-deployed":           memcachedDeployed,
	"memcachedbackup-reports-pods": backupReportsPods,
}

var kinds = map[string]string{"memcached-deployed": "Memcached", "memcachedbackup-reports-pods": "MemcachedBackup"}

func main() {
	if len(os.Args) != 2 || tests[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: memcached-scorecard-tests memcached-deployed|memcachedbackup-reports-pods")
		os.Exit(2)
	}
	name := os.Args[1]
	result := scapiv1alpha3.TestResult{Name: name, State: scapiv1alpha3.PassState}
	if err := run(name); err != nil {
		result.State = scapiv1alpha3.FailState
		result.Errors = []string{err.Error()}
	}
	out, err := json.MarshalIndent(scapiv1alpha3.TestStatus{Results: []scapiv1alpha3.TestResult{result}}, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}

func run(name string) error {
	example, err := almExample(bundleDir, kinds[name])
	if err != nil {
		return err
	}
	ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return fmt.Errorf("the test runs in a pod: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := cachev1.AddToScheme(scheme); err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()

	// A name of its own, so that tests and earlier runs do not collide.
	example.SetName(fmt.Sprintf("%s-scorecard-%d", example.GetName(), time.Now().Unix()%100000))
	example.SetNamespace(strings.TrimSpace(string(ns)))
	if err := cl.Create(ctx, example); err != nil {
		return fmt.Errorf("create %s %s from alm-examples: %w", example.GetKind(), example.GetName(), err)
	}
	defer func() { _ = cl.Delete(context.Background(), example) }()
	return tests[name](ctx, cl, example.GetNamespace(), example)
}

// almExample returns the alm-examples entry of a kind from the bundle's CSV.
func almExample(dir, kind string) (*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "manifests", "*.clusterserviceversion.yaml"))
	if err != nil || len(files) != 1 {
		return nil, fmt.Errorf("want one CSV in %s/manifests, found %v (%v)", dir, files, err)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		return nil, err
	}
	var csv operatorsv1alpha1.ClusterServiceVersion
	if err := yaml.Unmarshal(raw, &csv); err != nil {
		return nil, fmt.Errorf("parse %s: %w", files[0], err)
	}
	var examples []map[string]any
	if err := json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples); err != nil {
		return nil, fmt.Errorf("parse alm-examples: %w", err)
	}
	for _, e := range examples {
		if e["kind"] == kind {
			return &unstructured.Unstructured{Object: e}, nil
		}
	}
	return nil, fmt.Errorf("alm-examples has no %s", kind)
}

// memcachedDeployed: the Helm release is Deployed and the Memcached lists its servers, all ready.
func memcachedDeployed(ctx context.Context, cl client.Client, ns string, example *unstructured.Unstructured) error {
	key := types.NamespacedName{Namespace: ns, Name: example.GetName()}
	return poll(ctx, func() error {
		mc := &cachev1.Memcached{}
		if err := cl.Get(ctx, key, mc); err != nil {
			return err
		}
		deployed := false
		for _, c := range mc.Status.Conditions {
			if c.Type == "Deployed" && c.Status == metav1.ConditionTrue {
				deployed = true
			}
		}
		if !deployed {
			return fmt.Errorf("memcached %s is not Deployed: conditions %+v", key.Name, mc.Status.Conditions)
		}
		want := 1
		if mc.Spec.ReplicaCount != nil {
			want = int(*mc.Spec.ReplicaCount)
		}
		if len(mc.Status.Servers) != want || len(mc.Status.ReadyServers) != want {
			return fmt.Errorf("memcached %s lists %d servers, %d ready, of %d", key.Name, len(mc.Status.Servers), len(mc.Status.ReadyServers), want)
		}
		return nil
	})
}

// backupReportsPods: the MemcachedBackup is Available and lists size pods in status.nodes.
func backupReportsPods(ctx context.Context, cl client.Client, ns string, example *unstructured.Unstructured) error {
	key := types.NamespacedName{Namespace: ns, Name: example.GetName()}
	return poll(ctx, func() error {
		b := &cachev1.MemcachedBackup{}
		if err := cl.Get(ctx, key, b); err != nil {
			return err
		}
		if len(b.Status.Nodes) != int(b.Spec.Size) {
			return fmt.Errorf("MemcachedBackup %s lists %d pods in status.nodes, want %d", key.Name, len(b.Status.Nodes), b.Spec.Size)
		}
		if !meta.IsStatusConditionTrue(b.Status.Conditions, cachev1.ConditionAvailable) {
			return fmt.Errorf("MemcachedBackup %s is not Available: %+v", key.Name, b.Status.Conditions)
		}
		return nil
	})
}

func poll(ctx context.Context, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ctx.Err(), err)
		case <-time.After(2 * time.Second):
		}
	}
}
