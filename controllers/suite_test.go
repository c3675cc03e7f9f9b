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

package controllers_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers"
	"github.com/example/memcached-operator/internal/helm"
)

// The suite runs the operator's controllers, set up exactly as main.go does, against a real
// kube-apiserver and etcd (envtest). envtest runs no controller-manager: there is no garbage
// collector, and Deployments get no ReplicaSets or Pods unless a test makes them.

const (
	// relatedImage stands in for the RELATED_IMAGE_MEMCACHED of an OLM install.
	relatedImage = "registry.example.com/mirror/memcached:1.6.38"
	httpProxy    = "http://proxy.example.com:3128"
	// reconcilePeriod is short so the idle test sees periodic reconciles quickly.
	reconcilePeriod = 2 * time.Second
	// retireDelay is short so the upgrade specs see old pods go quickly.
	retireDelay = 2 * time.Second
	// statsInterval is short so the stats specs see a few reads quickly.
	statsInterval = time.Second
	// statsPort is where the stats specs' memcacheds listen, each on a loopback address of its own.
	statsPort = 21211
	// capabilitiesTTL is short: the capabilities test waits for a refresh.
	capabilitiesTTL = 5 * time.Second
	// certificateValidity is how long the certificates of caches with spec.tls live: one is renewed
	// within a spec.
	certificateValidity = 30 * time.Second
	// operatorNamespace is the operator's own namespace (POD_NAMESPACE), where it keeps its keys,
	// and operatorServiceAccount its account there.
	operatorNamespace      = "memcached-operator-system"
	operatorServiceAccount = "memcached-operator-controller-manager"
)

var (
	testEnv   *envtest.Environment
	cfg       *rest.Config
	k8sClient client.Client // strict field validation, like kubectl
	mgrCache  cache.Cache   // the manager's cache (controllers.NewCache)
	scheme    = runtime.NewScheme()
	writes    = &writeCounter{}
	operator  *operatorProcess
	stopTexts context.CancelFunc // stops reading the operator's texts (texts_test.go)
	// recovery stands in for the leader lease: while it holds an error, releases left pending
	// are not recovered (internal/leader).
	recovery recoveryGate
)

// recoveryGate is a MayRecoverPending a test opens and closes.
type recoveryGate struct{ closed atomic.Pointer[error] }

func (g *recoveryGate) mayRecover(context.Context) error {
	if err := g.closed.Load(); err != nil {
		return *err
	}
	return nil
}

func (g *recoveryGate) close(err error) { g.closed.Store(&err) }
func (g *recoveryGate) open()           { g.closed.Store(nil) }

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controllers Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(logr.New(helmReconciles.sink(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)).GetSink())))
	Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(),
		"KUBEBUILDER_ASSETS must name the folder of kube-apiserver and etcd: run the tests with `make test`")

	// watches.yaml names its chart relative to the operator's working directory, the repo root.
	Expect(os.Chdir(repoRoot())).To(Succeed())
	// What OLM gives the operator: the cluster proxy (and a mirrored memcached image, in Config).
	Expect(os.Setenv("HTTP_PROXY", httpProxy)).To(Succeed())
	Expect(os.Setenv("NO_PROXY", "127.0.0.1,localhost")).To(Succeed())

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())

	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(cachev1.AddToScheme(scheme)).To(Succeed())
	Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme, FieldValidation: "Strict"})
	Expect(err).NotTo(HaveOccurred())
	var textsCtx context.Context
	textsCtx, stopTexts = context.WithCancel(context.Background())
	watchTexts(textsCtx, cfg)

	Expect(k8sClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}})).To(Succeed())
	// The manager's own requests go through a counter, so tests can prove what it writes.
	operator = startOperatorProcess(cfg, grantOperatorRole(context.Background(), k8sClient), writes.wrap)
	mgrCache = operator.cache
})

// operatorProcess is one run of the operator: a manager set up as main.go sets it up.
type operatorProcess struct {
	cache  cache.Cache
	cancel context.CancelFunc
	done   chan struct{}
}

