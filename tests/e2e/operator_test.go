//go:build e2e

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

package e2e

import (
	"os"
	"path/filepath"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The suite runs as parallel Ginkgo processes (make test-e2e's E2E_PROCS). The operator of make
// deploy, with the suite's settings, serves every tutorial spec that runs in parallel, each in
// namespaces of its own. The specs that need the cluster without it (OLM, the upgrades, OKD's
// emulation), or that stop, scale or move it, or change the whole cluster's network, are Serial:
// Ginkgo runs them on process 1 once every parallel spec has ended. Whichever process needs the
// operator first deploys it, under a file lock, so that no two processes deploy or undeploy it at
// once.

// suiteSettingsAnnotation marks the operator Deployment that withOperator deployed and set up; one
// of another image (an earlier run's, on a cluster that outlived it) is deployed again.
const suiteSettingsAnnotation = "e2e.memcached-operator/suite-settings"

// withOperator makes sure the operator of make deploy runs with the suite's settings.
func withOperator() {
	defer lockOperator()()
	deployment := &appsv1.Deployment{}
	err := k8s.Get(ctx(), types.NamespacedName{Namespace: operatorNamespace, Name: operatorDeployment}, deployment)
	Expect(client.IgnoreNotFound(err)).To(Succeed())
	if err == nil && deployment.Annotations[suiteSettingsAnnotation] == "true" &&
		deployment.Spec.Template.Spec.Containers[0].Image == operatorImage {
		// A spec that scaled it and failed before scaling back leaves it so.
		if ptr.Deref(deployment.Spec.Replicas, 1) != 1 || deployment.Status.AvailableReplicas != 1 || deployment.Status.Replicas != 1 {
			kubectl("-n", operatorNamespace, "scale", "deployment", operatorDeployment, "--replicas=1")
			kubectl("-n", operatorNamespace, "rollout", "status", "deployment/"+operatorDeployment, "--timeout=3m")
		}
		return
	}
	if err == nil { // another deployment of it (OKD's, or an earlier run's): start from none
		mustMake("undeploy", "ignore-not-found=true")
	}

	By("deploying the operator with make deploy")
	mustMake("deploy", "IMG="+operatorImage, "MEMCACHED_IMG="+memcachedImage)
	// The suite's settings, as an admin sets flags: memcached's stats read every 10 s instead
	// of 30, so the specs that wait for figures (memory pressure, the autopilot's steps, which
	// need two reads) wait a third as long; each release checked every 20 s instead of every
	// minute, so a change nothing watches (a tenant's forged release record) is seen sooner;
	// TLS certificates that live 2 minutes, so that one is renewed within the TLS spec; a user's
	// certificate Secret read every 5 s and a new CA spread over 30 s (the local kubelet brings
	// a Secret into pods within 15 s), so that a CA change ends within its spec. The same
	// behaviour, sooner.
	kubectl("-n", operatorNamespace, "patch", "deployment", operatorDeployment, "--type=json", "-p",
		`[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--operand-stats-interval=10s"},`+
			`{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--reconcile-period=20s"},`+
			`{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--tls-certificate-validity=`+tlsCertificateValidity.String()+`"},`+
			`{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--tls-certificate-secret-check=5s"},`+
			`{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--tls-ca-spread=30s"}]`)
	kubectl("-n", operatorNamespace, "rollout", "status", "deployment/"+operatorDeployment, "--timeout=3m")
	kubectl("-n", operatorNamespace, "annotate", "deployment", operatorDeployment, suiteSettingsAnnotation+"=true")
}

// withoutOperator removes the operator of make deploy, if it runs, and every CR with it: the
// specs that install the operator otherwise (OLM, OKD's namespace) need the cluster to themselves.
func withoutOperator() {
	defer lockOperator()()
	err := k8s.Get(ctx(), types.NamespacedName{Name: operatorNamespace}, &corev1.Namespace{})
	if err == nil {
		mustMake("undeploy", "ignore-not-found=true")
	}
	Expect(client.IgnoreNotFound(err)).To(Succeed())
}

// lockOperator takes the lock that the suite's processes deploy and remove the operator under,
// and returns what releases it.
func lockOperator() func() {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "memcached-operator-e2e.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	Expect(err).NotTo(HaveOccurred())
	Expect(syscall.Flock(int(f.Fd()), syscall.LOCK_EX)).To(Succeed())
	return func() { _ = f.Close() } // closing the file releases the lock
}
