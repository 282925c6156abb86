// Package k8s holds the Kubernetes manifests (kustomize) and the test that
// keeps them honest: every manifest decodes strictly into the k8s.io/api
// types, every kustomization lists exactly its files, and every environment
// variable given to rushline-server or rushline-sim is one the command reads.
package k8s

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// kustomization is the part of a kustomization.yaml these manifests use.
type kustomization struct {
	APIVersion         string   `json:"apiVersion"`
	Kind               string   `json:"kind"`
	Namespace          string   `json:"namespace,omitempty"`
	Resources          []string `json:"resources"`
	ConfigMapGenerator []struct {
		Name string   `json:"name"`
		Envs []string `json:"envs"`
	} `json:"configMapGenerator,omitempty"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images,omitempty"`
}

// newObject is the typed object for a manifest's apiVersion and kind.
func newObject(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case "v1 Namespace":
		return &corev1.Namespace{}
	case "v1 Service":
		return &corev1.Service{}
	case "v1 Secret":
		return &corev1.Secret{}
	case "v1 PersistentVolumeClaim":
		return &corev1.PersistentVolumeClaim{}
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	case "batch/v1 Job":
		return &batchv1.Job{}
	}
	return nil
}

// manifests are every object of every manifest, decoded strictly.
type manifests struct {
	objs    map[string]any    // "Kind/name" → object
	runEnv  map[string]string // the load run's configMapGenerator env file
	secrets map[string]map[string]bool
}

func mustLoad(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{objs: map[string]any{}, runEnv: map[string]string{}, secrets: map[string]map[string]bool{}}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if filepath.Base(path) == "kustomization.yaml" {
			return m.kustomization(t, path, data)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				return fmt.Errorf("%s #%d: %w", path, i+1, err)
			}
			obj := newObject(tm.APIVersion, tm.Kind)
			if obj == nil {
				return fmt.Errorf("%s #%d: unexpected %s %s", path, i+1, tm.APIVersion, tm.Kind)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				return fmt.Errorf("%s #%d: %w", path, i+1, err)
			}
			name := obj.(metav1.Object).GetName()
			if name == "" {
				return fmt.Errorf("%s #%d: %s without a name", path, i+1, tm.Kind)
			}
			m.objs[tm.Kind+"/"+name] = obj
			if s, ok := obj.(*corev1.Secret); ok {
				m.secrets[name] = map[string]bool{}
				for k := range s.StringData {
					m.secrets[name][k] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// kustomization checks one kustomization.yaml: strict, and listing exactly
// the manifests and folders beside it.
func (m *manifests) kustomization(t *testing.T, path string, data []byte) error {
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		return fmt.Errorf("%s: %s %s", path, k.APIVersion, k.Kind)
	}
	dir := filepath.Dir(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	// Every manifest beside it is listed; folders may be applied on their
	// own (load), but a listed one must be a kustomization.
	var want, got []string
	for _, e := range ents {
		if !e.IsDir() && filepath.Ext(e.Name()) == ".yaml" && e.Name() != "kustomization.yaml" {
			want = append(want, e.Name())
		}
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(filepath.Join(dir, r, "kustomization.yaml")); err == nil {
			continue
		}
		got = append(got, r)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s lists the files %v; the folder holds %v", path, got, want)
	}
	for _, g := range k.ConfigMapGenerator {
		for _, env := range g.Envs {
			f, err := os.Open(filepath.Join(dir, env))
			if err != nil {
				return err
			}
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
					k, v, _ := strings.Cut(line, "=")
					m.runEnv[k] = v
				}
			}
			f.Close()
		}
	}
	return nil
}

// envRead are the environment variables a command's sources read.
func envRead(t *testing.T, globs ...string) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`(?i:env|envInt|envDuration|LookupEnv|Getenv)\("([A-Z][A-Z0-9_]*)"`)
	out := map[string]bool{}
	for _, g := range globs {
		files, err := filepath.Glob(g)
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v", g, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range re.FindAllSubmatch(src, -1) {
				out[string(m[1])] = true
			}
		}
	}
	return out
}

// flagsOf are the long flags a command's sources define.
func flagsOf(t *testing.T, file string) map[string]bool {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`\.(?:String|Int|Bool|Duration|Text)Var\([^,]+, "([a-z][a-z-]*)"`).FindAllSubmatch(src, -1) {
		out[string(m[1])] = true
	}
	return out
}

func podSpecs(m *manifests) map[string]*corev1.PodSpec {
	out := map[string]*corev1.PodSpec{}
	for name, o := range m.objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			out[name] = &o.Spec.Template.Spec
		case *appsv1.StatefulSet:
			out[name] = &o.Spec.Template.Spec
		case *batchv1.Job:
			out[name] = &o.Spec.Template.Spec
		}
	}
	return out
}