// startOperatorProcess starts the operator against the API server of c, as user (the operator's
// service account, with its own role: a missing permission fails here as it would in a cluster),
// its requests through wrap (nil: none), watching namespaces (none: all).
func startOperatorProcess(c *rest.Config, user string, wrap func(http.RoundTripper) http.RoundTripper, namespaces ...string) *operatorProcess {
	GinkgoHelper()
	mgrCfg := rest.CopyConfig(c)
	mgrCfg.WrapTransport = wrap
	mgrCfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	resync := 3 * time.Second // makes the Go controller reconcile periodically too
	records := helm.NewRecords()
	cacheOpts := controllers.CacheOptions(namespaces, records)
	cacheOpts.SyncPeriod = &resync
	mgr, err := ctrl.NewManager(mgrCfg, ctrl.Options{
		Scheme:   scheme,
		Metrics:  metricsserver.Options{BindAddress: "0"},
		Cache:    cacheOpts,
		NewCache: controllers.NewCache,
		Client:   controllers.ClientOptions(),
		// A process runs each controller once; the suite runs the operator again (a restart, a
		// second API server) in the same process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	Expect(controllers.Setup(ctx, mgr, controllers.Config{
		WatchesFile:     "watches.yaml",
		WatchNamespaces: namespaces,
		Namespace:       operatorNamespace,
		RelatedImage:    relatedImage,
		Helm: helm.Settings{ReconcilePeriod: reconcilePeriod, Workers: 2, MaxHistory: 10,
			CapabilitiesTTL: capabilitiesTTL},
		RetireDelay:            retireDelay,
		StatsInterval:          statsInterval,
		StatsPort:              statsPort,
		CertificateValidity:    certificateValidity,
		CertificateSecretCheck: time.Second,
		TLSCASpread:            time.Second,
		MayRecoverPending:      recovery.mayRecover,
		Records:                records,
	})).To(Succeed())
	p := &operatorProcess{cache: mgr.GetCache(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(p.done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	return p
}

// stop stops the operator and waits until it has.
func (p *operatorProcess) stop() {
	p.cancel()
	Eventually(p.done, time.Minute).Should(BeClosed())
}

// restartOperator stops the suite's operator and starts it again, as a new process would: its
// caches and memos are new.
func restartOperator() {
	GinkgoHelper()
	restartOperatorWatching()
}

// restartOperatorWatching restarts the suite's operator watching only namespaces (none: all), as
// OLM's OwnNamespace and MultiNamespace install modes run it.
func restartOperatorWatching(namespaces ...string) {
	GinkgoHelper()
	operator.stop()
	operator = startOperatorProcess(cfg, "system:serviceaccount:"+operatorNamespace+":"+operatorServiceAccount, writes.wrap, namespaces...)
	mgrCache = operator.cache
}

var _ = AfterSuite(func() {
	if stopTexts != nil {
		stopTexts()
	}
	if operator != nil {
		operator.stop()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
	// Last: a text that reads wrong fails the suite, and leaves nothing running.
	if stopTexts != nil {
		checkTexts()
	}
})

// grantOperatorRole creates the operator's ClusterRole from config/rbac/role.yaml, binds it to the
// operator's service account, and returns that account's user name.
func grantOperatorRole(ctx context.Context, c client.Client) string {
	raw, err := os.ReadFile(filepath.Join("config", "rbac", "role.yaml"))
	Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	Expect(yaml.Unmarshal(raw, role)).To(Succeed())
	Expect(c.Create(ctx, role)).To(Succeed())
	const ns, sa = operatorNamespace, operatorServiceAccount
	Expect(c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	})).To(Succeed())
	return "system:serviceaccount:" + ns + ":" + sa
}

// writeCounter records every request the manager sends to the API server; writes are the
// mutating ones.
type writeCounter struct {
	mu       sync.Mutex
	log      []string  // "METHOD path"
	warnings []warning // the API server's Warning headers in answers
	// observe, if set, sees each request before it is sent; what it returns, after its answer.
	observe func(method, path string) (answered func())
}

// observing has observe see the manager's requests until the spec ends.
func (w *writeCounter) observing(observe func(method, path string) (answered func())) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.observe = observe
	DeferCleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.observe = nil
	})
}

// warning is a Warning header the API server sent in answer to request at of the log.
type warning struct {
	at   int
	text string
}

func (w *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		w.mu.Lock()
		at := len(w.log)
		w.log = append(w.log, req.Method+" "+req.URL.Path)
		observe := w.observe
		w.mu.Unlock()
		if observe != nil {
			if answered := observe(req.Method, req.URL.Path); answered != nil {
				defer answered()
			}
		}
		resp, err := rt.RoundTrip(req)
		if resp != nil {
			for _, text := range resp.Header.Values("Warning") {
				w.mu.Lock()
				w.warnings = append(w.warnings, warning{at: at, text: req.Method + " " + req.URL.Path + ": " + text})
				w.mu.Unlock()
			}
		}
		return resp, err
	})
}

// warningsSince returns the API server's warnings to requests recorded after mark.
func (w *writeCounter) warningsSince(mark int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, x := range w.warnings {
		if x.at >= mark {
			out = append(out, x.text)
		}
	}
	return out
}

// since returns the writes recorded after mark.
func (w *writeCounter) since(mark int) []string {
	var out []string
	for _, r := range w.requestsSince(mark) {
		if !strings.HasPrefix(r, http.MethodGet+" ") && !strings.HasPrefix(r, http.MethodHead+" ") {
			out = append(out, r)
		}
	}
	return out
}

// requestsSince returns every request recorded after mark.
func (w *writeCounter) requestsSince(mark int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.log[mark:]...)
}

func (w *writeCounter) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.log)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
