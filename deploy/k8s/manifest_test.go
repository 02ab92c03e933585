package k8s

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// layouts are every kustomization a user applies.
var layouts = []string{"base", "overlays/kind", "overlays/production"}

// TestManifestsWiring renders every layout (each document decoded
// strictly into its API type) and checks what kubectl apply would accept
// but the cluster would not run: selectors that match no pods, ports and
// probes that name no container port, ConfigMaps that do not exist,
// workloads without requests, limits or anti-affinity, and configuration
// files whose addresses disagree with the pods' ports and DNS names.
func TestManifestsWiring(t *testing.T) {
	for _, dir := range layouts {
		t.Run(dir, func(t *testing.T) {
			objs, err := Render(dir)
			require.NoError(t, err)
			var workloads []Object
			for _, o := range objs {
				if PodTemplate(o) != nil {
					workloads = append(workloads, o)
				}
			}
			require.Len(t, workloads, 3, "PD, store and SQL workloads")
			for _, o := range objs {
				switch v := o.Obj.(type) {
				case *corev1.Service:
					checkService(t, v, workloads)
				case *policyv1.PodDisruptionBudget:
					require.Len(t, selected(t, v.Spec.Selector, workloads), 1, "PDB %s selects one workload", v.Name)
				case *appsv1.StatefulSet:
					checkStatefulSet(t, objs, v)
				case *ServiceMonitor:
					checkServiceMonitor(t, objs, v)
				}
			}
			for _, w := range workloads {
				checkPods(t, objs, w)
			}
			checkConfig(t, objs)
		})
	}
}

// selected returns the workloads whose pods sel matches.
func selected(t *testing.T, sel *metav1.LabelSelector, workloads []Object) []Object {
	t.Helper()
	require.NotNil(t, sel)
	s, err := metav1.LabelSelectorAsSelector(sel)
	require.NoError(t, err)
	require.False(t, s.Empty(), "an empty selector selects everything")
	var out []Object
	for _, w := range workloads {
		if s.Matches(labels.Set(PodTemplate(w).Labels)) {
			out = append(out, w)
		}
	}
	return out
}

// portOf returns the container port p names (by name or number) in the
// workload's pods.
func portOf(w Object, p intstr.IntOrString) (int32, bool) {
	for _, c := range Containers(w) {
		for _, cp := range c.Ports {
			if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

func checkService(t *testing.T, s *corev1.Service, workloads []Object) {
	ws := selected(t, &metav1.LabelSelector{MatchLabels: s.Spec.Selector}, workloads)
	require.Len(t, ws, 1, "Service %s selects one workload", s.Name)
	for _, p := range s.Spec.Ports {
		_, ok := portOf(ws[0], p.TargetPort)
		require.True(t, ok, "Service %s port %s: no container port %s in %s", s.Name, p.Name, p.TargetPort.String(), ws[0].Name)
	}
	// A selector also needs the workload's own selector to agree.
	sel := workloadSelector(ws[0])
	for k, v := range sel.MatchLabels {
		require.Equal(t, v, s.Spec.Selector[k], "Service %s and %s select by the same labels", s.Name, ws[0].Name)
	}
}

func workloadSelector(w Object) *metav1.LabelSelector {
	switch v := w.Obj.(type) {
	case *appsv1.StatefulSet:
		return v.Spec.Selector
	case *appsv1.Deployment:
		return v.Spec.Selector
	}
	return nil
}

func checkStatefulSet(t *testing.T, objs []Object, s *appsv1.StatefulSet) {
	o, ok := Find(objs, "Service", s.Spec.ServiceName)
	require.True(t, ok, "StatefulSet %s: serviceName %s is no Service", s.Name, s.Spec.ServiceName)
	svc := o.Obj.(*corev1.Service)
	require.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP, "%s is headless (stable pod DNS names)", svc.Name)
	require.True(t, svc.Spec.PublishNotReadyAddresses, "%s resolves pods before they are ready (members find each other to start)", svc.Name)
	require.Equal(t, appsv1.ParallelPodManagement, s.Spec.PodManagementPolicy, "%s starts its pods together", s.Name)
	require.NotEmpty(t, s.Spec.VolumeClaimTemplates, "%s keeps its data on PersistentVolumes", s.Name)
}

func checkServiceMonitor(t *testing.T, objs []Object, m *ServiceMonitor) {
	s, err := metav1.LabelSelectorAsSelector(&m.Spec.Selector)
	require.NoError(t, err)
	n := 0
	for _, o := range objs {
		svc, ok := o.Obj.(*corev1.Service)
		if !ok || !s.Matches(labels.Set(svc.Labels)) {
			continue
		}
		n++
		for _, e := range m.Spec.Endpoints {
			require.True(t, slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == e.Port }),
				"ServiceMonitor %s: Service %s has no port %s", m.Name, svc.Name, e.Port)
		}
	}
	require.Equal(t, 3, n, "one Service per component is scraped")
}

