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

// Command local-storage provisions the local cluster's PersistentVolumes: a directory per claim
// under --dir, handed out as a `local` volume pinned to the one node, as node-local storage is on
// a real cluster, and removed with its claim. SIG Storage's provisioner library does the
// controller's work (claims, classes, volumes, retries); this file only makes and removes the
// directories. The cluster tool runs it on the node (`cluster storage-on`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// hostnameLabel is the node label a `local` volume's node affinity names, as the kubelet sets it.
const hostnameLabel = "kubernetes.io/hostname"

type provisioner struct {
	client kubernetes.Interface
	dir    string // the volumes' parent directory
	node   string // the one node's name
}

// Provision makes the claim's directory and a volume for it on the node the scheduler chose
// (the class binds WaitForFirstConsumer). The directory is root's with mode 0755, as the root of
// a fresh filesystem is: a pod that is not root writes to it only through its fsGroup, as on
// real storage.
func (p *provisioner) Provision(ctx context.Context, o controller.ProvisionOptions) (*corev1.PersistentVolume, controller.ProvisioningState, error) {
	if o.SelectedNodeName != "" && o.SelectedNodeName != p.node {
		return nil, controller.ProvisioningFinished, fmt.Errorf("node %s is not %s, the only node this provisioner serves", o.SelectedNodeName, p.node)
	}
	node, err := p.client.CoreV1().Nodes().Get(ctx, p.node, metav1.GetOptions{})
	if err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	hostname := node.Labels[hostnameLabel]
	if hostname == "" {
		return nil, controller.ProvisioningFinished, fmt.Errorf("node %s has no %s label", p.node, hostnameLabel)
	}
	path := filepath.Join(p.dir, o.PVName)
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if o.StorageClass.ReclaimPolicy != nil {
		reclaim = *o.StorageClass.ReclaimPolicy
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: o.PVName},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			AccessModes:                   o.PVC.Spec.AccessModes,
			VolumeMode:                    o.PVC.Spec.VolumeMode,
			MountOptions:                  o.StorageClass.MountOptions,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: o.PVC.Spec.Resources.Requests[corev1.ResourceStorage]},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: path}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: hostnameLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{hostname}}},
			}}}},
		},
	}, controller.ProvisioningFinished, nil
}

// Delete removes a volume's directory, only one of this provisioner's own.
func (p *provisioner) Delete(_ context.Context, pv *corev1.PersistentVolume) error {
	if pv.Spec.Local == nil {
		return errors.New("not a local volume")
	}
	path := filepath.Clean(pv.Spec.Local.Path)
	if filepath.Dir(path) != filepath.Clean(p.dir) || !strings.HasPrefix(filepath.Base(path), "pvc-") {
		return fmt.Errorf("%s is not a volume of this provisioner (under %s)", path, p.dir)
	}
	return os.RemoveAll(path)
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the kubeconfig to reach the API server with")
	dir := flag.String("dir", "", "the directory that holds the volumes")
	node := flag.String("node", "", "the node's name")
	name := flag.String("provisioner", "my.domain/local-storage", "the provisioner name StorageClasses give")
	metricsPort := flag.Int("metrics-port", 10260, "the port of /metrics on 127.0.0.1, which also tells that it runs")
	flag.Parse()
	if *kubeconfig == "" || *dir == "" || *node == "" {
		klog.Exit("--kubeconfig, --dir and --node are required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Exit(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		klog.Exit(err)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		klog.Exit(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	controller.NewProvisionController(ctx, client, *name, &provisioner{client: client, dir: *dir, node: *node},
		controller.LeaderElection(false),
		controller.MetricsAddress("127.0.0.1"), controller.MetricsPort(int32(*metricsPort)),
	).Run(ctx)
}
