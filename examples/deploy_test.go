package examples

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The Kubernetes Job is checked against the Kubernetes API's own types
// (k8s.io/api, the definitions the API server is generated from), decoded
// strictly as the API server's strict field validation does: a field that
// is misspelt, misplaced or of the wrong type is an error. sigs.k8s.io/yaml
// is the Kubernetes project's YAML-to-JSON reader that kubectl uses.
func TestKubernetesJob(t *testing.T) {
	data, err := os.ReadFile("kubernetes-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(data, &job); err != nil {
		t.Fatalf("kubernetes-job.yaml is not a valid batch/v1 Job: %v", err)
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Name == "" {
		t.Errorf("apiVersion %q kind %q name %q", job.APIVersion, job.Kind, job.Name)
	}
	pod := job.Spec.Template.Spec
	// A Job's pods must not restart in place (the API server refuses
	// Always).
	if pod.RestartPolicy != corev1.RestartPolicyNever && pod.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Errorf("restartPolicy %q: a Job needs Never or OnFailure", pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	want := []string{"agentbox", "run", "--policy", "/etc/agentbox/ci.toml", "--", "claude", "-p", "fix the failing test"}
	if diff := cmp.Diff(want, c.Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	// The pod as a restricted one: its own uid, no capabilities, no
	// privilege escalation (no_new_privs), the runtime's seccomp profile.
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
		!reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("the container must drop every capability and escalation: %+v", sc)
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser == 0 || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context: %+v", psc)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	for _, path := range []string{"/etc/agentbox", "/work", "/home/agent", "/tmp"} {
		if mounts[path] == "" {
			t.Errorf("nothing is mounted at %s", path)
		}
	}
	if c.WorkingDir != "/work" {
		t.Errorf("workingDir %q", c.WorkingDir)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if env["ANTHROPIC_API_KEY"].ValueFrom == nil || env["ANTHROPIC_API_KEY"].ValueFrom.SecretKeyRef == nil {
		t.Error("the API key must come from a secret")
	}
	if env["HOME"].Value != "/home/agent" {
		t.Error("HOME must be the writable home volume")
	}

	// The check fails where the API server would: a misspelt field, a
	// field in the wrong place, a wrong type.
	for _, bad := range []struct{ from, to string }{
		{"runAsNonRoot: true", "runAsNonRooot: true"},
		{"      restartPolicy: Never", "      restartPolicy: Never\n      procMount: Unmasked"},
		{"backoffLimit: 0", "backoffLimit: none"},
	} {
		broken := strings.Replace(string(data), bad.from, bad.to, 1)
		if broken == string(data) {
			t.Fatalf("%q is not in the example", bad.from)
		}
		var j batchv1.Job
		if err := yaml.UnmarshalStrict([]byte(broken), &j); err == nil {
			t.Errorf("%q passed the check", bad.to)
		}
	}

	// The settings the comment gives for bwrap are real fields, in the
	// places it names.
	var bwrapJob batchv1.Job
	no := false
	if err := yaml.UnmarshalStrict(data, &bwrapJob); err != nil {
		t.Fatal(err)
	}
	bwrapJob.Spec.Template.Spec.HostUsers = &no
	unmasked := corev1.UnmaskedProcMount
	bsc := bwrapJob.Spec.Template.Spec.Containers[0].SecurityContext
	bsc.ProcMount = &unmasked
	bsc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	bsc.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	out, err := yaml.Marshal(&bwrapJob)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"hostUsers: false", "procMount: Unmasked", "seccompProfile:", "appArmorProfile:"} {
		if !strings.Contains(string(out), field) {
			t.Errorf("the bwrap settings do not render %q", field)
		}
		if !strings.Contains(string(data), strings.SplitN(field, ":", 2)[0]) {
			t.Errorf("the example does not mention %s", field)
		}
	}
}

var (
	pinnedAction = regexp.MustCompile(`^[\w.-]+/[\w.-]+@[0-9a-f]{40}$`)
	exactVersion = regexp.MustCompile(`^v?\d+\.\d+\.\d+$`)
)

// The GitHub Actions job pins everything it installs (actions by commit,
// tools by exact version, agentbox's source by commit) and builds agentbox
// from that checkout of its source, never from the repository under work,
// and never by a version that has not been published. The build line of
// the job runs here, on a copy of this source, and makes an agentbox that
// runs. Before, the job installed a v0.1.0 that does not exist.
func TestGitHubActions(t *testing.T) {
	data, err := os.ReadFile("github-actions.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			RunsOn string            `json:"runs-on"`
			Env    map[string]string `json:"env"`
			Steps  []struct {
				Name string            `json:"name"`
				Uses string            `json:"uses"`
				With map[string]any    `json:"with"`
				Env  map[string]string `json:"env"`
				Run  string            `json:"run"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	job, ok := wf.Jobs["agent"]
	if !ok || len(job.Steps) == 0 {
		t.Fatal("no agent job")
	}
	if !regexp.MustCompile(`^ubuntu-\d+\.\d+$`).MatchString(job.RunsOn) {
		t.Errorf("runs-on %q: want a fixed image", job.RunsOn)
	}
	for k, v := range job.Env {
		if strings.HasSuffix(k, "_VERSION") && !exactVersion.MatchString(v) {
			t.Errorf("%s=%s is not an exact version", k, v)
		}
	}
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(job.Env["AGENTBOX_COMMIT"]) || job.Env["AGENTBOX_REPOSITORY"] == "" {
		t.Errorf("agentbox's source is not pinned by commit: %v", job.Env)
	}
	var script strings.Builder
	source := false
	for _, s := range job.Steps {
		if s.Uses != "" && !pinnedAction.MatchString(s.Uses) {
			t.Errorf("action %s is not pinned to a commit", s.Uses)
		}
		for k, v := range s.With {
			if strings.HasSuffix(k, "-version") && !exactVersion.MatchString(v.(string)) {
				t.Errorf("%s %s=%v is not an exact version", s.Uses, k, v)
			}
		}
		if s.With["repository"] == "${{ env.AGENTBOX_REPOSITORY }}" && s.With["ref"] == "${{ env.AGENTBOX_COMMIT }}" && s.With["path"] == ".agentbox-src" {
			source = true
		}
		script.WriteString(s.Run + "\n")
	}
	if !source {
		t.Error("no step checks out agentbox's source at AGENTBOX_COMMIT into .agentbox-src")
	}
	run := script.String()
	if regexp.MustCompile(`go (build|install)`).MatchString(run) {
		t.Error("the job runs go build or go install itself: agentbox is built by its own Makefile from .agentbox-src")
	}
	build := `make -C .agentbox-src install PREFIX="$RUNNER_TEMP/agentbox"`
	for _, want := range []string{
		build,
		`echo "$RUNNER_TEMP/agentbox/bin" >> "$GITHUB_PATH"`,
		`npm install -g "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"`,
		`agentbox run --policy .github/agentbox.toml -- claude -p`,
	} {
		if !strings.Contains(run, want) {
			t.Errorf("the job does not run %q", want)
		}
	}
	for _, line := range strings.Split(run, "\n") {
		if strings.Contains(line, "install") && (strings.Contains(line, "@latest") || regexp.MustCompile(`npm install -g \S+$`).MatchString(strings.TrimSpace(line)) && !strings.Contains(line, "@$")) {
			t.Errorf("unpinned install: %s", line)
		}
	}

	// The build line, run on a copy of this source as the job runs it.
	if testing.Short() {
		t.Skip("-short: the job's build of agentbox is not run")
	}
	skip := func(why string) {
		t.Helper()
		if os.Getenv("AGENTBOX_MUST_WORK") == "1" {
			t.Fatalf("%s (AGENTBOX_MUST_WORK=1 forbids skipping)", why)
		}
		t.Skip("skipped: " + why)
	}
	if _, err := exec.LookPath("make"); err != nil {
		skip("make is not installed")
	}
	work := t.TempDir()
	src := filepath.Join(work, ".agentbox-src")
	// The files of this checkout; safe.directory, because the tests may
	// run as a user who does not own it (the unprivileged pass).
	var stderr strings.Builder
	cp := exec.Command("git", "-c", "safe.directory=*", "-C", "..", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cp.Stderr = &stderr
	files, err := cp.Output()
	if err != nil {
		skip(fmt.Sprintf("not a git checkout, nothing to build from: %v: %s", err, strings.TrimSpace(stderr.String())))
	}
	for _, f := range strings.Split(strings.TrimSuffix(string(files), "\x00"), "\x00") {
		fi, err := os.Lstat(filepath.Join("..", f))
		if err != nil || !fi.Mode().IsRegular() {
			continue // listed, but gone from the work tree, or not a file
		}
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, f), b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-c", build)
	c.Dir = work
	c.Env = append(os.Environ(), "RUNNER_TEMP="+filepath.Join(work, "runner"))
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, out)
	}
	out, err := exec.Command(filepath.Join(work, "runner", "agentbox", "bin", "agentbox"), "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "agentbox ") {
		t.Fatalf("the agentbox the job builds: %v\n%s", err, out)
	}
}