func checkPods(t *testing.T, objs []Object, w Object) {
	spec := PodTemplate(w).Spec
	require.NotNil(t, spec.Affinity, "%s spreads its pods", w.Name)
	require.NotNil(t, spec.Affinity.PodAntiAffinity, "%s spreads its pods", w.Name)
	anti := spec.Affinity.PodAntiAffinity
	terms := anti.RequiredDuringSchedulingIgnoredDuringExecution
	for _, p := range anti.PreferredDuringSchedulingIgnoredDuringExecution {
		terms = append(terms, p.PodAffinityTerm)
	}
	require.NotEmpty(t, terms, "%s spreads its pods", w.Name)
	for _, term := range terms {
		require.Equal(t, "kubernetes.io/hostname", term.TopologyKey)
		require.Equal(t, []Object{w}, selected(t, term.LabelSelector, []Object{w}), "%s's anti-affinity names its own pods", w.Name)
	}
	require.NotNil(t, spec.SecurityContext)
	require.NotNil(t, spec.SecurityContext.RunAsNonRoot)
	require.True(t, *spec.SecurityContext.RunAsNonRoot)
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
		if v.ConfigMap != nil {
			_, ok := Find(objs, "ConfigMap", v.ConfigMap.Name)
			require.True(t, ok, "%s: ConfigMap %s does not exist", w.Name, v.ConfigMap.Name)
		}
		if v.Secret != nil {
			_, ok := Find(objs, "Secret", v.Secret.SecretName)
			require.True(t, ok, "%s: Secret %s does not exist", w.Name, v.Secret.SecretName)
		}
	}
	if s, ok := w.Obj.(*appsv1.StatefulSet); ok {
		for _, c := range s.Spec.VolumeClaimTemplates {
			volumes[c.Name] = true
		}
	}
	for _, c := range Containers(w) {
		for _, m := range c.VolumeMounts {
			require.True(t, volumes[m.Name], "%s: mount %s has no volume", w.Name, m.Name)
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
			require.False(t, req.IsZero(), "%s: no %s request", w.Name, r)
			require.False(t, lim.IsZero(), "%s: no %s limit", w.Name, r)
			require.LessOrEqual(t, req.Cmp(lim), 0, "%s: %s request above its limit", w.Name, r)
		}
		require.NotNil(t, c.ReadinessProbe, "%s has a readiness probe", w.Name)
		require.NotNil(t, c.LivenessProbe, "%s has a liveness probe", w.Name)
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
			checkProbe(t, w, p)
		}
	}
}

// checkProbe: an HTTP probe names a container port; an exec probe runs the
// image's healthcheck on URLs whose ports are container ports.
func checkProbe(t *testing.T, w Object, p *corev1.Probe) {
	switch {
	case p.HTTPGet != nil:
		_, ok := portOf(w, p.HTTPGet.Port)
		require.True(t, ok, "%s: probe port %s", w.Name, p.HTTPGet.Port.String())
		require.Equal(t, "/status", p.HTTPGet.Path)
	case p.Exec != nil:
		cmd := p.Exec.Command
		require.Equal(t, "healthcheck", cmd[0], "%s: the image's probe binary", w.Name)
		require.Greater(t, len(cmd), 1)
		for _, arg := range cmd[1:] {
			u, err := url.Parse(arg)
			require.NoError(t, err)
			port, err := strconv.Atoi(u.Port())
			require.NoError(t, err, "%s: probe %s names a port", w.Name, arg)
			_, ok := portOf(w, intstr.FromInt32(int32(port)))
			require.True(t, ok, "%s: probe %s: no container port %d", w.Name, arg, port)
		}
	default:
		t.Fatalf("%s: a probe of an unexpected kind", w.Name)
	}
}

