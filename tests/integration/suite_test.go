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

// Package integration runs the operator's binary, as it runs in a pod, against a real API server
// (envtest): leader for life between two instances, the out-of-cluster fallback, WATCH_NAMESPACE.
package integration_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	olmcrds "github.com/operator-framework/api/crds"
	apiv2 "github.com/operator-framework/api/pkg/operators/v2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

var (
	testEnv    *envtest.Environment
	k8sClient  client.Client
	managerBin string
	kubeconfig string
	root       string
)

func TestIntegration(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Manager binary integration suite")
}

var _ = BeforeSuite(func() {
	Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(),
		"KUBEBUILDER_ASSETS must name the folder of kube-apiserver and etcd: run the tests with `make test`")
	var err error
	root, err = filepath.Abs(filepath.Join("..", ".."))
	Expect(err).NotTo(HaveOccurred())

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		// OLM's OperatorCondition, which OLM makes for the operators it runs.
		CRDs: []*apiextensionsv1.CustomResourceDefinition{olmcrds.OperatorCondition()},
	}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())

	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(cachev1.AddToScheme(scheme)).To(Succeed())
	Expect(apiv2.AddToScheme(scheme)).To(Succeed())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(writeKubeconfig(cfg, kubeconfig)).To(Succeed())

	managerBin, err = gexec.Build("github.com/example/memcached-operator")
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	gexec.KillAndWait()
	gexec.CleanupBuildArtifacts()
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*kc, path)
}

// operator is one running instance of the manager binary.
type operator struct {
	*gexec.Session
}

// inPod starts the manager as it runs in a pod of namespace ns named podName: in a private mount
// namespace whose /run holds the service account's namespace file, which operator-lib reads.
func inPod(ns, podName string, env ...string) *operator {
	if _, err := exec.LookPath("unshare"); err != nil || os.Geteuid() != 0 {
		const why = "needs root and unshare(1) to give the manager a private service-account namespace file"
		if os.Getenv("CI") != "" {
			Fail(why + ": CI runs as root, so a skip here would hide a suite") // .ci/run sets CI
		}
		Skip(why)
	}
	script := `mount -t tmpfs tmpfs /run && mkdir -p /run/secrets/kubernetes.io/serviceaccount &&
printf %s "$OPERATOR_NAMESPACE" > /run/secrets/kubernetes.io/serviceaccount/namespace && exec "$@"`
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh", managerBin}, managerArgs()...)...)
	cmd.Env = append(os.Environ(), append(env, "POD_NAME="+podName, "OPERATOR_NAMESPACE="+ns)...)
	return start(cmd)
}

// outOfCluster starts the manager as `make run` does: no pod, no service account.
func outOfCluster(env ...string) *operator {
	cmd := exec.Command(managerBin, managerArgs()...)
	cmd.Env = append(os.Environ(), env...)
	return start(cmd)
}

func managerArgs() []string {
	return []string{"--kubeconfig=" + kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0", "--zap-log-level=info"}
}

func start(cmd *exec.Cmd) *operator {
	cmd.Dir = root // watches.yaml names the chart relative to the working directory
	s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { s.Kill().Wait() })
	return &operator{s}
}

func newNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "it-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// operatorPod makes the Pod object an instance claims to run in (envtest has no kubelet).
func operatorPod(ctx context.Context, ns, name string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "controller:latest"}}},
	}
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	return pod
}
