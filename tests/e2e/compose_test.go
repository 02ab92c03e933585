//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/promtext"
)

// projectPrefix starts the compose project name of every e2e run; only
// projects with this prefix are ever removed by the tests.
const projectPrefix = "strata-e2e-"

// statusPorts are the in-container status ports by service kind.
var statusPorts = map[string]int{"pd": 2382, "store": 20180, "sql": 10080}

// project is one compose project: deploy/docker-compose.yml started under a
// unique name, with its own image tag, network and volumes.
type project struct {
	t     *testing.T
	root  string // repository root
	name  string // compose project name
	image string // image tag built for this run
	// images are every image this run built (removed by teardown).
	images  []string
	compose []string // "docker compose" or "docker-compose"
	network string   // the project's bridge network (set by up)
	// files are compose files added after deploy/docker-compose.yml
	// (overrides); extraEnv is added to the compose command's environment.
	files    []string
	extraEnv []string
}

// newProject picks a unique name and registers the teardown (compose down
// -v, image removal, logs when the test failed) before anything is created.
func newProject(t *testing.T) *project {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	var b [4]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	p := &project{t: t, root: root, name: projectPrefix + suffix, image: "strata-e2e:" + suffix, compose: composeCommand(t)}
	t.Cleanup(p.teardown)
	return p
}

// composeCommand returns STRATA_COMPOSE, else `docker compose` when the
// plugin exists, else docker-compose.
func composeCommand(t *testing.T) []string {
	if c := os.Getenv("STRATA_COMPOSE"); c != "" {
		return strings.Fields(c)
	}
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	if exec.Command("docker-compose", "version").Run() == nil {
		return []string{"docker-compose"}
	}
	t.Fatal("neither `docker compose` nor `docker-compose` works")
	return nil
}