// checkConfig: the addresses in the configuration files are the pods'
// ports, every PD endpoint is a PD pod's DNS name and gRPC port, and the
// etcd initial cluster is exactly the PD StatefulSet's pods.
func checkConfig(t *testing.T, objs []Object) {
	pdObj, ok := Find(objs, "StatefulSet", "strata-pd")
	require.True(t, ok)
	pd := pdObj.Obj.(*appsv1.StatefulSet)
	port := func(w Object, name string) int32 {
		p, ok := portOf(w, intstr.FromString(name))
		require.True(t, ok, "%s has a %s port", w.Name, name)
		return p
	}
	pdHost := func(i int) string { return fmt.Sprintf("%s-%d.%s", pd.Name, i, pd.Spec.ServiceName) }
	var pdEndpoints []string
	for i := range int(*pd.Spec.Replicas) {
		pdEndpoints = append(pdEndpoints, fmt.Sprintf("%s:%d", pdHost(i), port(pdObj, "grpc")))
	}
	for _, c := range []struct{ kind, name, file string }{
		{"StatefulSet", "strata-pd", "pd.toml"},
		{"StatefulSet", "strata-store", "store.toml"},
		{"Deployment", "strata-sql", "sql.toml"},
	} {
		w, ok := Find(objs, c.kind, c.name)
		require.True(t, ok)
		args, files, err := CommandLine(objs, c.kind, c.name, c.name+"-0")
		require.NoError(t, err)
		require.Contains(t, args, "--config=/etc/strata/"+c.file)
		var cfg map[string]any
		_, err = toml.Decode(files["/etc/strata/"+c.file], &cfg)
		require.NoError(t, err, c.file)
		grpc := "grpc"
		if c.name == "strata-sql" {
			grpc = "mysql"
		}
		require.Equal(t, fmt.Sprintf("0.0.0.0:%d", port(w, grpc)), cfg["addr"], "%s addr", c.file)
		require.Equal(t, fmt.Sprintf("0.0.0.0:%d", port(w, "status")), cfg["status-addr"], "%s status-addr", c.file)
		if c.name == "strata-pd" {
			var members []string
			for i := range int(*pd.Spec.Replicas) {
				members = append(members, fmt.Sprintf("%s-%d=http://%s:%d", pd.Name, i, pdHost(i), port(w, "peer")))
			}
			require.Equal(t, strings.Join(members, ","), cfg["initial-cluster"])
			continue
		}
		require.Equal(t, strings.Join(pdEndpoints, ","), cfg["pd"], "%s names every PD member", c.file)
	}
}

// TestOverlaysPatch: what each overlay changes reaches the rendered
// objects (a patch that matched nothing, or was merged away, would leave
// the base's values).
func TestOverlaysPatch(t *testing.T) {
	kind, err := Render("overlays/kind")
	require.NoError(t, err)
	st, ok := Find(kind, "StatefulSet", "strata-store")
	require.True(t, ok)
	sts := st.Obj.(*appsv1.StatefulSet)
	require.Equal(t, "5Gi", sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String())
	require.Equal(t, "200m", Containers(st)[0].Resources.Requests.Cpu().String())
	require.Equal(t, "strata:latest", Containers(st)[0].Image)
	require.Len(t, Containers(st)[0].Ports, 2, "a patch of resources keeps the ports")

	prod, err := Render("overlays/production")
	require.NoError(t, err)
	for _, name := range []string{"strata-pd", "strata-store"} {
		o, ok := Find(prod, "StatefulSet", name)
		require.True(t, ok)
		require.Len(t, PodTemplate(o).Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, 1, name)
		require.Equal(t, "registry.example.com/strata:latest", Containers(o)[0].Image)
	}
	_, ok = Find(prod, "ServiceMonitor", "strata")
	require.True(t, ok, "production scrapes with the Prometheus Operator")
	_, ok = Find(kind, "ServiceMonitor", "strata")
	require.False(t, ok, "the kind overlay needs no operator CRDs")
}

// TestStrictDecoding: a misspelt field is an error, not dropped.
func TestStrictDecoding(t *testing.T) {
	dir := t.TempDir()
	bad := dir + "/bad.yaml"
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  selectr: {a: b}\n"), 0o600))
	_, err := readDocs(bad)
	require.ErrorContains(t, err, "selectr")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: v9\nkind: Service\nmetadata: {name: x}\n"), 0o600))
	_, err = readDocs(bad)
	require.ErrorContains(t, err, "unexpected kind")
}