// Every env variable given to a rushline container is one its command reads
// (or one its arguments name), every secret it names exists with that key,
// and every flag its arguments give exists.
func TestEnvMatchesFlags(t *testing.T) {
	m := mustLoad(t)
	reads := map[string]map[string]bool{
		"rushline-server": envRead(t, "../../server/*.go"),
		"rushline-sim":    envRead(t, "../../simulator/*.go", "../../simulator/results/*.go"),
	}
	flags := map[string]map[string]bool{"rushline-sim": flagsOf(t, "../../simulator/main.go")}
	seen := map[string]bool{}
	for name, spec := range podSpecs(m) {
		for _, c := range spec.Containers {
			if c.Image != "rushline" {
				continue
			}
			cmd := "rushline-server" // the image's entry point
			if len(c.Command) > 0 {
				cmd = c.Command[0]
			}
			seen[cmd] = true
			known := reads[cmd]
			if known == nil {
				t.Fatalf("%s: unknown command %q", name, cmd)
			}
			inArgs := map[string]bool{}
			for _, a := range c.Args {
				for _, ref := range regexp.MustCompile(`\$\(([A-Z0-9_]+)\)`).FindAllStringSubmatch(a, -1) {
					inArgs[ref[1]] = true
				}
				if f, ok := strings.CutPrefix(a, "--"); ok && !flags[cmd][f] {
					t.Errorf("%s: %s has no flag --%s", name, cmd, f)
				}
			}
			var names []string
			for _, e := range c.Env {
				names = append(names, e.Name)
				if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && !m.secrets[r.SecretKeyRef.Name][r.SecretKeyRef.Key] {
					t.Errorf("%s: %s from secret %s key %s, which no manifest defines", name, e.Name, r.SecretKeyRef.Name, r.SecretKeyRef.Key)
				}
			}
			for _, ef := range c.EnvFrom {
				if ef.ConfigMapRef == nil || ef.ConfigMapRef.Name != "rushline-run" {
					t.Errorf("%s: envFrom %+v, want the rushline-run ConfigMap", name, ef)
					continue
				}
				for k := range m.runEnv {
					names = append(names, k)
				}
			}
			for _, n := range names {
				if !known[n] && !inArgs[n] && !reads["rushline-sim"][n] {
					t.Errorf("%s: %s reads no $%s", name, cmd, n)
				}
			}
			for _, n := range names {
				// A run.env variable meant for one command must be read by one of them.
				if !known[n] && !inArgs[n] && reads["rushline-sim"][n] && cmd != "rushline-sim" {
					t.Errorf("%s: $%s is the simulator's, not %s's", name, n, cmd)
				}
			}
		}
	}
	if !seen["rushline-server"] || !seen["rushline-sim"] {
		t.Errorf("commands seen %v, want the server and the simulator", seen)
	}
}

// The server answers its probes, and runs behind a PDB and an HPA; the
// simulator Job is Indexed with as many shards as run.env says.
func TestServerAndJobs(t *testing.T) {
	m := mustLoad(t)
	dep, ok := m.objs["Deployment/rushline-server"].(*appsv1.Deployment)
	if !ok {
		t.Fatal("no rushline-server Deployment")
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes: readiness %+v, liveness %+v", c.ReadinessProbe, c.LivenessProbe)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v", c.Resources)
	}
	routes, err := os.ReadFile("../../server/httpapi/server.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/readyz", "/healthz"} {
		if !bytes.Contains(routes, []byte(`r.GET("`+p+`"`)) {
			t.Errorf("the server serves no %s", p)
		}
	}
	sel := dep.Spec.Selector.MatchLabels
	if pdb, ok := m.objs["PodDisruptionBudget/rushline-server"].(*policyv1.PodDisruptionBudget); !ok || !equalLabels(pdb.Spec.Selector.MatchLabels, sel) {
		t.Error("no PodDisruptionBudget selecting the server")
	}
	if svc, ok := m.objs["Service/rushline-server"].(*corev1.Service); !ok || !equalLabels(svc.Spec.Selector, sel) {
		t.Error("no Service selecting the server")
	}
	if hpa, ok := m.objs["HorizontalPodAutoscaler/rushline-server"].(*autoscalingv2.HorizontalPodAutoscaler); !ok || hpa.Spec.ScaleTargetRef.Name != dep.Name {
		t.Error("no HPA scaling the server")
	}

	job, ok := m.objs["Job/rushline-sim"].(*batchv1.Job)
	if !ok {
		t.Fatal("no rushline-sim Job")
	}
	shards, err := strconv.Atoi(m.runEnv["RUSHLINE_SHARDS"])
	if err != nil || job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion ||
		job.Spec.Completions == nil || int(*job.Spec.Completions) != shards || job.Spec.Parallelism == nil || int(*job.Spec.Parallelism) != shards {
		t.Errorf("sim Job: mode %v, completions %v, parallelism %v; run.env RUSHLINE_SHARDS %q", job.Spec.CompletionMode,
			job.Spec.Completions, job.Spec.Parallelism, m.runEnv["RUSHLINE_SHARDS"])
	}
	if _, ok := m.objs["Job/rushline-merge"]; !ok {
		t.Error("no merge Job")
	}
	for _, k := range []string{"RUSHLINE_RUN_ID", "RUSHLINE_START_AT", "RUSHLINE_RESULTS"} {
		if m.runEnv[k] == "" {
			t.Errorf("run.env sets no %s", k)
		}
	}
}

func equalLabels(a, b map[string]string) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// kubectl, where installed, builds every kustomization.
func TestKustomizeBuilds(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Log("kubectl not on PATH: the strict decoding above is the check")
		return
	}
	for _, dir := range []string{".", "server", "in-cluster-deps", "load"} {
		if out, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput(); err != nil {
			t.Errorf("kubectl kustomize %s: %v\n%s", dir, err, out)
		}
	}
}