// run executes a command and returns its trimmed stdout; the error carries
// stderr.
func run(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func (p *project) env() []string {
	return append(append(os.Environ(), p.extraEnv...),
		"STRATA_IMAGE="+p.image,
		// Random host ports on loopback: never 4000/4001, never clashing.
		"STRATA_SQL1_PUBLISH=127.0.0.1:", "STRATA_SQL2_PUBLISH=127.0.0.1:")
}

// dc runs a compose subcommand on this project.
func (p *project) dc(ctx context.Context, args ...string) (string, error) {
	full := append(append([]string{}, p.compose[1:]...), "-f", filepath.Join(p.root, "deploy", "docker-compose.yml"))
	for _, f := range p.files {
		full = append(full, "-f", f)
	}
	full = append(full, "-p", p.name)
	return run(ctx, p.env(), p.compose[0], append(full, args...)...)
}

func (p *project) mustDC(args ...string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := p.dc(ctx, args...)
	require.NoError(p.t, err)
	return out
}

func docker(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return run(ctx, os.Environ(), "docker", args...)
}

func (p *project) mustDocker(args ...string) string {
	p.t.Helper()
	out, err := docker(args...)
	require.NoError(p.t, err)
	return out
}

// buildImage runs `make images` with this run's tag.
func (p *project) buildImage() {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-C", p.root, "images", "IMAGE="+p.image)
	out, err := cmd.CombinedOutput()
	require.NoError(p.t, err, "make images:\n%s", out)
	p.images = append(p.images, p.image)
}

// buildImageAt builds the image of an earlier commit (from a temporary
// detached worktree of this repository; the Go build cache makes the
// packages that did not change since free) and returns its tag.
func (p *project) buildImageAt(commit string) string {
	p.t.Helper()
	dir := p.t.TempDir()
	tree := filepath.Join(dir, "tree")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if out, err := run(ctx, nil, "git", "-C", p.root, "worktree", "add", "--detach", tree, commit); err != nil {
		p.t.Fatalf("git worktree add %s: %v %s (STRATA_UPGRADE_FROM names another commit)", commit, err, out)
	}
	defer func() {
		_, _ = run(context.Background(), nil, "git", "-C", p.root, "worktree", "remove", "--force", tree)
	}()
	tag := p.image + "-" + commit
	cmd := exec.CommandContext(ctx, "make", "-C", tree, "images", "IMAGE="+tag)
	out, err := cmd.CombinedOutput()
	require.NoError(p.t, err, "make images at %s:\n%s", commit, out)
	p.images = append(p.images, tag)
	return tag
}

// up starts the project and returns how long it took until every container
// was healthy.
func (p *project) up(services []string) time.Duration {
	p.t.Helper()
	start := time.Now()
	p.mustDC("up", "-d")
	p.waitHealthy(services, 2*time.Minute)
	took := time.Since(start)
	nets := p.mustDocker("inspect", "-f", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}", p.id("store1"))
	p.network = strings.TrimSpace(nets)
	require.NotContains(p.t, p.network, " ", "store1 should be on one network")
	return took
}

// id is the container id of a service.
func (p *project) id(service string) string {
	p.t.Helper()
	id := p.mustDC("ps", "-q", service)
	require.NotEmpty(p.t, id, "no container for %s", service)
	return id
}

// health is "running healthy", "running starting", "exited", ...
func (p *project) health(service string) string {
	out, err := docker("inspect", "-f", "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}", p.id(service))
	if err != nil {
		return err.Error()
	}
	return out
}

// waitHealthy polls until every service's container is running and healthy.
func (p *project) waitHealthy(services []string, timeout time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var bad []string
		for _, s := range services {
			if h := p.health(s); h != "running healthy" {
				bad = append(bad, s+": "+h)
			}
		}
		if len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("not healthy after %v: %v", timeout, bad)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// halt stops ("stop": SIGTERM, then SIGKILL after grace) or kills ("kill":
// SIGKILL) a service's container with the docker CLI (fast, unlike compose
// v1). It returns when the command was issued and when the container had
// exited.
func (p *project) halt(service, how string, grace time.Duration) (issued, exited time.Time) {
	p.t.Helper()
	id := p.id(service)
	issued = time.Now()
	switch how {
	case "stop":
		p.mustDocker("stop", "-t", strconv.Itoa(int(grace.Seconds())), id)
	case "kill":
		p.mustDocker("kill", id)
	default:
		p.t.Fatalf("halt: %q", how)
	}
	exited, err := time.Parse(time.RFC3339Nano, p.mustDocker("inspect", "-f", "{{.State.FinishedAt}}", id))
	require.NoError(p.t, err)
	return issued, exited
}

// sqlAddr is the host address a SQL service's port 4000 is published on.
func (p *project) sqlAddr(service string) string {
	p.t.Helper()
	out := p.mustDC("port", service, "4000")
	require.Regexp(p.t, `^127\.0\.0\.1:\d+$`, out)
	return out
}

// metrics scrapes a service's /metrics from inside its container (the status
// ports are not published), parses it with expfmt (internal/promtext) and
// returns value by series ("name{labels}", histogram buckets included).
func (p *project) metrics(service string) (map[string]float64, error) {
	kind := strings.TrimRight(service, "0123456789")
	out, err := docker("exec", p.id(service), "healthcheck", "-print",
		fmt.Sprintf("http://127.0.0.1:%d/metrics", statusPorts[kind]))
	if err != nil {
		return nil, err
	}
	// run trims the output; the text format ends every line with "\n".
	mfs, err := promtext.Parse(strings.NewReader(out + "\n"))
	if err != nil {
		return nil, err
	}
	return mfs.Series(true), nil
}

// metric returns one series of a service, or -1 when it cannot be read.
func (p *project) metric(service, series string) float64 {
	m, err := p.metrics(service)
	if err != nil {
		return -1
	}
	if v, ok := m[series]; ok {
		return v
	}
	return -1
}

// logLines returns the log lines of services written at or after since
// that contain any of the substrings.
func (p *project) logLines(services []string, since time.Time, substrings ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := p.dc(ctx, append([]string{"logs", "--no-color", "--timestamps"}, services...)...)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, line := range strings.Split(out, "\n") {
		// "pd1_1  | 2026-11-30T10:06:42.623456789Z time=... msg=..."
		_, rest, ok := strings.Cut(line, "| ")
		if !ok {
			continue
		}
		stamp, _, _ := strings.Cut(rest, " ")
		ts, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil || ts.Before(since) {
			continue
		}
		for _, sub := range substrings {
			if strings.Contains(line, sub) {
				b.WriteString(line + "\n")
				break
			}
		}
	}
	return b.String()
}

func (p *project) teardown() {
	t := p.t
	if t.Failed() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, _ := p.dc(ctx, "logs", "--no-color", "--tail", "60")
		cancel()
		t.Logf("logs of %s (last 60 lines per container):\n%s", p.name, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := p.dc(ctx, "--profile", "monitoring", "down", "--volumes", "--remove-orphans", "--timeout", "5"); err != nil {
		t.Errorf("compose down %s: %v\n%s", p.name, err, out)
	}
	for _, image := range p.images {
		if out, err := docker("image", "rm", image); err != nil && !strings.Contains(err.Error(), "No such image") {
			t.Logf("removing image %s: %v %s", image, err, out)
		}
	}
	// Nothing of this project may remain.
	for _, kind := range []string{"ps -a", "volume ls", "network ls"} {
		args := append(strings.Fields(kind), "-q", "--filter", "label=com.docker.compose.project="+p.name)
		if out, err := docker(args...); err == nil && out != "" {
			t.Errorf("left behind after down (%s): %s", kind, out)
		}
	}
}

// reapStale removes e2e projects left by runs that died without cleanup
// (e.g. a go test timeout), recognised by the name prefix and an age far
// beyond any run, so concurrent runs are never touched.
func reapStale(t *testing.T, compose []string, root string) {
	out, err := docker("ps", "-a", "--filter", "label=com.docker.compose.project", "--format", `{{.Label "com.docker.compose.project"}} {{.ID}}`)
	if err != nil {
		return
	}
	newest := map[string]time.Time{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || !strings.HasPrefix(f[0], projectPrefix) {
			continue
		}
		created, err := docker("inspect", "-f", "{{.Created}}", f[1])
		if err != nil {
			continue
		}
		ts, err := time.Parse(time.RFC3339Nano, created)
		if err != nil {
			continue
		}
		if ts.After(newest[f[0]]) {
			newest[f[0]] = ts
		}
	}
	for name, ts := range newest {
		if time.Since(ts) < 2*time.Hour {
			continue
		}
		t.Logf("removing stale e2e project %s (created %s)", name, ts.Format(time.RFC3339))
		p := &project{t: t, root: root, name: name, image: "strata-e2e:" + strings.TrimPrefix(name, projectPrefix), compose: compose}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		_, _ = p.dc(ctx, "--profile", "monitoring", "down", "--volumes", "--remove-orphans", "--timeout", "1")
		cancel()
		_, _ = docker("image", "rm", p.image)
	}
}
